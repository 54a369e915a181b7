"""Sleep with review (S-EDIT-2): the plan of a dry run, a tick box per change, Apply selected.

The window's Memory → "Sleep with review…" opens :class:`ReviewDialog`. It asks the session for
a plan (:func:`nocturne_desktop.core.review.iter_plan`, a dry run in a background job: the GUI
thread never runs a pass) and shows every change of it grouped by pass, each with the gate's
verdict, who decided and why, and a one-line before → after; the selected change is drawn word by
word underneath (the diff's :class:`~nocturne_desktop.ui.diffview.ChangeView`). Refused proposals
stay in the list, greyed, without a tick box, with the refusal reason.

**Dependencies** are kept consistent in the list itself: unticking a change unticks every later
change that relies on it (a promote of the fact a merge rewrote), ticking a change ticks what it
relies on, and the line under the list says which. (The core would refuse such a change at apply
with the exact reason anyway; the list makes it visible before.)

"Apply selected" applies the ticked changes as one sleep in a background job, each re-gated
against live memory (:func:`~nocturne_desktop.core.review.iter_apply`); one Ctrl+Z undoes it.
If memory changed since the plan was made, the dialog says so, Apply is refused, and "Re-plan"
makes a new plan.
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core import review as core_review
from nocturne_desktop.core.generators import map_yields
from nocturne_desktop.core.mutations import Kind
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.review import ApplyResult, Plan, PlanItem, PlanStale
from nocturne_desktop.core.sleep import DEFAULT_BUDGET_TOKENS, SleepEvent
from nocturne_desktop.core.types import DiffEntry, Fact
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.diffview import ChangeView, Run
from nocturne_desktop.ui.gcdefer import deferred_full_collections
from nocturne_desktop.ui.jobs import JobContext, describe_error
from nocturne_desktop.ui.models import clock_text, decided_text, one_line, plain_tooltip
from nocturne_desktop.ui.workers import _frozen

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session

PASS_TITLES = {"dedupe": "Dedupe", "merge": "Merge", "reconcile": "Reconcile",
               "promote": "Promote", "forget": "Forget"}
COLUMNS = ("Change", "Verdict", "Decided by", "Before → after", "Why")
ROLE_N = Qt.ItemDataRole.UserRole + 1


# --- job bodies (run on a job's thread, never on the GUI thread) ---------------------------------


def plan_body(ctx: JobContext, policy: RetentionPolicy, *, use_model: bool = True,
              budget_tokens: int = DEFAULT_BUDGET_TOKENS) -> Generator[SleepEvent, None, Plan]:
    """The plan: a dry run's events (the Sleep tab shows them), then the :class:`Plan`."""
    gen = core_review.iter_plan(ctx.store, ctx.model if use_model else None, policy,
                                cancel=ctx.cancel, budget_tokens=budget_tokens)
    with deferred_full_collections():  # as a sleep's (nocturne_desktop.ui.gcdefer)
        return (yield from map_yields(gen, _frozen))


def apply_body(ctx: JobContext, plan: Plan,
               approved: Collection[int]) -> Generator[SleepEvent, None, ApplyResult]:
    """The approved changes applied as one sleep (events like a sleep's), then the result."""
    gen = core_review.iter_apply(ctx.store, plan, approved, cancel=ctx.cancel)
    with deferred_full_collections():
        return (yield from map_yields(gen, _frozen))


def stale_body(ctx: JobContext, plan: Plan) -> str | None:
    return core_review.stale_reason(ctx.store, plan)


# --- words ---------------------------------------------------------------------------------------


def _text(facts: Sequence[Fact], item_id: str) -> str:
    return next((f.text for f in facts if f.id == item_id), item_id)


def before_after(it: PlanItem) -> str:
    """The change in one line: what it reads → what it makes of it."""
    m = it.mutation
    refs = m.refs if isinstance(m.refs, dict) else {}
    first = it.before[0].text if it.before else ""
    if not m.accepted:
        named = " + ".join(one_line(f.text, 60) for f in it.before) or "—"
        return f"{named} → unchanged (refused)"
    if m.kind == Kind.DROP:
        return f"{one_line(first, 80)} → dropped (a duplicate of {refs.get('duplicateOf', '?')})"
    if m.kind == Kind.MERGE:
        sources = " + ".join(one_line(f.text, 50) for f in it.before)
        return f"{sources} → {one_line(str(refs.get('mergedText', '')), 120)}"
    if m.kind == Kind.PROMOTE:
        return f"{one_line(first, 80)}: {refs.get('fromBlock', '?')} → {refs.get('toBlock', '?')}"
    if m.kind == Kind.SUPERSEDE:
        by = str(refs.get("supersededBy", "?"))
        return f"{one_line(first, 70)} → superseded by {by}: {one_line(_text(it.before, by), 70)}"
    if m.kind == Kind.FORGET:
        return f"{one_line(first, 80)} → forgotten ({m.policy or 'retention'})"
    return one_line(first, 80)


