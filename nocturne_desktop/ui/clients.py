"""The model client a job uses, built from a frozen copy of the settings: a picklable spec for a
worker process, or a factory for a thread. No Qt; the session and the settings dialog share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.engine import EngineError
from nocturne_desktop.settings import ApiKey, Settings
from nocturne_desktop.ui.jobs import ClientSpec

if TYPE_CHECKING:
    from nocturne_desktop.llm import OpenAIClient

__all__ = ["client_factory", "client_spec"]


def client_spec(settings: Settings, key: ApiKey, *, start_engine: bool = True
                ) -> Callable[[], ClientSpec]:
    """A function that resolves the model client of a frozen copy of the settings to a
    picklable :class:`ClientSpec` (a worker process builds its client from that; the key travels
    in the spec, never on a command line or in the environment).

    With the built-in engine chosen (``settings.endpoint == "builtin"``) the address is found
    when it is called: the running engine's, or a fresh engine's, started there and then in
    this process (it blocks while the model loads, so it is never called on the GUI thread for
    it; see :meth:`Session._new_pool`). ``start_engine=False``: the running engine's only
    (:class:`EngineError` when none runs)."""

    def resolve() -> ClientSpec:
        base_url, model = settings.base_url, settings.model
        if settings.builtin:
            engine = builtin_engine.start() if start_engine else builtin_engine.current()
            if engine is None:
                raise EngineError("The built-in engine is not running yet.")
            base_url, model = engine.base_url, model or engine.model_name
        return ClientSpec(base_url, model, api_key=key.reveal() or None,
                          timeouts=settings.timeouts, temperature=settings.temperature)

    return resolve


def client_factory(settings: Settings, key: ApiKey, *, start_engine: bool = True
                   ) -> Callable[[], OpenAIClient]:
    """A factory that builds an HTTP client from a frozen copy of the settings (called in the
    job's thread, so each job has its own client; the built-in engine as in
    :func:`client_spec`)."""
    resolve = client_spec(settings, key, start_engine=start_engine)
    return lambda: resolve().build()
