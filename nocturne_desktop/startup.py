"""Start-up helpers for the window: the application icon and the start-up time probe.

:func:`prepare_app` is called once the ``QApplication`` exists. It sets the window icon from the
PNGs shipped as package data, and, when ``NOCTURNE_STARTUP_PROBE=<file>`` is set, arms a probe
that writes the wall-clock time of the main window's first paint to that file (JSON), which is
what ``bench/bench_startup.py`` measures against the moment it started the process. With
``NOCTURNE_STARTUP_PROBE_QUIT=1`` the probe also closes the window right after, so a benchmark
run ends by itself through the normal close path.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from importlib import resources
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication, QMainWindow, QWidget

ICON_SIZES = (16, 32, 48, 64, 128, 256, 512)
PROBE_ENV = "NOCTURNE_STARTUP_PROBE"
PROBE_QUIT_ENV = "NOCTURNE_STARTUP_PROBE_QUIT"


def app_icon() -> QIcon:
    """The crescent-moon icon at every shipped size (an empty icon if the files are missing)."""
    icon = QIcon()
    folder = resources.files("nocturne_desktop.resources")
    for size in ICON_SIZES:
        ref = folder.joinpath(f"nocturne-{size}.png")
        with contextlib.suppress(OSError):
            pix = QPixmap()
            if pix.loadFromData(ref.read_bytes(), "PNG"):
                icon.addPixmap(pix)
    return icon


class StartupProbe(QObject):
    """Application-wide event filter: records the first paint of a visible QMainWindow."""

    def __init__(self, path: Path, quit_after: bool, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.quit_after = quit_after
        self.fired = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not self.fired and event.type() == QEvent.Type.Paint and isinstance(watched, QWidget):
            window = watched.window()
            if isinstance(window, QMainWindow) and window.isVisible():
                self.fired = True
                self._write(window)
        return False

    def _write(self, window: QMainWindow) -> None:
        record = {"paint": time.time(), "pid": os.getpid(), "window": type(window).__name__}
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(record), encoding="utf-8")
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        if self.quit_after:
            QTimer.singleShot(0, window.close)


def prepare_app(app: QApplication) -> StartupProbe | None:
    """Set the icon; arm the start-up probe if asked for. Returns the probe (or None)."""
    icon = app_icon()
    if not icon.isNull():
        app.setWindowIcon(icon)
    target = os.environ.get(PROBE_ENV)
    if not target:
        return None
    probe = StartupProbe(Path(target), os.environ.get(PROBE_QUIT_ENV) == "1", app)
    app.installEventFilter(probe)
    return probe
