"""The block tree's rows without Qt: which facts of each block are loaded, paged from a pager,
and every change to them told to a listener as it happens.

:class:`BlockPaging` decides what the tree holds (a page per block at first, more as the view
scrolls, at most a window of rows per block and in all, a change of the store applied by id);
:class:`PagingEvents` is what it tells, in the order Qt's models must hear it (``inserting``
before the rows change, ``inserted`` after). The Qt tree model is a thin adapter that turns each
event into ``beginInsertRows``/``endInsertRows`` and the like, as napari's item models do over
its evented lists; so the paging is tested without Qt (``docs/paging.md``).
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from nocturne_desktop.core.store.reads import ChangedRows, num_of
from nocturne_desktop.core.types import BLOCKS, Fact, Strength
from nocturne_desktop.ui.models.pagers import (
    FactPager,
    FirstPages,
    MatchPager,
    StorePager,
    read_first_pages,
)

PAGE = 500
"""Facts fetched per block at a time."""
WINDOW = 6 * PAGE
"""Rows loaded per block at most (from a pager). QTreeView lays out every row it holds after
each insert or remove, calling into the model per row, so a page fetched costs O(rows loaded);
past the window the pages farthest from the one fetched are dropped (and read again when the
person scrolls back)."""
TOTAL = WINDOW + 3 * PAGE
"""Rows loaded in all blocks at most: past it, a page fetched in one block trims the others
(the farthest first) to a page each - their end for a block above, their start for one below."""
RESET_ABOVE = 200
"""Structural changes (insert/remove ranges) above which :meth:`BlockPaging.set_facts` resets."""

Position = tuple[str, int]
"""A loaded fact's place: its block and its row in it."""


def fact_state(fact: Fact) -> int:
    """0 active, 1 superseded, 2 forgotten (the block label's three counts)."""
    return 0 if fact.active else 1 if fact.superseded else 2


class PagingEvents:
    """What :class:`BlockPaging` tells its view; this one ignores it all (subclass it).

    Every ``*ing`` event comes before the rows change and its ``*ed`` right after, with nothing
    else between but the change itself; rows are counted within their block.
    """

    def resetting(self) -> None:
        """Every block's rows are about to be replaced."""

    def reset(self) -> None:
        """They were (no page is fetched while this runs)."""

    def inserting(self, block: str, first: int, last: int) -> None:
        """Rows ``first..last`` of ``block`` are about to come in."""

    def inserted(self, block: str) -> None:
        """They came in."""

    def removing(self, block: str, first: int, last: int) -> None:
        """Rows ``first..last`` of ``block`` are about to go."""

    def removed(self, block: str) -> None:
        """They went."""

    def changed(self, block: str, first: int, last: int) -> None:
        """The facts of rows ``first..last`` changed (every column)."""

    def salience_changed(self, block: str, first: int, last: int) -> None:
        """Only the importance or recalls of rows ``first..last`` changed (their salience)."""

    def counted(self, block: str) -> None:
        """The counts of ``block`` changed (its label)."""


class Loaded(NamedTuple):
    """What a :class:`BlockPaging` holds at one time (:meth:`BlockPaging.loaded`)."""

    pager: FactPager
    rows: dict[str, list[Fact]]
    nums: dict[str, list[int]]
    where: dict[str, str]
    more: dict[str, bool]
    cursor: dict[str, int]
    floor: dict[str, int]
    counts: dict[str, tuple[int, int, int]]
    strengths: dict[str, Strength]
    show_forgotten: bool


