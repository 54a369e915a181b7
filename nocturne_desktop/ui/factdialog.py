"""The dialog that edits a fact by hand or writes a new one (the Memory tab's F2, "Edit text…"
and "Add a fact to …"): the text in a box that wraps, big enough for a sentence and its
correction, and the fact's category beside it. Enter saves (a fact is one sentence);
Shift+Enter adds a line."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.types import CATEGORIES

CATEGORY_NOTES = {
    "identity": "who they are: name, home, work",
    "preferences": "what they like and how they work",
    "commitments": "what they promised or plan",
    "event": "something that happened, at a time or place",
    "context": "anything else worth knowing for now",
}
"""What each category holds, as the list shows it (Sleep's rules move facts by category)."""


class FactDialog(QDialog):
    """A fact's text and category. :meth:`ask` returns ``(text, category)``, or None when
    cancelled."""

    def __init__(self, title: str, header: str, text: str, category: str,
                 parent: QWidget | None = None, *, save: str = "Save") -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.header = QLabel(header, self)
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        self.header.setWordWrap(True)
        self.text = QPlainTextEdit(self)
        self.text.setPlainText(text)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setTabChangesFocus(True)
        self.text.setPlaceholderText("One short sentence, e.g. “The user lives in Porto.”")
        lines = self.text.fontMetrics().lineSpacing()
        self.text.setMinimumHeight(5 * lines + 12)
        self.text.installEventFilter(self)
        self.category = QComboBox(self)
        for name in CATEGORIES:
            self.category.addItem(f"{name} — {CATEGORY_NOTES.get(name, '')}", name)
        self.category.setCurrentIndex(max(0, self.category.findData(category)))
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.save = self.buttons.addButton(save, QDialogButtonBox.ButtonRole.AcceptRole)
        self.save.setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Category:", self.category)
        lay = QVBoxLayout(self)
        lay.addWidget(self.header)
        lay.addWidget(self.text, 1)
        lay.addLayout(form)
        lay.addWidget(self.buttons)
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("x" * 64))
        self.resize(self.minimumWidth() + 80, self.minimumSizeHint().height() + 2 * lines)
        self.text.setFocus()
        self.text.moveCursor(QTextCursor.MoveOperation.End)  # to correct it, not retype it

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (watched is self.text and event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.accept()
            return True
        return super().eventFilter(watched, event)

    def value(self) -> tuple[str, str]:
        return self.text.toPlainText(), str(self.category.currentData())

    @classmethod
    def ask(cls, parent: QWidget, title: str, header: str, text: str, category: str,
            *, save: str = "Save") -> tuple[str, str] | None:
        dialog = cls(title, header, text, category, parent, save=save)
        return dialog.value() if dialog.exec() == QDialog.DialogCode.Accepted else None


def ask_fact(parent: QWidget, title: str, header: str, text: str, category: str,
             *, save: str = "Save") -> tuple[str, str] | None:
    """The fact dialog, modal; ``(text, category)`` or None when cancelled."""
    return FactDialog.ask(parent, title, header, text, category, save=save)
