"""Memory after the history (a model's ``ChatTuning.memory_after_history``, the built-in
engine's): the part of the prompt that changes on most turns comes last, so a server's prompt
cache keeps the instructions and the whole history when the encoder stores a fact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.agent import ChatAgent, build_messages_and_view, render_memory
from nocturne_desktop.core.ports import ChatTuning
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.llm.tuning import BUILTIN
from tests.core.fakemodel import FakeModel


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        s.append("persona", FactDraft("The assistant is called Nyx.", "identity"))
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        s.append("scratch", FactDraft("The user keeps a bearded dragon called Saffron.", "context"))
        yield s


def rendered(messages: list[dict[str, str]]) -> str:
    """ChatML, as SmolLM2's template writes it (what the server's cache compares)."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def test_memory_sits_in_its_own_system_message_between_history_and_message(store: Store) -> None:
    store.add_turn("user", "Hi, I'm Maya.")
    store.add_turn("assistant", "Hello Maya!")
    messages, view = build_messages_and_view(store, "Where do I live?", memory_after_history=True)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "system", "user"]
    head, memory = messages[0]["content"], messages[3]["content"]
    assert "<memory>" not in head and "just before the user's latest message" in head
    assert memory.startswith("<memory>\n") and memory.endswith("\n</memory>")
    assert "- The user lives in Lisbon." in memory and len(view.shown) == 3
    assert messages[-1] == {"role": "user", "content": "Where do I live?"}
    default, _ = build_messages_and_view(store, "Where do I live?")
    assert "<memory>" in default[0]["content"] and len(default) == 4  # the default is unchanged


def test_a_new_fact_leaves_the_instructions_and_history_as_they_were(store: Store) -> None:
    model = FakeModel()
    model.tuning = ChatTuning("layout", memory_after_history=True)  # type: ignore[attr-defined]
    agent = ChatAgent(store, model)
    store.add_turn("user", "Hi, I'm Maya.")
    store.add_turn("assistant", "Hello Maya!")
    before = agent.messages_for("I work best in the morning.")
    store.add_turn("user", "I work best in the morning.")
    store.add_turn("assistant", "Noted!")
    # the encoder stores a fact in the middle of memory (human, before scratch)
    store.append("human", FactDraft("The user works best in the morning.", "preferences"))
    after = agent.messages_for("Where do I live?")
    kept = rendered(before[:-2])  # all but memory and the message
    assert rendered(after).startswith(kept)
    # memory at the top instead: the same change re-reads the whole history
    agent_top = ChatAgent(store, FakeModel())
    top = agent_top.messages_for("Where do I live?")
    assert "The user works best in the morning." in top[0]["content"]


def test_the_built_in_tuning_uses_it() -> None:
    assert BUILTIN.memory_after_history


# --- reading well: blocks, time order, "previously" last, no line twice -----------------------

NOW = 1_800_000_000.0
DAY = 86400.0


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_facts_stand_by_block_in_the_order_they_were_learnt(tmp_path: Path) -> None:
    with Store(tmp_path / "t.db", clock=lambda: NOW) as s:
        late = s.append("episodes", FactDraft("Maya ran the Bristol 10k.", "event",
                                              created_at=NOW - 1 * DAY))
        early = s.append("episodes", FactDraft("Maya booked flights to Lisbon.", "event",
                                               created_at=NOW - 30 * DAY))
        s.append("human", FactDraft("Maya works as a nurse.", "identity", created_at=NOW - 2 * DAY))
        s.append("human", FactDraft("Maya grew up in Leeds.", "identity", created_at=NOW - 90 * DAY))
        for budget in (6000, 120):  # whole, and trimmed to the budget
            view = render_memory(s, "What did Maya do?", budget_chars=budget)
            text = view.text
            assert text.index("[human") < text.index("[episodes")
            if "Leeds" in text and "nurse" in text:
                assert text.index("Leeds") < text.index("nurse")
            if early.text in text and late.text in text:
                assert text.index(early.text) < text.index(late.text)


def test_a_restated_fact_is_shown_once_and_previously_comes_last(tmp_path: Path) -> None:
    from nocturne_desktop.core import mutations as mu

    with Store(tmp_path / "t.db", clock=lambda: NOW) as s:
        s.append("human", FactDraft("Maya lives in Bristol.", "identity"))
        s.append("scratch", FactDraft("Maya lives in Bristol.", "identity"))  # before a Dedupe
        old = s.append("human", FactDraft("Maya drives a red Fiat.", "context"))
        new = s.append("human", FactDraft("Maya drives a blue Fiat Panda.", "context"))
        s.commit_pass([mu.to_row(mu.Supersede(pass_name="reconcile", target=old.id, by=new.id,
                                              reason="corrected"))], label="after", sleep_id=None)
        view = render_memory(s, "What car did Maya drive before?")
        lines = _lines(view.text)
        assert len(lines) == len(set(lines))  # no line twice
        assert lines.count("- Maya lives in Bristol.") == 1
        current, _, prev = view.text.partition("[previously")
        assert prev and "red Fiat" in prev and "red Fiat" not in current
        assert "blue Fiat Panda" in current and "blue Fiat Panda" not in prev  # shown above
        assert view.text.rstrip().endswith(")")  # the previously section is the last


def test_previously_names_the_successor_when_memory_does_not_show_it(tmp_path: Path) -> None:
    from nocturne_desktop.core import mutations as mu
    from nocturne_desktop.core.chat.agent import _fact_line, _previously_text, previously

    with Store(tmp_path / "t.db", clock=lambda: NOW) as s:
        old = s.append("scratch", FactDraft("Maya drives a red Fiat.", "context"))
        new = s.append("scratch", FactDraft("Maya drives a blue Fiat Panda.", "context"))
        s.commit_pass([mu.to_row(mu.Supersede(pass_name="reconcile", target=old.id, by=new.id,
                                              reason="corrected"))], label="after", sleep_id=None)
        items = previously(s, "Which red car did Maya drive?")
        successor = s.get(new.id)
        assert successor is not None and [f.id for f, _ in items] == [old.id]
        assert "now: Maya drives a blue Fiat Panda." in _previously_text(items, set())
        assert "now:" not in _previously_text(items, {_fact_line(successor)})
