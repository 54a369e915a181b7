"""A cancel token that any thread may set.

Work checks :attr:`CancelToken.cancelled` between steps; code that blocks on I/O registers a
callback (for example "close this HTTP connection") that runs the moment the token is set, so a
local server stops generating for a request nobody waits for any more.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


class Cancelled(Exception):
    """Raised by :meth:`CancelToken.raise_if_cancelled`."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            with contextlib.suppress(Exception):  # a failing close must not stop the others
                cb()

    def on_cancel(self, cb: Callable[[], None]) -> Callable[[], None]:
        """Run ``cb`` when cancelled (at once if already); returns an unregister function."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(cb)

                def remove() -> None:
                    with self._lock:
                        if cb in self._callbacks:
                            self._callbacks.remove(cb)

                return remove
        cb()
        return lambda: None

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled("cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)