class BlockPaging:
    """The four blocks' loaded facts, fed two ways.

    - **Lazily, from a pager** (:meth:`attach`): each block shows its first ``page`` facts and
      fetches more as the view scrolls (:meth:`fetch`); a change to the live store arrives as
      rows read by id (:meth:`apply_changes`) and becomes inserts, changes and removes, never a
      re-read. A block's loaded rows are always *every* listed fact numbered in ``(floor,
      cursor]``, so a change outside them is left for a later page. At most ``window`` rows a
      block stay loaded: a page fetched past it drops the rows at the block's other end (read
      again by :meth:`fetch_earlier`), and :meth:`reveal` of a fact far away loads the rows
      around it. First paint and every update cost O(page + change).
    - **From a list** (:meth:`set_facts`): every fact given is loaded and the difference to the
      rows loaded is applied per block (small lists and the tests).

    Forgotten and superseded facts are listed only with :attr:`show_forgotten`. The state is
    public to read (the Qt adapter reads it per cell); only the methods change it.
    """

    def __init__(self, events: PagingEvents | None = None, *, page: int = PAGE,
                 window: int | None = None, total: int | None = None,
                 reset_above: int = RESET_ABOVE) -> None:
        self.events = events if events is not None else PagingEvents()
        self.page = page
        self.window = 6 * page if window is None else window
        self.total = self.window + 3 * page if total is None else total
        self.reset_above = reset_above
        self.all: list[Fact] = []
        """The facts given to :meth:`set_facts` (empty from a pager)."""
        self.rows: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        self.nums: dict[str, list[int]] = {b: [] for b in BLOCKS}
        """Per block, the numbers of the rows (bisected to find a row by id)."""
        self.where: dict[str, str] = {}
        """Loaded fact id → its block."""
        self.more: dict[str, bool] = dict.fromkeys(BLOCKS, False)
        """Per block, whether the pager has facts above the cursor."""
        self.cursor: dict[str, int] = dict.fromkeys(BLOCKS, 0)
        """Per block, the highest number the loaded rows cover (every listed fact up to it)."""
        self.floor: dict[str, int] = dict.fromkeys(BLOCKS, 0)
        """Per block, the number below the loaded rows; above 0, the window dropped earlier
        rows (:meth:`fetch_earlier`)."""
        self.pager: FactPager | None = None
        self.counts: dict[str, tuple[int, int, int]] = dict.fromkeys(BLOCKS, (0, 0, 0))
        """Per block: active, superseded (a correction, not a forgetting), forgotten."""
        self.strengths: dict[str, Strength] = {}
        """Importance and recalls of the facts loaded (what their salience needs)."""
        self.show_forgotten = False
        self.fetches = 0
        """Pages fetched since the last reset (tests and the benchmark read it)."""
        self.hold_fetch = False
        """While True, nothing is fetched (inside a change's handlers)."""

    # -- reading ---------------------------------------------------------------------------------
    def facts(self, block: str) -> list[Fact]:
        """The rows of ``block`` loaded so far (all of them for a list)."""
        return list(self.rows[block])

    def active_count(self) -> int:
        return sum(c[0] for c in self.counts.values())

    def is_empty(self) -> bool:
        return not any(any(c) for c in self.counts.values())

    def position(self, item_id: str) -> Position | None:
        """Where ``item_id`` is if it is loaded."""
        block = self.where.get(item_id)
        if block is None:
            return None
        return block, bisect.bisect_left(self.nums[block], num_of(item_id))

    def fact_at(self, block: str, row: int) -> Fact | None:
        rows = self.rows[block]
        return rows[row] if 0 <= row < len(rows) else None

    def has_children(self, block: str) -> bool:
        """Whether ``block`` has rows loaded or to fetch, later or earlier."""
        return bool(self.rows[block]) or self.more[block] or self.floor[block] > 0

    # -- whole states ----------------------------------------------------------------------------
    def attach(self, pager: FactPager,
               counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Load ``pager``'s first page of each block (read here, on the caller's thread; one
        reset). ``counts``: the per-block counts when the caller has them, else the pager's."""
        self.show_pages(pager, read_first_pages(pager, self.show_forgotten, counts, self.page))

    def show_pages(self, pager: FactPager, pages: FirstPages) -> bool:
        """Load ``pages`` (read with :func:`read_first_pages`, on any thread) in one reset,
        paging on from ``pager`` afterwards. False, changing nothing, when they were read with
        the other "show forgotten" setting."""
        if pages.show_forgotten != self.show_forgotten:
            return False
        rows, more, counts = pages.rows, pages.more, pages.counts
        self.events.resetting()
        self.pager = pager
        self.all = []
        self.rows = {b: list(rows.get(b, ())) for b in BLOCKS}
        self.more = {b: more.get(b, False) for b in BLOCKS}
        self.cursor = {b: num_of(self.rows[b][-1].id) if self.rows[b] else 0 for b in BLOCKS}
        self.floor = dict.fromkeys(BLOCKS, 0)
        self.counts = {b: counts.get(b, (0, 0, 0)) for b in BLOCKS}
        self.strengths = dict(pages.strengths)
        self._reindex()
        self.fetches = 0
        with self._held():
            self.events.reset()
        return True

    def loaded(self) -> Loaded | None:
        """What is loaded now, to load again later with :meth:`show_loaded` (None: a list, not
        a pager). :meth:`show_pages` replaces these structures, never edits them, so holding
        them costs nothing."""
        if self.pager is None:
            return None
        return Loaded(self.pager, self.rows, self.nums, self.where, self.more, self.cursor,
                      self.floor, self.counts, self.strengths, self.show_forgotten)

    def show_loaded(self, held: Loaded) -> bool:
        """Load again what :meth:`loaded` returned (one reset, no read). False, changing
        nothing, if "show forgotten" changed since."""
        if held.show_forgotten != self.show_forgotten:
            return False
        self.events.resetting()
        (self.pager, self.rows, self.nums, self.where, self.more, self.cursor,
         self.floor, self.counts, self.strengths, _shown) = held
        self.all = []
        self.fetches = 0
        with self._held():
            self.events.reset()
        return True

    def keep_first_pages(self) -> bool:
        """Keep only the first page of each block, without a read (one reset); False, changing
        nothing, when a block's first page is not loaded (the window dropped its top) or the
        rows come from a list."""
        if self.pager is None or any(self.floor[b] > 0 for b in BLOCKS):
            return False
        self.events.resetting()
        for b in BLOCKS:
            rows = self.rows[b]
            if len(rows) > self.page:
                del rows[self.page :]
                del self.nums[b][self.page :]
                self.cursor[b] = self.nums[b][-1]
                self.more[b] = True
        self.where = {f.id: b for b in BLOCKS for f in self.rows[b]}
        self.fetches = 0
        with self._held():
            self.events.reset()
        return True

    def reload(self, counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Read the first pages again (after a change too big to apply row by row); the counts
        given are taken for the live store only (a filter's matches count themselves)."""
        if self.pager is not None:
            self.attach(self.pager, counts=counts if isinstance(self.pager, StorePager)
                        and not isinstance(self.pager, MatchPager) else None)

    def set_show_forgotten(self, on: bool) -> None:
        """List inactive facts too (or no more): the first pages are read again."""
        if on != self.show_forgotten:
            self.show_forgotten = on
            if self.pager is not None:
                self.attach(self.pager)
            else:
                self.set_facts(self.all)

    def set_counts(self, counts: Mapping[str, tuple[int, int, int]]) -> None:
        """New per-block counts (a commit's, read with it): no read."""
        for b in BLOCKS:
            new_count = counts.get(b, (0, 0, 0))
            if new_count != self.counts[b]:
                self.counts[b] = new_count
                self.events.counted(b)

    # -- paging ----------------------------------------------------------------------------------
    def can_fetch(self, block: str) -> bool:
        """Whether ``block`` has a page to fetch after its loaded rows."""
        return self.pager is not None and not self.hold_fetch and self.more[block]

    def fetch_page(self, block: str) -> bool:
        """Fetch the next page of ``block``; False if it had none."""
        if not self.can_fetch(block):
            return False
        self.fetch(block)
        return True

    def fetch_all(self, block: str) -> None:
        """Fetch every remaining page of ``block`` (tests; a person scrolls instead): past
        the window, the last rows stay loaded."""
        while self.fetch_page(block):
            pass

    def can_fetch_earlier(self, block: str) -> bool:
        """Whether the window dropped rows at the top of ``block`` (:meth:`fetch_earlier`)."""
        return self.pager is not None and not self.hold_fetch and self.floor[block] > 0

    def fetch_earlier(self, block: str) -> int:
        """Read the page before ``block``'s first loaded row again (rows the window dropped),
        dropping rows at its end past the window; the rows inserted at its top."""
        if not self.can_fetch_earlier(block):
            return 0
        assert self.pager is not None
        got, less = self.pager.page_before(block, self.floor[block] + 1, self.page,
                                           self.show_forgotten)
        got = [f for f in got if f.id not in self.where]
        self.fetches += 1
        self.strengths.update(self.pager.strengths([f.id for f in got]))
        with self._held():
            if got:
                self._trim(block, len(got), keep_end=False)
                self.events.inserting(block, 0, len(got) - 1)
                self.rows[block][0:0] = got
                self.nums[block][0:0] = [num_of(f.id) for f in got]
                for f in got:
                    self.where[f.id] = block
                self.cursor[block] = max(self.cursor[block], self.nums[block][-1])
                self.floor[block] = num_of(got[0].id) - 1 if less else 0
                self.events.inserted(block)
            else:
                self.floor[block] = 0
        return len(got)

    def fetch(self, block: str, upto: int | None = None) -> None:
        """Fetch the page after ``block``'s loaded rows (or every fact up to number ``upto``),
        dropping rows at its top past the window."""
        assert self.pager is not None
        got, more = self.pager.page(block, self.cursor[block], self.page, self.show_forgotten,
                                    upto=upto)
        got = [f for f in got if f.id not in self.where]
        self.fetches += 1
        self.strengths.update(self.pager.strengths([f.id for f in got]))
        rows = self.rows[block]
        with self._held():
            if got:
                self._trim(block, len(got), keep_end=True)
                first = len(rows)
                self.events.inserting(block, first, first + len(got) - 1)
                rows.extend(got)
                self.nums[block].extend(num_of(f.id) for f in got)
                for f in got:
                    self.where[f.id] = block
                self.cursor[block] = max(self.cursor[block], self.nums[block][-1])
                if upto is not None:
                    self.cursor[block] = max(self.cursor[block], upto)
                self.more[block] = more
                self.events.inserted(block)
        if upto is not None:
            self.cursor[block] = max(self.cursor[block], upto)
        self.more[block] = more

    def reveal(self, item_id: str) -> Position | None:
        """Where ``item_id`` is, loading the rows of its block up to it first if they were not
        loaded (one read up to its number, or the pages around it when it is far). None if it
        is not listed."""
        pos = self.position(item_id)
        if pos is not None or self.pager is None:
            return pos
        fact = self.pager.locate(item_id)
        if fact is None or fact.block not in self.rows or not (fact.active or self.show_forgotten):
            return None
        num, b = num_of(item_id), fact.block
        if self.more[b] and num > self.cursor[b]:
            if num - self.cursor[b] <= self.window:  # at most a window's facts (numbers are
                self.fetch(b, num)                   # shared by the blocks): one read up to it
            else:
                self._anchor(b, num)
        elif num <= self.floor[b]:  # dropped by the window
            self._anchor(b, num)
        return self.position(item_id)

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        """No page is fetched inside: a view's handlers of an event (its layout) ask whether
        there is more to fetch, and a page read there would land mid-change."""
        held, self.hold_fetch = self.hold_fetch, True
        try:
            yield
        finally:
            self.hold_fetch = held

    def _trim(self, block: str, incoming: int, *, keep_end: bool) -> None:
        """Before ``incoming`` rows come in, drop the rows of ``block`` that would pass the
        window: at its top (``keep_end``, a page fetched at the end) or at its end (a page read
        again at the top); then the other blocks' past the total, the farthest first."""
        self._drop(block, len(self.rows[block]) + incoming - self.window, keep_end=keep_end)
        at = BLOCKS.index(block)
        total = incoming + sum(len(r) for r in self.rows.values())
        for other in sorted(BLOCKS, key=lambda o: -abs(BLOCKS.index(o) - at)):
            if total <= self.total:
                break
            if other != block:
                over = min(len(self.rows[other]) - self.page, total - self.total)
                self._drop(other, over, keep_end=BLOCKS.index(other) < at)
                total -= max(0, over)

    def _drop(self, block: str, over: int, *, keep_end: bool) -> None:
        """Drop ``over`` rows of ``block``, at its top (``keep_end``) or at its end."""
        rows, nums = self.rows[block], self.nums[block]
        over = min(len(rows), over)
        if over <= 0:
            return
        first, last = (0, over - 1) if keep_end else (len(rows) - over, len(rows) - 1)
        self.events.removing(block, first, last)
        for f in rows[first : last + 1]:
            self.where.pop(f.id, None)
        if keep_end:
            self.floor[block] = nums[last]
        else:
            self.cursor[block] = nums[first - 1] if first else self.floor[block]
            self.more[block] = True
        del rows[first : last + 1]
        del nums[first : last + 1]
        self.events.removed(block)

    def _anchor(self, block: str, num: int) -> None:
        """Load ``block``'s rows around number ``num`` instead of those loaded (a fact far from
        them): the page before it and the page from it."""
        assert self.pager is not None
        before, less = self.pager.page_before(block, num, self.page, self.show_forgotten)
        after, more = self.pager.page(block, num - 1, self.page, self.show_forgotten)
        got = before + after
        self.fetches += 1
        self.strengths.update(self.pager.strengths([f.id for f in got]))
        rows = self.rows[block]
        with self._held():
            if rows:
                self.events.removing(block, 0, len(rows) - 1)
                for f in rows:
                    self.where.pop(f.id, None)
                rows.clear()
                self.nums[block].clear()
                self.events.removed(block)
            if got:
                self._trim(block, len(got), keep_end=True)  # the other blocks' past the total
                self.events.inserting(block, 0, len(got) - 1)
                rows.extend(got)
                self.nums[block].extend(num_of(f.id) for f in got)
                for f in got:
                    self.where[f.id] = block
            self.floor[block] = num_of(got[0].id) - 1 if got and less else 0
            self.cursor[block] = self.nums[block][-1] if got else num
            self.more[block] = more
            if got:
                self.events.inserted(block)

    # -- following the store ---------------------------------------------------------------------
    def apply_changes(self, rows: ChangedRows) -> None:
        """One commit's rows, read by id: inserts, removes and changes of the loaded rows it
        touches (a fact beyond a block's cursor waits for its page), and the new counts.
        O(change); a commit too big for that reads the first pages again."""
        if self.pager is None:
            return
        if rows.reload:
            self.reload(rows.counts if rows.complete else None)
            return
        ch = rows.changes
        for i in (*ch.strengths, *rows.facts):
            s = rows.strengths.get(i)
            if s is not None:
                self.strengths[i] = s
            else:
                self.strengths.pop(i, None)
        delta = {b: [0, 0, 0] for b in BLOCKS}
        known = True  # can the counts be adjusted from what is loaded?
        added = set(ch.added)
        removes: dict[str, list[int]] = {b: [] for b in BLOCKS}
        inserts: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        updates: list[tuple[str, int, Fact]] = []
        for item_id in ch.facts:
            new = rows.facts.get(item_id)
            old_block = self.where.get(item_id)
            old = None
            if old_block is not None:
                r = bisect.bisect_left(self.nums[old_block], num_of(item_id))
                old = self.rows[old_block][r]
            if rows.counts is None:
                if old is not None:
                    delta[old.block][fact_state(old)] -= 1
                elif item_id not in added:
                    known = False
                if new is not None and new.block in delta:
                    delta[new.block][fact_state(new)] += 1
            visible = new is not None and new.block in self.rows and (
                new.active or self.show_forgotten)
            if old_block is not None:
                if visible and new is not None and new.block == old_block:
                    if old != new:
                        updates.append((old_block, r, new))
                    continue
                removes[old_block].append(r)
            if visible and new is not None:
                b = new.block
                if (not self.more[b] or num_of(item_id) <= self.cursor[b]) and \
                        num_of(item_id) > self.floor[b]:
                    inserts[b].append(new)
        for b, r, new in updates:
            self.rows[b][r] = new
            self.events.changed(b, r, r)
        for b in BLOCKS:
            self._remove(b, removes[b])
        for b in BLOCKS:
            self._insert(b, inserts[b])
        moved = set(ch.strengths) - set(rows.facts)
        for i in moved:
            pos = self.position(i)
            if pos is not None:
                self.events.salience_changed(pos[0], pos[1], pos[1])
        if rows.counts is not None:
            counts = rows.counts
        elif known:
            counts = {b: (self.counts[b][0] + delta[b][0], self.counts[b][1] + delta[b][1],
                          self.counts[b][2] + delta[b][2]) for b in BLOCKS}
        elif ch.facts:
            counts = self.pager.counts()
        else:
            counts = self.counts
        self.set_counts(counts)

    def _remove(self, block: str, positions: list[int]) -> None:
        """Remove the rows at ``positions``, contiguous runs at a time, from the end."""
        if not positions:
            return
        rows, nums = self.rows[block], self.nums[block]
        ordered = sorted(set(positions))
        runs: list[tuple[int, int]] = []
        for p in ordered:
            if runs and runs[-1][1] == p - 1:
                runs[-1] = (runs[-1][0], p)
            else:
                runs.append((p, p))
        for first, last in reversed(runs):
            self.events.removing(block, first, last)
            for f in rows[first : last + 1]:
                self.where.pop(f.id, None)
            del rows[first : last + 1]
            del nums[first : last + 1]
            self.events.removed(block)

    def _insert(self, block: str, facts: list[Fact]) -> None:
        """Insert ``facts`` at their places by number, each contiguous run as one insert."""
        if not facts:
            return
        rows, nums = self.rows[block], self.nums[block]
        facts = sorted(facts, key=lambda f: num_of(f.id))
        runs: list[tuple[int, list[Fact]]] = []
        for f in facts:
            at = bisect.bisect_left(nums, num_of(f.id))
            if runs and runs[-1][0] == at:
                runs[-1][1].append(f)
            else:
                runs.append((at, [f]))
        for at, run in reversed(runs):
            self.events.inserting(block, at, at + len(run) - 1)
            rows[at:at] = run
            nums[at:at] = [num_of(f.id) for f in run]
            for f in run:
                self.where[f.id] = block
            self.events.inserted(block)
        if not self.more[block] and nums:
            self.cursor[block] = max(self.cursor[block], nums[-1])

    # -- from a list -----------------------------------------------------------------------------
    def set_facts(self, facts: Sequence[Fact], *, strengths: Mapping[str, Strength] | None = None,
                  salience_moved: bool = False) -> None:
        """Load ``facts``; rows are inserted, removed or changed, never reset unless hundreds of
        scattered ranges change. ``strengths`` (importance and recalls by id) omitted, the last
        ones stay; ``salience_moved``: the caller changed another salience input (the policy),
        so every row's salience changed too."""
        moved = salience_moved  # did the salience inputs change (not the facts)?
        if strengths is not None and dict(strengths) != self.strengths:
            self.strengths, moved = dict(strengths), True
        self.pager = None
        self.more = dict.fromkeys(BLOCKS, False)
        self.all = list(facts)
        per: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        counts = {b: [0, 0, 0] for b in BLOCKS}
        for f in facts:
            if f.block not in per:
                continue
            counts[f.block][fact_state(f)] += 1
            if f.active or self.show_forgotten:
                per[f.block].append(f)
        for b in BLOCKS:
            per[b].sort(key=lambda f: num_of(f.id))
        if self._scattered(per):
            # Hundreds of scattered row changes (a Forget over a big store) cost the views more
            # as single inserts/removes than one reset; everything else is applied row by row.
            self.events.resetting()
            self.rows = per
            self._reindex()
            self.counts = {b: (counts[b][0], counts[b][1], counts[b][2]) for b in BLOCKS}
            self.events.reset()
            return
        for b in BLOCKS:
            self._apply(b, per[b])
            new_count = (counts[b][0], counts[b][1], counts[b][2])
            if new_count != self.counts[b]:
                self.counts[b] = new_count
                self.events.counted(b)
            if moved and self.rows[b]:  # recalls, importance or the policy changed
                self.events.salience_changed(b, 0, len(self.rows[b]) - 1)
        self._reindex()

    def _scattered(self, per: dict[str, list[Fact]]) -> bool:
        ranges = 0
        for b in BLOCKS:
            old_ids = [f.id for f in self.rows[b]]
            new_ids = [f.id for f in per[b]]
            if old_ids == new_ids:
                continue
            ops = difflib.SequenceMatcher(None, old_ids, new_ids, autojunk=False).get_opcodes()
            ranges += sum(1 for op in ops if op[0] != "equal")
        return ranges > self.reset_above

    def _apply(self, block: str, new: list[Fact]) -> None:
        old = self.rows[block]
        old_ids = [f.id for f in old]
        new_ids = [f.id for f in new]
        ops = difflib.SequenceMatcher(None, old_ids, new_ids, autojunk=False).get_opcodes()
        # Apply from the end so earlier row numbers stay valid.
        for tag, i1, i2, j1, j2 in reversed(ops):
            if tag in ("delete", "replace"):
                self.events.removing(block, i1, i2 - 1)
                del old[i1:i2]
                self.events.removed(block)
            if tag in ("insert", "replace"):
                self.events.inserting(block, i1, i1 + (j2 - j1) - 1)
                old[i1:i1] = new[j1:j2]
                self.events.inserted(block)
            if tag == "equal":
                for k in range(i2 - i1):
                    if old[i1 + k] != new[j1 + k]:
                        old[i1 + k] = new[j1 + k]
                        self.events.changed(block, i1 + k, i1 + k)

    def _reindex(self) -> None:
        self.nums = {b: [num_of(f.id) for f in self.rows[b]] for b in BLOCKS}
        self.where = {f.id: b for b in BLOCKS for f in self.rows[b]}
