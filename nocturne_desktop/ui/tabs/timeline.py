"""The Timeline tab: every version grouped by sleep, undo/restore, and the forgetting curve."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.types import SleepRecord, Version
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.models.text import fit_columns
from nocturne_desktop.ui.models.timeline import TimelineModel


class ForgettingCurve(QWidget):
    """Active facts per version, drawn with QPainter; sleeps shaded; the selection marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._versions: list[Version] = []
        self._selected: int | None = None
        self.setMinimumHeight(110)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip("The forgetting curve: active facts at each version")

    def sizeHint(self) -> QSize:
        return QSize(400, 130)

    def set_versions(self, versions: Sequence[Version]) -> None:
        self._versions = list(versions)
        self.update()

    def append(self, versions: Sequence[Version]) -> None:
        """New versions at the end (the timeline's by-id update)."""
        if versions:
            last = self._versions[-1].seq if self._versions else 0
            self._versions.extend(v for v in versions if v.seq > last)
            self.update()

    def set_selected(self, seq: int | None) -> None:
        self._selected = seq
        self.update()

    def points(self, rect: QRectF) -> list[QPointF]:
        vs = self._versions
        if not vs:
            return []
        top = max(v.active_count for v in vs) or 1
        n = len(vs)
        pts = []
        for i, v in enumerate(vs):
            x = rect.left() + (rect.width() * (i / (n - 1)) if n > 1 else rect.width() / 2)
            y = rect.bottom() - rect.height() * (v.active_count / top)
            pts.append(QPointF(x, y))
        return pts

    def paintEvent(self, _e: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        base = pal.color(QPalette.ColorRole.Base)
        p.fillRect(self.rect(), base)
        p.setPen(QPen(pal.color(QPalette.ColorRole.Mid), 1))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        fm = p.fontMetrics()
        if not self._versions:
            p.setPen(palette.muted(pal))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                       "No versions yet — the first Sleep takes snapshots")
            p.end()
            return
        top_value = max(v.active_count for v in self._versions)
        label_w = fm.horizontalAdvance(str(top_value)) + 10
        plot = QRectF(label_w + 6, 10 + fm.height(), self.width() - label_w - 16,
                      self.height() - 22 - 2 * fm.height())
        # axis labels
        p.setPen(palette.muted(pal))
        p.drawText(QRectF(2, plot.top() - fm.height() / 2, label_w, fm.height()),
                   Qt.AlignmentFlag.AlignRight, str(top_value))
        p.drawText(QRectF(2, plot.bottom() - fm.height() / 2, label_w, fm.height()),
                   Qt.AlignmentFlag.AlignRight, "0")
        p.drawText(QRectF(plot.left(), 2, plot.width(), fm.height()), Qt.AlignmentFlag.AlignLeft,
                   "active facts per version")
        pts = self.points(plot)
        n = len(pts)
        step = plot.width() / (n - 1) if n > 1 else plot.width()
        # shade each sleep's versions
        shade = palette.tint("enforced", pal, 0.12 if not palette.is_dark(pal) else 0.2)
        i = 0
        while i < n:
            sid = self._versions[i].sleep_id
            j = i
            while j + 1 < n and sid is not None and self._versions[j + 1].sleep_id == sid:
                j += 1
            if sid is not None:
                x0 = pts[i].x() - step / 2 if n > 1 else plot.left()
                x1 = pts[j].x() + step / 2 if n > 1 else plot.right()
                p.fillRect(QRectF(max(plot.left(), x0), plot.top(),
                                  min(plot.right(), x1) - max(plot.left(), x0), plot.height()), shade)
            i = j + 1
        # baseline
        p.setPen(QPen(palette.muted(pal), 1))
        p.drawLine(plot.bottomLeft(), plot.bottomRight())
        # the curve (a step line: the count holds until the next version)
        line = palette.accent("running", pal)
        path = QPainterPath(pts[0])
        for a, b in itertools.pairwise(pts):
            path.lineTo(QPointF(b.x(), a.y()))
            path.lineTo(b)
        p.setPen(QPen(line, 2))
        p.drawPath(path)
        for k, pt in enumerate(pts):
            sel = self._versions[k].seq == self._selected
            p.setPen(QPen(text if sel else line, 2 if sel else 1))
            p.setBrush(palette.accent("changed", pal) if sel else base)
            r = 5.0 if sel else 2.5
            p.drawEllipse(pt, r, r)
        # first / last version ids under the axis
        p.setPen(palette.muted(pal))
        y = plot.bottom() + 4
        p.drawText(QRectF(plot.left() - 30, y, 80, fm.height()), Qt.AlignmentFlag.AlignLeft,
                   self._versions[0].id)
        if n > 1:
            p.drawText(QRectF(plot.right() - 60, y, 70, fm.height()), Qt.AlignmentFlag.AlignRight,
                       self._versions[-1].id)
        p.end()


