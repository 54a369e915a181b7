"""The chat pane: the transcript, the input box and Send/Stop.

A reply streams in as plain text (``QTextCursor.insertText``); when it ends it is rendered as
Markdown by :mod:`nocturne_desktop.ui.markdown` (code blocks, lists, emphasis, links), where raw
HTML stays literal text and images are never loaded. The person's own messages, headers and the
quiet "remembered" lines are plain text with formats we set ourselves. Each exchange gets a
quiet "remembering…" mark while the encoder reads it, replaced by what it remembered; the next
message can be sent meanwhile (one sent while a reply streams waits for it, shown above the
input box). Hovering a quiet line
shows what the encoder refused and why. A link opens only when clicked, and only http(s) and
mailto; hovering it shows its target, and one whose text shows another address asks first
(:mod:`~nocturne_desktop.ui.links`). Right-click a message to copy it (its Markdown source, as
the model wrote it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, Qt, QUrl, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QDesktopServices,
    QFont,
    QGuiApplication,
    QKeyEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QTextEdit,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.types import Fact, Turn
from nocturne_desktop.ui import markdown, palette
from nocturne_desktop.ui.jobs.bodies.chat import EncodeSummary
from nocturne_desktop.ui.links import LinkGuard
from nocturne_desktop.ui.models.text import plain_tooltip

SHOWN_TURNS = 400
"""At most this many turns of a reopened conversation are shown (the newest)."""


PLACEHOLDER = "Message Nocturne…"
PRIVATE_PLACEHOLDER = "Private message — not saved, not remembered…"
REMEMBERING = "memory: remembering…"
REMEMBERING_NOTE = ("The encoder is reading this exchange for facts worth keeping. You can send "
                    "your next message meanwhile; Esc stops it (the turns are kept and read "
                    "next time).")


class ChatInput(QPlainTextEdit):
    """Enter (or Ctrl+Enter) sends; Shift+Enter adds a line. Signal: ``submitted()``."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(PLACEHOLDER)
        self.setToolTip("Enter sends, Shift+Enter adds a line")
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


@dataclass
class Message:
    """One message of the transcript: who, its text as written, and where it sits."""

    role: str
    """``user`` or ``assistant``."""
    text: str
    start: int
    end: int


