"""The Wake tab: the recall quiz (each question, answer, score and attempts, the quiz's notes,
the forgotten probe's three conditions and the correction probe's verdict) and the "How much
would I still know?" box (S-RET-1).

The box puts a benchmark file's questions (``nocturne-memory-bench/1`` or LoCoMo) to the open
memory's prompt assembly (:mod:`nocturne_desktop.core.checks.recall`: no model, nothing
written) in a read job, and shows the share known, per conversation, and every missed question
with the answer words no shown fact carried, as ``nocturne still-know FILE --missed`` prints.
Everything here is plain text: questions and answers come from a file or a model.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.checks.quiz import (
    CorrectionProbe,
    ForgottenProbe,
    QuizProgress,
    QuizReport,
)
from nocturne_desktop.core.checks.recall import KnowItem, KnowReport
from nocturne_desktop.ui.models.tables import QuizTableModel
from nocturne_desktop.ui.palette import set_tone
from nocturne_desktop.ui.plaintext import message_label

IDLE_TEXT = ("Load a benchmark file (nocturne-memory-bench/1 or LoCoMo JSON) to put its questions "
             "to this memory as the agent would assemble it. No model is asked; nothing is written.")


def missed_line(item: KnowItem) -> str:
    """One missed question, as ``nocturne still-know --missed`` prints it."""
    return f"- {item.question} (answer: {item.answer}; missing: {', '.join(item.missing) or '-'})"


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
        self.summary = message_label(self, IDLE_TEXT)
        self.conversations = message_label(self)
        self.missed_title = message_label(self)
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
        set_tone(self.summary, tone)


NO_CORRECTION = "No superseded fact to ask about yet (no correction has replaced a fact)."


def notes_text(notes: list[str]) -> str:
    """The quiz's notes as plain lines (a refused model question and the template asked)."""
    return "Notes:\n" + "\n".join(f"• {n}" for n in notes) if notes else ""


class CorrectionBox(QGroupBox):
    """The correction probe (S-REC-3): the question asked about a superseded fact, the agent's
    answer, the current value, and the verdict in one line. Plain text throughout: the question
    and the answer are a model's words."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Correction probe", parent)
        self.fact = message_label(self)
        self.current = message_label(self)
        self.question = message_label(self)
        self.answer = message_label(self)
        self.result = message_label(self)
        lay = QVBoxLayout(self)
        for w in (self.fact, self.current, self.question, self.answer, self.result):
            lay.addWidget(w)
        lay.addStretch(1)
        self.show_probe(None)

    def show_probe(self, probe: CorrectionProbe | None) -> None:
        if probe is None:
            self.fact.setText(NO_CORRECTION)
            for w in (self.current, self.question, self.answer, self.result):
                w.setText("")
                w.hide()
            set_tone(self.result, None)
            return
        self.fact.setText(f"Superseded: {probe.fact_id} — {probe.text}")
        self.current.setText(f"Current: {probe.successor_id} — {probe.successor_text}")
        asked = " (a template question: the model's was refused)" if probe.template_fallback else ""
        self.question.setText(f"Q: {probe.question}{asked}")
        self.answer.setText(f"A: {probe.answer}")
        self.result.setText(probe.verdict)
        set_tone(self.result, "ok" if probe.passed else "error")
        for w in (self.current, self.question, self.answer, self.result):
            w.show()


class WakePanel(QWidget):
    """Run the recall quiz and show each question, answer, score and attempts, the notes, the
    forgotten probe's three conditions and the correction probe. Signals: ``quizRequested()``,
    ``cancelRequested()``."""

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
        self.message = message_label(self)
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
        self.probe_fact = message_label(self.probe_box)
        self.probe_answer = message_label(self.probe_box)
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

        self.correction_box = CorrectionBox(self)
        self.notes = message_label(self)
        probes = QHBoxLayout()
        probes.addWidget(self.probe_box, 1)
        probes.addWidget(self.correction_box, 1)

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
        lay.addWidget(self.notes)
        lay.addLayout(probes)
        self.still_know = StillKnowBox(self)  # a benchmark file's questions for this memory
        lay.addWidget(self.still_know)
        self.message.hide()
        self.notes.hide()
        self.run_button.clicked.connect(self.quizRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)
        self.show_probe(None)

    def set_busy(self, kind: str) -> None:
        self.run_button.setEnabled(not kind)
        self.cancel_button.setEnabled(kind == "quiz")
        if kind == "quiz":
            self.message.show()
            self.message.setText("Choosing the facts to ask about…")
            set_tone(self.message, None)
            self.progress.setRange(0, 0)  # busy until the first step says how many
            self.progress.show()
        elif not kind:
            self.progress.hide()

    def show_progress(self, p: QuizProgress) -> None:
        """One :class:`~nocturne_desktop.core.checks.quiz.QuizProgress`: step k of n, in words."""
        self.progress.setRange(0, max(1, p.total))
        self.progress.setValue(max(0, p.step - 1))
        self.progress.setFormat(f"{max(0, p.step - 1)} of {p.total} done")
        self.progress.show()
        self.message.setText(f"{p.doing[:1].upper()}{p.doing[1:]}…  (a local model may take "
                             "a while per question; Esc stops)")
        self.message.show()
        set_tone(self.message, None)

    def on_failed(self, message: str) -> None:
        self.progress.hide()
        self.message.setText(message)
        self.message.show()
        set_tone(self.message, "error")

    def show_report(self, report: QuizReport) -> None:
        self.progress.hide()
        self.message.setText("")
        self.message.hide()
        self.model.set_rows(report.questions)
        n = len(report.questions)
        ok = sum(1 for q in report.questions if q.correct)
        retries = sum(1 for q in report.questions if q.attempts > 1)
        template = report.fallbacks
        self.recall.setText(f"Recall {report.recall:.0%}: {ok} of {n} correct"
                            f"{f' · {retries} needed the verbatim re-ask' if retries else ''}"
                            f"{f' · {template} asked from the template (see the notes)' if template else ''}")
        self.show_probe(report.probe)
        self.correction_box.show_probe(report.correction)
        self.notes.setText(notes_text(report.notes))
        self.notes.setVisible(bool(report.notes))

    def show_probe(self, probe: ForgottenProbe | None) -> None:
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
            set_tone(mark, "ok" if value else "error")
        self.probe_result.setText("passed" if probe.passed else "failed")
        set_tone(self.probe_result, "ok" if probe.passed else "error")
