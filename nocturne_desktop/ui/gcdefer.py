"""Full garbage collections deferred while a sleep runs on a worker thread.

CPython's cyclic collector runs a full (generation 2) collection on whichever thread happens to
allocate when enough objects have survived into the oldest generation, and it holds the GIL for
the whole scan of every tracked object. A rules-only sleep over 100k facts keeps millions of
objects alive and allocates many more, so it triggers a dozen full collections of 150-480 ms
each: the window's GUI thread cannot run for that long (measured by ``bench/gil_gaps.py``; these
were the longest GUI-thread gaps during the sleep, far longer than any single C call of the
sleep itself).

:func:`deferred_full_collections` raises the third collection threshold for as long as one or
more sleeps run, and restores it after the last one: young collections (cheap, proportional to
the objects allocated since the last one) still run and free short-lived cycles; the sleep's
data is freed by reference counting when it ends, so the full collection that comes after scans
a heap of the window's usual size. Nothing the sleep computes depends on when the collector
runs.
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
