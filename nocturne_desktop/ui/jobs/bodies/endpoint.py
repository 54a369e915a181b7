"""The body that asks the model server for its models (also the reachability probe). No Qt."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.pool import close_quietly


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
