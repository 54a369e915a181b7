"""Start-up helpers for the window: the application icon and the start-up time probe.

:func:`prepare_app` is called once the ``QApplication`` exists. It sets the window icon from the
PNGs shipped as package data, and, when ``NOCTURNE_STARTUP_PROBE=<file>`` is set, arms a probe
that writes the wall-clock time of the main window's first paint to that file (JSON), which is
what ``bench/bench_startup.py`` measures against the moment it started the process. With
``NOCTURNE_STARTUP_PROBE_QUIT=1`` the probe also closes the window right after, so a benchmark
run ends by itself through the normal close path.

``NOCTURNE_SCREENSHOT=<file.png>`` arms the real-display smoke test's probe
(``scripts/xvfb_smoke.py``): once the main window has painted and settled, it grabs the whole
screen from the windowing system (on xcb: the X server's own pixels, not a widget render), saves
it, writes ``<file>.json`` with the platform name and the screen rectangles of the window, the
chat pane and the memory tree, and closes the window.
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
SCREENSHOT_ENV = "NOCTURNE_SCREENSHOT"
SCREENSHOT_SETTLE_MS = 1500


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


def _screen_rect(widget: QWidget | None) -> list[int] | None:
    if widget is None or not widget.isVisible():
        return None
    top_left = widget.mapToGlobal(widget.rect().topLeft())
    return [top_left.x(), top_left.y(), widget.width(), widget.height()]


class ScreenshotProbe(QObject):
    """Application-wide event filter: after the main window's first paint, grab the screen."""

    def __init__(self, path: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.armed = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if self.armed and event.type() == QEvent.Type.Paint and isinstance(watched, QWidget):
            window = watched.window()
            if isinstance(window, QMainWindow) and window.isVisible():
                self.armed = False
                QTimer.singleShot(SCREENSHOT_SETTLE_MS, lambda: self._shoot(window))
        return False

    def _shoot(self, window: QMainWindow) -> None:
        app = QApplication.instance()
        record: dict[str, object] = {"platform": QApplication.platformName(), "pid": os.getpid()}
        try:
            window.raise_()
            window.activateWindow()
            QApplication.processEvents()
            screen = window.screen()
            shot = screen.grabWindow(0)  # the whole screen, as the windowing system has it
            record["saved"] = bool(shot.save(str(self.path), "PNG"))
            record["screen"] = [shot.width(), shot.height()]
            record["window"] = _screen_rect(window)
            record["chat"] = _screen_rect(getattr(window, "chat", None))
            memory = getattr(window, "memory", None)
            record["tree"] = _screen_rect(getattr(memory, "view", None))
        except Exception as exc:  # the smoke test reads the error from the record
            record["error"] = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            self.path.with_suffix(self.path.suffix + ".json").write_text(
                json.dumps(record), encoding="utf-8")
        if app is not None:
            app.removeEventFilter(self)
        window.close()


def prepare_app(app: QApplication) -> StartupProbe | None:
    """Set the icon; arm the start-up probe if asked for. Returns the probe (or None)."""
    icon = app_icon()
    if not icon.isNull():
        app.setWindowIcon(icon)
    shot = os.environ.get(SCREENSHOT_ENV)
    if shot:
        app.installEventFilter(ScreenshotProbe(Path(shot), app))
    target = os.environ.get(PROBE_ENV)
    if not target:
        return None
    probe = StartupProbe(Path(target), os.environ.get(PROBE_QUIT_ENV) == "1", app)
    app.installEventFilter(probe)
    return probe
