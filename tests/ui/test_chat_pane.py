"""The chat pane: after a restart it shows the turns the model still receives, "memory off"
makes a private exchange (nothing saved or remembered), and a reply can be asked for again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.settings import Settings
from tests.fakeserver import FakeLLM

pytestmark = pytest.mark.timeout(120)


def test_after_a_restart_the_pane_shows_the_turns_the_model_still_receives(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the pane said "No conversation yet" while the next prompt carried
    the earlier exchange."""
    from tests.ui.test_flows import chat_requests, chat_responder, send

    with Store(db_path) as store:
        store.add_turn("user", "My bearded dragon is called **Saffron**.")
        store.add_turn("assistant", "Noted — *Saffron* it is.\n\n- a bearded dragon")
    fake_llm.respond_with(chat_responder("Hello again.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    shown = win.chat.text()
    assert "the model still receives these 2 turns" in shown
    assert "My bearded dragon is called **Saffron**." in shown  # your words, as you typed them
    assert "Noted — Saffron it is." in shown and "a bearded dragon" in shown  # the reply rendered
    assert [m.role for m in win.chat.transcript.messages] == ["user", "assistant"]
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "Do you remember my pet?")
    win.session.wait_threads()
    sent = chat_requests(fake_llm)[0].body["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:-1]] == [
        ("user", "My bearded dragon is called **Saffron**."),
        ("assistant", "Noted — *Saffron* it is.\n\n- a bearded dragon")]


def test_memory_off_makes_a_private_chat_nothing_saved_or_remembered(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: there was no switch; every exchange was saved and encoded."""
    from tests.ui.test_flows import chat_requests, chat_responder, send

    with Store(db_path) as store:
        store.append("human", FactDraft("The user keeps a bearded dragon called Saffron.", "preferences",
                                        None, time.time()))
    fake_llm.respond_with(chat_responder(
        "Saffron, your bearded dragon.",
        [{"text": "The user has a secret plan for a surprise party.", "category": "context", "turn": 1}]))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    win.chat.remember.setChecked(False)
    assert "memory off — a private chat" in win.chat.text()
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Keep this between us: I am planning a surprise party. What pet do I have?")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    text = win.chat.text()
    assert "surprise party" in text and "Saffron, your bearded dragon." in text  # shown as usual
    assert "memory off: nothing of this exchange was saved or remembered" in text
    assert s.store.turns() == []  # nothing saved
    assert [f.text for f in s.store.all_facts()] == ["The user keeps a bearded dragon called Saffron."]
    reqs = chat_requests(fake_llm)
    assert len(reqs) == 1, "no encoder request"
    assert "Saffron" in reqs[0].body["messages"][0]["content"]  # memory was still read
    # memory back on: the next exchange is saved and encoded, without the private one
    win.chat.remember.setChecked(True)
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "What pet do I have?")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    assert [t.text for t in s.store.turns() if t.role == "user"] == ["What pet do I have?"]
    encoder = chat_requests(fake_llm)[-1].last_user
    assert "NEW TURNS:" in encoder and "surprise party" not in encoder


def test_regenerate_a_reply_from_its_menu_and_the_model_no_longer_receives_the_old_one(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: a reply could not be asked for again."""
    from tests.fakeserver import Reply, Request
    from tests.ui.test_flows import chat_requests, send

    answers = iter(["A **first** answer.", "A better answer.", "Fine."])

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": []})
        return Reply.text(next(answers))

    fake_llm.respond_with(respond)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Say something about Porto.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    t = win.chat.transcript
    reply = t.messages[-1]
    cur = t.textCursor()
    cur.setPosition(reply.start + 2)
    menu = t.message_menu(t.cursorRect(cur).center())
    again = next(a for a in menu.actions() if a.objectName() == "regenerate")
    assert again.isEnabled()
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        again.trigger()
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    text = win.chat.text()
    assert "A first answer." in text and "A better answer." in text
    assert "↻ regenerated — the model no longer receives the reply above" in text
    regen = chat_requests(fake_llm)[2]  # chat, encoder, the regenerated chat
    assert [m["role"] for m in regen.body["messages"]] == ["system", "user"]
    assert regen.body["messages"][-1]["content"] == "Say something about Porto."
    turns = s.store.turns()
    assert [(x.role, x.text) for x in turns] == [
        ("user", "Say something about Porto."), ("assistant", "A **first** answer."),
        ("assistant", "A better answer.")]  # the old reply stays on record
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Thanks.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    nxt = [r for r in chat_requests(fake_llm) if "NEW TURNS:" not in r.last_user][-1]
    assert [(m["role"], m["content"]) for m in nxt.body["messages"][1:]] == [
        ("user", "Say something about Porto."), ("assistant", "A better answer."), ("user", "Thanks.")]
    # after a private reply there is nothing on record to answer again
    win.chat.remember.setChecked(False)
    fake_llm.respond_with(lambda req: Reply.text("Private."))
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Between us.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    cur.setPosition(t.messages[-1].start + 1)
    menu = t.message_menu(t.cursorRect(cur).center())
    assert not next(a for a in menu.actions() if a.objectName() == "regenerate").isEnabled()


def test_the_quiet_line_runs_remembered_facts_as_sentences() -> None:
    from nocturne_desktop.ui.chat import describe_encode
    from nocturne_desktop.ui.jobs.bodies.chat import EncodeSummary

    line, _note = describe_encode(EncodeSummary(
        remembered=(("m_1", "human", "The user gave a talk in Porto."),
                    ("m_2", "human", "The user keeps a bearded dragon")),
        refused=()))
    assert line == ("memory: remembered 2: The user gave a talk in Porto. "
                    "The user keeps a bearded dragon.")
