"""Freeing big results a slice per event-loop turn, on the GUI thread.

The last reference to a past version's 100,000 facts or a diff's kept rows going at once is one
C call freeing them all (tens of ms on the GUI thread); emptied a slice at a time, the window
keeps ticking (``docs/benchmarks.md``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from PySide6.QtCore import QCoreApplication, QTimer

RELEASE_SLICE = 2_000
"""Items freed per event-loop turn by :func:`release_later`."""
_to_release: deque[list[Any] | dict[Any, Any]] = deque()
_release_timer: QTimer | None = None


def release_later(*containers: list[Any] | dict[Any, Any]) -> None:
    """Empty ``containers`` (lists and dicts about to be dropped) :data:`RELEASE_SLICE` items
    per event-loop turn, in the order given, on the GUI thread. Each is left empty."""
    global _release_timer
    _to_release.extend(c for c in containers if c)
    if not _to_release:
        return
    if _release_timer is None:
        _release_timer = QTimer(QCoreApplication.instance())
        _release_timer.setInterval(0)
        _release_timer.timeout.connect(release_some)
    if not _release_timer.isActive():
        _release_timer.start()


def release_some(budget: int = RELEASE_SLICE) -> int:
    """Free up to ``budget`` items of what :func:`release_later` holds; how many are left."""
    while _to_release and budget > 0:
        c = _to_release[0]
        n = min(budget, len(c))
        if isinstance(c, list):
            del c[len(c) - n :]
        else:
            for _ in range(n):
                c.popitem()
        budget -= n
        if not c:
            _to_release.popleft()
    if not _to_release and _release_timer is not None:
        _release_timer.stop()
    return sum(len(c) for c in _to_release)
