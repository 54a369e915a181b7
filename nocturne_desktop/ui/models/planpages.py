"""A review's plan as it crosses between the worker process and the window (no Qt: the worker
imports it): pages of pickled changes and the index a tick needs, not ~100,000 objects.

:class:`PlanPages` is made where the plan is (:func:`paged`, in the worker): the plan's own
fields (:attr:`~PlanPages.header`), the changes as pages of :data:`PAGE` pickles (bytes; a page
is unpickled in the window only when one of its changes is shown, and a few are kept), and what
ticking needs as arrays. It reads like a :class:`~nocturne_desktop.core.sleep.review.Plan`;
:func:`whole` gives the plan itself, which the apply's body uses.
"""

from __future__ import annotations

import dataclasses
import pickle
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, overload

from nocturne_desktop.core.sleep.review import Plan, PlanItem

PAGE = 250
"""Changes per page (a page unpickles in a few ms: a frozen dataclass unpickles through
Python, ~1,000 objects here)."""
KEEP = 16
"""Pages kept unpickled in the window."""


def _rows(lists: Sequence[Sequence[int]]) -> tuple[bytes, bytes]:
    """Lists of ints as compressed rows: offsets (one more than the lists) and the values."""
    off = array("i", [0])
    to = array("i")
    for xs in lists:
        to.extend(xs)
        off.append(len(to))
    return off.tobytes(), to.tobytes()


