"""What the model client costs on top of the bytes on the wire.

Runs the scripted server (tests/fakeserver.py) on 127.0.0.1 and compares
:class:`~nocturne_desktop.llm.client.OpenAIClient` with a hand-written HTTP/1.1 client over a
bare socket that does the minimum (one connection per request, parse the body or the SSE events,
json-decode each event to get its text). Both pay the same server costs, so the difference is
the client's own overhead: httpx, the watchdog thread, deadline bookkeeping, error mapping.

    PYTHONPATH=. python -m bench.bench_client [--quick]

Figures: median per small non-streamed request; per streamed token (a 1,000-token stream,
total time / 1,000); time to first token. The target for the TTFT overhead is ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time
from collections.abc import Callable

from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from tests.fakeserver import FakeLLM, Reply

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say ok."},
]


class RawClient:
    """HTTP/1.1 by hand: connect, send, read; chunked decoding and SSE parsing inline."""

    def __init__(self, port: int) -> None:
        self.port = port

    def _open(self, payload: dict[str, object]) -> socket.socket:
        body = json.dumps(payload).encode()
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(head + body)
        return sock

    @staticmethod
    def _headers(sock: socket.socket) -> tuple[dict[str, str], bytes]:
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed before headers")
            buf += data
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        return headers, rest

    def chat(self) -> str:
        sock = self._open({"messages": MESSAGES, "stream": False})
        try:
            headers, rest = self._headers(sock)
            length = int(headers["content-length"])
            while len(rest) < length:
                rest += sock.recv(65536)
            obj = json.loads(rest[:length])
            return str(obj["choices"][0]["message"]["content"])
        finally:
            sock.close()

    def stream(self, on_first: Callable[[], None] | None = None) -> str:
        sock = self._open({"messages": MESSAGES, "stream": True})
        parts: list[str] = []
        try:
            _, buf = self._headers(sock)
            body = b""
            done = False
            while not done:
                # de-chunk whatever complete chunks the buffer holds
                while True:
                    crlf = buf.find(b"\r\n")
                    if crlf < 0:
                        break
                    size = int(buf[:crlf], 16)
                    if len(buf) < crlf + 2 + size + 2:
                        break
                    if size == 0:
                        done = True
                        break
                    body += buf[crlf + 2 : crlf + 2 + size]
                    buf = buf[crlf + 2 + size + 2 :]
                # parse complete SSE events
                while True:
                    cut = body.find(b"\n\n")
                    if cut < 0:
                        break
                    event, body = body[:cut], body[cut + 2 :]
                    if not event.startswith(b"data: "):
                        continue
                    data = event[6:]
                    if data == b"[DONE]":
                        done = True
                        break
                    obj = json.loads(data)
                    for choice in obj.get("choices", []):
                        text = choice.get("delta", {}).get("content")
                        if text:
                            if not parts and on_first is not None:
                                on_first()
                            parts.append(text)
                if done:
                    break
                data = sock.recv(65536)
                if not data:
                    break
                buf += data
        finally:
            sock.close()
        return "".join(parts)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def time_calls(fn: Callable[[], object], n: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args(argv)
    n_req = 50 if args.quick else 300
    n_stream = 5 if args.quick else 21
    n_ttft = 30 if args.quick else 200
    tokens = [f" t{i}" for i in range(1000)]

    server = FakeLLM().start()
    client = OpenAIClient(server.base_url, "fake-model", timeouts=Timeouts(10, 60, 30))
    raw = RawClient(server.port)
    rows: list[tuple[str, float, float, str]] = []
    try:
        server.set_default(Reply.text("ok", ignore_stream=True))
        assert raw.chat() == "ok" and client.chat(MESSAGES).text == "ok"
        raw_req = median_ms(time_calls(raw.chat, n_req))
        cli_req = median_ms(time_calls(lambda: client.chat(MESSAGES), n_req))
        rows.append(("small non-streamed request (median)", raw_req, cli_req, "—"))

        server.set_default(Reply.stream_of(tokens))
        expected = "".join(tokens)
        assert raw.stream() == expected and client.chat(MESSAGES).text == expected
        raw_stream = median_ms(time_calls(raw.stream, n_stream, warmup=2))
        cli_stream = median_ms(
            time_calls(lambda: "".join(client.stream(MESSAGES)), n_stream, warmup=2)
        )
        rows.append(("1,000-token stream, whole (median)", raw_stream, cli_stream, "—"))
        rows.append(
            (
                "per streamed token",
                raw_stream / len(tokens) * 1000.0,
                cli_stream / len(tokens) * 1000.0,
                "µs",
            )
        )

        server.set_default(Reply.stream_of(["first", " second"]))

        def raw_ttft() -> float:
            start = time.perf_counter()
            seen: list[float] = []
            raw.stream(on_first=lambda: seen.append(time.perf_counter()))
            return seen[0] - start

        def cli_ttft() -> float:
            start = time.perf_counter()
            it = client.stream(MESSAGES)
            next(it)
            took = time.perf_counter() - start
            for _ in it:
                pass
            return took

        for _ in range(5):
            raw_ttft()
            cli_ttft()
        raw_t = statistics.median(raw_ttft() for _ in range(n_ttft)) * 1000.0
        cli_t = statistics.median(cli_ttft() for _ in range(n_ttft)) * 1000.0
        rows.append(("time to first token (median)", raw_t, cli_t, "≤ 5 ms"))
    finally:
        client.close()
        server.close()

    print(f"# model client overhead vs a raw socket client (Python {sys.version.split()[0]})\n")
    print(
        f"repetitions: {n_req} requests, {n_stream} streams of {len(tokens)} tokens, "
        f"{n_ttft} first-token probes\n"
    )
    print("| measure | raw socket | OpenAIClient | overhead | target |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, r, c, target in rows:
        unit = "µs" if target == "µs" else "ms"
        tgt = "" if target in ("—", "µs") else target
        print(f"| {name} | {r:.3f} {unit} | {c:.3f} {unit} | {c - r:+.3f} {unit} | {tgt} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
