"""A scripted OpenAI-compatible model server on a real socket, for tests and benchmarks.

Real TCP on 127.0.0.1 (an ephemeral port), real HTTP/1.1, real JSON bodies and real SSE
(chunked transfer encoding), so the client under test runs its whole network path. Replies are
scripted per request; faults come on demand.

Quick tour::

    server = FakeLLM()            # or the ``fake_llm`` pytest fixture (tests/conftest.py)
    server.start()
    client = OpenAIClient(server.base_url, "fake-model")

    server.script(Reply.json({"pairs": []}), Reply.text("hello"), Reply.fault("hang"))
    server.set_default(Reply.text("ok"))              # when the script queue is empty
    server.respond_with(lambda req: Reply.text(req.last_user[::-1]))   # content-dependent
    server.behave_like("lmstudio")                    # 400 on response_format json_object
    server.require_api_key("sk-test")                 # 401 without the right Bearer token
    server.describe_window("lmstudio", tokens=16384, maximum=32768)   # what it says of n_ctx
    server.serve("GET", "/api/ps", {"models": []})    # any other route of a server's own API

    server.requests[0].body["messages"]               # every request is recorded
    server.requests[0].disconnected_at                # set when the client hung up early
    server.close()

Order in which a chat request is answered: API-key check, emulated ``response_format`` and
``stream_options`` refusals, unknown model (when ``check_model``), then the responder
callable (if it returns a Reply), then the script queue, then the default reply.

:class:`Reply` knobs (keyword arguments of every constructor): ``finish_reason``, ``usage``
(False = never send usage), ``reasoning`` (sent as ``reasoning_content`` before the content),
``tokens`` (explicit token split), ``delay`` (seconds before the first token; headers go out
first), ``delay_headers`` (seconds before anything at all), ``token_delay`` (trickle),
``keepalive`` (send SSE comments every N s while delaying), ``ignore_stream`` (answer one JSON
body even when asked to stream), ``drop_after`` (close the connection after N tokens, mid-stream),
``repeat`` (send the content that many times over, generated as it is sent, so a 50 MB reply
costs the server no memory: :meth:`Reply.huge`),
``no_done`` (omit ``data: [DONE]``), ``status``/``headers``/``content_type``/``body`` (raw).

Faults (:meth:`Reply.fault`): ``hang`` (never answer; holds until the client hangs up),
``drop`` (truncated stream), ``bad_json`` (200 with a body that is not JSON), ``bad_sse`` (a
stream whose data is not JSON), ``reset`` (close the socket without answering), ``html``
(a 502 HTML error page, as a reverse proxy sends), ``stream_error`` (an ``{"error": …}`` event
after a few tokens, as llama-server sends when generation fails mid-way). ``finish_reason=None``
sends no finishing chunk. A refused connection needs no server:
:func:`closed_port_url`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import select
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

FAULTS = ("hang", "drop", "bad_json", "bad_sse", "reset", "html", "stream_error")

LMSTUDIO_JSON_OBJECT_ERROR = "'response_format.type' must be 'json_schema' or 'text'"
# what llama-cpp-python 0.3.36's server answers (HTTP 500) to response_format json_schema
LLAMA_CPP_PYTHON_JSON_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"…/llama_cpp/server/app.py\", "
    "line 376, in create_chat_completion\n    POST /v1/chat/completions"
)
STRICT_JSON_OBJECT_SCHEMA_ERROR = "response_format.schema: Extra inputs are not permitted"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the classmethods; tweak with :meth:`with_`."""

    content: str = ""
    finish_reason: str | None = "stop"
    usage: bool = True
    reasoning: str = ""
    tokens: tuple[str, ...] | None = None
    delay: float = 0.0
    delay_headers: float = 0.0
    token_delay: float = 0.0
    keepalive: float = 0.0
    ignore_stream: bool = False
    drop_after: int | None = None
    no_done: bool = False
    failure: str | None = None
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str | None = None
    body: bytes | None = None
    model: str | None = None
    repeat: int = 1

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        """A plain assistant reply."""
        return cls(content=text, **_norm(kw))

    @classmethod
    def json(
        cls,
        obj: Any,
        *,
        fence: bool = False,
        think: str | None = None,
        pretty: bool = False,
        prose: bool = False,
        **kw: Any,
    ) -> Reply:
        """A JSON reply, optionally dressed as small models dress it: in a ```json fence, after a
        ``<think>`` preamble, pretty-printed, or with a sentence of prose around it."""
        text = json.dumps(
            obj, indent=2 if pretty else None, separators=None if pretty else (",", ":")
        )
        if fence:
            text = f"```json\n{text}\n```"
        if prose:
            text = f"Sure! Here is the JSON you asked for:\n{text}\nLet me know if you need more."
        if think is not None:
            text = f"<think>{think}</think>\n{text}"
        return cls(content=text, **_norm(kw))

    @classmethod
    def huge(cls, total_chars: int, *, unit: str = "word " * 800, **kw: Any) -> Reply:
        """A reply of about ``total_chars`` characters (``unit`` repeated), sent one ``unit``
        per SSE chunk (or as one JSON body of that size with ``ignore_stream=True``)."""
        return cls(content=unit, tokens=(unit,), repeat=max(1, total_chars // len(unit)),
                   **_norm(kw))

    @classmethod
    def stream_of(cls, tokens: Iterable[str], **kw: Any) -> Reply:
        """A reply sent exactly as these tokens, one SSE chunk each."""
        toks = tuple(tokens)
        return cls(content="".join(toks), tokens=toks, **_norm(kw))

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """An OpenAI-style error body: ``{"error": {"message", "type", "code"}}``."""
        body = json.dumps({"error": {"message": message, "type": type, "code": code}}).encode()
        return cls(
            status=status,
            body=body,
            content_type="application/json",
            headers=tuple((headers or {}).items()),
        )

    @classmethod
    def html(cls, status: int = 502, page: str | None = None) -> Reply:
        """An HTML error page, as nginx or another reverse proxy sends it."""
        page = page or (
            "<html><head><title>502 Bad Gateway</title><style>body{color:red}</style></head>"
            "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3</center>"
            "</body></html>"
        )
        return cls(status=status, body=page.encode(), content_type="text/html")

    @classmethod
    def fault(cls, name: str, **kw: Any) -> Reply:
        """One of :data:`FAULTS`; ``drop`` takes ``drop_after`` (default 3) and ``content``."""
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
        if name == "html":
            return cls.html(**kw)
        if name == "drop":
            kw.setdefault("drop_after", 3)
            kw.setdefault("content", "one two three four five six")
        return cls(failure=name, **_norm(kw))

    def with_(self, **kw: Any) -> Reply:
        """A copy with some knobs changed."""
        return replace(self, **_norm(kw))

    def token_list(self) -> list[str]:
        if self.tokens is not None:
            return list(self.tokens)
        return split_tokens(self.content)

    def token_count(self) -> int:
        return len(self.token_list()) * self.repeat

    def iter_tokens(self) -> Iterable[str]:
        """The tokens, ``repeat`` times over, generated lazily."""
        return itertools.chain.from_iterable(itertools.repeat(self.token_list(), self.repeat))


def _norm(kw: dict[str, Any]) -> dict[str, Any]:
    if "tokens" in kw and kw["tokens"] is not None:
        kw["tokens"] = tuple(kw["tokens"])
    if "headers" in kw and isinstance(kw["headers"], dict):
        kw["headers"] = tuple(kw["headers"].items())
    return kw


_TOKEN = re.compile(r"\s*[^\s]{1,6}|\s+")


def split_tokens(text: str) -> list[str]:
    """Chop text into token-sized pieces (≤ 6 visible characters with their leading space)."""
    return _TOKEN.findall(text)


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    received_at: float
    disconnected_at: float | None = None
    """monotonic time at which the server noticed the client had hung up before the reply ended."""
    completed: bool = False
    """True once the server finished sending its reply."""

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def response_format(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("response_format"), dict):
            kind = self.body["response_format"].get("type")
            return str(kind) if kind is not None else None
        return None

    @property
    def format_rung(self) -> str | None:
        """The client's structured-output rung this request is on: ``json_schema``,
        ``json_object_schema`` (json_object with a ``schema`` inside), ``json_object``, None."""
        kind = self.response_format
        if kind == "json_object" and "schema" in self.body["response_format"]:
            return "json_object_schema"
        return kind

    @property
    def sent_schema(self) -> dict[str, Any] | None:
        """The JSON schema the request carries, in whichever form it was sent."""
        if not isinstance(self.body, dict) or not isinstance(self.body.get("response_format"),
                                                             dict):
            return None
        fmt = self.body["response_format"]
        if fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
            found = fmt["json_schema"].get("schema")
        else:
            found = fmt.get("schema")
        return found if isinstance(found, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return list(self.body["messages"])
        return []

    @property
    def last_user(self) -> str:
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return str(m.get("content", ""))
        return ""


class _ClientGone(Exception):
    pass


_NO_ROUTE = object()


class FakeLLM:
    """The scripted server. Thread-safe: tests script it while the client talks to it."""

    def __init__(
        self,
        models: Iterable[str] = ("fake-model",),
        *,
        check_model: bool = False,
        tls: tuple[str, str] | None = None,
        port: int = 0,
    ) -> None:
        """``tls=(certfile, keyfile)`` serves HTTPS instead of HTTP. ``port`` 0 picks a free
        one; a given port lets a test stop the server and start another where it was."""
        self._port = port
        self.models = list(models)
        self.check_model = check_model
        self.tls = tls
        self.api_key: str | None = None
        self.models_reply: Reply | None = None
        """If set, ``GET /models`` answers this instead of the model list."""
        self.props: dict[str, Any] | None = None
        """If set, ``GET /props`` answers it (llama.cpp's server properties: chat_template…)."""
        self.props_need_model = False
        """``GET /props`` without ``?model=`` is refused (400), as llama.cpp's router mode does."""
        self.model_fields: dict[str, dict[str, Any]] = {}
        """Extra fields of a model's ``GET /models`` entry (``max_model_len``, ``meta``…)."""
        self.routes: dict[tuple[str, str], Any] = {}
        """``(method, path)`` → what that route answers: a JSON body, or a :class:`Reply`."""
        self.requests: list[Request] = []
        self.errors: list[BaseException] = []
        """Unexpected exceptions inside the server (hang-ups are not errors)."""
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._default = Reply.text("ok")
        self._responder: Callable[[Request], Reply | None] | None = None
        self._rejections: dict[str, tuple[int, str]] = {}
        self._reject_stream_options = False
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        httpd = _Server(("127.0.0.1", self._port), handler)
        httpd.fake = self
        if self.tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base, ending in ``/v1``."""
        return f"{self.root_url}/v1"

    # -- scripting -----------------------------------------------------------------------------
    def script(self, *replies: Reply) -> FakeLLM:
        """Queue replies; each chat request takes the next one."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def set_default(self, reply: Reply) -> FakeLLM:
        with self._lock:
            self._default = reply
        return self

    def respond_with(self, fn: Callable[[Request], Reply | None] | None) -> FakeLLM:
        """Answer with ``fn(request)``; a None return falls through to the queue/default."""
        with self._lock:
            self._responder = fn
        return self

    def reject_format(self, kind: str, status: int, message: str) -> FakeLLM:
        """Refuse requests whose ``response_format.type`` is ``kind``; ``json_object_schema``
        refuses only a json_object that carries a ``schema`` (a bare one is still accepted)."""
        with self._lock:
            self._rejections[kind] = (status, message)
        return self

    def reject_stream_options(self, on: bool = True) -> FakeLLM:
        """Answer 400 naming ``stream_options`` when a request carries it (older servers)."""
        self._reject_stream_options = on
        return self

    def require_api_key(self, key: str | None) -> FakeLLM:
        self.api_key = key
        return self

    def behave_like(self, engine: str) -> FakeLLM:
        """Emulate a known engine's ``response_format`` quirk.

        ``lmstudio``: 400 on ``json_object`` (with or without a schema inside);
        ``llama-cpp-python``: 500 on ``json_schema``, a ``schema`` inside ``json_object``
        accepted; ``strict-json-object``: ``json_schema`` refused and a ``schema`` inside
        ``json_object`` refused as an extra field (a bare ``json_object`` accepted);
        ``text-only``: every response_format refused (400);
        ``openai``/``llama.cpp``/``vllm``/``ollama`` (0.5 and later): accept them all.
        """
        if engine == "lmstudio":
            self.reject_format("json_object", 400, LMSTUDIO_JSON_OBJECT_ERROR)
        elif engine == "llama-cpp-python":
            self.reject_format("json_schema", 500, LLAMA_CPP_PYTHON_JSON_SCHEMA_ERROR)
        elif engine == "strict-json-object":
            self.reject_format("json_schema", 400, "response_format json_schema is not supported")
            self.reject_format("json_object_schema", 422, STRICT_JSON_OBJECT_SCHEMA_ERROR)
        elif engine == "text-only":
            self.reject_format("json_schema", 400, "response_format is not supported")
            self.reject_format("json_object", 400, "response_format is not supported")
        elif engine not in ("openai", "llama.cpp", "vllm", "ollama"):
            raise ValueError(f"unknown engine {engine!r}")
        return self

    def serve(self, method: str, path: str, answer: Any) -> FakeLLM:
        """Answer ``method path`` (the query string ignored) with ``answer``: a JSON body
        (200), or a :class:`Reply` (a status, a fault such as ``hang``)."""
        with self._lock:
            self.routes[(method.upper(), path)] = answer
        return self

    def describe_window(
        self, layout: str, *, tokens: int | None, maximum: int | None = None,
        num_ctx: int | None = None,
    ) -> FakeLLM:
        """Say the first model's context window the way ``layout`` does (one of
        :data:`tests.windowlayouts.WINDOW_LAYOUTS`: llama.cpp, LM Studio, Ollama, vLLM, a
        hosted API): ``tokens`` the window it runs the model with (None: not loaded), ``maximum``
        the model's trained length, ``num_ctx`` an Ollama Modelfile's parameter."""
        from tests.windowlayouts import describe_window

        describe_window(self, layout, tokens=tokens, maximum=maximum, num_ctx=num_ctx)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_disconnect(self, index: int = -1, timeout: float = 3.0) -> float | None:
        """Wait until the server notices request ``index``'s client hung up; its time or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                reqs = list(self.requests)
            if reqs and reqs[index].disconnected_at is not None:
                return reqs[index].disconnected_at
            time.sleep(0.005)
        return None

    # -- internals used by the handler ---------------------------------------------------------
    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    def _choose(self, req: Request) -> Reply:
        with self._lock:
            responder = self._responder
        if responder is not None:
            picked = responder(req)
            if picked is not None:
                return picked
        with self._lock:
            return self._queue.popleft() if self._queue else self._default

    def _next_id(self) -> str:
        return f"chatcmpl-fake-{next(self._ids)}"


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was just released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up is normal here; anything else is kept for the test to see."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError) or exc is None:
            return
        self.fake.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeLLM  # set on the bound subclass

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- plumbing ------------------------------------------------------------------------------
    def _read_request(self) -> Request:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        req = Request(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
            received_at=time.monotonic(),
        )
        self.fake._record(req)
        return req

    def _send(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError) as exc:
            raise _ClientGone() from exc

    def _wait(self, seconds: float, keepalive: float = 0.0, chunked: bool = False) -> None:
        """Sleep, but notice the client hanging up (and the server stopping) at once."""
        end = time.monotonic() + seconds
        next_ping = time.monotonic() + keepalive if keepalive else float("inf")
        while True:
            now = time.monotonic()
            if now >= end:
                return
            if self.fake._stopping.is_set():
                raise _ClientGone()
            if now >= next_ping and chunked:
                self._chunk(b": keepalive\n\n")
                next_ping = now + keepalive
            timeout = min(end - now, next_ping - now, 0.05)
            readable, _, _ = select.select([self.connection], [], [], max(timeout, 0))
            if readable:
                try:
                    if isinstance(self.connection, ssl.SSLSocket):  # no MSG_PEEK over TLS
                        peek = self.connection.recv(1)
                    else:
                        peek = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _ClientGone() from None
                if not peek:
                    raise _ClientGone()
                time.sleep(min(timeout, 0.01))  # a pipelined request: not ours to read

    def _head(
        self,
        status: int,
        ctype: str,
        extra: Iterable[tuple[str, str]] = (),
        *,
        length: int | None = None,
    ) -> None:
        lines = [f"HTTP/1.1 {status} {_reason(status)}", f"Content-Type: {ctype}"]
        if length is None:
            lines.append("Transfer-Encoding: chunked")
            lines.append("Cache-Control: no-cache")
        else:
            lines.append(f"Content-Length: {length}")
        lines.extend(f"{k}: {v}" for k, v in extra)
        self._send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _chunk(self, data: bytes) -> None:
        self._send(b"%x\r\n%s\r\n" % (len(data), data))

    def _event(self, obj: Any) -> None:
        self._chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")

    def _json(self, status: int, obj: Any, extra: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(obj).encode()
        self._head(status, "application/json", extra, length=len(data))
        self._send(data)

    def _raw(self, reply: Reply) -> None:
        data = reply.body or b""
        self._head(
            reply.status, reply.content_type or "application/json", reply.headers, length=len(data)
        )
        self._send(data)

    # -- routes --------------------------------------------------------------------------------
    def do_GET(self) -> None:
        req = self._read_request()
        self._guarded(req, self._get)

    def do_POST(self) -> None:
        req = self._read_request()
        self._guarded(req, self._post)

    def _guarded(self, req: Request, fn: Callable[[Request], None]) -> None:
        try:
            fn(req)
            req.completed = True
        except _ClientGone:
            if req.disconnected_at is None and not self.fake._stopping.is_set():
                req.disconnected_at = time.monotonic()
            self.close_connection = True

    def _auth_ok(self, req: Request) -> bool:
        key = self.fake.api_key
        if key is None:
            return True
        if req.headers.get("authorization") == f"Bearer {key}":
            return True
        self._json(
            401,
            {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
        return False

    def _get(self, req: Request) -> None:
        if not self._auth_ok(req):
            return
        path = urlsplit(req.path).path.rstrip("/")
        if self._route(req, "GET", path):
            return
        if path == "/v1/models":
            if self.fake.models_reply is not None:
                self._serve(req, self.fake.models_reply)
                return
            data = [{"id": m, "object": "model", "owned_by": "fake",
                     **self.fake.model_fields.get(m, {})} for m in self.fake.models]
            self._json(200, {"object": "list", "data": data})
            return
        if path == "/props" and self.fake.props is not None:
            if self.fake.props_need_model and "model=" not in urlsplit(req.path).query:
                self._json(400, {"error": {"code": 400, "type": "invalid_request_error",
                                           "message": "model name is missing from the request"}})
                return
            self._json(200, self.fake.props)
            return
        self._json(404, {"error": {"message": f"no route {req.path}", "type": "not_found"}})

    def _route(self, req: Request, method: str, path: str) -> bool:
        """Answer from :attr:`FakeLLM.routes` if ``method path`` is one; whether it was."""
        with self.fake._lock:
            answer = self.fake.routes.get((method, path), _NO_ROUTE)
        if answer is _NO_ROUTE:
            return False
        if isinstance(answer, Reply):
            self._serve(req, answer)
        else:
            self._json(200, answer)
        return True

    def _post(self, req: Request) -> None:
        if self._route(req, "POST", urlsplit(req.path).path.rstrip("/")):
            return
        if not req.path.rstrip("/").endswith("/chat/completions") or not req.path.startswith(
            "/v1/"
        ):
            self._json(
                404,
                {
                    "error": {
                        "message": f"Unexpected endpoint or method. (POST {req.path})",
                        "type": "not_found",
                    }
                },
            )
            return
        if not self._auth_ok(req):
            return
        if not isinstance(req.body, dict):
            self._json(400, {"error": {"message": "request body is not JSON"}})
            return
        kind, rung = req.response_format, req.format_rung
        with self.fake._lock:
            rejection = (self.fake._rejections.get(rung) or self.fake._rejections.get(kind)
                         if kind else None)
        if rejection is not None:
            status, message = rejection
            self._json(status, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        if self.fake._reject_stream_options and "stream_options" in req.body:
            self._json(
                400,
                {"error": {"message": "Unrecognized request argument supplied: stream_options"}},
            )
            return
        model = req.body.get("model")
        if self.fake.check_model and model not in self.fake.models:
            self._json(
                404,
                {
                    "error": {
                        "message": f"The model `{model}` does not exist.",
                        "type": "invalid_request_error",
                        "code": "model_not_found",
                    }
                },
            )
            return
        self._serve(req, self.fake._choose(req))

    def _serve(self, req: Request, reply: Reply) -> None:
        if reply.delay_headers:
            self._wait(reply.delay_headers)
        if reply.failure == "hang":
            self._wait(float("inf"))
            return
        if reply.failure == "reset":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.body is not None:
            self._raw(reply)
            return
        if reply.failure == "bad_json":
            data = b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "hel'
            self._head(200, "application/json", length=len(data))
            self._send(data)
            return
        if req.stream and not reply.ignore_stream:
            self._stream(req, reply)
        else:
            self._whole(req, reply)

    def _usage(self, req: Request, completion: int) -> dict[str, int]:
        chars = sum(len(str(m.get("content", ""))) for m in req.messages)
        prompt = max(1, chars // 4)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _model(self, req: Request, reply: Reply) -> str:
        if reply.model is not None:
            return reply.model
        model = req.body.get("model") if isinstance(req.body, dict) else None
        return str(model) if model else (self.fake.models[0] if self.fake.models else "fake")

    def _whole(self, req: Request, reply: Reply) -> None:
        if reply.delay:
            self._wait(reply.delay)
        if reply.repeat > 1:
            self._whole_repeated(req, reply)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        obj: dict[str, Any] = {
            "id": self.fake._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(req, reply),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        }
        if reply.usage:
            obj["usage"] = self._usage(req, reply.token_count())
        self._json(reply.status, obj, reply.headers)

    def _whole_repeated(self, req: Request, reply: Reply) -> None:
        """One JSON body whose content is ``reply.content`` × ``repeat``, written piece by piece
        under a Content-Length announced up front."""
        marker = "\u0000MARK\u0000"
        obj = {
            "id": self.fake._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(req, reply),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": marker},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        head, tail = json.dumps(obj).split(json.dumps(marker)[1:-1])
        piece = json.dumps(reply.content)[1:-1].encode()
        length = len(head.encode()) + len(piece) * reply.repeat + len(tail.encode())
        self._head(reply.status, "application/json", reply.headers, length=length)
        self._send(head.encode())
        for i in range(reply.repeat):
            if reply.token_delay and i:
                self._wait(reply.token_delay)
            self._send(piece)
        self._send(tail.encode())

    def _stream(self, req: Request, reply: Reply) -> None:
        cid = self.fake._next_id()
        created = int(time.time())
        model = self._model(req, reply)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        self._head(reply.status, reply.content_type or "text/event-stream", reply.headers)
        self._event(chunk({"role": "assistant", "content": ""}))
        if reply.delay:
            self._wait(reply.delay, reply.keepalive, chunked=True)
        if reply.failure == "bad_sse":
            self._chunk(b'data: {"choices": [{"delta": {"content": "oops\n\n')
            self._chunk(b"data: this is not json\n\n")
            self._send(b"0\r\n\r\n")
            return
        for piece in split_tokens(reply.reasoning):
            self._event(chunk({"reasoning_content": piece}))
        for i, tok in enumerate(reply.iter_tokens()):
            if reply.drop_after is not None and i >= reply.drop_after:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.token_delay and i:
                self._wait(reply.token_delay, reply.keepalive, chunked=True)
            self._event(chunk({"content": tok}))
        if reply.failure == "stream_error":
            # What llama-server sends when generation fails after the headers went out.
            self._event(
                {
                    "error": {
                        "code": 500,
                        "message": "the prompt exceeds the context size",
                        "type": "server_error",
                    }
                }
            )
            self._send(b"0\r\n\r\n")
            return
        if reply.finish_reason is not None:
            self._event(chunk({}, reply.finish_reason))
        options = req.body.get("stream_options") if isinstance(req.body, dict) else None
        if reply.usage and isinstance(options, dict) and options.get("include_usage"):
            self._event(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": self._usage(req, reply.token_count()),
                }
            )
        if not reply.no_done:
            self._chunk(b"data: [DONE]\n\n")
        self._send(b"0\r\n\r\n")


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


__all__ = [
    "FAULTS",
    "LLAMA_CPP_PYTHON_JSON_SCHEMA_ERROR",
    "LMSTUDIO_JSON_OBJECT_ERROR",
    "STRICT_JSON_OBJECT_SCHEMA_ERROR",
    "FakeLLM",
    "Reply",
    "Request",
    "closed_port_url",
    "split_tokens",
]
