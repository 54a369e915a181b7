"""The built-in engine as a saved choice: it is stored as "the built-in engine", never as the
loopback port it listened on, and found again (started afresh, on a new port) after a restart.

Before: choosing it saved ``base_url = http://127.0.0.1:<its port>/v1``; the next start picked
another free port, so the saved setting pointed at nothing and the window said no model answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.settings import (
    BUILTIN,
    DEFAULT_BASE_URL,
    SCHEMA_VERSION,
    SERVER,
    ApiKey,
    Settings,
    SettingsFiles,
    choose_endpoint,
)
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.fakeserver import closed_port_url
from tests.ui.test_onboarding import _choose_builtin_engine_in_the_panel


def test_the_builtin_engine_is_saved_as_itself_and_found_again_after_a_restart(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path],
) -> None:
    _choose_builtin_engine_in_the_panel(qtbot, monkeypatch, tmp_folders["cache"])
    server_url = closed_port_url()
    files = SettingsFiles(tmp_folders["config"])
    try:
        first = make_window(Settings(base_url=server_url, model="m"))
        first.banner.setup_button.click()
        engine = builtin_engine.current()
        assert engine is not None
        old_url = engine.base_url
        old_port = str(urlsplit(old_url).port)
        qtbot.waitUntil(lambda: first.session.endpoint_ok is True, timeout=10_000)
        assert first.session.endpoint_url == old_url
        raw = json.loads(files.settings_path.read_text())
        assert raw["endpoint"] == BUILTIN and raw["schema_version"] == SCHEMA_VERSION
        assert old_port not in files.settings_path.read_text()  # no port of the engine is saved
        assert raw["base_url"] == server_url  # the server's URL is kept for switching back
        first.close()
        first.session.wait_threads()
        builtin_engine.stop()  # what quitting does

        # the next start: settings from the file, a new engine on a new free port
        again = make_window(files.load())
        assert again.session.settings.builtin
        again.session.check_endpoint()  # as ui.app.run() does once the window shows
        qtbot.waitUntil(lambda: again.session.endpoint_ok is not None, timeout=20_000)
        assert again.session.endpoint_ok is True, again.session.endpoint_message
        engine = builtin_engine.current()
        assert engine is not None and engine.healthy()
        assert again.session.endpoint_url == engine.base_url
        assert engine.base_url in again.status.endpoint.toolTip()
        assert not again.banner.isVisible()
    finally:
        builtin_engine.stop()


def test_choosing_a_server_after_the_engine_saves_its_url(tmp_folders: dict[str, Path]) -> None:
    builtin = choose_endpoint(Settings(), "http://127.0.0.1:45678/v1", "tiny",
                              builtin_url="http://127.0.0.1:45678/v1/")
    assert builtin.endpoint == BUILTIN and builtin.base_url == DEFAULT_BASE_URL
    server = choose_endpoint(builtin, "http://127.0.0.1:8080/v1/", "qwen",
                             builtin_url="http://127.0.0.1:45678/v1")
    assert (server.endpoint, server.base_url, server.model) == (SERVER, "http://127.0.0.1:8080/v1",
                                                                "qwen")
    files = SettingsFiles(tmp_folders["config"])
    files.save(builtin)
    assert files.load() == builtin


@pytest.mark.parametrize(("base_url", "model", "endpoint"), [
    ("http://127.0.0.1:41517/v1", "SmolLM2-135M-Instruct", BUILTIN),  # the old engine's port
    ("http://localhost:38001/v1", "SmolLM2-135M-Instruct.Q4_1", BUILTIN),
    ("http://127.0.0.1:8080/v1", "SmolLM2-135M-Instruct", SERVER),  # a llama.cpp server
    ("http://localhost:1234/v1", "smollm2-135m-instruct", SERVER),  # LM Studio
    ("http://127.0.0.1:41517/v1", "qwen2.5-7b", SERVER),  # some other model
    ("http://192.168.1.9:41517/v1", "SmolLM2-135M-Instruct", SERVER),  # not this machine
])
def test_a_v1_file_that_saved_the_engine_by_its_port_is_read_as_the_engine(
    tmp_folders: dict[str, Path], base_url: str, model: str, endpoint: str,
) -> None:
    files = SettingsFiles(tmp_folders["config"])
    files.folder.mkdir(parents=True, exist_ok=True)
    files.settings_path.write_text(json.dumps(
        {"schema_version": 1, "base_url": base_url, "model": model, "temperature": 0.3}))
    loaded = files.load()
    assert loaded.endpoint == endpoint and loaded.model == model and loaded.temperature == 0.3
    assert loaded.base_url == (DEFAULT_BASE_URL if endpoint == BUILTIN else base_url)


def test_settings_dialog_keeps_the_builtin_choice_and_can_drop_it(
    qtbot: Any, tmp_folders: dict[str, Path],
) -> None:
    start = Settings(endpoint=BUILTIN, model="tiny")
    dlg = SettingsDialog(start, ApiKey())
    qtbot.addWidget(dlg)
    assert dlg.use_builtin.isChecked() and not dlg.base_url.isEnabled()
    assert dlg.build() == start
    dlg.use_builtin.setChecked(False)
    assert dlg.base_url.isEnabled() and dlg.build().endpoint == SERVER
