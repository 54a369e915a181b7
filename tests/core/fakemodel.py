"""A deterministic, in-process stand-in for the model (implements ``ModelClient``).

Replies come from, in this order:

1. the queue (``FakeModel(replies=[...])`` / :meth:`FakeModel.queue`), consumed one per call;
2. content rules (:meth:`FakeModel.when`): the first rule whose pattern occurs in the call's
   last user message (and whose ``kind`` matches, when given);
3. the ``responder`` callable, which sees the whole :class:`FakeCall` and returns a reply
   or ``None``.

If none of them answers, the call fails with ``AssertionError`` so a test never silently runs
on a reply nobody scripted.

A reply is one of:

* ``str`` -- the text (for ``structured`` it is the raw reply, parsed like a real client would);
* ``dict`` / ``list`` -- JSON, serialised with :func:`json.dumps`;
* a :class:`Chunks` -- explicit stream pieces; an exception among them is raised at that point;
* a :class:`Truncated` -- the server stopped at ``max_tokens`` (``finish_reason == "length"``);
* an exception instance -- raised from the call (e.g. ``ModelUnreachable(...)``);
* a callable taking the :class:`FakeCall` and returning any of the above.

Every call is recorded in :attr:`FakeModel.calls` with a deep copy of its ``messages``.
``structured`` validates the reply against the given pydantic contract exactly as a client
must: a ``StructuredResult`` with ``value`` set, or with ``value=None`` and ``error`` saying why.
With ``client_parsing=True`` it reads the reply with the real client's own interpretation
instead (JSON extraction from prose, fences and think blocks; salvage of a cut reply), for tests
about what any reply text does to the layers above the client.
Streams check the cancel token before every chunk and raise ``ModelCancelled`` when it is set.
"""

from __future__ import annotations

import copy
import json
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

from pydantic import BaseModel, ValidationError

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import (
    ChatResult,
    Message,
    ModelCancelled,
    StructuredResult,
    Usage,
)

T = TypeVar("T", bound=BaseModel)
Kind = Literal["chat", "stream", "structured"]


@dataclass(frozen=True)
class Chunks:
    """Explicit stream pieces. An exception instance among them is raised when reached."""

    parts: tuple[str | BaseException, ...]

    def __init__(self, *parts: str | BaseException) -> None:
        object.__setattr__(self, "parts", tuple(parts))


@dataclass(frozen=True)
class Truncated:
    """A reply cut off at max_tokens: ``raw`` is what arrived before the cut. ``salvage`` is
    what a client could rescue from it (the complete list entries before the cut), if any."""

    raw: str
    salvage: dict[str, Any] | None = None


Reply = Union[str, dict[str, Any], list[Any], Chunks, Truncated, BaseException, "Responder"]
Responder = Callable[["FakeCall"], "Reply | None"]


@dataclass
class FakeCall:
    kind: Kind
    messages: list[Message]
    contract: type[BaseModel] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reply_text: str = ""
    """The text the fake answered with (the streamed part for a cancelled stream)."""

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m["role"] == "system")

    @property
    def last_user(self) -> str:
        for m in reversed(self.messages):
            if m["role"] == "user":
                return m["content"]
        return ""

    @property
    def chars(self) -> int:
        """Request size: the characters of every message's content."""
        return sum(len(m["content"]) for m in self.messages)


@dataclass
class _Rule:
    pattern: str | re.Pattern[str]
    reply: Reply
    kind: Kind | None
    times: int | None
    used: int = 0

    def matches(self, call: FakeCall) -> bool:
        if self.kind is not None and self.kind != call.kind:
            return False
        if self.times is not None and self.used >= self.times:
            return False
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(call.last_user) is not None
        return self.pattern in call.last_user


_WORD_CHUNK = re.compile(r"\s*\S+\s*|\s+")


