"""The Memory tab's block tree (Qt): the four blocks and their facts, over :class:`BlockPaging`.

:class:`BlockTreeModel` is a thin adapter: which rows are loaded, and every change to them, is
decided by the Qt-free :class:`~nocturne_desktop.ui.models.paging.BlockPaging`; its events
become ``beginInsertRows``/``endInsertRows``, ``dataChanged`` and resets here, and the cells
are drawn from the facts. :class:`FactFilterProxy` filters the loaded rows by text.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QSortFilterProxyModel, Qt

from nocturne_desktop.core.policy import RetentionPolicy, SalienceParts
from nocturne_desktop.core.store.reads import ChangedRows
from nocturne_desktop.core.types import BLOCKS, Fact, Strength
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models import paging
from nocturne_desktop.ui.models.pagers import FactPager, FirstPages, StatePager, read_first_pages
from nocturne_desktop.ui.models.paging import BlockPaging, Loaded, PagingEvents, Position
from nocturne_desktop.ui.models.release import release_later
from nocturne_desktop.ui.models.roles import (
    DISPLAY,
    DISPLAY_ROLE,
    FONT_ROLE,
    FOREGROUND_ROLE,
    LEAF,
    NO_FLAGS,
    NO_INDEX,
    RIGHT,
    ROLE_OBJECT,
    SELECTABLE,
    TEXT_ALIGNMENT_ROLE,
    TOOLTIP_ROLE,
    Index,
    font,
)
from nocturne_desktop.ui.models.text import (
    PIN_MARK,
    age_text,
    clock_text,
    one_line,
    plain_tooltip,
    superseded_note,
)

_TREE_ROLES = frozenset({DISPLAY_ROLE, TOOLTIP_ROLE, FONT_ROLE, FOREGROUND_ROLE,
                         TEXT_ALIGNMENT_ROLE, ROLE_OBJECT})
"""The roles :class:`BlockTreeModel` answers (a paint asks for three more, always None)."""

BLOCK_HELP = {
    "persona": "Facts about the assistant itself.",
    "human": "Stable facts about you: identity, preferences, commitments.",
    "episodes": "Events anchored in time or place.",
    "scratch": "Unconsolidated facts from recent conversation; Sleep sorts them.",
}
"""A block row's tooltip."""


class _TreeEvents(PagingEvents):
    """The paging's events as the tree model's row signals (one Qt call each). It holds the
    model weakly: the model owns the paging, which owns this, and a cycle through a Qt object
    would wait for the cyclic collector to free it."""

    def __init__(self, model: BlockTreeModel) -> None:
        self.model = cast("BlockTreeModel", weakref.proxy(model))
        self.last_col = len(model.COLUMNS) - 1

    def _parent(self, block: str) -> QModelIndex:
        return self.model.index(BLOCKS.index(block), 0)

    def resetting(self) -> None:
        self.model.beginResetModel()

    def reset(self) -> None:
        self.model.endResetModel()

    def inserting(self, block: str, first: int, last: int) -> None:
        self.model.beginInsertRows(self._parent(block), first, last)

    def inserted(self, block: str) -> None:
        self.model.endInsertRows()

    def removing(self, block: str, first: int, last: int) -> None:
        self.model.beginRemoveRows(self._parent(block), first, last)

    def removed(self, block: str) -> None:
        self.model.endRemoveRows()

    def changed(self, block: str, first: int, last: int) -> None:
        m, parent = self.model, self._parent(block)
        m.dataChanged.emit(m.index(first, 0, parent), m.index(last, self.last_col, parent))

    def salience_changed(self, block: str, first: int, last: int) -> None:
        m, parent, col = self.model, self._parent(block), self.model.SALIENCE_COLUMN
        m.dataChanged.emit(m.index(first, col, parent), m.index(last, col, parent))

    def counted(self, block: str) -> None:
        m, row = self.model, BLOCKS.index(block)
        m.dataChanged.emit(m.index(row, 0), m.index(row, self.last_col))


