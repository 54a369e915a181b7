"""Search over all of memory (S-EDIT-3): one field, a list of hits with the matched words marked.

The store finds the facts in a background read with the ranker the chat's memory uses
(:meth:`Store.search_all_ranked`): first every fact sharing a folded word with the query
(active, forgotten and superseded; the matched words marked), then those that share none but
mean something near it, each marked *related*. Without the embedding model only the first kind
is found. This module only shows them. A fact's text is data: :func:`highlight_html` escapes
every character of it before it wraps the matched words in its own markup, so ``<b>`` or
``<img src=…>`` in a fact is drawn as those characters, and the document that draws a row never
loads a resource.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRectF,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAbstractTextDocumentLayout, QKeyEvent, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QLineEdit,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.store import FoundFact
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.jobs import BodyContext, describe_error
from nocturne_desktop.ui.models.text import one_line

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session

DEBOUNCE_MS = 180
"""Typing pause before a search starts (each keystroke restarts the wait)."""
ROLE_HIT = int(Qt.ItemDataRole.UserRole) + 7
ROLE_HTML = int(Qt.ItemDataRole.UserRole) + 8

_WORD = re.compile(r"[\w'’]+")

RELATED = "related by meaning"
"""The tag of a hit that shares no word with the query (found by meaning alone)."""


def match_spans(text: str, matched: Iterable[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of every word of ``text`` that folds (``textmath.stem_token``) to one of
    ``matched``, in order."""
    wanted = set(matched)
    if not wanted:
        return []
    spans = []
    for m in _WORD.finditer(text):
        word = m.group()
        if tm.stem_token(word) in wanted or tm.stem_token(word.strip("'’")) in wanted:
            spans.append((m.start(), m.end()))
    return spans


def highlight_html(text: str, matched: Iterable[str], *, mark: str = "#ffe08a") -> str:
    """``text`` as HTML: every character escaped, then each matched word wrapped in a marked
    ``<span>``. Nothing of ``text`` can become markup."""
    out: list[str] = []
    at = 0
    for start, end in match_spans(text, matched):
        out.append(html.escape(text[at:start], quote=True))
        out.append(f'<span style="background-color:{mark}; font-weight:600">'
                   f"{html.escape(text[start:end], quote=True)}</span>")
        at = end
    out.append(html.escape(text[at:], quote=True))
    return "".join(out)


def status_line(hit: FoundFact) -> str:
    """The plain second line of a hit: its status, block, id and where it was last active
    (after :data:`RELATED` for a hit found by meaning alone)."""
    f = hit.fact
    where = f"{f.block} · {f.category} · {f.id}"
    if hit.status == "active":
        line = f"active · {where}"
    else:
        last = ("never in a saved version" if hit.last_active_seq is None
                else f"last active in s{hit.last_active_seq:04d}")
        by = f" by {f.superseded_by}" if hit.status == "superseded" and f.superseded_by else ""
        line = f"{hit.status}{by} · {where} · {last}"
    return line if hit.exact else f"{RELATED} · {line}"


def hit_html(hit: FoundFact, *, mark: str, related: str) -> str:
    """A hit's two lines as HTML: its text (escaped; the matched words marked) and its status
    line (a hit found by meaning alone starts it with :data:`RELATED` in ``related``'s
    colour). Nothing of the fact becomes markup."""
    text = one_line(hit.fact.text)
    line = html.escape(status_line(hit))
    if not hit.exact:
        tag = html.escape(RELATED)
        line = (f'<span style="color:{related}; font-weight:600">{tag}</span>'
                + line[len(tag):])
    return f"{highlight_html(text, hit.matched, mark=mark)}<br><small>{line}</small>"


def summary(query: str, hits: Sequence[FoundFact]) -> str:
    """The panel's line above the hits: how many share the query's words (active, inactive)
    and how many are only related by meaning."""
    if not hits:
        return f"No fact matches “{query}”."
    exact = [h for h in hits if h.exact]
    n_active = sum(1 for h in exact if h.status == "active")
    n_related = len(hits) - len(exact)
    parts = ([f"{n_active} active · {len(exact) - n_active} forgotten or superseded"]
             if exact else [f"No fact shares a word with “{query}”"])
    if n_related:
        parts.append(f"{n_related} {RELATED}")
    return " · ".join(parts) + " — Enter or double-click shows it"


