""""How much would I still know?" in the Wake tab (S-RET-1).

A person loads a benchmark file (this project's ``nocturne-memory-bench/1`` layout or LoCoMo);
its questions are put to the open memory's prompt assembly (:mod:`nocturne_desktop.core.checks.recall`:
no model, nothing written) in a read job, and the box shows the share known, per conversation,
and every missed question with the answer words no shown fact carried, the same lines
``nocturne still-know FILE --missed`` prints. Everything here is plain text: questions and
answers come from a file.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.checks.recall import KnowItem, KnowReport
from nocturne_desktop.ui import palette

IDLE_TEXT = ("Load a benchmark file (nocturne-memory-bench/1 or LoCoMo JSON) to put its questions "
             "to this memory as the agent would assemble it. No model is asked; nothing is written.")


def missed_line(item: KnowItem) -> str:
    """One missed question, as ``nocturne still-know --missed`` prints it."""
    return f"- {item.question} (answer: {item.answer}; missing: {', '.join(item.missing) or '-'})"


def _plain_label(parent: QWidget, text: str = "") -> QLabel:
    lab = QLabel(text, parent)
    lab.setTextFormat(Qt.TextFormat.PlainText)
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


class StillKnowBox(QGroupBox):
    """The button, the summary, the per-conversation tally and the missed questions.

    Signal ``fileChosen(str)``: a benchmark file to run (the window starts the read job and
    hands back :meth:`show_report` or :meth:`show_error`).
    """

    fileChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("A benchmark's questions for this memory", parent)
        self.button = QPushButton("How much would I still know?…", self)
        self.button.setToolTip("Choose a benchmark file; its questions are put to this memory's "
                               "prompt assembly (no model, nothing written)")
        self.summary = _plain_label(self, IDLE_TEXT)
        self.conversations = _plain_label(self)
        self.missed_title = _plain_label(self)
        self.missed = QPlainTextEdit(self)
        self.missed.setReadOnly(True)
        self.missed.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.missed.setMaximumHeight(170)
        self.path: Path | None = None
        self.report: KnowReport | None = None
        self.error: str | None = None
        self.running = False

        row = QHBoxLayout()
        row.addWidget(self.button)
        row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.summary)
        lay.addWidget(self.conversations)
        lay.addWidget(self.missed_title)
        lay.addWidget(self.missed)
        self._show_details(False)
        self.button.clicked.connect(self.choose_file)

    def choose_file(self) -> None:
        start = str(self.path.parent) if self.path is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Benchmark file", start,
                                              "Benchmark files (*.json);;All files (*)")
        if name:
            self.run_file(name)

    def run_file(self, path: str | Path) -> None:
        """Run ``path`` (the dialog's choice; tests call this directly)."""
        self.path = Path(path)
        self.report, self.error, self.running = None, None, True
        self._tone(None)
        self.summary.setText(f"Putting the questions of {self.path.name} to this memory…")
        self._show_details(False)
        self.fileChosen.emit(str(self.path))

    def show_report(self, report: KnowReport) -> None:
        self.report, self.error, self.running = report, None, False
        self._tone(None)
        name = self.path.name if self.path is not None else "the file"
        self.summary.setText(f"{report.summary()}\n({name}: what the memory would show, not "
                             "what a model would answer)")
        per = report.by_conversation()
        if len(per) > 1:
            self.conversations.setText("Per conversation: " + " · ".join(
                f"{c}: {k} of {n}" for c, k, n in per))
            self.conversations.show()
        else:
            self.conversations.hide()
        missed = [missed_line(i) for i in report.items if not i.known]
        self.missed_title.setText(
            f"Missed ({len(missed)}), with the answer words no fact shown carries:" if missed
            else "No question missed.")
        self.missed.setPlainText("\n".join(missed))
        self.missed_title.show()
        self.missed.setVisible(bool(missed))

    def show_error(self, message: str) -> None:
        self.report, self.error, self.running = None, message, False
        self.summary.setText(message)
        self._tone("error")
        self._show_details(False)

    def _show_details(self, on: bool) -> None:
        for w in (self.conversations, self.missed_title, self.missed):
            w.setVisible(on)

    def missed_lines(self) -> list[str]:
        text = self.missed.toPlainText()
        return text.split("\n") if text else []

    def _tone(self, tone: str | None) -> None:
        role = self.summary.foregroundRole()
        pal = self.summary.palette()
        pal.setColor(role, self.palette().color(role) if tone is None else palette.accent(tone))
        self.summary.setPalette(pal)
