"""The window icon from package data and the first-paint probe bench_startup relies on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow
from pytestqt.qtbot import QtBot

from nocturne_desktop.boot import startup


def test_app_icon_has_every_size(qapp: QApplication) -> None:
    icon = startup.app_icon()
    assert not icon.isNull()
    sizes = {s.width() for s in icon.availableSizes()}
    assert sizes == set(startup.ICON_SIZES)


def test_no_probe_without_the_variable(qapp: QApplication, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(startup.PROBE_ENV, raising=False)
    assert startup.prepare_app(qapp) is None
    assert not qapp.windowIcon().isNull()


@pytest.mark.qt_log_ignore("propagateSizeHints")
def test_probe_records_first_paint_then_closes(
    qapp: QApplication, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "probe" / "paint.json"
    monkeypatch.setenv(startup.PROBE_ENV, str(target))
    monkeypatch.setenv(startup.PROBE_QUIT_ENV, "1")
    probe = startup.prepare_app(qapp)
    assert probe is not None
    try:
        label = QLabel("not a main window")  # painting a plain widget does not count
        qtbot.addWidget(label)
        label.show()
        qtbot.waitExposed(label)
        assert not target.exists()
        t0 = time.time()
        window = QMainWindow()
        qtbot.addWidget(window)
        window.setCentralWidget(QLabel("hello"))
        window.show()
        qtbot.waitUntil(target.is_file, timeout=5000)
        record = json.loads(target.read_text())
        assert t0 <= record["paint"] <= time.time() and record["window"] == "QMainWindow"
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)  # closed by the probe
    finally:
        qapp.removeEventFilter(probe)


@pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")
def test_screenshot_probe_grabs_the_screen_records_the_regions_then_closes(
    qapp: QApplication, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "shot.png"
    monkeypatch.delenv(startup.PROBE_ENV, raising=False)
    monkeypatch.setenv(startup.SCREENSHOT_ENV, str(target))
    monkeypatch.setattr(startup, "SCREENSHOT_SETTLE_MS", 50)
    startup.prepare_app(qapp)
    window = QMainWindow()
    qtbot.addWidget(window)
    window.chat = QLabel("chat")  # type: ignore[attr-defined]  # where MainWindow has them
    window.setCentralWidget(window.chat)  # type: ignore[attr-defined]
    window.show()
    side = tmp_path / "shot.png.json"
    qtbot.waitUntil(side.is_file, timeout=5000)
    record = json.loads(side.read_text())
    assert record["platform"] == "offscreen" and record["saved"] is True and target.is_file()
    assert record["chat"][2:] == [window.chat.width(), window.chat.height()]  # type: ignore[attr-defined]
    assert record["tree"] is None and "error" not in record
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)
