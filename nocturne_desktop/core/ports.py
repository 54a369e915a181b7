"""What the core needs from a language model, as a Protocol.

``nocturne_desktop.llm`` implements it over HTTP; tests and the verifier may hand the core
anything else that fits. The errors a model client may raise live here too, so the core can
catch them without importing the HTTP layer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.errors import NocturneError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

T = TypeVar("T", bound=BaseModel)

Message = dict[str, str]
"""An OpenAI-style chat message: ``{"role": "system"|"user"|"assistant", "content": str}``."""


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False
    """True when the server sent no usage and the figures were estimated from text length."""
    cached_tokens: int | None = None
    """Prompt tokens the server took from its prompt cache (None: the server did not say)."""


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    finish_reason: str | None
    usage: Usage
    model: str = ""
    elapsed_s: float = 0.0
    first_token_s: float | None = None
    cut: bool = False
    """True when the client stopped reading at its reply-size cap: ``text`` is the part before
    the cut (``finish_reason`` is then ``length``)."""


@dataclass(frozen=True, slots=True)
class StructuredResult(Generic[T]):
    """A structured reply. ``value`` is the locally validated object; ``raw`` the text as received.

    ``mode`` is the rung used: ``json_schema``, ``json_object_schema`` (json_object with the
    schema inside), ``json_object`` or ``text``.
    ``truncated`` is True when the server stopped at max_tokens (``finish_reason == "length"``);
    in that case ``value`` holds only what could be salvaged (see ``salvaged``) or is None.
    """

    value: T | None
    raw: str
    mode: str
    finish_reason: str | None
    usage: Usage
    elapsed_s: float = 0.0
    truncated: bool = False
    salvaged: bool = False
    error: str | None = None
    """Why ``value`` is None (parse or validation failure), as a human sentence."""
    extras: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatTuning:
    """How to chat with one particular (small) model; a client may carry one as ``tuning``.

    The chat agent reads ``reply_hint`` (one sentence added to the user's message),
    ``history_tokens`` (the token budget of the turns carried in the prompt) and
    ``max_tokens`` (the cap on a free-text reply); the client adds ``sampling`` (extra request
    fields, e.g. repetition control) and stop sequences to free-text requests only, never to
    structured ones, where a repetition penalty would fight the JSON's own repetitions."""

    name: str
    max_tokens: int | None = None
    history_tokens: int | None = None
    reply_hint: str = ""
    sampling: Mapping[str, Any] = field(default_factory=dict)
    stop: tuple[str, ...] = ()
    stops_from_template: bool = False
    """Also ask the server for its chat template (llama.cpp's ``GET /props``) and stop on the
    template's turn markers."""
    memory_chars: int | None = None
    """The most memory (characters) a prompt carries for this model, whatever its window (a
    tiny model whose speed was measured at that size)."""
    memory_after_history: bool = False
    """Put memory in a system message after the history, just before the user's message,
    instead of at the end of the first system message: a server's prompt cache then keeps the
    instructions and the whole history when memory changes (it changes on most turns, in the
    middle of its blocks), and only the last exchange, memory and the message are read anew."""


class ModelClient(Protocol):
    """The model as the core sees it. Every call may raise a :class:`ModelError`.

    A client may also say how large its model's context window is (:class:`KnowsContextWindow`,
    an optional capability: ask through :func:`context_window_of`)."""

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> ChatResult: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[str]: ...

    def structured(
        self,
        messages: Sequence[Message],
        contract: type[T],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> StructuredResult[T]: ...


class Embedder(Protocol):
    """Sentences to vectors, for the meaning-aware ranking of memory (runs locally: nothing it is
    given leaves the machine). :mod:`nocturne_desktop.core.embedder` implements it.

    ``name`` names the model and its version: the store keeps it with the vectors it made and
    rebuilds them when the embedder it is given has another name."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One row per text, ``dim`` wide, of unit length (a text with no token: zeros)."""
        ...


@runtime_checkable
class KnowsContextWindow(Protocol):
    """The optional capability of a :class:`ModelClient` that knows its model's context
    window: tokens the server runs ``model`` (default: the client's own) with, as the server
    says it, or None when it does not say. It never raises and may block for a few short
    requests the first time (call it off the GUI thread)."""

    def context_window(self, model: str | None = None) -> int | None: ...


def context_window_of(client: object, model: str | None = None) -> int | None:
    """``client``'s context window in tokens if it has the :class:`KnowsContextWindow`
    capability and its server says one; None otherwise (a test fake, a wrapper, a server
    that says nothing), so a caller falls back to its own default."""
    if not isinstance(client, KnowsContextWindow):
        return None
    try:
        tokens = client.context_window(model)
    except ModelError:
        return None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
        return None
    return tokens


class ModelError(NocturneError):
    """Anything that went wrong talking to the model. ``str()`` is a sentence for a person."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class ModelUnreachable(ModelError):
    """Connection refused or DNS failure: nothing is listening."""


class ModelTimeout(ModelError):
    """``which`` is ``connect``, ``first-token``, ``idle`` or ``deadline`` (the overall one)."""

    def __init__(self, message: str, *, which: str, url: str | None = None) -> None:
        super().__init__(message, url=url)
        self.which = which


class ModelHTTPError(ModelError):
    def __init__(
        self, message: str, *, status: int, body: str = "", url: str | None = None
    ) -> None:
        super().__init__(message, url=url)
        self.status = status
        self.body = body


class ModelAuthError(ModelHTTPError):
    """401 or 403."""


class ModelNotFound(ModelHTTPError):
    """404 for the model; ``available`` lists what the server has, when it could be asked."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 404,
        body: str = "",
        url: str | None = None,
        available: Sequence[str] = (),
    ) -> None:
        super().__init__(message, status=status, body=body, url=url)
        self.available = tuple(available)


class ModelRateLimited(ModelHTTPError):
    """429."""


class ModelServerError(ModelHTTPError):
    """5xx."""


class ModelBadReply(ModelError):
    """The server answered with something that is not the JSON the protocol promises."""


class ModelTruncated(ModelError):
    """``finish_reason: length``: the reply was cut off at max_tokens, or reading stopped at the
    client's reply-size cap."""


class ModelCancelled(ModelError):
    """The request was cancelled through its token and the connection closed."""
