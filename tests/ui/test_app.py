"""The application shell: single instance per data folder, remembered geometry, shortcuts, run()."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from nocturne_desktop import cli
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui import app as ui_app
from nocturne_desktop.ui.app import InstanceLock


def test_a_second_instance_on_the_same_folder_is_refused(tmp_folders: dict[str, Path]) -> None:
    first = InstanceLock(tmp_folders["data"])
    second = InstanceLock(tmp_folders["data"])
    other = InstanceLock(tmp_folders["cache"])
    try:
        assert first.acquire()
        assert not second.acquire()
        assert "process" in second.owner()
        assert other.acquire()  # another folder is fine
    finally:
        first.release()
        other.release()
    assert second.acquire()
    second.release()


def test_run_refuses_with_a_clear_message(
    qapp: Any, tmp_folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda _p, _t, text: shown.append(text)))
    held = InstanceLock(tmp_folders["data"])
    assert held.acquire()
    try:
        rc = ui_app.run(argparse.Namespace(data_dir=str(tmp_folders["data"])))
    finally:
        held.release()
    assert rc == 1
    assert shown and "already open on this data folder" in shown[0]
    assert str(tmp_folders["data"]) in shown[0]


def test_cli_opens_the_window_and_quits(
    qapp: Any, tmp_folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, timers: Any
) -> None:
    data = tmp_folders["data"] / "portable"
    opened: list[Any] = []

    def close_soon() -> None:
        for w in QApplication.topLevelWidgets():
            if w.objectName() == "" and w.windowTitle() == "Nocturne — portable" \
                    and w.isVisible():
                opened.append(w)
                w.close()

    timers(300, close_soon)
    timers(10_000, qapp.quit)  # a safety net, never the normal path
    rc = cli.main(["--data-dir", str(data)])
    assert rc == 0
    assert opened, "the window was shown"
    assert (data / "nocturne.db").exists()
    assert not (data / "nocturne.lock").exists()  # released on the way out


def test_geometry_and_splitters_are_remembered(qtbot: Any, make_window: Any) -> None:
    win = make_window(Settings())
    win.resize(760, 560)  # inside the offscreen screen (800×600), which restoreGeometry respects
    qtbot.wait(20)
    win.splitter.setSizes([250, 500])
    win.tabs.setCurrentIndex(2)
    sizes = win.splitter.sizes()
    win.close()
    again = make_window(Settings())
    qtbot.wait(20)
    assert again.splitter.sizes() == sizes
    assert again.tabs.currentIndex() == 2
    assert (again.width(), again.height()) == (760, 560)


def test_shortcuts_are_set_and_shown(make_window: Any) -> None:
    win = make_window(Settings())
    keys = {a.text(): a.shortcut().toString() for a in
            (win.menus.sleep, win.menus.dry, win.menus.stop, win.menus.undo, win.menus.quiz,
             win.menus.settings, win.menus.undo_change, win.menus.redo)}
    # Ctrl+Z undoes the last change whoever made it (a hand edit or a sleep); undoing the last
    # sleep by restoring its start is still in the Memory menu
    assert keys == {"&Sleep": "Ctrl+Shift+S", "&Dry run": "Ctrl+Shift+D", "S&top / cancel": "Esc",
                    "&Undo last sleep": "", "Run &quiz": "Ctrl+Shift+Q", "&Settings…": "Ctrl+,",
                    "&Undo": "Ctrl+Z", "&Redo": "Ctrl+Shift+Z"}
    assert "(Ctrl+Shift+S)" in win.menus.sleep.toolTip()
    assert "Esc" in win.chat.stop_button.toolTip()
    assert not win.menus.stop.isEnabled()  # nothing to stop yet


def test_undo_without_a_sleep_says_so(make_window: Any) -> None:
    win = make_window(Settings())
    win.menus.undo.trigger()
    assert win.statusBar().currentMessage() == "no sleep to undo yet"


def test_help_lists_the_shortcuts_and_says_what_nocturne_is(qtbot: Any, make_window: Any) -> None:
    """Fails on the old code: there was no Help menu."""
    from nocturne_desktop import __version__

    win = make_window(Settings())
    menus = [a.text() for a in win.menuBar().actions()]
    assert menus[-1] == "&Help"
    dialog = win.show_shortcuts()
    qtbot.addWidget(dialog)
    rows = dict(dialog.rows())
    assert rows["Ctrl+Shift+S"].startswith("Sleep")
    assert rows["Ctrl+Z"].startswith("Undo")
    assert rows["Esc"].startswith("Stop")
    assert rows["F1"].startswith("Keyboard shortcuts")
    assert "Shift+Enter" in rows
    about = win.show_about()
    qtbot.addWidget(about)
    assert f"Nocturne Desktop {__version__}" in about.text.text()
    assert str(win.session.db_path.parent) in about.text.text()
