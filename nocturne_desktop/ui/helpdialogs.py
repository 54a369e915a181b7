"""Help → Keyboard shortcuts and Help → About.

The shortcut list is read from the window's own actions when it opens (it cannot drift from
what the keys do), plus the keys that belong to a widget rather than an action (Enter and
Shift+Enter in the message box, F2 and Delete in the tree, when the window has them).
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Sequence
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QAction, QKeySequence, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop import __version__

WIDGET_KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "Send the message (in the message box)"),
    ("Shift+Enter", "A new line in the message box"),
    ("Right-click a message", "Copy it (a reply as the Markdown the model wrote); on the last "
                              "reply, Regenerate it"),
)


def shortcut_rows(actions: Iterable[QAction]) -> list[tuple[str, str]]:
    """(keys, what) for every action with a shortcut, in menu order, each once."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for a in actions:
        keys = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        if not keys or keys in seen:
            continue
        seen.add(keys)
        what = a.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…")
        tip = a.statusTip()
        rows.append((keys, f"{what} — {tip}" if tip and tip != a.text() else what))
    return rows


class ShortcutsDialog(QDialog):
    def __init__(self, actions: Sequence[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows(actions) + list(WIDGET_KEYS)
        self.table = QTableWidget(len(rows), 2, self)
        self.table.setHorizontalHeaderLabels(["Keys", "Does"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setWordWrap(True)
        for r, (keys, what) in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(keys))
            self.table.setItem(r, 1, QTableWidgetItem(what))
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.table)
        lay.addWidget(buttons)
        self.resize(640, 520)

    def resizeEvent(self, e: QResizeEvent) -> None:
        super().resizeEvent(e)
        self.table.resizeRowsToContents()  # wrapped rows fit the column width they now have

    def showEvent(self, e: QShowEvent) -> None:
        super().showEvent(e)
        self.table.resizeRowsToContents()

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for r in range(self.table.rowCount()):
            keys, what = self.table.item(r, 0), self.table.item(r, 1)
            out.append((keys.text() if keys else "", what.text() if what else ""))
        return out


def about_text(data_dir: Path | str) -> str:
    return (
        f"Nocturne Desktop {__version__}\n\n"
        "A chat agent with a long-term memory you can see, audit and undo. Facts from the "
        "conversation go to the scratch block; Sleep consolidates them (Dedupe → Merge → "
        "Promote → Forget). The model proposes, code gates decide, and every change is a "
        "version you can diff and undo.\n\n"
        "Memory stays on this computer, in one SQLite file:\n"
        f"{data_dir}\n\n"
        f"Python {platform.python_version()} · Qt {qVersion()} · PySide6 {pyside_version}"
    )


class AboutDialog(QDialog):
    def __init__(self, data_dir: Path | str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Nocturne")
        self.text = QLabel(about_text(data_dir), self)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.text)
        lay.addWidget(buttons)
        self.resize(520, 300)
