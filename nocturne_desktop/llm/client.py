"""An OpenAI-compatible chat client over httpx: chat, stream, structured output, /models.

Every call streams (``"stream": true``) even when the caller wants the whole reply, for two
reasons: the three timeouts become distinct (connect; request sent → first generated token;
longest silence between chunks), and a cancel has somewhere to land. A small watchdog thread per
call owns the deadlines; when one passes, or the caller's :class:`CancelToken` is set, it shuts
the socket down. That wakes the reading thread at once and sends the server a FIN, so a local
engine stops generating for a request nobody waits for (the "ghosting" of article bug 9).

Servers that ignore ``stream`` and answer with one JSON body are read as a plain completion.

Structured output climbs down a ladder — ``json_schema`` → ``json_object`` carrying the schema
(``{"type": "json_object", "schema": …}``, the form llama-cpp-python's server and llama-server
turn into a grammar) → bare ``json_object`` → plain text with JSON extraction — and remembers,
per base URL and for the life of the process, which rungs the server refused
(:func:`capabilities_for`). The contract's schema goes with the request as long as some rung
the server accepts can carry it. The reply is always validated locally with the pydantic
contract, whatever the server claims to enforce.

The API key goes into ``Authorization: Bearer`` and nowhere else: not into messages, logs,
exceptions or ``repr``; server text quoted in errors is scrubbed of it too.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import socket
import threading
import time
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from nocturne_desktop import __version__
from nocturne_desktop.core import logfile
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import (
    ChatResult,
    ChatTuning,
    Message,
    ModelAuthError,
    ModelBadReply,
    ModelCancelled,
    ModelError,
    ModelHTTPError,
    ModelNotFound,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelTruncated,
    ModelUnreachable,
    StructuredResult,
    Usage,
)
from nocturne_desktop.llm.jsonextract import (
    extract_json_object,
    outer_object_unclosed,
    salvage_object,
)
from nocturne_desktop.llm.schema import schema_name, strict_schema
from nocturne_desktop.llm.tuning import template_stops, tuning_for

T = TypeVar("T", bound=BaseModel)

DEFAULT_BASE_URL = "http://localhost:1234/v1"
MODES = ("json_schema", "json_object_schema", "json_object", "text")
"""The structured-output ladder, strongest first. ``json_object_schema`` is
``response_format: {"type": "json_object", "schema": <the contract's schema>}``."""

SCHEMA_MODES = ("json_schema", "json_object_schema")
"""The rungs on which the server receives the contract's schema."""

MODE_TEXT = {
    "json_schema": "response_format json_schema (the schema enforced by the server)",
    "json_object_schema": "response_format json_object with the schema inside (enforced by "
                          "the server, llama-cpp-python style)",
    "json_object": "response_format json_object without a schema (JSON, shape checked "
                   "locally only)",
    "text": "plain text, JSON extracted and checked locally",
}
"""What each rung means, for people (Settings)."""

COMPACT_JSON_LINE = "Reply with one compact JSON object only."

_ERROR_BODY_LIMIT = 64 * 1024
_CUT_RAW_EXCERPT = 2000
_EXCERPT_CHARS = 300
_LIST_MODELS_TIMEOUT = 30.0

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


class Timeouts(BaseModel):
    """Seconds the client waits, per phase of a request - the one definition, also stored in
    the settings. ``first_token``: request sent → first generated token (prompt processing and
    model loading happen here, so it is long). ``idle``: the longest silence allowed between
    two chunks once the reply has started. ``total``: the overall deadline of one request,
    from the start of the call to the last byte, however steadily the server trickles. A wrong
    value raises ``ValueError`` (pydantic's
    ``ValidationError``) saying which."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    connect: float = Field(10.0, le=600, description="Connecting to the model server.")
    first_token: float = Field(
        600.0, le=7200,
        description="Request sent → first token (prompt processing and model loading happen here).",
    )
    idle: float = Field(120.0, le=3600, description="Longest silence between two chunks.")
    total: float = Field(
        1200.0, le=14400,
        description="Overall deadline of one request, however steadily the reply trickles in.",
    )

    @field_validator("connect", "first_token", "idle", "total")
    @classmethod
    def _positive(cls, value: float, info: ValidationInfo) -> float:
        if not value > 0:
            name = (info.field_name or "").replace("_", "-")
            raise ValueError(f"the {name} timeout must be positive, not {value!r}")
        return value


DEFAULT_TIMEOUTS = Timeouts()


def _engine_key(base_url: str) -> str | None:
    """The per-run key of the built-in engine when ``base_url`` is where this process runs it."""
    from nocturne_desktop.llm import engine  # lazily: the engine module is heavier

    return engine.key_for(base_url)


def normalise_base_url(base_url: str) -> str:
    """The base URL as given, trimmed, without trailing slashes - the one normaliser (the
    client, the settings and the endpoint probe all use it).

    No path is guessed: ``http://host:1234`` stays without ``/v1``. A missing scheme gets
    ``http://`` (that is not a path guess, and local servers speak plain HTTP); any scheme but
    http and https is refused.
    """
    url = base_url.strip()
    if not url:
        raise ValueError(
            f"the model server's base URL is empty; set it in Settings (LM Studio's default is "
            f"{DEFAULT_BASE_URL})")
    if "://" not in url:
        url = "http://" + url
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"the base URL must start with http:// or https://, not {scheme}://")
    if "@" in url.split("://", 1)[1].split("/", 1)[0]:  # never saved, sent or shown with a password
        raise ValueError(f"the base URL {logfile.redact_url(url)} holds a user name or password; "
                         "leave them out and put the key in the API key field")
    return url.rstrip("/")


# --- per-base-URL capability memory ------------------------------------------------------------

_CAPS_LOCK = threading.Lock()
_CAPS: dict[str, dict[str, str]] = {}
_TEMPLATE_STOPS: dict[str, tuple[str, ...]] = {}
"""base URL → the turn markers of its chat template (see OpenAIClient._template_stops)."""
_PROPS_TIMEOUT = 3.0
_MAX_STOPS = 4  # OpenAI's own limit on stop sequences


class _Auto:
    """The type of :data:`AUTO`."""


AUTO = _Auto()
"""Pick the chat tuning from the model name (the default of ``OpenAIClient(tuning=…)``)."""


def _cap(base: str, key: str) -> str:
    with _CAPS_LOCK:
        return _CAPS.get(base, {}).get(key, "untested")


def _set_cap(base: str, key: str, value: str, *, only_if_untested: bool = False) -> None:
    with _CAPS_LOCK:
        entry = _CAPS.setdefault(base, {})
        if only_if_untested and entry.get(key, "untested") != "untested":
            return
        entry[key] = value


def capabilities_for(base_url: str) -> dict[str, str]:
    """What is known about a base URL's ``response_format`` support in this process.

    Each of ``json_schema``, ``json_object_schema`` and ``json_object`` is ``supported``,
    ``unsupported`` or ``untested``; :func:`structured_mode` says which rung is in use.
    """
    base = normalise_base_url(base_url)
    return {key: _cap(base, key) for key in MODES if key != "text"}


def structured_mode(caps: dict[str, str]) -> str | None:
    """The rung structured calls use given ``caps`` (from :func:`capabilities_for`): the
    strongest one found ``supported`` with every stronger one ``unsupported``; ``text`` when
    all were refused; None while the ladder has not been probed that far."""
    for mode in MODES:
        if mode == "text":
            return "text"
        state = caps.get(mode, "untested")
        if state == "supported":
            return mode
        if state != "unsupported":
            return None
    return None  # pragma: no cover


def forget_capabilities(base_url: str | None = None) -> None:
    """Drop what was learnt about one base URL (or all): the next call probes again."""
    with _CAPS_LOCK:
        if base_url is None:
            _CAPS.clear()
            _TEMPLATE_STOPS.clear()
        else:
            _CAPS.pop(normalise_base_url(base_url), None)
            _TEMPLATE_STOPS.pop(normalise_base_url(base_url), None)


# --- small helpers -------------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]*>")
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def _plain_excerpt(body: str, limit: int = _EXCERPT_CHARS) -> str:
    """A short plain-text rendering of an error body: the JSON error message if there is one,
    HTML reduced to its text, whitespace collapsed, capped at ``limit`` characters."""
    text = body.strip()
    if not text:
        return "(empty body)"
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        err = parsed.get("error", parsed)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg") or err.get("detail")
            text = msg if isinstance(msg, str) and msg else json.dumps(err)[: limit * 2]
        elif isinstance(err, str):
            text = err
        elif isinstance(parsed.get("detail"), str):
            text = parsed["detail"]
    elif "<" in text and ">" in text and re.search(r"</?[a-zA-Z][^>]*>", text):
        text = _SCRIPT.sub(" ", text)
        text = html.unescape(_TAG.sub(" ", text))
    text = _SPACE.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text or "(empty body)"


def _estimate_tokens(chars: int) -> int:
    return (chars + 3) // 4


def _prompt_chars(messages: Sequence[Message]) -> int:
    return sum(len(str(m.get("content", ""))) for m in messages)


def reply_cap(max_reply_chars: int, max_tokens: int | None) -> int:
    """Characters of reply text one call keeps: ``max_reply_chars``, lowered to
    ``max_tokens`` × :data:`CHARS_PER_TOKEN_CAP` (at least 4096) when ``max_tokens`` is set."""
    if max_tokens is None or max_tokens <= 0:
        return max_reply_chars
    return min(max_reply_chars, max(_MIN_CAP_CHARS, max_tokens * CHARS_PER_TOKEN_CAP))


def require_complete(result: ChatResult) -> ChatResult:
    """Raise :class:`ModelTruncated` if the reply stopped at ``max_tokens``.

    ``chat()`` reports a ``length`` finish without raising, because a cut chat reply is still
    worth showing; callers for whom half an answer is useless pass the result through this.
    """
    if result.cut:
        raise ModelTruncated(
            f"the reply was cut at the client's size cap ({len(result.text):,} characters); "
            "the server did not stop at max_tokens"
        )
    if result.finish_reason == "length":
        raise ModelTruncated(
            f"the reply was cut off at max_tokens ({result.usage.completion_tokens} tokens); "
            "raise max_tokens or ask for a shorter answer"
        )
    return result


# --- one exchange: socket, deadlines, abort ------------------------------------------------------


class _Exchange:
    """Deadlines and the kill switch of one HTTP exchange.

    The reading thread reports progress (:meth:`sent`, :meth:`chunk`, :meth:`token`); a
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


# --- the client ----------------------------------------------------------------------------------


@dataclass
class _StreamState:
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


class OpenAIClient:
    """A :class:`~nocturne_desktop.core.ports.ModelClient` for any OpenAI-compatible server.

    One instance may be used by one thread at a time (give each worker its own, or hand it
    over); the capability memory behind :meth:`capabilities` is shared and locked.
    ``last_result`` describes the most recent :meth:`stream` once it is exhausted.
    """

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        temperature: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        max_reply_chars: int = DEFAULT_REPLY_CAP_CHARS,
        tuning: ChatTuning | _Auto | None = AUTO,
    ) -> None:
        """``max_reply_chars`` caps the text one call keeps (see :func:`reply_cap`).
        ``tuning``: how to chat with this model (:class:`ChatTuning`); by default the one
        :func:`~nocturne_desktop.llm.tuning.tuning_for` knows for ``model``, None for none."""
        if max_reply_chars < 1:
            raise ValueError(f"the reply cap must be positive, not {max_reply_chars!r}")
        self.max_reply_chars = max_reply_chars
        self.base_url = normalise_base_url(base_url)
        self.model = model
        self.timeouts = timeouts
        self.temperature = temperature
        self.tuning: ChatTuning | None = tuning_for(model) if isinstance(tuning, _Auto) else tuning
        self._api_key = api_key or _engine_key(self.base_url)
        logfile.add_secret(self._api_key)  # the log never holds it (core.logfile)
        # httpx's own transport passes the trace hook to httpcore; others may not.
        self._trace_supported = transport is None or isinstance(transport, httpx.HTTPTransport)
        if transport is None:
            transport = httpx.HTTPTransport(
                # A fresh connection per call: the watchdog learns its socket from the connect
                # trace, and an aborted connection is never handed back to the pool.
                limits=httpx.Limits(max_keepalive_connections=0),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
        headers = {
            "User-Agent": f"nocturne-desktop/{__version__}",
            "Accept": "text/event-stream, application/json",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # The watchdog owns the read deadlines; httpx's read timeout is only a backstop.
        backstop = max(timeouts.first_token, timeouts.idle) + 5.0
        self._http = httpx.Client(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(
                connect=timeouts.connect, read=backstop, write=backstop, pool=timeouts.connect
            ),
            follow_redirects=False,
        )
        self.last_result: ChatResult | None = None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"OpenAIClient(base_url={self.base_url!r}, model={self.model!r}, api_key={key})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public calls ----------------------------------------------------------------------------

    def capabilities(self) -> dict[str, str]:
        """``{"json_schema": …, "json_object_schema": …, "json_object": …}``: supported /
        unsupported / untested."""
        return capabilities_for(self.base_url)

    def list_models(self) -> list[str]:
        """The ids ``GET {base}/models`` lists (OpenAI ``data[].id``; Ollama-style ``models``)."""
        url = f"{self.base_url}/models"
        try:
            response = self._http.get(
                url,
                timeout=httpx.Timeout(
                    connect=self.timeouts.connect,
                    read=min(self.timeouts.idle, _LIST_MODELS_TIMEOUT),
                    write=self.timeouts.connect,
                    pool=self.timeouts.connect,
                ),
            )
        except httpx.TimeoutException as exc:
            which = "connect" if isinstance(exc, httpx.ConnectTimeout) else "idle"
            raise self._timeout_error(which, url) from None
        except (httpx.HTTPError, OSError) as exc:
            raise self._transport_error(exc, url) from None
        if response.status_code >= 400:
            raise self._status_error(response.status_code, response.text, response.headers, url)
        try:
            data = response.json()
        except ValueError:
            raise ModelBadReply(
                f"{url} did not answer with JSON ({_plain_excerpt(response.text, 120)}); "
                "is the base URL an OpenAI-compatible API?",
                url=url,
            ) from None
        return _model_ids(data, url)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        """The whole reply. ``finish_reason == "length"`` is reported, not raised (see
        :func:`require_complete`)."""
        payload = self._free_text_payload(messages, temperature, max_tokens)
        state = self._state(payload.get("max_tokens"))
        started = time.monotonic()
        text = "".join(self._deltas(payload, cancel, state))
        return self._result(text, messages, state, started)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        """Text deltas as they arrive. Closing the iterator early closes the connection.

        A reply that reaches the size cap is yielded up to the cap, the connection is closed,
        and then :class:`ModelTruncated` is raised: what was yielded is the part before the cut.
        """
        self.last_result = None
        payload = self._free_text_payload(messages, temperature, max_tokens)
        state = self._state(payload.get("max_tokens"))
        started = time.monotonic()
        parts: list[str] = []
        for piece in self._deltas(payload, cancel, state):
            parts.append(piece)
            yield piece
        self.last_result = self._result("".join(parts), messages, state, started)
        if state.cut:
            raise ModelTruncated(self._cut_message(state, max_tokens))

    def structured(
        self,
        messages: Sequence[Message],
        contract: type[T],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> StructuredResult[T]:
        """A reply validated against ``contract``; parse and validation failures are returned
        (``value=None`` and ``error``), transport and HTTP problems raised."""
        schema: dict[str, Any] | None = None
        last_refusal: ModelHTTPError | None = None
        for mode in MODES:
            if mode != "text" and _cap(self.base_url, mode) == "unsupported":
                continue
            if mode in SCHEMA_MODES and schema is None:
                schema = strict_schema(contract)
            payload = self._payload(
                _with_compact_line(messages) if mode != "json_schema" else messages,
                temperature,
                max_tokens,
            )
            if mode == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema_name(contract),
                        "strict": True,
                        "schema": schema,
                    },
                }
            elif mode == "json_object_schema":
                payload["response_format"] = {"type": "json_object", "schema": schema}
            elif mode == "json_object":
                payload["response_format"] = {"type": "json_object"}
            state = self._state(max_tokens)
            started = time.monotonic()
            try:
                text = "".join(self._deltas(payload, cancel, state))
            except ModelHTTPError as exc:
                if mode != "text" and _is_format_refusal(exc):
                    _set_cap(self.base_url, mode, "unsupported")
                    last_refusal = exc
                    continue
                raise
            if mode != "text":
                _set_cap(self.base_url, mode, "supported", only_if_untested=True)
            chat = self._result(text, messages, state, started)
            if state.cut:
                return StructuredResult(
                    value=None,
                    raw=text[:_CUT_RAW_EXCERPT],
                    mode=mode,
                    finish_reason=chat.finish_reason,
                    usage=chat.usage,
                    elapsed_s=chat.elapsed_s,
                    truncated=True,
                    error=self._cut_message(state, max_tokens) + "; a structured reply must "
                    "be whole, so it was refused",
                )
            result = _interpret(text, contract, mode, chat, max_tokens)
            if last_refusal is not None:
                result.extras["stepped_down_after"] = str(last_refusal)
            return result
        raise AssertionError("unreachable: the text mode is never skipped")  # pragma: no cover

    # --- internals -------------------------------------------------------------------------------

    def _state(self, max_tokens: int | None) -> _StreamState:
        return _StreamState(cap=reply_cap(self.max_reply_chars, max_tokens))

    @staticmethod
    def _cut_message(state: _StreamState, max_tokens: int | None) -> str:
        why = f" (max_tokens {max_tokens} × {CHARS_PER_TOKEN_CAP})" if max_tokens else ""
        return (
            f"the reply passed the size cap of {state.cap:,} characters{why} and was cut there; "
            "the server did not stop at max_tokens"
        )

    def _payload(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "stream": True,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if self.model:
            payload["model"] = self.model
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        return payload

    def _free_text_payload(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> dict[str, Any]:
        """A chat or stream request: with the tuning's cap, sampling fields and stop sequences
        (structured requests get none of them)."""
        tuning = self.tuning
        if tuning is None:
            return self._payload(messages, temperature, max_tokens)
        if tuning.max_tokens is not None:
            max_tokens = tuning.max_tokens if max_tokens is None else min(max_tokens,
                                                                          tuning.max_tokens)
        payload = self._payload(messages, temperature, max_tokens)
        payload.update(tuning.sampling)
        stops = list(tuning.stop)
        if tuning.stops_from_template:
            stops += [m for m in self._template_stops() if m not in stops]
        if stops:
            payload["stop"] = stops[:_MAX_STOPS]
        return payload

    def _template_stops(self) -> tuple[str, ...]:
        """The turn markers of the server's chat template (llama.cpp's ``GET /props``), asked
        once per base URL; () when the server has no such endpoint."""
        with _CAPS_LOCK:
            known = _TEMPLATE_STOPS.get(self.base_url)
        if known is not None:
            return known
        found: tuple[str, ...] = ()
        root = self.base_url.removesuffix("/v1")
        try:
            response = self._http.get(f"{root}/props", timeout=_PROPS_TIMEOUT)
            if response.status_code == 200:
                data = response.json()
                if isinstance(data, dict) and isinstance(data.get("chat_template"), str):
                    found = template_stops(data["chat_template"])
        except (httpx.HTTPError, OSError, ValueError):
            found = ()
        with _CAPS_LOCK:
            _TEMPLATE_STOPS[self.base_url] = found
        return found

    def _result(
        self, text: str, messages: Sequence[Message], state: _StreamState, started: float
    ) -> ChatResult:
        return ChatResult(
            text=text,
            finish_reason="length" if state.cut else state.finish_reason,
            usage=_usage(state.usage, messages, text),
            model=state.model or self.model,
            elapsed_s=time.monotonic() - started,
            first_token_s=state.first_token_s,
            cut=state.cut,
        )

    def _deltas(
        self, payload: dict[str, Any], cancel: CancelToken | None, state: _StreamState
    ) -> Iterator[str]:
        """POST the payload and yield content deltas; retries once without ``stream_options``
        if the server refuses that field."""
        if _cap(self.base_url, "stream_options") != "unsupported":
            payload = {**payload, "stream_options": {"include_usage": True}}
            started = False
            try:
                for piece in self._exchange(payload, cancel, state):
                    started = True
                    yield piece
                return
            except ModelHTTPError as exc:
                refused = exc.status in (400, 422) and "stream_options" in exc.body
                if started or not refused:
                    raise
                _set_cap(self.base_url, "stream_options", "unsupported")
                payload = {k: v for k, v in payload.items() if k != "stream_options"}
        yield from self._exchange(payload, cancel, state)

    def _exchange(
        self, payload: dict[str, Any], cancel: CancelToken | None, state: _StreamState
    ) -> Iterator[str]:
        url = f"{self.base_url}/chat/completions"
        if cancel is not None and cancel.cancelled:
            raise self._abort_error("cancel", url)
        ex = _Exchange(self.timeouts, trace_supported=self._trace_supported)
        unregister = cancel.on_cancel(lambda: ex.abort("cancel")) if cancel is not None else None
        ex.start()
        try:
            try:
                request = self._http.build_request(
                    "POST", url, json=payload, extensions={"trace": ex.trace}
                )
                response = self._http.send(request, stream=True)
            except (httpx.HTTPError, OSError) as exc:
                raise self._failure(exc, ex, url, answered=False) from None
            ex.attach(response)
            try:
                if response.status_code >= 400:
                    body = _read_capped(response, ex)
                    if ex.reason is not None:
                        raise self._abort_error(ex.reason, url)
                    raise self._status_error(response.status_code, body, response.headers, url)
                ctype = response.headers.get("content-type", "")
                if "json" in ctype and "event-stream" not in ctype:
                    yield from self._read_json(response, ex, state, url)
                else:
                    yield from self._read_sse(response, ex, state, url)
            except (httpx.HTTPError, OSError) as exc:
                raise self._failure(exc, ex, url) from None
            finally:
                response.close()
        finally:
            ex.finish()
            if unregister is not None:
                unregister()

    def _read_sse(
        self, response: httpx.Response, ex: _Exchange, state: _StreamState, url: str
    ) -> Iterator[str]:
        buf = b""
        data: list[bytes] = []
        event = b""
        for chunk in response.iter_bytes():
            ex.chunk()
            if ex.reason is not None:
                raise self._abort_error(ex.reason, url)
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
                obj = self._parse_chunk(raw, url)
                if event == b"error" or "error" in obj:
                    raise self._stream_error(obj, url)
                event = b""
                yield from self._apply_chunk(obj, ex, state)
                if state.cut:
                    return  # the caller's finally closes the connection
            buf = buf[start:]
            if len(buf) + sum(len(d) for d in data) > state.raw_cap:
                # One event larger than any reply we keep: nothing in it can be used.
                state.cut = True
                return
        if ex.reason is not None:
            raise self._abort_error(ex.reason, url)
        if data:  # a final event without its blank line
            raw = b"\n".join(data)
            if raw.strip() == b"[DONE]":
                return
            obj = self._parse_chunk(raw, url)
            yield from self._apply_chunk(obj, ex, state)
        if state.finish_reason is None:
            raise ModelBadReply(
                f"the stream from {url} ended before the reply was complete (no finish_reason "
                "and no [DONE]); the server may have crashed or been stopped",
                url=url,
            )

    def _parse_chunk(self, raw: bytes, url: str) -> dict[str, Any]:
        try:
            obj = json.loads(raw)
        except ValueError:
            excerpt = _plain_excerpt(raw.decode("utf-8", "replace"), 120)
            raise ModelBadReply(
                f"{url} sent a streamed chunk that is not JSON ({excerpt!r}); "
                "is this an OpenAI-compatible server?",
                url=url,
            ) from None
        if not isinstance(obj, dict):
            raise ModelBadReply(f"{url} sent a streamed chunk that is not a JSON object", url=url)
        return obj

    def _apply_chunk(self, obj: dict[str, Any], ex: _Exchange, state: _StreamState) -> list[str]:
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
                if ex.first_at is None:
                    ex.token()
                    state.first_token_s = (ex.first_at or ex.started) - ex.started
                else:
                    ex.token()
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
        self, response: httpx.Response, ex: _Exchange, state: _StreamState, url: str
    ) -> Iterator[str]:
        body = bytearray()
        for chunk in response.iter_bytes():
            ex.token()
            body += chunk
            if len(body) > state.raw_cap:
                break
        if ex.reason is not None:
            raise self._abort_error(ex.reason, url)
        state.first_token_s = (ex.first_at or time.monotonic()) - ex.started
        if len(body) > state.raw_cap:
            # Too large to parse whole: keep the reply text that came before the cap.
            state.cut = True
            state.finish_reason = "length"
            del body[state.raw_cap :]
            text = _partial_content(body)[: state.cap]
            del body
            state.chars = len(text)
            if text:
                ex.token()
                yield text
            return
        try:
            obj = json.loads(body)
        except ValueError:
            excerpt = _plain_excerpt(body[:4096].decode("utf-8", "replace"), 120)
            raise ModelBadReply(
                f"{url} answered with a body that is not valid JSON ({excerpt!r})", url=url
            ) from None
        if not isinstance(obj, dict):
            raise ModelBadReply(f"{url} answered with JSON that is not an object", url=url)
        if "error" in obj and "choices" not in obj:
            raise self._stream_error(obj, url)
        if not isinstance(obj.get("choices"), list) or not obj["choices"]:
            raise ModelBadReply(f"{url} answered without any choices", url=url)
        pieces = self._apply_chunk(obj, ex, state)
        if state.finish_reason is None:
            state.finish_reason = "stop"
        text = "".join(pieces)
        if text:
            yield text

    # --- error mapping ---------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        if self._api_key and self._api_key in text:
            text = text.replace(self._api_key, "***")
        return text

    def _abort_error(self, reason: str, url: str) -> ModelError:
        if reason == "cancel":
            return ModelCancelled(
                f"the request to {url} was cancelled and its connection closed, so the server "
                "can stop generating",
                url=url,
            )
        return self._timeout_error(reason, url)

    def _timeout_error(self, which: str, url: str) -> ModelTimeout:
        t = self.timeouts
        if which == "connect":
            msg = (
                f"could not connect to {self.base_url} within {t.connect:g} s (connect timeout) "
                "— is the server running and the address right?"
            )
        elif which == "first-token":
            msg = (
                f"{url} sent no reply within {t.first_token:g} s of the request (first-token "
                "timeout) — the model may still be loading or the prompt is long; raise the "
                "timeout in Settings or use a smaller model"
            )
        elif which == "deadline":
            msg = (
                f"{url} did not finish its reply within {t.total:g} s (overall deadline) — it "
                "was still sending, slowly; the server may be overloaded or stuck; raise the "
                "deadline in Settings if replies this long are expected"
            )
        else:
            msg = (
                f"{url} went silent for more than {t.idle:g} s in the middle of a reply (idle "
                "timeout) — the server may be stuck or overloaded"
            )
        return ModelTimeout(msg, which=which, url=url)

    def _failure(
        self, exc: BaseException, ex: _Exchange, url: str, *, answered: bool = True
    ) -> ModelError:
        """Map an httpx/socket exception, preferring the reason we aborted, if we did."""
        if ex.reason is not None:
            return self._abort_error(ex.reason, url)
        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
                return self._timeout_error("connect", url)
            return self._timeout_error("first-token" if ex.first_at is None else "idle", url)
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError) and not answered:
            return ModelBadReply(
                f"{url} closed the connection without answering; the server may have crashed "
                "or refused the request — check its log",
                url=url,
            )
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
            return ModelBadReply(
                f"the connection to {url} closed in the middle of the reply; the server may have "
                "crashed, been stopped, or run out of memory",
                url=url,
            )
        return self._transport_error(exc, url)

    def _transport_error(self, exc: BaseException, url: str) -> ModelError:
        if isinstance(exc, httpx.ConnectTimeout):
            return self._timeout_error("connect", url)
        detail = str(exc).lower()
        if isinstance(exc, httpx.ConnectError):
            if (
                "name" in detail and ("resolve" in detail or "known" in detail)
            ) or "getaddrinfo" in detail:
                return ModelUnreachable(
                    f"cannot find the host of {self.base_url} (name lookup failed) — check the "
                    "base URL in Settings",
                    url=url,
                )
            return ModelUnreachable(
                f"nothing is listening at {self.base_url} — is LM Studio's server (or your model "
                "server) running?",
                url=url,
            )
        if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
            return ModelUnreachable(
                f"{self.base_url} is not a usable http(s) URL — check the base URL in Settings",
                url=url,
            )
        if isinstance(exc, httpx.RemoteProtocolError):
            return ModelBadReply(
                f"{url} did not answer with valid HTTP — is the base URL pointing at a model "
                "server?",
                url=url,
            )
        return ModelUnreachable(
            f"the connection to {self.base_url} failed ({type(exc).__name__}) — is the server "
            "running?",
            url=url,
        )

    def _stream_error(self, obj: dict[str, Any], url: str) -> ModelError:
        err = obj.get("error")
        status = 500
        if isinstance(err, dict):
            code = err.get("code") or err.get("status")
            if isinstance(code, int) and 400 <= code <= 599:
                status = code
        body = json.dumps(obj)
        return self._status_error(status, body, {}, url, in_stream=True)

    def _status_error(
        self,
        status: int,
        body: str,
        headers: httpx.Headers | dict[str, str],
        url: str,
        *,
        in_stream: bool = False,
    ) -> ModelHTTPError:
        body = self._redact(body[:_ERROR_BODY_LIMIT])
        excerpt = _plain_excerpt(body)
        where = (
            f"{url} reported an error mid-stream" if in_stream else f"{url} answered HTTP {status}"
        )
        if status in (401, 403):
            hint = (
                "check the API key in Settings"
                if self._api_key
                else "the server wants an API key; set one in Settings"
            )
            return ModelAuthError(
                f"{where} (not authorised): {excerpt} — {hint}", status=status, body=body, url=url
            )
        if status == 404:
            return self._not_found(where, excerpt, body, url)
        if status == 429:
            retry = headers.get("retry-after") if headers else None
            wait = f"; the server asks to wait {retry} s" if retry else ""
            return ModelRateLimited(
                f"{where} (rate limited){wait}: {excerpt} — wait a moment and try again",
                status=status,
                body=body,
                url=url,
            )
        if status >= 500:
            return ModelServerError(
                f"{where} (server error): {excerpt} — check the model server's log",
                status=status,
                body=body,
                url=url,
            )
        return ModelHTTPError(
            f"{where} (request refused): {excerpt}", status=status, body=body, url=url
        )

    def _not_found(self, where: str, excerpt: str, body: str, url: str) -> ModelNotFound:
        if url.endswith("/models"):
            return ModelNotFound(
                f"{where}: there is no model list at {url} — check the base URL (most "
                "OpenAI-compatible servers expect it to end in /v1)",
                body=body,
                url=url,
            )
        try:
            available = self.list_models()
        except ModelError:
            return ModelNotFound(
                f"{where}: {excerpt} — check the base URL (most OpenAI-compatible servers "
                "expect it to end in /v1) and the model name",
                body=body,
                url=url,
            )
        if self.model and self.model not in available:
            listing = ", ".join(available[:20]) if available else "none — load a model first"
            return ModelNotFound(
                f"the model {self.model!r} is not available at {self.base_url}; it offers: "
                f"{listing} — pick one in Settings",
                body=body,
                url=url,
                available=available,
            )
        hint = "" if self.base_url.endswith("/v1") else " (most servers expect it to end in /v1)"
        return ModelNotFound(
            f"{where}: {excerpt} — check the base URL{hint} and the model name",
            body=body,
            url=url,
            available=available,
        )


# --- module helpers ------------------------------------------------------------------------------


def _read_capped(response: httpx.Response, ex: _Exchange) -> str:
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        ex.token()
        parts.append(chunk)
        size += len(chunk)
        if size >= _ERROR_BODY_LIMIT:
            break
    return b"".join(parts)[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")


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
    for trim in range(0, 13):  # a cut inside a surrogate pair leaves half an escape
        try:
            value = json.loads('"' + literal[: len(literal) - trim] + '"')
        except ValueError:
            continue
        return value if isinstance(value, str) else ""
    return ""


def _model_ids(data: Any, url: str) -> list[str]:
    rows: Any = None
    if isinstance(data, dict):
        rows = data.get("data", data.get("models"))
    elif isinstance(data, list):
        rows = data
    if not isinstance(rows, list):
        raise ModelBadReply(f"{url} answered without a model list", url=url)
    ids: list[str] = []
    for row in rows:
        if isinstance(row, dict):
            name = row.get("id") or row.get("name") or row.get("model")
            if isinstance(name, str) and name:
                ids.append(name)
        elif isinstance(row, str):
            ids.append(row)
    return ids


def _usage(raw: dict[str, Any] | None, messages: Sequence[Message], text: str) -> Usage:
    if raw is not None:
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            details = raw.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            return Usage(prompt_tokens=prompt, completion_tokens=completion,
                         cached_tokens=cached if isinstance(cached, int) else None)
    return Usage(
        prompt_tokens=_estimate_tokens(_prompt_chars(messages)),
        completion_tokens=_estimate_tokens(len(text)),
        estimated=True,
    )


def _is_format_refusal(exc: ModelHTTPError) -> bool:
    if exc.status not in (400, 422, 500):
        return False
    body = exc.body.lower()
    return any(word in body for word in ("response_format", "json_schema", "json_object"))


def _with_compact_line(messages: Sequence[Message]) -> list[Message]:
    """The messages with :data:`COMPACT_JSON_LINE` added to the first system message (or a new
    one at the start: several chat templates refuse a system message anywhere else)."""
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "system":
            content = m.get("content", "")
            if COMPACT_JSON_LINE not in content:
                m["content"] = f"{content}\n\n{COMPACT_JSON_LINE}" if content else COMPACT_JSON_LINE
            return out
    return [{"role": "system", "content": COMPACT_JSON_LINE}, *out]


def _validation_summary(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _single_list_field(contract: type[BaseModel]) -> tuple[str, Any] | None:
    """(JSON key, item type) of the contract's one list field, if it has exactly one."""
    found: list[tuple[str, Any]] = []
    for name, info in contract.model_fields.items():
        if typing.get_origin(info.annotation) is list:
            args = typing.get_args(info.annotation)
            found.append((info.alias or name, args[0] if args else Any))
    return found[0] if len(found) == 1 else None


def _interpret(
    text: str,
    contract: type[T],
    mode: str,
    chat: ChatResult,
    max_tokens: int | None,
) -> StructuredResult[T]:
    truncated = chat.finish_reason == "length"
    common: dict[str, Any] = {
        "raw": text,
        "mode": mode,
        "finish_reason": chat.finish_reason,
        "usage": chat.usage,
        "elapsed_s": chat.elapsed_s,
        "truncated": truncated,
    }
    name = contract.__name__
    obj = extract_json_object(text)
    problem: str
    if obj is not None and outer_object_unclosed(text):
        obj = None
        problem = (
            "the reply's JSON object is never closed (cut off or malformed); the complete "
            "object inside it is only a fragment, so nothing was taken from it"
        )
    elif obj is not None:
        try:
            return StructuredResult(value=contract.model_validate(obj), **common)
        except ValidationError as exc:
            problem = f"the reply's JSON does not fit {name}: {_validation_summary(exc)}"
    elif not text.strip():
        problem = "the reply was empty"
    else:
        problem = "the reply contains no complete JSON object"
    if not truncated:
        return StructuredResult(value=None, error=problem, **common)

    tokens = max_tokens if max_tokens is not None else chat.usage.completion_tokens
    cut = f"reply cut off at max_tokens ({tokens} tokens)"
    target = _single_list_field(contract)
    if target is None:
        return StructuredResult(value=None, error=f"{cut}; {problem}", **common)
    key, item_type = target
    scan = salvage_object(text, key)
    if not scan.list_found:
        return StructuredResult(value=None, error=f"{cut} before the {key!r} list began", **common)
    adapter: TypeAdapter[Any] = TypeAdapter(item_type)
    kept: list[Any] = []
    dropped = 0
    for item in scan.fields.get(key, []):
        try:
            kept.append(adapter.validate_python(item))
        except ValidationError:
            dropped += 1
    if not kept:
        return StructuredResult(
            value=None, error=f"{cut}; no complete valid entry came before the cut", **common
        )
    fields = dict(scan.fields)
    fields[key] = kept
    try:
        value = contract.model_validate(fields)
    except ValidationError as exc:
        return StructuredResult(
            value=None,
            error=f"{cut}; the salvaged entries do not fit {name}: {_validation_summary(exc)}",
            **common,
        )
    extras: dict[str, object] = {
        "salvaged_entries": len(kept),
        "dropped_entries": dropped,
        "note": f"{cut}; kept the {len(kept)} complete entries before the cut"
        + (f", dropped {dropped} invalid" if dropped else ""),
    }
    return StructuredResult(value=value, salvaged=True, extras=extras, **common)