class Transcript(QTextBrowser):
    """Read-only, selectable, copyable conversation. Lines may carry a hover note.

    Signals: ``linkOpened(QUrl)`` after a clicked link was handed to the system,
    ``linkRefused(QUrl)`` for a clicked link of another scheme (never opened),
    ``regenerateRequested()`` from the last reply's right-click menu."""

    linkOpened = Signal(QUrl)
    linkRefused = Signal(QUrl)
    regenerateRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        self.setOpenLinks(False)  # QTextBrowser would navigate to it; we decide on click
        self.setOpenExternalLinks(False)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.anchorClicked.connect(self._open_link)
        self.links = LinkGuard(self)
        """A link's target on hover; a click on a link showing another address asks first."""
        self._notes: list[str] = []
        self.messages: list[Message] = []
        self.refused_resources: list[str] = []
        self.setMouseTracking(True)
        self._stream_open = False
        self.can_regenerate = False
        """Set by the pane: idle, and the last message was answered."""
        self._marks: dict[int, QTextCursor] = {}
        """The "remembering…" lines still waiting for the encoder, by key (a cursor at the
        start of each line: Qt moves it as text is added or rendered before it)."""

    # -- safety ----------------------------------------------------------------------------------
    def loadResource(self, _type: int, name: QUrl | str) -> object:
        """No resource is ever loaded (replies carry no images; nothing is fetched)."""
        self.refused_resources.append(name.toString() if isinstance(name, QUrl) else name)
        return None

    def setSource(self, name: QUrl | str, type: object = None) -> None:
        """Never navigate: the transcript is not a browser."""

    def _open_link(self, url: QUrl) -> None:
        if markdown.is_openable(url):
            self.links.open(url, self._hand_over)  # asks first if its text shows another address
        else:
            self.linkRefused.emit(url)

    def _hand_over(self, url: QUrl) -> None:
        QDesktopServices.openUrl(url)
        self.linkOpened.emit(url)

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
            # a fresh block format: the block before may be a rendered list item or code block
            cur.insertBlock(QTextBlockFormat(), QTextCharFormat())
        cur.insertText(text, self._fmt(kind))
        if note is not None:
            self._notes.append(note)
            cur.block().setUserState(len(self._notes))  # 1-based: 0/-1 mean "no note"
        self._scroll_end()

    def _scroll_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _end_pos(self) -> int:
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        return cur.position()

    def add_user(self, text: str) -> None:
        if self._stream_open:
            self.end_reply(False)
        if not self.document().isEmpty():
            self._append_block("", "text")
        self._append_block("You", "user-head")
        self._append_block("", "text")
        start = self._end_pos()
        self.add_tokens(text)
        self.messages.append(Message("user", text, start, self._end_pos()))

    def begin_reply(self) -> None:
        self._append_block("Nocturne", "bot-head")
        self._append_block("", "text")
        start = self._end_pos()
        self.messages.append(Message("assistant", "", start, start))
        self._stream_open = True

    def add_tokens(self, text: str) -> None:
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.insertText(text, self._fmt("text"))
        if self._stream_open and self.messages:
            msg = self.messages[-1]
            msg.text += text
            msg.end = cur.position()
        self._scroll_end()

    def end_reply(self, stopped: bool) -> None:
        if self._stream_open and self.messages:
            self._render_last()
        if stopped:
            self._append_block("[stopped — partial reply kept]", "stopped")
        self._stream_open = False

    def add_reply(self, text: str) -> None:
        """A whole reply at once (a past conversation's), rendered like a streamed one."""
        self.begin_reply()
        self.add_tokens(text)
        self.end_reply(False)

    def _render_last(self) -> None:
        """Replace the streamed plain text of the last reply by its Markdown rendering."""
        msg = self.messages[-1]
        if not msg.text.strip():
            return
        cur = QTextCursor(self.document())
        cur.setPosition(msg.start)
        cur.setPosition(msg.end, QTextCursor.MoveMode.KeepAnchor)
        cur.beginEditBlock()
        cur.removeSelectedText()
        cur.insertFragment(markdown.render(msg.text))
        cur.endEditBlock()
        msg.end = cur.position()
        self._scroll_end()

    def message_at(self, pos: QPoint) -> Message | None:
        """The message under a point of the viewport (None between messages)."""
        at = self.cursorForPosition(pos).position()
        for msg in reversed(self.messages):
            if msg.start <= at <= msg.end:
                return msg
        return None

    def copy_message(self, msg: Message) -> None:
        QGuiApplication.clipboard().setText(msg.text)

    def message_menu(self, pos: QPoint) -> QMenu:
        """The right-click menu: the usual copy / select all, and Copy message over a message."""
        menu = self.createStandardContextMenu(pos)
        msg = self.message_at(pos)
        if msg is not None:
            first = menu.actions()[0] if menu.actions() else None
            who = "your message" if msg.role == "user" else "this reply"
            act = menu.addAction(f"Copy {who}")
            act.setObjectName("copyMessage")
            act.triggered.connect(lambda _=False, m=msg: self.copy_message(m))
            acts = [act]
            if msg.role == "assistant" and msg is self.messages[-1]:
                again = menu.addAction("Regenerate this reply")
                again.setObjectName("regenerate")
                again.setToolTip("Ask again; the model no longer receives this reply")
                again.setEnabled(self.can_regenerate and not self._stream_open)
                again.triggered.connect(self.regenerateRequested)
                acts.append(again)
            if first is not None:
                for a in acts:
                    menu.removeAction(a)
                    menu.insertAction(first, a)
                menu.insertSeparator(first)
        return menu

    def contextMenuEvent(self, e: QContextMenuEvent) -> None:
        menu = self.message_menu(e.pos())
        menu.exec(e.globalPos())
        menu.deleteLater()

    def add_quiet(self, text: str, note: str | None = None) -> None:
        self._append_block(text, "quiet", note)

    def add_mark(self, key: int, text: str, note: str | None = None) -> None:
        """A quiet line that :meth:`resolve_mark` later rewrites in place (``key`` names it)."""
        self._append_block(text, "quiet", note)
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.movePosition(QTextCursor.MoveOperation.StartOfBlock)
        self._marks[key] = cur

    def has_mark(self, key: int) -> bool:
        return key in self._marks

    def resolve_mark(self, key: int, text: str, note: str | None = None) -> bool:
        """Rewrite the line of mark ``key`` (its hover note too); False when it is not shown
        (another conversation came up meanwhile)."""
        at = self._marks.pop(key, None)
        if at is None:
            return False
        cur = QTextCursor(at.block())
        cur.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cur.insertText(text, self._fmt("quiet"))
        if note is not None:
            self._notes.append(note)
            cur.block().setUserState(len(self._notes))
        else:
            cur.block().setUserState(-1)
        return True

    def reset(self) -> None:
        """Empty the transcript (another conversation is shown)."""
        self.clear()
        self.messages = []
        self._notes = []
        self._marks = {}
        self._stream_open = False
        self.can_regenerate = False

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
    if summary.private:
        return ("memory off: nothing of this exchange was saved or remembered", None)
    if summary.stopped:
        return ("memory: not remembered yet — stopped; the encoder reads it with your next "
                "message", "Remembering was stopped before it ended. The turns are kept in the "
                "transcript, and the encoder reads them with your next message.")
    if summary.error:
        return (f"memory: the encoder could not run — {summary.error}", summary.error)
    n_ok, n_no = len(summary.remembered), len(summary.refused)
    if not n_ok and not n_no:
        return ("memory: nothing new to remember", None)
    bits = []
    if n_ok:
        # sentences one after another ("… Porto. The user keeps …", not "… Porto.; The …")
        shown = " ".join(t if t.endswith((".", "!", "?")) else t + "."
                         for _id, _b, t in summary.remembered[:3])
        more = f" (+{n_ok - 3} more)" if n_ok > 3 else ""
        bits.append(f"remembered {n_ok}: {shown}{more}")
    if n_no:
        bits.append(f"refused {n_no} (hover for why)")
    note_lines = [f"✓ {i} [{b}] {t}" for i, b, t in summary.remembered]
    note_lines += [f"✗ {t}\n    refused: {why}" for t, why in summary.refused]
    return ("memory: " + " · ".join(bits), "\n".join(note_lines))


