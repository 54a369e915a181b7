"""Qt item models: thin adapters over the core's plain data (checked with ``qtmodeltester``).

The models follow the store by id: their owner hands them the rows a commit changed
(:class:`~nocturne_desktop.core.store.reads.ChangedRows`, read on the writer's thread) or new data
(a version list, a :class:`Diff`), and the model applies it as row inserts, removes and
``dataChanged``, so views keep their selection and scroll position and never flash. The block
tree loads lazily, a page per block at a time (``canFetchMore``/``fetchMore``), through a pager
that reads one page by key - the only database read a model makes, O(page).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import difflib
import functools
import html
import operator
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractTableModel,
    QCoreApplication,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
)
from PySide6.QtGui import QFont

from nocturne_desktop.core.mutations import ABSENT, Refusal, decided_by_label, from_row, is_rule
from nocturne_desktop.core.policy import RetentionPolicy, SalienceParts
from nocturne_desktop.core.store import reads
from nocturne_desktop.core.store.reads import ChangedRows
from nocturne_desktop.core.types import (
    BLOCKS,
    PASSES,
    Diff,
    DiffEntry,
    Fact,
    MutationRow,
    SleepRecord,
    Strength,
    Version,
)
from nocturne_desktop.ui import palette

Index = QModelIndex | QPersistentModelIndex
ROLE_OBJECT = int(Qt.ItemDataRole.UserRole) + 1
"""The row's underlying object (Fact, Version, DiffEntry, …)."""
DISPLAY = Qt.ItemDataRole.DisplayRole
_NO_INDEX = QModelIndex()


_SELECTABLE = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_NO_FLAGS = Qt.ItemFlag.NoItemFlags
_LEAF = _SELECTABLE | Qt.ItemFlag.ItemNeverHasChildren
"""A fact or version row. QTreeView's layout asks every row it shows whether it has children;
with this flag it stops at ``flags()`` (one call into Python per row, not three through the
filter proxy's ``hasChildren`` and ``canFetchMore``)."""

_DISPLAY_ROLE = int(Qt.ItemDataRole.DisplayRole)
_TOOLTIP_ROLE = int(Qt.ItemDataRole.ToolTipRole)
_FONT_ROLE = int(Qt.ItemDataRole.FontRole)
_FOREGROUND_ROLE = int(Qt.ItemDataRole.ForegroundRole)
_TEXT_ALIGNMENT_ROLE = int(Qt.ItemDataRole.TextAlignmentRole)
_TREE_ROLES = frozenset({_DISPLAY_ROLE, _TOOLTIP_ROLE, _FONT_ROLE, _FOREGROUND_ROLE,
                         _TEXT_ALIGNMENT_ROLE, ROLE_OBJECT})
"""The roles :class:`BlockTreeModel` answers (a paint asks for three more, always None)."""
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


@functools.cache
def _font(*, bold: bool = False, struck: bool = False) -> QFont:
    """A block row's font (bold) and a listed inactive fact's (struck), made once (a paint asks
    per cell) and after the application exists."""
    f = QFont()
    f.setBold(bold)
    if struck:
        f.setItalic(True)
        f.setStrikeOut(True)
    return f

