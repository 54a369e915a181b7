"""Settings: the schema, the files (key at 0600, never in repr), the dialog and its model list."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from PySide6.QtWidgets import QDialogButtonBox

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.settings import (
    DEFAULT_BASE_URL,
    SCHEMA_VERSION,
    ApiKey,
    Settings,
    SettingsError,
    SettingsFiles,
    Timeouts,
    key_origin,
)
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.fakeserver import FakeLLM, Reply, closed_port_url

SECRET = "sk-test-0123456789abcdef"


def test_defaults_and_schema() -> None:
    s = Settings()
    assert s.base_url == DEFAULT_BASE_URL == "http://localhost:1234/v1"
    assert s.schema_version == SCHEMA_VERSION
    assert s.retention == RetentionPolicy()
    schema = Settings.model_json_schema()
    assert all(schema["properties"][name].get("description") for name in Settings.model_fields)
    assert "api_key" not in Settings.model_fields  # the key lives elsewhere, on purpose


def test_round_trip_through_the_config_folder(tmp_folders: dict[str, Path]) -> None:
    files = SettingsFiles()  # NOCTURNE_CONFIG_DIR points at tmp
    assert files.folder == tmp_folders["config"]
    assert files.load() == Settings()  # no file yet: defaults
    s = Settings(base_url="http://127.0.0.1:8080/v1/", model="qwen2.5-7b",
                 timeouts=Timeouts(connect=3, first_token=90, idle=20), temperature=0.7,
                 retention=RetentionPolicy(max_active_facts=40, stale_after_days=7,
                                           protected_categories=("identity",)),
                 data_dir=str(tmp_folders["data"]))
    files.save(s)
    again = files.load()
    assert again == s
    assert again.base_url == "http://127.0.0.1:8080/v1"  # normalised
    raw = json.loads(files.settings_path.read_text())
    assert raw["schema_version"] == SCHEMA_VERSION and "api_key" not in raw
    assert s.resolved_data_dir() == tmp_folders["data"]
    assert s.resolved_data_dir("/elsewhere") == Path("/elsewhere")  # --data-dir wins


def test_api_key_file_is_0600_and_never_shown(tmp_folders: dict[str, Path],
                                               caplog: pytest.LogCaptureFixture) -> None:
    files = SettingsFiles()
    key = ApiKey(SECRET)
    files.save_key(key)
    mode = stat.S_IMODE(os.stat(files.key_path).st_mode)
    assert mode == 0o600
    assert files.load_key() == key and files.load_key().reveal() == SECRET
    logging.getLogger("nocturne").warning("settings: %r %s %r", key, key, files)
    for text in (repr(key), str(key), f"{key}", caplog.text, files.settings_path.read_text()
                 if files.settings_path.exists() else ""):
        assert SECRET not in text
    assert repr(key) == "ApiKey(set)"
    files.save(Settings())
    assert SECRET not in files.settings_path.read_text()
    # replacing keeps 0600; an empty key removes the file
    os.chmod(files.key_path, 0o644)
    files.save_key(ApiKey("sk-other"))
    assert stat.S_IMODE(os.stat(files.key_path).st_mode) == 0o600
    files.save_key(ApiKey(""))
    assert not files.key_path.exists() and not files.load_key()


def test_a_key_in_the_settings_json_is_ignored(tmp_folders: dict[str, Path]) -> None:
    files = SettingsFiles()
    files.settings_path.write_text(json.dumps({"api_key": SECRET, "model": "m"}))
    s = files.load()
    assert s.model == "m" and SECRET not in repr(s)


@pytest.mark.parametrize(("content", "fragment"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    (json.dumps({"schema_version": SCHEMA_VERSION + 1}), "newer Nocturne"),
    (json.dumps({"retention": {"max_active_facts": 0}}), "max_active_facts"),
    (json.dumps({"base_url": "ftp://x"}), "http:// or https://"),
])
def test_bad_files_raise_a_clear_error_and_are_left_alone(
    tmp_folders: dict[str, Path], content: str, fragment: str
) -> None:
    files = SettingsFiles()
    files.settings_path.write_text(content)
    with pytest.raises(SettingsError, match=fragment.replace("(", r"\(")):
        files.load()
    assert files.settings_path.read_text() == content


def test_dialog_round_trip_and_inline_policy_validation(qtbot: Any) -> None:
    start = Settings(model="small", retention=RetentionPolicy(max_active_facts=50))
    dlg = SettingsDialog(start, ApiKey(SECRET))
    qtbot.addWidget(dlg)
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dlg.build() == start and ok.isEnabled()
    assert dlg.api_key.text() == SECRET and dlg.api_key.echoMode() != dlg.api_key.EchoMode.Normal
    dlg.max_active.setValue(0)  # the policy refuses it; the message shows in place
    assert not ok.isEnabled()
    assert "max active facts" in dlg.error.text() and "greater than or equal to 1" in dlg.error.text()
    dlg.max_active.setValue(80)
    dlg.similarity.setValue(0.3)
    assert not ok.isEnabled() and "similarity threshold" in dlg.error.text()
    dlg.similarity.setValue(0.85)
    dlg.protected["commitments"].setChecked(False)
    dlg.base_url.setText("http://127.0.0.1:9999/v1")
    dlg.api_key.setText("sk-new")
    dlg.budget.setValue(3000)
    assert ok.isEnabled() and dlg.error.text() == ""
    dlg.accept()
    assert dlg.result_settings is not None and dlg.result_settings.pass_budget_tokens == 3000
    assert dlg.result_settings is not None and dlg.result_key == ApiKey("sk-new")
    r = dlg.result_settings.retention
    assert (r.max_active_facts, r.similarity_threshold) == (80, 0.85)
    assert r.protected_categories == ("identity", "preferences")
    with pytest.raises(ValidationError):
        RetentionPolicy(max_active_facts=0)


def test_refresh_fills_the_model_picker_in_a_worker(qtbot: Any, fake_llm: FakeLLM) -> None:
    fake_llm.models = ["llama-3.2-3b", "qwen2.5-7b"]
    dlg = SettingsDialog(Settings(base_url=fake_llm.base_url), ApiKey())
    qtbot.addWidget(dlg)
    dlg.refresh.click()
    assert not dlg.refresh.isEnabled()  # the GUI thread did not wait for the answer
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled(), timeout=10_000)
    assert [dlg.model.itemText(i) for i in range(dlg.model.count())] == fake_llm.models
    assert dlg.model_status.text() == "2 models available"
    assert "json_schema:" in dlg.caps.text()
    dlg.reject()


def test_settings_shows_the_structured_output_form_the_probe_found(
    qtbot: Any, fake_llm: FakeLLM
) -> None:
    """llama-cpp-python's server: json_schema refused, the schema goes inside json_object."""
    from pydantic import BaseModel

    from nocturne_desktop.llm.client import OpenAIClient

    class Reply_(BaseModel):
        ok: bool

    fake_llm.behave_like("llama-cpp-python")
    fake_llm.set_default(Reply.json({"ok": True}))
    with OpenAIClient(fake_llm.base_url, "fake-model") as client:
        assert client.structured([{"role": "user", "content": "ok?"}], Reply_).value is not None
    dlg = SettingsDialog(Settings(base_url=fake_llm.base_url), ApiKey())
    qtbot.addWidget(dlg)
    assert "not probed yet" in dlg.caps.text()  # what the window knew when it opened
    dlg.refresh.click()
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled(), timeout=10_000)
    text = dlg.caps.text()
    assert text.splitlines()[0].startswith("in use: response_format json_object with the schema")
    assert "json_schema: unsupported (fallback used)" in text
    assert "json_object + schema: supported" in text
    dlg.reject()


