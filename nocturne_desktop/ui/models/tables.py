"""The flat tables (Qt): a diff side by side, the refused mutations, the Sleep panel's passes
and the Wake panel's questions, each a read-only :class:`RowsModel` over a list of objects."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, Qt
from PySide6.QtGui import QFont

from nocturne_desktop.core.mutations import ABSENT, Refusal, from_row
from nocturne_desktop.core.types import PASSES, Diff, DiffEntry, Fact, MutationRow
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models.release import RELEASE_SLICE, release_later
from nocturne_desktop.ui.models.roles import DISPLAY, NO_FLAGS, NO_INDEX, ROLE_OBJECT, SELECTABLE, Index
from nocturne_desktop.ui.models.text import decided_text, is_enforced, one_line, plain_tooltip


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

    def rowCount(self, parent: Index = NO_INDEX) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = NO_INDEX) -> int:
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
        return SELECTABLE if index.isValid() else NO_FLAGS


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
                notes.append(f"{len(refusals)} question(s) the model wrote were refused:")
                notes += [f"  {r}" for r in refusals]
            if getattr(q, "template_fallback", False):
                notes.append("so a template question was asked")
            text = f"{q.fact_text}\n\nQ: {q.question}\nA: {q.answer}"
            return plain_tooltip(text + ("\n\n" + "\n".join(notes) if notes else ""))
        return None
