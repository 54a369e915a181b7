""""Forget that …" / "remember that …" in chat become proposed hand edits (confirmed later)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.edits import AlreadyRemembered, confirm, propose
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "n.db") as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        s.append("scratch", FactDraft("The user had toast for breakfast."))
        s.append("human", FactDraft("The user keeps a bearded dragon called Saffron.", "preferences"))
        yield s


@pytest.mark.parametrize(("message", "text", "category", "block"), [
    ("Remember that I'm allergic to peanuts", "I'm allergic to peanuts.", "identity", "human"),
    ("please remember: my sister Ana lives in Porto!", "My sister Ana lives in Porto.",
     "identity", "human"),
    ("Can you remember that I prefer tea over coffee?", "I prefer tea over coffee.",
     "preferences", "human"),
    ("don't forget that I promised to call Ana on Friday", "I promised to call Ana on Friday.",
     "commitments", "human"),
    ("Note that the standup moved to 10:00, thanks", "The standup moved to 10:00.",
     "context", "scratch"),
])
def test_remember_requests_become_proposed_additions(store: Store, message: str, text: str,
                                                     category: str, block: str) -> None:
    before = store.dump()
    p = propose(store, message)
    assert p is not None and p.kind == "add"
    assert (p.text, p.category, p.block) == (text, category, block)
    assert p.duplicate_of is None and p.summary.startswith(f"Remember in {block}")
    assert store.dump() == before  # a proposal writes nothing
    v = confirm(store, p)
    (row,) = store.mutations(seq_range=(v.seq - 1, v.seq))
    assert (row.mutation.kind, row.mutation.decided_by) == ("add", "you")
    assert store.active_facts()[-1].text == text


def test_remembering_what_is_already_there_says_so(store: Store) -> None:
    p = propose(store, "remember that the user lives in Lisbon")
    assert p is not None and p.duplicate_of is not None and p.duplicate_of.id == "m_1"
    assert p.summary.startswith("Already remembered as m_1")


def test_forget_requests_find_the_fact_best_first(store: Store) -> None:
    before = store.dump()
    p = propose(store, "Please forget that I had toast for breakfast.")
    assert p is not None and p.kind == "forget" and p.said == "I had toast for breakfast"
    assert [f.id for f in p.candidates] == ["m_2"]
    assert p.summary == "Forget m_2: The user had toast for breakfast."
    assert store.dump() == before
    v = confirm(store, p)
    f = store.get("m_2")
    assert f is not None and not f.active and v.label == "forget:m_2"
    assert store.mutations(item_id="m_2")[-1].mutation.decided_by == "you"


def test_forgetting_nothing_that_matches_or_a_pinned_fact(store: Store) -> None:
    p = propose(store, "forget about my trip to Mars")
    assert p is not None and p.candidates == () and "Nothing in memory matches" in p.summary
    with pytest.raises(InvalidInput, match="nothing in memory matches"):
        confirm(store, p)
    store.pin("m_3")
    q = propose(store, "forget that I keep a bearded dragon")
    assert q is not None and q.candidates[0].id == "m_3" and "unpin it first" in q.summary
    with pytest.raises(InvalidInput, match="pinned"):
        confirm(store, q)
    with pytest.raises(InvalidInput, match="was not offered"):
        confirm(store, q, "m_1")


@pytest.mark.parametrize("message", [
    "Do you remember when we went to Porto?",
    "I remember that trip fondly.",
    "forget it",
    "Don't forget",
    "What should I forget?",
    "",
    "   ",
])
def test_other_messages_are_not_requests(store: Store, message: str) -> None:
    assert propose(store, message) is None


def test_remembering_a_duplicate_writes_nothing_and_says_already_remembered(store: Store) -> None:
    p = propose(store, "remember that the user lives in Lisbon!")
    assert p is not None and p.duplicate_of is not None and p.duplicate_of.id == "m_1"
    before = store.dump()
    with pytest.raises(AlreadyRemembered, match=r"already remembered: The user lives in Lisbon\."):
        confirm(store, p)
    assert store.dump() == before


def test_memory_that_changed_since_the_proposal_is_checked_again(store: Store) -> None:
    """The encoder stores the same words from that very message before the person confirms."""
    p = propose(store, "Remember that I like green tea")
    assert p is not None and p.duplicate_of is None
    store.append("scratch", FactDraft("The user likes green tea."))
    before = store.dump()
    with pytest.raises(AlreadyRemembered) as exc:
        confirm(store, p)
    assert exc.value.fact.text == "The user likes green tea."
    assert str(exc.value).startswith("already remembered: The user likes green tea.")
    assert store.dump() == before


@pytest.mark.parametrize("message", [
    "remember that the user does not live in Lisbon",     # a negation is not a duplicate
    "remember that the user might live in Lisbon",        # nor another modality
    "remember that the user lives in Lisbon with two cats",  # nor a fuller fact
])
def test_what_the_meaning_guards_separate_is_not_a_duplicate(store: Store, message: str) -> None:
    p = propose(store, message)
    assert p is not None and p.kind == "add" and p.duplicate_of is None
    v = confirm(store, p)
    assert store.active_facts()[-1].text == p.text and v.label.startswith("add:")


def test_a_forgotten_fact_does_not_count_as_remembered(store: Store) -> None:
    store.forget_now("m_1")
    p = propose(store, "remember that the user lives in Lisbon")
    assert p is not None and p.duplicate_of is None
    confirm(store, p)
    assert store.active_facts()[-1].text == "The user lives in Lisbon."


def test_the_confirmation_reads_only_the_facts_written_since_the_proposal(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    p = propose(store, "Remember that I like green tea")
    assert p is not None and p.checked_up_to == 3
    store.append("scratch", FactDraft("The user likes green tea."))
    monkeypatch.setattr(store, "active_facts", lambda: pytest.fail("read the whole store"))
    with pytest.raises(AlreadyRemembered, match="The user likes green tea"):
        confirm(store, p)
