"""The memory prompt fills its budget by relevance (inflections folded) before recency (with the
words alone: the fused ranking's other lists are tested in test_ranking)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.agent import MIN_LINE_CHARS, render_memory
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.ranking import WORDS_ONLY
from nocturne_desktop.core.types import FactDraft

NOW = 1_800_000_000.0
DAY = 86400.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "a.db", clock=lambda: NOW) as s:
        yield s


def _noise(store: Store, n: int) -> None:
    with store.transaction():
        for i in range(n):
            store.append("scratch", FactDraft(f"Maya had soup, day {i}.", "event",
                                              created_at=NOW - i * 3600.0))


def test_an_old_fact_asked_about_in_another_inflection_beats_recent_noise(store: Store) -> None:
    _noise(store, 400)
    evidence = store.append("episodes", FactDraft(
        "Maya paints watercolour landscapes on Sunday mornings.", "preferences",
        created_at=NOW - 120 * DAY))
    view = render_memory(store, "What kind of pictures has Maya been painting?", budget_chars=2000)
    assert view.trimmed and len(view.text) <= 2000
    assert evidence.id in {f.id for f in view.shown}


def test_a_memory_too_large_to_fit_is_never_loaded_whole(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 800
    _noise(store, budget // MIN_LINE_CHARS + 1)
    human = store.append("human", FactDraft("Maya is a nurse.", "identity"))

    def refuse() -> None:
        raise AssertionError("active_facts() loads every fact")

    monkeypatch.setattr(store, "active_facts", refuse)
    view = render_memory(store, "soup", budget_chars=budget)
    assert view.trimmed and len(view.text) <= budget
    assert view.total == budget // MIN_LINE_CHARS + 2
    assert human.id in {f.id for f in view.shown}


def test_relevant_facts_come_first_then_the_newest_fill_the_rest(store: Store) -> None:
    old = store.append("scratch", FactDraft("Maya runs by the harbour.", created_at=NOW - 90 * DAY))
    _noise(store, 200)
    view = render_memory(store, "How did the running go?", budget_chars=1000, fusion=WORDS_ONLY)
    shown = [f.id for f in view.shown]
    assert old.id in shown
    newest = store.recent(limit=3)
    assert all(f.id in shown for f in newest)  # what budget is left goes to the newest
    # with meaning in the ranking too, the budget goes by the fused order; the fact still wins
    assert old.id in {f.id for f in render_memory(store, "How did the running go?",
                                                  budget_chars=1000).shown}
