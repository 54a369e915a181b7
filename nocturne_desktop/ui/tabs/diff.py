"""The Diff tab: two version pickers and the store's diff, drawn side by side.

The diff itself is computed by ``Store.diff(a, b)``; this widget only draws it. Below the
table, :class:`ChangeView` shows the selected change in full, side by side and word by word:
the sources on the left (the fact before, and the facts a merge or promotion drew from), the
result on the right, the words that went struck out on the left and the words that came
underlined on the right. (At 1024×700 the table's two text columns are ~10 characters wide;
this view is where a change is read.)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QFont, QTextBlockFormat, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListView,
    QSplitter,
    QTableView,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.types import Diff, DiffEntry, Fact, Version
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.jobs import BodyContext, deferred_full_collections, describe_error
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from nocturne_desktop.ui.models.tables import DiffTableModel, RejectedTableModel
from nocturne_desktop.ui.models.text import decided_text, fit_columns, is_enforced, version_label

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session


def _table(parent: QWidget) -> QTableView:
    t = QTableView(parent)
    t.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QTableView.SelectionMode.SingleSelection)
    t.setWordWrap(False)
    t.setTextElideMode(Qt.TextElideMode.ElideRight)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setDefaultSectionSize(t.fontMetrics().height() + 8)
    t.horizontalHeader().setHighlightSections(False)
    return t


class Legend(QWidget):
    """Swatches for the four statuses plus rejected, tinted from the live palette."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        self.labels: dict[str, QLabel] = {}
        for status in ("changed", "superseded", "forgotten", "added", "kept", "rejected"):
            lab = QLabel(status, self)
            lab.setTextFormat(Qt.TextFormat.PlainText)
            lab.setAutoFillBackground(True)
            lab.setContentsMargins(6, 1, 6, 1)
            self.labels[status] = lab
            lay.addWidget(lab)
        eng = QLabel("⚙ = a rule, not the model", self)
        eng.setTextFormat(Qt.TextFormat.PlainText)
        self.labels["enforced"] = eng
        lay.addWidget(eng)
        lay.addStretch(1)
        self.refresh()

    def refresh(self) -> None:
        for status, lab in self.labels.items():
            pal = lab.palette()
            if status == "enforced":
                pal.setColor(lab.foregroundRole(), palette.accent("enforced"))
            else:
                pal.setColor(lab.backgroundRole(), palette.tint(status))
            lab.setPalette(pal)


_WORD = re.compile(r"\S+\s*|\s+")

Run = tuple[str, bool]
"""A piece of text and whether it differs from the other side."""


def word_diff(a: str, b: str) -> tuple[list[Run], list[Run]]:
    """Both texts cut into runs of words, each marked when it is not on the other side
    (compared word by word, spacing ignored)."""
    ta, tb = _WORD.findall(a), _WORD.findall(b)
    sm = difflib.SequenceMatcher(None, [t.strip() for t in ta], [t.strip() for t in tb],
                                 autojunk=False)
    left: list[Run] = []
    right: list[Run] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        same = tag == "equal"
        if i2 > i1:
            left.append(("".join(ta[i1:i2]), not same))
        if j2 > j1:
            right.append(("".join(tb[j1:j2]), not same))
    return left, right


