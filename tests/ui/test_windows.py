"""The app's windows as a desktop user meets them: the demo memory (and an imported one) opens
as a second window of the same process, beside the memory in use (``--data-dir`` too); every
title names its memory; Quit (Ctrl+Q) asks once and closes every window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from nocturne_desktop import cli, demo, paths
from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles
from nocturne_desktop.ui import windows
from nocturne_desktop.ui.app import InstanceLock
from tests.fakeserver import FakeLLM
from tests.ui.test_flows import slow_pass

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def on_folder(qtbot: Any, tmp_folders: dict[str, Path],
              monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``on_folder(folder, settings)``: a window on the memory in ``folder``, as
    ``nocturne --data-dir folder`` opens it; every window still open is closed after the
    test."""
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    def make(folder: Path, settings: Settings | None = None) -> Any:
        session = Session(paths.db_path(folder), settings or Settings(), ApiKey(),
                          files=SettingsFiles(tmp_folders["config"]))
        win = MainWindow(session)
        qtbot.addWidget(win)
        win.show()
        return win

    yield make
    for w in windows.open_windows():
        monkeypatch.setattr(w, "confirm_close_during_sleep", lambda: True)
        w.close()
        w.session.wait_threads()


def test_the_demo_opens_beside_the_chosen_data_folder_in_a_window_of_this_process(
    on_folder: Any, tmp_path: Path, tmp_folders: dict[str, Path]
) -> None:
    """Fails on the old code: the demo went to the default data folder (a second process on
    ``<default>/demo``), whatever ``--data-dir`` said."""
    mine = tmp_path / "mine"
    win = on_folder(mine)
    assert win.windowTitle() == "Nocturne — mine"
    win.menus.demo.trigger()
    (shown,) = [w for w in windows.open_windows() if w is not win]
    assert shown.session.db_path == mine / "demo" / "nocturne.db"
    assert shown.windowTitle() == "Nocturne — demo" and shown.isVisible() and shown.is_demo
    assert shown.session.settings.retention == demo.demo_policy()
    assert shown.session.files is None  # the demo's policy is never saved as yours
    assert shown.session.store.active_count() > 0
    assert not (tmp_folders["data"] / "demo").exists()  # the usual data folder is untouched
    assert not InstanceLock(mine / "demo").acquire()  # its window holds the folder's lock
    assert win.onboarding.open_demo() is shown  # open already: brought to the front
    assert shown.onboarding.open_demo() is shown  # the demo window's own demo is itself
    assert len(windows.open_windows()) == 2


def test_titles_name_the_memory(on_folder: Any, tmp_folders: dict[str, Path]) -> None:
    usual = on_folder(tmp_folders["data"])  # the data folder in use, whose name is "data"
    assert usual.windowTitle() == "Nocturne — your memory"


def test_quit_asks_once_and_closes_every_window(
    on_folder: Any, tmp_path: Path, tmp_folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the old code: Quit closed only the window it was pressed in (the demo's window,
    a process of its own, kept the app alive)."""
    win = on_folder(tmp_folders["data"])
    demo_window = win.onboarding.open_demo()
    asked: list[str] = []
    answer = [False]

    def confirm(question: str) -> bool:
        asked.append(question)
        return answer[0]

    monkeypatch.setattr(demo_window, "confirm_quit", confirm)
    demo_window.menus.quit.trigger()  # Ctrl+Q in the demo window, answered Cancel
    assert asked == ["This closes all 2 windows: “your memory”, “demo”."]
    assert win.isVisible() and demo_window.isVisible()
    answer[0] = True
    demo_window.menus.quit.trigger()
    assert len(asked) == 2
    assert not win.isVisible() and not demo_window.isVisible()
    assert win.session.closed and demo_window.session.closed
    assert windows.open_windows() == []
    for folder in (tmp_folders["data"] / "demo",):
        lock = InstanceLock(folder)  # released on the way out
        assert lock.acquire()
        lock.release()


def test_quit_with_one_idle_window_asks_nothing(
    on_folder: Any, tmp_folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    win = on_folder(tmp_folders["data"])
    monkeypatch.setattr(win, "confirm_quit", lambda q: pytest.fail(f"asked: {q}"))
    win.menus.quit.trigger()
    assert win.session.closed and windows.open_windows() == []


def test_quit_during_a_sleep_in_another_window_says_so_in_its_one_question(
    qtbot: Any, on_folder: Any, tmp_folders: dict[str, Path], fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.respond_with(slow_pass("dedupe", 60))
    win = on_folder(tmp_folders["data"], Settings(base_url=fake_llm.base_url, model="fake-model"))
    demo_window = win.onboarding.open_demo()
    demo_window.menus.sleep.trigger()
    qtbot.waitUntil(lambda: demo_window.session.busy == "sleep", timeout=15_000)
    asked: list[str] = []
    monkeypatch.setattr(win, "confirm_quit", lambda q: asked.append(q) or True)
    for w in (win, demo_window):  # the per-window question is not asked on top
        monkeypatch.setattr(w, "confirm_close_during_sleep",
                            lambda: pytest.fail("asked a second time"))
    win.menus.quit.trigger()
    (question,) = asked
    assert "This closes all 2 windows" in question
    assert "A sleep is running in “demo”: it is cancelled" in question
    assert windows.open_windows() == [] and demo_window.session.closed


def test_the_demo_without_data_dir_goes_beside_the_settings_data_folder(
    qapp: Any, tmp_path: Path, tmp_folders: dict[str, Path], timers: Any
) -> None:
    """Fails on the old code: ``nocturne --demo`` put the demo in the platform's data folder,
    not in the one the settings name."""
    elsewhere = tmp_path / "elsewhere"
    SettingsFiles(tmp_folders["config"]).save(Settings(data_dir=str(elsewhere)))
    seen: list[str] = []

    def close_soon() -> None:
        for w in QApplication.topLevelWidgets():
            if w.windowTitle().startswith("Nocturne — ") and w.isVisible():
                seen.append(w.windowTitle())
                w.close()

    timers(300, close_soon)
    timers(10_000, qapp.quit)
    assert cli.main(["--demo"]) == 0
    assert seen == ["Nocturne — demo"]
    assert (elsewhere / "demo" / "nocturne.db").is_file()
    assert not (tmp_folders["data"] / "demo").exists()
