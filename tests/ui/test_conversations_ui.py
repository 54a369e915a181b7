"""Conversations and chat edits in the window (issue 11, S-CONV-1 and item 8): New
conversation (Ctrl+N) keeps memory and empties the pane, File → Conversations… lists them to
reopen one; "remember that …" / "forget that …" said in chat are offered in the pane and become
hand edits decided by you only on confirmation. Every test here fails on the code before it
(the window had neither)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.conversations import CURRENT_MARK
from tests.fakeserver import FakeLLM
from tests.ui.test_flows import chat_requests, chat_responder, send

pytestmark = pytest.mark.timeout(120)


def chat(qtbot: Any, win: Any, text: str) -> None:
    """Type a message, press Enter, wait until the reply is in and remembered."""
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, text)
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)


def test_new_conversation_keeps_memory_and_the_list_reopens_the_first(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    fake_llm.respond_with(chat_responder("Noted.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    chat(qtbot, win, "My bearded dragon is called Saffron.")
    chat(qtbot, win, "She likes crickets.")
    s.store.append("human", FactDraft("The user keeps a bearded dragon called Saffron.",
                                      "preferences", 1, time.time()))
    first = s.store.current_conversation()

    qtbot.keyClick(win, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert win.chat.transcript.messages == [] and win.chat.text() == ""
    assert s.store.current_conversation() != first
    assert any(f.text.startswith("The user keeps a bearded dragon") for f in s.store.active_facts())
    chat(qtbot, win, "What should I cook tonight?")
    sent = chat_requests(fake_llm)[-2].body["messages"]  # the chat request, not the encoder's
    assert [m["content"] for m in sent if m["role"] != "system"] == ["What should I cook tonight?"]
    assert "Saffron" in sent[0]["content"]  # memory was kept

    qtbot.keyClick(win, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    dlg = win.conversations_dialog
    assert dlg is not None and dlg.isVisible()
    qtbot.waitUntil(lambda: dlg.loaded and len(dlg.rows()) == 2, timeout=5_000)
    rows = dlg.rows()
    assert [(r[0], r[3]) for r in rows] == [
        (CURRENT_MARK + "What should I cook tonight?", "2"),
        ("My bearded dragon is called Saffron.", "4")]
    assert all(r[1][:4].isdigit() for r in rows)  # a date

    dlg.tree.setCurrentItem(dlg.tree.topLevelItem(1))
    dlg.open_button.click()
    assert s.store.current_conversation() == first
    qtbot.waitUntil(lambda: len(win.chat.transcript.messages) == 4, timeout=5_000)
    shown = win.chat.text()
    assert "My bearded dragon is called Saffron." in shown and "She likes crickets." in shown
    assert "cook tonight" not in shown
    assert "the model receives the last 4 of them" in shown
    qtbot.waitUntil(lambda: dlg.rows()[1][0].startswith(CURRENT_MARK), timeout=5_000)

    chat(qtbot, win, "What is her name?")  # continues the first: its history goes to the model
    sent = chat_requests(fake_llm)[-2].body["messages"]
    said = [m["content"] for m in sent if m["role"] == "user"]
    assert said == ["My bearded dragon is called Saffron.", "She likes crickets.", "What is her name?"]
    assert [t.text for t in s.store.turns(conversation=first) if t.role == "user"][-1] == \
        "What is her name?"


def test_new_conversation_is_refused_while_a_reply_runs(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    from tests.fakeserver import Reply

    fake_llm.respond_with(chat_responder(Reply.text("Slow reply.", delay=0.5), []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    send(qtbot, win, "Hello there.")
    qtbot.waitUntil(lambda: win.session.busy == "chat", timeout=5_000)
    assert not win.menus.new_conv.isEnabled()
    with pytest.raises(RuntimeError, match="before starting a new conversation"):
        win.session.new_conversation()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    assert win.menus.new_conv.isEnabled()
    assert len(win.session.store.conversations()) == 1


def test_remember_that_said_in_chat_becomes_your_edit_when_confirmed(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    fake_llm.respond_with(chat_responder("I will keep that in mind.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    s.hand("add_fact", "human", "The user lives in Porto.", "identity")  # a version to compare with
    bar = win.chat.edit_bar
    chat(qtbot, win, "remember that I like tea")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    assert bar.label.text() == "Remember in human: “I like tea.”?"
    assert bar.label.textFormat() == Qt.TextFormat.PlainText
    assert chat_requests(fake_llm)[0].body["messages"][-1]["content"] == "remember that I like tea"
    assert not [f for f in s.store.active_facts() if "tea" in f.text]  # nothing written yet
    bar.accept_button.click()
    assert not bar.isVisible()
    (tea,) = [f for f in s.store.active_facts() if "tea" in f.text]
    assert (tea.block, tea.text, tea.category) == ("human", "I like tea.", "preferences")
    assert any(tea.id == f.id for f in win.memory.model.facts("human"))  # in the tree
    v = s.store.latest_version()
    assert v is not None
    assert "memory: remembered by you — I like tea." in win.chat.text()
    win._compare(v.seq - 1, v.seq)
    qtbot.waitUntil(lambda: win.diff.diff is not None
                    and (win.diff.diff.a, win.diff.diff.b) == (v.seq - 1, v.seq), timeout=5_000)
    m = win.diff.model
    rows = [[str(m.data(m.index(r, c))) for c in range(m.columnCount())] for r in range(m.rowCount())]
    (added,) = [r for r in rows if "I like tea." in " ".join(r)]
    assert "you" in added[4]


def test_not_now_writes_nothing_and_forget_that_forgets_on_confirmation(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    with Store(db_path) as store:
        fact = store.append("human", FactDraft("The user keeps a bearded dragon called Saffron.",
                                               "preferences", None, time.time()))
    fake_llm.respond_with(chat_responder("Alright.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    bar = win.chat.edit_bar
    versions = s.store.versions()
    chat(qtbot, win, "Please remember that I like green tea.")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    bar.dismiss_button.click()
    assert not bar.isVisible()
    assert [f.text for f in s.store.all_facts()] == [fact.text]
    assert s.store.versions() == versions  # no version, no mutation
    assert "remembered by you" not in win.chat.text()

    chat(qtbot, win, "forget that I keep a bearded dragon")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    assert "bearded dragon called Saffron" in bar.label.text() and bar.accept_button.text() == "Forget"
    bar.accept_button.click()
    assert not [f for f in s.store.active_facts() if f.id == fact.id]
    v = s.store.latest_version()
    assert v is not None and fact.id in v.label


def test_confirming_while_the_reply_runs_applies_when_it_ends(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    from tests.fakeserver import Reply

    fake_llm.respond_with(chat_responder(Reply.text("Slowly noted.", delay=0.8), []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    bar = win.chat.edit_bar
    send(qtbot, win, "remember that I like tea")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    assert s.busy == "chat"
    bar.accept_button.click()
    assert "applied when the reply ends" in bar.label.text()
    assert not [f for f in s.store.active_facts() if "tea" in f.text]
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    assert [f.text for f in s.store.active_facts() if "tea" in f.text] == ["I like tea."]
    assert not bar.isVisible()


def test_remember_that_of_what_memory_holds_says_already_remembered(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    with Store(db_path) as store:
        held = store.append("human", FactDraft("The user likes green tea.", "preferences", None,
                                               time.time()))
    fake_llm.respond_with(chat_responder("Noted.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    bar = win.chat.edit_bar
    versions = s.store.versions()
    chat(qtbot, win, "remember that I like green tea")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    assert bar.label.text() == (f"Already remembered: “The user likes green tea.” ({held.id}) "
                                "— nothing was added.")
    assert not bar.accept_button.isVisible() and bar.dismiss_button.text() == "OK"
    bar.dismiss_button.click()
    assert not bar.isVisible()
    assert [f.text for f in s.store.active_facts()] == ["The user likes green tea."]
    assert s.store.versions() == versions

    # a negation of it is not a duplicate: offered and written as usual
    chat(qtbot, win, "remember that I don't like green tea any more")
    qtbot.waitUntil(lambda: bar.isVisible() and bar.accept_button.isVisible(), timeout=5_000)
    assert bar.accept_button.text() == "Remember"
    bar.accept_button.click()
    assert "I don't like green tea any more." in [f.text for f in s.store.active_facts()]


def test_what_the_encoder_stored_meanwhile_is_not_remembered_twice(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    from tests.fakeserver import Reply

    fake_llm.respond_with(chat_responder(
        Reply.text("Slowly noted.", delay=0.8),
        [{"text": "The user likes tea.", "category": "preferences", "turn": 1}]))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    bar = win.chat.edit_bar
    send(qtbot, win, "remember that I like tea")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=5_000)
    assert bar.accept_button.text() == "Remember"  # memory did not hold it when it was said
    bar.accept_button.click()
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    qtbot.waitUntil(lambda: bar.label.text().startswith("Already remembered"), timeout=5_000)
    assert "“The user likes tea.”" in bar.label.text() and bar.isVisible()
    assert [f.text for f in s.store.active_facts() if "tea" in f.text] == ["The user likes tea."]
    assert "remembered by you" not in win.chat.text()
