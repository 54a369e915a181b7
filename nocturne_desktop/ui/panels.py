"""The Sleep and Wake tabs."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models.tables import PassTableModel, QuizTableModel
from nocturne_desktop.ui.stillknow import StillKnowBox


def _message_label(parent: QWidget) -> QLabel:
    lab = QLabel("", parent)
    lab.setTextFormat(Qt.TextFormat.PlainText)  # error text may quote the server verbatim
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


def _set_tone(label: QLabel, tone: str | None) -> None:
    pal = label.palette()
    if tone is None:
        owner = label.parentWidget()
        base = owner.palette() if owner is not None else palette.current()
        pal.setColor(label.foregroundRole(), base.color(label.foregroundRole()))
    else:
        pal.setColor(label.foregroundRole(), palette.accent(tone))
    label.setPalette(pal)


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def describe_totals(totals: dict[str, int], *, dry_run: bool = False) -> str:
    """The sleep's totals in words that add up: ``accepted`` counts the model's accepted
    proposals **and** the rules' own changes, ``enforced`` the latter, ``rejected`` the
    proposals the gates refused — so "6 proposed · 6 accepted · 6 rejected · 6 enforced" read
    as nonsense. Here: what the model proposed and what became of it, then the rules' share
    (as the pass table's Proposed · Accepted · Rejected · By rules)."""
    proposed, accepted = int(totals.get("proposed", 0)), int(totals.get("accepted", 0))
    rejected, enforced = int(totals.get("rejected", 0)), int(totals.get("enforced", 0))
    by_model = max(0, accepted - enforced)
    verb = "would apply" if dry_run else "applied"
    if proposed or rejected:
        head = (f"The model proposed {_n(proposed, 'change')}: {by_model} {verb}, "
                f"{rejected} refused by the gates.")
    else:
        head = "The model proposed no change."
    rules = f" The rules made {_n(enforced, 'change')} of their own." if enforced else ""
    return f"{head}{rules} {_n(accepted, 'change')} {verb} in all."


class SleepPanel(QWidget):
    """Sleep, Dry run, Cancel and the live per-pass table.

    Signals: ``sleepRequested()``, ``dryRunRequested()``, ``cancelRequested()``.
    """

    sleepRequested = Signal()
    dryRunRequested = Signal()
    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = PassTableModel(self)
        self.sleep_button = QPushButton("Sleep", self)
        self.sleep_button.setToolTip("Consolidate memory: Dedupe → Merge → Promote → Forget (Ctrl+Shift+S)")
        self.dry_button = QPushButton("Dry run", self)
        self.dry_button.setToolTip("The same passes, nothing applied, no snapshot (Ctrl+Shift+D)")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip("Stop after aborting the current model call; the store stays at "
                                      "the last completed pass (Esc)")
        self.cancel_button.setEnabled(False)
        self.title = QLabel("No sleep yet this session.", self)
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.policy = _message_label(self)
        self.message = _message_label(self)
        self.totals = _message_label(self)
        self._dry_run = False
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.timer = QTimer(self)
        self.timer.setInterval(100)
        self.timer.timeout.connect(self.model.tick)

        buttons = QHBoxLayout()
        buttons.addWidget(self.sleep_button)
        buttons.addWidget(self.dry_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addLayout(buttons)
        lay.addWidget(self.title)
        lay.addWidget(self.policy)
        lay.addWidget(self.table)
        lay.addWidget(self.totals)
        lay.addWidget(self.message)
        lay.addStretch(1)
        self._fit_table()

        self.sleep_button.clicked.connect(self.sleepRequested)
        self.dry_button.clicked.connect(self.dryRunRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)

    def _fit_table(self) -> None:
        h = self.table.horizontalHeader().height() + 2 * self.table.frameWidth()
        h += sum(self.table.rowHeight(r) for r in range(self.model.rowCount()))
        self.table.setFixedHeight(h + 2)

    def set_busy(self, kind: str) -> None:
        sleeping = kind in ("sleep", "dry-run")
        self.sleep_button.setEnabled(not kind)
        self.dry_button.setEnabled(not kind)
        self.cancel_button.setEnabled(sleeping)
        if not sleeping:
            self.timer.stop()

    # -- session hooks ---------------------------------------------------------------------------
    def on_event(self, ev: Any) -> None:
        """One event of the sleep's stream (``Session.sleepEvent``)."""
        if ev.kind == SleepEventKind.STARTED:
            self.on_sleep_started(ev)
        elif ev.kind == SleepEventKind.PASS_STARTED:
            self.on_pass_started(ev.figures)
        elif ev.kind == SleepEventKind.PASS_DONE:
            self.on_pass_done(ev.figures)
        elif ev.kind == SleepEventKind.PASS_ERROR:
            self.on_pass_error(ev.figures, ev.message)
        else:
            self.on_sleep_finished(ev.kind, ev.message, ev.totals or {})

    def on_sleep_started(self, ev: Any) -> None:
        self.model.set_waiting()
        self._fit_table()
        what = "Dry run (nothing is applied)" if ev.dry_run else f"Sleep #{ev.sleep_id}"
        if ev.rules_only:
            what += " — rules only"
        self.title.setText(f"{what}: running…")
        self._dry_run = bool(ev.dry_run)
        self.policy.setText(ev.message)
        self.message.setText("")
        self.totals.setText("")
        self.timer.start()

    def on_pass_started(self, fig: Any) -> None:
        self.model.update_pass(fig.pass_name, "running", fig)

    def on_pass_done(self, fig: Any) -> None:
        self.model.update_pass(fig.pass_name, "done", fig)

    def on_pass_error(self, fig: Any, message: str) -> None:
        self.model.update_pass(fig.pass_name, "error", fig, message)
        self.message.setText(message)
        _set_tone(self.message, "error")

    def on_sleep_finished(self, kind: str, message: str, totals: Any) -> None:
        self.timer.stop()
        head = self.title.text().removesuffix(": running…")
        if kind == SleepEventKind.DONE:
            self.title.setText(f"{head}: done")
            self.model.mark_unfinished("skipped")
            if not self.message.text():
                _set_tone(self.message, None)
        elif kind == SleepEventKind.CANCELLED:
            self.title.setText(f"{head}: cancelled — the store is at the last completed pass")
            self.model.mark_unfinished("cancelled")
        else:
            self.title.setText(f"{head}: failed — nothing of the failed pass was applied")
            self.model.mark_unfinished("error")
            if message:
                self.message.setText(message)
                _set_tone(self.message, "error")
        if isinstance(totals, dict) and totals:
            self.totals.setText(describe_totals(totals, dry_run=self._dry_run))


class WakePanel(QWidget):
    """Run the recall quiz and show each question, answer, score and attempts, and the
    forgotten probe's three conditions. Signals: ``quizRequested()``, ``cancelRequested()``."""

    quizRequested = Signal()
    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QuizTableModel(self)
        self.run_button = QPushButton("Run quiz", self)
        self.run_button.setToolTip("Five questions about surviving facts plus one about a forgotten fact")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.recall = QLabel("The quiz asks the agent about its own memory; the store is the answer key.",
                             self)
        self.recall.setTextFormat(Qt.TextFormat.PlainText)
        self.recall.setWordWrap(True)
        self.message = _message_label(self)
        self.progress = QProgressBar(self)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(True)  # a handful of rows: let each show its text in full
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh = self.table.horizontalHeader()
        for col in range(3):
            hh.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        for col in range(3, 6):
            hh.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)

        self.probe_box = QGroupBox("Forgotten probe", self)
        grid = QGridLayout(self.probe_box)
        self.probe_fact = _message_label(self.probe_box)
        self.probe_answer = _message_label(self.probe_box)
        self.probe_checks: dict[str, QLabel] = {}
        grid.addWidget(self.probe_fact, 0, 0, 1, 2)
        grid.addWidget(self.probe_answer, 1, 0, 1, 2)
        for r, (key, text) in enumerate((
            ("absent_from_store", "absent from the store (no active fact ≥ 0.9 against it)"),
            ("said_absent", "the reply says it is not in memory"),
            ("not_leaked", "the reply does not reproduce its content"),
        ), start=2):
            mark = QLabel("·", self.probe_box)
            mark.setMinimumWidth(20)
            lab = QLabel(text, self.probe_box)
            grid.addWidget(mark, r, 0)
            grid.addWidget(lab, r, 1)
            self.probe_checks[key] = mark
        self.probe_result = QLabel("", self.probe_box)
        grid.addWidget(self.probe_result, 5, 0, 1, 2)
        grid.setColumnStretch(1, 1)

        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addLayout(buttons)
        lay.addWidget(self.recall)
        lay.addWidget(self.message)
        lay.addWidget(self.progress)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.probe_box)
        self.still_know = StillKnowBox(self)  # a benchmark file's questions for this memory
        lay.addWidget(self.still_know)
        self.message.hide()
        self.run_button.clicked.connect(self.quizRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)
        self.show_probe(None)

    def set_busy(self, kind: str) -> None:
        self.run_button.setEnabled(not kind)
        self.cancel_button.setEnabled(kind == "quiz")
        if kind == "quiz":
            self.message.show()
            self.message.setText("Choosing the facts to ask about…")
            _set_tone(self.message, None)
            self.progress.setRange(0, 0)  # busy until the first step says how many
            self.progress.show()
        elif not kind:
            self.progress.hide()

    def show_progress(self, p: Any) -> None:
        """One :class:`~nocturne_desktop.core.checks.quiz.QuizProgress`: step k of n, in words."""
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(max(0, p.step - 1))
        self.progress.setFormat(f"{max(0, p.step - 1)} of {p.total} done")
        self.progress.show()
        self.message.setText(f"{p.doing[:1].upper()}{p.doing[1:]}…  (a local model may take "
                             "a while per question; Esc stops)")
        self.message.show()
        _set_tone(self.message, None)

    def on_failed(self, message: str) -> None:
        self.progress.hide()
        self.message.setText(message)
        self.message.show()
        _set_tone(self.message, "error")

    def show_report(self, report: Any) -> None:
        self.progress.hide()
        self.message.setText("")
        self.message.hide()
        self.model.set_rows(report.questions)
        n = len(report.questions)
        ok = sum(1 for q in report.questions if q.correct)
        retries = sum(1 for q in report.questions if q.attempts > 1)
        self.recall.setText(f"Recall {report.recall:.0%}: {ok} of {n} correct"
                            f"{f' · {retries} needed the verbatim re-ask' if retries else ''}")
        self.show_probe(report.probe)

    def show_probe(self, probe: Any) -> None:
        if probe is None:
            self.probe_fact.setText("No forgotten fact to probe yet (Forget has not removed anything).")
            self.probe_answer.setText("")
            for mark in self.probe_checks.values():
                mark.setText("·")
            self.probe_result.setText("")
            return
        self.probe_fact.setText(f"Forgotten: {probe.fact_id} — {probe.text}\nQ: {probe.question}")
        self.probe_answer.setText(f"A: {probe.answer}")
        for key, value in (("absent_from_store", probe.absent_from_store),
                           ("said_absent", probe.said_absent), ("not_leaked", not probe.leaked)):
            mark = self.probe_checks[key]
            mark.setText("✓" if value else "✗")
            _set_tone(mark, "ok" if value else "error")
        self.probe_result.setText("passed" if probe.passed else "failed")
        _set_tone(self.probe_result, "ok" if probe.passed else "error")
