"""The API key goes only to the server it was saved for unless the person confirms (S-DOOR-4).

Two scripted servers: the one the key was saved for, and a newly typed one. Every request the
new server sees is checked for an ``Authorization`` header. Before this change the key went to
a newly typed host at once, with the first request after Save (the first test fails on that
code), and the Settings dialog's Refresh sent it to whatever address was typed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox

from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles, key_origin
from nocturne_desktop.ui.jobs import running_threads
from nocturne_desktop.ui.keyconfirm import question_text
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.fakeserver import FakeLLM
from tests.ui.hostilerows import record
from tests.ui.test_flows import chat_requests, chat_responder, send

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-4f9a2c7e1b"
BEARER = f"Bearer {KEY}"


@pytest.fixture
def new_host() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.close()


def keyed(server: FakeLLM) -> list[str]:
    """The paths of the requests ``server`` saw that carried an Authorization header."""
    return [r.path for r in server.requests if "authorization" in r.headers]


def probed(qtbot: Any, win: Any, server: FakeLLM) -> None:
    """Wait until ``server`` answered the window's endpoint check."""
    qtbot.waitUntil(lambda: any(r.path.endswith("/models") for r in server.requests)
                    and win.session.endpoint_ok is not None, timeout=10_000)


def saved(url: str, key_host: str) -> Settings:
    return Settings(base_url=url, model="fake-model", key_host=key_host)


def test_a_newly_typed_host_never_receives_the_key_before_confirmation(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, new_host: FakeLLM,
        monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path]) -> None:
    fake_llm.respond_with(chat_responder("Noted.", []))
    new_host.respond_with(chat_responder("Noted.", []))
    win = make_window(saved(fake_llm.base_url, key_origin(fake_llm.base_url)), key=ApiKey(KEY))
    win.session.check_endpoint()
    probed(qtbot, win, fake_llm)
    assert keyed(fake_llm), "the server the key was saved for receives it"
    typed = win.session.settings.model_copy(update={"base_url": new_host.base_url})
    monkeypatch.setattr(SettingsDialog, "ask", staticmethod(lambda *_a, **_k: (typed, ApiKey(KEY))))
    asked: list[tuple[str, str]] = []

    def no(server: str, saved_for: str) -> bool:
        asked.append((server, saved_for))
        qtbot.wait(300)  # a request sent meanwhile would reach the server now
        assert new_host.requests == [], "nothing is sent before the answer"
        return False

    win.keys.ask = no
    win.open_settings()
    assert asked == [(key_origin(new_host.base_url), key_origin(fake_llm.base_url))]
    probed(qtbot, win, new_host)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "I keep bees on the roof.")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert chat_requests(new_host), "the new server is used, without the key"
    record("API key to a newly typed server (Save, then No)", tried=len(new_host.requests),
           refused=len(new_host.requests) - len(keyed(new_host)), leaked=len(keyed(new_host)),
           note="requests the new server saw")
    assert keyed(new_host) == []
    # asked once: saving again for the same server does not ask again, and still sends no key
    win.open_settings()
    assert len(asked) == 1
    probed(qtbot, win, new_host)
    assert keyed(new_host) == []
    on_disk = SettingsFiles(tmp_folders["config"]).load()
    assert on_disk.base_url == new_host.base_url.rstrip("/")
    assert on_disk.key_host == key_origin(fake_llm.base_url)  # no: the key stays the old server's


def test_yes_saves_the_server_and_the_key_goes_there(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, new_host: FakeLLM,
        monkeypatch: pytest.MonkeyPatch, tmp_folders: dict[str, Path]) -> None:
    win = make_window(saved(fake_llm.base_url, key_origin(fake_llm.base_url)), key=ApiKey(KEY))
    typed = win.session.settings.model_copy(update={"base_url": new_host.base_url})
    monkeypatch.setattr(SettingsDialog, "ask", staticmethod(lambda *_a, **_k: (typed, ApiKey(KEY))))
    win.keys.ask = lambda server, saved_for: True
    win.open_settings()
    probed(qtbot, win, new_host)
    assert keyed(new_host) and all(r.headers.get("authorization") == BEARER
                                   for r in new_host.requests)
    assert SettingsFiles(tmp_folders["config"]).load().key_host == key_origin(new_host.base_url)


def test_a_key_typed_with_a_new_address_goes_with_it_without_a_question(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, new_host: FakeLLM,
        monkeypatch: pytest.MonkeyPatch) -> None:
    win = make_window(saved(fake_llm.base_url, key_origin(fake_llm.base_url)), key=ApiKey(KEY))
    typed = win.session.settings.model_copy(update={"base_url": new_host.base_url})
    monkeypatch.setattr(SettingsDialog, "ask",
                        staticmethod(lambda *_a, **_k: (typed, ApiKey("sk-new-one-8d2e"))))
    win.keys.ask = lambda *_: pytest.fail("a new key for a new address needs no question")
    win.open_settings()
    probed(qtbot, win, new_host)
    assert {r.headers.get("authorization") for r in new_host.requests} == {"Bearer sk-new-one-8d2e"}
    assert win.session.settings.key_host == key_origin(new_host.base_url)


