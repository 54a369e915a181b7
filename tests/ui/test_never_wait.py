"""Never wait on memory: the next message is sent and answered while the encoder reads the last
one (each exchange gets a "remembering…" mark in the transcript, rewritten in place), a message
sent while a reply streams waits for it, and closing while it remembers loses nothing.

Against the scripted server on a real socket; the encoder's requests are held on an event, so
"while it remembers" is a state the test holds, not a race it hopes to win."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.store import Store
from nocturne_desktop.settings import Settings
from tests.fakeserver import FakeLLM, Reply, Request
from tests.ui.test_flows import chat_requests, send

pytestmark = pytest.mark.timeout(120)

FACTS = {  # what the user says → what the encoder proposes for it
    "I moved to Lisbon last spring.": {"text": "The user moved to Lisbon last spring.",
                                       "category": "identity"},
    "My bearded dragon is called Saffron.": {"text": "The user's bearded dragon is called Saffron.",
                                             "category": "preferences"},
    "I review the Airflow migration on Friday.": {
        "text": "The user reviews the Airflow migration on Friday.", "category": "commitments"},
}


class HeldEncoder:
    """Chat requests are answered at once (``Reply``); encoder requests wait on :attr:`gate`
    and then propose the facts of :data:`FACTS` for the user turns they carry as new."""

    def __init__(self, server: FakeLLM, reply: Any = None) -> None:
        self.gate = threading.Event()
        self.arrived = 0
        self.reply = reply
        server.respond_with(self)

    def __call__(self, req: Request) -> Reply:
        content = req.last_user
        if "NEW TURNS:" not in content:
            if self.reply is not None:
                return self.reply(req) if callable(self.reply) else self.reply
            return Reply.text(f"Noted ({len(content)} characters).")
        self.arrived += 1
        self.gate.wait(30)
        new = content.split("NEW TURNS:", 1)[1]
        return Reply.json({"facts": [dict(fact, turn=0) for said, fact in FACTS.items()
                                     if f"user: {said}" in new]})


@pytest.fixture
def held(fake_llm: FakeLLM) -> Iterator[HeldEncoder]:
    h = HeldEncoder(fake_llm)
    try:
        yield h
    finally:
        h.gate.set()  # never leave a server thread waiting


def encoder_requests(server: FakeLLM) -> list[str]:
    return [r.last_user for r in chat_requests(server) if "NEW TURNS:" in r.last_user]


def quiet_lines(win: Any) -> list[str]:
    return [line for line in win.chat.text().splitlines() if line.startswith("memory:")]


def test_a_message_sent_while_memory_reads_the_last_is_answered_and_both_are_remembered_in_order(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, held: HeldEncoder, db_path: Path
) -> None:
    """Fails on the old code: Send stayed disabled while the encoder ran, and a message sent
    then was refused ("already replying")."""
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    order: list[str] = []
    s.chatReplied.connect(lambda *_: order.append("replied"))
    s.chatEncoded.connect(lambda summary: order.append(f"encoded {summary.key}"))
    first, second = "I moved to Lisbon last spring.", "My bearded dragon is called Saffron."

    send(qtbot, win, first)
    qtbot.waitUntil(lambda: held.arrived == 1, timeout=10_000)  # the encoder reads exchange 1
    assert s.busy == "remembering"
    assert win.chat.send_button.isEnabled() and win.chat.input.isEnabled()
    assert quiet_lines(win) == ["memory: remembering…"]

    send(qtbot, win, second)  # while memory still reads the first
    qtbot.waitUntil(lambda: order.count("replied") == 2, timeout=10_000)
    assert held.arrived == 1 and not any(o.startswith("encoded") for o in order)
    assert quiet_lines(win) == ["memory: remembering…", "memory: remembering…"]
    assert win.chat.input.toPlainText() == ""  # taken by the store, not left waiting

    held.gate.set()
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    s.wait_threads()
    assert order == ["replied", "replied", "encoded 1", "encoded 2"]
    turns = s.store.turns()
    assert [(t.role, t.text) for t in turns if t.role == "user"] == [("user", first),
                                                                    ("user", second)]
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    # each run read its own exchange: the first never saw the second message, the second
    # never read the first again
    one, two = encoder_requests(fake_llm)
    assert f"user: {first}" in one.split("NEW TURNS:")[1] and second not in one
    assert f"user: {second}" in two.split("NEW TURNS:")[1]
    assert first not in two.split("NEW TURNS:")[1]
    facts = sorted(f.text for f in s.store.active_facts())
    assert facts == ["The user moved to Lisbon last spring.",
                     "The user's bearded dragon is called Saffron."]
    assert s.store.get_meta("extracted_through") == "4"
    # each mark was rewritten in place, under its own exchange
    lines = [ln for ln in win.chat.text().splitlines() if ln.strip()]
    at = {ln: i for i, ln in enumerate(lines)}
    assert (at[first] < at["memory: remembered 1: The user moved to Lisbon last spring."]
            < at[second] < at["memory: remembered 1: The user's bearded dragon is called Saffron."])
    assert "memory: remembering…" not in lines


def test_a_message_sent_while_a_reply_streams_waits_for_it_and_can_be_taken_back(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, held: HeldEncoder
) -> None:
    """Fails on the old code: Send was disabled while the reply streamed; Enter did nothing."""
    held.gate.set()
    held.reply = lambda req: Reply.text(" ".join(f"w{i}" for i in range(60)), token_delay=0.03)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    first, second = "I moved to Lisbon last spring.", "I review the Airflow migration on Friday."
    send(qtbot, win, first)
    qtbot.waitUntil(lambda: "w3" in win.chat.text(), timeout=10_000)
    assert s.busy == "chat" and win.chat.send_button.isEnabled()
    with qtbot.waitSignal(s.chatQueued, timeout=2_000):
        send(qtbot, win, second)
    bar = win.chat.queued_bar
    assert bar.isVisible() and second in bar.label.text()
    assert win.chat.input.toPlainText() == ""
    assert [t.text for t in s.store.turns() if t.role == "user"] == [first]  # not sent yet

    qtbot.waitUntil(lambda: len([t for t in s.store.turns() if t.role == "user"]) == 2,
                    timeout=15_000)
    assert not bar.isVisible()
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    s.wait_threads()
    turns = s.store.turns()
    assert [(t.role, t.text if t.role == "user" else "") for t in turns] == [
        ("user", first), ("assistant", ""), ("user", second), ("assistant", "")]
    # its prompt carried the whole reply it follows
    prompts = [r for r in chat_requests(fake_llm) if "NEW TURNS:" not in r.last_user]
    assert turns[1].text in [m["content"] for m in prompts[1].body["messages"]]
    assert sorted(f.text for f in s.store.active_facts()) == [
        "The user moved to Lisbon last spring.", "The user reviews the Airflow migration on Friday."]

    # taken back: it returns to the box and is never sent
    send(qtbot, win, "Tell me a story.")
    qtbot.waitUntil(lambda: s.busy == "chat"
                    and "w3" in win.chat.text().partition("Tell me a story.")[2], timeout=10_000)
    send(qtbot, win, "Actually, never mind.")
    assert bar.isVisible()
    bar.take_back.click()
    assert not bar.isVisible() and win.chat.input.toPlainText() == "Actually, never mind."
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    s.wait_threads()
    assert "Actually, never mind." not in [t.text for t in s.store.turns()]


def test_enter_pressed_twice_sends_the_message_once(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, held: HeldEncoder
) -> None:
    held.gate.set()
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    win.chat.input.setPlainText("I moved to Lisbon last spring.")
    qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)
    qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)  # before the store took the first
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert [t.role for t in win.session.store.turns()] == ["user", "assistant"]
    assert win.session.queued == []


def test_asking_again_waits_until_memory_has_read_the_reply(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, held: HeldEncoder
) -> None:
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    send(qtbot, win, "I moved to Lisbon last spring.")
    qtbot.waitUntil(lambda: held.arrived == 1, timeout=10_000)
    assert not win.chat.transcript.can_regenerate
    with pytest.raises(RuntimeError, match="remembering"):
        win.session.regenerate()
    held.gate.set()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert win.chat.transcript.can_regenerate


def test_closing_while_it_remembers_loses_nothing_the_next_message_reads_it(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, held: HeldEncoder, db_path: Path
) -> None:
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    first = "I moved to Lisbon last spring."
    send(qtbot, win, first)
    qtbot.waitUntil(lambda: held.arrived == 1, timeout=10_000)
    win.close()  # quits at once: the encoder is stopped, nothing asked
    assert win.session.closed
    held.gate.set()
    with Store(db_path) as store:
        assert [t.text for t in store.turns() if t.role == "user"] == [first]
        assert store.get_meta("extracted_through") in (None, "0")
        assert store.active_count() == 0

    again = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    second = "My bearded dragon is called Saffron."
    with qtbot.waitSignal(again.session.chatEncoded, timeout=15_000):
        send(qtbot, again, second)
    qtbot.waitUntil(lambda: not again.session.busy, timeout=15_000)
    again.session.wait_threads()
    new = encoder_requests(fake_llm)[-1].split("NEW TURNS:")[1]
    assert f"user: {first}" in new and f"user: {second}" in new
    assert sorted(f.text for f in again.session.store.active_facts()) == [
        "The user moved to Lisbon last spring.", "The user's bearded dragon is called Saffron."]


@pytest.mark.engine
@pytest.mark.timeout(300)
def test_on_the_real_engine_the_next_message_is_answered_while_memory_reads_the_last(
    qtbot: Any, make_window: Any, real_engine: Any, db_path: Path
) -> None:
    """The built-in engine (llama-server + SmolLM2, a slot for the chat and one for the encoder):
    the second message goes out the moment the first exchange starts being remembered, is
    answered, and both exchanges are read by the encoder, in order, up to the last turn."""
    win = make_window(Settings(base_url=real_engine.base_url, model=real_engine.model_name))
    s = win.session
    events: list[str] = []
    s.chatStarted.connect(lambda text: events.append(f"started {text[:12]}"))
    s.chatEncoded.connect(lambda summary: events.append(f"encoded {summary.key}"))
    first, second = "My bearded dragon is called Saffron.", "I live in Lisbon with my sister Ana."
    with qtbot.waitSignal(s.chatRemembering, timeout=120_000):
        send(qtbot, win, first)
    send(qtbot, win, second)  # while memory reads the first: sent at once, not refused
    assert s.busy == "chat"
    qtbot.waitUntil(lambda: not s.busy, timeout=240_000)
    s.wait_threads()
    assert events[:2] == ["started My bearded d", "started I live in Li"]
    assert events.index("started I live in Li") < events.index("encoded 1")
    assert [e for e in events if e.startswith("encoded")] == ["encoded 1", "encoded 2"]
    turns = s.store.turns()
    assert [(t.role, t.text) for t in turns if t.role == "user"] == [("user", first),
                                                                    ("user", second)]
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    assert s.store.get_meta("extracted_through") == str(turns[-1].n)  # both exchanges read
    assert "memory: remembering…" not in win.chat.text()
