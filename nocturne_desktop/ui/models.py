"""Qt item models: thin adapters over the core's plain data (checked with ``qtmodeltester``).

The models never read the database. Their owner hands them new data (a fact list, a version
list, a :class:`Diff`) and the model applies the *difference* as row inserts, removes and
``dataChanged``, so views keep their selection and scroll position and never flash.
"""

from __future__ import annotations

import difflib
import html
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QFont

from nocturne_desktop.core.mutations import ABSENT, Refusal, decided_by_label, from_row, is_rule
from nocturne_desktop.core.policy import RetentionPolicy, SalienceParts
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


def _num(item_id: str) -> int:
    try:
        return int(item_id.split("_", 1)[1])
    except (IndexError, ValueError):
        return 0


# --- block tree ---------------------------------------------------------------------------------


class BlockTreeModel(QAbstractItemModel):
    """The four blocks (top level) and their facts (children).

    :meth:`set_facts` takes every fact (active or not) and applies the difference per block.
    Forgotten and superseded facts are listed only when :meth:`set_show_forgotten` is on, and
    drawn greyed; the block label counts them apart ("2 active, 1 superseded, 1 forgotten").
    The Salience column and each fact's tooltip give its salience and its terms (S-RET-2), from
    the importance and recalls given to :meth:`set_facts` and the retention policy.
    """

    COLUMNS = ("Fact", "Category", "Age", "Turn", "Id", "Salience")
    SALIENCE_COLUMN = 5

    def __init__(self, parent: Any = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self._clock = clock
        self._all: list[Fact] = []
        self._rows: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        self._counts: dict[str, tuple[int, int, int]] = {b: (0, 0, 0) for b in BLOCKS}
        """Per block: active, superseded (a correction, not a forgetting), forgotten."""
        self._show_forgotten = False
        self.now: float | None = None
        """Fixed "now" for ages (a historical version is aged from its own time)."""
        self._strengths: Mapping[str, Strength] = {}
        self._policy = RetentionPolicy()

    # -- feeding ---------------------------------------------------------------------------------
    @property
    def show_forgotten(self) -> bool:
        return self._show_forgotten

    def set_show_forgotten(self, on: bool) -> None:
        if on != self._show_forgotten:
            self._show_forgotten = on
            self.set_facts(self._all)

    def facts(self, block: str) -> list[Fact]:
        return list(self._rows[block])

    def salience(self, fact: Fact) -> SalienceParts:
        """``fact``'s salience now (or at :attr:`now`), term by term."""
        now = self.now if self.now is not None else self._clock()
        return self._policy.salience_parts(fact, now, self._strengths.get(fact.id))

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
        self._all = list(facts)
        per: dict[str, list[Fact]] = {b: [] for b in BLOCKS}
        counts = {b: [0, 0, 0] for b in BLOCKS}
        for f in facts:
            if f.block not in per:
                continue
            counts[f.block][0 if f.active else 1 if f.superseded else 2] += 1
            if f.active or self._show_forgotten:
                per[f.block].append(f)
        for b in BLOCKS:
            per[b].sort(key=lambda f: _num(f.id))
        if self._scattered(per):
            # Hundreds of scattered row changes (a Forget over a big store) cost the views more
            # as single inserts/removes than one reset; everything else is applied row by row.
            self.beginResetModel()
            self._rows = per
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
    def index(self, row: int, column: int, parent: Index = _NO_INDEX) -> QModelIndex:
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column)
        if parent.internalPointer() is None and 0 <= parent.row() < len(BLOCKS):
            return self.createIndex(row, column, BLOCKS[parent.row()])
        return QModelIndex()

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
        if not index.isValid():
            return None
        col = index.column()
        block = index.internalPointer()
        if block is None:
            name = BLOCKS[index.row()]
            active, superseded, forgotten = self._counts[name]
            if role == DISPLAY:
                if col == 0:
                    extra = (f", {superseded} superseded" if superseded else "") + (
                        f", {forgotten} forgotten" if forgotten else "")
                    return f"{name}  ({active} active{extra})"
                return None
            if role == Qt.ItemDataRole.FontRole:
                f = QFont()
                f.setBold(True)
                return f
            if role == ROLE_OBJECT:
                return name
            if role == Qt.ItemDataRole.ToolTipRole and col == 0:
                return _BLOCK_HELP.get(name)
            return None
        fact = self.fact_at(index)
        if fact is None:
            return None
        if role == DISPLAY:
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
        if role == Qt.ItemDataRole.ToolTipRole:
            state = ("active" if fact.active else
                     f"superseded{superseded_note(fact, short=False)}" if fact.superseded
                     else "forgotten") + (", pinned" if fact.pinned else "")
            turn = "—" if fact.source_turn is None else str(fact.source_turn)
            return plain_tooltip(
                f"{fact.text}\n\n{fact.id} · {fact.block} · {fact.category} · {state}\n"
                f"created {clock_text(fact.created_at)} · updated {clock_text(fact.updated_at)} · "
                f"source turn {turn}\n{self.salience(fact).explain()}"
            )
        if role == Qt.ItemDataRole.ForegroundRole and not fact.active:
            return palette.muted()
        if role == Qt.ItemDataRole.FontRole and not fact.active:
            f = QFont()
            f.setItalic(True)
            f.setStrikeOut(True)
            return f
        if role == ROLE_OBJECT:
            return fact
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (2, 3, self.SALIENCE_COLUMN):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


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
    """Case-insensitive text filter over every column; a block stays while a child matches."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if not self.filterRegularExpression().pattern():
            return True
        if not source_parent.isValid():
            return False  # a block row is kept by recursive filtering when a fact matches
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


def undone_sleeps(versions: Sequence[Version]) -> dict[int, Version]:
    """Each sleep whose changes were taken back, with the version that did it: an undo of the
    sleep (``undo:sleep 3``, unless redone after) or a restore of the version it started from."""
    first_of: dict[str, int] = {}
    out: dict[int, Version] = {}
    for v in versions:
        if v.sleep_id is not None:
            first_of.setdefault(f"s{v.seq:04d}", v.sleep_id)
            continue
        verb, _, what = v.label.partition(":")
        if verb == "restore" and what in first_of:
            out[first_of[what]] = v
        elif verb in ("undo", "redo") and what.startswith("sleep "):
            try:
                sid = int(what.removeprefix("sleep ").strip())
            except ValueError:
                continue
            if verb == "undo":
                out[sid] = v
            else:
                out.pop(sid, None)
    return out



@dataclass(eq=False)
class _Group:
    key: tuple[str, int]
    versions: list[Version] = field(default_factory=list)
    row: int = 0


class TimelineModel(QAbstractItemModel):
    """Versions grouped by sleep: top-level rows are groups, children are versions.

    New versions are appended as row inserts (into the last group or as new groups); anything
    else (a rewritten history, which the store never does) resets the model.
    """

    COLUMNS = ("Version", "Label", "Time", "Active")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._groups: list[_Group] = []
        self._sleeps: dict[int, SleepRecord] = {}
        self._undone: dict[int, Version] = {}

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
        self._undone = undone_sleeps(versions)
        groups: list[_Group] = []
        prev: Version | None = None
        for v in versions:
            key = self._key(v, prev, groups[-1].key if groups else None)
            if not groups or groups[-1].key != key:
                groups.append(_Group(key, row=len(groups)))
            groups[-1].versions.append(v)
            prev = v
        if not self._is_extension(groups):
            self.beginResetModel()
            self._groups = groups
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
            self.endInsertRows()
        for g in self._groups:
            sid = g.key[1]
            if g.key[0] == "sleep" and (old_sleeps.get(sid) != self._sleeps.get(sid)
                                        or old_undone.get(sid) != self._undone.get(sid)):
                self.dataChanged.emit(self.index(g.row, 0), self.index(g.row, last_col))

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
        for g in self._groups:
            for r, v in enumerate(g.versions):
                if v.seq == seq:
                    return self.index(r, 0, self.index(g.row, 0))
        return QModelIndex()

    def all_versions(self) -> list[Version]:
        return [v for g in self._groups for v in g.versions]

    # -- Qt interface ----------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: Index = _NO_INDEX) -> QModelIndex:
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column)
        if parent.internalPointer() is None:
            return self.createIndex(row, column, self._groups[parent.row()])
        return QModelIndex()

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
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


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
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


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
        self._diff = diff
        rows: list[DiffEntry] = []
        if diff is not None:
            rows = [*diff.changed, *diff.superseded, *diff.forgotten, *diff.added]
            if self.show_kept:
                rows += list(diff.kept)
        self.set_rows(rows)

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

    COLUMNS = ("Pass", "Status", "Input", "Proposed", "Accepted", "Rejected", "Enforced",
               "Active after", "Before", "After", "Elapsed")
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
            attr = {2: "input", 3: "proposed", 4: "accepted", 5: "rejected", 6: "enforced",
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