class _HitDelegate(QStyledItemDelegate):
    """Draws a hit's HTML (escaped text plus marks, then the status line) in a text document."""

    def _document(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex,
                  width: int) -> QTextDocument:
        doc = QTextDocument()
        doc.setDocumentMargin(3)
        doc.setDefaultFont(option.font)
        doc.setHtml(str(index.data(ROLE_HTML) or ""))
        doc.setTextWidth(max(80, width))
        return doc

    def paint(self, painter, option, index) -> None:  # type: ignore[no-untyped-def]
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        style = opt.widget.style() if opt.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        doc = self._document(opt, index, opt.rect.width())
        ctx = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        ctx.palette.setColor(QPalette.ColorRole.Text, opt.palette.color(role))
        painter.save()
        painter.translate(opt.rect.topLeft())
        painter.setClipRect(QRectF(0, 0, opt.rect.width(), opt.rect.height()))
        doc.documentLayout().draw(painter, ctx)
        painter.restore()

    def sizeHint(self, option, index):  # type: ignore[no-untyped-def]
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        view = self.parent()
        width = view.viewport().width() if isinstance(view, QListWidget) else opt.rect.width()
        doc = self._document(opt, index, width)
        return QSize(width, int(doc.size().height()) + 2)


class SearchPanel(QWidget):
    """The field and its hits. Signals: ``queryChanged(str)`` (after :data:`DEBOUNCE_MS` of
    quiet; empty when cleared), ``activated(FoundFact)`` (Enter or a double-click: jump to it),
    ``versionRequested(FoundFact)`` (a hit's menu: open the version where it was last active)."""

    queryChanged = Signal(str)
    activated = Signal(object)
    versionRequested = Signal(object)
    MAX_HEIGHT = 320
    """The hits' list grows with them up to this height (then scrolls)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.field = QLineEdit(self)
        self.field.setPlaceholderText("Search all memory, forgotten facts too (Ctrl+F)…")
        self.field.setClearButtonEnabled(True)
        self.field.setAccessibleName("Search memory")
        self.status = QLabel(self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.results = QListWidget(self)
        self.results.setItemDelegate(_HitDelegate(self.results))
        self.results.setWordWrap(True)
        self.results.setUniformItemSizes(False)
        self.results.setResizeMode(QListView.ResizeMode.Adjust)
        self.results.setAlternatingRowColors(True)
        self.results.setFixedHeight(self.MAX_HEIGHT)
        self.results.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.field)
        lay.addWidget(self.status)
        lay.addWidget(self.results)
        self.status.hide()
        self.results.hide()
        self.query = ""
        """The query whose hits are shown."""
        self.hits: list[FoundFact] = []
        self._enter_pending = False
        self._session: Session | None = None

        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DEBOUNCE_MS)
        self.timer.timeout.connect(self._fire)
        self.field.textChanged.connect(self._typed)
        self.field.returnPressed.connect(self._enter_in_field)
        self.field.installEventFilter(self)
        self.results.itemActivated.connect(self._activate_item)
        self.results.customContextMenuRequested.connect(self._context_menu)

    # -- searching the store ---------------------------------------------------------------------
    def bind(self, session: Session) -> None:
        """Run each query through ``session``'s read jobs (off the GUI thread; a newer query
        drops this one's result)."""
        self._session = session
        self.queryChanged.connect(self.run)

    def run(self, query: str) -> None:
        session = self._session
        if session is None:
            return
        if not query.strip():
            session.cancel_read("search")
            return

        def read(ctx: BodyContext) -> list[FoundFact]:
            return ctx.store.search_all_ranked(query, limit=50)

        session.read("search", read, lambda hits: self.set_results(query, hits),
                     lambda exc: self.set_failed(describe_error(exc)))

    def on_commit(self, commit: Commit) -> None:
        """A commit from the change hub: facts it wrote may change the status of the hits."""
        if self.query and commit.facts:
            self.run(self.query)

    # -- typing ----------------------------------------------------------------------------------
    def _typed(self, text: str) -> None:
        self._enter_pending = False
        if not text.strip():
            self.timer.stop()
            self.set_results("", [])
            self.queryChanged.emit("")
            return
        self.timer.start()

    def _fire(self) -> None:
        self.status.setText("Searching…")
        self.status.show()
        self.queryChanged.emit(self.field.text())

    def flush(self) -> None:
        """Start the pending search now (Enter does not wait for the pause)."""
        if self.timer.isActive():
            self.timer.stop()
            self._fire()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.field and isinstance(event, QKeyEvent) and (
            event.type() == QEvent.Type.KeyPress
        ):
            key = event.key()
            if key == Qt.Key.Key_Down and self.results.count():
                self.results.setFocus()
                if self.results.currentRow() < 0:
                    self.results.setCurrentRow(0)
                return True
            if key == Qt.Key.Key_Escape and self.field.text():
                self.field.clear()
                return True
        return super().eventFilter(obj, event)

    # -- results ---------------------------------------------------------------------------------
    def set_results(self, query: str, hits: Sequence[FoundFact]) -> None:
        """Show ``hits`` for ``query`` (a stale query's hits are ignored)."""
        if query and query != self.field.text():
            return
        self.query, self.hits = query, list(hits)
        self.results.clear()
        mark = palette.tint("added", strength=0.55).name()
        related = palette.accent("running").name()
        for hit in hits:
            item = QListWidgetItem()
            text = one_line(hit.fact.text)
            item.setData(ROLE_HIT, hit)
            item.setData(ROLE_HTML, hit_html(hit, mark=mark, related=related))
            item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{text} — {status_line(hit)}")
            why = ("" if hit.exact else
                   "Shares no word with the search: found by meaning alone\n")
            item.setToolTip(f"{why}{status_line(hit)}\nEnter or double-click: show it in the tree")
            self.results.addItem(item)
        if not query:
            self.status.hide()
            self.results.hide()
            return
        self.status.setText(summary(query, hits))
        self.status.show()
        self.results.setVisible(bool(hits))
        rows = sum(self.results.sizeHintForRow(i) for i in range(min(len(hits), 12)))
        self.results.setFixedHeight(min(self.MAX_HEIGHT, rows + 2 * self.results.frameWidth() + 2))
        if hits:
            self.results.setCurrentRow(0)
        if self._enter_pending:
            self._enter_pending = False
            if hits:
                self.activated.emit(hits[0])

    def set_failed(self, message: str) -> None:
        self.status.setText(f"Search failed: {message}")
        self.status.show()

    def current_hit(self) -> FoundFact | None:
        item = self.results.currentItem()
        hit = item.data(ROLE_HIT) if item is not None else None
        return hit if isinstance(hit, FoundFact) else None

    def _enter_in_field(self) -> None:
        if self.timer.isActive() or self.query != self.field.text():
            self._enter_pending = True  # jump to the first hit when they arrive
            self.flush()
            return
        hit = self.current_hit()
        if hit is not None:
            self.activated.emit(hit)

    def _activate_item(self, item: QListWidgetItem) -> None:
        hit = item.data(ROLE_HIT)
        if isinstance(hit, FoundFact):
            self.activated.emit(hit)

    def context_menu_for(self, hit: FoundFact) -> QMenu:
        menu = QMenu(self)
        show = menu.addAction("Show in the memory tree")
        show.triggered.connect(lambda _=False, h=hit: self.activated.emit(h))
        if hit.last_active_seq is not None:
            act = menu.addAction(f"Open version s{hit.last_active_seq:04d}, where it was last active")
            act.triggered.connect(lambda _=False, h=hit: self.versionRequested.emit(h))
        return menu

    def _context_menu(self, pos: QPoint) -> None:
        item = self.results.itemAt(pos)
        hit = item.data(ROLE_HIT) if item is not None else None
        if isinstance(hit, FoundFact):
            self.context_menu_for(hit).popup(self.results.viewport().mapToGlobal(pos))
