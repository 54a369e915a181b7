"""The OpenAI-compatible chat client: chat, stream, structured output and the model list.

Every call streams (``"stream": true``) even when the caller wants the whole reply, so the
timeouts stay distinct (connect; request sent → first token; silence between chunks; the
overall deadline) and a cancel has a socket to close (:mod:`~nocturne_desktop.llm.exchange`).
Structured output climbs down a ladder of ``response_format`` rungs and remembers, per base
URL, which ones the server refused (:mod:`~nocturne_desktop.llm.capabilities`). What a server
says about itself — its chat template's stops, the model's context window — is read by
:mod:`~nocturne_desktop.llm.serverinfo`.

The API key goes into ``Authorization: Bearer`` and nowhere else: not into messages, logs,
exceptions or ``repr``; server text quoted in errors is scrubbed of it too.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from nocturne_desktop import __version__
from nocturne_desktop.core import logfile
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import (
    ChatResult,
    ChatTuning,
    Message,
    ModelBadReply,
    ModelHTTPError,
    ModelTruncated,
    StructuredResult,
    Usage,
)
from nocturne_desktop.llm import capabilities as caps
from nocturne_desktop.llm.capabilities import (
    MODE_TEXT,
    MODES,
    SCHEMA_MODES,
    capabilities_for,
    forget_capabilities,
    structured_mode,
)
from nocturne_desktop.llm.endpoint import (
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUTS,
    Timeouts,
    normalise_base_url,
)
from nocturne_desktop.llm.exchange import (
    CHARS_PER_TOKEN_CAP,
    DEFAULT_REPLY_CAP_CHARS,
    StreamState,
    post_chat,
    reply_cap,
)
from nocturne_desktop.llm.failures import Failures, plain_excerpt
from nocturne_desktop.llm.schema import strict_schema
from nocturne_desktop.llm.serverinfo import ContextWindow, probe_context_window, read_template_stops
from nocturne_desktop.llm.structured import (
    COMPACT_JSON_LINE,
    CUT_RAW_EXCERPT,
    interpret,
    is_format_refusal,
    response_format,
    with_compact_line,
)
from nocturne_desktop.llm.tuning import tuning_for

__all__ = [  # what callers import from here (several names live in the modules beside it)
    "AUTO",
    "CHARS_PER_TOKEN_CAP",
    "COMPACT_JSON_LINE",
    "DEFAULT_BASE_URL",
    "DEFAULT_REPLY_CAP_CHARS",
    "DEFAULT_TIMEOUTS",
    "MODES",
    "MODE_TEXT",
    "SCHEMA_MODES",
    "ContextWindow",
    "OpenAIClient",
    "Timeouts",
    "capabilities_for",
    "forget_capabilities",
    "normalise_base_url",
    "reply_cap",
    "require_complete",
    "structured_mode",
]

T = TypeVar("T", bound=BaseModel)


def _engine_key(base_url: str) -> str | None:
    """The per-run key of the built-in engine when ``base_url`` is where this process runs it."""
    from nocturne_desktop.llm import engine  # lazily: the engine module is heavier

    return engine.key_for(base_url)

_LIST_MODELS_TIMEOUT = 30.0
_WINDOW_RECHECK_SECONDS = 30.0
"""How long an unsettled context-window answer holds: a trained maximum only (the model may
be loaded meanwhile, at its real window) or a probe the server did not finish answering."""
_MAX_STOPS = 4  # OpenAI's own limit on stop sequences


class _Auto:
    """The type of :data:`AUTO`."""


AUTO = _Auto()
"""Pick the chat tuning from the model name (the default of ``OpenAIClient(tuning=…)``)."""


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

    def context_window(self, model: str | None = None) -> int | None:
        """Tokens in the context window the server runs ``model`` (default: this client's)
        with, as the server says it; None when it does not say (or says only the model's
        trained maximum, see :meth:`context_window_info`). Never raises.

        Remembered per base URL and model; blocks for a few short requests the first time
        (at most a few seconds on a server that does not answer), so call it off the GUI
        thread."""
        info = self.context_window_info(model)
        return None if info is None else info.tokens

    def context_window_info(self, model: str | None = None) -> ContextWindow | None:
        """What the server said of ``model``'s context window: the window it runs it with,
        the model's trained maximum and where each was read; None when it said nothing."""
        name = self.model if model is None else model
        known, window = caps.context_window(self.base_url, name)
        if known:
            return window
        probe = probe_context_window(self._http, self.base_url, name,
                                     connect_seconds=self.timeouts.connect)
        settled = probe.complete and (probe.window is None or probe.window.tokens is not None)
        caps.remember_context_window(self.base_url, name, probe.window,
                                     seconds=None if settled else _WINDOW_RECHECK_SECONDS)
        return probe.window

    def list_models(self) -> list[str]:
        """The ids ``GET {base}/models`` lists (OpenAI ``data[].id``; Ollama-style ``models``)."""
        url = f"{self.base_url}/models"
        failures = self._failures()
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
            raise failures.timed_out(which, url) from None
        except (httpx.HTTPError, OSError) as exc:
            raise failures.transport(exc, url) from None
        if response.status_code >= 400:
            raise failures.status(response.status_code, response.text, response.headers, url)
        try:
            data = response.json()
        except ValueError:
            raise ModelBadReply(
                f"{url} did not answer with JSON ({plain_excerpt(response.text, 120)}); "
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
        (``value=None`` and ``error``), transport and HTTP problems raised.

        Rungs the server refused before are skipped; a refusal now is remembered and the
        next rung tried. The contract's schema goes with the request on every rung that can
        carry it."""
        schema: dict[str, Any] | None = None
        last_refusal: ModelHTTPError | None = None
        for mode in MODES:
            if mode != "text" and caps.capability(self.base_url, mode) == "unsupported":
                continue
            if mode in SCHEMA_MODES and schema is None:
                schema = strict_schema(contract)
            payload = self._payload(
                with_compact_line(messages) if mode != "json_schema" else messages,
                temperature,
                max_tokens,
            )
            fmt = response_format(mode, contract, schema)
            if fmt is not None:
                payload["response_format"] = fmt
            state = self._state(max_tokens)
            started = time.monotonic()
            try:
                text = "".join(self._deltas(payload, cancel, state))
            except ModelHTTPError as exc:
                if mode != "text" and is_format_refusal(exc):
                    caps.set_capability(self.base_url, mode, "unsupported")
                    last_refusal = exc
                    continue
                raise
            if mode != "text":
                caps.set_capability(self.base_url, mode, "supported", only_if_untested=True)
            chat = self._result(text, messages, state, started)
            if state.cut:
                return StructuredResult(
                    value=None,
                    raw=text[:CUT_RAW_EXCERPT],
                    mode=mode,
                    finish_reason=chat.finish_reason,
                    usage=chat.usage,
                    elapsed_s=chat.elapsed_s,
                    truncated=True,
                    error=self._cut_message(state, max_tokens) + "; a structured reply must "
                    "be whole, so it was refused",
                )
            result = interpret(text, contract, mode, chat, max_tokens)
            if last_refusal is not None:
                result.extras["stepped_down_after"] = str(last_refusal)
            return result
        raise AssertionError("unreachable: the text mode is never skipped")  # pragma: no cover

    # --- internals -------------------------------------------------------------------------------

    def _failures(self) -> Failures:
        return Failures(self.base_url, self.model, self.timeouts, self._api_key, self.list_models)

    def _state(self, max_tokens: int | None) -> StreamState:
        return StreamState(cap=reply_cap(self.max_reply_chars, max_tokens))

    @staticmethod
    def _cut_message(state: StreamState, max_tokens: int | None) -> str:
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
        known = caps.template_stops(self.base_url)
        if known is None:
            known = read_template_stops(self._http, self.base_url)
            caps.remember_template_stops(self.base_url, known)
        return known

    def _result(
        self, text: str, messages: Sequence[Message], state: StreamState, started: float
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
        self, payload: dict[str, Any], cancel: CancelToken | None, state: StreamState
    ) -> Iterator[str]:
        """POST the payload and yield content deltas; retries once without ``stream_options``
        if the server refuses that field."""
        if caps.capability(self.base_url, "stream_options") != "unsupported":
            payload = {**payload, "stream_options": {"include_usage": True}}
            started = False
            try:
                for piece in self._post(payload, cancel, state):
                    started = True
                    yield piece
                return
            except ModelHTTPError as exc:
                refused = exc.status in (400, 422) and "stream_options" in exc.body
                if started or not refused:
                    raise
                caps.set_capability(self.base_url, "stream_options", "unsupported")
                payload = {k: v for k, v in payload.items() if k != "stream_options"}
        yield from self._post(payload, cancel, state)

    def _post(
        self, payload: dict[str, Any], cancel: CancelToken | None, state: StreamState
    ) -> Iterator[str]:
        return post_chat(
            self._http,
            f"{self.base_url}/chat/completions",
            payload,
            timeouts=self.timeouts,
            trace_supported=self._trace_supported,
            cancel=cancel,
            state=state,
            failures=self._failures(),
        )


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
    """The reply's token usage as the server reported it, or estimated (characters / 4)."""
    if raw is not None:
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            details = raw.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            return Usage(prompt_tokens=prompt, completion_tokens=completion,
                         cached_tokens=cached if isinstance(cached, int) else None)
    return Usage(
        prompt_tokens=_estimate_tokens(sum(len(str(m.get("content", ""))) for m in messages)),
        completion_tokens=_estimate_tokens(len(text)),
        estimated=True,
    )


def _estimate_tokens(chars: int) -> int:
    return (chars + 3) // 4
