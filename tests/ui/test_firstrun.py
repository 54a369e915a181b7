"""The first-run dialog: detect, type a URL, or start the built-in engine; each ends in chosen()."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.engine import find_engine
from nocturne_desktop.paths import cache_dir
from nocturne_desktop.ui.firstrun import FirstRunDialog, start_builtin_engine
from tests.fakeserver import FakeLLM, Reply, closed_port_url

TIMEOUT = 1.0


def closed_port() -> int:
    port = urlsplit(closed_port_url()).port
    assert port is not None
    return port


@pytest.fixture
def make_dialog(qtbot: Any) -> Iterator[Callable[..., FirstRunDialog]]:
    made: list[FirstRunDialog] = []

    def make(servers: list[tuple[str, int]] | None = None, **kw: Any) -> FirstRunDialog:
        dialog = FirstRunDialog("http://localhost:1234/v1", "connection refused",
                                servers=servers or [], host="127.0.0.1", timeout=TIMEOUT, **kw)
        qtbot.addWidget(dialog)
        dialog.show()
        made.append(dialog)
        return dialog

    yield make
    for d in made:
        d.close()  # waits for its jobs
        assert not d.busy()


def fake_engine_cache(root: Path) -> Path:
    """A cache whose manifest find_engine() accepts (the files exist; nothing is run)."""
    engine = root / "engine"
    engine.mkdir(parents=True)
    server, model = engine / "llama-server", engine / "tiny.gguf"
    server.write_text("#!/bin/sh\nexit 1\n")
    server.chmod(0o755)
    model.write_bytes(b"GGUF")
    (engine / "engine.json").write_text(json.dumps({"schema": 1, "server": server.name,
                                                    "model": model.name}))
    return root


def test_says_what_is_wrong(make_dialog: Callable[..., FirstRunDialog]) -> None:
    d = make_dialog()
    assert "http://localhost:1234/v1" in d.intro.text() and "connection refused" in d.intro.text()


def test_detect_lists_servers_and_choosing_one_emits_chosen(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], fake_llm: FakeLLM,
) -> None:
    other = FakeLLM(models=("qwen2.5-7b-instruct", "llama-3.2-3b")).start()
    try:
        d = make_dialog([("LM Studio", closed_port()), ("Ollama", fake_llm.port), ("Jan", other.port)])
        qtbot.mouseClick(d.detect_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: d.server_list.count() == 2 and not d.busy(), timeout=5000)
        assert [d.server_list.item(i).text() for i in range(2)] == [
            f"Ollama at {fake_llm.base_url} (1 model)", f"Jan at {other.base_url} (2 models)"]
        assert d.detect_status.text().startswith("Found 2")
        d.server_list.setCurrentRow(1)
        assert [d.model_box.itemText(i) for i in range(d.model_box.count())] == [
            "qwen2.5-7b-instruct", "llama-3.2-3b"]
        d.model_box.setCurrentIndex(1)
        with qtbot.waitSignal(d.chosen, timeout=2000) as blocker:
            qtbot.mouseClick(d.use_server_button, Qt.MouseButton.LeftButton)
        assert blocker.args == [other.base_url, "llama-3.2-3b"]
        assert d.choice == (other.base_url, "llama-3.2-3b") and d.result() == d.DialogCode.Accepted
    finally:
        other.close()


def test_detect_finding_nothing_says_so(qtbot: Any, make_dialog: Callable[..., FirstRunDialog]) -> None:
    d = make_dialog([("LM Studio", closed_port()), ("Ollama", closed_port())])
    with qtbot.assertNotEmitted(d.chosen):
        d.detect()
        qtbot.waitUntil(lambda: not d.busy() and "Nothing answered" in d.detect_status.text(),
                        timeout=5000)
    assert d.server_list.count() == 0 and not d.use_server_button.isEnabled()
    assert "LM Studio (" in d.detect_status.text()


def test_url_without_v1_is_checked_and_completed(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], fake_llm: FakeLLM,
) -> None:
    d = make_dialog()
    d.url_edit.setText(fake_llm.root_url.removeprefix("http://"))  # no scheme, no /v1
    with qtbot.waitSignal(d.chosen, timeout=5000) as blocker:
        qtbot.mouseClick(d.use_url_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [fake_llm.base_url, "fake-model"]


def test_url_with_a_model_the_server_lacks_is_refused(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], fake_llm: FakeLLM,
) -> None:
    d = make_dialog()
    d.url_edit.setText(fake_llm.base_url)
    d.url_model_edit.setText("gpt-9")
    with qtbot.assertNotEmitted(d.chosen):
        d.use_url()
        qtbot.waitUntil(lambda: "does not list 'gpt-9'" in d.url_status.text(), timeout=5000)
    assert "fake-model" in d.url_status.text()


@pytest.mark.parametrize("text, expect", [
    ("", "Type the server's base URL"),
    ("ftp://example.org/v1", "must start with http:// or https://"),
])
def test_url_refused_before_any_request(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], text: str, expect: str,
) -> None:
    d = make_dialog()
    d.url_edit.setText(text)
    with qtbot.assertNotEmitted(d.chosen):
        d.use_url()
    assert expect in d.url_status.text() and not d.busy()


def test_url_that_does_not_answer_says_why(qtbot: Any, make_dialog: Callable[..., FirstRunDialog]) -> None:
    d = make_dialog()
    d.url_edit.setText(closed_port_url())
    with qtbot.assertNotEmitted(d.chosen):
        d.use_url()
        qtbot.waitUntil(lambda: not d.busy() and d.url_status.text() not in ("", "Checking…"),
                        timeout=5000)
    assert "127.0.0.1" in d.url_status.text()


def test_engine_button_disabled_with_the_make_target_when_not_installed(
    make_dialog: Callable[..., FirstRunDialog],
) -> None:
    d = make_dialog()  # the UI harness points the cache folder at an empty tmp folder
    assert not d.engine_button.isEnabled()
    assert "make engine" in d.engine_status.text()
    d.start_engine()  # a no-op when unavailable
    assert not d.busy()


def test_engine_button_starts_the_engine_and_chooses_it(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], fake_llm: FakeLLM, tmp_path: Path,
) -> None:
    started: list[bool] = []

    def starter() -> tuple[str, str]:
        started.append(True)
        return fake_llm.base_url, "SmolLM2-135M-Instruct"

    d = make_dialog(engine_cache=fake_engine_cache(tmp_path / "cache"), engine_starter=starter)
    assert d.engine_button.isEnabled() and d.engine_status.text() == ""
    with qtbot.waitSignal(d.chosen, timeout=5000) as blocker:
        qtbot.mouseClick(d.engine_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [fake_llm.base_url, "SmolLM2-135M-Instruct"] and started == [True]


def test_engine_that_fails_to_start_says_so(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], tmp_path: Path,
) -> None:
    def starter() -> tuple[str, str]:
        raise builtin_engine.EngineError("llama-server exited with code 1 while starting")

    d = make_dialog(engine_cache=fake_engine_cache(tmp_path / "cache"), engine_starter=starter)
    with qtbot.assertNotEmitted(d.chosen):
        d.start_engine()
        qtbot.waitUntil(lambda: "did not start" in d.engine_status.text(), timeout=5000)
    assert "exited with code 1" in d.engine_status.text() and d.engine_button.isEnabled()


def test_closing_while_detecting_waits_and_drops_the_late_result(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], fake_llm: FakeLLM,
) -> None:
    fake_llm.models_reply = Reply.fault("hang")
    d = make_dialog([("LM Studio", fake_llm.port)])
    d.detect()
    assert d.busy() and not d.detect_button.isEnabled()
    with qtbot.assertNotEmitted(d.chosen):
        d.reject()
        assert not d.busy()  # the probe timed out while the dialog closed; no thread outlives it
    assert d.choice is None


def test_ask_returns_none_when_dismissed(qtbot: Any) -> None:
    def dismiss() -> None:
        w = QApplication.activeModalWidget()
        assert isinstance(w, FirstRunDialog)
        w.reject()

    QTimer.singleShot(50, dismiss)
    assert FirstRunDialog.ask("http://localhost:1234/v1", "refused", servers=[], timeout=TIMEOUT) is None


REAL_CACHE = cache_dir()  # read at import, before the UI harness points the cache at tmp


@pytest.mark.engine
@pytest.mark.slow
def test_real_builtin_engine_started_by_the_panel_is_healthy_30s_later(
    qtbot: Any, make_dialog: Callable[..., FirstRunDialog], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real llama-server, started by the panel's own button, worker thread and starter."""
    if find_engine(REAL_CACHE) is None:
        message = "the local model engine is not built: run `make engine`"
        if os.environ.get("NOCTURNE_REQUIRE_ENGINE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(REAL_CACHE))
    try:
        d = make_dialog()
        assert d.engine_starter is start_builtin_engine and d.engine_button.isEnabled()
        with qtbot.waitSignal(d.chosen, timeout=int(builtin_engine.START_TIMEOUT_S * 1000)) as got:
            qtbot.mouseClick(d.engine_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not d.busy(), timeout=5000)  # the worker thread has ended
        engine = builtin_engine.current()
        assert engine is not None and got.args[0] == engine.base_url
        qtbot.wait(30_000)
        assert engine.healthy() and engine.exit is None, engine.exit
        assert builtin_engine.current() is engine
    finally:
        builtin_engine.stop()
