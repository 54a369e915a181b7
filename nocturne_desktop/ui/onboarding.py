"""Helping a newcomer: the "no model answers" banner and the demo-memory window.

The banner is not a modal dialog: a window that opens on an unreachable server must stay usable
(memory can be browsed, diffed and undone without any model), and must not block tests.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QProcess, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from nocturne_desktop.demo import default_demo_dir
from nocturne_desktop.llm import builtin as builtin_engine


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
        self.text.setText(
            f"No model answers at {base_url}: {message}\n"
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


def demo_command(folder: str) -> tuple[str, list[str]]:
    """The program and arguments that open a window on the demo memory."""
    if getattr(sys, "frozen", False):
        return sys.executable, ["--demo", "--data-dir", folder]
    return sys.executable, ["-m", "nocturne_desktop", "--demo", "--data-dir", folder]


def launch_demo_window() -> str:
    """Start a second Nocturne process on the demo folder (its own data folder and lock)."""
    folder = str(default_demo_dir())
    program, args = demo_command(folder)
    ok, _pid = QProcess.startDetached(program, args)
    if not ok:
        raise OSError(f"could not start {program}")
    return folder