class ChatEditBar(QFrame):
    """The non-modal confirmation of a "remember that …" / "forget that …" said in chat:
    the proposal in words, [Remember]/[Forget] and [Not now]. Nothing is written until the
    person accepts. Signals: ``accepted(object proposal)``, ``dismissed()``."""

    accepted = Signal(object)
    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel("", self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.accept_button = QPushButton("Remember", self)
        self.dismiss_button = QPushButton("Not now", self)
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 4, 6, 4)
        row.addWidget(self.label, 1)
        row.addWidget(self.accept_button)
        row.addWidget(self.dismiss_button)
        self.accept_button.clicked.connect(self._accept)
        self.dismiss_button.clicked.connect(self._dismiss)
        self.proposal: HandProposal | None = None
        self.focus_after: QWidget | None = None
        """Where the focus goes when the bar hides with it (the message box): Qt would hand
        it to the next widget of the window, the memory search box."""
        self.hide()

    def offer(self, proposal: HandProposal) -> None:
        self.proposal = proposal
        self.accept_button.setEnabled(True)
        self.accept_button.show()
        if proposal.kind == "add":
            if proposal.duplicate_of is not None:
                self.already(proposal.duplicate_of)
                return
            self.label.setText(f"Remember in {proposal.block}: “{proposal.text}”?")
            self.accept_button.setText("Remember")
            self.accept_button.setToolTip("Add this fact now, as your own edit (Ctrl+Z undoes it)")
        else:
            best = proposal.candidates[0] if proposal.candidates else None
            if best is None:
                self.label.setText(proposal.summary)
                self.accept_button.setEnabled(False)
            elif best.pinned:
                self.label.setText(f"{proposal.summary}.")
                self.accept_button.setEnabled(False)
            else:
                self.label.setText(f"Forget “{best.text}” ({best.id}) now?")
            self.accept_button.setText("Forget")
            self.accept_button.setToolTip("Forget this fact now, as your own edit (Ctrl+Z undoes it)")
        self.dismiss_button.setText("Not now")
        self.show()

    def already(self, fact: Fact) -> None:
        """What was to be remembered is in memory already: say so; nothing is written."""
        self.proposal = None
        self.label.setText(f"Already remembered: “{fact.text}” ({fact.id}) — nothing was added.")
        self.accept_button.hide()
        self.dismiss_button.setText("OK")
        self.show()

    def refused(self, message: str) -> None:
        """What was to be remembered may not enter memory: say why; nothing is written."""
        self.proposal = None
        self.label.setText(message)
        self.accept_button.hide()
        self.dismiss_button.setText("OK")
        self.show()

    def waiting(self) -> None:
        """Accepted while a reply runs: it is applied when the reply ends."""
        if self.accept_button.hasFocus() and self.focus_after is not None:
            self.focus_after.setFocus(Qt.FocusReason.OtherFocusReason)  # not to the search box
        self.accept_button.setEnabled(False)
        self.label.setText(self.label.text() + "  (applied when the reply ends)")

    def _accept(self) -> None:
        if self.proposal is not None:
            self.accepted.emit(self.proposal)

    def _dismiss(self) -> None:
        self.close_offer()
        self.dismissed.emit()

    def close_offer(self) -> None:
        self.proposal = None
        focused = QApplication.focusWidget()
        if self.focus_after is not None and focused is not None and self.isAncestorOf(focused):
            self.focus_after.setFocus(Qt.FocusReason.OtherFocusReason)
        self.hide()


