"""Plain-text labels: model and server text is data, never markup.

Qt labels default to *auto* text format, which renders anything that looks like HTML. Every
label that can show a model's or a server's words sets plain text itself (:func:`message_label`
makes one); :func:`plain_labels` is the belt to those braces: it turns every label of a widget
tree still on auto into plain text, and a test checks no window has one left.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget


def plain_labels(root: QWidget) -> int:
    """Set every auto-format label under ``root`` to plain text; returns how many changed."""
    changed = 0
    for label in root.findChildren(QLabel):
        if label.textFormat() == Qt.TextFormat.AutoText:
            label.setTextFormat(Qt.TextFormat.PlainText)
            changed += 1
    return changed


def message_label(parent: QWidget, text: str = "") -> QLabel:
    """A plain-text, word-wrapped, selectable label (for messages that may quote a server)."""
    lab = QLabel(text, parent)
    lab.setTextFormat(Qt.TextFormat.PlainText)
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab
