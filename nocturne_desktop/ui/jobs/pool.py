"""Where a job gets its model client: a source that builds one per job, a pool that reuses idle
ones, and :class:`ClientSpec`, a client as data for a worker process to build its own.
No Qt: the worker process builds its client from a spec."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nocturne_desktop.core.ports import ModelClient

if TYPE_CHECKING:
    from nocturne_desktop.llm import OpenAIClient, Timeouts


def close_quietly(obj: object) -> None:
    """``obj.close()`` if it has one; a failure to close is printed, never raised."""
    close = getattr(obj, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # closing must never hide the real outcome
            traceback.print_exc()


class ModelSource:
    """Builds a fresh client per job and closes it afterwards (:class:`ClientPool` reuses
    idle ones)."""

    def __init__(self, factory: Callable[[], ModelClient]) -> None:
        self._factory = factory

    def lease(self) -> ModelClient:
        return self._factory()

    def give_back(self, client: ModelClient) -> None:
        close_quietly(client)

    def close(self) -> None:
        """Nothing is kept here."""


class ClientPool(ModelSource):
    """Reuses idle clients (building an HTTP client loads the TLS stack holding the GIL, which
    the GUI thread would feel at the start of every job). A client is used by one job at a
    time (handed over, never shared); ``close`` drops the idle ones, e.g. when the settings
    change."""

    def __init__(self, factory: Callable[[], ModelClient], *, keep: int = 2) -> None:
        super().__init__(factory)
        self._idle: list[ModelClient] = []
        self._keep = keep
        self._lock = threading.Lock()
        self._closed = False

    def lease(self) -> ModelClient:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._factory()

    def give_back(self, client: ModelClient) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._keep:
                self._idle.append(client)
                return
        close_quietly(client)

    def warm(self) -> None:
        """Build one client now (start-up, on the GUI thread, before the window shows)."""
        self.give_back(self.lease())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            close_quietly(c)


@dataclass(frozen=True)
class ClientSpec:
    """A model client as data, so that a worker process can build its own: picklable, resolved
    (the built-in engine's address is found in the window's process, which runs the engine;
    a worker never starts a second one). The key is not in the ``repr``."""

    base_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    timeouts: Timeouts | None = None
    """None: the client's defaults."""
    temperature: float = 0.2

    def build(self) -> OpenAIClient:
        """The HTTP client (imported here: a rules-only sleep never loads the HTTP stack)."""
        from nocturne_desktop.llm import OpenAIClient

        if self.timeouts is None:
            return OpenAIClient(self.base_url, self.model, api_key=self.api_key or None,
                                temperature=self.temperature)
        return OpenAIClient(self.base_url, self.model, api_key=self.api_key or None,
                            temperature=self.temperature, timeouts=self.timeouts)
