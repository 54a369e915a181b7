"""The fault matrix in the window: a refused message stays in the box, a huge reply is held to
the cap, a trickle ends at the deadline, and the user's turn is committed before the model call."""

from __future__ import annotations

import time
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.store import MAX_TURN_CHARS
from nocturne_desktop.llm.client import CHARS_PER_TOKEN_CAP
from nocturne_desktop.settings import Settings, Timeouts
from tests.fakeserver import FakeLLM, Reply, Request

pytestmark = pytest.mark.timeout(120)


def responder(reply: Reply) -> Any:
    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": []})
        return reply

    return respond


def press_enter(qtbot: Any, win: Any, text: str) -> None:
    win.chat.input.setPlainText(text)
    qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)


@pytest.mark.parametrize(
    ("text", "reason"),
    # 1 MB of words (a single 1 MB word takes Qt itself seconds to lay out in the box)
    [("word " * (1024 * 1024 // 5), "the limit is"), ("hello\x00world", "NUL")],
    ids=["1-MB", "nul"],
)
def test_a_message_the_store_refuses_stays_in_the_box_with_the_reason(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings,
    text: str, reason: str,
) -> None:
    assert len(text) > MAX_TURN_CHARS or "\x00" in text
    fake_llm.respond_with(responder(Reply.text("ok")))
    win = make_window(server_settings)
    failed: list[str] = []
    win.session.chatFailed.connect(failed.append)
    press_enter(qtbot, win, text)
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert failed and reason in failed[0]
    assert win.chat.input.toPlainText() == text  # nothing typed is lost
    assert reason in win.chat.text()
    assert win.session.store.turns() == []
    assert fake_llm.chat_requests() == []  # refused before any model call
    assert win.chat.send_button.isEnabled()


def test_the_box_lets_go_once_the_turn_is_committed_and_enter_to_commit_is_short(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(responder(Reply.text("ok", delay=0.5)))  # the model is slow
    win = make_window(server_settings)
    accepted: list[float] = []
    win.session.chatAccepted.connect(lambda _n: accepted.append(time.perf_counter()))
    t0 = time.perf_counter()
    press_enter(qtbot, win, "remember that I live in Lisbon")
    qtbot.waitUntil(lambda: bool(accepted), timeout=10_000)
    enter_to_commit_ms = (accepted[0] - t0) * 1000
    # committed and visible to any other connection, while the model is still thinking
    with win.session.store.__class__(win.session.db_path) as other:
        assert [t.text for t in other.turns()] == ["remember that I live in Lisbon"]
    assert win.session.busy == "chat"
    assert win.chat.input.toPlainText() == ""
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert enter_to_commit_ms < 1000, f"Enter → commit took {enter_to_commit_ms:.0f} ms"


def test_a_huge_reply_is_held_to_the_cap_in_the_window_and_still_encoded(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(responder(Reply.huge(50 * 1024 * 1024)))
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=30_000):
        press_enter(qtbot, win, "go on forever")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    cap = 512 * CHARS_PER_TOKEN_CAP
    text = win.chat.text()
    assert len(text) < cap + 1000, f"the transcript holds {len(text):,} characters"
    assert "size cap of 16,384 characters" in text
    assert "[stopped — partial reply kept]" in text
    assert "memory: nothing new to remember" in text  # the encoder read the turn
    last = win.session.store.turns()[-1]
    assert last.role == "assistant" and len(last.text) == cap
    assert win.session.store.integrity_check() == "ok"


def test_a_trickling_reply_ends_at_the_deadline_with_a_message(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_with(responder(Reply.stream_of(["drip "] * 400, token_delay=0.1)))
    settings = Settings(base_url=fake_llm.base_url, model="fake-model",
                        timeouts=Timeouts(connect=2, first_token=5, idle=5, total=1.0))
    win = make_window(settings)
    with qtbot.waitSignal(win.session.chatFailed, timeout=15_000) as blocker:
        press_enter(qtbot, win, "tell me slowly")
    assert "overall deadline" in blocker.args[0]
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert "overall deadline" in win.chat.text()
    turns = win.session.store.turns()
    assert turns[0].text == "tell me slowly"
    assert turns[-1].role == "assistant" and turns[-1].text.startswith("drip")


def test_an_unclosed_encoder_reply_is_not_reported_as_nothing_new(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    unclosed = '{"facts": [{"text": "The user lives in Lisbon.", "category": "identity", "turn": 1}]'

    def respond(req: Request) -> Reply:
        return Reply.text(unclosed) if "NEW TURNS:" in req.last_user else Reply.text("Noted.")

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        press_enter(qtbot, win, "I live in Lisbon.")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    quiet = [line for line in win.chat.text().splitlines() if line.startswith("memory:")]
    assert len(quiet) == 1 and "nothing new" not in quiet[0]
    assert "never closed" in quiet[0]
    (row,) = win.session.store.mutations(pass_name="encoder")
    assert not row.mutation.accepted and row.mutation.refs["raw"] == unclosed


def test_a_password_typed_in_chat_is_shown_and_kept_in_the_transcript_but_not_remembered(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": [
                {"text": "The user's password is hunter2.", "category": "context", "turn": 1}]})
        return Reply.text("I will not repeat it.")

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        press_enter(qtbot, win, "store: my password is hunter2")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    assert "memory: refused 1 (hover for why)" in win.chat.text()
    assert "sensitive: looks like a password" in win.chat.transcript._notes[-1]
    assert win.session.store.turns()[0].text == "store: my password is hunter2"
    assert win.session.store.all_facts() == []
