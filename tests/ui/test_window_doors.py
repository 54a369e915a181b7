"""Every door of the window that writes a fact's text says a refusal the same way (S-DOOR-1):
*Add a fact*, *Edit text*, "remember that …" in chat and *Import into scratch* show one sentence
naming the rule that refused it ("Nothing was written: the secrets rule refused …"), nothing is
written, and what the person typed is kept. Before this change the hand doors put the core's
bare reason in the status bar for a few seconds (the typed text was gone), the chat bar offered
to remember a password, and the import's message named no rule (these tests fail on that code).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.settings import Settings
from tests.fakeserver import FakeLLM
from tests.ui.conftest import seed_store
from tests.ui.hostilerows import record
from tests.ui.test_flows import chat_responder, send
from tests.ui.test_hands_ui import action, tree_fact

pytestmark = pytest.mark.timeout(120)

SECRET = "The user's password is hunter2-Blue!"
SECRETS_RULE = "Nothing was written: the secrets rule refused"


class Asked:
    """A scripted fact dialog: answers (texts, the category kept) in turn, and records what
    it was asked with (its header and the text it showed)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []

    def __call__(self, _parent: Any, _title: str, header: str, text: str, category: str,
                 **_kw: Any) -> tuple[str, str] | None:
        self.calls.append((header, text))
        answer = self.answers.pop(0) if self.answers else None
        return None if answer is None else (answer, category)


def door(name: str, message: str, kept: str, store: Store) -> None:
    """The matrix row of one window door tried with a secret."""
    record(f"window door: {name} × a secret", refused=int(message.startswith(SECRETS_RULE)),
           lost=int(kept != SECRET and name != "chat \"remember that\""),
           leaked=int(held_anywhere(store, "hunter2")), note="the rule named; the text kept"
           if name != "chat \"remember that\"" else "the rule named; no offer to remember")


def held_anywhere(store: Store, text: str) -> bool:
    return (any(text in f.text for f in store.all_facts())
            or any(text in json.dumps(m.mutation.refs) for m in store.mutations()))


def test_add_a_fact_says_which_rule_refused_it_and_keeps_the_text(
        make_window: Any, db_path: Path) -> None:
    seed_store(db_path)
    win = make_window(Settings())
    before = win.session.store.dump()
    ask = Asked(SECRET, None)  # the secret, then Cancel on the second asking
    win.memory.ask_fact = ask
    action(win.memory.menu_for(None, "human"), "Add a fact to human…").trigger()
    message = win.statusBar().currentMessage()
    assert message.startswith(f"{SECRETS_RULE} the new fact (it looks like a password")
    assert "hunter2" not in message  # the secret is not shown back
    assert len(ask.calls) == 2
    label, kept = ask.calls[1]
    door("add a fact", message, kept, win.session.store)
    assert label.startswith(message) and kept == SECRET  # asked again, nothing typed is lost
    assert win.session.store.dump() == before
    # fixed on the second asking: written
    win.memory.ask_fact = Asked(SECRET, "The user uses a password manager.")
    action(win.memory.menu_for(None, "human"), "Add a fact to human…").trigger()
    assert win.session.store.active_facts()[-1].text == "The user uses a password manager."
    assert not held_anywhere(win.session.store, "hunter2")


def test_edit_text_says_which_rule_refused_it_and_keeps_the_text(
        make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    before = win.session.store.dump()
    target = tree_fact(win, facts[1].id)
    ask = Asked(SECRET, SECRET)  # the same refused text again ends it
    win.memory.ask_fact = ask
    action(win.memory.menu_for(target, target.block), "Edit text…").trigger()
    message = win.statusBar().currentMessage()
    assert message.startswith(f"{SECRETS_RULE} the edited text (it looks like a password")
    door("edit text", message, ask.calls[-1][1], win.session.store)
    assert [kept for _label, kept in ask.calls] == [target.text, SECRET]
    assert win.session.store.dump() == before
    # a fragment: the statement guard, named as such
    win.memory.ask_fact = Asked("blue and", None)
    action(win.memory.menu_for(target, target.block), "Edit text…").trigger()
    assert win.statusBar().currentMessage().startswith(
        "Nothing was written: the statement guard refused the edited text")
    assert win.session.store.dump() == before


def test_remember_that_in_chat_says_which_rule_refused_it(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path) -> None:
    seed_store(db_path)
    fake_llm.respond_with(chat_responder("Noted.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    bar = win.chat.edit_bar
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "remember that my password is hunter2-Blue!")
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=10_000)
    assert bar.label.text().startswith(
        f"{SECRETS_RULE} what you asked to remember (it looks like a password")
    door("chat \"remember that\"", bar.label.text(), SECRET, win.session.store)
    assert not bar.accept_button.isVisible() and bar.dismiss_button.text() == "OK"
    assert "hunter2" not in bar.label.text()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert not held_anywhere(win.session.store, "hunter2")
    # the same door when the person confirms (the check runs again at the store)
    win.accept_chat_edit(HandProposal("add", "x", text=SECRET, block="human", category="context"))
    assert bar.label.text().startswith(f"{SECRETS_RULE} what you asked to remember")
    assert not held_anywhere(win.session.store, "hunter2")


def _export_with(tmp: Path, texts: list[str]) -> Path:
    """An export whose active facts say ``texts`` (written into the file as a file from
    anywhere would hold them: the store would refuse to hold them itself)."""
    with Store(tmp / "src.db") as s:
        for n, _text in enumerate(texts):
            s.append("human", FactDraft(f"The user owns {n + 2} bicycles.", "context"))
        raw = json.loads(exchange.export_json(s))
    for fact, text in zip(raw["facts"], texts, strict=True):
        fact["current"]["text"] = text
    path = tmp / "theirs.json"
    path.write_text(json.dumps(raw), "utf-8")
    return path


def test_import_into_scratch_lists_each_refused_fact_with_its_rule(
        qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path) -> None:
    seed_store(db_path)
    win = make_window(Settings())
    file = _export_with(tmp_path, ["blue and", "The user plays the cello."])
    win.exchange.import_into_scratch(str(file))
    qtbot.waitUntil(lambda: win.exchange.notice is not None and win.exchange.notice.isVisible(),
                    timeout=10_000)
    text = win.exchange.notice.text()
    refused = text.split("Refused, nothing of them was written:\n")[1].split("\n\n")[0]
    assert refused.splitlines() == [
        "• m_1: the statement guard refused it ('blue and' states nothing (no verb): a fact is a "
        "sentence)"]
    store = win.session.store
    assert "The user plays the cello." in {f.text for f in store.active_facts()}
    assert not held_anywhere(store, "blue and")


def test_an_import_holding_a_secret_is_refused_in_one_sentence_and_writes_nothing(
        qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path) -> None:
    seed_store(db_path)
    win = make_window(Settings())
    before = win.session.store.dump()
    file = _export_with(tmp_path, [SECRET, "The user plays the cello."])
    win.exchange.import_into_scratch(str(file))
    qtbot.waitUntil(lambda: win.exchange.notice is not None and win.exchange.notice.isVisible(),
                    timeout=10_000)
    text = win.exchange.notice.text()
    record("window door: import into scratch × a secret",
           refused=int(text.startswith("Nothing was imported") and "secrets rule" in text),
           leaked=int(held_anywhere(win.session.store, "hunter2")), note="the whole file refused")
    assert text == (f"Nothing was imported: the secrets rule refused a fact in it ({file}: "
                    "looks like a password (password); sensitive data is never kept in memory).")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert win.session.store.dump() == before
