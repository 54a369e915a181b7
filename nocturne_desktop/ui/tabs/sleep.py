"""The Sleep tab: Sleep, Dry run, Cancel, the live per-pass table and the totals in words."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.sleep import PassFigures, SleepEvent, SleepEventKind
from nocturne_desktop.ui.models.tables import PassTableModel
from nocturne_desktop.ui.palette import set_tone
from nocturne_desktop.ui.plaintext import message_label


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
        self.policy = message_label(self)
        self.message = message_label(self)
        self.totals = message_label(self)
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
    def on_event(self, ev: SleepEvent) -> None:
        """One event of the sleep's stream (``Session.sleepEvent``)."""
        fig = ev.figures
        if ev.kind == SleepEventKind.STARTED:
            self.on_sleep_started(ev)
        elif ev.kind in (SleepEventKind.PASS_STARTED, SleepEventKind.PASS_DONE,
                         SleepEventKind.PASS_ERROR):
            if fig is None:  # a pass's events always carry its figures
                return
            if ev.kind == SleepEventKind.PASS_STARTED:
                self.on_pass_started(fig)
            elif ev.kind == SleepEventKind.PASS_DONE:
                self.on_pass_done(fig)
            else:
                self.on_pass_error(fig, ev.message)
        else:
            self.on_sleep_finished(ev.kind, ev.message, ev.totals or {})

    def on_sleep_started(self, ev: SleepEvent) -> None:
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

    def on_pass_started(self, fig: PassFigures) -> None:
        self.model.update_pass(fig.pass_name, "running", fig)

    def on_pass_done(self, fig: PassFigures) -> None:
        self.model.update_pass(fig.pass_name, "done", fig)

    def on_pass_error(self, fig: PassFigures, message: str) -> None:
        self.model.update_pass(fig.pass_name, "error", fig, message)
        self.message.setText(message)
        set_tone(self.message, "error")

    def on_sleep_finished(self, kind: SleepEventKind, message: str,
                          totals: dict[str, int]) -> None:
        self.timer.stop()
        head = self.title.text().removesuffix(": running…")
        if kind == SleepEventKind.DONE:
            self.title.setText(f"{head}: done")
            self.model.mark_unfinished("skipped")
            if not self.message.text():
                set_tone(self.message, None)
        elif kind == SleepEventKind.CANCELLED:
            self.title.setText(f"{head}: cancelled — the store is at the last completed pass")
            self.model.mark_unfinished("cancelled")
        else:
            self.title.setText(f"{head}: failed — nothing of the failed pass was applied")
            self.model.mark_unfinished("error")
            if message:
                self.message.setText(message)
                set_tone(self.message, "error")
        if totals:
            self.totals.setText(describe_totals(totals, dry_run=self._dry_run))