class QueuedBar(QFrame):
    """Above the input box: the messages sent while a reply streams, waiting to be sent after
    it, and [Take back] (they return to the input box). Signal ``takeBack()``."""

    takeBack = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel("", self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.take_back = QPushButton("Take back", self)
        self.take_back.setToolTip("Do not send it: put it back in the message box")
        self.take_back.clicked.connect(self.takeBack)
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 4, 6, 4)
        row.addWidget(self.label, 1)
        row.addWidget(self.take_back)
        self.hide()

    def show_queued(self, texts: Sequence[str]) -> None:
        if not texts:
            self.hide()
            return
        first = texts[0] if len(texts[0]) <= 80 else texts[0][:79] + "…"
        more = f" (and {len(texts) - 1} more)" if len(texts) > 1 else ""
        self.label.setText(f"Sent after this reply: “{first}”{more}")
        self.show()


class ChatPane(QWidget):
    """Signals: ``sendRequested(str)``, ``stopRequested()``, ``regenerateRequested()``,
    ``takeBackRequested()`` (the queued messages, back into the box)."""

    sendRequested = Signal(str)
    stopRequested = Signal()
    regenerateRequested = Signal()
    takeBackRequested = Signal()

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
        self.remember = QCheckBox("Memory on", self)
        self.remember.setChecked(True)
        self.remember.setToolTip(
            "Off: a private chat. The model still reads memory to answer, but nothing you say "
            "and nothing it replies is saved or remembered until you turn memory back on.")
        self.remember.toggled.connect(self._on_remember)
        self.status = QLabel("", self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)  # never widens the pane (the splitter would jump)
        self.status.setStyleSheet("")
        title = QLabel("Chat", self)
        tf = title.font()
        tf.setBold(True)
        title.setFont(tf)

        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.remember)
        buttons.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.input, 1)
        row.addLayout(buttons)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 4, 4)
        lay.addWidget(title)
        lay.addWidget(self.transcript, 1)
        self.edit_bar = ChatEditBar(self)
        self.edit_bar.focus_after = self.input
        lay.addWidget(self.edit_bar)
        lay.addWidget(self.status)
        self.queued_bar = QueuedBar(self)
        self.queued_bar.takeBack.connect(self.takeBackRequested)
        lay.addWidget(self.queued_bar)
        lay.addLayout(row)

        self.transcript.regenerateRequested.connect(self.regenerateRequested)
        self.input.submitted.connect(self._submit)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stopRequested)
        self._streaming = False
        self._can_send = True
        self._idle = True
        self._sent: str | None = None
        self._queued: list[str] = []
        self._last_private = False

    def _submit(self) -> None:
        # The box keeps the text until the store has accepted the turn (on_accepted): a
        # message the store refuses stays there, beside the reason. The same text pressed
        # again before that is the same message, not a second one.
        text = self.input.toPlainText().strip()
        if not text or not self._can_send or text == self._sent:
            return
        self.sendRequested.emit(text)

    def _on_remember(self, on: bool) -> None:
        if on:
            self.transcript.add_quiet("memory on: what you say from here is saved and remembered")
        else:
            self.transcript.add_quiet("memory off — a private chat: nothing you say from here is saved "
                                      "or remembered (the model still reads memory to answer)")
        self.input.setPlaceholderText(PLACEHOLDER if on else PRIVATE_PLACEHOLDER)

    def set_busy(self, kind: str) -> None:
        """What runs (the session's ``busy``): a message can be sent when nothing runs, while
        memory remembers and while a reply streams (then it waits for that reply); not while
        a sleep, a quiz, a restore or an import writes memory."""
        self._idle = not kind
        self.set_can_send(kind in ("", "chat", "remembering"))

    def set_can_send(self, on: bool) -> None:
        self._can_send = on
        self.send_button.setEnabled(on)
        msgs = self.transcript.messages
        self.transcript.can_regenerate = on and self._idle and bool(msgs) \
            and msgs[-1].role == "assistant" \
            and not self._last_private  # a private reply is not on record to answer again

    def set_streaming(self, on: bool) -> None:
        self._streaming = on
        self.stop_button.setEnabled(on)
        self.status.setText("Nocturne is replying…  (Esc stops it; what you send now goes "
                            "after it)" if on else "")

    # -- session hooks ---------------------------------------------------------------------------
    def show_history(self, turns: Sequence[Turn]) -> None:
        """The earlier turns the model still receives with the next message (after a restart
        the pane said "No conversation yet" while the model was sent them)."""
        if not turns:
            return
        n = len(turns)
        which = "this turn" if n == 1 else f"these {n} turns"
        self.transcript.add_quiet(
            f"Earlier in this conversation — the model still receives {which} with your next message")
        self._show_turns(turns)

    def show_conversation(self, title: str, turns: Sequence[Turn], carried: int) -> None:
        """Another conversation, reopened: the pane shows its turns (the last ``SHOWN_TURNS``)
        and says how many of them the model receives with the next message."""
        self.transcript.reset()
        self._last_private = False
        shown = list(turns)[-SHOWN_TURNS:]
        n = len(turns)
        head = f"Conversation “{title}”" if title else "Conversation"
        more = f", the last {len(shown)} shown" if len(shown) < n else ""
        self.transcript.add_quiet(
            f"{head} — {n} turn{'s' if n != 1 else ''}{more}; the model receives the last "
            f"{carried} of them with your next message")
        self._show_turns(shown)
        self.set_can_send(self._can_send)

    def _show_turns(self, turns: Sequence[Turn]) -> None:
        """Recorded turns into the transcript, the user's and the assistant's."""
        for t in turns:
            if t.role == "user":
                self.transcript.add_user(t.text)
            elif t.role == "assistant":
                self.transcript.add_reply(t.text)

    def clear_conversation(self) -> None:
        """A new conversation: the pane is empty (memory is kept)."""
        self.transcript.reset()
        self._last_private = False
        self.set_can_send(self._can_send)

    def on_started(self, text: str) -> None:
        self._sent = text
        if self._queued and self._queued[0] == text:
            self._queued.pop(0)
            self.queued_bar.show_queued(self._queued)
        self.set_streaming(True)

    def on_queued(self, text: str) -> None:
        """A message sent while the reply streams: out of the box, into the bar above it."""
        self._queued.append(text)
        if self.input.toPlainText().strip() == text:
            self.input.clear()
        self.queued_bar.show_queued(self._queued)

    def take_back(self, texts: Sequence[str]) -> None:
        """The queued messages, not sent: back into the box (before what is typed there)."""
        self._queued = []
        self.queued_bar.show_queued(())
        typed = self.input.toPlainText().strip()
        self.input.setPlainText("\n\n".join([*texts, *([typed] if typed else [])]))
        self.input.moveCursor(QTextCursor.MoveOperation.End)

    def on_accepted(self, _turn: int = 0) -> None:
        """The user's turn is in the store: show it, let go of the input box."""
        text = self._sent or ""
        self._sent = None
        if self.input.toPlainText().strip() == text:
            self.input.clear()
        self.transcript.add_user(text)
        self.transcript.begin_reply()

    def on_regenerating(self) -> None:
        """A new reply to the last message starts; the one above stays, marked replaced."""
        self.set_streaming(True)
        self.transcript.add_quiet("↻ regenerated — the model no longer receives the reply above")
        self.transcript.begin_reply()

    def on_tokens(self, text: str) -> None:
        self.transcript.add_tokens(text)

    def on_replied(self, _text: str, stopped: bool) -> None:
        self.transcript.end_reply(stopped)  # a stopped reply is still remembered
        self.set_streaming(False)

    def on_remembering(self, key: int) -> None:
        """The encoder will read an exchange: a quiet "remembering…" mark in the transcript,
        rewritten in place by :meth:`on_encoded` (nothing waits for it)."""
        self.transcript.add_mark(key, REMEMBERING, REMEMBERING_NOTE)

    def on_encoded(self, summary: EncodeSummary) -> None:
        self._last_private = summary.private
        line, note = describe_encode(summary)
        if not self.transcript.resolve_mark(summary.key, line, note):
            self.transcript.add_quiet(line, note)

    def on_failed(self, message: str) -> None:
        # refused before the store took it: the box still holds the text (a queued one is
        # put back when the box is empty)
        if self._sent and not self.input.toPlainText().strip():
            self.input.setPlainText(self._sent)
        self._sent = None
        self.transcript.add_error(message)
        self.set_streaming(False)

    def on_idle(self) -> None:
        self.set_streaming(False)

    def text(self) -> str:
        return str(self.transcript.toPlainText())