def test_refresh_against_a_dead_endpoint_says_so(qtbot: Any) -> None:
    url = closed_port_url()
    dlg = SettingsDialog(Settings(base_url=url), ApiKey())
    qtbot.addWidget(dlg)
    dlg.refresh.click()
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled(), timeout=15_000)
    assert url.split("//")[1].split("/")[0] in dlg.model_status.text()
    dlg.reject()


def test_window_applies_and_saves_what_the_dialog_returns(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path],
    fake_llm: FakeLLM,
) -> None:
    win = make_window(Settings())
    new = Settings(base_url=fake_llm.base_url, model="fake-model",
                   retention=RetentionPolicy(max_active_facts=10))
    seen: list[Any] = []

    def ask(settings: Settings, key: ApiKey, caps: Any = None, parent: Any = None) -> Any:
        seen.append((settings, key))
        return new, ApiKey(SECRET)

    monkeypatch.setattr(SettingsDialog, "ask", staticmethod(ask))
    with qtbot.waitSignal(win.session.endpointChecked, timeout=10_000) as blocker:
        win.menus.settings.trigger()
    assert seen and seen[0][0] == Settings()
    assert blocker.args[0] is True
    new = new.model_copy(update={"key_host": key_origin(fake_llm.base_url)})  # the key's server
    assert win.session.settings == new
    files = SettingsFiles(tmp_folders["config"])
    assert files.load() == new and files.load_key().reveal() == SECRET
    assert stat.S_IMODE(os.stat(files.key_path).st_mode) == 0o600
    assert win.status.model.text() == "model: fake-model"
    assert win.status.endpoint.text() == "● endpoint reachable"
    win.session.wait_threads()
