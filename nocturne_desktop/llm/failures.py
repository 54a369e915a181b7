"""Turning what went wrong on the wire into the core's :class:`ModelError` family.

A refused connection, a timeout, an HTTP status, an error event mid-stream or a body that is
not JSON each becomes one error class with a sentence a person can act on: which URL, what
happened, what to try. Server text quoted in a message is reduced to a short plain excerpt and
scrubbed of the API key.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from nocturne_desktop.core.ports import (
    ModelAuthError,
    ModelBadReply,
    ModelCancelled,
    ModelError,
    ModelHTTPError,
    ModelNotFound,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
)
from nocturne_desktop.llm.endpoint import Timeouts

ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an error body read at most (and kept in the error's ``body``)."""
_EXCERPT_CHARS = 300

_TAG = re.compile(r"<[^>]*>")
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def plain_excerpt(body: str, limit: int = _EXCERPT_CHARS) -> str:
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


@dataclass(frozen=True)
class Failures:
    """The error mapper of one client: its base URL, model, timeouts and API key appear in
    (or are scrubbed from) the messages; ``list_models`` is asked when a 404 may mean an
    unknown model, so the error can say which models the server does offer."""

    base_url: str
    model: str
    timeouts: Timeouts
    api_key: str | None
    list_models: Callable[[], list[str]]

    def redact(self, text: str) -> str:
        if self.api_key and self.api_key in text:
            text = text.replace(self.api_key, "***")
        return text

    def aborted(self, reason: str, url: str) -> ModelError:
        """The watchdog closed the connection: ``reason`` is ``cancel`` or a timeout's name."""
        if reason == "cancel":
            return ModelCancelled(
                f"the request to {url} was cancelled and its connection closed, so the server "
                "can stop generating",
                url=url,
            )
        return self.timed_out(reason, url)

    def timed_out(self, which: str, url: str) -> ModelTimeout:
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

    def in_exchange(
        self,
        exc: BaseException,
        url: str,
        *,
        aborted: str | None,
        replying: bool,
        answered: bool = True,
    ) -> ModelError:
        """An httpx/socket exception during a chat exchange, preferring the reason the
        watchdog aborted (``aborted``), if it did. ``replying``: a token had arrived;
        ``answered``: the response headers had."""
        if aborted is not None:
            return self.aborted(aborted, url)
        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
                return self.timed_out("connect", url)
            return self.timed_out("idle" if replying else "first-token", url)
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
        return self.transport(exc, url)

    def transport(self, exc: BaseException, url: str) -> ModelError:
        """A request that did not reach an HTTP answer: refused, unresolvable, not HTTP."""
        if isinstance(exc, httpx.ConnectTimeout):
            return self.timed_out("connect", url)
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

    def stream_error(self, obj: dict[str, Any], url: str) -> ModelError:
        """An ``{"error": …}`` event or body: its own status code if it names one, else 500."""
        err = obj.get("error")
        status = 500
        if isinstance(err, dict):
            code = err.get("code") or err.get("status")
            if isinstance(code, int) and 400 <= code <= 599:
                status = code
        return self.status(status, json.dumps(obj), {}, url, in_stream=True)

    def status(
        self,
        status: int,
        body: str,
        headers: Mapping[str, str],
        url: str,
        *,
        in_stream: bool = False,
    ) -> ModelHTTPError:
        """An HTTP error status (or an error reported mid-stream) as its error class."""
        body = self.redact(body[:ERROR_BODY_LIMIT])
        excerpt = plain_excerpt(body)
        where = (
            f"{url} reported an error mid-stream" if in_stream else f"{url} answered HTTP {status}"
        )
        if status in (401, 403):
            hint = (
                "check the API key in Settings"
                if self.api_key
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
