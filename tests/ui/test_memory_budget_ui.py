"""The chat's memory budget in the window: Settings shows it as the server's context window
sizes it (where the window was read, or "unknown" and the default), read off the GUI thread
and again when the endpoint or the model changes; and the chat's prompt carries what it says."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.chat.agent import fitted_budget
from nocturne_desktop.core.chat.budget import DEFAULT_BUDGET_CHARS, MAX_BUDGET_CHARS
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.serverinfo import REQUEST_SECONDS
from nocturne_desktop.llm.tuning import BUILTIN as BUILTIN_TUNING
from nocturne_desktop.settings import BUILTIN, ApiKey, Settings
from nocturne_desktop.ui import jobs
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.fakeserver import FakeLLM, Reply, closed_port_url
from tests.ui.test_flows import chat_requests, chat_responder, send

pytestmark = pytest.mark.timeout(120)

MODEL = "qwen2.5-7b-instruct"


@pytest.fixture
def served() -> Any:
    server = FakeLLM(models=(MODEL,)).start()
    yield server
    server.close()
    assert not server.errors, server.errors


def open_dialog(qtbot: Any, settings: Settings) -> SettingsDialog:
    dlg = SettingsDialog(settings, ApiKey())
    qtbot.addWidget(dlg)
    dlg.show()
    return dlg


def shown_budget(qtbot: Any, dlg: SettingsDialog) -> str:
    """The budget's line once the read has answered."""
    qtbot.waitUntil(lambda: not dlg.memory_budget.text().startswith("reading"), timeout=20_000)
    return dlg.memory_budget.text()


def test_settings_shows_the_window_where_it_was_read_and_the_budget_sized_from_it(
    qtbot: Any, served: FakeLLM
) -> None:
    served.describe_window("lmstudio", tokens=8192, maximum=32768)
    dlg = open_dialog(qtbot, Settings(base_url=served.base_url, model=MODEL))
    # the GUI thread did not wait for the server: the dialog says it is asking
    assert dlg.memory_budget.text().startswith("reading the model's context window from")
    text = shown_budget(qtbot, dlg)
    want = fitted_budget(None, 8192)
    assert DEFAULT_BUDGET_CHARS < want < MAX_BUDGET_CHARS
    assert text == (f"{want:,} characters, sized from the 8,192-token context window\n"
                    "read from LM Studio GET /api/v0/models: loaded_context_length")
    assert "reply cap" in dlg.memory_budget.toolTip()
    dlg.reject()


@pytest.mark.parametrize(
    ("layout", "kw", "why"),
    [(None, {}, "the server does not say its context window"),
     ("lmstudio", {"tokens": None, "maximum": 32768},
      "the server gives only the model's trained maximum, 32,768 tokens, not the window it "
      "runs it with")],
    ids=["says-nothing", "trained-maximum-only"])
def test_a_server_that_does_not_say_its_window_leaves_the_default(
    qtbot: Any, served: FakeLLM, layout: str | None, kw: dict[str, Any], why: str
) -> None:
    if layout:
        served.describe_window(layout, **kw)
    dlg = open_dialog(qtbot, Settings(base_url=served.base_url, model=MODEL))
    assert shown_budget(qtbot, dlg) == f"unknown — using the default 6,000 characters\n({why})"
    dlg.reject()


def test_the_budget_is_read_again_when_the_endpoint_or_the_model_changes(
    qtbot: Any, served: FakeLLM
) -> None:
    served.describe_window("vllm", tokens=32768)
    dlg = open_dialog(qtbot, Settings(base_url=closed_port_url(), model=MODEL))
    assert shown_budget(qtbot, dlg).startswith("unknown — using the default 6,000 characters\n")
    dlg.base_url.setText(served.base_url)  # typed: asked once the typing pauses
    qtbot.waitUntil(lambda: dlg.budget_for == (served.base_url, MODEL, False), timeout=20_000)
    assert dlg.memory_budget.text() == (
        f"{MAX_BUDGET_CHARS:,} characters, sized from the 32,768-token context window\n"
        "read from GET /models: max_model_len")
    # the built-in model's name on the same server: its tuning caps memory at 6,000
    served.models.append("SmolLM2-135M-Instruct")
    served.model_fields["SmolLM2-135M-Instruct"] = {"max_model_len": 32768}
    dlg.model.setCurrentText("SmolLM2-135M-Instruct")
    qtbot.waitUntil(lambda: dlg.budget_for is not None and dlg.budget_for[1] != MODEL,
                    timeout=20_000)
    assert dlg.memory_budget.text() == (
        f"{BUILTIN_TUNING.memory_chars:,} characters, sized from the 32,768-token context "
        "window and capped by the built-in SmolLM2-135M tuning\n"
        "read from GET /models: max_model_len")
    dlg.reject()


