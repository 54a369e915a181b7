"""Regenerate (stream_again): the same prompt, a new turn, the old reply no longer carried."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.agent import ChatAgent, carried_history, turn_replaced
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.ports import ModelUnreachable
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import FakeModel


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        yield s


def test_again_asks_with_the_messages_prompt_and_replaces_the_old_reply(store: Store) -> None:
    store.add_turn("user", "Hello.")
    store.add_turn("assistant", "Hi.")
    store.add_turn("user", "Name a city.")
    old = store.add_turn("assistant", "Paris.")
    model = FakeModel(replies=["Lisbon."])
    stream = ChatAgent(store, model).stream_again()
    assert "".join(stream) == "Lisbon."
    sent = model.calls[-1].messages
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "Hello."), ("assistant", "Hi."), ("user", "Name a city.")]
    assert stream.assistant_turn is not None and stream.assistant_turn.text == "Lisbon."
    assert turn_replaced(store, old.n) and not turn_replaced(store, stream.assistant_turn.n)
    assert [t.text for t in carried_history(store)] == ["Hello.", "Hi.", "Name a city.", "Lisbon."]
    assert [t.text for t in store.turns()][-2:] == ["Paris.", "Lisbon."]  # kept on record


def test_again_that_gets_nothing_changes_nothing(store: Store) -> None:
    store.add_turn("user", "Name a city.")
    old = store.add_turn("assistant", "Paris.")
    stream = ChatAgent(store, FakeModel(replies=[ModelUnreachable("down")])).stream_again()
    with pytest.raises(ModelUnreachable):
        "".join(stream)
    assert not turn_replaced(store, old.n)
    assert [t.text for t in carried_history(store)] == ["Name a city.", "Paris."]


def test_again_without_a_message_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match="no message to answer again"):
        ChatAgent(store, FakeModel()).stream_again()
