"""The first run without a server: a banner (not a blocking dialog), the first-run panel's
choice applied like a Settings change, and the demo memory in its own folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from nocturne_desktop import cli
from nocturne_desktop.core.store import Store
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.firstrun import FirstRunDialog
from tests.fakeengine import fake_engine_cache
from tests.fakeserver import FakeLLM, closed_port_url


def test_banner_appears_when_nothing_answers_and_goes_when_a_model_is_chosen(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port_url()
    win = make_window(Settings(base_url=url, model="m"))
    win.session.check_endpoint()
    qtbot.waitUntil(lambda: win.banner.isVisible(), timeout=10_000)
    assert url in win.banner.text.text()
    assert win.banner.text.textFormat().name == "PlainText"
    # the window stays usable: the banner is not modal
    assert win.menus.rules.isEnabled()

    monkeypatch.setattr(FirstRunDialog, "ask", classmethod(
        lambda cls, base_url, problem="", parent=None, **kw: (fake_llm.base_url, "fake-model")))
    win.banner.setup_button.click()
    assert win.session.settings.base_url == fake_llm.base_url
    assert win.session.settings.model == "fake-model"
    qtbot.waitUntil(lambda: not win.banner.isVisible(), timeout=10_000)


def test_cancelling_the_first_run_panel_changes_nothing(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port_url()
    win = make_window(Settings(base_url=url, model="m"))
    monkeypatch.setattr(FirstRunDialog, "ask", classmethod(lambda cls, *a, **kw: None))
    win.onboarding.open_first_run()
    assert win.session.settings.base_url == url


def test_demo_mode_opens_a_fresh_demo_store_with_the_demo_policy(
    qapp: Any, tmp_folders: dict[str, Path], timers: Any
) -> None:
    folder = tmp_folders["data"] / "demo"
    seen: list[Any] = []

    def inspect_and_close() -> None:
        for w in QApplication.topLevelWidgets():
            if w.windowTitle() == "Nocturne — demo" and w.isVisible():
                seen.append((w.session.settings.retention, w.session.files,
                             w.session.store.active_count()))
                w.close()

    timers(300, inspect_and_close)
    timers(10_000, qapp.quit)
    assert cli.main(["--demo", "--data-dir", str(folder)]) == 0
    assert seen, "the demo window was shown"
    retention, files, active = seen[0]
    from nocturne_desktop.demo import demo_policy

    assert retention == demo_policy() and files is None and active > 0
    with Store(folder / "nocturne.db") as store:
        assert [v.label for v in store.versions()] == ["demo:loaded"]


def test_no_label_in_the_window_or_its_dialogs_can_render_markup(
    qtbot: Any, make_window: Any
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    from nocturne_desktop.settings import ApiKey
    from nocturne_desktop.ui.settings_dialog import SettingsDialog

    hostile = "<b>bold</b><img src='x'><a href='y'>link</a>"
    win = make_window(Settings(base_url=closed_port_url(), model=hostile))
    first = FirstRunDialog(hostile, hostile, servers=(), parent=win)
    settings = SettingsDialog(win.session.settings, ApiKey(), {"json_schema": hostile}, win)
    first.show()
    settings.show()
    win.banner.show_problem(hostile, hostile)
    try:
        for root in (win, first, settings):
            auto = [lab.text() for lab in root.findChildren(QLabel)
                    if lab.textFormat() != Qt.TextFormat.PlainText]
            assert auto == [], f"labels that would render markup in {type(root).__name__}: {auto}"
        assert hostile in win.banner.text.text()
    finally:
        first.close()
        settings.close()


# ------------------------------------------- the built-in engine, started as the panel starts it


def _choose_builtin_engine_in_the_panel(qtbot: Any, monkeypatch: pytest.MonkeyPatch,
                                        cache: Path) -> None:
    """Make the window's "Connect to a model…" open the real panel, whose engine button starts
    the engine through its own worker thread (the engine's cache is the fake one)."""
    fake_engine_cache(cache)

    def ask(cls: type[FirstRunDialog], base_url: str, problem: str = "", parent: Any = None,
            **kw: Any) -> tuple[str, str] | None:
        dialog = cls(base_url, problem, parent=parent, servers=[], **kw)
        dialog.show()
        assert dialog.engine_button.isEnabled()
        dialog.engine_button.click()
        qtbot.waitUntil(lambda: dialog.choice is not None, timeout=20_000)
        dialog.close()
        dialog.deleteLater()
        return dialog.choice

    monkeypatch.setattr(FirstRunDialog, "ask", classmethod(ask))


def test_builtin_engine_chosen_in_the_panel_keeps_running(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path],
) -> None:
    # Before the fix the engine died as soon as the panel's worker thread ended.
    _choose_builtin_engine_in_the_panel(qtbot, monkeypatch, tmp_folders["cache"])
    win = make_window(Settings(base_url=closed_port_url(), model="m"))
    try:
        win.banner.setup_button.click()
        engine = builtin_engine.current()
        assert engine is not None and win.session.endpoint_url == engine.base_url
        assert win.session.settings.builtin  # saved as the engine, not as its port
        qtbot.waitUntil(lambda: win.session.endpoint_ok is True, timeout=10_000)
        qtbot.wait(1500)
        assert engine.healthy() and not win.banner.isVisible()
    finally:
        builtin_engine.stop()


def test_builtin_engine_that_stops_is_named_in_the_banner_with_its_log(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path],
) -> None:
    monkeypatch.setenv("FAKE_ENGINE_EXIT_AFTER", "1.5")
    _choose_builtin_engine_in_the_panel(qtbot, monkeypatch, tmp_folders["cache"])
    win = make_window(Settings(base_url=closed_port_url(), model="m"))
    try:
        win.banner.setup_button.click()
        qtbot.waitUntil(lambda: win.banner.isVisible()
                        and "built-in engine stopped" in win.banner.text.text(), timeout=10_000)
        text = win.banner.text.text()
        assert "llama-server exited with code 3" in text and "fake failure: out of memory" in text
        assert "LM Studio" not in text
        assert win.session.endpoint_ok is False
        win.session.check_endpoint()  # a later probe of the dead port says the same
        qtbot.wait(500)
        qtbot.waitUntil(lambda: not win.session.busy, timeout=5000)
        assert "built-in engine stopped" in win.banner.text.text()
        assert "LM Studio" not in win.banner.text.text()
    finally:
        builtin_engine.stop()
