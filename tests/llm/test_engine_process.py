"""LocalEngine's process handling, against small stand-in servers (real processes, real sockets).

The real llama-server is exercised in test_real_engine.py; these tests cover the paths that are
hard to provoke with it: a server that crashes at start, one that ignores SIGTERM, a missing or
stale cache manifest.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from nocturne_desktop.llm.engine import EngineError, EnginePaths, LocalEngine, find_engine

pytestmark = pytest.mark.skipif(os.name == "nt", reason="stand-in servers are shebang scripts")

FAKE_SERVER = textwrap.dedent(
    """\
    import json, signal, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    mode = "{mode}"
    print("fake llama-server", " ".join(args), flush=True)
    if mode == "crash":
        print("error: failed to load model 'nowhere.gguf'", flush=True)
        sys.exit(3)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
    started = time.monotonic()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path == "/health":
                loading = time.monotonic() - started < 0.5
                self.send_response(503 if loading else 200)
                body = b'{{"status": "loading model"}}' if loading else b'{{"status": "ok"}}'
            elif self.path == "/v1/models":
                self.send_response(200)
                body = json.dumps({{"object": "list", "data": [{{"id": "fake-135m.gguf"}}]}})
                body = body.encode()
            else:
                self.send_response(404)
                body = b"{{}}"
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def make_paths(tmp_path: Path, mode: str = "ok") -> EnginePaths:
    server = tmp_path / f"fake-server-{mode}"
    server.write_text(f"#!{sys.executable}\n" + FAKE_SERVER.format(mode=mode), encoding="utf-8")
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    return EnginePaths(server=server, model=model)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state where /proc exists
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            return stat.read_text().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False
    return True


def test_start_waits_for_health_and_stop_leaves_no_process(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    engine = LocalEngine(make_paths(tmp_path), ctx_size=512, threads=1, log_path=log)
    t0 = time.monotonic()
    engine.start(timeout=20)
    assert time.monotonic() - t0 >= 0.4  # it waited through the 503 "loading" phase
    assert engine.running()
    assert engine.base_url == f"http://127.0.0.1:{engine.port}/v1"
    assert engine.model_name == "fake-135m.gguf"
    with urllib.request.urlopen(engine.root_url + "/health", timeout=5) as resp:
        assert resp.status == 200
    pid = engine.pid
    assert pid is not None
    engine.stop()
    assert not engine.running()
    assert not alive(pid)
    # the command line it was given reached the child (logged by the stand-in)
    logged = log.read_text()
    flags = ("--host 127.0.0.1", "-c 512", "--threads 1", "--parallel 1", "--no-webui",
             "--alias model")
    for flag in flags:
        assert flag in logged
    engine.stop()  # twice is fine
    with pytest.raises(EngineError, match="not running"):
        _ = engine.base_url


def test_context_manager_stops(tmp_path: Path) -> None:
    with LocalEngine(make_paths(tmp_path)) as engine:
        pid = engine.pid
        assert pid is not None and alive(pid)
    assert not alive(pid)


def test_crash_at_start_fails_fast_with_log_tail(tmp_path: Path) -> None:
    engine = LocalEngine(make_paths(tmp_path, "crash"))
    t0 = time.monotonic()
    with pytest.raises(EngineError) as info:
        engine.start(timeout=60)
    assert time.monotonic() - t0 < 15  # did not sit out the 60 s timeout
    message = str(info.value)
    assert "exited with code 3" in message
    assert "failed to load model" in message
    assert not engine.running()


def test_health_timeout_stops_the_child(tmp_path: Path) -> None:
    engine = LocalEngine(make_paths(tmp_path))
    with pytest.raises(EngineError, match="did not become healthy within"):
        engine.start(timeout=0.2)  # the stand-in answers 503 for its first 0.5 s
    assert not engine.running()


def test_stop_kills_a_server_that_ignores_sigterm(tmp_path: Path) -> None:
    engine = LocalEngine(make_paths(tmp_path, "stubborn"))
    engine.start(timeout=20)
    pid = engine.pid
    assert pid is not None
    t0 = time.monotonic()
    engine.stop(timeout=1.0)
    assert 0.9 <= time.monotonic() - t0 < 10
    assert not alive(pid)


def test_missing_files_are_reported(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    paths.model.unlink()
    with pytest.raises(EngineError, match="make engine"):
        LocalEngine(paths).start()


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ctx_size"):
        LocalEngine(make_paths(tmp_path), ctx_size=10)
    with pytest.raises(ValueError, match="parallel"):
        LocalEngine(make_paths(tmp_path), parallel=0)


def write_manifest(root: Path, data: dict[str, object]) -> None:
    (root / "engine").mkdir(parents=True, exist_ok=True)
    (root / "engine" / "engine.json").write_text(json.dumps(data), encoding="utf-8")


def test_find_engine_reads_the_manifest(tmp_path: Path) -> None:
    assert find_engine(tmp_path) is None  # nothing built
    write_manifest(tmp_path, {"schema": 1, "server": "srv/bin/llama-server", "model": "m/x.gguf"})
    assert find_engine(tmp_path) is None  # manifest without files
    server = tmp_path / "engine" / "srv" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    model = tmp_path / "engine" / "m" / "x.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    assert find_engine(tmp_path) == EnginePaths(server=server, model=model)
    write_manifest(tmp_path, {"schema": 99, "server": "srv/bin/llama-server", "model": "m/x.gguf"})
    assert find_engine(tmp_path) is None  # a manifest this code does not understand
    (tmp_path / "engine" / "engine.json").write_text("{not json", encoding="utf-8")
    assert find_engine(tmp_path) is None


def test_find_engine_honours_the_cache_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(tmp_path))
    assert find_engine() is None
    write_manifest(tmp_path, {"schema": 1, "server": "s", "model": "m"})
    (tmp_path / "engine" / "s").write_text("")
    (tmp_path / "engine" / "s").chmod(0o755)
    (tmp_path / "engine" / "m").write_bytes(b"GGUF")
    found = find_engine()
    assert found is not None and found.server == tmp_path / "engine" / "s"