def default_pair(versions: Sequence[Version]) -> tuple[int, int] | None:
    """The pair the Diff tab opens on: before and after the last sleep (else the last two
    versions)."""
    sleep_ids = [v.sleep_id for v in versions if v.sleep_id is not None]
    if sleep_ids:
        own = [v for v in versions if v.sleep_id == sleep_ids[-1]]
        return own[0].seq, own[-1].seq
    if len(versions) >= 2:
        return versions[-2].seq, versions[-1].seq
    return None


class TimelinePanel(QWidget):
    """Signals: ``versionSelected(Version|None)``, ``undoRequested(int sleep_id)``,
    ``restoreRequested(int seq)``, ``compareRequested(int a, int b)``."""

    OPEN_GROUPS = 20
    """Groups (sleeps, edits) shown open at start; the rest are collapsed."""

    versionSelected = Signal(object)
    undoRequested = Signal(int)
    restoreRequested = Signal(int)
    compareRequested = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = TimelineModel(self)
        self.view = QTreeView(self)
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setAllColumnsShowFocus(True)
        self.view.setSelectionBehavior(QTreeView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QTreeView.SelectionMode.SingleSelection)
        header = self.view.header()
        header.setStretchLastSection(False)
        fit_columns(header, {0: "Version s00000", 2: "00 Mmm 00:00:00", 3: "Active"}, stretch=1)
        self.curve = ForgettingCurve(self)
        self.undo_button = QPushButton("Undo this sleep", self)
        self.undo_button.setToolTip("Restore the state from before the selected sleep, as a new version "
                                    "(Ctrl+Z undoes the last change, whoever made it)")
        self.restore_button = QPushButton("Restore this version", self)
        self.restore_button.setToolTip("Make the selected version the live memory (a new version)")
        self.compare_button = QPushButton("Diff with live", self)
        self.compare_button.setToolTip("Open the Diff tab: the selected version against the latest one")
        self.hint = QLabel("Select a version to view it read-only in the Memory tab.", self)
        self.hint.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.undo_button)
        buttons.addWidget(self.restore_button)
        buttons.addWidget(self.compare_button)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.view, 1)
        lay.addLayout(buttons)
        lay.addWidget(self.hint)
        lay.addWidget(self.curve)
        self.view.selectionModel().currentRowChanged.connect(self._current_changed)
        self.undo_button.clicked.connect(self._undo)
        self.restore_button.clicked.connect(self._restore)
        self.compare_button.clicked.connect(self._compare)
        self._busy = False
        self.view.verticalScrollBar().valueChanged.connect(self._scrolled)
        self._update_buttons()

    def set_versions(self, versions: Sequence[Version], sleeps: Sequence[SleepRecord]) -> None:
        self.model.set_versions(versions, sleeps)
        self.curve.set_versions(versions)
        n = self.model.rowCount()
        for row in range(n):  # group titles span the whole row
            self.view.setFirstColumnSpanned(row, QModelIndex(), True)
        # the latest groups open; older ones one click away (every open row is laid out again
        # after each insert, and 1,000 sleeps hold some 9,000 versions)
        for row in range(max(0, n - self.OPEN_GROUPS), n):
            self.view.expand(self.model.index(row, 0))
        self._update_buttons()

    def append(self, versions: Sequence[Version], sleeps: Sequence[SleepRecord]) -> None:
        """The versions and sleeps one commit wrote, by id: new rows at the end, changed group
        titles; nothing else is read or compared (O(change))."""
        if not versions and not sleeps:
            return
        last = self.model.latest()
        for row in self.model.append(versions, sleeps):
            group = self.model.index(row, 0)
            self.view.setFirstColumnSpanned(row, QModelIndex(), True)
            self.view.expand(group)
        self.curve.append([v for v in versions if last is None or v.seq > last.seq])
        self._update_buttons()

    def on_commit(self, commit: Commit) -> None:
        """A commit from the change hub: its versions and sleeps appended (O(change))."""
        rows = commit.rows
        if rows.versions or rows.sleeps:
            self.append(rows.versions, rows.sleeps)

    def last_sleep_pair(self) -> tuple[int, int] | None:
        """:func:`default_pair` of the versions shown, searched from the end (no scan of every
        version after a thousand sleeps)."""
        groups = self.model
        for row in range(groups.rowCount() - 1, -1, -1):
            sid = groups.sleep_of(groups.index(row, 0))
            if sid is not None:
                parent = groups.index(row, 0)
                first = groups.version_at(groups.index(0, 0, parent))
                last = groups.version_at(groups.index(groups.rowCount(parent) - 1, 0, parent))
                if first is not None and last is not None:
                    return first.seq, last.seq
        return default_pair(groups.all_versions()[-2:])  # no sleep yet: a short history

    def _scrolled(self, value: int) -> None:
        """At the top: the older groups come in, the rows on screen stay where they are."""
        if value == 0 and self.model.older:
            added = self.model.show_older()
            for row in range(added):
                self.view.setFirstColumnSpanned(row, QModelIndex(), True)
            self.view.verticalScrollBar().setValue(added)

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def current_version(self) -> Version | None:
        return self.model.version_at(self.view.currentIndex())

    def select_version(self, seq: int) -> None:
        idx = self.model.reveal(seq)
        if idx.isValid():
            self.view.expand(idx.parent())
            flags = QItemSelectionModel.SelectionFlag
            self.view.selectionModel().setCurrentIndex(idx, flags.ClearAndSelect | flags.Rows)
            self.view.scrollTo(idx)

    def scroll_to_latest(self) -> None:
        latest = self.model.latest()
        if latest is not None:
            self.view.scrollTo(self.model.index_of(latest.seq))

    def _current_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        v = self.model.version_at(current)
        self.curve.set_selected(v.seq if v is not None else None)
        self._update_buttons()
        self.versionSelected.emit(v)

    def _update_buttons(self) -> None:
        idx = self.view.currentIndex()
        v = self.model.version_at(idx)
        sid = self.model.sleep_of(idx)
        self.undo_button.setEnabled(not self._busy and sid is not None)
        self.restore_button.setEnabled(not self._busy and v is not None)
        self.compare_button.setEnabled(v is not None)
        if sid is not None:
            self.undo_button.setText(f"Undo sleep #{sid}")
        else:
            self.undo_button.setText("Undo this sleep")

    def _undo(self) -> None:
        sid = self.model.sleep_of(self.view.currentIndex())
        if sid is not None:
            self.undoRequested.emit(sid)

    def _restore(self) -> None:
        v = self.current_version()
        if v is not None:
            self.restoreRequested.emit(v.seq)

    def _compare(self) -> None:
        v = self.current_version()
        latest = self.model.latest()
        if v is not None and latest is not None:
            self.compareRequested.emit(v.seq, latest.seq)