def _short(it: PlanItem, ticked: bool = True) -> str:
    """The verdict column: the gate's verdict, or that the person left it unticked (said in
    words too: an empty tick box is faint in some dark palettes)."""
    m = it.mutation
    if not m.accepted:
        return "refused"
    if not ticked:
        return "✗ unticked"
    return "⚙ enforced" if m.enforced else "accepted"


def _status(it: PlanItem) -> str:
    m = it.mutation
    if not m.accepted:
        return "rejected"
    return {Kind.DROP: "forgotten", Kind.FORGET: "forgotten", Kind.SUPERSEDE: "superseded",
            Kind.MERGE: "changed", Kind.PROMOTE: "changed"}.get(Kind(m.kind), "changed")


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


class ReviewDialog(QDialog):
    """The plan as a tickable list. Signals: ``applied(ApplyResult)`` after Apply selected."""

    applied = Signal(object)

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setWindowTitle("Sleep with review")
        self.setModal(False)
        self.resize(1100, 680)
        self.plan: Plan | None = None
        self.outcome: ApplyResult | None = None
        self.stale: str | None = None
        self._busy = False
        self._planning = False
        """A plan job of this dialog runs."""
        self._applying = False
        """An apply job of this dialog runs."""
        self._job_failed = False
        self._replan_when_idle = False
        self._syncing = False
        self._items: dict[int, QTreeWidgetItem] = {}
        self._groups: list[tuple[QTreeWidgetItem, list[int]]] = []

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

        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(False)
        self.tree.setSelectionMode(QTreeWidget.SelectionMode.SingleSelection)
        header = self.tree.header()
        fm = self.tree.fontMetrics()
        for col, sample in enumerate(("  ☑ 12  supersede m_12", "⚙ enforced",
                                      "⚙ retention-rule")):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, fm.horizontalAdvance(sample) + 32)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(3, fm.horizontalAdvance("x" * 64))
        header.setStretchLastSection(True)
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
        self.rules_only.toggled.connect(lambda _on: self.replan())
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.currentItemChanged.connect(self._on_current)
        self.tick_all.clicked.connect(lambda: self._tick_all(True))
        self.untick_all.clicked.connect(lambda: self._tick_all(False))
        self.apply_button.clicked.connect(self.apply_selected)
        self.close_button.clicked.connect(self.close)
        session.storeChanged.connect(self._check_stale)
        session.busyChanged.connect(self._on_busy)
        self._show_waiting("No plan yet.")

    # -- planning ---------------------------------------------------------------------------------
    def replan(self) -> None:
        """A new plan from memory as it is now (a dry run in a job)."""
        s = self.session
        engine_only = self.rules_only.isChecked()
        if self._planning and s.busy == "dry-run":  # our plan is still running: a new one after it
            self._replan_when_idle = True
            s.cancel_sleep()
            return
        try:
            s.start_review_plan(engine_only=engine_only, on_plan=self.set_plan,
                                on_failure=self._on_plan_failed)
        except RuntimeError as exc:  # another job runs
            self.status.setText(f"Cannot plan now: {exc}.")
            return
        self.outcome = None
        self._planning = True
        self._job_failed = False
        self._show_waiting("Planning a sleep" + (" with the rules only" if engine_only else
                                                 " with the model") + " — a dry run, nothing is "
                           "applied…")

    def _show_waiting(self, text: str) -> None:
        self.plan = None
        self._items.clear()
        self._groups.clear()
        self.tree.clear()
        self.detail.show_item(None)
        self.title.setText(text)
        self._set_stale(None)
        self._update_buttons()
        self.status.setText("")

    def _on_plan_failed(self, exc: BaseException) -> None:
        self._job_failed = True
        self.title.setText(f"The plan could not be made: {describe_error(exc)}")
        self._update_buttons()

    def set_plan(self, plan: Plan | None) -> None:
        """Show ``plan`` (the plan job's result; None when it was cancelled)."""
        if plan is None:
            self.title.setText("The plan was cancelled.")
            self._update_buttons()
            return
        self.plan = plan
        self.outcome = None
        self._set_stale(None)
        self._syncing = True
        try:
            self.tree.clear()
            self._items.clear()
            self._groups.clear()
            bold = self.tree.font()
            bold.setBold(True)
            for pass_name in dict.fromkeys(i.pass_name for i in plan.items):
                group = QTreeWidgetItem(self.tree, [PASS_TITLES.get(pass_name, pass_name)])
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                group.setFirstColumnSpanned(True)
                group.setData(0, ROLE_N, 0)
                for col in range(len(COLUMNS)):
                    group.setFont(col, bold)
                for it in plan.of_pass(pass_name):
                    self._items[it.n] = self._row(group, it)
                self._groups.append((group, [it.n for it in plan.of_pass(pass_name)]))
                group.setExpanded(True)
        finally:
            self._syncing = False
        self._refresh_groups()
        mode = "rules only" if plan.rules_only else "with the model"
        ended = "" if plan.ended == "sleep done" else (
            f" The dry run ended early ({plan.message or plan.ended}); the plan holds the passes "
            "before that" + ("; tick Rules only to plan without the model." if not plan.rules_only
                             else "."))
        refused = sum(not i.tickable for i in plan.items)
        on = f" on version {plan.latest}" if plan.latest else ""
        self.title.setText(
            f"Plan of a sleep ({mode}), made at {clock_text(plan.planned_at)}{on}: "
            f"{len(plan.tickable)} change"
            f"{'s' if len(plan.tickable) != 1 else ''} to review, {refused} refused by the "
            f"gates; {plan.active_before} active facts → {plan.active_after}.{ended}")
        if not plan.items:
            self.status.setText("Nothing to do: the sleep would change nothing.")
        first = next(iter(self._items.values()), None)
        if first is not None:
            self.tree.setCurrentItem(first)
        self._update_buttons()

    def _row(self, group: QTreeWidgetItem, it: PlanItem) -> QTreeWidgetItem:
        m = it.mutation
        row = QTreeWidgetItem(group, [f"{it.n}  {m.kind} {m.item_id}", _short(it),
                                      decided_text(m.decided_by, short=True), before_after(it),
                                      one_line(it.why, 300)])
        row.setData(0, ROLE_N, it.n)
        for col in range(len(COLUMNS)):
            row.setToolTip(col, plain_tooltip(row.text(col)))
        tint = palette.tint(_status(it))
        if it.tickable:
            row.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                         | Qt.ItemFlag.ItemIsUserCheckable)
            row.setCheckState(0, Qt.CheckState.Checked)
            row.setBackground(3, tint)
        else:  # shown, greyed, never tickable
            row.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            muted = palette.muted()
            for col in range(len(COLUMNS)):
                row.setForeground(col, muted)
            row.setBackground(1, tint)
        return row

    # -- ticking ----------------------------------------------------------------------------------
    def approved(self) -> list[int]:
        """The plan items ticked now, in order."""
        return [n for n, row in self._items.items()
                if row.flags() & Qt.ItemFlag.ItemIsUserCheckable
                and row.checkState(0) == Qt.CheckState.Checked]

    def set_ticked(self, n: int, on: bool) -> None:
        """Tick or untick change ``n`` as a click would (its dependents follow)."""
        self._items[n].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def _tick_all(self, on: bool) -> None:
        self._syncing = True
        try:
            for n, row in self._items.items():
                if self.plan is not None and self.plan.item(n).tickable:
                    row.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        finally:
            self._syncing = False
        self._refresh_groups()
        self._say_count()

    def _on_item_changed(self, row: QTreeWidgetItem, col: int) -> None:
        if self._syncing or col != 0 or self.plan is None:
            return
        n = row.data(0, ROLE_N)
        if not n:
            return
        on = row.checkState(0) == Qt.CheckState.Checked
        others = self.plan.requirements(n) if on else self.plan.dependents(n)
        followed = sorted(k for k in others if (self._items[k].checkState(0) == Qt.CheckState.Checked) != on)
        self._syncing = True
        try:
            for k in followed:
                self._items[k].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        finally:
            self._syncing = False
        self._refresh_groups()
        it = self.plan.item(n)
        if followed:
            names = ", ".join(f"change {k} ({self.plan.item(k).describe()})" for k in followed)
            if on:
                self.status.setText(f"Ticking change {n} ({it.describe()}) also ticked {names}, "
                                    "which it relies on.")
            else:
                self.status.setText(f"Unticking change {n} ({it.describe()}) also unticked {names}, "
                                    "which relies on it.")
        else:
            self._say_count()

    def _say_count(self) -> None:
        if self.plan is None:
            return
        self.status.setText(f"{len(self.approved())} of {len(self.plan.tickable)} changes ticked.")

    def _refresh_groups(self) -> None:
        if self.plan is None:
            return
        ticked = set(self.approved())
        if self.outcome is None:
            muted, normal = palette.muted(), palette.current().color(QPalette.ColorRole.Text)
            was, self._syncing = self._syncing, True
            try:
                for n, row in self._items.items():
                    it = self.plan.item(n)
                    if it.tickable:
                        row.setText(1, _short(it, n in ticked))
                        for col in (0, 1, 2, 4):
                            row.setForeground(col, normal if n in ticked else muted)
            finally:
                self._syncing = was
        for group, ns in self._groups:
            tickable = [n for n in ns if self.plan.item(n).tickable]
            refused = len(ns) - len(tickable)
            name = group.text(0).split(" — ")[0]
            if tickable:
                text = f"{name} — {sum(n in ticked for n in tickable)} of {len(tickable)} ticked"
                if refused:
                    text += f", {refused} refused"
            else:
                text = f"{name} — {refused} refused, nothing to tick"
            group.setText(0, text)
        self._update_buttons()

    def _on_current(self, row: QTreeWidgetItem | None, _prev: QTreeWidgetItem | None) -> None:
        n = row.data(0, ROLE_N) if row is not None else 0
        self.detail.show_item(self.plan.item(n) if self.plan is not None and n else None)

    # -- staleness --------------------------------------------------------------------------------
    def _check_stale(self) -> None:
        """Memory changed (storeChanged): is the plan still the plan of this memory?"""
        plan = self.plan
        if plan is None or self.outcome is not None or self._busy or not self.isVisible():
            return
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
        self.status.setText(f"Applying {len(approved)} of {len(plan.tickable)} changes as one "
                            "sleep…")

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
            refused = " Refused when checked against memory now: " + "; ".join(
                f"change {n}: {why.removeprefix(core_review.REGATED + ': ')}"
                for n, why in result.refused.items()) + "."
        self.status.setText(
            f"Applied {len(result.applied)} change{'s' if len(result.applied) != 1 else ''} as "
            f"sleep {result.sleep_id}; {len(result.unticked)} left unticked (logged as refused by "
            f"you).{refused} Ctrl+Z in the window undoes the whole sleep.")
        self._syncing = True
        try:
            for n, row in self._items.items():
                row.setFlags(row.flags() & ~Qt.ItemFlag.ItemIsUserCheckable)
                if n in result.refused:
                    row.setText(1, "refused at apply")
                    row.setText(4, one_line(result.refused[n], 300))
                elif n in result.applied:
                    row.setText(1, "applied")
                elif n in result.unticked:
                    row.setText(1, "left unticked")
        finally:
            self._syncing = False
        self._update_buttons()
        self.applied.emit(result)

    # -- state ------------------------------------------------------------------------------------
    def _on_busy(self, kind: str) -> None:
        self._busy = bool(kind)
        if not kind:  # a job of ours that ended without a result was cancelled (Esc)
            if self._planning and self.plan is None and not self._job_failed:
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
                                     and bool(self.approved()))
        for b in (self.tick_all, self.untick_all):
            b.setEnabled(planned and not self._busy)
        self.replan_button.setEnabled(not self._busy or self._planning)
        self.rules_only.setEnabled(not self._busy or self._planning)

    def text(self) -> str:
        """What the dialog says, as plain text (tests)."""
        rows = []
        for group, ns in self._groups:
            rows.append(group.text(0))
            rows += ["  " + " | ".join(self._items[n].text(k) for k in range(len(COLUMNS)))
                     for n in ns]
        return "\n".join([self.title.text(), self.banner.text() if self.stale else "", *rows,
                          self.status.text()])

