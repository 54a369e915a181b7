"""The fused ranking: a question that shares no word with its evidence still finds it (the
paraphrase the word search misses), while a question that shares words keeps finding it; the
search panel's form lists exact matches first, marked, then what only the meaning finds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.agent import render_memory
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.ranking import FUSION, MEANING_MIN, WORDS_ONLY, query_words
from nocturne_desktop.core.types import FactDraft

NOW = 1_800_000_000.0
DAY = 86400.0

REMARKS = [
    "Maya had {food} for lunch on {day}.", "Maya's train was late on {day} morning.",
    "The weather in Bristol was grey and drizzly on {day}.", "Maya made a cup of {drink} on {day}.",
    "Maya watched an episode of {tv} on {day} night.", "Maya's neighbours were drilling on {day}.",
    "Maya went to the shop for milk on {day}.", "Maya tidied the desk on {day}.",
    "Maya's phone battery was low on {day}.", "Maya bought a pastry from the bakery on {day}.",
]
FOODS = ["soup", "a wrap", "sushi", "noodles", "pizza", "curry"]
DRINKS = ["tea", "coffee", "hot chocolate", "green tea"]
TVS = ["Bake Off", "Taskmaster", "Slow Horses", "a nature documentary"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

EVIDENCE = [
    ("What does she do for a living?", "Maya works as a nurse at Southmead Hospital.", "identity"),
    ("Which pet did she take home?", "Maya adopted a greyhound from a rescue centre and named "
     "him Biscuit.", "event"),
    ("What vehicle does she own?", "Maya drives a blue Fiat Panda.", "context"),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "m.db", clock=lambda: NOW) as s:
        with s.transaction():
            for i, (_, text, cat) in enumerate(EVIDENCE):
                s.append("scratch", FactDraft(text, cat, created_at=NOW - (120 + i) * DAY))
            for i in range(300):  # four months of passing remarks, newer than the evidence
                text = REMARKS[i % len(REMARKS)].format(
                    food=FOODS[i % 6], drink=DRINKS[i % 4], tv=TVS[i % 4], day=DAYS[i % 7])
                s.append("scratch", FactDraft(text, "context", created_at=NOW - (100 - i / 3) * DAY))
        yield s


@pytest.mark.parametrize(("question", "fact"), [(q, f) for q, f, _ in EVIDENCE])
def test_a_paraphrase_finds_the_fact_the_word_search_misses(
    store: Store, question: str, fact: str
) -> None:
    """Fails on the word search alone (what main did): the question shares no content word."""
    words = render_memory(store, question, budget_chars=2000, fusion=WORDS_ONLY)
    assert words.trimmed and fact not in words.text
    view = render_memory(store, question, budget_chars=2000)
    assert fact in view.text and len(view.text) <= 2000 + 200


def test_a_question_sharing_words_still_finds_its_fact_first(store: Store) -> None:
    hits = store.rank("Which hospital does Maya work at?", limit=5)
    assert hits[0].fact.text == "Maya works as a nurse at Southmead Hospital."
    assert hits[0].exact and hits[0].words_rank == 1 and hits[0].similarity is not None


def test_each_list_can_be_left_out_and_recency_alone_is_the_newest(store: Store) -> None:
    newest = [f.id for f in store.recent(limit=3)]
    from nocturne_desktop.core.store.ranking import Fusion

    hits = store.rank("anything at all", limit=3, fusion=Fusion(words=0.0, meaning=0.0,
                                                                 recency=1.0))
    assert [h.fact.id for h in hits] == newest
    assert all(h.meaning_rank is None and h.words_rank is None for h in hits)
    assert store.rank("anything", limit=0) == []


def test_the_search_panel_lists_exact_matches_first_then_meaning_alone(store: Store) -> None:
    hits = store.search_all_ranked("nurse job", limit=10)
    assert hits and hits[0].exact and "nurse" in hits[0].matched
    found = store.search_all_ranked("What does she do for a living?", limit=10)
    texts = [h.fact.text for h in found]
    assert "Maya works as a nurse at Southmead Hospital." in texts
    exact = [h.exact for h in found]
    assert exact == sorted(exact, reverse=True)  # every exact match before the first other
    for h in found:
        if not h.exact:
            assert h.matched == frozenset() and h.score >= MEANING_MIN


def test_the_search_panel_finds_forgotten_facts_by_meaning_too(store: Store) -> None:
    job = next(f for f in store.active_facts() if "nurse" in f.text)
    store.forget(job.id)
    found = store.search_all_ranked("What does she do for a living?", limit=10)
    hit = next(h for h in found if h.fact.id == job.id)
    assert hit.status == "forgotten" and not hit.exact
    assert store.search_all_ranked("What does she do for a living?", limit=10,
                                   fusion=WORDS_ONLY) == store.search_all(
        "What does she do for a living?", limit=10)


def test_the_word_list_searches_the_words_that_are_not_stopwords() -> None:
    assert query_words("What does she do for a living?") == "living"
    assert query_words("what is it") == "what is it"
    assert FUSION.meaning > 0 and WORDS_ONLY.meaning == 0