class BlockTreeModel(QAbstractItemModel):
    """The four blocks (top level) and their facts (children), as :attr:`paging` loads them.

    Fed lazily from a pager (:meth:`attach`, then ``fetchMore`` or :meth:`fetch_page` as the
    view scrolls, :meth:`apply_changes` for each commit) or from a list (:meth:`set_facts`);
    see :class:`~nocturne_desktop.ui.models.paging.BlockPaging`. Forgotten and superseded facts
    are listed only when :meth:`set_show_forgotten` is on, and drawn greyed; the block label
    counts them apart ("2 active, 1 superseded, 1 forgotten"). The Salience column and each
    fact's tooltip give its salience and its terms (S-RET-2), from the importance and recalls
    loaded and the retention policy.
    """

    COLUMNS = ("Fact", "Category", "Age", "Turn", "Id", "Salience")
    SALIENCE_COLUMN = 5
    PAGE = paging.PAGE
    WINDOW = paging.WINDOW
    TOTAL = paging.TOTAL
    RESET_ABOVE = paging.RESET_ABOVE

    def __init__(self, parent: Any = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self._clock = clock
        self.paging = BlockPaging(_TreeEvents(self), page=self.PAGE, window=self.WINDOW,
                                  total=self.TOTAL, reset_above=self.RESET_ABOVE)
        self.now: float | None = None
        """Fixed "now" for ages (a historical version is aged from its own time)."""
        self._policy = RetentionPolicy()
        self.view_fetches = True
        """Whether ``fetchMore`` from a view fetches. QTreeView calls it on every layout of an
        expanded parent, then again once per row that might fit the viewport (it assumes a
        fetch brings one row): with pages of 500 that is every fact after a few layouts. A
        panel that fetches by what is on screen (:meth:`fetch_page`) turns this off."""

    # -- feeding ---------------------------------------------------------------------------------
    @property
    def show_forgotten(self) -> bool:
        return self.paging.show_forgotten

    @property
    def pager(self) -> FactPager | None:
        return self.paging.pager

    @property
    def fetches(self) -> int:
        """Pages fetched since :meth:`attach` (tests and the benchmark read it)."""
        return self.paging.fetches

    def set_show_forgotten(self, on: bool) -> None:
        self.paging.set_show_forgotten(on)

    def facts(self, block: str) -> list[Fact]:
        """The rows of ``block`` loaded so far (all of them for a list)."""
        return self.paging.facts(block)

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return dict(self.paging.counts)

    def active_count(self) -> int:
        return self.paging.active_count()

    def is_empty(self) -> bool:
        return self.paging.is_empty()

    def salience(self, fact: Fact) -> SalienceParts:
        """``fact``'s salience now (or at :attr:`now`), term by term."""
        now = self.now if self.now is not None else self._clock()
        return self._policy.salience_parts(fact, now, self.paging.strengths.get(fact.id))

    def set_policy(self, policy: RetentionPolicy) -> None:
        """A new retention policy: the Salience cells of the loaded rows change."""
        if policy != self._policy:
            self._policy = policy
            events = self.paging.events
            for b in BLOCKS:
                if self.paging.rows[b]:
                    events.salience_changed(b, 0, len(self.paging.rows[b]) - 1)

    def attach(self, pager: FactPager, *, policy: RetentionPolicy | None = None,
               counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Show ``pager``'s facts, the first :attr:`PAGE` of each block (one reset of a
        prebuilt structure: O(page)). ``counts``: the per-block counts when the caller has
        them (read with the change), else the pager's. The pages are read here, on the
        caller's thread; :func:`read_first_pages` off the GUI thread and :meth:`show_pages`
        on it split the same work in two."""
        if policy is not None:
            self._policy = policy
        self.show_pages(pager, read_first_pages(pager, self.paging.show_forgotten, counts,
                                                self.PAGE))

    def show_pages(self, pager: FactPager, pages: FirstPages) -> bool:
        """Show ``pages`` (read with :func:`read_first_pages`, on any thread, with its own
        store) in one reset, paging on from ``pager`` afterwards. False, changing nothing,
        when they were read with the other "show forgotten" setting."""
        old = self.paging.pager
        if not self.paging.show_pages(pager, pages):
            return False
        self._let_go(old)
        return True

    def set_counts(self, counts: Mapping[str, tuple[int, int, int]]) -> None:
        """New per-block counts (a commit's, read with it): the block rows change, no read."""
        self.paging.set_counts(counts)

    def loaded(self) -> Loaded | None:
        """What the tree holds now, to show again later with :meth:`show_loaded` (None: it
        shows a list, not a pager); holding it costs nothing."""
        return self.paging.loaded()

    def show_loaded(self, held: Loaded) -> bool:
        """Show again what :meth:`loaded` returned (one reset, no read): the live rows kept
        while a past version showed. False, changing nothing, if "show forgotten" changed
        since."""
        old = self.paging.pager
        if not self.paging.show_loaded(held):
            return False
        self._let_go(old)
        return True

    def _let_go(self, old: FactPager | None) -> None:
        """A past version's whole state the tree no longer shows: freed in slices, not in this
        slot."""
        if isinstance(old, StatePager) and old is not self.paging.pager:
            release_later(*old.let_go())

    def keep_first_pages(self) -> bool:
        """Keep only the first :attr:`PAGE` rows of each block, without a read (one reset);
        False, changing nothing, when a block's first page is not loaded (the window dropped
        its top) or the rows come from a list."""
        return self.paging.keep_first_pages()

    def reload(self, counts: Mapping[str, tuple[int, int, int]] | None = None) -> None:
        """Read the first pages again (after a change too big to apply row by row)."""
        self.paging.reload(counts)

    def canFetchMore(self, parent: Index) -> bool:
        if not parent.isValid() or parent.internalPointer() is not None:
            return False
        return 0 <= parent.row() < len(BLOCKS) and self.paging.can_fetch(BLOCKS[parent.row()])

    def fetchMore(self, parent: Index) -> None:
        if self.view_fetches and self.canFetchMore(parent):
            self.paging.fetch(BLOCKS[parent.row()])

    def fetch_page(self, block: str) -> bool:
        """Fetch the next page of ``block``; False if it had none."""
        return self.paging.fetch_page(block)

    def can_fetch_earlier(self, block: str) -> bool:
        """Whether the window dropped rows at the top of ``block`` (:meth:`fetch_earlier`)."""
        return self.paging.can_fetch_earlier(block)

    def fetch_earlier(self, block: str) -> int:
        """Read the page before ``block``'s first loaded row again (rows the window dropped),
        dropping pages at its end past :attr:`WINDOW`; the rows inserted at its top."""
        return self.paging.fetch_earlier(block)

    def fetch_all(self, block: str) -> None:
        """Fetch every remaining page of ``block`` (tests; a person scrolls instead): past
        :attr:`WINDOW` rows, the last of them stay loaded."""
        self.paging.fetch_all(block)

    def _index_at(self, pos: Position | None) -> QModelIndex:
        if pos is None:
            return QModelIndex()
        return self.index(pos[1], 0, self.index(BLOCKS.index(pos[0]), 0))

    def index_of(self, item_id: str) -> QModelIndex:
        """The row of ``item_id`` if it is loaded (an invalid index otherwise)."""
        return self._index_at(self.paging.position(item_id))

    def reveal(self, item_id: str) -> QModelIndex:
        """The row of ``item_id``, loading the rows of its block up to it (or around it) first
        if they were not loaded yet. Invalid if it is not listed."""
        return self._index_at(self.paging.reveal(item_id))

    def apply_changes(self, rows: ChangedRows) -> None:
        """One commit's rows, read by id: inserts, removes and ``dataChanged`` for the loaded
        rows it touches (a fact beyond a block's cursor waits for its page). O(change)."""
        self.paging.apply_changes(rows)

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
        moved = False  # did the policy change (the paging compares the strengths)?
        if policy is not None and policy != self._policy:
            self._policy, moved = policy, True
        self.paging.set_facts(facts, strengths=strengths, salience_moved=moved)

    # -- Qt interface ----------------------------------------------------------------------------
    # The view calls these once or more per row on every layout (QTreeView lays out every
    # expanded row after an insert): they stay O(1) and never call back into the model.
    def index(self, row: int, column: int, parent: Index = NO_INDEX) -> QModelIndex:
        if row < 0 or not 0 <= column < 6:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column) if row < len(BLOCKS) else QModelIndex()
        if parent.internalPointer() is None and parent.column() == 0:
            block = BLOCKS[parent.row()]
            if row < len(self.paging.rows[block]):
                return self.createIndex(row, column, block)
        return QModelIndex()

    def hasChildren(self, parent: Index = NO_INDEX) -> bool:
        if not parent.isValid():
            return True
        if parent.internalPointer() is None and parent.column() == 0:
            return self.paging.has_children(BLOCKS[parent.row()])
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

    def rowCount(self, parent: Index = NO_INDEX) -> int:
        if parent.column() > 0:
            return 0
        if not parent.isValid():
            return len(BLOCKS)
        if parent.internalPointer() is None:
            return len(self.paging.rows[BLOCKS[parent.row()]])
        return 0

    def columnCount(self, parent: Index = NO_INDEX) -> int:
        return len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self.COLUMNS):
            return None
        if role == DISPLAY:
            return self.COLUMNS[section]
        if role == Qt.ItemDataRole.TextAlignmentRole and section in (2, 3, self.SALIENCE_COLUMN):
            return RIGHT
        if role == Qt.ItemDataRole.ToolTipRole and section == self.SALIENCE_COLUMN:
            return ("How much Sleep wants to keep the fact: block + protected + recency + "
                    "importance + use. The lowest go first when memory is over its cap; a stale "
                    "fact below the policy's floor is forgotten.")
        return None

    def fact_at(self, index: Index) -> Fact | None:
        if not index.isValid() or index.internalPointer() is None:
            return None
        return self.paging.fact_at(index.internalPointer(), index.row())

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
            active, superseded, forgotten = self.paging.counts[name]
            if role == DISPLAY_ROLE:
                if col == 0:
                    extra = (f", {superseded} superseded" if superseded else "") + (
                        f", {forgotten} forgotten" if forgotten else "")
                    return f"{name}  ({active} active{extra})"
                return None
            if role == FONT_ROLE:
                return font(bold=True)
            if role == ROLE_OBJECT:
                return name
            if role == TOOLTIP_ROLE and col == 0:
                return BLOCK_HELP.get(name)
            return None
        rows = self.paging.rows[block]
        row = index.row()
        if not 0 <= row < len(rows):
            return None
        fact = rows[row]
        if role == DISPLAY_ROLE:
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
        if role == TEXT_ALIGNMENT_ROLE:
            return RIGHT if col in (2, 3, self.SALIENCE_COLUMN) else None
        if role in (FONT_ROLE, FOREGROUND_ROLE):
            if fact.active:
                return None
            return palette.muted() if role == FOREGROUND_ROLE else font(struck=True)
        if role == ROLE_OBJECT:
            return fact
        if role == TOOLTIP_ROLE:
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
            return NO_FLAGS
        return SELECTABLE if index.internalPointer() is None else LEAF


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
