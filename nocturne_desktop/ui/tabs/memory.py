"""The Memory tab: the block tree, its filter, and the read-only banner for a past version.

The tree is also where the person changes memory by hand (S-EDIT-1): a row's context menu (and
F2 / Delete on the selected fact) edits its text, category or block, pins or unpins it, forgets
it now or brings it back, and a block's menu adds a fact (:mod:`~nocturne_desktop.ui.factdialog`).
The panel only asks; it emits ``handRequested(op, args, kwargs)`` and the window runs it
through the session (one audited version each, undoable with Ctrl+Z).

Delete forgets at once, without a question (one Ctrl+Z brings the fact back, and the status
line says so), and leaves no row selected: a second press forgets nothing, where the selection
moving on to the next row made a double press forget two facts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.store.reads import ChangedRows
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact, Strength, Version
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.factdialog import ask_fact
from nocturne_desktop.ui.jobs import BodyContext
from nocturne_desktop.ui.models.pagers import FirstPages, MatchPager, StatePager, StorePager, read_first_pages
from nocturne_desktop.ui.models.paging import Loaded
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from nocturne_desktop.ui.models.text import fit_columns, version_label
from nocturne_desktop.ui.models.tree import BlockTreeModel, FactFilterProxy
from nocturne_desktop.ui.search import SearchPanel

log = logging.getLogger("nocturne.ui")


T = TypeVar("T")


class RunRead(Protocol):
    """How the panel reads the store off the GUI thread (the session's
    :meth:`~nocturne_desktop.ui.session.Session.read`): ``fn(ctx)`` in a read job of ``kind``,
    then ``on_result`` or ``on_failure`` on the GUI thread."""

    def __call__(self, kind: str, fn: Callable[[BodyContext], T], on_result: Callable[[T], None],
                 on_failure: Callable[[BaseException], None], /) -> object: ...


class VersionBanner(QFrame):
    """"Viewing version s0012 — read-only" with a Back to live button. Signal: ``backToLive()``."""

    backToLive = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QPushButton("Back to live", self)
        self.button.setToolTip("Show the live memory again")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.button)
        self.button.clicked.connect(self.backToLive)
        self.hide()

    def show_version(self, v: Version) -> None:
        pal = self.palette()
        pal.setColor(self.backgroundRole(), palette.tint("changed"))
        self.setPalette(pal)
        self.label.setText(f"Viewing version {v.id} — read-only   ({version_label(v.label)}, "
                           f"{v.active_count} active)")
        self.show()


class MemoryPanel(QWidget):
    """Signals: ``backToLive()`` (the banner's button); ``handRequested(op, args, kwargs)``, a
    change by hand for the session (``edit``, ``pin``, ``forget_now``, ``bring_back``,
    ``add_fact``); ``whyRequested(item_id)`` ("Why do you remember this?" in a fact's context
    menu)."""

    backToLive = Signal()
    handRequested = Signal(str, object, object)
    whyRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = BlockTreeModel(self)
        self.model.view_fetches = False  # fetched by what is on screen: see fetch_visible
        self.filter_proxy = FactFilterProxy(self)
        """The filter, between the model and the view only while a filter is set: through a
        proxy, QTreeView's layout of every loaded row (after each insert) calls into the
        Python model about three times as often (the proxy maps each row and its parent)."""
        self.banner = VersionBanner(self)
        self.search = SearchPanel(self)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter facts (text, category, id)…")
        self.filter.setClearButtonEnabled(True)
        self.show_forgotten = QCheckBox("Show forgotten", self)
        self.show_forgotten.setToolTip(
            "List facts that Sleep forgot or a correction superseded (greyed); rows are never deleted")
        self.updating = QLabel("updating…", self)
        """Shown while the tree's first pages are read again after a big change (the rows
        shown meanwhile are the ones from before it)."""
        self.updating.setTextFormat(Qt.TextFormat.PlainText)
        self.updating.setForegroundRole(self.updating.foregroundRole())
        self.updating.setToolTip("Memory changed a lot at once: the first rows of each block "
                                 "are being read again")
        keep = self.updating.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # coming and going never lays the panel out again
        self.updating.setSizePolicy(keep)
        self.updating.hide()
        self.view = QTreeView(self)
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionBehavior(QTreeView.SelectionBehavior.SelectRows)
        self.view.setAllColumnsShowFocus(True)
        self.view.setWordWrap(False)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        # Always there: a scroll bar that comes and goes (a filter's few matches, then the
        # whole tree again) resizes the viewport, and each resize is one more layout and paint
        # of every row on screen in the same moment (two extra paints per filter or clear).
        self.view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        header = self.view.header()
        header.setStretchLastSection(False)
        fit_columns(header, {1: "commitments", 2: "just now", 3: "Turn", 4: "m_9999", 5: "Salience"},
                    stretch=0, padding=16)
        self.empty = QLabel("Memory is empty. Chat a little: the encoder writes facts into scratch.", self)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setForegroundRole(self.empty.foregroundRole())
        self.empty.hide()

        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.updating)
        top.addWidget(self.show_forgotten)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.banner)
        lay.addWidget(self.search)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.empty)

        self.filter.textChanged.connect(self._filter_changed)
        self.show_forgotten.toggled.connect(self._toggle_forgotten)
        self.banner.backToLive.connect(self.backToLive)
        self.viewing: Version | None = None
        self.live_store: Store | None = None
        """The GUI thread's store the live tree pages from (set by :meth:`attach_store`)."""
        self.run_read: RunRead | None = None
        """``run_read(kind, fn, ok, fail)``: runs ``fn(ctx)`` off the GUI thread (the window
        hands in the session's :meth:`~nocturne_desktop.ui.session.Session.read`); the filter
        of a tree not fully loaded searches the whole store with it."""
        self.filter_pending = False
        """A filter's search over the store is running."""
        self._live_counts: dict[str, tuple[int, int, int]] | None = None
        self._counted_store: Store | None = None
        """The live tree's per-block counts kept while a past version shows (back to live then
        needs no count of the whole store on the GUI thread; a commit meanwhile is applied
        onto them on the way back)."""
        self._live_rows: Loaded | None = None
        """With them, the live tree's loaded rows (:meth:`BlockTreeModel.loaded`): back to
        live shows them again without reading a page (and making its facts) on the GUI
        thread; dropped with the counts."""
        self._away: list[ChangedRows] = []
        """The commits that landed while the past version showed, applied onto the live rows
        kept on the way back (by id, as if they had landed live)."""
        self._unfiltered: Loaded | None = None
        """The live tree's first pages when a filter's search over the store began: clearing
        the filter shows them again without a read; dropped on any change."""
        self._held = False
        self._hold_unless: Callable[[], bool] | None = None
        self._pending: list[ChangedRows] = []
        self.reload_pending = False
        """The first pages are being read again on a job's thread (:meth:`_reload_live`)."""
        self._reload_token: object | None = None
        """The reload whose result may still land (a newer one, or anything that replaces
        the rows, drops it)."""
        self._fetch_timer = QTimer(self)
        self._fetch_timer.setSingleShot(True)
        self._fetch_timer.setInterval(0)
        self._fetch_timer.timeout.connect(self.fetch_visible)
        self.view.verticalScrollBar().valueChanged.connect(lambda _v: self._fetch_timer.start())
        self._resets_followed = False
        self._follow_resets()
        self.model.modelReset.connect(lambda: self._fetch_timer.start())
        self._expand_blocks()
        self.ask_fact = ask_fact
        """The fact dialog: ``(text, category)`` or None (tests put a scripted one here)."""
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        for keys, slot in ((QKeySequence(Qt.Key.Key_F2), self.edit_selected),
                           (QKeySequence(QKeySequence.StandardKey.Delete), self.forget_selected)):
            act = QAction(self.view)
            act.setShortcut(keys)
            act.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            act.triggered.connect(slot)
            self.view.addAction(act)

    @property
    def proxy(self) -> BlockTreeModel | FactFilterProxy:
        """The model the view shows: the filter proxy while a filter is set, else the tree."""
        return self.filter_proxy if self.view.model() is self.filter_proxy else self.model

    def _to_source(self, idx: QModelIndex) -> QModelIndex:
        """A row of the view as a row of :attr:`model`."""
        return self.filter_proxy.mapToSource(idx) if idx.model() is self.filter_proxy else idx

    def _to_view(self, idx: QModelIndex) -> QModelIndex:
        """A row of :attr:`model` as a row of the view (invalid: filtered out)."""
        return self.filter_proxy.mapFromSource(idx) if self.view.model() is self.filter_proxy else idx

    def _reset_shown(self) -> None:
        """A reset of the model the view shows (it has reached the view): open the blocks."""
        if self.sender() is self.view.model():
            self._expand_blocks()

    def _follow_resets(self) -> None:
        """(Re)connect :meth:`_reset_shown` after the view's own handlers: ``setModel``
        connects the view again, and a handler run before the view's reset would open blocks
        the reset then closes."""
        for m in (self.model, self.filter_proxy):
            if self._resets_followed:
                m.modelReset.disconnect(self._reset_shown)
            m.modelReset.connect(self._reset_shown)
        self._resets_followed = True

    def _show_through_filter(self, on: bool) -> None:
        """Put the filter proxy between the model and the view (on), or take it out."""
        if on == (self.view.model() is self.filter_proxy):
            return
        old = self.view.selectionModel()
        if on:
            self.filter_proxy.setSourceModel(self.model)
            self.view.setModel(self.filter_proxy)
        else:
            self.view.setModel(self.model)
            self.filter_proxy.setSourceModel(None)  # type: ignore[arg-type]  # none kept unseen
        if old is not None:
            old.deleteLater()
        self._follow_resets()

    # -- hand edits ------------------------------------------------------------------------------
    def selected_fact(self) -> Fact | None:
        idx = self.view.currentIndex()
        return self.model.fact_at(self._to_source(idx)) if idx.isValid() else None

    def _ask(self, op: str, *args: object, **kwargs: object) -> None:
        self.handRequested.emit(op, args, kwargs)

    def edit_selected(self) -> None:
        fact = self.selected_fact()
        if fact is not None and fact.active and self.viewing is None:
            self.edit_text(fact)

    def forget_selected(self) -> None:
        fact = self.selected_fact()
        if fact is not None and fact.active and self.viewing is None:
            self.forget(fact)

    def forget(self, fact: Fact) -> None:
        """Forget ``fact`` now; once its row is gone, nothing is left selected (see the module
        doc: a second Delete must not forget the next fact)."""
        was = self.selected_fact()
        self._ask("forget_now", fact.id)
        now = self.selected_fact()
        if was is not None and was.id == fact.id and (now is None or now.id != fact.id):
            self.view.selectionModel().clear()  # forgotten (a refusal keeps the row selected)

    def edit_text(self, fact: Fact, text: str | None = None, note: str = "",
                  category: str | None = None) -> None:
        """Ask for ``fact``'s new text and category (``text``, ``category`` and ``note``: a
        refused edit, kept, and why it was refused)."""
        header = f"{fact.id} in {fact.block} — your edit is a new version (Ctrl+Z undoes it)"
        got = self.ask_fact(self, "Edit fact", f"{note}\n\n{header}" if note else header,
                            fact.text if text is None else text,
                            fact.category if category is None else category)
        if got is None or (note and got[0] == text):  # cancelled, or the refused text again
            return
        new, cat = got
        changed: dict[str, str] = {}
        if new != fact.text:
            changed["text"] = new
        if cat != fact.category:
            changed["category"] = cat
        if changed:
            self._ask("edit", fact.id, **changed)

    def add_to(self, block: str, text: str = "", note: str = "",
               category: str = "context") -> None:
        """Ask for a new fact in ``block`` (``text``, ``category`` and ``note``: a refused one,
        kept, and why it was refused)."""
        header = f"A new fact in {block}, written by you"
        got = self.ask_fact(self, "Add a fact", f"{note}\n\n{header}" if note else header,
                            text, category, save="Add")
        if got is not None and not (note and got[0] == text):
            self._ask("add_fact", block, *got)

    def refused(self, op: str, args: tuple[object, ...], kwargs: dict[str, object], note: str,
                fact_of: Callable[[str], Fact | None]) -> None:
        """The admission check refused a text typed here: ask again with the text kept and
        ``note`` (the refusal) above it; the same text again, or Cancel, ends it."""
        if op == "add_fact" and len(args) >= 2 and isinstance(args[0], str) \
                and isinstance(args[1], str):
            category = args[2] if len(args) > 2 and isinstance(args[2], str) else "context"
            self.add_to(args[0], args[1], note, category)
        elif op == "edit" and args and isinstance(args[0], str) \
                and isinstance(kwargs.get("text"), str):
            fact = fact_of(args[0])
            if fact is not None:
                cat = kwargs.get("category")
                self.edit_text(fact, str(kwargs["text"]), note,
                               cat if isinstance(cat, str) else None)

    def menu_for(self, fact: Fact | None, block: str | None) -> QMenu:
        """The context menu of a row: a fact's (edit, category, block, pin, forget, bring back)
        and its block's (add); a past version is read-only."""
        menu = QMenu(self)
        if self.viewing is not None:
            note = menu.addAction(f"Viewing {self.viewing.id}: read-only (Back to live to edit)")
            note.setEnabled(False)
            return menu
        if fact is not None and fact.active:
            menu.addAction("Edit text…", lambda: self.edit_text(fact)).setShortcut(
                QKeySequence(Qt.Key.Key_F2))
            cats = menu.addMenu("Category")
            for cat in CATEGORIES:
                a = cats.addAction(cat, functools.partial(self._ask, "edit", fact.id, category=cat))
                a.setCheckable(True)
                a.setChecked(cat == fact.category)
                a.setEnabled(cat != fact.category)
            moves = menu.addMenu("Move to block")
            for name in BLOCKS:
                a = moves.addAction(name, functools.partial(self._ask, "edit", fact.id, block=name))
                a.setEnabled(name != fact.block)
            if fact.pinned:
                menu.addAction("Unpin", lambda: self._ask("pin", fact.id, False))
            else:
                pin = menu.addAction("Pin (never forgotten)", lambda: self._ask("pin", fact.id, True))
                pin.setToolTip("No rule and no model may forget a pinned fact")
            forget = menu.addAction("Forget now", lambda: self.forget(fact))
            forget.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
            forget.setEnabled(not fact.pinned)
            if fact.pinned:
                forget.setText("Forget now (unpin it first)")
        elif fact is not None:
            menu.addAction("Bring back", lambda: self._ask("bring_back", fact.id))
        if fact is not None:
            why = menu.addAction("Why do you remember this?")
            why.setShortcut(QKeySequence("Ctrl+I"))
            why.setToolTip("Its transcript turns, merges, drops, supersedes, each with version and "
                           "reason")
            why.triggered.connect(lambda _=False, i=fact.id: self.whyRequested.emit(i))
        if block is not None:
            if not menu.isEmpty():
                menu.addSeparator()
            menu.addAction(f"Add a fact to {block}…", lambda: self.add_to(block))
        return menu

    def _context_menu(self, pos: QPoint) -> None:
        idx = self.view.indexAt(pos)
        if not idx.isValid():
            return
        src = self._to_source(idx)
        fact = self.model.fact_at(src)
        block = fact.block if fact is not None else self.model.data(
            src.siblingAtColumn(0), ROLE_OBJECT)
        self.menu_for(fact, block if isinstance(block, str) else None).exec(
            self.view.viewport().mapToGlobal(pos))

    def current_fact(self) -> Fact | None:
        """The fact selected in the tree (None for a block row or no selection)."""
        obj = self.view.currentIndex().data(ROLE_OBJECT)
        return obj if isinstance(obj, Fact) else None

    def select_fact(self, item_id: str) -> bool:
        """Select ``item_id`` in the tree and scroll to it, fetching its block's rows up to it if
        they were not loaded yet (the filter is cleared if it hides the fact; show "Show
        forgotten" first for an inactive one). False if the tree does not hold it."""
        for attempt in range(2):
            idx = self.model.reveal(item_id)
            if idx.isValid():
                proxied = self._to_view(idx)
                if proxied.isValid():
                    self.view.expand(proxied.parent())
                    self.view.setCurrentIndex(proxied)
                    self.view.scrollTo(proxied, QTreeView.ScrollHint.PositionAtCenter)
                    return True
            if attempt == 0 and self.filter.text():
                self.filter.clear()  # the filter hid it
            else:
                break
        return False

    def _expand_blocks(self) -> None:
        """Open the four block rows (``expandAll`` would walk every loaded row); the pages
        shown stay as they are (scrolling fetches more)."""
        shown = self.view.model()
        for row in range(shown.rowCount()):
            self.view.expand(shown.index(row, 0))

    def fetch_visible(self) -> None:
        """Fetch the next page of each block whose last loaded row is on screen. (QTreeView
        itself only fetches for the last row of the whole tree, at the bottom of the scroll
        range; a block in the middle would otherwise never grow.) Only the rows at the top and
        the bottom of the viewport are looked up (O(1) with uniform row heights): a
        ``visualRect`` of a row off screen searches every row the view holds.

        Nothing is fetched while a filter's search over the store runs, or while the first
        pages are read again after a big change: the result replaces the rows (a page fetched
        now would be thrown away); the reset that shows it fetches again."""
        if self.filter_pending or self.reload_pending:
            return
        vp = self.view.viewport()
        top = self._position(self.view.indexAt(QPoint(1, 0))) or (0, -1)
        bottom = self._position(self.view.indexAt(QPoint(1, vp.height() - 1))) or (len(BLOCKS), 0)
        for b, block in enumerate(BLOCKS):
            parent = self.model.index(b, 0)
            more, earlier = self.model.canFetchMore(parent), self.model.can_fetch_earlier(block)
            if not (more or earlier) or not self.view.isExpanded(self._to_view(parent)):
                continue
            end = (b, self.model.rowCount(parent) - 1)
            if more and top <= end <= bottom:
                self._keeping_top(functools.partial(self.model.fetch_page, block))
                self._fetch_timer.start()  # the next page may be on screen too
            elif earlier and top <= (b, 0) <= bottom:
                self._keeping_top(functools.partial(self.model.fetch_earlier, block))
                self._fetch_timer.start()

    def _keeping_top(self, change: Callable[[], object]) -> None:
        """Run ``change`` (rows inserted or dropped above the viewport) with the row at the top
        of the viewport staying where it is on screen."""
        top = self.view.indexAt(QPoint(1, 0))
        anchor = QPersistentModelIndex(top) if top.isValid() else None
        offset = self.view.visualRect(top).top() if top.isValid() else 0
        change()
        if anchor is None or not anchor.isValid():
            return
        idx = self.view.model().index(anchor.row(), 0, anchor.parent())
        self.view.scrollTo(idx, QTreeView.ScrollHint.PositionAtTop)
        if offset:
            bar = self.view.verticalScrollBar()
            if self.view.verticalScrollMode() == QTreeView.ScrollMode.ScrollPerPixel:
                bar.setValue(bar.value() - offset)

    def _position(self, idx: QModelIndex) -> tuple[int, int] | None:
        """A shown row as (block number, row in the block; -1 for the block's own row)."""
        if not idx.isValid():
            return None
        src = self._to_source(idx)
        block = src.internalPointer()
        if block is None:
            return (src.row(), -1)
        return (BLOCKS.index(block), src.row())

    def _filter_changed(self, text: str) -> None:
        if text and self._searches_store():
            self._trim_pages()
            if type(self.model.pager) is StorePager and self._unfiltered is None:
                self._unfiltered = self.model.loaded()
        if text:
            self.filter_proxy.setFilterFixedString(text)
            self._show_through_filter(True)
        else:
            self._show_through_filter(False)  # first: the proxy then filters nothing again
            self.filter_proxy.setFilterFixedString(text)
        self._expand_blocks()
        self._filter_store(text)

    def _searches_store(self) -> bool:
        """Whether a filter now is searched over the whole store (a lazy live tree with rows
        not loaded yet, or one already showing a search's matches)."""
        pager = self.model.pager
        if self.live_store is None or self.viewing is not None or self.run_read is None:
            return False
        if isinstance(pager, MatchPager):
            return True
        return isinstance(pager, StorePager) and any(
            self.model.canFetchMore(self.model.index(r, 0)) for r in range(self.model.rowCount()))

    def _trim_pages(self) -> None:
        """Back to the first page of each block before the proxy filters: the proxy calls
        ``filterAcceptsRow`` (Python) once per loaded row, and the store's search replaces
        those rows anyway; the first pages give the matches shown while it runs. The rows
        loaded are cut (no read) when every block still holds its first page."""
        pager = self.model.pager
        if pager is not None and any(
                self.model.rowCount(self.model.index(r, 0)) > self.model.PAGE
                for r in range(self.model.rowCount())) and not self.model.keep_first_pages():
            self.model.attach(pager, counts=self.model.counts())  # nothing changed but the rows

    def _filter_store(self, text: str) -> None:
        """A lazy tree holds only the pages fetched so far: the filter's matches over the whole
        store are found off the GUI thread, then the tree pages through those."""
        store, pager = self.live_store, self.model.pager
        if store is None or self.viewing is not None or not isinstance(pager, StorePager):
            return
        if not text:
            self.filter_pending = False
            held, self._unfiltered = self._unfiltered, None
            if isinstance(pager, MatchPager) and (
                    held is None or not isinstance(held.pager, StorePager)
                    or held.pager.store is not store or not self.model.show_loaded(held)):
                # the model's counts are the live ones (kept by apply_changes): no count of
                # the whole store on the GUI thread
                self.model.attach(StorePager(store), counts=self.model.counts())
            return
        if not isinstance(pager, MatchPager) and not any(
                self.model.canFetchMore(self.model.index(r, 0)) for r in range(self.model.rowCount())):
            return  # every fact is loaded: the proxy's filter already sees them all
        if self.run_read is None:
            return
        inactive = self.model.show_forgotten

        def find(ctx: BodyContext) -> tuple[dict[str, list[int]], dict[str, tuple[int, int, int]]]:
            return (reads.matching_ids(ctx.store, text, include_inactive=inactive),
                    reads.block_counts(ctx.store))

        def show(found: tuple[dict[str, list[int]], dict[str, tuple[int, int, int]]]) -> None:
            self.filter_pending = False
            if self.filter.text() == text and self.viewing is None and self.live_store is store:
                self.model.attach(MatchPager(store, *found))

        def failed(_exc: BaseException) -> None:
            self.filter_pending = False
            self._fetch_timer.start()  # the loaded rows stay: fetching resumes

        self.filter_pending = True
        self.run_read("tree-filter", find, show, failed)

    def _toggle_forgotten(self, on: bool) -> None:
        self._drop_reload()  # the pages are read again here, with the new setting
        self.model.set_show_forgotten(on)
        self._expand_blocks()
        if isinstance(self.model.pager, MatchPager):
            self._filter_store(self.filter.text())

    # -- feeding ---------------------------------------------------------------------------------
    def attach_store(self, store: Store, *, policy: RetentionPolicy | None = None) -> None:
        """Show the live store, lazily: the first page of each block now (O(page)), the rest as
        the view scrolls; then follow :meth:`apply_changes`."""
        self.viewing = None
        if store is not self.live_store:
            self._unfiltered = None
        self.live_store = store
        self._pending = []  # the pages read now are newer than anything queued
        self._drop_reload()
        self.model.now = None
        kept = store is self._counted_store
        counts = self._live_counts if kept else None
        held = self._live_rows if kept else None
        away = reads.merge_changed(self._away) if kept and self._away else None
        self._live_counts = self._counted_store = self._live_rows = None  # once
        self._away = []
        if policy is not None:
            self.model.set_policy(policy)
        if held is not None and self.model.show_loaded(held):
            if away is not None:  # what changed meanwhile, by id (a big change: read again)
                self.apply_changes(away)
        else:
            if away is not None:  # the kept counts are from before it
                counts = away.counts if away.complete else None
            self.model.attach(StorePager(store), policy=policy, counts=counts)
        self.banner.hide()
        self.empty.setVisible(self.model.is_empty())
        if self.filter.text():
            self._filter_store(self.filter.text())

    def show_state(self, state: StatePager, viewing: Version) -> None:
        """Show a past version's state (built off the GUI thread), read-only and lazily."""
        if self.reload_pending:  # the live rows shown are from before a big change
            self._drop_reload()
            self._live_counts = self._counted_store = self._live_rows = None
            self._away = []
        elif self.viewing is None and self.live_store is not None and not self._pending and \
                isinstance(self.model.pager, StorePager):
            self._live_counts, self._counted_store = self.model.counts(), self.live_store
            self._away = []
            # a filter's matches are searched again on the way back; the live pages are kept
            self._live_rows = None if isinstance(self.model.pager, MatchPager) else \
                self.model.loaded()
        self.viewing = viewing
        self.model.now = viewing.created_at
        self.model.attach(state)
        self.banner.show_version(viewing)
        self.empty.setVisible(state.empty)

    def hold(self, on: bool, *, unless: Callable[[], bool] | None = None) -> None:
        """While a store-writing job runs on a thread of this process, its commits wait here
        and are applied when it ends; ``unless()`` (asked at each commit) True lets them
        through as they land - the window passes "the job runs in a worker process".

        Every insert or remove makes QTreeView lay out the rows it shows again, calling into
        the model (Python) for each, and while a worker *thread* runs Python each call waits
        for the GIL; a job in a worker process holds no GIL here, so the tree follows its
        commits as they land (``docs/window.md``, background work). The timeline and the diff
        pickers always stay live."""
        self._held = on
        self._hold_unless = unless if on else None
        if not on and self._pending:
            pending, self._pending = self._pending, []
            self.apply_changes(reads.merge_changed(pending))  # one pass over the rows

    def _holds(self) -> bool:
        """Whether a commit landing now waits (see :meth:`hold`)."""
        if not self._held:
            return False
        if self._pending:  # one queued: the later ones follow it, in commit order
            return True
        return self._hold_unless is None or not self._hold_unless()

    def apply_changes(self, rows: ChangedRows) -> None:
        """One commit's rows, by id, onto the live tree (ignored while a past version shows;
        queued while :meth:`hold` holds them). A change too big to apply row by row reads
        the first pages again off the GUI thread (:meth:`_reload_live`)."""
        self._unfiltered = None  # the kept rows are no longer the store's
        if self.viewing is not None or self.live_store is None:
            if rows.changes.facts:
                self._kept_live_changed(rows)
            return
        self._counted_store = None
        if self._holds():
            self._pending.append(rows)
            return
        if rows.reload or (self.reload_pending and rows.changes.facts):
            # a read still running may have missed this commit: a new one starts after it
            self._reload_live(rows.counts if rows.complete else None)
            return
        self.model.apply_changes(rows)
        self.empty.setVisible(self.model.is_empty())
        if rows.changes.facts:
            self._fetch_timer.start()  # a removal may have pulled a block's end on screen

    def on_commit(self, commit: Commit) -> None:
        """A commit from the change hub: its rows onto the tree (:meth:`apply_changes`)."""
        self.apply_changes(commit.rows)

    def _kept_live_changed(self, rows: ChangedRows) -> None:
        """A commit while a past version shows: kept for the way back, where it is applied
        onto the live rows kept (O(change), no read; a big one reads the first pages again
        off the GUI thread), as if it had landed live."""
        if self._counted_store is not None:
            self._away.append(rows)

    def _reload_live(self, counts: Mapping[str, tuple[int, int, int]] | None) -> None:
        """The live tree's first pages read again after a big change: on a job's thread with
        its own store (``run_read``), shown in one reset when they are read; the rows from
        before stay on screen meanwhile (the "updating…" cue shows), nothing is fetched, and
        the block rows take the commit's ``counts`` at once (None: counted in the read).
        A newer reload, a past version, another store or a filter's search drops it."""
        store, pager = self.live_store, self.model.pager
        if counts is not None:
            self.model.set_counts(counts)
        if isinstance(pager, MatchPager):
            # the filter's matches changed: searched again over the store, off the GUI thread
            self._drop_reload()
            self._filter_store(self.filter.text())
            return
        if self.run_read is None or store is None or not isinstance(pager, StorePager):
            self._drop_reload()
            self.model.reload(counts)  # a panel without jobs (a test of the tree alone)
            self.empty.setVisible(self.model.is_empty())
            return
        token = self._reload_token = object()
        self.reload_pending = True
        self.updating.show()
        inactive, page = self.model.show_forgotten, self.model.PAGE
        known = dict(counts) if counts is not None else None

        def read(ctx: BodyContext) -> FirstPages:
            return read_first_pages(StorePager(ctx.store), inactive, known, page)

        def landed() -> bool:
            if token is not self._reload_token:
                return False  # superseded, or the rows were replaced meanwhile
            self._drop_reload()
            return self.viewing is None and self.live_store is store and \
                self.model.pager is pager

        def show(pages: FirstPages) -> None:
            if not landed():
                return
            if not self.model.show_pages(StorePager(store), pages):
                self._reload_live(None)  # "show forgotten" changed meanwhile: read again
                return
            self.empty.setVisible(self.model.is_empty())

        def failed(exc: BaseException) -> None:
            if not landed():
                return
            log.warning("reading the tree's first pages off the GUI thread failed (%s); "
                        "read here instead", exc)
            try:
                self.model.reload(known)
            except NocturneError as again:
                log.warning("the tree's first pages could not be read: %s", again)
            self.empty.setVisible(self.model.is_empty())

        self.run_read("tree-reload", read, show, failed)

    def follows_live(self) -> bool:
        """Whether the tree shows the live store with every commit so far applied (its counts
        are the live ones): no past version, nothing held, no reload still reading."""
        return (self.viewing is None and self.live_store is not None and not self._pending
                and not self.reload_pending)

    def _drop_reload(self) -> None:
        """Whatever reload is still reading will not land (the rows are replaced otherwise)."""
        if self.reload_pending:
            self.reload_pending = False
            self.updating.hide()
            self._fetch_timer.start()  # fetching resumes
        self._reload_token = None

    def set_facts(
        self,
        facts: Sequence[Fact],
        viewing: Version | None = None,
        *,
        strengths: Mapping[str, Strength] | None = None,
        policy: RetentionPolicy | None = None,
    ) -> None:
        """Show live facts (``viewing`` None) or a past version's state, read-only.
        ``strengths`` and ``policy`` feed the salience column (see :class:`BlockTreeModel`)."""
        self.viewing = viewing
        if viewing is None:
            self.live_store = None  # a list now, not the store
        self.model.now = viewing.created_at if viewing is not None else None
        self.model.set_facts(facts, strengths=strengths, policy=policy)
        if viewing is None:
            self.banner.hide()
        else:
            self.banner.show_version(viewing)
        self.empty.setVisible(not facts)
        self._expand_blocks()
