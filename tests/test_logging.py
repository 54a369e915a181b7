"""Logging as the application sets it up: a rotating file in the user's log folder, started by
the command line (and the window's start-up), never holding the configured API key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nocturne_desktop import cli, paths
from nocturne_desktop.core import logfile
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.llm import OpenAIClient
from nocturne_desktop.llm.detect import probe
from nocturne_desktop.settings import ApiKey, SettingsFiles
from tests.fakeserver import FakeLLM, Reply

KEY = "sk-proj-Z9y8X7w6V5u4T3s2R1q0-configured"


@pytest.fixture
def xdg_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME and XDG folders, and no log-folder override."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.delenv("NOCTURNE_LOG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    return home


def test_the_log_folder_is_the_user_log_folder(xdg_home: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert paths.log_dir() == xdg_home / ".local" / "state" / "Nocturne" / "log"
    monkeypatch.setenv("NOCTURNE_LOG_DIR", str(tmp_path / "elsewhere"))
    assert paths.log_dir() == tmp_path / "elsewhere"


def test_the_cli_starts_the_log_file_in_the_user_log_folder(
        xdg_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    with Store(data / "nocturne.db") as s:
        s.append("human", FactDraft("The user keeps bees.", "context"))
    assert cli.main(["export", "--data-dir", str(data), str(tmp_path / "out.json")]) == 0
    log = xdg_home / ".local" / "state" / "Nocturne" / "log" / "nocturne.log"
    assert logfile.log_path() == log
    assert "INFO nocturne [MainThread] Nocturne" in log.read_text(encoding="utf-8")
    assert "export" in log.read_text(encoding="utf-8")


def test_a_configured_key_never_reaches_the_log_after_a_chat_and_a_probe(
        fake_llm: FakeLLM, tmp_path: Path, tmp_log_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    files = SettingsFiles(tmp_path / "config")
    files.save_key(ApiKey(KEY))
    key = files.load_key()  # as the window and the CLI read it
    path = logfile.install(tmp_log_dir)
    assert path is not None and logfile._handler is not None
    # the harshest setting: every library's debug records into the file
    logfile._handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.DEBUG)
    fake_llm.require_api_key(KEY)
    fake_llm.set_default(Reply.text("Hello from the fake model."))
    client = OpenAIClient(fake_llm.base_url, "fake-model", api_key=key.reveal())
    try:
        reply = client.chat([{"role": "user", "content": "hi"}])
        assert reply.text == "Hello from the fake model."
        log = logging.getLogger("nocturne.test")
        log.warning("client headers %s", dict(client._http.headers))  # holds "Bearer <key>"
        try:
            raise RuntimeError(f"a failure that quotes the key {key.reveal()}")
        except RuntimeError:
            log.exception("unexpected")
    finally:
        client.close()
    found = probe(fake_llm.base_url, api_key=key.reveal())
    assert found.server is not None, found.error
    assert probe(fake_llm.base_url, api_key="sk-wrong").server is None  # a 401, logged or not
    logging.getLogger("nocturne.test").error("the key object: %s %r", key, key)
    text = path.read_text(encoding="utf-8")
    assert "HTTP Request: POST" in text  # the chat did reach the log
    assert "Bearer [redacted]" in text and "quotes the key [redacted]" in text
    assert KEY not in text
    assert "sk-wrong" not in text  # the client registered the key it was given too
