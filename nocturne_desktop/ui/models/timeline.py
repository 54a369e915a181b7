"""The History tab's timeline (Qt): versions grouped by sleep, following the store by id.

New versions arrive as row inserts (into the last group or as new groups), never a reset, so
the view keeps its selection; only the latest :attr:`TimelineModel.SHOWN` groups are rows at
first, older ones come in chunks (a view lays out every row it holds after each insert).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtGui import QFont

from nocturne_desktop.core.types import SleepRecord, Version
from nocturne_desktop.ui.models.roles import DISPLAY, LEAF, NO_FLAGS, NO_INDEX, ROLE_OBJECT, SELECTABLE, Index
from nocturne_desktop.ui.models.text import clock_text, plain_tooltip, version_label


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
    def index(self, row: int, column: int, parent: Index = NO_INDEX) -> QModelIndex:
        if row < 0 or not 0 <= column < 4:  # O(1), no call back into the model (see above)
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column) if row < len(self._groups) else QModelIndex()
        if parent.internalPointer() is None and parent.column() == 0:
            g = self._groups[parent.row()]
            if row < len(g.versions):
                return self.createIndex(row, column, g)
        return QModelIndex()

    def hasChildren(self, parent: Index = NO_INDEX) -> bool:
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

    def rowCount(self, parent: Index = NO_INDEX) -> int:
        if parent.column() > 0:
            return 0
        if not parent.isValid():
            return len(self._groups)
        if parent.internalPointer() is None:
            return len(self._groups[parent.row()].versions)
        return 0

    def columnCount(self, parent: Index = NO_INDEX) -> int:
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
            return NO_FLAGS
        return SELECTABLE if index.internalPointer() is None else LEAF
