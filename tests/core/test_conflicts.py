"""Conflict candidates (S-REC-1): found where two facts cannot both hold, never between
different-but-compatible facts; the labelled set's precision and recall; bucketed finding."""

from __future__ import annotations

import pytest

from bench import bench_conflicts
from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.conflicts import changes
from nocturne_desktop.core.types import Fact


def fact(n: int, text: str, turn: int | None = None, *, category: str = "context",
         at: float | None = None, active: bool = True) -> Fact:
    t = float(at if at is not None else 1000 + n)
    return Fact(f"m_{n}", "human", text, category, turn if turn is not None else n, t, t, active)


@pytest.mark.parametrize(("a", "b", "rule"), [
    ("User lives in Lisbon", "User lives in Porto", "value"),
    ("User lives in Lisbon", "I've moved to Porto", "value"),
    ("User works at Acme", "User works at Globex", "value"),
    ("User's favourite colour is blue", "User's favourite colour is green", "value"),
    ("User eats meat", "User no longer eats meat", "polarity"),
    ("User likes jazz", "User dislikes jazz", "polarity"),
    ("User has 2 cats", "User has 3 cats", "quantity"),
    ("User is 34 years old", "User is 35 years old", "quantity"),
])
def test_true_conflicts_are_found_and_explained(a: str, b: str, rule: str) -> None:
    c = conflicts.pair_conflict(fact(1, a), fact(2, b))
    assert c is not None and c.rule == rule
    assert (c.older, c.newer) == ("m_1", "m_2")
    assert c.why  # one sentence naming what is shared and what differs
    assert c.frame and c.older_value and c.newer_value


@pytest.mark.parametrize(("a", "b"), [
    ("User likes Lisbon", "User visited Porto"),
    ("User likes Lisbon", "User likes Porto"),
    ("User speaks Portuguese", "User speaks Spanish"),
    ("User lives in Lisbon", "User's sister lives in Porto"),
    ("User lives in Lisbon", "User lives in the centre of Lisbon"),
    ("User eats meat", "User eats fish"),
    ("User has 2 cats", "User has 2 dogs"),
    ("User no longer eats meat", "User no longer eats dairy"),
    ("User has two children", "User's children are 5 and 8"),
])
def test_compatible_facts_are_not_flagged(a: str, b: str) -> None:
    assert conflicts.pair_conflict(fact(1, a), fact(2, b)) is None


def test_events_with_different_numbers_are_two_events() -> None:
    a = fact(1, "User ran 5 km", category="event")
    b = fact(2, "User ran 10 km", category="event")
    assert conflicts.pair_conflict(a, b) is None
    assert conflicts.pair_conflict(fact(1, "User ran 5 km"), fact(2, "User ran 10 km")) is not None


def test_value_rule_names_the_frame_and_both_values() -> None:
    c = conflicts.pair_conflict(fact(1, "User lives in Lisbon"), fact(2, "User has moved to Porto"))
    assert c is not None
    assert c.frame == "lives in"
    assert (c.older_value, c.newer_value) == ("lisbon", "porto")
    assert "lisbon" in c.why and "porto" in c.why


def test_newer_is_turn_order_then_time_then_id() -> None:
    late_turn_early_time = fact(1, "User lives in Porto", turn=9, at=10)
    early_turn_late_time = fact(2, "User lives in Lisbon", turn=3, at=99)
    c = conflicts.pair_conflict(late_turn_early_time, early_turn_late_time)
    assert c is not None and c.newer == "m_1"
    same_turn = conflicts.pair_conflict(fact(5, "User lives in Porto", turn=4, at=50),
                                        fact(6, "User lives in Lisbon", turn=4, at=40))
    assert same_turn is not None and same_turn.newer == "m_5"
    tie = conflicts.pair_conflict(fact(8, "User lives in Porto", turn=4, at=50),
                                  fact(7, "User lives in Lisbon", turn=4, at=50))
    assert tie is not None and tie.newer == "m_8"


def test_find_conflicts_matches_the_pairwise_rule_and_skips_inactive() -> None:
    facts = [fact(1, "User lives in Lisbon"), fact(2, "User likes Lisbon"),
             fact(3, "User lives in Porto"), fact(4, "User eats meat"),
             fact(5, "User no longer eats meat"), fact(6, "User lives in Faro", active=False)]
    found = conflicts.find_conflicts(facts)
    assert [(c.older, c.newer, c.rule) for c in found] == [
        ("m_1", "m_3", "value"), ("m_4", "m_5", "polarity")]
    for c in found:
        by = {f.id: f for f in facts}
        assert conflicts.pair_conflict(by[c.older], by[c.newer]) == c