class PlanPages:
    """A plan in pages (see the module docstring). Change numbers are the plan's (1-based)."""

    def __init__(self, header: Plan, pages: tuple[bytes, ...], size: int, mask: bytes,
                 groups: tuple[tuple[str, int, int], ...], req: tuple[bytes, bytes],
                 dep: tuple[bytes, bytes]) -> None:
        self.header = header
        self.pages = pages
        self.size = size
        self.mask = mask
        """``mask[n]`` is 1 for a change the gate accepted (``mask[0]`` is unused)."""
        self.groups = groups
        """Per pass in plan order: (pass, first change, one past the last)."""
        self._req = req
        self._dep = dep
        self._req_off, self._req_to = array("i"), array("i")
        self._req_off.frombytes(req[0])
        self._req_to.frombytes(req[1])
        self._dep_off, self._dep_to = array("i"), array("i")
        self._dep_off.frombytes(dep[0])
        self._dep_to.frombytes(dep[1])
        self._cache: dict[int, tuple[PlanItem, ...]] = {}
        self.unpickled = 0
        """Pages unpickled so far (tests read it)."""

    def __reduce__(self) -> Any:
        return (PlanPages, (self.header, self.pages, self.size, self.mask, self.groups,
                            self._req, self._dep))

    def __reduce_ex__(self, protocol: Any) -> Any:
        """From protocol 5 on, the pages and the index arrays go as :class:`pickle.PickleBuffer`:
        a pickler with a ``buffer_callback`` (a worker's start, :mod:`~nocturne_desktop.ui.jobs`)
        leaves them out of its pickle, to be sent piece by piece beside it; any other pickler
        writes them in as bytes, as before."""
        if not isinstance(protocol, int) or protocol < 5:
            return self.__reduce__()
        pb = pickle.PickleBuffer
        return (_from_buffers, (self.header, tuple(pb(p) for p in self.pages), self.size,
                                pb(self.mask), self.groups,
                                (pb(self._req[0]), pb(self._req[1])),
                                (pb(self._dep[0]), pb(self._dep[1]))))

    def __getattr__(self, name: str) -> Any:  # the header's fields: mark, latest, passes, …
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.header, name)

    # -- the changes ------------------------------------------------------------------------------
    def page(self, p: int) -> tuple[PlanItem, ...]:
        got = self._cache.pop(p, None)
        if got is None:
            got = pickle.loads(self.pages[p])
            self.unpickled += 1
            if len(self._cache) >= KEEP:
                self._cache.pop(next(iter(self._cache)))
        self._cache[p] = got  # the most recent last
        return got

    def item(self, n: int) -> PlanItem:
        if not 1 <= n <= self.size:
            raise IndexError(f"the plan has no change {n}")
        return self.page((n - 1) // PAGE)[(n - 1) % PAGE]

    @property
    def items(self) -> _Items:
        return _Items(self)

    @property
    def tickable(self) -> tuple[int, ...]:
        m = self.mask
        return tuple(n for n in range(1, self.size + 1) if m[n])

    def of_pass(self, pass_name: str) -> tuple[PlanItem, ...]:
        return tuple(self.item(n) for p, a, b in self.groups if p == pass_name
                     for n in range(a, b))

    def edges(self, *, requires: bool) -> tuple[array[int], array[int]]:
        """The dependencies as compressed rows (offsets per change, values): what each change
        relies on (``requires``) or what relies on it."""
        return ((self._req_off, self._req_to) if requires else (self._dep_off, self._dep_to))

    def requires_of(self, n: int) -> Sequence[int]:
        """The changes ``n`` relies on directly."""
        return self._req_to[self._req_off[n - 1]:self._req_off[n]]

    def dependents_of(self, n: int) -> Sequence[int]:
        """The changes that rely on ``n`` directly."""
        return self._dep_to[self._dep_off[n - 1]:self._dep_off[n]]

    def dependents(self, n: int) -> set[int]:
        return _closure(n, self.dependents_of)

    def requirements(self, n: int) -> set[int]:
        return _closure(n, self.requires_of)

    def whole(self) -> Plan:
        """The plan itself (every page unpickled)."""
        items: list[PlanItem] = []
        for p in range(len(self.pages)):
            items.extend(pickle.loads(self.pages[p]))
        return dataclasses.replace(self.header, items=tuple(items))


def _bytes(b: Any) -> bytes:
    """A buffer as it comes back from a pickle: bytes in band, whatever was handed to
    ``pickle.loads(buffers=...)`` out of band."""
    return b if type(b) is bytes else bytes(b)


def _from_buffers(header: Plan, pages: Sequence[Any], size: int, mask: Any,
                  groups: tuple[tuple[str, int, int], ...], req: tuple[Any, Any],
                  dep: tuple[Any, Any]) -> PlanPages:
    """:class:`PlanPages` from :meth:`PlanPages.__reduce_ex__`'s buffers."""
    return PlanPages(header, tuple(_bytes(p) for p in pages), size, _bytes(mask), groups,
                     (_bytes(req[0]), _bytes(req[1])), (_bytes(dep[0]), _bytes(dep[1])))


def _closure(n: int, step: Any) -> set[int]:
    out: set[int] = set()
    todo = [n]
    while todo:
        for k in step(todo.pop()):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


class _Items(Sequence[PlanItem]):
    """A plan's changes, read page by page."""

    def __init__(self, pages: PlanPages) -> None:
        self._pages = pages

    def __len__(self) -> int:
        return self._pages.size

    @overload
    def __getitem__(self, i: int) -> PlanItem: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[PlanItem]: ...

    def __getitem__(self, i: int | slice) -> PlanItem | Sequence[PlanItem]:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(self._pages.size)))
        if i < 0:
            i += self._pages.size
        if not 0 <= i < self._pages.size:
            raise IndexError(i)
        return self._pages.item(i + 1)

    def __iter__(self) -> Iterator[PlanItem]:
        for p in range(len(self._pages.pages)):
            yield from self._pages.page(p)


def paged(plan: Plan) -> PlanPages:
    """``plan`` in pages, with its index (made where the plan was made)."""
    items = plan.items
    size = len(items)
    pages = tuple(pickle.dumps(items[lo:lo + PAGE], protocol=pickle.HIGHEST_PROTOCOL)
                  for lo in range(0, size, PAGE))
    mask = bytearray(size + 1)
    groups: list[tuple[str, int, int]] = []
    dependents: list[list[int]] = [[] for _ in range(size)]
    current, start = None, 1
    for it in items:
        mask[it.n] = 1 if it.tickable else 0
        if it.pass_name != current:
            if current is not None:
                groups.append((current, start, it.n))
            current, start = it.pass_name, it.n
        for k in it.depends_on:
            dependents[k - 1].append(it.n)
    if current is not None:
        groups.append((current, start, size + 1))
    return PlanPages(dataclasses.replace(plan, items=()), pages, size, bytes(mask), tuple(groups),
                     _rows([it.depends_on for it in items]), _rows(dependents))


def whole(plan: Plan | PlanPages) -> Plan:
    """The plan itself, paged or not."""
    return plan.whole() if isinstance(plan, PlanPages) else plan
