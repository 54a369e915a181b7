"""The Memory tab: the block tree, its filter, and the read-only banner for a past version."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.types import Fact, Strength, Version
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models import ROLE_OBJECT, BlockTreeModel, FactFilterProxy, fit_columns


class VersionBanner(QFrame):
    """"Viewing version s0012 — read-only" with a Back to live button. Signal: ``backToLive()``."""

    backToLive = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QPushButton("Back to live", self)
        self.button.setToolTip("Show the live memory again")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.button)
        self.button.clicked.connect(self.backToLive)
        self.hide()

    def show_version(self, v: Version) -> None:
        pal = self.palette()
        pal.setColor(self.backgroundRole(), palette.tint("changed"))
        self.setPalette(pal)
        self.label.setText(f"Viewing version {v.id} — read-only   ({v.label}, {v.active_count} active)")
        self.show()


class MemoryPanel(QWidget):
    """Signals: ``backToLive()`` (the banner's button), ``whyRequested(item_id)`` ("Why do
    you remember this?" in a fact's context menu)."""

    backToLive = Signal()
    whyRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = BlockTreeModel(self)
        self.proxy = FactFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.banner = VersionBanner(self)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter facts (text, category, id)…")
        self.filter.setClearButtonEnabled(True)
        self.show_forgotten = QCheckBox("Show forgotten", self)
        self.show_forgotten.setToolTip("List facts that Sleep forgot (greyed); rows are never deleted")
        self.view = QTreeView(self)
        self.view.setModel(self.proxy)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionBehavior(QTreeView.SelectionBehavior.SelectRows)
        self.view.setAllColumnsShowFocus(True)
        self.view.setWordWrap(False)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.view.header()
        header.setStretchLastSection(False)
        fit_columns(header, {1: "commitments", 2: "999 d", 3: "Turn", 4: "m_9999", 5: "Salience"},
                    stretch=0, padding=16)
        self.empty = QLabel("Memory is empty. Chat a little: the encoder writes facts into scratch.", self)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setForegroundRole(self.empty.foregroundRole())
        self.empty.hide()

        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.show_forgotten)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.banner)
        lay.addLayout(top)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.empty)

        self.filter.textChanged.connect(self._filter_changed)
        self.show_forgotten.toggled.connect(self._toggle_forgotten)
        self.banner.backToLive.connect(self.backToLive)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.viewing: Version | None = None
        self.view.expandAll()

    def current_fact(self) -> Fact | None:
        """The fact selected in the tree (None for a block row or no selection)."""
        obj = self.view.currentIndex().data(ROLE_OBJECT)
        return obj if isinstance(obj, Fact) else None

    def context_menu_for(self, fact: Fact) -> QMenu:
        menu = QMenu(self)
        act = menu.addAction("Why do you remember this?")
        act.setToolTip("Its transcript turns, merges, drops, supersedes, each with version and reason")
        act.triggered.connect(lambda _=False, i=fact.id: self.whyRequested.emit(i))
        return menu

    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        obj = index.data(ROLE_OBJECT) if index.isValid() else None
        if isinstance(obj, Fact):
            self.context_menu_for(obj).popup(self.view.viewport().mapToGlobal(pos))

    def _filter_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)
        self.view.expandAll()

    def _toggle_forgotten(self, on: bool) -> None:
        self.model.set_show_forgotten(on)
        self.view.expandAll()

    def set_facts(
        self,
        facts: Sequence[Fact],
        viewing: Version | None = None,
        *,
        strengths: Mapping[str, Strength] | None = None,
        policy: RetentionPolicy | None = None,
    ) -> None:
        """Show live facts (``viewing`` None) or a past version's state, read-only.
        ``strengths`` and ``policy`` feed the salience column (see :class:`BlockTreeModel`)."""
        expanded_before = self.proxy.rowCount() > 0
        self.viewing = viewing
        self.model.now = viewing.created_at if viewing is not None else None
        self.model.set_facts(facts, strengths=strengths, policy=policy)
        if viewing is None:
            self.banner.hide()
        else:
            self.banner.show_version(viewing)
        self.empty.setVisible(not facts)
        if not expanded_before or viewing is not None:
            self.view.expandAll()
        else:
            for row in range(self.proxy.rowCount()):
                self.view.expand(self.proxy.index(row, 0))
