"""What a job body is given, wherever it runs, and how its generator is driven.

A body is a function of a :class:`BodyContext`; it either returns its result or is a generator
whose every yield is one progress item. :func:`drive` runs such a generator for a job on a
thread of the window and for one in a worker process alike. No Qt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from typing import Protocol, TypeVar

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.store import Store


class BodyContext(Protocol):
    """What a job body may use: the job's cancel token, and a store and a model client of its
    own, made on first use where the body runs (a :class:`~nocturne_desktop.ui.jobs.JobContext`
    on a job's thread, a :class:`~nocturne_desktop.ui.jobs.child.ChildContext` in a worker
    process)."""

    cancel: CancelToken

    @property
    def store(self) -> Store: ...

    @property
    def model(self) -> ModelClient: ...

    def check(self) -> None:
        """Raise :class:`~nocturne_desktop.core.cancel.Cancelled` once the job was stopped."""


Y = TypeVar("Y")
R = TypeVar("R")


def drive(gen: Generator[Y, None, R], relay: Callable[[Y], None], aborted: threading.Event,
          finish_on_cancel: bool) -> R | None:
    """Run a body's generator to its return value, ``relay(item)`` for every yield, the abort
    checked at each one (None after an abort).

    After an abort a body made with ``finish_on_cancel`` is drained (it ends on its cancel token
    by itself, writing its own record) with nothing more relayed; any other is closed there."""
    try:
        while True:
            try:
                item = next(gen)
            except StopIteration as stop:
                value: R = stop.value
                return value
            if aborted.is_set():
                if not finish_on_cancel:
                    return None
                continue
            relay(item)
    finally:
        gen.close()
