"""Sleep with review (S-EDIT-2): the plan of a dry run, a tick box per change, Apply selected.

The window's Memory → "Sleep with review…" opens :class:`ReviewDialog`. It asks the session for
a plan (:func:`nocturne_desktop.core.sleep.review.iter_plan`, a dry run in a background job: the GUI
thread never runs a pass) and shows every change of it grouped by pass, each with the gate's
verdict, who decided and why, and a one-line before → after; the selected change is drawn word by
word underneath (the diff's :class:`~nocturne_desktop.ui.tabs.diff.ChangeView`). Refused proposals
stay in the list, greyed, without a tick box, with the refusal reason.

**Dependencies** are kept consistent in the list itself: unticking a change unticks every later
change that relies on it (a promote of the fact a merge rewrote), ticking a change ticks what it
relies on, and the line under the list says which. (The core would refuse such a change at apply
with the exact reason anyway; the list makes it visible before.)

"Apply selected" applies the ticked changes as one sleep in a background job, each re-gated
against live memory (:func:`~nocturne_desktop.core.sleep.review.iter_apply`); one Ctrl+Z undoes it.
If memory changed since the plan was made, the dialog says so, Apply is refused, and "Re-plan"
makes a new plan.

**No model answering** (the endpoint's last check failed, or the plan's first request found no
model) is not "nothing to do": the rules alone plan the sleep, *Rules only* is ticked, and the
dialog says so ("No model answered; the rules alone planned these changes").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.mutations import Kind
from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.core.sleep import review as core_review
from nocturne_desktop.core.sleep.review import ApplyResult, Plan, PlanItem, PlanStale
from nocturne_desktop.core.types import DiffEntry
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.jobs import BodyContext, describe_error
from nocturne_desktop.ui.models.plan import COLUMNS, PASS_TITLES, SLICE, PlanIndex, PlanModel, status_of
from nocturne_desktop.ui.models.plan import before_after as before_after
from nocturne_desktop.ui.models.planpages import PlanPages
from nocturne_desktop.ui.models.text import clock_text, decided_text
from nocturne_desktop.ui.tabs.diff import ChangeView, Run

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session

NAMED = 10
"""Changes named one by one in the line under the list (past it: "and N more")."""


# The plan's and the apply's bodies run in a worker process too, so they live in a module
# without Qt (:mod:`nocturne_desktop.ui.jobs.bodies.sleep`).


def stale_body(ctx: BodyContext, plan: Plan | PlanPages) -> str | None:
    """Why memory is not what ``plan`` was made on (its pages are read only when it is not)."""
    return core_review.stale_reason(ctx.store, cast(Plan, plan))


_status = status_of


class PlanChangeView(ChangeView):
    """One planned change, word by word: the facts it reads as the plan saw them on the left,
    what it would make of them on the right, the verdict and the reason underneath."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.left_title.setText("Before (memory as planned)")
        self.right_title.setText("After (if applied)")
        self.show_item(None)

    def show_item(self, it: PlanItem | None) -> None:
        if it is None:
            self.show_entry(None)
            self._write(self.left, [((), "Select a change to read it in full, word by word.")])
            return
        m = it.mutation
        primary = it.before[0] if it.before else None
        after = next((f for f in it.after if primary is not None and f.id == primary.id), None)
        status = _status(it)
        entry = DiffEntry(item_id=m.item_id, status="changed" if status == "rejected" else status,  # type: ignore[arg-type]
                          before=primary, after=after if m.accepted else None,
                          pass_name=it.pass_name, policy=m.policy, reason=m.reason,
                          decided_by=m.decided_by, sources=tuple(it.before[1:]))
        self.show_entry(entry)
        if not m.accepted:
            self._write(self.right, [((), f"nothing changes: refused — {it.why}")])
        elif m.kind == Kind.DROP and primary is not None:
            head: list[Run] = [(f"{primary.id} · dropped", True)]
            self._write(self.right, [(head, f"a duplicate of {m.refs.get('duplicateOf', '?')}, "
                                            "which is kept")])
        elif m.kind == Kind.FORGET and primary is not None:
            self._write(self.right, [([(f"{primary.id} · forgotten", True)],
                                      f"under the {m.policy or 'retention'} rule; it stays in the "
                                      "history and can be brought back")])
        lines = [f"change {it.n} · {PASS_TITLES.get(it.pass_name, it.pass_name)} pass · "
                 f"{it.verdict} · decided by {decided_text(m.decided_by)}"]
        if not m.accepted:
            lines.append(f"refused: {it.why}")
            if m.reason:
                lines.append(f"the model's reason: {m.reason}")
        else:
            lines.append(f"why: {m.reason}")
        if it.depends_on:
            lines.append("relies on change " + ", ".join(str(n) for n in it.depends_on))
        self.meta.setText("\n".join(lines))


