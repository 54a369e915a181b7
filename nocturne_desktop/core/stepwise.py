"""Work done in steps: generators that yield progress and return a result, and work over
large inputs cut into steps another thread can run between.

A sleep yields its events then returns its figures, a plan its events then the plan, a quiz its
steps then its report: :func:`result_of` and :func:`map_yields` are the two ways callers use
such a generator. A C call over a large list holds the GIL from start to end (``sorted`` of 100k
tuples takes ~100 ms), so :func:`sorted_yielding` and :func:`release` cut that work into runs:
the window's GUI thread gets the interpreter between them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
Y = TypeVar("Y")
Z = TypeVar("Z")
R = TypeVar("R")

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



def result_of(gen: Generator[Any, None, R]) -> R:
    """Run ``gen`` to its end, dropping what it yields; its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as done:
            result: R = done.value
            return result


def map_yields(gen: Generator[Y, None, R], fn: Callable[[Y], Z]) -> Generator[Z, None, R]:
    """``gen`` with ``fn`` applied to each thing it yields, returning what ``gen`` returns
    (``return (yield from map_yields(gen, fn))`` relays a generator's result)."""
    while True:
        try:
            item = next(gen)
        except StopIteration as done:
            result: R = done.value
            return result
        yield fn(item)
