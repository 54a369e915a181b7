"""Plain text for memory, model and server words wherever they are not Markdown (S-DOOR-4).

Qt renders a label in its default *auto* format, every tooltip, and a message box's text as
rich text as soon as the text *looks* like HTML (a tag before the first line break): a fact
saying ``<img src="file:///…">`` would read that file and show it. Words that come from memory
(facts, turns, titles, version labels), from a model (replies' reasons, questions, answers) or
from a server (its error messages, its model names) are data, so every widget that shows them
goes through this module:

- :func:`plain_tooltip` - a tooltip string that shows its text literally (escaped, wrapped);
  the item models return it as their tooltip data (it is defined with the models' other cell
  texts, which import no Qt);
- :func:`set_tip` - a widget's, an action's or a tree item's tooltip through it;
- :func:`message_label` / :func:`plain_label` - a label in ``PlainText``;
- :func:`message_box` / :func:`warn` - a message box in ``PlainText`` (the static
  ``QMessageBox.warning`` and friends render their text as rich text when it looks like HTML);
- :func:`plain_labels` - the belt to those braces: every label of a widget tree still on auto
  made plain. ``tests/ui/test_plain_text.py`` walks every window, tab, dialog and panel over a
  memory of hostile texts and fails on anything that would render as markup.

Replies are Markdown and go through :mod:`nocturne_desktop.ui.markdown` instead.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMessageBox, QTreeWidgetItem, QWidget

from nocturne_desktop.ui.models.text import plain_tooltip

__all__ = ["message_box", "message_label", "plain_label", "plain_labels", "plain_tooltip",
           "set_tip", "warn"]


def set_tip(target: QWidget | QAction | QTreeWidgetItem, text: str, column: int = 0) -> None:
    """Give ``target`` the tooltip ``text``, shown literally (``column`` for a tree item)."""
    tip = plain_tooltip(text)
    if isinstance(target, QTreeWidgetItem):
        target.setToolTip(column, tip)
    else:
        target.setToolTip(tip)


def plain_labels(root: QWidget) -> int:
    """Set every auto-format label under ``root`` to plain text; returns how many changed."""
    changed = 0
    for label in root.findChildren(QLabel):
        if label.textFormat() == Qt.TextFormat.AutoText:
            label.setTextFormat(Qt.TextFormat.PlainText)
            changed += 1
    return changed


def plain_label(text: str = "", parent: QWidget | None = None, *, wrap: bool = False) -> QLabel:
    """A label that shows ``text`` as its characters."""
    lab = QLabel(parent)
    lab.setTextFormat(Qt.TextFormat.PlainText)
    lab.setWordWrap(wrap)
    lab.setText(text)
    return lab


def message_label(parent: QWidget, text: str = "") -> QLabel:
    """A plain-text, word-wrapped, selectable label (for messages that may quote a server)."""
    lab = plain_label(text, parent, wrap=True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


def message_box(parent: QWidget | None, icon: QMessageBox.Icon, text: str,
                buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok, *,
                title: str = "Nocturne") -> QMessageBox:
    """A message box whose text is plain (not shown yet: ``exec()`` or ``open()`` it)."""
    box = QMessageBox(icon, title, "", buttons, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    return box


def warn(parent: QWidget | None, text: str,
         icon: QMessageBox.Icon = QMessageBox.Icon.Warning) -> None:
    """Show ``text`` in a modal, plain-text message box (instead of ``QMessageBox.warning``)."""
    box = message_box(parent, icon, text)
    try:
        box.exec()
    finally:
        box.deleteLater()
