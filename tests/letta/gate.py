"""A loopback HTTP relay in front of the real Letta server that can go dark mid-sync.

Every request is forwarded to the server as it came; :meth:`Gate.fail_after` lets ``n`` more
requests through and then drops every connection without an answer (the client sees a reset or
a closed connection, as when a server dies), until :meth:`Gate.open` lets traffic through again.
"""

from __future__ import annotations

import http.server
import socket
import threading
from typing import Any

import httpx

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Gate:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.budget: int | None = None
        """Requests still let through (None: all of them)."""
        self.dropped = 0
        self.forwarded: list[str] = []
        self._lock = threading.Lock()
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                if not gate._take(f"{self.command} {self.path}"):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                r = httpx.request(self.command, gate.upstream + self.path, headers=headers,
                                  content=body, timeout=60.0)
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in HOP and k.lower() != "content-encoding":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            do_GET = do_POST = do_PATCH = do_DELETE = _relay

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _take(self, what: str) -> bool:
        with self._lock:
            if self.budget is not None:
                if self.budget <= 0:
                    self.dropped += 1
                    return False
                self.budget -= 1
            self.forwarded.append(what)
            return True

    def fail_after(self, n: int) -> None:
        with self._lock:
            self.budget = n

    def open(self) -> None:
        with self._lock:
            self.budget = None

    def __enter__(self) -> Gate:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