def test_labelled_set_precision_and_recall() -> None:
    pairs = bench_conflicts.labelled_pairs()
    assert len(pairs) >= 60
    assert sum(bool(p["conflict"]) for p in pairs) * 2 == len(pairs)
    pr = bench_conflicts.precision_recall()
    precision, recall = pr["precision"], pr["recall"]
    assert isinstance(precision, float) and precision >= 0.95, pr
    assert isinstance(recall, float) and recall >= 0.8, pr


def test_finding_is_bucketed_not_all_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    judge = conflicts._judge

    def counting(*args: object) -> object:
        nonlocal calls
        calls += 1
        return judge(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(conflicts, "_judge", counting)
    facts = bench_conflicts.synthetic(3000)
    conflicts.find_conflicts(facts)
    assert calls < 3000 * 40  # all pairs would be 4.5 million


def test_a_statement_about_the_past_conflicts_with_nothing() -> None:
    assert conflicts.pair_conflict(fact(1, "User used to live in Lisbon"),
                                   fact(2, "User lives in Faro")) is None
    assert conflicts.pair_conflict(fact(1, "User formerly smoked"),
                                   fact(2, "User does not smoke")) is None


@pytest.mark.parametrize(("a", "b"), [
    ("User works with Ana", "User works with Rui"),
    ("User drives to work", "User drives a Tesla"),
    ("User's dog is named Rex", "User's cat is named Tom"),
])
def test_relations_that_are_not_exclusive_are_not_frames(a: str, b: str) -> None:
    assert conflicts.pair_conflict(fact(1, a), fact(2, b)) is None


def test_the_reading_cache_holds_a_100k_fact_store() -> None:
    """A second scan of a 100k-fact store reads its facts from the cache (65,536 was fewer)."""
    for cached in (conflicts._read, conflicts.clause_words):
        maxsize = cached.cache_info().maxsize
        assert maxsize is not None and maxsize >= 200_000


def _corpus_texts() -> list[str]:
    pairs = bench_conflicts.correction_pairs() + bench_conflicts.labelled_pairs()
    texts = [str(p[k]) for p in pairs for k in ("a", "b")]
    return texts + [f.text for f in bench_conflicts.synthetic(2000)] + [
        "Mum's car is blue.", "I can't drive.", "User cannot swim", "My son is 7, and tall.",
        "Ana é de Lisboa.", "User has 3.5 kids", "abc123 def", "I dont eat pork"]


def test_a_plain_fact_is_indexed_from_its_words_as_from_its_tokens() -> None:
    # the finder reads each fact once: a plain fact's change-index entry comes from the words
    # the conflict reading already has; it must equal what the change reader gives the text
    plain = 0
    for text in _corpus_texts():
        got = changes.plain_entry(text, tm.normalize(text).split())
        if got is not None:
            plain += 1
            assert got == changes.index_entry(text), text
    assert plain > 1000


def test_a_frequent_word_is_not_probed_when_the_statement_has_a_rarer_one() -> None:
    # 400 earlier "I play the <x>" facts: the 16 nearest holders of "play" are the latest
    # ones; the violin is reached through its own posting list, the only one probed
    older = [fact(1, "I play the violin.")]
    older += [fact(2 + k, f"I play the {w}{k}.") for k, w in enumerate(["oboe"] * 400)]
    new = fact(999, "I don't play the violin any more.")
    judged: list[tuple[str, str]] = []
    real = conflicts._judge

    def spy(old: Fact, nw: Fact, *rest: object) -> object:
        judged.append((old.id, nw.id))
        return real(old, nw, *rest)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conflicts, "_judge", spy)
        found = conflicts.find_conflicts([*older, new])
    assert ("m_1", "m_999") in {(c.older, c.newer) for c in found}
    assert sum(1 for _, nw in judged if nw == "m_999") <= conflicts.CHANGE_SCAN


def test_clear_caches_starts_the_finder_cold() -> None:
    conflicts.find_conflicts([fact(1, "User lives in Lisbon"), fact(2, "User lives in Porto")])
    assert conflicts._read.cache_info().currsize > 0
    conflicts.clear_caches()
    assert conflicts._read.cache_info().currsize == 0
    assert changes.index_entry.cache_info().currsize == 0
