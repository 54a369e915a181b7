"""The chat pane: the transcript (plain text only), the input box and Send/Stop.

Model output is inserted with ``QTextCursor.insertText`` into a ``QPlainTextEdit``: it is never
interpreted as HTML or rich text. Headers and the quiet "remembered" lines use character
formats we set ourselves. Hovering a quiet line shows what the encoder refused and why.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt, Signal
from PySide6.QtGui import QFont, QKeyEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models import plain_tooltip
from nocturne_desktop.ui.workers import EncodeSummary


class ChatInput(QPlainTextEdit):
    """Enter (or Ctrl+Enter) sends; Shift+Enter adds a line. Signal: ``submitted()``."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText("Message Nocturne…  (Enter sends, Shift+Enter adds a line)")
        self.setTabChangesFocus(True)
        self.setMaximumHeight(110)
        self.setMinimumHeight(56)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.textCursor().insertText("\n")
                return
            self.submitted.emit()
            return
        super().keyPressEvent(e)


class Transcript(QPlainTextEdit):
    """Read-only, selectable, copyable conversation. Lines may carry a hover note."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self._notes: list[str] = []
        self.setMouseTracking(True)
        self._stream_open = False

    # -- writing ---------------------------------------------------------------------------------
    def _fmt(self, kind: str) -> QTextCharFormat:
        f = QTextCharFormat()
        if kind == "user-head":
            f.setFontWeight(QFont.Weight.Bold)
            f.setForeground(palette.accent("running"))
        elif kind == "bot-head":
            f.setFontWeight(QFont.Weight.Bold)
            f.setForeground(palette.accent("ok"))
        elif kind in ("quiet", "stopped"):
            f.setForeground(palette.muted())
            f.setFontItalic(kind == "stopped")
            f.setFontPointSize(max(7.0, self.font().pointSizeF() - 1))
        elif kind == "error":
            f.setForeground(palette.accent("error"))
        else:
            f.setForeground(self.palette().color(self.foregroundRole()))
        return f

    def _append_block(self, text: str, kind: str, note: str | None = None) -> None:
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        if not self.document().isEmpty():
            cur.insertBlock()
        cur.insertText(text, self._fmt(kind))
        if note is not None:
            self._notes.append(note)
            cur.block().setUserState(len(self._notes))  # 1-based: 0/-1 mean "no note"
        self._scroll_end()

    def _scroll_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def add_user(self, text: str) -> None:
        if self._stream_open:
            self.end_reply(False)
        if not self.document().isEmpty():
            self._append_block("", "text")
        self._append_block("You", "user-head")
        self._append_block(text, "text")

    def begin_reply(self) -> None:
        self._append_block("Nocturne", "bot-head")
        self._append_block("", "text")
        self._stream_open = True

    def add_tokens(self, text: str) -> None:
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.insertText(text, self._fmt("text"))
        self._scroll_end()

    def end_reply(self, stopped: bool) -> None:
        if stopped:
            self._append_block("[stopped — partial reply kept]", "stopped")
        self._stream_open = False

    def add_quiet(self, text: str, note: str | None = None) -> None:
        self._append_block(text, "quiet", note)

    def add_error(self, text: str) -> None:
        self._stream_open = False
        self._append_block(f"⚠ {text}", "error")

    # -- hover notes -----------------------------------------------------------------------------
    def note_at(self, pos: QPoint) -> str | None:
        block = self.cursorForPosition(pos).block()
        state = block.userState()
        if 1 <= state <= len(self._notes):
            return self._notes[state - 1]
        return None

    def viewportEvent(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip:
            pos = e.pos()  # type: ignore[attr-defined]
            note = self.note_at(pos)
            if note:
                QToolTip.showText(e.globalPos(), plain_tooltip(note), self.viewport())  # type: ignore[attr-defined]
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(e)


def describe_encode(summary: EncodeSummary) -> tuple[str, str | None]:
    """The quiet line after a reply, and its hover note (what was refused and why)."""
    if summary.error:
        return (f"memory: the encoder could not run — {summary.error}", summary.error)
    n_ok, n_no = len(summary.remembered), len(summary.refused)
    if not n_ok and not n_no:
        return ("memory: nothing new to remember", None)
    bits = []
    if n_ok:
        shown = "; ".join(t for _id, _b, t in summary.remembered[:3])
        more = f" (+{n_ok - 3} more)" if n_ok > 3 else ""
        bits.append(f"remembered {n_ok}: {shown}{more}")
    if n_no:
        bits.append(f"refused {n_no} (hover for why)")
    note_lines = [f"✓ {i} [{b}] {t}" for i, b, t in summary.remembered]
    note_lines += [f"✗ {t}\n    refused: {why}" for t, why in summary.refused]
    return ("memory: " + " · ".join(bits), "\n".join(note_lines))


class ChatPane(QWidget):
    """Signals: ``sendRequested(str)``, ``stopRequested()``."""

    sendRequested = Signal(str)
    stopRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.transcript = Transcript(self)
        self.transcript.setPlaceholderText(
            "No conversation yet. Say hello — facts worth keeping go to the scratch block, "
            "and Sleep consolidates them."
        )
        self.input = ChatInput(self)
        self.send_button = QPushButton("Send", self)
        self.send_button.setToolTip("Send (Enter or Ctrl+Enter; Shift+Enter adds a line)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the reply, keeping what arrived (Esc)")
        self.stop_button.setEnabled(False)
        self.status = QLabel("", self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setStyleSheet("")
        title = QLabel("Chat", self)
        tf = title.font()
        tf.setBold(True)
        title.setFont(tf)

        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.input, 1)
        row.addLayout(buttons)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 4, 4)
        lay.addWidget(title)
        lay.addWidget(self.transcript, 1)
        lay.addWidget(self.status)
        lay.addLayout(row)

        self.input.submitted.connect(self._submit)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stopRequested)
        self._streaming = False
        self._can_send = True
        self._sent: str | None = None

    def _submit(self) -> None:
        # The box keeps the text until the store has accepted the turn (on_accepted): a
        # message the store refuses stays there, beside the reason.
        text = self.input.toPlainText().strip()
        if not text or not self._can_send:
            return
        self.sendRequested.emit(text)

    def set_can_send(self, on: bool) -> None:
        self._can_send = on
        self.send_button.setEnabled(on)

    def set_streaming(self, on: bool) -> None:
        self._streaming = on
        self.stop_button.setEnabled(on)
        self.status.setText("Nocturne is replying…  (Esc stops)" if on else "")

    # -- session hooks ---------------------------------------------------------------------------
    def on_started(self, text: str) -> None:
        self._sent = text
        self.set_streaming(True)

    def on_accepted(self, _turn: int = 0) -> None:
        """The user's turn is in the store: show it, let go of the input box."""
        text = self._sent or ""
        self._sent = None
        if self.input.toPlainText().strip() == text:
            self.input.clear()
        self.transcript.add_user(text)
        self.transcript.begin_reply()

    def on_tokens(self, text: str) -> None:
        self.transcript.add_tokens(text)

    def on_replied(self, _text: str, stopped: bool) -> None:
        self.transcript.end_reply(stopped)
        self.status.setText("remembering…  (Esc stops)")  # a stopped reply is still encoded
        self.stop_button.setEnabled(True)

    def on_encoded(self, summary: EncodeSummary) -> None:
        line, note = describe_encode(summary)
        self.transcript.add_quiet(line, note)
        self.status.setText("")

    def on_failed(self, message: str) -> None:
        self._sent = None  # refused before the store took it: the box still holds the text
        self.transcript.add_error(message)
        self.set_streaming(False)

    def on_idle(self) -> None:
        self.set_streaming(False)

    def text(self) -> str:
        return str(self.transcript.toPlainText())