def test_at_start_up_a_key_saved_for_another_server_waits_for_the_answer(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, new_host: FakeLLM) -> None:
    """The settings file names the new server (edited by hand, or by someone else), the key
    was saved for the old one: the window asks before the first request, as app.run does."""
    win = make_window(saved(new_host.base_url, key_origin(fake_llm.base_url)), key=ApiKey(KEY))
    asked: list[str] = []

    def answer(server: str, saved_for: str) -> bool:
        asked.append(server)
        qtbot.wait(200)
        assert keyed(new_host) == []
        return len(asked) > 1  # no at the first start, yes at the second

    win.keys.ask = answer
    win.keys.at_start()
    win.session.check_endpoint()
    probed(qtbot, win, new_host)
    record("API key at start-up, settings naming another server", tried=len(new_host.requests),
           refused=len(new_host.requests) - len(keyed(new_host)), leaked=len(keyed(new_host)))
    assert asked == [key_origin(new_host.base_url)] and keyed(new_host) == []
    win.close()
    win.session.wait_threads()
    again = make_window(saved(new_host.base_url, key_origin(fake_llm.base_url)), key=ApiKey(KEY))
    again.keys.ask = answer
    again.keys.at_start()
    qtbot.waitUntil(lambda: bool(keyed(new_host)), timeout=10_000)
    assert len(asked) == 2 and again.session.settings.key_host == key_origin(new_host.base_url)


def test_the_question_names_both_servers_in_plain_text(qtbot: Any, make_window: Any,
                                                       fake_llm: FakeLLM) -> None:
    win = make_window(saved(fake_llm.base_url, "https://api.example.com:443"), key=ApiKey(KEY))
    seen: list[tuple[str, Any]] = []

    def answer_no() -> None:
        box = win.keys.box
        assert isinstance(box, QMessageBox)
        seen.append((box.text(), box.textFormat()))
        box.button(QMessageBox.StandardButton.No).click()

    QTimer.singleShot(200, answer_no)
    win.keys.at_start()
    server = key_origin(fake_llm.base_url)
    assert seen and seen[0][0] == question_text(server, "https://api.example.com:443")
    assert seen[0][0].startswith(f"Send your API key to {server}? It was saved for "
                                 "https://api.example.com:443.")
    assert seen[0][1].name == "PlainText"
    assert win.session.request_key().reveal() == ""


def test_refresh_in_the_settings_dialog_sends_the_saved_key_only_to_its_server(
        qtbot: Any, fake_llm: FakeLLM, new_host: FakeLLM) -> None:
    dlg = SettingsDialog(saved(fake_llm.base_url, key_origin(fake_llm.base_url)), ApiKey(KEY))
    qtbot.addWidget(dlg)
    dlg.base_url.setText(new_host.base_url)
    dlg.refresh_models()
    assert "without the API key: it was saved for another server" in dlg.model_status.text()
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled() and bool(new_host.requests), timeout=10_000)
    record("API key on Settings' Refresh to a typed server", tried=len(new_host.requests),
           refused=len(new_host.requests) - len(keyed(new_host)), leaked=len(keyed(new_host)))
    assert keyed(new_host) == []
    dlg.api_key.setText("sk-typed-here-77")  # a key typed here goes with the address typed here
    dlg.refresh_models()
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled() and bool(keyed(new_host)), timeout=10_000)
    dlg.base_url.setText(fake_llm.base_url)
    dlg.api_key.setText(KEY)
    dlg.refresh_models()
    qtbot.waitUntil(lambda: dlg.refresh.isEnabled() and bool(keyed(fake_llm)), timeout=10_000)
    assert dlg.build().key_host == key_origin(fake_llm.base_url)  # kept through the dialog
    dlg.reject()


def test_the_settings_budget_read_sends_the_saved_key_only_to_its_server(
        qtbot: Any, fake_llm: FakeLLM, new_host: FakeLLM) -> None:
    """The Chat memory line asks the typed server for its context window as the address is
    typed; the saved key stays with its own server there too (it went to the typed one)."""
    dlg = SettingsDialog(saved(fake_llm.base_url, key_origin(fake_llm.base_url)), ApiKey(KEY))
    qtbot.addWidget(dlg)
    dlg.base_url.setText(new_host.base_url)
    dlg.refresh_budget()
    qtbot.waitUntil(lambda: dlg.budget_for is not None
                    and dlg.budget_for[0] == new_host.base_url, timeout=10_000)
    assert new_host.requests
    record("API key on Settings' budget read from a typed server", tried=len(new_host.requests),
           refused=len(new_host.requests) - len(keyed(new_host)), leaked=len(keyed(new_host)))
    assert keyed(new_host) == []
    dlg.api_key.setText("sk-typed-here-77")  # a key typed here goes with the address typed here
    dlg.refresh_budget()
    qtbot.waitUntil(lambda: bool(keyed(new_host)), timeout=10_000)
    dlg.base_url.setText(fake_llm.base_url)
    dlg.api_key.setText(KEY)
    dlg.refresh_budget()
    qtbot.waitUntil(lambda: bool(keyed(fake_llm)) and dlg.budget_for is not None
                    and dlg.budget_for[0] == fake_llm.base_url, timeout=10_000)
    qtbot.waitUntil(lambda: not running_threads(), timeout=10_000)  # the cancelled reads too
    dlg.reject()


def test_the_built_in_engine_never_receives_the_persons_key(make_window: Any) -> None:
    win = make_window(Settings(endpoint="builtin", key_host=""), key=ApiKey(KEY), show=False)
    sent = win.session.request_key().reveal()
    record("the person's API key to the built-in engine", refused=int(not sent), leaked=int(bool(sent)))
    assert sent == ""  # its clients send its own per-run key
    assert win.session.key_question() is None  # and nothing to ask