# --- the dialog -----------------------------------------------------------------------------------


def _names(plan: Plan | PlanPages, ns: list[int]) -> str:
    named = ", ".join(f"change {k} ({plan.item(k).describe()})" for k in ns[:NAMED])
    return named + (f" and {len(ns) - NAMED} more" if len(ns) > NAMED else "")


class ReviewDialog(QDialog):
    """The plan as a tickable list. Signals: ``applied(ApplyResult)`` after Apply selected.

    The list is a :class:`~nocturne_desktop.ui.models.plan.PlanModel` in a table view: a plan
    of 100,000 changes is indexed in slices (:class:`~nocturne_desktop.ui.models.plan.PlanIndex`)
    and its rows are made only as they come on screen; a tick follows only the changes it
    reaches."""

    applied = Signal(object)

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setWindowTitle("Sleep with review")
        self.setModal(False)
        self.resize(1100, 680)
        self.plan: Plan | PlanPages | None = None
        """The plan shown (None while none is, or while one is still being indexed)."""
        self.outcome: ApplyResult | None = None
        self.stale: str | None = None
        self._busy = False
        self._planning = False
        """A plan job of this dialog runs."""
        self._applying = False
        """An apply job of this dialog runs."""
        self._job_failed = False
        self._replan_when_idle = False
        self._no_model: str | None = None
        """Why the shown plan was made with the rules alone though the model was asked for:
        no model answered (the endpoint's message), else None."""
        self._seen_change = False
        """Memory changed since the plan started, or since the last check of the plan (a check
        reads every fact: O(store) of Python on a thread of this process, beside the GUI
        thread; it is skipped when the window saw nothing change)."""
        self._pending: Plan | PlanPages | None = None
        """A plan received and being indexed (not shown yet)."""
        self._building = 0
        """The number of the index being built (a newer plan or a wait drops an older one)."""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._build_step)
        self._steps: tuple[int, PlanIndex, Iterator[float]] | None = None

        self.title = QLabel("", self)
        self.title.setWordWrap(True)
        f = self.title.font()
        f.setBold(True)
        self.title.setFont(f)
        self.rules_only = QCheckBox("Rules only (no model)", self)
        self.rules_only.setToolTip("Plan with the engine's rules alone, without asking the model")
        self.replan_button = QPushButton("Re-plan", self)
        self.replan_button.setToolTip("Make a new plan from memory as it is now")
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.rules_only)
        top.addWidget(self.replan_button)

        self.banner = QLabel("", self)
        self.banner.setWordWrap(True)
        self.banner.setAutoFillBackground(True)
        self.banner.setContentsMargins(8, 6, 8, 6)
        self.banner.hide()

        self.model = PlanModel(self)
        self.tree = QTableView(self)
        """The list (a table view: it asks the model for the rows on screen only)."""
        self.tree.setModel(self.model)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setShowGrid(False)
        self.tree.setWordWrap(False)
        self.tree.setCornerButtonEnabled(False)
        self.tree.setAlternatingRowColors(False)
        self.tree.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        vheader = self.tree.verticalHeader()
        vheader.hide()
        vheader.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        fm = self.tree.fontMetrics()
        vheader.setDefaultSectionSize(fm.height() + 6)
        header = self.tree.horizontalHeader()
        for col, sample in enumerate(("  ☑ 12  supersede m_12", "⚙ enforced",
                                      "⚙ retention-rule")):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, fm.horizontalAdvance(sample) + 32)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(3, fm.horizontalAdvance("x" * 64))
        header.setStretchLastSection(True)
        header.setHighlightSections(False)
        self.detail = PlanChangeView(self)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.tree)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)

        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        self.tick_all = QPushButton("Tick all", self)
        self.untick_all = QPushButton("Untick all", self)
        self.apply_button = QPushButton("Apply selected", self)
        self.apply_button.setDefault(True)
        self.apply_button.setToolTip("Apply the ticked changes as one sleep, each checked again "
                                     "against memory as it is now (Ctrl+Z undoes it)")
        self.close_button = QPushButton("Close", self)
        bottom = QHBoxLayout()
        bottom.addWidget(self.tick_all)
        bottom.addWidget(self.untick_all)
        bottom.addStretch(1)
        bottom.addWidget(self.apply_button)
        bottom.addWidget(self.close_button)

        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.banner)
        lay.addWidget(self.splitter, 1)
        lay.addWidget(self.status)
        lay.addLayout(bottom)
        for lab in (self.title, self.banner, self.status):
            lab.setTextFormat(Qt.TextFormat.PlainText)

        self.replan_button.clicked.connect(self.replan)
        self.rules_only.toggled.connect(self._on_rules_only)
        self.model.toggled.connect(self._on_toggled)
        self.tree.selectionModel().currentChanged.connect(self._on_current)
        self.tree.installEventFilter(self)
        self.tree.doubleClicked.connect(self._on_double_click)
        self.tick_all.clicked.connect(lambda: self._tick_all(True))
        self.untick_all.clicked.connect(lambda: self._tick_all(False))
        self.apply_button.clicked.connect(self.apply_selected)
        self.close_button.clicked.connect(self.close)
        session.changes.subscribe(self._on_commit)
        session.busyChanged.connect(self._on_busy)
        self._show_waiting("No plan yet.")

    # -- planning ---------------------------------------------------------------------------------
    def _on_rules_only(self, _on: bool) -> None:
        self._no_model = None  # the person chose: ask as they say, the model too
        self.replan(ask_model=True)

    def _rules_alone(self, why: str) -> None:
        """No model answers: tick Rules only (without re-planning from the tick) and say why."""
        self._no_model = why or "the model did not answer"
        self.rules_only.blockSignals(True)
        self.rules_only.setChecked(True)
        self.rules_only.blockSignals(False)

    def replan(self, *, ask_model: bool = False) -> None:
        """A new plan from memory as it is now (a dry run in a job). With no model answering
        (the endpoint's last check failed) the rules alone plan it, unless ``ask_model`` (the
        person just unticked Rules only: the model is asked whatever the last check said)."""
        s = self.session
        if not self.rules_only.isChecked() and s.endpoint_ok is False and not ask_model:
            self._rules_alone(s.endpoint_message)
        engine_only = self.rules_only.isChecked()
        if self._planning and s.busy == "dry-run":  # our plan is still running: a new one after it
            self._replan_when_idle = True
            s.cancel_sleep()
            return
        try:
            s.start_review_plan(engine_only=engine_only, initiator=self, on_plan=self.set_plan,
                                on_failure=self._on_plan_failed)
        except RuntimeError as exc:  # another job runs
            self.status.setText(f"Cannot plan now: {exc}.")
            return
        self.outcome = None
        self._planning = True
        self._seen_change = False
        self._job_failed = False
        self._show_waiting("Planning a sleep" + (" with the rules only" if engine_only else
                                                 " with the model") + " — a dry run, nothing is "
                           "applied…")
        if self._no_model is not None:
            self.status.setText(f"No model answered ({self._no_model}); the rules alone plan "
                                "this sleep.")

    def _show_waiting(self, text: str) -> None:
        self.plan = None
        self._drop_build()
        self.model.set_index(None)
        self.tree.clearSpans()
        self.detail.show_item(None)
        self.title.setText(text)
        self._set_stale(None)
        self._update_buttons()
        self.status.setText("")

    def _drop_build(self) -> None:
        self._building += 1
        self._pending = None
        self._steps = None
        self._timer.stop()

    def _on_plan_failed(self, exc: BaseException) -> None:
        self._job_failed = True
        self.title.setText(f"The plan could not be made: {describe_error(exc)}")
        self._update_buttons()

    def plan_shown(self) -> bool:
        """Whether the plan received is shown (its index is built)."""
        return self.plan is not None and self._pending is None

    def set_plan(self, plan: Plan | PlanPages | None) -> None:
        """Show ``plan`` (the plan job's result, in pages and indexed; None when it was
        cancelled). A big plan not in pages is indexed over several turns of the event loop,
        then shown. A plan with the model that ended before its first pass (no model
        answered) is made again with the rules alone once the job has ended."""
        if plan is None:
            self.title.setText("The plan was cancelled.")
            self._update_buttons()
            return
        if (not plan.rules_only and not plan.passes
                and plan.ended == SleepEventKind.FAILED):
            self._rules_alone(plan.message)
            self._replan_when_idle = True
            self.title.setText("No model answered; planning with the rules alone…")
            self.status.setText(plan.message)
            return
        self._drop_build()
        self.plan = None
        self.outcome = None
        self._set_stale(None)
        self._pending = plan
        index = PlanIndex(plan)
        steps = index.build()
        if index.ready or len(plan.items) <= 2 * SLICE:  # indexed, or a few thousand: at once
            for _ in steps:
                pass
            self._show_index(index)
            return
        self.title.setText(f"Reading the plan: {len(plan.items):,} changes…")
        self._steps = (self._building, index, steps)
        self._timer.start()

    def _build_step(self) -> None:
        got = self._steps
        if got is None:
            return
        token, index, steps = got
        if token != self._building:
            return
        try:
            done = next(steps)
        except StopIteration:
            self._steps = None
            self._show_index(index)
            return
        self.title.setText(f"Reading the plan: {index.size:,} changes… {done:.0%}")
        self._timer.start()

    def _show_index(self, index: PlanIndex) -> None:
        plan = index.plan
        self._pending = None
        self.plan = plan
        self.model.set_index(index)
        self._spans()
        mode = "rules only" if plan.rules_only else "with the model"
        ended = "" if plan.ended == "sleep done" else (
            f" The dry run ended early ({plan.message or plan.ended}); the plan holds the passes "
            "before that" + ("; tick Rules only to plan without the model." if not plan.rules_only
                             else "."))
        tickable = self.model.tickable_count()
        refused = index.size - tickable
        on = f" on version {plan.latest}" if plan.latest else ""
        self.title.setText(
            f"Plan of a sleep ({mode}), made at {clock_text(plan.planned_at)}{on}: "
            f"{tickable} change"
            f"{'s' if tickable != 1 else ''} to review, {refused} refused by the "
            f"gates; {plan.active_before} active facts → {plan.active_after}.{ended}")
        if plan.rules_only and self._no_model is not None:
            self.title.setText(self.title.text().replace(
                "(rules only)", "(rules only: no model answered)", 1))
            self.status.setText(
                "No model answered; the rules alone planned these changes "
                f"({self._no_model}). Untick Rules only to ask the model again."
                if plan.items else "No model answered, and the rules alone would change "
                f"nothing ({self._no_model}).")
        elif not plan.items:
            self.status.setText("Nothing to do: the sleep would change nothing.")
        if plan.items:
            self.select(1)
        self._update_buttons()
        if not self._busy and self._seen_change:
            self._check_stale()

    # -- ticking ----------------------------------------------------------------------------------
    def approved(self) -> list[int]:
        """The plan items ticked now, in order."""
        return self.model.approved()

    def set_collapsed(self, pass_name: str, on: bool) -> None:
        """Fold a pass's changes away (its header row alone) or show them again."""
        self.model.set_collapsed(self.model.group_named(pass_name), on)
        self._spans()

    def _spans(self) -> None:
        self.tree.clearSpans()
        index = self.model.index_
        for g in range(len(index.groups) if index is not None else 0):
            self.tree.setSpan(self.model.group_row(g), 0, 1, len(COLUMNS))

    def _on_double_click(self, idx: QModelIndex) -> None:
        g, n = self.model.locate(idx.row())
        if n == 0 and g >= 0:
            self.model.set_collapsed(g, not self.model.collapsed(g))
            self._spans()

    def select(self, n: int) -> None:
        """Make change ``n`` the current row (its words show underneath; its pass unfolds)."""
        assert self.model.index_ is not None
        g = self.model.index_.group_of(n)
        if self.model.collapsed(g):
            self.model.set_collapsed(g, False)
            self._spans()
        idx = self.model.index_of(n)
        self.tree.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows)
        self.tree.scrollTo(idx)

    def set_ticked(self, n: int, on: bool) -> None:
        """Tick or untick change ``n`` as a click would (its dependents follow)."""
        before = self.model.ticked[n]
        followed = self.model.set_ticked(n, on)
        if before != self.model.ticked[n] or followed:
            assert self.model.index_ is not None
            self._on_toggled((self.model.index_.group_of(n), n, on, followed, 1))

    def set_group_ticked(self, pass_name: str, on: bool) -> None:
        """Tick or untick every change of a pass as a click on its header's box would."""
        row = self.model.group_row(self.model.group_named(pass_name))
        self.model.setData(self.model.index(row, 0), Qt.CheckState.Checked if on
                           else Qt.CheckState.Unchecked, Qt.ItemDataRole.CheckStateRole)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        """Space ticks or unticks the current row's change (or pass), whichever cell of the
        row is current."""
        if (obj is self.tree and event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Space
                and not event.modifiers()):
            cur = self.tree.currentIndex()
            box = self.model.index(cur.row(), 0) if cur.isValid() else QModelIndex()
            if box.isValid() and self.model.flags(box) & Qt.ItemFlag.ItemIsUserCheckable:
                state = self.model.data(box, Qt.ItemDataRole.CheckStateRole)
                self.model.setData(box, Qt.CheckState.Unchecked if state == Qt.CheckState.Checked
                                   else Qt.CheckState.Checked, Qt.ItemDataRole.CheckStateRole)
                return True
        return super().eventFilter(obj, event)

    def _tick_all(self, on: bool) -> None:
        self.model.set_all(on)
        self._say_count()
        self._update_buttons()

    def _on_toggled(self, what: tuple[int, int, bool, list[int], int]) -> None:
        g, n, on, followed, turned = what
        plan = self.plan
        self._update_buttons()
        if plan is None or self.model.index_ is None:
            return
        if not followed:
            self._say_count()
            return
        names = _names(plan, followed)
        if n:
            it = plan.item(n)
            if on:
                self.status.setText(f"Ticking change {n} ({it.describe()}) also ticked {names}, "
                                    "which it relies on.")
            else:
                self.status.setText(f"Unticking change {n} ({it.describe()}) also unticked "
                                    f"{names}, which relies on it.")
            return
        name = self.model.index_.groups[g][0]
        title = PASS_TITLES.get(name, name)
        if on:
            self.status.setText(f"Ticking the {title} pass ({turned} change"
                                f"{'s' if turned != 1 else ''}) also ticked {names}, which it "
                                "relies on.")
        else:
            self.status.setText(f"Unticking the {title} pass ({turned} change"
                                f"{'s' if turned != 1 else ''}) also unticked {names}, which "
                                "relies on it.")

    def _say_count(self) -> None:
        if self.plan is None:
            return
        self.status.setText(f"{self.model.ticked_count()} of {self.model.tickable_count()} "
                            "changes ticked.")

    def _on_current(self, current: QModelIndex, _prev: QModelIndex) -> None:
        n = self.model.locate(current.row())[1] if current.isValid() else 0
        self.detail.show_item(self.plan.item(n) if self.plan is not None and n else None)

    # -- staleness --------------------------------------------------------------------------------
    def _on_commit(self, commit: Commit) -> None:
        # This dialog's own plan (a dry run) writes its sleep record: its own progress, not a
        # change of the memory the plan is of.
        if commit.initiator is not self:
            self._seen_change = True
        self._check_stale()

    def _check_stale(self) -> None:
        """Memory changed (a commit): is the plan still the plan of this memory? (Memory
        changed outside the window is found by the apply, which refuses a stale plan.)"""
        plan = self.plan
        if (plan is None or self.outcome is not None or self._busy or not self.isVisible()
                or not self._seen_change):
            return
        self._seen_change = False
        self.session.read("review-stale", lambda ctx: stale_body(ctx, plan),
                          lambda why: self._set_stale(why) if self.plan is plan else None,
                          lambda _exc: None)

    def _set_stale(self, why: str | None) -> None:
        self.stale = why
        if why is None:
            self.banner.hide()
        else:
            self.banner.setText(f"{why[:1].upper()}{why[1:]}. Nothing was applied. Press "
                                "Re-plan to see what a sleep would do now.")
            pal = self.banner.palette()
            pal.setColor(self.banner.backgroundRole(), palette.tint("changed", strength=0.35))
            self.banner.setPalette(pal)
            self.banner.show()
        self._update_buttons()

    # -- applying ---------------------------------------------------------------------------------
    def apply_selected(self) -> None:
        plan = self.plan
        if plan is None or self.outcome is not None:
            return
        if self.stale is not None:
            self.status.setText("This plan was made for another memory: re-plan first.")
            return
        approved = self.approved()
        if not approved:
            self.status.setText("Nothing is ticked: there is nothing to apply.")
            return
        try:
            self.session.apply_review(plan, approved, on_result=self._on_applied,
                                      on_failure=self._on_apply_failed)
        except RuntimeError as exc:
            self.status.setText(f"Cannot apply now: {exc}.")
            return
        self._applying = True
        self._job_failed = False
        self.status.setText(f"Applying {len(approved)} of {self.model.tickable_count()} changes "
                            "as one sleep…")

    def _on_apply_failed(self, exc: BaseException) -> None:
        self._job_failed = True
        if isinstance(exc, PlanStale):
            self._set_stale(str(exc))
            return
        self.status.setText(f"The sleep failed: {describe_error(exc)}")

    def _on_applied(self, result: ApplyResult | None) -> None:
        if result is None:
            self.status.setText("Cancelled: memory stays at the last completed pass.")
            return
        self.outcome = result
        refused = ""
        if result.refused:
            shown = list(result.refused.items())
            refused = " Refused when checked against memory now: " + "; ".join(
                f"change {n}: {why.removeprefix(core_review.REGATED + ': ')}"
                for n, why in shown[:NAMED]) + (
                f"; and {len(shown) - NAMED} more" if len(shown) > NAMED else "") + "."
        self.status.setText(
            f"Applied {len(result.applied)} change{'s' if len(result.applied) != 1 else ''} as "
            f"sleep {result.sleep_id}; {len(result.unticked)} left unticked (logged as refused by "
            f"you).{refused} Ctrl+Z in the window undoes the whole sleep.")
        self.model.set_outcome(result)
        self._update_buttons()
        self.applied.emit(result)

    # -- state ------------------------------------------------------------------------------------
    def _on_busy(self, kind: str) -> None:
        self._busy = bool(kind)
        if not kind:  # a job of ours that ended without a result was cancelled (Esc)
            if (self._planning and self.plan is None and self._pending is None
                    and not self._job_failed):
                self.title.setText("The plan was cancelled: nothing was applied. Press Re-plan "
                                   "to make one.")
            if self._applying and self.outcome is None and not self._job_failed:
                self.status.setText("The sleep was cancelled: memory stays at the last completed "
                                    "pass (Ctrl+Z in the window undoes what was applied).")
            self._planning = self._applying = False
        if not kind and self._replan_when_idle:
            self._replan_when_idle = False
            self.replan()
            return
        self._update_buttons()
        if not kind:
            self._check_stale()

    def _update_buttons(self) -> None:
        planned = self.plan is not None and self.outcome is None
        self.apply_button.setEnabled(planned and not self._busy and self.stale is None
                                     and self.model.ticked_count() > 0)
        for b in (self.tick_all, self.untick_all):
            b.setEnabled(planned and not self._busy)
        self.replan_button.setEnabled(not self._busy or self._planning)
        self.rules_only.setEnabled(not self._busy or self._planning)

    def text(self) -> str:
        """What the dialog says, as plain text (tests)."""
        rows = []
        index = self.model.index_
        if self.plan is not None and index is not None:
            for g, (_p, a, b) in enumerate(index.groups):
                rows.append(self.model.group_text(g))
                rows += ["  " + " | ".join(self.model.texts(n)) for n in range(a, b)]
        return "\n".join([self.title.text(), self.banner.text() if self.stale else "", *rows,
                          self.status.text()])
