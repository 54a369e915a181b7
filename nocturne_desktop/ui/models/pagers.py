"""Where the block tree reads its rows: one page of a block at a time, by key (no Qt).

A pager is the only database read the tree makes, O(page): the live store
(:class:`StorePager`), the facts a filter matched (:class:`MatchPager`) or a past version's
state held in memory (:class:`StatePager`). :func:`read_first_pages` reads what the tree shows
first, on any thread.
"""

from __future__ import annotations

import bisect
import dataclasses
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nocturne_desktop.core.store import reads
from nocturne_desktop.core.store.reads import num_of
from nocturne_desktop.core.types import BLOCKS, Fact, Strength


class FactPager(Protocol):
    """Where a lazy block tree gets its rows: one page of a block at a time."""

    def page(self, block: str, after: int, limit: int, include_inactive: bool,
             upto: int | None = None) -> tuple[list[Fact], bool]:
        """Facts of ``block`` numbered above ``after`` (at most ``limit``, or all up to
        ``upto``), in numeric order, and whether more follow."""
        ...

    def page_before(self, block: str, before: int, limit: int,
                    include_inactive: bool) -> tuple[list[Fact], bool]:
        """The last ``limit`` facts of ``block`` numbered below ``before``, in numeric order,
        and whether more precede them (a block's earlier rows, read again after the window
        dropped them)."""
        ...

    def counts(self) -> dict[str, tuple[int, int, int]]:
        """Per block: active, superseded, forgotten."""
        ...

    def locate(self, item_id: str) -> Fact | None:
        """The fact's current value (None: unknown here)."""
        ...

    def strengths(self, item_ids: Sequence[str]) -> Mapping[str, Strength]:
        ...


class StorePager:
    """Pages of the live store, read on the caller's thread over its own store (a keyset read
    of ``items(block, num)``: O(page), never O(store))."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def page(self, block: str, after: int, limit: int, include_inactive: bool,
             upto: int | None = None) -> tuple[list[Fact], bool]:
        return reads.block_page(self.store, block, after=after, limit=limit, upto=upto,
                                include_inactive=include_inactive)

    def page_before(self, block: str, before: int, limit: int,
                    include_inactive: bool) -> tuple[list[Fact], bool]:
        return reads.block_page_before(self.store, block, before=before, limit=limit,
                                       include_inactive=include_inactive)

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return reads.block_counts(self.store)

    def locate(self, item_id: str) -> Fact | None:
        return reads.facts_by_ids(self.store, [item_id]).get(item_id)

    def strengths(self, item_ids: Sequence[str]) -> Mapping[str, Strength]:
        return self.store.strengths(item_ids) if item_ids else {}


class MatchPager(StorePager):
    """Pages of the facts a filter matched (their numbers found by a job over the whole store),
    read by id from the live store as the view scrolls."""

    def __init__(self, store: Any, nums: Mapping[str, Sequence[int]],
                 counts: Mapping[str, tuple[int, int, int]]) -> None:
        super().__init__(store)
        self._nums = {b: list(nums.get(b, ())) for b in BLOCKS}
        self._counts = dict(counts)

    def page(self, block: str, after: int, limit: int, include_inactive: bool,
             upto: int | None = None) -> tuple[list[Fact], bool]:
        nums = self._nums.get(block, [])
        lo = bisect.bisect_right(nums, after)
        hi = bisect.bisect_right(nums, upto) if upto is not None else min(len(nums), lo + limit)
        got = reads.facts_by_ids(self.store, [f"m_{n}" for n in nums[lo:hi]])
        facts = [f for n in nums[lo:hi] if (f := got.get(f"m_{n}")) is not None and f.block == block
                 and (include_inactive or f.active)]
        return facts, hi < len(nums)

    def page_before(self, block: str, before: int, limit: int,
                    include_inactive: bool) -> tuple[list[Fact], bool]:
        nums = self._nums.get(block, [])
        hi = bisect.bisect_left(nums, before)
        lo = max(0, hi - limit)
        got = reads.facts_by_ids(self.store, [f"m_{n}" for n in nums[lo:hi]])
        facts = [f for n in nums[lo:hi] if (f := got.get(f"m_{n}")) is not None and f.block == block
                 and (include_inactive or f.active)]
        return facts, lo > 0

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return dict(self._counts)


_FACT_ROW = operator.attrgetter(*(f.name for f in dataclasses.fields(Fact)))
"""A fact as a plain tuple, in the order of :class:`Fact`'s fields (``Fact(*row)`` again)."""
_ROW_ID, _ROW_ACTIVE = 0, 7