PIN_MARK = "⚑ "
"""Shown before a pinned fact's text (a pinned fact is never forgotten by a rule or the model)."""


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` literally: Qt would render tooltip text that *looks* like
    HTML as rich text, and model output must never be interpreted."""
    body = html.escape(text).replace("\n", "<br>")
    return f"<qt><p style='white-space:pre-wrap'>{body}</p></qt>"


def fit_columns(header: Any, samples: dict[int, str], *, stretch: int | None = None,
                padding: int = 24) -> None:
    """Fixed, font-derived column widths. ``ResizeToContents`` would ask the model for every
    row's size hint on every change - O(rows) on the GUI thread, seconds for a big store."""
    fm = header.fontMetrics()
    for col, sample in samples.items():
        header.setSectionResizeMode(col, header.ResizeMode.Interactive)
        header.resizeSection(col, fm.horizontalAdvance(sample) + padding)
    if stretch is not None:
        header.setSectionResizeMode(stretch, header.ResizeMode.Stretch)


def one_line(text: str, limit: int = 400) -> str:
    flat = " ⏎ ".join(part.strip() for part in text.splitlines() if part.strip()) or text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def age_text(seconds: float) -> str:
    s = max(0.0, seconds)
    if s < 60:
        return "just now"
    if s < 3600:
        return f"{int(s // 60)} min"
    if s < 86400:
        return f"{int(s // 3600)} h"
    days = s / 86400
    return f"{int(days)} d" if days < 365 else f"{days / 365:.1f} y"


def clock_text(ts: float) -> str:
    dt = datetime.fromtimestamp(ts)
    today = datetime.now().date()
    return dt.strftime("%H:%M:%S") if dt.date() == today else dt.strftime("%d %b %H:%M")


def _state(fact: Fact) -> int:
    """0 active, 1 superseded, 2 forgotten (the block label's three counts)."""
    return 0 if fact.active else 1 if fact.superseded else 2


def _num(item_id: str) -> int:
    try:
        return int(item_id.split("_", 1)[1])
    except (IndexError, ValueError):
        return 0


# --- freeing big results a slice at a time -------------------------------------------------------

RELEASE_SLICE = 2_000
"""Items freed per event-loop turn by :func:`release_later`."""
_to_release: deque[list[Any] | dict[Any, Any]] = deque()
_release_timer: QTimer | None = None


def release_later(*containers: list[Any] | dict[Any, Any]) -> None:
    """Empty ``containers`` (lists and dicts about to be dropped) :data:`RELEASE_SLICE` items
    per event-loop turn, in the order given, on the GUI thread. The last reference to a past
    version's 100,000 facts or a diff's kept rows going at once is one C call freeing them all
    (~25 ms at 100k on the GUI thread); in slices the window keeps ticking. Each is left empty."""
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


# --- block tree ---------------------------------------------------------------------------------


class FactPager(Protocol):
    """Where a lazy :class:`BlockTreeModel` gets its rows: one page of a block at a time."""

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
_ROW_ID, _ROW_ACTIVE, _ROW_SUPERSEDED_BY = 0, 7, 10


class StatePager:
    """Pages of a fixed list of facts (a past version's state, built off the GUI thread).

    The state is held as plain tuples, not :class:`Fact` objects: a tuple of strings and
    numbers is untracked by the cyclic garbage collector, so 100,000 of them neither set off a
    full collection on the GUI thread (26 ms at 100k facts, right when the tree went back to
    live) nor lengthen every later one. A page's facts are made when first read (the first
    :attr:`PREBUILT` of each block already on the job's thread) and kept."""

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
            per[b].sort(key=lambda r: _num(r[_ROW_ID]))
        self._per = per
        self._by_id = {r[_ROW_ID]: r for b in BLOCKS for r in per[b]}
        self._nums = {b: [_num(r[_ROW_ID]) for r in per[b]] for b in BLOCKS}
        self._active = {b: [r for r in per[b] if r[_ROW_ACTIVE]] for b in BLOCKS}
        self._active_nums = {b: [_num(r[_ROW_ID]) for r in self._active[b]] for b in BLOCKS}
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

    def release(self) -> None:
        """Free the state a slice per event-loop turn (:func:`release_later`): the tree no
        longer shows it. The pager is empty afterwards."""
        self.empty = True
        release_later(self._made, self._by_id, *self._active.values(),
                      *self._active_nums.values(), *self._nums.values(), *self._per.values())


@dataclass(frozen=True)
class FirstPages:
    """The first page of each block with what the tree shows beside them: read by
    :func:`read_first_pages` (on a job's thread, with the job's own store, or on the caller's),
    shown by :meth:`BlockTreeModel.show_pages` in one reset."""

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


class BlockTreeModel(QAbstractItemModel):
    """The four blocks (top level) and their facts (children).

    Two ways to feed it:

    - **Lazily, from a pager** (:meth:`attach`): each block shows its first :attr:`PAGE` facts
      and fetches more as the view scrolls (``canFetchMore``/``fetchMore``); a change to the
      live store arrives as rows read by id (:meth:`apply_changes`) and becomes row inserts,
      ``dataChanged`` and removes - never a re-read. A block's loaded rows are always *every*
      listed fact between its floor and its cursor, so a change outside them is simply left for
      a later page. At most :attr:`WINDOW` rows a block stay loaded: a page fetched past it
      drops the rows at the block's other end (read again when the view scrolls back,
      :meth:`fetch_earlier`), and :meth:`reveal` of a fact far away loads the rows around it.
      This is what the window uses: first paint and every update cost O(page + change).
    - **From a list** (:meth:`set_facts`): every fact given is shown and the difference to the
      rows shown is applied per block (for small lists and the tests).

    Forgotten and superseded facts are listed only when :meth:`set_show_forgotten` is on, and
    drawn greyed; the block label counts them apart ("2 active, 1 superseded, 1 forgotten").
    The Salience column and each fact's tooltip give its salience and its terms (S-RET-2), from
    the importance and recalls given and the retention policy.
    """

    COLUMNS = ("Fact", "Category", "Age", "Turn", "Id", "Salience")
    SALIENCE_COLUMN = 5
    PAGE = 500
    """Facts fetched per block at a time."""
    WINDOW = 6 * PAGE
    """Rows loaded per block at most (from a pager). QTreeView lays out every row it holds
    after each insert or remove, calling into the model (Python) per row, so a page fetched
    costs O(rows loaded); past the window the pages farthest from the one fetched are dropped
    (and read again when the person scrolls back)."""
    TOTAL = WINDOW + 3 * PAGE
    """Rows loaded in all blocks at most: past it, a page fetched in one block trims the
    others (the farthest first) to a page each - their end for a block above, their start for
    one below, the rows next to the one fetched."""

    def __init__(self, parent: Any = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self._clock = clock
        self._all: list[Fact] = []
        self._rows: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        self._nums: dict[str, list[int]] = {b: [] for b in BLOCKS}
        """Per block, the numbers of the rows (bisected to find a row by id)."""
        self._where: dict[str, str] = {}
        """Loaded fact id → its block."""
        self._more: dict[str, bool] = {b: False for b in BLOCKS}
        self._cursor: dict[str, int] = {b: 0 for b in BLOCKS}
        """Per block, the highest number the loaded rows cover (every listed fact up to it)."""
        self._floor: dict[str, int] = {b: 0 for b in BLOCKS}
        """Per block, the number below the loaded rows: they are every listed fact numbered in
        ``(floor, cursor]``; above 0, the window dropped earlier rows (:meth:`fetch_earlier`)."""
        self._pager: FactPager | None = None
        self._counts: dict[str, tuple[int, int, int]] = {b: (0, 0, 0) for b in BLOCKS}
        """Per block: active, superseded (a correction, not a forgetting), forgotten."""
        self._show_forgotten = False
        self.now: float | None = None
        """Fixed "now" for ages (a historical version is aged from its own time)."""
        self._strengths: dict[str, Strength] = {}
        self._policy = RetentionPolicy()
        self.fetches = 0
        """Pages fetched since :meth:`attach` (tests and the benchmark read it)."""
        self.hold_fetch = False
        """While True, ``canFetchMore`` says no (inside a reset's handlers)."""
        self.view_fetches = True
        """Whether ``fetchMore`` from a view fetches. QTreeView calls it on every layout of an
        expanded parent, then again once per row that might fit the viewport (it assumes a
        fetch brings one row): with pages of 500 that is every fact after a few layouts. A
        panel that fetches by what is on screen (:meth:`fetch_page`) turns this off."""

    # -- feeding ---------------------------------------------------------------------------------
    @property
    def show_forgotten(self) -> bool:
        return self._show_forgotten

    @property
    def pager(self) -> FactPager | None:
        return self._pager

    def set_show_forgotten(self, on: bool) -> None:
        if on != self._show_forgotten:
            self._show_forgotten = on
            if self._pager is not None:
                self.attach(self._pager)
            else:
                self.set_facts(self._all)

    def facts(self, block: str) -> list[Fact]:
        """The rows of ``block`` loaded so far (all of them for a list)."""
        return list(self._rows[block])

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return dict(self._counts)

    def active_count(self) -> int:
        return sum(c[0] for c in self._counts.values())

    def is_empty(self) -> bool:
        return not any(any(c) for c in self._counts.values())

    def salience(self, fact: Fact) -> SalienceParts:
        """``fact``'s salience now (or at :attr:`now`), term by term."""
        now = self.now if self.now is not None else self._clock()
        return self._policy.salience_parts(fact, now, self._strengths.get(fact.id))

    def set_policy(self, policy: RetentionPolicy) -> None:
        """A new retention policy: the Salience cells of the loaded rows change."""
        if policy != self._policy:
            self._policy = policy
            self._salience_changed()

    def _salience_changed(self) -> None:
        col = self.SALIENCE_COLUMN
        for row, b in enumerate(BLOCKS):
            if self._rows[b]:
                parent = self.index(row, 0)
                self.dataChanged.emit(self.index(0, col, parent),
                                      self.index(len(self._rows[b]) - 1, col, parent))

    def _reindex(self) -> None:
        self._nums = {b: [_num(f.id) for f in self._rows[b]] for b in BLOCKS}
        self._where = {f.id: b for b in BLOCKS for f in self._rows[b]}

    # -- lazily, from a pager --------------------------------------------------------------------
    def attach(self, pager: FactPager, *, policy: RetentionPolicy | None = None,
               counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Show ``pager``'s facts, the first :attr:`PAGE` of each block (one reset of a
        prebuilt structure: O(page)). ``counts``: the per-block counts when the caller has
        them (read with the change), else the pager's. The pages are read here, on the
        caller's thread; :func:`read_first_pages` off the GUI thread and :meth:`show_pages`
        on it split the same work in two."""
        if policy is not None:
            self._policy = policy
        self.show_pages(pager, read_first_pages(pager, self._show_forgotten, counts, self.PAGE))

    def show_pages(self, pager: FactPager, pages: FirstPages) -> bool:
        """Show ``pages`` (read with :func:`read_first_pages`, on any thread, with its own
        store) in one reset, paging on from ``pager`` afterwards. False, changing nothing,
        when they were read with the other "show forgotten" setting."""
        if pages.show_forgotten != self._show_forgotten:
            return False
        rows, more, counts = pages.rows, pages.more, pages.counts
        old = self._pager
        self.beginResetModel()
        self._pager = pager
        self._all = []
        self._rows = {b: list(rows.get(b, ())) for b in BLOCKS}
        self._more = {b: more.get(b, False) for b in BLOCKS}
        self._cursor = {b: _num(self._rows[b][-1].id) if self._rows[b] else 0 for b in BLOCKS}
        self._floor = {b: 0 for b in BLOCKS}
        self._counts = {b: counts.get(b, (0, 0, 0)) for b in BLOCKS}
        self._strengths = dict(pages.strengths)
        self._reindex()
        self.fetches = 0
        with self._fetches_held():  # no page inside the handlers below
            self.endResetModel()
        if isinstance(old, StatePager) and old is not pager:
            old.release()  # a past version's whole state: freed in slices, not in this slot
        return True

    def set_counts(self, counts: Mapping[str, tuple[int, int, int]]) -> None:
        """New per-block counts (a commit's, read with it): the block rows change, no read."""
        last_col = len(self.COLUMNS) - 1
        for row, b in enumerate(BLOCKS):
            new_count = counts.get(b, (0, 0, 0))
            if new_count != self._counts[b]:
                self._counts[b] = new_count
                self.dataChanged.emit(self.index(row, 0), self.index(row, last_col))

    def loaded(self) -> tuple[Any, ...] | None:
        """What the tree holds now, to show again later with :meth:`show_loaded` (None: it
        shows a list, not a pager). :meth:`attach` replaces these structures, never edits them,
        so holding them costs nothing."""
        if self._pager is None:
            return None
        return (self._pager, self._rows, self._nums, self._where, self._more, self._cursor,
                self._floor, self._counts, self._strengths, self._show_forgotten)

    def show_loaded(self, held: tuple[Any, ...]) -> bool:
        """Show again what :meth:`loaded` returned (one reset, no read): the live rows kept
        while a past version showed. False, changing nothing, if "show forgotten" changed
        since."""
        if held[-1] != self._show_forgotten:
            return False
        old = self._pager
        self.beginResetModel()
        (self._pager, self._rows, self._nums, self._where, self._more, self._cursor,
         self._floor, self._counts, self._strengths, _shown) = held
        self._all = []
        self.fetches = 0
        with self._fetches_held():  # no page inside the handlers below
            self.endResetModel()
        if isinstance(old, StatePager) and old is not self._pager:
            old.release()
        return True

    def keep_first_pages(self) -> bool:
        """Keep only the first :attr:`PAGE` rows of each block, without a read (one reset);
        False, changing nothing, when a block's first page is not loaded (the window dropped
        its top) or the rows come from a list."""
        if self._pager is None or any(self._floor[b] > 0 for b in BLOCKS):
            return False
        self.beginResetModel()
        for b in BLOCKS:
            rows = self._rows[b]
            if len(rows) > self.PAGE:
                del rows[self.PAGE :]
                del self._nums[b][self.PAGE :]
                self._cursor[b] = self._nums[b][-1]
                self._more[b] = True
        self._where = {f.id: b for b in BLOCKS for f in self._rows[b]}
        self.fetches = 0
        with self._fetches_held():  # no page inside the handlers below
            self.endResetModel()
        return True

    def reload(self, counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Read the first pages again (after a change too big to apply row by row)."""
        if self._pager is not None:
            self.attach(self._pager, counts=counts if isinstance(self._pager, StorePager)
                        and not isinstance(self._pager, MatchPager) else None)

    @contextlib.contextmanager
    def _fetches_held(self) -> Iterator[None]:
        """No page is fetched inside: a reset's, insert's or remove's handlers (the view's
        layout) ask ``canFetchMore``, and a page read there would land mid-change."""
        held, self.hold_fetch = self.hold_fetch, True
        try:
            yield
        finally:
            self.hold_fetch = held

    def canFetchMore(self, parent: Index) -> bool:
        if (self._pager is None or self.hold_fetch or not parent.isValid()
                or parent.internalPointer() is not None):
            return False
        return 0 <= parent.row() < len(BLOCKS) and self._more[BLOCKS[parent.row()]]

    def fetchMore(self, parent: Index) -> None:
        if self.view_fetches and self.canFetchMore(parent):
            self._fetch(BLOCKS[parent.row()], None)

    def fetch_page(self, block: str) -> bool:
        """Fetch the next page of ``block``; False if it had none."""
        if not self.canFetchMore(self.index(BLOCKS.index(block), 0)):
            return False
        self._fetch(block, None)
        return True

    def can_fetch_earlier(self, block: str) -> bool:
        """Whether the window dropped rows at the top of ``block`` (:meth:`fetch_earlier`)."""
        return self._pager is not None and not self.hold_fetch and self._floor[block] > 0

    def fetch_earlier(self, block: str) -> int:
        """Read the page before ``block``'s first loaded row again (rows the window dropped),
        dropping pages at its end past :attr:`WINDOW`; the rows inserted at its top."""
        if not self.can_fetch_earlier(block):
            return 0
        assert self._pager is not None
        got, less = self._pager.page_before(block, self._floor[block] + 1, self.PAGE,
                                            self._show_forgotten)
        got = [f for f in got if f.id not in self._where]
        self.fetches += 1
        self._strengths.update(self._pager.strengths([f.id for f in got]))
        with self._fetches_held():  # no page inside the handlers below
            if got:
                self._trim(block, len(got), keep_end=False)
                self.beginInsertRows(self.index(BLOCKS.index(block), 0), 0, len(got) - 1)
                self._rows[block][0:0] = got
                self._nums[block][0:0] = [_num(f.id) for f in got]
                for f in got:
                    self._where[f.id] = block
                self._cursor[block] = max(self._cursor[block], self._nums[block][-1])
                self._floor[block] = _num(got[0].id) - 1 if less else 0
                self.endInsertRows()
            else:
                self._floor[block] = 0
        return len(got)

    def _trim(self, block: str, incoming: int, *, keep_end: bool) -> None:
        """Before ``incoming`` rows come in, drop the rows of ``block`` that would pass
        :attr:`WINDOW`: at its top (``keep_end``, a page fetched at the end) or at its end
        (a page read again at the top); then the other blocks' past :attr:`TOTAL`. One layout
        of the view follows the removes and the insert."""
        self._drop(block, len(self._rows[block]) + incoming - self.WINDOW, keep_end=keep_end)
        at = BLOCKS.index(block)
        total = incoming + sum(len(r) for r in self._rows.values())
        for other in sorted(BLOCKS, key=lambda o: -abs(BLOCKS.index(o) - at)):
            if total <= self.TOTAL:
                break
            if other != block:
                over = min(len(self._rows[other]) - self.PAGE, total - self.TOTAL)
                self._drop(other, over, keep_end=BLOCKS.index(other) < at)
                total -= max(0, over)

    def _drop(self, block: str, over: int, *, keep_end: bool) -> None:
        """Drop ``over`` rows of ``block``, at its top (``keep_end``) or at its end."""
        rows, nums = self._rows[block], self._nums[block]
        over = min(len(rows), over)
        if over <= 0:
            return
        parent = self.index(BLOCKS.index(block), 0)
        first, last = (0, over - 1) if keep_end else (len(rows) - over, len(rows) - 1)
        self.beginRemoveRows(parent, first, last)
        for f in rows[first : last + 1]:
            self._where.pop(f.id, None)
        if keep_end:
            self._floor[block] = nums[last]
        else:
            self._cursor[block] = nums[first - 1] if first else self._floor[block]
            self._more[block] = True
        del rows[first : last + 1]
        del nums[first : last + 1]
        self.endRemoveRows()

    def _fetch(self, block: str, upto: int | None) -> None:
        assert self._pager is not None
        got, more = self._pager.page(block, self._cursor[block], self.PAGE, self._show_forgotten,
                                     upto=upto)
        got = [f for f in got if f.id not in self._where]
        self.fetches += 1
        self._strengths.update(self._pager.strengths([f.id for f in got]))
        rows = self._rows[block]
        with self._fetches_held():  # no page inside the handlers below
            if got:
                self._trim(block, len(got), keep_end=True)
                first = len(rows)
                self.beginInsertRows(self.index(BLOCKS.index(block), 0), first,
                                     first + len(got) - 1)
                rows.extend(got)
                self._nums[block].extend(_num(f.id) for f in got)
                for f in got:
                    self._where[f.id] = block
                self._cursor[block] = max(self._cursor[block], self._nums[block][-1])
                if upto is not None:
                    self._cursor[block] = max(self._cursor[block], upto)
                self._more[block] = more
                self.endInsertRows()
        if upto is not None:
            self._cursor[block] = max(self._cursor[block], upto)
        self._more[block] = more

    def _anchor(self, block: str, num: int) -> None:
        """Load ``block``'s rows around number ``num`` instead of those loaded (a fact far from
        them): the page before it and the page from it."""
        assert self._pager is not None
        before, less = self._pager.page_before(block, num, self.PAGE, self._show_forgotten)
        after, more = self._pager.page(block, num - 1, self.PAGE, self._show_forgotten)
        got = before + after
        self.fetches += 1
        self._strengths.update(self._pager.strengths([f.id for f in got]))
        parent = self.index(BLOCKS.index(block), 0)
        rows = self._rows[block]
        with self._fetches_held():  # no page inside the handlers below
            if rows:
                self.beginRemoveRows(parent, 0, len(rows) - 1)
                for f in rows:
                    self._where.pop(f.id, None)
                rows.clear()
                self._nums[block].clear()
                self.endRemoveRows()
            if got:
                self._trim(block, len(got), keep_end=True)  # the other blocks' past TOTAL
                self.beginInsertRows(parent, 0, len(got) - 1)
                rows.extend(got)
                self._nums[block].extend(_num(f.id) for f in got)
                for f in got:
                    self._where[f.id] = block
            self._floor[block] = _num(got[0].id) - 1 if got and less else 0
            self._cursor[block] = self._nums[block][-1] if got else num
            self._more[block] = more
            if got:
                self.endInsertRows()

    def fetch_all(self, block: str) -> None:
        """Fetch every remaining page of ``block`` (tests; a person scrolls instead): past
        :attr:`WINDOW` rows, the last of them stay loaded."""
        while self.fetch_page(block):
            pass

    def index_of(self, item_id: str) -> QModelIndex:
        """The row of ``item_id`` if it is loaded (an invalid index otherwise)."""
        block = self._where.get(item_id)
        if block is None:
            return QModelIndex()
        r = bisect.bisect_left(self._nums[block], _num(item_id))
        return self.index(r, 0, self.index(BLOCKS.index(block), 0))

    def reveal(self, item_id: str) -> QModelIndex:
        """The row of ``item_id``, fetching the pages of its block up to it first if they were
        not loaded yet (one read up to its number). Invalid if it is not listed."""
        idx = self.index_of(item_id)
        if idx.isValid() or self._pager is None:
            return idx
        fact = self._pager.locate(item_id)
        if fact is None or fact.block not in self._rows or not (fact.active or self._show_forgotten):
            return QModelIndex()
        num, b = _num(item_id), fact.block
        if self._more[b] and num > self._cursor[b]:
            if num - self._cursor[b] <= self.WINDOW:  # at most a window's facts (numbers are
                self._fetch(b, num)                   # shared by the blocks): one read up to it
            else:
                self._anchor(b, num)
        elif num <= self._floor[b]:  # dropped by the window
            self._anchor(b, num)
        return self.index_of(item_id)

    def apply_changes(self, rows: ChangedRows) -> None:
        """One commit's rows, read by id: inserts, removes and ``dataChanged`` for the loaded
        rows it touches (a fact beyond a block's cursor waits for its page). O(change)."""
        if self._pager is None:
            return
        if rows.reload:
            self.reload(rows.counts if rows.complete else None)
            return
        ch = rows.changes
        for i in (*ch.strengths, *rows.facts):
            s = rows.strengths.get(i)
            if s is not None:
                self._strengths[i] = s
            else:
                self._strengths.pop(i, None)
        delta = {b: [0, 0, 0] for b in BLOCKS}
        known = True  # can the counts be adjusted from what is loaded?
        added = set(ch.added)
        removes: dict[str, list[int]] = {b: [] for b in BLOCKS}
        inserts: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        updates: list[tuple[str, int, Fact]] = []
        for item_id in ch.facts:
            new = rows.facts.get(item_id)
            old_block = self._where.get(item_id)
            old = None
            if old_block is not None:
                r = bisect.bisect_left(self._nums[old_block], _num(item_id))
                old = self._rows[old_block][r]
            if rows.counts is None:
                if old is not None:
                    delta[old.block][_state(old)] -= 1
                elif item_id not in added:
                    known = False
                if new is not None and new.block in delta:
                    delta[new.block][_state(new)] += 1
            visible = new is not None and new.block in self._rows and (
                new.active or self._show_forgotten)
            if old_block is not None:
                if visible and new is not None and new.block == old_block:
                    if old != new:
                        updates.append((old_block, r, new))
                    continue
                removes[old_block].append(r)
            if visible and new is not None:
                b = new.block
                if (not self._more[b] or _num(item_id) <= self._cursor[b]) and \
                        _num(item_id) > self._floor[b]:
                    inserts[b].append(new)
        last_col = len(self.COLUMNS) - 1
        for b, r, new in updates:
            self._rows[b][r] = new
            parent = self.index(BLOCKS.index(b), 0)
            self.dataChanged.emit(self.index(r, 0, parent), self.index(r, last_col, parent))
        for b in BLOCKS:
            self._remove(b, removes[b])
        for b in BLOCKS:
            self._insert(b, inserts[b])
        moved = set(ch.strengths) - set(rows.facts)
        if moved:
            col = self.SALIENCE_COLUMN
            for i in moved:
                idx = self.index_of(i)
                if idx.isValid():
                    cell = idx.siblingAtColumn(col)
                    self.dataChanged.emit(cell, cell)
        if rows.counts is not None:
            counts = rows.counts
        elif known:
            counts = {b: (self._counts[b][0] + delta[b][0], self._counts[b][1] + delta[b][1],
                          self._counts[b][2] + delta[b][2]) for b in BLOCKS}
        elif ch.facts:
            counts = self._pager.counts()
        else:
            counts = self._counts
        for row, b in enumerate(BLOCKS):
            new_count = counts.get(b, (0, 0, 0))
            if new_count != self._counts[b]:
                self._counts[b] = new_count
                self.dataChanged.emit(self.index(row, 0), self.index(row, last_col))

    def _remove(self, block: str, positions: list[int]) -> None:
        """Remove the rows at ``positions``, contiguous runs at a time, from the end."""
        if not positions:
            return
        parent = self.index(BLOCKS.index(block), 0)
        rows, nums = self._rows[block], self._nums[block]
        ordered = sorted(set(positions))
        runs: list[tuple[int, int]] = []
        for p in ordered:
            if runs and runs[-1][1] == p - 1:
                runs[-1] = (runs[-1][0], p)
            else:
                runs.append((p, p))
        for first, last in reversed(runs):
            self.beginRemoveRows(parent, first, last)
            for f in rows[first : last + 1]:
                self._where.pop(f.id, None)
            del rows[first : last + 1]
            del nums[first : last + 1]
            self.endRemoveRows()

    def _insert(self, block: str, facts: list[Fact]) -> None:
        """Insert ``facts`` at their places by number, each contiguous run as one insert."""
        if not facts:
            return
        parent = self.index(BLOCKS.index(block), 0)
        rows, nums = self._rows[block], self._nums[block]
        facts = sorted(facts, key=lambda f: _num(f.id))
        runs: list[tuple[int, list[Fact]]] = []
        for f in facts:
            at = bisect.bisect_left(nums, _num(f.id))
            if runs and runs[-1][0] == at:
                runs[-1][1].append(f)
            else:
                runs.append((at, [f]))
        for at, run in reversed(runs):
            self.beginInsertRows(parent, at, at + len(run) - 1)
            rows[at:at] = run
            nums[at:at] = [_num(f.id) for f in run]
            for f in run:
                self._where[f.id] = block
            self.endInsertRows()
        if not self._more[block] and nums:
            self._cursor[block] = max(self._cursor[block], nums[-1])

    # -- from a list -----------------------------------------------------------------------------
    def set_facts(
        self,
        facts: Sequence[Fact],
        *,
        strengths: Mapping[str, Strength] | None = None,
        policy: RetentionPolicy | None = None,
    ) -> None:
        """Show ``facts``; rows are inserted, removed or updated, never reset. ``strengths``
        (importance and recalls by id) and ``policy`` feed the salience; omitted, the last
        ones given stay."""
        moved = False  # did the salience inputs change (not the facts)?
        if strengths is not None and dict(strengths) != self._strengths:
            self._strengths, moved = dict(strengths), True
        if policy is not None and policy != self._policy:
            self._policy, moved = policy, True
        self._pager = None
        self._more = {b: False for b in BLOCKS}
        self._all = list(facts)
        per: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        counts = {b: [0, 0, 0] for b in BLOCKS}
        for f in facts:
            if f.block not in per:
                continue
            counts[f.block][_state(f)] += 1
            if f.active or self._show_forgotten:
                per[f.block].append(f)
        for b in BLOCKS:
            per[b].sort(key=lambda f: _num(f.id))
        if self._scattered(per):
            # Hundreds of scattered row changes (a Forget over a big store) cost the views more
            # as single inserts/removes than one reset; everything else is applied row by row.
            self.beginResetModel()
            self._rows = per
            self._reindex()
            self._counts = {b: (counts[b][0], counts[b][1], counts[b][2]) for b in BLOCKS}
            self.endResetModel()
            return
        col = self.SALIENCE_COLUMN
        for row, b in enumerate(BLOCKS):
            self._apply(row, b, per[b])
            new_count = (counts[b][0], counts[b][1], counts[b][2])
            if new_count != self._counts[b]:
                self._counts[b] = new_count
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.COLUMNS) - 1))
            if moved and self._rows[b]:  # recalls, importance or the policy changed
                parent = self.index(row, 0)
                self.dataChanged.emit(self.index(0, col, parent),
                                      self.index(len(self._rows[b]) - 1, col, parent))
        self._reindex()

    RESET_ABOVE = 200
    """Structural changes (insert/remove ranges) above which :meth:`set_facts` resets."""

    def _scattered(self, per: dict[str, list[Fact]]) -> bool:
        ranges = 0
        for b in BLOCKS:
            old_ids = [f.id for f in self._rows[b]]
            new_ids = [f.id for f in per[b]]
            if old_ids == new_ids:
                continue
            ops = difflib.SequenceMatcher(None, old_ids, new_ids, autojunk=False).get_opcodes()
            ranges += sum(1 for op in ops if op[0] != "equal")
        return ranges > self.RESET_ABOVE

    def _apply(self, block_row: int, block: str, new: list[Fact]) -> None:
        old = self._rows[block]
        old_ids = [f.id for f in old]
        new_ids = [f.id for f in new]
        parent = self.index(block_row, 0)
        last_col = len(self.COLUMNS) - 1
        ops = difflib.SequenceMatcher(None, old_ids, new_ids, autojunk=False).get_opcodes()
        # Apply from the end so earlier row numbers stay valid.
        for tag, i1, i2, j1, j2 in reversed(ops):
            if tag in ("delete", "replace"):
                self.beginRemoveRows(parent, i1, i2 - 1)
                del old[i1:i2]
                self.endRemoveRows()
            if tag in ("insert", "replace"):
                self.beginInsertRows(parent, i1, i1 + (j2 - j1) - 1)
                old[i1:i1] = new[j1:j2]
                self.endInsertRows()
            if tag == "equal":
                for k in range(i2 - i1):
                    if old[i1 + k] != new[j1 + k]:
                        old[i1 + k] = new[j1 + k]
                        self.dataChanged.emit(
                            self.index(i1 + k, 0, parent), self.index(i1 + k, last_col, parent)
                        )

    # -- Qt interface ----------------------------------------------------------------------------
    # The view calls these once or more per row on every layout (QTreeView lays out every
    # expanded row after an insert): they stay O(1) and never call back into the model.
    def index(self, row: int, column: int, parent: Index = _NO_INDEX) -> QModelIndex:
        if row < 0 or not 0 <= column < 6:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column) if row < len(BLOCKS) else QModelIndex()
        if parent.internalPointer() is None and parent.column() == 0:
            block = BLOCKS[parent.row()]
            if row < len(self._rows[block]):
                return self.createIndex(row, column, block)
        return QModelIndex()

    def hasChildren(self, parent: Index = _NO_INDEX) -> bool:
        if not parent.isValid():
            return True
        if parent.internalPointer() is None and parent.column() == 0:
            b = BLOCKS[parent.row()]
            return bool(self._rows[b]) or self._more[b] or self._floor[b] > 0
        return False

    def parent(self, index: Index | None = None) -> Any:
        if index is None:
            return super().parent()
        if not index.isValid():
            return QModelIndex()
        block = index.internalPointer()
        if block is None:
            return QModelIndex()
        return self.createIndex(BLOCKS.index(block), 0)

    def rowCount(self, parent: Index = _NO_INDEX) -> int:
        if parent.column() > 0:
            return 0
        if not parent.isValid():
            return len(BLOCKS)
        if parent.internalPointer() is None:
            return len(self._rows[BLOCKS[parent.row()]])
        return 0

    def columnCount(self, parent: Index = _NO_INDEX) -> int:
        return len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self.COLUMNS):
            return None
        if role == DISPLAY:
            return self.COLUMNS[section]
        if role == Qt.ItemDataRole.TextAlignmentRole and section in (2, 3, self.SALIENCE_COLUMN):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and section == self.SALIENCE_COLUMN:
            return ("How much Sleep wants to keep the fact: block + protected + recency + "
                    "importance + use. The lowest go first when memory is over its cap; a stale "
                    "fact below the policy's floor is forgotten.")
        return None

    def fact_at(self, index: Index) -> Fact | None:
        if not index.isValid() or index.internalPointer() is None:
            return None
        rows = self._rows[index.internalPointer()]
        return rows[index.row()] if 0 <= index.row() < len(rows) else None

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        # A paint asks every cell on screen for seven roles (font, alignment, foreground, check
        # state, decoration, display, background), each a call into Python: the roles this
        # model never answers return first, and an active fact's font and colour without a
        # lookup beyond its row.
        if role not in _TREE_ROLES or not index.isValid():
            return None
        col = index.column()
        block = index.internalPointer()
        if block is None:
            name = BLOCKS[index.row()]
            active, superseded, forgotten = self._counts[name]
            if role == _DISPLAY_ROLE:
                if col == 0:
                    extra = (f", {superseded} superseded" if superseded else "") + (
                        f", {forgotten} forgotten" if forgotten else "")
                    return f"{name}  ({active} active{extra})"
                return None
            if role == _FONT_ROLE:
                return _font(bold=True)
            if role == ROLE_OBJECT:
                return name
            if role == _TOOLTIP_ROLE and col == 0:
                return _BLOCK_HELP.get(name)
            return None
        rows = self._rows[block]
        row = index.row()
        if not 0 <= row < len(rows):
            return None
        fact = rows[row]
        if role == _DISPLAY_ROLE:
            if col == 0:
                return (PIN_MARK if fact.pinned else "") + one_line(fact.text) + superseded_note(fact)
            if col == 1:
                return fact.category
            if col == 2:
                now = self.now if self.now is not None else self._clock()
                return age_text(now - fact.created_at)
            if col == 3:
                return "—" if fact.source_turn is None else f"#{fact.source_turn}"
            if col == self.SALIENCE_COLUMN:
                return f"{self.salience(fact).total:.1f}"
            return fact.id
        if role == _TEXT_ALIGNMENT_ROLE:
            return _RIGHT if col in (2, 3, self.SALIENCE_COLUMN) else None
        if role in (_FONT_ROLE, _FOREGROUND_ROLE):
            if fact.active:
                return None
            return palette.muted() if role == _FOREGROUND_ROLE else _font(struck=True)
        if role == ROLE_OBJECT:
            return fact
        if role == _TOOLTIP_ROLE:
            state = ("active" if fact.active else
                     f"superseded{superseded_note(fact, short=False)}" if fact.superseded
                     else "forgotten") + (", pinned" if fact.pinned else "")
            turn = "—" if fact.source_turn is None else str(fact.source_turn)
            return plain_tooltip(
                f"{fact.text}\n\n{fact.id} · {fact.block} · {fact.category} · {state}\n"
                f"created {clock_text(fact.created_at)} · updated {clock_text(fact.updated_at)} · "
                f"source turn {turn}\n{self.salience(fact).explain()}"
            )
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return _NO_FLAGS
        return _SELECTABLE if index.internalPointer() is None else _LEAF


def superseded_note(fact: Fact, *, short: bool = True) -> str:
    """``  — until 12 Mar, superseded by m_41`` for a superseded fact, else ``""``."""
    if not fact.superseded:
        return ""
    when = "?" if fact.valid_until is None else datetime.fromtimestamp(fact.valid_until).strftime(
        "%d %b" if short else "%d %b %Y %H:%M")
    text = f"until {when}, superseded by {fact.superseded_by}"
    return f"  — {text}" if short else f" ({text})"


_BLOCK_HELP = {
    "persona": "Facts about the assistant itself.",
    "human": "Stable facts about you: identity, preferences, commitments.",
    "episodes": "Events anchored in time or place.",
    "scratch": "Unconsolidated facts from recent conversation; Sleep sorts them.",
}


class FactFilterProxy(QSortFilterProxyModel):
    """Case-insensitive text filter over a fact's text, category, id and source turn (what
    :func:`~nocturne_desktop.core.store.reads.matching_ids` matches over the whole store); a block
    stays while a child matches. The fact is matched directly, not through ``data()`` of every
    column: the filter runs once per loaded row, and the Age and Salience cells are computed."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)
        self._needle = ""

    def setFilterFixedString(self, pattern: str) -> None:
        self._needle = pattern.casefold()
        super().setFilterFixedString(pattern)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if not self.filterRegularExpression().pattern():
            return True
        if not source_parent.isValid():
            return False  # a block row is kept by recursive filtering when a fact matches
        model = self.sourceModel()
        if isinstance(model, BlockTreeModel) and self._needle:
            fact = model.fact_at(model.index(source_row, 0, source_parent))
            if fact is None:
                return False
            n = self._needle
            return (n in fact.text.casefold() or n in fact.category.casefold() or n in fact.id
                    or (fact.source_turn is not None and n in f"#{fact.source_turn}"))
        return super().filterAcceptsRow(source_row, source_parent)


# --- timeline -----------------------------------------------------------------------------------

_VERBS = {"restore": "restored", "undo": "undid", "redo": "redid", "edit": "edited", "add": "added",
          "pin": "pinned", "unpin": "unpinned", "forget": "forgot", "bring-back": "brought back",
          "recall": "brought back", "import": "imported"}


def version_label(label: str) -> str:
    """A version's label in words: the store's own labels (``pass:dedupe:before``,
    ``consolidation:start``, ``restore:s0003``, ``undo:sleep 3``) are internal names."""
    parts = label.split(":")
    if parts[0] == "pass" and len(parts) == 3 and parts[2] in ("before", "after"):
        return f"{parts[2]} {parts[1].capitalize()}"
    if label == "consolidation:start":
        return "sleep started"
    if len(parts) == 2 and parts[0] in _VERBS:
        what = parts[1].strip()
        if what.startswith("sleep "):
            what = "sleep #" + what.removeprefix("sleep ").strip()
        return f"{_VERBS[parts[0]]} {what}"
    return label.replace(":", " ")


class UndoneSleeps:
    """Which sleeps were taken back, followed one version at a time (see :func:`undone_sleeps`)."""

    def __init__(self) -> None:
        self._first_of: dict[str, int] = {}
        self.undone: dict[int, Version] = {}

    def feed(self, v: Version) -> int | None:
        """Take ``v`` in; the sleep whose undone state it changed, if any."""
        if v.sleep_id is not None:
            self._first_of.setdefault(f"s{v.seq:04d}", v.sleep_id)
            return None
        verb, _, what = v.label.partition(":")
        if verb == "restore" and what in self._first_of:
            sid = self._first_of[what]
            self.undone[sid] = v
            return sid
        if verb in ("undo", "redo") and what.startswith("sleep "):
            try:
                sid = int(what.removeprefix("sleep ").strip())
            except ValueError:
                return None
            if verb == "undo":
                self.undone[sid] = v
            else:
                self.undone.pop(sid, None)
            return sid
        return None


def undone_sleeps(versions: Sequence[Version]) -> dict[int, Version]:
    """Each sleep whose changes were taken back, with the version that did it: an undo of the
    sleep (``undo:sleep 3``, unless redone after) or a restore of the version it started from."""
    tracker = UndoneSleeps()
    for v in versions:
        tracker.feed(v)
    return tracker.undone


@dataclass(eq=False)
class _Group:
    key: tuple[str, int]
    versions: list[Version] = field(default_factory=list)
    row: int = 0


class TimelineModel(QAbstractItemModel):
    """Versions grouped by sleep: top-level rows are groups, children are versions.

    New versions are appended as row inserts (into the last group or as new groups): by id with
    :meth:`append` (the versions and sleeps a commit wrote, O(change)), or by comparing a whole
    list with :meth:`set_versions`; anything else (a rewritten history, which the store never
    does) resets the model.
    """

    COLUMNS = ("Version", "Label", "Time", "Active")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._groups: list[_Group] = []
        self._sleeps: dict[int, SleepRecord] = {}
        self._undone: dict[int, Version] = {}
        self._tracker = UndoneSleeps()
        self._group_of: dict[tuple[str, int], _Group] = {}
        self._count = 0
        self._older: list[_Group] = []
        """Groups before the first one shown (see :attr:`SHOWN`): a view lays out every row it
        shows after each insert, calling back into Python per row, so 1,000 sleeps are not all
        rows at once; :meth:`show_older` brings them in, a chunk at a time."""

    SHOWN = 100
    """Groups shown after :meth:`set_versions`; older ones come with :meth:`show_older`."""

    @staticmethod
    def _key(v: Version, prev: Version | None, prev_key: tuple[str, int] | None) -> tuple[str, int]:
        if v.sleep_id is not None:
            return ("sleep", v.sleep_id)
        if prev is not None and prev.sleep_id is None and prev_key is not None:
            return prev_key
        return ("edits", v.seq)

    def set_versions(self, versions: Sequence[Version], sleeps: Sequence[SleepRecord] = ()) -> None:
        old_sleeps, old_undone = self._sleeps, self._undone
        self._sleeps = {s.id: s for s in sleeps}
        self._tracker = UndoneSleeps()
        for v in versions:
            self._tracker.feed(v)
        self._undone = self._tracker.undone
        self._count = len(versions)
        groups: list[_Group] = []
        prev: Version | None = None
        for v in versions:
            key = self._key(v, prev, groups[-1].key if groups else None)
            if not groups or groups[-1].key != key:
                groups.append(_Group(key, row=len(groups)))
            groups[-1].versions.append(v)
            prev = v
        if self._older or len(groups) > self.SHOWN or not self._is_extension(groups):
            self.beginResetModel()
            self._older, self._groups = groups[: -self.SHOWN], groups[-self.SHOWN :]
            for row, g in enumerate(self._older):
                g.row = -1 - row  # not shown
            for row, g in enumerate(self._groups):
                g.row = row
            self._group_of = {g.key: g for g in groups}
            self.endResetModel()
            return
        last_col = len(self.COLUMNS) - 1
        for g_new in groups[: len(self._groups)]:
            g_old = self._groups[g_new.row]
            n_old, n_new = len(g_old.versions), len(g_new.versions)
            if n_new > n_old:
                parent = self.index(g_old.row, 0)
                self.beginInsertRows(parent, n_old, n_new - 1)
                g_old.versions.extend(g_new.versions[n_old:])
                self.endInsertRows()
                self.dataChanged.emit(self.index(g_old.row, 0), self.index(g_old.row, last_col))
        if len(groups) > len(self._groups):
            first = len(self._groups)
            self.beginInsertRows(QModelIndex(), first, len(groups) - 1)
            self._groups.extend(groups[first:])
            self._group_of.update((g.key, g) for g in groups[first:])
            self.endInsertRows()
        for g in self._groups:
            sid = g.key[1]
            if g.key[0] == "sleep" and (old_sleeps.get(sid) != self._sleeps.get(sid)
                                        or old_undone.get(sid) != self._undone.get(sid)):
                self.dataChanged.emit(self.index(g.row, 0), self.index(g.row, last_col))

    def append(self, versions: Sequence[Version], sleeps: Sequence[SleepRecord] = ()) -> list[int]:
        """Versions newer than the last shown (as rows at the end) and sleeps begun or
        finished (their group titles change): O(change). Returns the rows of the groups added."""
        last_col = len(self.COLUMNS) - 1
        touched: set[int] = set()
        for rec in sleeps:
            if self._sleeps.get(rec.id) != rec:
                self._sleeps[rec.id] = rec
                touched.add(rec.id)
        last = self._groups[-1].versions[-1] if self._groups and self._groups[-1].versions else None
        added: list[int] = []
        for v in sorted(versions, key=lambda v: v.seq):
            if last is not None and v.seq <= last.seq:
                continue
            sid = self._tracker.feed(v)
            if sid is not None:
                touched.add(sid)
            key = self._key(v, last, self._groups[-1].key if self._groups else None)
            g = self._groups[-1] if self._groups else None
            if g is not None and g.key == key:
                n = len(g.versions)
                self.beginInsertRows(self.index(g.row, 0), n, n)
                g.versions.append(v)
                self.endInsertRows()
                self.dataChanged.emit(self.index(g.row, 0), self.index(g.row, last_col))
            else:
                row = len(self._groups)
                self.beginInsertRows(QModelIndex(), row, row)
                g = _Group(key, [v], row=row)
                self._groups.append(g)
                self._group_of[key] = g
                self.endInsertRows()
                added.append(row)
            self._count += 1
            last = v
        for sid in touched:
            g = self._group_of.get(("sleep", sid))
            if g is not None and g.row >= 0:
                self.dataChanged.emit(self.index(g.row, 0), self.index(g.row, last_col))
        return added

    def version_count(self) -> int:
        return self._count

    @property
    def older(self) -> int:
        """Groups not shown yet (before the first row)."""
        return len(self._older)

    def show_older(self, n: int | None = None) -> int:
        """Show up to ``n`` (default :attr:`SHOWN`) more of the older groups, as rows inserted
        at the top; returns how many."""
        take = min(len(self._older), self.SHOWN if n is None else n)
        if take <= 0:
            return 0
        chunk = self._older[-take:]
        self.beginInsertRows(QModelIndex(), 0, take - 1)
        del self._older[-take:]
        self._groups[0:0] = chunk
        for row, g in enumerate(self._groups):
            g.row = row
        self.endInsertRows()
        return take

    def reveal(self, seq: int) -> QModelIndex:
        """The row of version ``seq``, showing older groups first if it is in one of them."""
        idx = self.index_of(seq)
        if not idx.isValid() and self._older and self._older[0].versions[0].seq <= seq:
            # the groups up to the one that holds it, as one insert (each insert lays out
            # every row the view shows again), in whole steps of SHOWN as paging would
            starts = [g.versions[0].seq for g in self._older]
            need = len(self._older) - (bisect.bisect_right(starts, seq) - 1)
            self.show_older(-(-need // self.SHOWN) * self.SHOWN)
            idx = self.index_of(seq)
        while not idx.isValid() and self._older and self._older[0].versions[0].seq <= seq:
            self.show_older()
            idx = self.index_of(seq)
        return idx

    def latest(self) -> Version | None:
        return self._groups[-1].versions[-1] if self._groups and self._groups[-1].versions else None

    def _is_extension(self, groups: list[_Group]) -> bool:
        if len(groups) < len(self._groups):
            return False
        for g_old, g_new in zip(self._groups, groups, strict=False):
            if g_old.key != g_new.key or g_new.versions[: len(g_old.versions)] != g_old.versions:
                return False
        return True

    # -- lookups ---------------------------------------------------------------------------------
    def version_at(self, index: Index) -> Version | None:
        if not index.isValid():
            return None
        g = index.internalPointer()
        if isinstance(g, _Group):
            return g.versions[index.row()] if 0 <= index.row() < len(g.versions) else None
        return None

    def sleep_of(self, index: Index) -> int | None:
        """The sleep id of a group row or of a version row inside a sleep group."""
        if not index.isValid():
            return None
        g = index.internalPointer()
        group = g if isinstance(g, _Group) else self._groups[index.row()]
        return group.key[1] if group.key[0] == "sleep" else None

    def index_of(self, seq: int) -> QModelIndex:
        for g in reversed(self._groups):  # usually one of the latest
            if g.versions and g.versions[0].seq > seq:
                continue
            for r, v in enumerate(g.versions):
                if v.seq == seq:
                    return self.index(r, 0, self.index(g.row, 0))
        return QModelIndex()

    def all_versions(self) -> list[Version]:
        return [v for g in (*self._older, *self._groups) for v in g.versions]

    def last_sleep(self) -> int | None:
        """The id of the latest sleep that made versions (what "Undo last sleep" undoes)."""
        for g in reversed((*self._older, *self._groups)):
            if g.key[0] == "sleep":
                return g.key[1]
        return None

    def sleep_start(self, sleep_id: int) -> Version | None:
        """The first version ``sleep_id`` made (the snapshot taken when it began)."""
        for g in (*self._older, *self._groups):
            if g.key == ("sleep", sleep_id) and g.versions:
                return g.versions[0]
        return None

    # -- Qt interface ----------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: Index = _NO_INDEX) -> QModelIndex:
        if row < 0 or not 0 <= column < 4:  # O(1), no call back into the model (see above)
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column) if row < len(self._groups) else QModelIndex()
        if parent.internalPointer() is None and parent.column() == 0:
            g = self._groups[parent.row()]
            if row < len(g.versions):
                return self.createIndex(row, column, g)
        return QModelIndex()

    def hasChildren(self, parent: Index = _NO_INDEX) -> bool:
        if not parent.isValid():
            return bool(self._groups)
        return parent.internalPointer() is None and parent.column() == 0

    def parent(self, index: Index | None = None) -> Any:
        if index is None:
            return super().parent()
        if not index.isValid():
            return QModelIndex()
        g = index.internalPointer()
        if isinstance(g, _Group):
            return self.createIndex(g.row, 0)
        return QModelIndex()

    def rowCount(self, parent: Index = _NO_INDEX) -> int:
        if parent.column() > 0:
            return 0
        if not parent.isValid():
            return len(self._groups)
        if parent.internalPointer() is None:
            return len(self._groups[parent.row()].versions)
        return 0

    def columnCount(self, parent: Index = _NO_INDEX) -> int:
        return len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == DISPLAY and 0 <= section < len(self.COLUMNS):
            return self.COLUMNS[section]
        return None

    def _group_title(self, g: _Group) -> str:
        if g.key[0] == "sleep":
            rec = self._sleeps.get(g.key[1])
            status = rec.status if rec is not None else ""
            when = clock_text(rec.started_at) if rec is not None else clock_text(g.versions[0].created_at)
            title = f"Sleep #{g.key[1]} · {status} · {when}" if status else f"Sleep #{g.key[1]} · {when}"
            undo = self._undone.get(g.key[1])
            if undo is not None:
                title += f" · undone ({undo.id}, {clock_text(undo.created_at)})"
            return title
        labels = {v.label.split(":", 1)[0] for v in g.versions}
        if labels == {"restore"}:
            return "Restore" if len(g.versions) == 1 else f"Restores ({len(g.versions)})"
        return "Snapshots"

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid():
            return None
        col = index.column()
        g = index.internalPointer()
        if g is None:
            group = self._groups[index.row()]
            if role == DISPLAY:
                if col == 0:
                    return self._group_title(group)
                if col == 3:
                    return str(group.versions[-1].active_count) if group.versions else ""
                return None
            if role == Qt.ItemDataRole.FontRole:
                f = QFont()
                f.setBold(True)
                return f
            if role == ROLE_OBJECT:
                return group.key
            return None
        v = self.version_at(index)
        if v is None:
            return None
        if role == DISPLAY:
            return (v.id, version_label(v.label), clock_text(v.created_at), str(v.active_count))[col]
        if role == ROLE_OBJECT:
            return v
        if role == Qt.ItemDataRole.ToolTipRole:
            return plain_tooltip(f"{v.id} · {version_label(v.label)}  ({v.label})\n"
                                 f"{datetime.fromtimestamp(v.created_at):%c}\n"
                                 f"{v.active_count} active facts")
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 3:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return _NO_FLAGS
        return _SELECTABLE if index.internalPointer() is None else _LEAF


# --- flat tables --------------------------------------------------------------------------------


class RowsModel(QAbstractTableModel):
    """A read-only table over a list of objects; subclasses define ``COLUMNS`` and ``cell``."""

    COLUMNS: tuple[str, ...] = ()
    NUMERIC: frozenset[int] = frozenset()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Any] = []

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rows(self) -> list[Any]:
        return list(self._rows)

    def rowCount(self, parent: Index = _NO_INDEX) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = _NO_INDEX) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.TextAlignmentRole:
            if section in self.NUMERIC:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            return None
        if role != DISPLAY:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section] if 0 <= section < len(self.COLUMNS) else None
        return str(section + 1)

    def cell(self, obj: Any, col: int, role: int) -> Any:
        raise NotImplementedError

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        obj = self._rows[index.row()]
        if role == ROLE_OBJECT:
            return obj
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in self.NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return self.cell(obj, index.column(), role)

    def flags(self, index: Index) -> Qt.ItemFlag:
        return _SELECTABLE if index.isValid() else _NO_FLAGS


def decided_text(decided_by: str | None, *, short: bool = False) -> str:
    """Who decided; the rules are marked with ⚙ so they stand apart from the model. A label an
    older version stored (``policy-engine``) is shown by its current name."""
    if not decided_by:
        return ""
    if not is_rule(decided_by):
        return decided_by
    name = decided_by_label(decided_by)
    return f"⚙ {name}" if short else f"⚙ the {name.replace('-', ' ')}"


def is_enforced(decided_by: str | None) -> bool:
    """Whether a rule (not the model, the person or the encoder) decided."""
    return is_rule(decided_by)


class DiffTableModel(RowsModel):
    """One diff entry per row, side by side: the fact at ``a`` and at ``b``."""

    COLUMNS = ("Status", "Before (a)", "After (b)", "Pass", "Decided by", "Why")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.show_kept = False
        self._diff: Diff | None = None

    def set_diff(self, diff: Diff | None) -> None:
        old = self._rows
        self._diff = diff
        rows: list[DiffEntry] = []
        if diff is not None:
            rows = [*diff.changed, *diff.superseded, *diff.forgotten, *diff.added]
            if self.show_kept:
                rows += list(diff.kept)
        self.set_rows(rows)
        if len(old) > RELEASE_SLICE:
            # the rows (a diff with kept facts: one per fact) hold the old diff's entries: freed
            # a slice per turn once the old diff itself is let go, not all in one slot
            release_later(old)

    def set_show_kept(self, on: bool) -> None:
        self.show_kept = on
        self.set_diff(self._diff)

    @staticmethod
    def _side(f: Fact | None) -> str:
        if f is None:
            return "—"
        state = "" if f.active else "(superseded) " if f.superseded else "(forgotten) "
        return f"{state}[{f.block}] {one_line(f.text, 300)}"

    def cell(self, e: DiffEntry, col: int, role: int) -> Any:
        if role == DISPLAY:
            if col == 0:
                return f"{e.status} {e.item_id}"
            if col == 1:
                return self._side(e.before)
            if col == 2:
                return self._side(e.after)
            if col == 3:
                return e.pass_name or ""
            if col == 4:
                return decided_text(e.decided_by, short=True)
            why = one_line(e.reason or "", 300)
            return f"{e.policy}: {why}" if e.policy else why
        if role == Qt.ItemDataRole.BackgroundRole:
            return palette.tint(e.status)
        if role == Qt.ItemDataRole.ForegroundRole and col == 4 and is_enforced(e.decided_by):
            return palette.accent("enforced")
        if role == Qt.ItemDataRole.FontRole and col == 0:
            f = QFont()
            f.setBold(True)
            return f
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [f"{e.item_id}: {e.status}"]
            if e.before is not None:
                lines.append(f"before [{e.before.block}]: {e.before.text}")
            if e.after is not None:
                lines.append(f"after [{e.after.block}]: {e.after.text}")
            if e.sources:
                lines.append("sources:")
                lines += [f"  {s.id} [{s.block}]: {s.text}" for s in e.sources]
            if e.pass_name:
                lines.append(f"pass {e.pass_name} · decided by {decided_text(e.decided_by)}"
                             + (f" · policy {e.policy}" if e.policy else ""))
            if e.reason:
                lines.append(f"reason: {e.reason}")
            return plain_tooltip("\n".join(lines))
        return None


class RejectedTableModel(RowsModel):
    """The refused mutations in a diff's range, with their reasons."""

    COLUMNS = ("Version", "Pass", "Kind", "Item", "Decided by", "Rejected because")

    def cell(self, r: MutationRow, col: int, role: int) -> Any:
        m = r.mutation
        if role == DISPLAY:
            return (
                "" if r.seq is None else f"s{r.seq:04d}",
                m.pass_name,
                m.kind,
                m.item_id,
                decided_text(m.decided_by, short=True),
                one_line(m.rejection_reason or "", 300),
            )[col]
        if role == Qt.ItemDataRole.BackgroundRole:
            return palette.tint("rejected", strength=0.12 if not palette.is_dark() else 0.18)
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [f"{m.pass_name} {m.kind} {m.item_id}: refused", m.rejection_reason or ""]
            if m.reason:
                lines.append(f"the proposal's reason: {m.reason}")
            refusal = from_row(m)
            if isinstance(refusal, Refusal):
                if refusal.proposal is not None and refusal.proposal is not ABSENT:
                    lines.append(f"proposal: {refusal.proposal}")
                if refusal.raw:
                    lines.append(f"reply: {refusal.raw[:600]}")
            return plain_tooltip("\n".join(lines))
        return None


@dataclass
class PassRow:
    name: str
    status: str = "—"
    figures: Any = None
    started: float | None = None
    message: str = ""


class PassTableModel(RowsModel):
    """The live per-pass table of the Sleep panel (fixed rows: the four passes)."""

    COLUMNS = ("Pass", "Status", "Input", "Proposed", "Accepted", "Rejected", "By rules",
               "Active after", "Before", "After", "Elapsed")
    """Proposed, Accepted and Rejected are the model's proposals and what came of them; By rules
    the rules' own changes (so two proposals never read "Proposed 2 · Accepted 4")."""
    NUMERIC = frozenset({2, 3, 4, 5, 6, 7, 10})

    def __init__(self, parent: Any = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self._clock = clock
        self.reset_passes()

    def reset_passes(self) -> None:
        self.set_rows([PassRow(p) for p in PASSES])

    def _row(self, name: str) -> int:
        for i, r in enumerate(self._rows):
            if r.name == name:
                return i
        raise KeyError(name)

    def update_pass(self, name: str, status: str, figures: Any = None, message: str = "") -> None:
        i = self._row(name)
        r = self._rows[i]
        r.status = status
        if figures is not None:
            r.figures = figures
        r.message = message or r.message
        r.started = self._clock() if status == "running" else None
        self.dataChanged.emit(self.index(i, 0), self.index(i, len(self.COLUMNS) - 1))

    def mark_unfinished(self, status: str) -> None:
        """After a cancel or failure: the running pass and those never reached."""
        for i, r in enumerate(self._rows):
            if r.status in ("running", "—", "waiting"):
                r.status = status if r.status == "running" else "skipped"
                r.started = None
                self.dataChanged.emit(self.index(i, 0), self.index(i, len(self.COLUMNS) - 1))

    def set_waiting(self) -> None:
        self.set_rows([PassRow(p, status="waiting") for p in PASSES])

    def tick(self) -> None:
        """Refresh the elapsed cell of a running pass (the running timer)."""
        for i, r in enumerate(self._rows):
            if r.started is not None:
                idx = self.index(i, 10)
                self.dataChanged.emit(idx, idx)

    def cell(self, r: PassRow, col: int, role: int) -> Any:
        f = r.figures
        if role == DISPLAY:
            if col == 0:
                return r.name.capitalize()
            if col == 1:
                return r.status
            if col == 10:
                if r.started is not None:
                    return f"{self._clock() - r.started:.1f} s…"
                return "" if f is None or r.status == "running" else f"{f.elapsed_s:.2f} s"
            if f is None:
                return ""
            if col in (3, 4, 5, 6, 7) and r.status == "running":
                return ""
            if col == 8:
                return f.snapshot_before or ""
            if col == 9:
                return f.snapshot_after or ""
            attr = {2: "input", 3: "proposed", 4: "accepted_proposals", 5: "rejected", 6: "enforced",
                    7: "active_after"}[col]
            return str(getattr(f, attr))
        if role == Qt.ItemDataRole.ForegroundRole and col == 1:
            key = {"done": "ok", "error": "error", "running": "running", "cancelled": "error"}.get(r.status)
            return palette.accent(key) if key else None
        if role == Qt.ItemDataRole.ToolTipRole:
            parts = []
            if r.message:
                parts.append(r.message)
            if f is not None:
                parts.append(f"{f.candidates} candidates · {f.calls} model call(s) · "
                             f"{f.prompt_tokens}+{f.completion_tokens} tokens"
                             f"{' (estimated)' if f.usage_estimated else ''} · model {f.model_s:.2f} s")
                if f.salvaged:
                    parts.append("a truncated reply was salvaged (complete entries only, each gated)")
                parts += f.errors
            return plain_tooltip("\n".join(parts)) if parts else None
        return None


class QuizTableModel(RowsModel):
    """The Wake panel's questions: the fact, the question, the agent's answer, the score."""

    COLUMNS = ("Fact", "Question", "Answer", "Score", "Result", "Attempts")
    NUMERIC = frozenset({3, 5})

    def cell(self, q: Any, col: int, role: int) -> Any:
        if role == DISPLAY:
            if col == 0:
                return f"{q.fact_id}: {one_line(q.fact_text, 200)}"
            if col == 1:
                return one_line(q.question, 300)
            if col == 2:
                return one_line(q.answer, 300)
            if col == 3:
                return f"{q.score:.2f}"
            if col == 4:
                return "✓ correct" if q.correct else "✗ wrong"
            return str(q.attempts)
        if role == Qt.ItemDataRole.ForegroundRole and col == 4:
            return palette.accent("ok" if q.correct else "error")
        if role == Qt.ItemDataRole.ToolTipRole:
            notes = []
            refusals = list(getattr(q, "leak_refusals", ()) or ())
            if refusals:
                notes.append(f"{len(refusals)} generated question(s) refused for leaking the answer:")
                notes += [f"  {r}" for r in refusals]
            if getattr(q, "template_fallback", False):
                notes.append("question from the fallback template")
            text = f"{q.fact_text}\n\nQ: {q.question}\nA: {q.answer}"
            return plain_tooltip(text + ("\n\n" + "\n".join(notes) if notes else ""))
        return None
