"""The bodies that ask the model server about itself: its models (also the reachability probe)
and its context window, which sizes the chat's memory. No Qt."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from nocturne_desktop.core.chat.agent import fitted_budget
from nocturne_desktop.core.ports import (
    ChatTuning,
    ModelAuthError,
    ModelError,
    ModelTimeout,
    ModelUnreachable,
    context_window_of,
)
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.pool import close_quietly

if TYPE_CHECKING:
    from nocturne_desktop.llm.serverinfo import ContextWindow


class ListsModels(Protocol):
    """A client that can list the server's models (the HTTP client does)."""

    def list_models(self) -> list[str]: ...


@dataclasses.dataclass(frozen=True)
class ModelList:
    models: list[str]
    capabilities: dict[str, str]


def list_models(ctx: BodyContext, client_factory: Callable[[], ListsModels]) -> ModelList:
    """The endpoint's models and what is known of its capabilities."""
    client = client_factory()
    # list_models() takes no token: closing the client from the cancelling thread aborts it.
    unregister = ctx.cancel.on_cancel(lambda: close_quietly(client))
    try:
        ctx.check()
        models = list(client.list_models())
        caps_fn = getattr(client, "capabilities", None)
        caps = dict(caps_fn()) if callable(caps_fn) else {}
        return ModelList(models, caps)
    finally:
        unregister()
        close_quietly(client)


class KnowsWindowInfo(ListsModels, Protocol):
    """A client that can say what its server said of the model's context window (the HTTP
    client does), and carries the model's chat tuning (None: none)."""

    tuning: ChatTuning | None

    def context_window_info(self, model: str | None = None) -> ContextWindow | None: ...


@dataclasses.dataclass(frozen=True)
class MemoryBudget:
    """The memory a chat prompt carries for one endpoint and model, as Settings shows it."""

    chars: int
    """The budget the chat uses (characters): sized from ``tokens``, or the default."""
    tokens: int | None
    """The window the server runs the model with (None: it did not say)."""
    maximum: int | None
    """The model's trained maximum, when the server said it."""
    source: str
    """Where the window was read (the server's endpoint and field); "" when nothing was said."""
    capped_by: str | None = None
    """The model's tuning, when its cap set the budget lower than the window leaves."""

    def describe(self) -> str:
        """Two lines for a person: the budget and what it was sized from, then why or where."""
        if self.tokens is None:
            why = (f"the server gives only the model's trained maximum, {self.maximum:,} tokens, "
                   "not the window it runs it with" if self.maximum is not None
                   else "the server does not say its context window")
            return f"unknown — using the default {self.chars:,} characters\n({why})"
        text = f"{self.chars:,} characters, sized from the {self.tokens:,}-token context window"
        if self.capped_by:
            text += f" and capped by the {self.capped_by} tuning"
        return f"{text}\nread from {self.source}"


def memory_budget_of(ctx: BodyContext, client_factory: Callable[[], KnowsWindowInfo]
                     ) -> MemoryBudget:
    """The chat's memory budget for the client's model: its context window asked of the server
    (a few short requests the first time, remembered per base URL and model) and sized as
    the chat sizes it (:func:`~nocturne_desktop.core.chat.agent.fitted_budget`)."""
    client = client_factory()
    # context_window_info() takes no token: closing the client from the cancelling thread aborts it
    unregister = ctx.cancel.on_cancel(lambda: close_quietly(client))
    try:
        ctx.check()
        info = client.context_window_info()
        ctx.check()
        if info is None:
            _raise_if_unreachable(client)  # "does not say" only of a server that answers
        tokens = context_window_of(client)  # remembered now: what the chat job will read
        tuning = client.tuning
        chars = fitted_budget(tuning, tokens)
        capped = None
        if tuning is not None and tuning.memory_chars is not None and tokens is not None:
            free = fitted_budget(dataclasses.replace(tuning, memory_chars=None), tokens)
            capped = tuning.name if free > chars else None
        return MemoryBudget(chars, tokens, info.maximum if info else None,
                            info.source if info else "", capped)
    finally:
        unregister()
        close_quietly(client)


def _raise_if_unreachable(client: ListsModels) -> None:
    """Raise the client's error when its server cannot be reached, times out or refuses the
    key; any other answer (a model list, a 404) is a server that answers."""
    try:
        client.list_models()
    except (ModelUnreachable, ModelTimeout, ModelAuthError):
        raise
    except ModelError:
        return
