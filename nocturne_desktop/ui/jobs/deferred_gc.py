"""Full garbage collections deferred while a long job runs (a sleep, a restore, a big read).

CPython's full collection holds the GIL for a scan of every tracked object, on whichever thread
happens to allocate: during a sleep over a big memory, that would freeze the GUI thread for as
long. :func:`deferred_full_collections` keeps young collections and defers the full ones until
the last job using it ends (nothing computed depends on when the collector runs). The figures
are in ``docs/window.md`` (background work).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

DEFERRED_THRESHOLD2 = 1_000_000
"""Young-generation collections before a full one while deferred (about 7e9 net allocations:
never, for a sleep)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def deferred_full_collections() -> Iterator[None]:
    """No automatic full collection while the ``with`` body runs (nested and concurrent uses
    share one deferral; the thresholds come back when the last one leaves)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            t0, t1, _t2 = _saved
            gc.set_threshold(t0, t1, DEFERRED_THRESHOLD2)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