def test_a_dead_endpoint_says_unknown_the_default_and_why(qtbot: Any) -> None:
    url = closed_port_url()
    dlg = open_dialog(qtbot, Settings(base_url=url, model=MODEL))
    text = shown_budget(qtbot, dlg)
    first, why = text.split("\n")
    assert first == "unknown — using the default 6,000 characters"
    assert url.split("//")[1].split("/")[0] in why and "context window" not in why
    dlg.reject()


def test_the_built_in_engine_is_not_started_to_read_its_window(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[bool] = []
    monkeypatch.setattr(builtin_engine, "current", lambda: None)
    monkeypatch.setattr(builtin_engine, "start", lambda **_: started.append(True))
    monkeypatch.setattr(builtin_engine, "available", lambda cache=None: True)
    dlg = open_dialog(qtbot, Settings(endpoint=BUILTIN))
    assert shown_budget(qtbot, dlg) == ("unknown — using the default 6,000 characters\n(the "
                                        "built-in engine is not running yet)")
    assert not started
    dlg.reject()


def test_a_dialog_closed_while_the_server_stalls_does_not_wait_for_it(
    qtbot: Any, served: FakeLLM
) -> None:
    served.serve("GET", "/v1/models", Reply.fault("hang"))
    dlg = open_dialog(qtbot, Settings(base_url=served.base_url, model=MODEL))
    qtbot.waitUntil(lambda: any(r.path == "/v1/models" for r in served.requests), timeout=10_000)
    start = time.monotonic()
    dlg.reject()  # cancels the read; the stalled request ends at its own timeout
    assert time.monotonic() - start < 0.5
    assert dlg.memory_budget.text().startswith("reading")  # its late answer is dropped
    qtbot.waitUntil(lambda: not jobs.running_threads(), timeout=REQUEST_SECONDS * 1000 + 5_000)
    assert dlg.memory_budget.text().startswith("reading")


# --- the chat uses it -------------------------------------------------------------------------

FACTS = [f"The user's note number {i} says the {colour} kite flew over the {place} on day {i}."
         for i, (colour, place) in enumerate(
             (c, p) for c in ("red", "blue", "green", "amber", "violet", "teal", "ochre", "grey")
             for p in ("harbour", "meadow", "bridge", "market", "quarry", "orchard", "dunes",
                       "chapel", "viaduct", "lighthouse", "canal", "forest", "ridge", "pier"))]
"""112 facts, ~9,000 characters of memory: more than the default 6,000, less than a 32k
window's budget."""


@pytest.mark.parametrize(("window", "whole"), [(32768, True), (None, False)],
                         ids=["32k-window", "unknown-window"])
def test_the_chat_prompt_carries_the_memory_the_window_leaves_room_for(
    qtbot: Any, make_window: Any, served: FakeLLM, db_path: Path, window: int | None,
    whole: bool,
) -> None:
    """The chat job sizes memory from the window the server says (the fitted budget), not the
    default: with a 32k window every fact fits; unknown, memory stays within 6,000."""
    with Store(db_path) as store, store.transaction():
        for text in FACTS:
            store.append("scratch", FactDraft(text, "context"))
    assert sum(len(t) for t in FACTS) > 1.4 * DEFAULT_BUDGET_CHARS
    if window:
        served.describe_window("vllm", tokens=window)
    served.respond_with(chat_responder("Noted.", []))
    win = make_window(Settings(base_url=served.base_url, model=MODEL))
    with qtbot.waitSignal(win.session.chatEncoded, timeout=30_000):
        send(qtbot, win, "Which kite did I see?")
    win.session.wait_threads()
    system = "\n".join(m["content"] for m in chat_requests(served)[0].body["messages"]
                       if m["role"] == "system")
    carried = [t for t in FACTS if t in system]
    if whole:
        assert carried == FACTS
    else:
        assert len(carried) < len(FACTS)
        assert sum(len(t) for t in carried) <= DEFAULT_BUDGET_CHARS


def test_closing_the_window_waits_for_a_closed_dialogs_read(
    qtbot: Any, make_window: Any, served: FakeLLM
) -> None:
    """A job thread still running at exit would be destroyed running (a native abort)."""
    win = make_window(Settings(base_url=closed_port_url()))
    served.serve("GET", "/v1/models", Reply.fault("hang"))
    dlg = SettingsDialog(Settings(base_url=served.base_url, model=MODEL), ApiKey(), parent=win)
    dlg.show()
    qtbot.waitUntil(lambda: any(r.path == "/v1/models" for r in served.requests), timeout=10_000)
    dlg.reject()
    assert jobs.running_threads()
    win.close()
    assert not jobs.running_threads()
