"""Helping a newcomer: the "no model answers" banner, kept true by :class:`Onboarding` (the
endpoint's checks, the built-in engine's exit), the first-run panel behind its button, and the
demo-memory window (a window of this process, on ``<data folder>/demo`` beside the window's own
memory: :mod:`~nocturne_desktop.ui.windows`).

The banner is not a modal dialog: a window that opens on an unreachable server must stay usable
(memory can be browsed, diffed and undone without any model), and must not block tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QWidget,
)

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.demo import default_demo_dir
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.engine import EngineExit
from nocturne_desktop.settings import choose_endpoint
from nocturne_desktop.ui import windows
from nocturne_desktop.ui.firstrun import FirstRunDialog
from nocturne_desktop.ui.plaintext import warn

if TYPE_CHECKING:
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session


class EndpointBanner(QFrame):
    """A strip above the window's panes, shown while the model server does not answer.

    Signals: ``setupRequested()`` when the person asks for the first-run panel."""

    setupRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("endpointBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.ToolTipBase)  # a note, in either palette
        self.setForegroundRole(QPalette.ColorRole.ToolTipText)
        self.problem = ""
        self.text = QLabel(self)
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # server messages are never markup
        self.text.setWordWrap(True)
        self.setup_button = QPushButton("Connect to a model…", self)
        self.setup_button.setToolTip("Detect LM Studio, Ollama, llama.cpp or Jan on this computer, "
                                     "enter a URL, or use the built-in engine")
        self.setup_button.clicked.connect(self.setupRequested)
        self.dismiss_button = QPushButton("Dismiss", self)
        self.dismiss_button.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.text, 1)
        row.addWidget(self.setup_button)
        row.addWidget(self.dismiss_button)
        self.hide()

    def show_problem(self, base_url: str, message: str) -> None:
        stopped = builtin_engine.stopped_report(base_url)
        if stopped is not None:
            self.show_engine_stopped(stopped)
            return
        self.problem = message
        engine = ("The built-in engine is installed." if builtin_engine.available()
                  else builtin_engine.missing_note())
        where = "" if base_url.rstrip("/") in message else f" at {base_url}"  # said once
        self.text.setText(
            f"No model answers{where}: {message}\n"
            "Chat, Sleep and Wake need a model. Meanwhile memory can be browsed, diffed and "
            f"undone, and Memory → Sleep with rules only works without one. {engine}"
        )
        self.show()

    def show_engine_stopped(self, stopped: builtin_engine.StoppedEngine) -> None:
        """The built-in engine this process started has ended: say so, with its log's tail —
        not the generic "nothing is listening" of an outside server."""
        self.problem = stopped.message()
        self.text.setText(
            f"{stopped.message()}\n"
            "Connect to a model… starts it again (or picks another server). Meanwhile memory "
            "can be browsed, diffed and undone."
        )
        self.show()


class EngineExitBridge(QObject):
    """Carries the built-in engine's exit (reported on a watcher thread) to the GUI thread."""

    stopped = Signal(str)

    def report(self, base_url: str, _ended: EngineExit) -> None:
        self.stopped.emit(base_url)  # queued: the receiver lives on the GUI thread


class Onboarding(QObject):
    """Keeps ``banner`` true to the endpoint: shown with the problem when a check fails or the
    built-in engine this process started stops, hidden when a check succeeds. Signal
    ``endpointChanged()``: the session's endpoint state changed (the status bar follows)."""

    endpointChanged = Signal()

    def __init__(self, window: QMainWindow, session: Session, banner: EndpointBanner) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.banner = banner
        banner.setupRequested.connect(self.open_first_run)
        session.endpointChecked.connect(self._on_endpoint)
        self.engine_exits = EngineExitBridge(self)
        self.engine_exits.stopped.connect(self._on_builtin_engine_stopped)
        report = self.engine_exits.report
        builtin_engine.add_exit_listener(report)
        self.engine_exits.destroyed.connect(lambda *_: builtin_engine.remove_exit_listener(report))

    def close(self) -> None:
        """The window closes: no more engine reports."""
        builtin_engine.remove_exit_listener(self.engine_exits.report)

    @Slot(bool, str, list, dict)
    def _on_endpoint(self, ok: bool, message: str, _models: list[str], _caps: dict[str, str]) -> None:
        self.endpointChanged.emit()
        if ok:
            self.banner.hide()
        else:
            self.banner.show_problem(self.session.endpoint_url, message)

    @Slot(str)
    def _on_builtin_engine_stopped(self, base_url: str) -> None:
        if not self.session.uses_endpoint(base_url):
            return  # an engine this window no longer uses
        stopped = builtin_engine.stopped_report(base_url)
        if stopped is not None:
            self.session.endpoint_ok = False
            self.session.endpoint_message = stopped.message()
            self.endpointChanged.emit()
            self.banner.show_engine_stopped(stopped)

    def open_first_run(self) -> None:
        """Detect local servers, enter a URL, or start the built-in engine (the first-run
        panel); the choice is applied like a Settings change."""
        choice = FirstRunDialog.ask(self.session.endpoint_url, self.banner.problem,
                                    parent=self.window)
        if choice is None:
            return
        url, model = choice
        engine = builtin_engine.current()  # the built-in engine is saved as itself, not its port
        settings = choose_endpoint(self.session.settings, url, model,
                                   builtin_url=engine.base_url if engine is not None else None)
        try:
            self.session.apply_settings(settings)
        except (OSError, NocturneError) as exc:
            warn(self.window, f"The settings could not be saved: {exc}")
            return
        self.session.check_endpoint()

    def open_demo(self) -> MainWindow | None:
        """Open the demo memory in its own folder beside this window's memory
        (``<data folder>/demo``, also under ``--data-dir``), in a new window of this process
        (this one stays on your memory): a newcomer can sleep, diff and undo at once. The
        demo window itself, or one already open on the demo, comes to the front."""
        window = cast("MainWindow", self.window)
        if window.is_demo:
            windows.bring_to_front(window)
            window.statusBar().showMessage("This window is the demo memory", 6000)
            return window
        folder = default_demo_dir(self.session.db_path.parent)
        try:
            opened = windows.open_memory(window, folder, demo=True)
        except (OSError, NocturneError) as exc:
            warn(self.window, f"The demo memory could not be opened: {exc}")
            return None
        window.statusBar().showMessage(f"Demo memory opened in a new window ({folder})", 8000)
        return opened
