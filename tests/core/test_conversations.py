"""Conversations (S-CONV-1): a new conversation keeps memory and starts a fresh transcript; past
ones are listed and can be reopened; the encoder cursor and traceability span them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.chat.agent import build_messages
from nocturne_desktop.core.chat.encoder import Encoder
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from tests.clock import Clock
from tests.core.fakemodel import FakeCall, FakeModel


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "n.db", clock=Clock(step=60.0)) as s:
        yield s


def test_a_new_conversation_keeps_memory_and_starts_a_fresh_transcript(store: Store) -> None:
    assert store.current_conversation() is None and store.conversations() == []
    t1 = store.add_turn("user", "I live in Lisbon and I love long walks by the river.")
    store.add_turn("assistant", "Noted!")
    store.append("human", FactDraft("The user lives in Lisbon.", "identity", t1.n))
    first = store.current_conversation()
    assert first == t1.conversation == 1
    second = store.new_conversation()
    assert second == 2 and store.current_conversation() == 2
    assert store.new_conversation() == 2  # an empty conversation is reused, not piled up
    messages = build_messages(store, "Where do I live?")
    assert [m["role"] for m in messages] == ["system", "user"]  # no old transcript...
    assert "The user lives in Lisbon." in messages[0]["content"]  # ...but the same memory
    t3 = store.add_turn("user", "Hello again")
    assert (t3.n, t3.conversation) == (3, 2)  # turn numbers run on across conversations
    convs = store.conversations()
    assert [(c.id, c.title, c.turn_count) for c in convs] == [
        (2, "Hello again", 1), (1, "I live in Lisbon and I love long walks by the river.", 2)]
    assert convs[1].last_at > convs[1].created_at
    assert [t.n for t in store.turns(conversation=1)] == [1, 2]
    store.open_conversation(1)
    assert store.current_conversation() == 1
    assert [m["content"] for m in build_messages(store, "and?")][1:] == [
        "I live in Lisbon and I love long walks by the river.", "Noted!", "and?"]
    assert store.add_turn("user", "back").conversation == 1
    with pytest.raises(InvalidInput, match="unknown conversation 9"):
        store.open_conversation(9)


def test_titles_are_the_start_of_the_first_user_message(store: Store) -> None:
    store.add_turn("system", "a system note")
    store.add_turn("user", "  This is a very long first message that goes on\nand on about many "
                   "different things for quite a while  ")
    (c,) = store.conversations()
    assert c.title.startswith("This is a very long first message that goes on and on")
    assert len(c.title) <= 60 and c.title.endswith("…")


def test_the_encoder_cursor_and_traceability_span_conversations(store: Store) -> None:
    store.add_turn("user", "I keep a bearded dragon called Saffron.")
    store.new_conversation()
    store.add_turn("user", "I work with Airflow every night.")
    seen: list[list[str]] = []

    def reply(call: FakeCall) -> dict[str, Any]:
        text = call.messages[-1]["content"]
        seen.append([line for line in text.splitlines() if line.startswith("[turn")])
        if "Saffron" in text:
            return {"facts": [{"text": "The user keeps a bearded dragon called Saffron.",
                               "category": "preferences", "turn": 1}]}
        return {"facts": [{"text": "The user works with Airflow every night.",
                           "category": "context", "turn": 2}]}

    result = Encoder(store, FakeModel(responder=reply)).encode_new_turns()
    assert len(result.accepted) == 2 and result.requests == 2  # one request per conversation
    assert all(len(lines) == 1 for lines in seen)  # neither saw the other's turns
    assert [f.source_turn for f in store.active_facts()] == [1, 2]
    transcript = [t.text for t in store.turns()]
    trace = audit.traceability(store.active_facts(), transcript, audit.hand_written(store))
    assert trace.traceable == trace.total == 2


def test_a_schema_3_store_puts_its_turns_in_one_conversation(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path, clock=Clock(step=60.0)) as s:
        s.add_turn("user", "old turn one")
        s.add_turn("assistant", "old turn two")
        s.append("scratch", FactDraft("a fact"))
    raw = sqlite3.connect(path)
    try:  # what schema 3 held: validity intervals, but no pins, no conversations, no strengths
        raw.execute("DROP TABLE strengths")
        raw.execute("DROP INDEX turns_conversation")
        raw.execute("ALTER TABLE turns DROP COLUMN conversation")
        raw.execute("DROP TABLE conversations")
        raw.execute("ALTER TABLE items DROP COLUMN pinned")
        raw.execute("ALTER TABLE item_history DROP COLUMN pinned")
        raw.execute("DELETE FROM meta")
        raw.execute("PRAGMA user_version = 3")
        raw.commit()
    finally:
        raw.close()
    with Store(path) as s:
        (c,) = s.conversations()
        assert (c.id, c.title, c.turn_count) == (1, "old turn one", 2)
        assert s.current_conversation() == 1
        assert [t.conversation for t in s.turns()] == [1, 1]
        assert not s.active_facts()[0].pinned