@dataclass
class FakeModel:
    replies: Sequence[Reply] = ()
    responder: Responder | None = None
    model_name: str = "fake-model"
    calls: list[FakeCall] = field(default_factory=list)
    client_parsing: bool = False

    def __post_init__(self) -> None:
        self._queue: deque[Reply] = deque(self.replies)
        self._rules: list[_Rule] = []

    # -- scripting ---------------------------------------------------------------------------
    def queue(self, *replies: Reply) -> FakeModel:
        self._queue.extend(replies)
        return self

    def when(
        self,
        pattern: str | re.Pattern[str],
        reply: Reply,
        *,
        kind: Kind | None = None,
        times: int | None = None,
    ) -> FakeModel:
        """Answer ``reply`` to calls whose last user message contains ``pattern``."""
        self._rules.append(_Rule(pattern, reply, kind, times))
        return self

    def of_kind(self, kind: Kind) -> list[FakeCall]:
        return [c for c in self.calls if c.kind == kind]

    @property
    def pending(self) -> int:
        """Queued replies not yet consumed."""
        return len(self._queue)

    # -- ModelClient -------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        call = self._record("chat", messages, None, temperature, max_tokens)
        _raise_if_cancelled(cancel)
        reply = self._next(call)
        if isinstance(reply, Truncated):
            call.reply_text = reply.raw
            return ChatResult(reply.raw, "length", _usage(call, reply.raw), self.model_name)
        text = _text_of(reply)
        call.reply_text = text
        return ChatResult(text, "stop", _usage(call, text), self.model_name)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        call = self._record("stream", messages, None, temperature, max_tokens)
        # Pick the reply at call time (like a request being sent), stream it lazily.
        _raise_if_cancelled(cancel)
        reply = self._next(call)
        parts: tuple[str | BaseException, ...]
        if isinstance(reply, Chunks):
            parts = reply.parts
        elif isinstance(reply, Truncated):
            parts = tuple(_WORD_CHUNK.findall(reply.raw))
        else:
            parts = tuple(_WORD_CHUNK.findall(_text_of(reply)))
        return self._stream_parts(call, parts, cancel)

    @staticmethod
    def _stream_parts(
        call: FakeCall, parts: tuple[str | BaseException, ...], cancel: CancelToken | None
    ) -> Iterator[str]:
        for part in parts:
            _raise_if_cancelled(cancel)
            if isinstance(part, BaseException):
                raise part
            call.reply_text += part
            yield part

    def structured(
        self,
        messages: Sequence[Message],
        contract: type[T],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> StructuredResult[T]:
        call = self._record("structured", messages, contract, temperature, max_tokens)
        _raise_if_cancelled(cancel)
        reply = self._next(call)
        truncated = isinstance(reply, Truncated)
        raw = reply.raw if isinstance(reply, Truncated) else _text_of(reply)
        call.reply_text = raw
        usage = _usage(call, raw)
        finish = "length" if truncated else "stop"
        if self.client_parsing:
            from nocturne_desktop.llm.structured import interpret as _interpret

            chat = ChatResult(raw, finish, usage, self.model_name)
            return _interpret(raw, contract, "json_schema", chat, max_tokens)
        if isinstance(reply, Truncated):
            cut = f"reply cut off at max_tokens ({max_tokens} tokens)"
            if reply.salvage is not None:
                value, error = _validate(json.dumps(reply.salvage), contract)
                if value is not None:
                    return StructuredResult(
                        value, raw, "json_schema", finish, usage, truncated=True, salvaged=True
                    )
                return StructuredResult(
                    None, raw, "json_schema", finish, usage, truncated=True,
                    error=f"{cut}; the salvaged entries do not fit: {error}",
                )
            return StructuredResult(
                None, raw, "json_schema", finish, usage, truncated=True,
                error=f"{cut}; no complete valid entry came before the cut",
            )
        value, error = _validate(raw, contract)
        return StructuredResult(value, raw, "json_schema", finish, usage, error=error)

    # -- internals ---------------------------------------------------------------------------
    def _record(
        self,
        kind: Kind,
        messages: Sequence[Message],
        contract: type[BaseModel] | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> FakeCall:
        for m in messages:
            assert set(m) >= {"role", "content"}, f"malformed message {m!r}"
            assert m["role"] in ("system", "user", "assistant"), f"bad role {m['role']!r}"
            assert isinstance(m["content"], str), "message content must be a string"
        call = FakeCall(kind, copy.deepcopy(list(messages)), contract, temperature, max_tokens)
        self.calls.append(call)
        return call

    def _next(self, call: FakeCall) -> Reply:
        reply: Reply | None = None
        if self._queue:
            reply = self._queue.popleft()
        else:
            for rule in self._rules:
                if rule.matches(call):
                    rule.used += 1
                    reply = rule.reply
                    break
            else:
                if self.responder is not None:
                    reply = self.responder(call)
        if reply is None:
            raise AssertionError(
                f"fake model: no reply scripted for {call.kind} call #{len(self.calls)} "
                f"(last user message: {call.last_user[:200]!r})"
            )
        while callable(reply) and not isinstance(reply, BaseException | type):
            reply = reply(call)
            if reply is None:
                raise AssertionError(f"fake model: responder gave no reply for {call.kind}")
        if isinstance(reply, BaseException):
            raise reply
        return reply


def _raise_if_cancelled(cancel: CancelToken | None) -> None:
    if cancel is not None and cancel.cancelled:
        raise ModelCancelled("The request was cancelled.")


def _text_of(reply: Reply) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, dict | list):
        return json.dumps(reply)
    if isinstance(reply, Chunks):
        return "".join(p for p in reply.parts if isinstance(p, str))
    raise TypeError(f"fake model: cannot turn {type(reply).__name__} into text")


def _usage(call: FakeCall, reply: str) -> Usage:
    return Usage(max(1, call.chars // 4), max(1, len(reply) // 4), estimated=True)


def _extract_json(raw: str) -> Any:
    """Parse ``raw`` as JSON, or the outermost ``{...}`` inside it (as clients do for text)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        start, end = raw.find("{"), raw.rfind("}")
        if start == -1 or end <= start:
            raise
        return json.loads(raw[start : end + 1])


def _validate(raw: str, contract: type[T]) -> tuple[T | None, str | None]:
    try:
        obj = _extract_json(raw)
    except json.JSONDecodeError as exc:
        return None, f"The reply is not JSON ({exc.msg} at character {exc.pos})."
    try:
        return contract.model_validate(obj), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        return None, (
            f"The reply does not match the {contract.__name__} contract: {where}: {first['msg']} "
            f"({exc.error_count()} error(s))."
        )
