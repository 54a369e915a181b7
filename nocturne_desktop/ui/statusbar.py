"""The window's status bar: the endpoint (reachable or not), the model, the store's path and
the live memory's active count, which follows each commit without counting the store on the
GUI thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel, QMainWindow

from nocturne_desktop.core.store.reads import ChangedRows
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import Commit
from nocturne_desktop.ui.jobs import describe_error
from nocturne_desktop.ui.plaintext import set_tip
from nocturne_desktop.ui.tabs.memory import MemoryPanel

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session


class StatusLine(QObject):
    """The labels of ``window``'s status bar, kept up to date from ``session``."""

    def __init__(self, window: QMainWindow, session: Session, memory: MemoryPanel) -> None:
        super().__init__(window)
        self.session = session
        self.memory = memory
        self.endpoint = QLabel(window)
        self.model = QLabel(window)
        self.store = QLabel(window)
        self.active = QLabel(window)
        for lab in (self.endpoint, self.model, self.store, self.active):
            lab.setTextFormat(Qt.TextFormat.PlainText)
            lab.setContentsMargins(6, 0, 6, 0)
        bar = window.statusBar()
        bar.addWidget(self.endpoint)
        bar.addWidget(self.model)
        bar.addWidget(self.store, 1)
        bar.addPermanentWidget(self.active)
        self.active_count: int | None = None
        """The live memory's active facts: from the tree's counts at start, then from each
        commit's (None: not known here; counted off the GUI thread)."""

    def update(self) -> None:
        """Every label again (the endpoint, the settings or the store changed)."""
        s = self.session
        ok = s.endpoint_ok
        mark = "●"
        if ok is None:
            self.endpoint.setText(f"{mark} endpoint: checking…")
            tone = "kept"
        elif ok:
            self.endpoint.setText(f"{mark} endpoint reachable")
            tone = "ok"
        else:
            self.endpoint.setText(f"{mark} endpoint unreachable")
            tone = "error"
        pal = self.endpoint.palette()
        pal.setColor(self.endpoint.foregroundRole(), palette.accent(tone))
        self.endpoint.setPalette(pal)
        set_tip(self.endpoint, f"{s.endpoint_url}\n{s.endpoint_message}")  # the server's words
        self.model.setText(f"model: {s.settings.model or '(server default)'}")
        self.store.setText(f"store: {s.db_path}")
        set_tip(self.store, str(s.db_path))
        self.show_active()

    def on_commit(self, commit: Commit) -> None:
        """A commit from the change hub (after the tree took it): the active count after it."""
        if commit.facts:
            self.active_count = self._active_after(commit.rows)
            self.show_active()

    def _active_after(self, rows: ChangedRows) -> int | None:
        """The live active count after the commit ``rows``: its own per-block counts (a job's
        commit reads them in its worker), else the live tree's once it applied the commit
        (a small change by hand, counted from the rows it touched); None when neither knows."""
        if rows.counts is not None:
            return sum(c[0] for c in rows.counts.values())
        if self.memory.follows_live():
            return self.memory.model.active_count()
        return None

    def show_active(self) -> None:
        """The active count: the one known, else one counted in a read job (a newer commit's
        count wins over it)."""
        if self.active_count is not None:
            self.active.setText(f"{self.active_count} active facts")
            return

        def counted(n: int) -> None:
            if self.active_count is None:
                self.active_count = n
                self.active.setText(f"{n} active facts")

        self.session.read("active-count", lambda ctx: ctx.store.active_count(), counted,
                          lambda exc: self.active.setText(describe_error(exc)))
