"""One chat request on the wire: POST, read the SSE stream (or one JSON body), enforce the
deadlines and the reply-size cap, and close the socket on a cancel.

A :class:`Watchdog` thread per request owns the deadlines. When one passes, or the caller's
:class:`CancelToken` is set, it shuts the socket down: that wakes the reading thread at once
and sends the server a FIN, so a local engine stops generating for a request nobody waits for.
The reader keeps at most :func:`reply_cap` characters of reply text and a bounded number of
wire bytes, so no reply — however large — is held whole.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import ModelBadReply
from nocturne_desktop.llm.endpoint import Timeouts
from nocturne_desktop.llm.failures import ERROR_BODY_LIMIT, Failures, plain_excerpt

DEFAULT_REPLY_CAP_CHARS = 1_000_000
"""The most reply text one call keeps, whatever ``max_tokens`` says (about 250k tokens)."""

CHARS_PER_TOKEN_CAP = 32
"""With ``max_tokens`` set, the reply is cut at ``max_tokens`` × this many characters: no real
tokenizer has tokens that long, so only a server that ignores ``max_tokens`` reaches it."""

_MIN_CAP_CHARS = 4096
_RAW_BYTES_PER_CHAR = 4
"""Wire bytes held per character of the cap: UTF-8 needs at most 4. A reply written with
``\\uXXXX`` escapes reaches this bound with fewer characters; it is then cut earlier, still at
a bound, still keeping the part before the cut."""
_RAW_SLACK = 64 * 1024


def reply_cap(max_reply_chars: int, max_tokens: int | None) -> int:
    """Characters of reply text one call keeps: ``max_reply_chars``, lowered to
    ``max_tokens`` × :data:`CHARS_PER_TOKEN_CAP` (at least 4096) when ``max_tokens`` is set."""
    if max_tokens is None or max_tokens <= 0:
        return max_reply_chars
    return min(max_reply_chars, max(_MIN_CAP_CHARS, max_tokens * CHARS_PER_TOKEN_CAP))


@dataclass
class StreamState:
    """What one request's reading learnt: finish reason, usage, model, first-token time, and
    how much reply text it kept under its cap."""

    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    model: str = ""
    first_token_s: float | None = None
    cap: int = DEFAULT_REPLY_CAP_CHARS
    """Characters of reply text kept at most; reading stops there."""
    chars: int = 0
    cut: bool = False
    """True when reading stopped at ``cap`` (the connection is closed, the server stops)."""

    @property
    def raw_cap(self) -> int:
        """Bytes of wire data held at most for one JSON body or one SSE event."""
        return self.cap * _RAW_BYTES_PER_CHAR + _RAW_SLACK


class Watchdog:
    """Deadlines and the kill switch of one HTTP exchange.

    The reading thread reports progress (:meth:`sent`, :meth:`chunk`, :meth:`token`); the
    watchdog thread sleeps until the nearest deadline and, if it passed, aborts. :meth:`abort`
    may be called from any thread (the cancel token's callback runs on the cancelling thread):
    it records why and shuts the socket down, which wakes a blocked ``recv`` immediately.
    """

    def __init__(self, timeouts: Timeouts, *, trace_supported: bool) -> None:
        self.timeouts = timeouts
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._response: httpx.Response | None = None
        self.reason: str | None = None
        self.started = time.monotonic()
        self.sent_at: float | None = None if trace_supported else self.started
        self.first_at: float | None = None
        self.last_at = self.started
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="nocturne-llm-watchdog", daemon=True
        )

    # progress, from the reading thread
    def start(self) -> None:
        self._thread.start()

    def sent(self) -> None:
        now = time.monotonic()
        self.sent_at = now
        self.last_at = now

    def chunk(self) -> None:
        self.last_at = time.monotonic()

    def token(self) -> None:
        now = time.monotonic()
        if self.first_at is None:
            self.first_at = now
        self.last_at = now

    def finish(self) -> None:
        self._done.set()

    # httpcore's trace hook: learn the socket and when the request was fully sent
    def trace(self, name: str, info: dict[str, Any]) -> None:
        # After TLS the plain socket is detached (its fd moves into the SSL socket), so the
        # TLS stream's socket replaces it.
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            with self._lock:
                self._sock = sock
                aborted = self.reason is not None
            if aborted:
                self._shutdown(sock)
        elif name == "http11.send_request_body.complete":
            self.sent()

    def attach(self, response: httpx.Response) -> None:
        with self._lock:
            self._response = response
            aborted = self.reason is not None and self._sock is None
        if aborted:
            response.close()

    def abort(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None or self._done.is_set():
                return
            self.reason = reason
            sock, response = self._sock, self._response
        if sock is not None:
            self._shutdown(sock)
        elif response is not None:  # a custom transport: no socket to reach
            with contextlib.suppress(Exception):
                response.close()

    @staticmethod
    def _shutdown(sock: socket.socket | None) -> None:
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _deadline(self) -> tuple[float | None, str]:
        overall = self.started + self.timeouts.total
        if self.first_at is None:
            if self.sent_at is None:
                return overall, "deadline"
            phase, which = self.sent_at + self.timeouts.first_token, "first-token"
        else:
            phase, which = self.last_at + self.timeouts.idle, "idle"
        return (overall, "deadline") if overall < phase else (phase, which)

    def _watch(self) -> None:
        while True:
            deadline, which = self._deadline()
            if deadline is None:
                wait = 0.05
            else:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    self.abort(which)
                    return
                if self.sent_at is None:  # sending ends the connect phase: look again soon
                    wait = min(wait, 0.05)
            if self._done.wait(wait):
                return


def post_chat(
    http: httpx.Client,
    url: str,
    payload: dict[str, Any],
    *,
    timeouts: Timeouts,
    trace_supported: bool,
    cancel: CancelToken | None,
    state: StreamState,
    failures: Failures,
) -> Iterator[str]:
    """POST ``payload`` to ``url`` and yield the reply's content deltas as they arrive,
    under one :class:`Watchdog`; every failure is raised as a :class:`ModelError`."""
    if cancel is not None and cancel.cancelled:
        raise failures.aborted("cancel", url)
    dog = Watchdog(timeouts, trace_supported=trace_supported)
    unregister = cancel.on_cancel(lambda: dog.abort("cancel")) if cancel is not None else None
    dog.start()
    try:
        try:
            request = http.build_request(
                "POST", url, json=payload, extensions={"trace": dog.trace}
            )
            response = http.send(request, stream=True)
        except (httpx.HTTPError, OSError) as exc:
            raise failures.in_exchange(
                exc, url, aborted=dog.reason, replying=dog.first_at is not None, answered=False
            ) from None
        dog.attach(response)
        try:
            if response.status_code >= 400:
                body = _read_capped(response, dog)
                if dog.reason is not None:
                    raise failures.aborted(dog.reason, url)
                raise failures.status(response.status_code, body, response.headers, url)
            ctype = response.headers.get("content-type", "")
            if "json" in ctype and "event-stream" not in ctype:
                yield from _read_json(response, dog, state, url, failures)
            else:
                yield from _read_sse(response, dog, state, url, failures)
        except (httpx.HTTPError, OSError) as exc:
            raise failures.in_exchange(
                exc, url, aborted=dog.reason, replying=dog.first_at is not None
            ) from None
        finally:
            response.close()
    finally:
        dog.finish()
        if unregister is not None:
            unregister()


def _read_sse(
    response: httpx.Response, dog: Watchdog, state: StreamState, url: str, failures: Failures
) -> Iterator[str]:
    buf = b""
    data: list[bytes] = []
    event = b""
    for chunk in response.iter_bytes():
        dog.chunk()
        if dog.reason is not None:
            raise failures.aborted(dog.reason, url)
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = buf[start:nl]
            start = nl + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if line:
                if line.startswith(b"data:"):
                    value = line[5:]
                    data.append(value[1:] if value.startswith(b" ") else value)
                elif line.startswith(b"event:"):
                    event = line[6:].strip()
                continue  # comments (": keepalive"), id:, retry:
            if not data:
                continue
            raw = b"\n".join(data)
            data = []
            if raw.strip() == b"[DONE]":
                return
            obj = _parse_chunk(raw, url)
            if event == b"error" or "error" in obj:
                raise failures.stream_error(obj, url)
            event = b""
            yield from _apply_chunk(obj, dog, state)
            if state.cut:
                return  # the caller's finally closes the connection
        buf = buf[start:]
        if len(buf) + sum(len(d) for d in data) > state.raw_cap:
            # One event larger than any reply we keep: nothing in it can be used.
            state.cut = True
            return
    if dog.reason is not None:
        raise failures.aborted(dog.reason, url)
    if data:  # a final event without its blank line
        raw = b"\n".join(data)
        if raw.strip() == b"[DONE]":
            return
        obj = _parse_chunk(raw, url)
        yield from _apply_chunk(obj, dog, state)
    if state.finish_reason is None:
        raise ModelBadReply(
            f"the stream from {url} ended before the reply was complete (no finish_reason "
            "and no [DONE]); the server may have crashed or been stopped",
            url=url,
        )


def _parse_chunk(raw: bytes, url: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except ValueError:
        excerpt = plain_excerpt(raw.decode("utf-8", "replace"), 120)
        raise ModelBadReply(
            f"{url} sent a streamed chunk that is not JSON ({excerpt!r}); "
            "is this an OpenAI-compatible server?",
            url=url,
        ) from None
    if not isinstance(obj, dict):
        raise ModelBadReply(f"{url} sent a streamed chunk that is not a JSON object", url=url)
    return obj


def _apply_chunk(obj: dict[str, Any], dog: Watchdog, state: StreamState) -> list[str]:
    out: list[str] = []
    model = obj.get("model")
    if isinstance(model, str) and model:
        state.model = model
    usage = obj.get("usage")
    if isinstance(usage, dict):
        state.usage = usage
    choices = obj.get("choices")
    if not isinstance(choices, list):
        return out
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = delta.get("content") if isinstance(delta, dict) else None
        if content is None and isinstance(choice.get("text"), str):
            content = choice["text"]  # a /completions-style chunk
        thinking = delta.get("reasoning_content") or delta.get("reasoning") if delta else None
        if content or thinking:
            if dog.first_at is None:
                dog.token()
                state.first_token_s = (dog.first_at or dog.started) - dog.started
            else:
                dog.token()
        if isinstance(content, str) and content:
            room = state.cap - state.chars
            if len(content) > room:  # the cap: keep what fits, stop reading
                state.cut = True
                content = content[:room]
            if content:
                out.append(content)
                state.chars += len(content)
            if state.cut:
                return out
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            state.finish_reason = finish
    return out


def _read_json(
    response: httpx.Response, dog: Watchdog, state: StreamState, url: str, failures: Failures
) -> Iterator[str]:
    body = bytearray()
    for chunk in response.iter_bytes():
        dog.token()
        body += chunk
        if len(body) > state.raw_cap:
            break
    if dog.reason is not None:
        raise failures.aborted(dog.reason, url)
    state.first_token_s = (dog.first_at or time.monotonic()) - dog.started
    if len(body) > state.raw_cap:
        # Too large to parse whole: keep the reply text that came before the cap.
        state.cut = True
        state.finish_reason = "length"
        del body[state.raw_cap :]
        text = _partial_content(body)[: state.cap]
        del body
        state.chars = len(text)
        if text:
            dog.token()
            yield text
        return
    try:
        obj = json.loads(body)
    except ValueError:
        excerpt = plain_excerpt(body[:4096].decode("utf-8", "replace"), 120)
        raise ModelBadReply(
            f"{url} answered with a body that is not valid JSON ({excerpt!r})", url=url
        ) from None
    if not isinstance(obj, dict):
        raise ModelBadReply(f"{url} answered with JSON that is not an object", url=url)
    if "error" in obj and "choices" not in obj:
        raise failures.stream_error(obj, url)
    if not isinstance(obj.get("choices"), list) or not obj["choices"]:
        raise ModelBadReply(f"{url} answered without any choices", url=url)
    pieces = _apply_chunk(obj, dog, state)
    if state.finish_reason is None:
        state.finish_reason = "stop"
    text = "".join(pieces)
    if text:
        yield text


def _read_capped(response: httpx.Response, dog: Watchdog) -> str:
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        dog.token()
        parts.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_LIMIT:
            break
    return b"".join(parts)[:ERROR_BODY_LIMIT].decode("utf-8", "replace")


_CONTENT_KEY = re.compile(rb'"content"\s*:\s*"')
_STRING_BODY = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)  # unrolled, no backtracking
_PARTIAL_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{0,3})?$")


def _partial_content(body: bytes | bytearray) -> str:
    """The assistant text at the start of a JSON chat completion cut off mid-body: the
    ``"content"`` string up to the cut, decoded, or ``""`` when none had begun."""
    m = _CONTENT_KEY.search(body)
    if m is None:
        return ""
    literal = body[m.end() :].decode("utf-8", "ignore")
    string = _STRING_BODY.match(literal)  # up to the closing quote, if the string ended
    end = string.end() if string is not None else 0
    literal = _PARTIAL_ESCAPE.sub("", literal[:end])
    for trim in range(13):  # a cut inside a surrogate pair leaves half an escape
        try:
            value = json.loads('"' + literal[: len(literal) - trim] + '"')
        except ValueError:
            continue
        return value if isinstance(value, str) else ""
    return ""