class StatePager:
    """Pages of a fixed list of facts (a past version's state, built off the GUI thread).

    The state is held as plain tuples, not :class:`Fact` objects: a tuple of strings and
    numbers is untracked by the cyclic garbage collector, so 100,000 of them neither set off a
    full collection on the GUI thread nor lengthen every later one. A page's facts are made
    when first read (the first :attr:`PREBUILT` of each block already on the job's thread) and
    kept."""

    PREBUILT = 500
    """Rows per block made into facts in the constructor (the first page the tree shows)."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        per: dict[str, list[tuple[Any, ...]]] = {b: [] for b in BLOCKS}
        counts = {b: [0, 0, 0] for b in BLOCKS}
        for f in facts:
            if f.block not in per:
                continue
            per[f.block].append(_FACT_ROW(f))
            counts[f.block][0 if f.active else 1 if f.superseded else 2] += 1
        for b in BLOCKS:
            per[b].sort(key=lambda r: num_of(r[_ROW_ID]))
        self._per = per
        self._by_id = {r[_ROW_ID]: r for b in BLOCKS for r in per[b]}
        self._nums = {b: [num_of(r[_ROW_ID]) for r in per[b]] for b in BLOCKS}
        self._active = {b: [r for r in per[b] if r[_ROW_ACTIVE]] for b in BLOCKS}
        self._active_nums = {b: [num_of(r[_ROW_ID]) for r in self._active[b]] for b in BLOCKS}
        self._counts = {b: (c[0], c[1], c[2]) for b, c in counts.items()}
        self.empty = not self._by_id
        self._made: dict[str, Fact] = {}
        for b in BLOCKS:
            for r in (*per[b][: self.PREBUILT], *self._active[b][: self.PREBUILT]):
                self._fact(r)

    def _fact(self, row: tuple[Any, ...]) -> Fact:
        f = self._made.get(row[_ROW_ID])
        if f is None:
            f = self._made[row[_ROW_ID]] = Fact(*row)
        return f

    def page(self, block: str, after: int, limit: int, include_inactive: bool,
             upto: int | None = None) -> tuple[list[Fact], bool]:
        rows = self._per[block] if include_inactive else self._active[block]
        nums = self._nums[block] if include_inactive else self._active_nums[block]
        lo = bisect.bisect_right(nums, after)
        hi = bisect.bisect_right(nums, upto) if upto is not None else min(len(nums), lo + limit)
        return [self._fact(r) for r in rows[lo:hi]], hi < len(nums)

    def page_before(self, block: str, before: int, limit: int,
                    include_inactive: bool) -> tuple[list[Fact], bool]:
        rows = self._per[block] if include_inactive else self._active[block]
        nums = self._nums[block] if include_inactive else self._active_nums[block]
        hi = bisect.bisect_left(nums, before)
        lo = max(0, hi - limit)
        return [self._fact(r) for r in rows[lo:hi]], lo > 0

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return dict(self._counts)

    def locate(self, item_id: str) -> Fact | None:
        row = self._by_id.get(item_id)
        return None if row is None else self._fact(row)

    def strengths(self, item_ids: Sequence[str]) -> Mapping[str, Strength]:
        return {}

    def let_go(self) -> list[list[Any] | dict[Any, Any]]:
        """The containers that hold the state, for the caller to free (the tree frees them a
        slice per event-loop turn: :func:`~nocturne_desktop.ui.models.release.release_later`).
        The pager reads as empty from now on."""
        self.empty = True
        return [self._made, self._by_id, *self._active.values(), *self._active_nums.values(),
                *self._nums.values(), *self._per.values()]


@dataclass(frozen=True)
class FirstPages:
    """The first page of each block with what the tree shows beside them: read by
    :func:`read_first_pages` (on a job's thread, with the job's own store, or on the caller's),
    shown by the tree's ``show_pages`` in one reset."""

    rows: dict[str, list[Fact]]
    more: dict[str, bool]
    """Per block, whether more facts follow the page."""
    counts: dict[str, tuple[int, int, int]]
    strengths: dict[str, Strength]
    show_forgotten: bool
    """Whether inactive facts were read too (the tree's "show forgotten" at the time)."""


def read_first_pages(pager: FactPager, show_forgotten: bool,
                     counts: Mapping[str, tuple[int, int, int]] | None = None,
                     page: int = 500) -> FirstPages:
    """The first ``page`` facts of each block from ``pager``, their importance and recalls, and
    the per-block counts (``counts`` when the caller has them, else the pager's: for a store,
    one scan of its items). O(page) reads, plus the count when it is not given."""
    rows: dict[str, list[Fact]] = {}
    more: dict[str, bool] = {}
    for b in BLOCKS:
        rows[b], more[b] = pager.page(b, 0, page, show_forgotten)
    got = dict(counts) if counts is not None else pager.counts()
    ids = [f.id for b in BLOCKS for f in rows[b]]
    return FirstPages(rows, more, {b: got.get(b, (0, 0, 0)) for b in BLOCKS},
                      dict(pager.strengths(ids)), show_forgotten)