class ChangeView(QWidget):
    """One diff entry in full: sources (a) on the left, result (b) on the right, word-marked,
    and who decided and why underneath. Every text is inserted as plain text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.left_title = QLabel("Sources (a)", self)
        self.right_title = QLabel("Result (b)", self)
        self.left = self._pane()
        self.right = self._pane()
        self.meta = QLabel("", self)
        self.meta.setTextFormat(Qt.TextFormat.PlainText)
        self.meta.setWordWrap(True)
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for lab in (self.left_title, self.right_title):
            lab.setTextFormat(Qt.TextFormat.PlainText)
            f = lab.font()
            f.setBold(True)
            lab.setFont(f)
        grid = QHBoxLayout()
        for title, pane in ((self.left_title, self.left), (self.right_title, self.right)):
            col = QVBoxLayout()
            col.setSpacing(2)
            col.addWidget(title)
            col.addWidget(pane, 1)
            grid.addLayout(col, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 4, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(grid, 1)
        lay.addWidget(self.meta)
        self.entry: DiffEntry | None = None
        self.show_entry(None)

    def _pane(self) -> QTextEdit:
        pane = QTextEdit(self)
        pane.setReadOnly(True)
        pane.setAcceptRichText(False)
        pane.setUndoRedoEnabled(False)
        line = pane.fontMetrics().lineSpacing()
        pane.setMinimumHeight(3 * line + 12)
        pane.setMaximumHeight(9 * line + 12)
        return pane

    # -- writing ---------------------------------------------------------------------------------
    @staticmethod
    def _fmt(kind: str) -> QTextCharFormat:
        f = QTextCharFormat()
        if kind == "head":
            f.setFontWeight(QFont.Weight.Bold)
            f.setForeground(palette.muted())
        elif kind == "note":
            f.setFontItalic(True)
            f.setForeground(palette.muted())
        elif kind == "gone":
            f.setBackground(palette.tint("forgotten", strength=0.45 if palette.is_dark() else 0.35))
            f.setFontStrikeOut(True)
        elif kind == "new":
            f.setBackground(palette.tint("added", strength=0.45 if palette.is_dark() else 0.35))
            f.setFontUnderline(True)
        return f

    def _write(self, pane: QTextEdit,
               paragraphs: Sequence[tuple[Sequence[Run], Sequence[Run] | str]]) -> None:
        """Each paragraph: a heading, then runs of text (or one note in italics). A marked run
        is struck out on the left pane and underlined on the right one."""
        pane.clear()
        cur = QTextCursor(pane.document())
        mark = "gone" if pane is self.left else "new"
        for i, (head, body) in enumerate(paragraphs):
            if i:
                cur.insertBlock(QTextBlockFormat(), QTextCharFormat())
            for text, marked in head:
                f = self._fmt(mark if marked else "head")
                f.setFontWeight(QFont.Weight.Bold)
                cur.insertText(text, f)
            if head:
                cur.insertText("\n", self._fmt("head"))
            if isinstance(body, str):
                cur.insertText(body, self._fmt("note"))
                continue
            for text, marked in body:
                cur.insertText(text, self._fmt(mark if marked else "text"))
        pane.moveCursor(QTextCursor.MoveOperation.Start)

    @staticmethod
    def _head(f: Fact, other: Fact | None = None) -> list[Run]:
        """``m_5 · scratch · preferences``: the block and category marked when the other side's
        differ (a promotion moves a fact without changing a word)."""
        runs: list[Run] = [(f"{f.id} · ", False), (f.block, other is not None and other.block != f.block),
                           (" · ", False),
                           (f.category, other is not None and other.category != f.category)]
        if f.superseded:
            runs.append((f" · superseded by {f.superseded_by}", False))
        elif not f.active:
            runs.append((" · forgotten", False))
        return runs

    def show_entry(self, e: DiffEntry | None) -> None:
        self.entry = e
        if e is None:
            self._write(self.left, [((), "Select a row to read the change in full, word by word.")])
            self._write(self.right, [])
            self.meta.setText("")
            return
        sources: list[Fact] = []
        if e.before is not None:
            sources.append(e.before)
        sources += [s for s in e.sources if all(s.id != x.id for x in sources)]
        live = e.after if e.after is not None and e.after.active else None
        result = live.text if live is not None else ""
        left: list[tuple[Sequence[Run], Sequence[Run] | str]] = []
        for src in sources:
            runs = word_diff(src.text, result)[0] if live is not None else [(src.text, False)]
            left.append((self._head(src, live), runs))
        if not left:
            left.append(((), "nothing: a new fact"))
        right: list[tuple[Sequence[Run], Sequence[Run] | str]]
        if live is not None:
            basis = " ".join(s.text for s in sources)
            runs = word_diff(basis, live.text)[1] if sources else [(live.text, False)]
            right = [(self._head(live, e.before), runs)]
        elif e.after is not None and e.after.superseded:
            right = [(self._head(e.after), "no longer current: a correction replaced it")]
        else:
            right = [((), f"nothing: {e.status} at b")]
        self._write(self.left, left)
        self._write(self.right, right)
        meta = [f"{e.item_id} {e.status}"]
        if e.pass_name:
            meta.append(f"pass {e.pass_name}")
        if e.decided_by:
            meta.append(f"decided by {decided_text(e.decided_by)}")
        if e.policy:
            meta.append(f"policy {e.policy}")
        line = " · ".join(meta)
        self.meta.setText(f"{line}\nwhy: {e.reason}" if e.reason else line)

    def text(self) -> str:
        """Everything shown, as plain text (for tests and copying)."""
        return "\n".join((self.left_title.text(), self.left.toPlainText(), self.right_title.text(),
                          self.right.toPlainText(), self.meta.text()))

    def marked(self, side: str) -> list[str]:
        """The marked (struck or underlined) words of one side."""
        pane = self.left if side == "left" else self.right
        out: list[str] = []
        block = pane.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                frag = it.fragment()
                cf = frag.charFormat()
                if cf.fontStrikeOut() or cf.fontUnderline():
                    out += frag.text().split()
                it += 1
            block = block.next()
        return out


class DiffPanel(QWidget):
    """Signals: ``pairChanged(int a, int b)`` when a picker moves. Once :meth:`bind` to a
    session, the panel computes its diffs through the session's reads and follows its commits."""

    pairChanged = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = DiffTableModel(self)
        self.rejected_model = RejectedTableModel(self)
        self.pick_a = QComboBox(self)
        self.pick_b = QComboBox(self)
        for c in (self.pick_a, self.pick_b):
            # a fixed width: AdjustToContents measures every item on every insert, O(versions)
            # per new version with 1,000 sleeps behind them
            c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            c.setMinimumContentsLength(18)
            view = c.view()
            if isinstance(view, QListView):
                view.setUniformItemSizes(True)
        self.pick_a.setToolTip("The earlier side (a)")
        self.pick_b.setToolTip("The later side (b)")
        self.show_kept = QCheckBox("Show kept", self)
        self.summary = QLabel("", self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.legend = Legend(self)
        self.table = _table(self)
        self.table.setModel(self.model)
        hh = self.table.horizontalHeader()
        hh.setStretchLastSection(True)
        fit_columns(hh, {0: "forgotten m_999", 3: "promote", 4: "⚙ duplicate-rule"}, padding=14)
        for col in (1, 2, 5):  # the two sides and the reason share what is left
            hh.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        self.rejected = _table(self)
        self.rejected.setModel(self.rejected_model)
        rh = self.rejected.horizontalHeader()
        rh.setStretchLastSection(True)
        fit_columns(rh, {0: "Version", 1: "promote", 2: "promote", 3: "m_99999",
                         4: "⚙ duplicate-rule"}, padding=14)
        self.detail = ChangeView(self)
        self.rejected_title = QLabel("Rejected in range", self)
        self.empty = QLabel("", self)
        self.empty.setTextFormat(Qt.TextFormat.PlainText)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)

        pickers = QHBoxLayout()
        pickers.addWidget(QLabel("From", self))
        pickers.addWidget(self.pick_a)
        pickers.addWidget(QLabel("to", self))
        pickers.addWidget(self.pick_b)
        pickers.addWidget(self.show_kept)
        pickers.addStretch(1)
        top_box = QWidget(self)
        top_lay = QVBoxLayout(top_box)
        top_lay.setContentsMargins(0, 0, 0, 0)
        top_lay.addWidget(self.table, 1)
        top_lay.addWidget(self.empty)
        top_lay.addWidget(self.detail)
        bottom_box = QWidget(self)
        bottom_lay = QVBoxLayout(bottom_box)
        bottom_lay.setContentsMargins(0, 0, 0, 0)
        bottom_lay.addWidget(self.rejected_title)
        bottom_lay.addWidget(self.rejected, 1)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(top_box)
        self.splitter.addWidget(bottom_box)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addLayout(pickers)
        lay.addWidget(self.legend)
        lay.addWidget(self.summary)
        lay.addWidget(self.splitter, 1)

        self.pick_a.currentIndexChanged.connect(self._picked)
        self.pick_b.currentIndexChanged.connect(self._picked)
        self.show_kept.toggled.connect(self.model.set_show_kept)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        self._versions: list[Version] = []
        self._updating = False
        self._auto = True
        """True until a person picks a pair; then new versions no longer move the pickers."""
        self.diff: Diff | None = None
        self.dirty = True
        """The diff shown may be out of date (computed again when the tab is shown)."""
        self._session: Session | None = None
        self._shown: Callable[[], bool] = lambda: False
        self._default_pair: Callable[[], tuple[int, int] | None] = lambda: None
        self._show(None)

    # -- pickers ---------------------------------------------------------------------------------
    def set_versions(self, versions: Sequence[Version], default_pair: tuple[int, int] | None) -> None:
        """Fill both pickers. A pair the person picked is kept while it exists; otherwise the
        pickers follow the default (before/after the last sleep) as new versions arrive."""
        self._add_versions(versions, default_pair, replace=True)

    def append_versions(self, versions: Sequence[Version],
                        default_pair: tuple[int, int] | None) -> None:
        """New versions at the end of both pickers (by id: the others stay as they are)."""
        last = self._versions[-1].seq if self._versions else 0
        new = [v for v in versions if v.seq > last]
        if new:
            self._add_versions(new, default_pair, replace=False)

    def _add_versions(self, versions: Sequence[Version], default_pair: tuple[int, int] | None,
                      *, replace: bool) -> None:
        """Add ``versions`` to both pickers (``replace``: instead of what they list), then pick
        the person's pair if it still exists, else ``default_pair``."""
        keep = self.pair() if not self._auto else None
        self._versions = [*([] if replace else self._versions), *versions]
        self._updating = True
        try:
            for combo in (self.pick_a, self.pick_b):
                if replace:
                    combo.clear()
                for v in versions:
                    combo.addItem(f"{v.id}  {version_label(v.label)}", v.seq)
            pair = keep if keep is not None and self._has(keep) else default_pair
            if pair is not None:
                self.pick_a.setCurrentIndex(self.pick_a.findData(pair[0]))
                self.pick_b.setCurrentIndex(self.pick_b.findData(pair[1]))
        finally:
            self._updating = False

    def _has(self, pair: tuple[int, int]) -> bool:
        seqs = {v.seq for v in self._versions}
        return pair[0] in seqs and pair[1] in seqs

    def pair(self) -> tuple[int, int] | None:
        a, b = self.pick_a.currentData(), self.pick_b.currentData()
        if a is None or b is None:
            return None
        return int(a), int(b)

    def select_pair(self, a: int, b: int) -> None:
        self._auto = False
        self._updating = True
        try:
            self.pick_a.setCurrentIndex(self.pick_a.findData(a))
            self.pick_b.setCurrentIndex(self.pick_b.findData(b))
        finally:
            self._updating = False
        self.pairChanged.emit(a, b)

    def _picked(self, _i: int) -> None:
        if self._updating:
            return
        self._auto = False
        pair = self.pair()
        if pair is not None:
            self.pairChanged.emit(*pair)

    # -- computing, following the session ---------------------------------------------------------
    def bind(self, session: Session, *, shown: Callable[[], bool],
             default_pair: Callable[[], tuple[int, int] | None]) -> None:
        """Compute each pair's diff through ``session`` (off the GUI thread). ``shown()``: the
        tab is on screen (a diff is computed only then); ``default_pair()``: where the pickers
        go when new versions arrive."""
        self._session = session
        self._shown = shown
        self._default_pair = default_pair
        self.pairChanged.connect(self.show_pair)
        self.show_kept.toggled.connect(self._on_show_kept)

    def on_commit(self, commit: Commit) -> None:
        """A commit from the change hub: new versions in the pickers; the diff on screen is
        computed again (else when the tab is next shown)."""
        versions = commit.rows.versions
        if versions:
            self.append_versions(versions, self._default_pair())
        if versions or commit.facts:
            self.mark_dirty()

    def mark_dirty(self) -> None:
        self.dirty = True
        if self._shown():
            self.refresh()

    def refresh(self) -> None:
        """The current pair's diff computed again (a big one takes a moment)."""
        self.dirty = False
        pair = self.pair()
        if pair is None:
            self.set_diff(None)
        else:
            self.show_pair(*pair)

    def on_shown(self) -> None:
        """The tab came on screen: a diff that missed a change is computed now."""
        if self.dirty:
            self.refresh()

    def show_pair(self, a: int, b: int) -> None:
        """Compute the diff of ``a`` → ``b`` off the GUI thread (with kept facts it reads the
        whole state at ``a``); a newer pair supersedes one still computing."""
        session = self._session
        if session is None:
            return
        include_kept = self.model.show_kept

        def read(ctx: BodyContext) -> Diff:
            with deferred_full_collections():  # a whole state's objects: no full collection
                return ctx.store.diff(a, b, include_kept=include_kept)

        session.read("diff", read, self.set_diff, self._on_failed)

    def _on_show_kept(self, on: bool) -> None:
        """The diff on screen was computed without kept facts (cheap); showing them needs the
        state at ``a``, read off the GUI thread."""
        if not on:
            return
        if self._shown():
            self.refresh()
        else:
            self.dirty = True

    def _on_failed(self, exc: BaseException) -> None:
        self.set_diff(None)
        self.summary.setText(describe_error(exc))

    # -- drawing ---------------------------------------------------------------------------------
    def set_diff(self, diff: Diff | None) -> None:
        self._show(diff)

    def _show(self, diff: Diff | None) -> None:
        self.diff = diff
        self.model.set_diff(diff)
        self.rejected_model.set_rows(diff.rejected if diff is not None else ())
        self.detail.show_entry(None)
        if diff is None:
            self.summary.setText("")
            msg = ("Nothing to compare yet. After a Sleep, this shows what it kept, changed, "
                   "forgot and added — and what it refused.") if len(self._versions) < 2 else \
                "Pick two versions."
            self.empty.setText(msg)
            self.empty.show()
            self.rejected_title.setText("Rejected in range")
            return
        enforced = sum(1 for e in (*diff.changed, *diff.superseded, *diff.forgotten, *diff.added)
                       if is_enforced(e.decided_by))
        superseded = f"{len(diff.superseded)} superseded · " if diff.superseded else ""
        # kept facts are only read with "Show kept" on (it costs a whole state): no count otherwise
        kept = f"{len(diff.kept)} kept · " if self.model.show_kept else ""
        self.summary.setText(
            f"s{diff.a:04d} → s{diff.b:04d}:  {len(diff.changed)} changed · {superseded}"
            f"{len(diff.forgotten)} forgotten · {len(diff.added)} added · {kept}"
            f"{len(diff.rejected)} rejected · {enforced} by the rules")
        nothing = (not (diff.changed or diff.superseded or diff.forgotten or diff.added)
                   and not self.model.show_kept)
        self.empty.setText("No fact differs between these two versions." if nothing else "")
        self.empty.setVisible(nothing)
        self.rejected_title.setText(f"Rejected in range ({len(diff.rejected)}) — proposals the gates refused")
        self.legend.refresh()
        if self.model.rowCount():  # the first change is read at once, in full
            self.table.setCurrentIndex(self.model.index(0, 0))

    def _row_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        e = self.model.data(current, ROLE_OBJECT) if current.isValid() else None
        self.detail.show_entry(e if isinstance(e, DiffEntry) else None)


def describe_entry(e: DiffEntry, fmt: Callable[[str], str] = str) -> str:
    lines = [f"{e.item_id} — {e.status}"]
    if e.before is not None:
        lines.append(f"before [{e.before.block}, {e.before.category}]: {e.before.text}")
    if e.after is not None:
        lines.append(f"after  [{e.after.block}, {e.after.category}]: {e.after.text}")
    meta = []
    if e.pass_name:
        meta.append(f"pass {e.pass_name}")
    if e.decided_by:
        meta.append(f"decided by {decided_text(e.decided_by)}")
    if e.policy:
        meta.append(f"policy {e.policy}")
    if meta:
        lines.append(" · ".join(meta))
    if e.reason:
        lines.append(f"reason: {e.reason}")
    if e.sources:
        lines.append("sources:")
        lines += [f"  {s.id} [{s.block}]: {s.text}" for s in e.sources]
    return "\n".join(fmt(x) for x in lines)
