"""Work over large inputs in steps another thread can run between.

A C call over a large list holds the GIL from start to end: ``sorted`` of 100k tuples takes
about 100 ms on this project's machines, and a sleep runs such sorts on a worker thread while
the window's GUI thread waits for the GIL (``bench/gil_gaps.py`` measures it). The key function
of a sort runs as Python, but the comparisons afterwards do not.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

SORT_RUN = 4096
"""Items sorted in one C call (a few ms of tuple comparisons)."""


def sorted_yielding(items: Iterable[T], key: Callable[[T], Any], *, run: int = SORT_RUN) -> list[T]:
    """Exactly ``sorted(items, key=key)`` (stable: equal keys keep their input order), with no
    single C call over more than ``run`` items: each run of the input is sorted on its own and
    the runs are merged by :func:`heapq.merge`, a Python generator. ``key`` is called once per
    item; it must give keys that compare with ``<`` as it would in ``sorted``."""
    seq = list(items)
    if len(seq) <= run:
        return sorted(seq, key=key)
    # (key, input position): positions are unique, so the items themselves are never compared
    # and equal keys keep their order, as in a stable sort.
    decorated = [(key(x), i) for i, x in enumerate(seq)]
    runs = [sorted(decorated[lo:lo + run]) for lo in range(0, len(decorated), run)]
    return [seq[i] for _k, i in heapq.merge(*runs)]


SMALL = 1024
"""A container of at most this many items is freed in one go (well under a millisecond)."""


def release(*containers: Any) -> None:
    """Empty large dicts, lists and sets (and the large ones inside them) item by item, so that
    freeing them is many short steps instead of one long C call when the last reference goes
    (freeing a 100k-fact index of lists and sets held the GIL for over 100 ms). Only for
    containers about to be dropped: they are left empty."""
    for c in containers:
        _drain(c)


def _drain(c: Any) -> None:
    if isinstance(c, dict):
        while c:
            _k, v = c.popitem()
            if isinstance(v, dict | list | set) and len(v) > SMALL:
                _drain(v)
    elif isinstance(c, list):
        while c:
            v = c.pop()
            if isinstance(v, dict | list | set) and len(v) > SMALL:
                _drain(v)
    elif isinstance(c, set):
        while c:
            c.pop()
