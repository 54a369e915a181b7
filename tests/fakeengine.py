"""A stand-in for the built engine: a tiny Python "llama-server" in a cache find_engine() accepts.

It answers ``GET /health`` and ``GET /v1/models`` (with the ``--alias`` it was given) on the
``--port`` it was given, prints a llama-server-like log, and, when ``FAKE_ENGINE_EXIT_AFTER`` is
set in its environment, exits by itself after that many seconds with ``FAKE_ENGINE_EXIT_CODE``
(default 3). It keeps Python's default SIGTERM behaviour (die at once), so a death signal sent
by the kernel ends it exactly as it ends the real server. Fast enough for the quick suite; the
real engine's own tests are marked ``engine``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERVER = r'''
import http.server, json, os, sys, threading, time

args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
alias = args[args.index("--alias") + 1] if "--alias" in args else "fake"
print("main: loading model", flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/health":
            body = b'{"status":"ok"}'
        elif self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
print(f"main: server is listening on http://127.0.0.1:{port}", flush=True)
after = os.environ.get("FAKE_ENGINE_EXIT_AFTER")
if after:
    def leave():
        time.sleep(float(after))
        print("fake failure: out of memory", flush=True)
        print("cleaning up before exit...", flush=True)
        os._exit(int(os.environ.get("FAKE_ENGINE_EXIT_CODE", "3")))
    threading.Thread(target=leave, daemon=True).start()
server.serve_forever()
'''


def fake_engine_cache(root: Path) -> Path:
    """Write ``root/engine/{engine.json, llama-server, tiny.gguf}``; returns ``root`` (the cache)."""
    engine = root / "engine"
    engine.mkdir(parents=True, exist_ok=True)
    server, model = engine / "llama-server", engine / "tiny.gguf"
    server.write_text(f"#!{sys.executable}\n{SERVER}", encoding="utf-8")
    server.chmod(0o755)
    model.write_bytes(b"GGUF")
    (engine / "engine.json").write_text(json.dumps({"schema": 1, "server": server.name,
                                                    "model": model.name}))
    return root


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie waiting for its new parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
