"""The roles, flags and fonts the item models share (Qt).

A view asks ``data()`` and ``flags()`` per cell on every paint and layout, so the roles are
plain ints compared first and the fonts are made once.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

Index = QModelIndex | QPersistentModelIndex
ROLE_OBJECT = int(Qt.ItemDataRole.UserRole) + 1
"""The row's underlying object (Fact, Version, DiffEntry, …)."""
DISPLAY = Qt.ItemDataRole.DisplayRole
NO_INDEX = QModelIndex()

SELECTABLE = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
NO_FLAGS = Qt.ItemFlag.NoItemFlags
LEAF = SELECTABLE | Qt.ItemFlag.ItemNeverHasChildren
"""A fact or version row. QTreeView's layout asks every row it shows whether it has children;
with this flag it stops at ``flags()`` (one call into Python per row, not three through the
filter proxy's ``hasChildren`` and ``canFetchMore``)."""

DISPLAY_ROLE = int(Qt.ItemDataRole.DisplayRole)
TOOLTIP_ROLE = int(Qt.ItemDataRole.ToolTipRole)
FONT_ROLE = int(Qt.ItemDataRole.FontRole)
FOREGROUND_ROLE = int(Qt.ItemDataRole.ForegroundRole)
TEXT_ALIGNMENT_ROLE = int(Qt.ItemDataRole.TextAlignmentRole)
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


@functools.cache
def font(*, bold: bool = False, struck: bool = False) -> QFont:
    """A block row's font (bold) and a listed inactive fact's (struck), made once (a paint asks
    per cell) and after the application exists."""
    f = QFont()
    f.setBold(bold)
    if struck:
        f.setItalic(True)
        f.setStrikeOut(True)
    return f
