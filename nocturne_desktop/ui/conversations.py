"""File → Conversations…: every conversation over the one memory, to reopen and continue.

Each row is a conversation's title (the start of its first message), the day it began, its
last turn and its number of turns; the current one is marked. Double-click or Open continues
it (the chat pane shows its turns; the model receives that conversation's history). The list
is read off the GUI thread by the window and handed over with :meth:`set_conversations`.
All text is plain, tooltips too (:mod:`~nocturne_desktop.ui.plaintext`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.types import Conversation
from nocturne_desktop.ui.plaintext import plain_label, set_tip

NO_TITLE = "(no message yet)"
CURRENT_MARK = "▸ "


def when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def row_texts(conv: Conversation, current: int | None) -> list[str]:
    """The columns of one row: title, started, last turn, turns."""
    title = conv.title or NO_TITLE
    if conv.id == current:
        title = CURRENT_MARK + title
    return [title, when(conv.created_at), when(conv.last_at), str(conv.turn_count)]


class ConversationsDialog(QDialog):
    """Non-modal. Signal: ``openRequested(int)`` with the conversation's id."""

    openRequested = Signal(int)
    newRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Conversations")
        self.resize(640, 380)
        self.note = plain_label("Reading the conversations…", self, wrap=True)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Conversation", "Started", "Last turn", "Turns"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.itemActivated.connect(lambda item, _col: self._open(item))
        self.tree.currentItemChanged.connect(lambda *_: self._sync_buttons())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.open_button = QPushButton("Open", self)
        self.open_button.setToolTip("Continue this conversation (Enter or double-click)")
        self.new_button = QPushButton("New conversation", self)
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.new_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        self.open_button.clicked.connect(lambda: self._open(self.tree.currentItem()))
        self.new_button.clicked.connect(self.newRequested)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.tree, 1)
        lay.addWidget(buttons)
        self.conversations: list[Conversation] = []
        self.current: int | None = None
        self.loaded = False
        self._sync_buttons()

    def set_conversations(self, conversations: Sequence[Conversation], current: int | None) -> None:
        self.conversations = list(conversations)
        self.current = current
        self.loaded = True
        self.tree.clear()
        for conv in self.conversations:
            item = QTreeWidgetItem(row_texts(conv, current))
            item.setData(0, Qt.ItemDataRole.UserRole, conv.id)
            item.setTextAlignment(3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            set_tip(item, conv.title or NO_TITLE)
            self.tree.addTopLevelItem(item)
            if conv.id == current:
                self.tree.setCurrentItem(item)
        n = len(self.conversations)
        self.note.setText(
            "No conversation yet." if not n else
            f"{n} conversation{'s' if n != 1 else ''} over the same memory, newest first. "
            "Open one to continue it: the model then receives that conversation's history.")
        self._sync_buttons()

    def show_error(self, message: str) -> None:
        self.note.setText(f"The conversations could not be read: {message}")

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        busy = getattr(self, "_busy", False)
        self.open_button.setEnabled(not busy and self.tree.currentItem() is not None)
        self.new_button.setEnabled(not busy)

    def rows(self) -> list[list[str]]:
        """What the list shows, row by row (tests read it like a person would)."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item is not None:
                out.append([item.text(c) for c in range(self.tree.columnCount())])
        return out

    def _open(self, item: QTreeWidgetItem | None) -> None:
        if item is None or getattr(self, "_busy", False):
            return
        conv = item.data(0, Qt.ItemDataRole.UserRole)
        if isinstance(conv, int):
            self.openRequested.emit(conv)
