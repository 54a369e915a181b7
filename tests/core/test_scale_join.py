"""The duplicate join at scale: exact on a small vocabulary (where every token is frequent and
the join probes token subsets), and computed once per sleep pass."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from tests.core.meaning_rewrites import Case, cases
from tests.core.test_textmath import _brute_force

_SMALL = ["tea", "coffee", "lisbon", "porto", "dragon", "camp", "box", "kettle", "gas", "16"]
_short_texts = st.lists(st.sampled_from([*_SMALL, "the", "user", "and"]), max_size=9).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_short_texts, max_size=60),
       threshold=st.sampled_from([0.3, 0.5, 2 / 3, 0.75, 0.8, 0.9, 1.0]),
       level=st.sampled_from([2, 3, 4]))
def test_subset_probes_equal_brute_force_when_every_token_is_frequent(
    texts: list[str], threshold: float, level: int
) -> None:
    # every token counted frequent: each fact that needs two or more shared tokens probes
    # pairs, triples or quadruples of its rarest tokens, never one-token prefixes
    items = [(f"f{i}", t) for i, t in enumerate(texts)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(duplicates, "_frequent_rank", lambda *_: 0)
        mp.setattr(duplicates, "_subset_level", lambda *_: level)
        assert duplicates.candidate_pairs(items, threshold) == _brute_force(items, threshold)


@pytest.mark.parametrize("threshold", [0.5, 2 / 3, 0.9, 1.0])
def test_small_vocabulary_corpus_equals_brute_force(threshold: float) -> None:
    # 700 short facts over ten words: each word is held by hundreds of facts, over the
    # frequency floor (2·√700 ≈ 53), so the join takes its subset path on its own
    rng = random.Random(5)
    items = [(f"m{i}", " ".join(rng.sample(_SMALL, rng.randint(1, 7)))) for i in range(700)]
    frequency: dict[str, int] = {}
    for _, t in items:
        for tok in tm.content_tokens(t):
            frequency[tok] = frequency.get(tok, 0) + 1
    assert min(frequency.values()) > 53
    assert duplicates.candidate_pairs(items, threshold) == _brute_force(items, threshold)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), level=st.sampled_from([2, 3, 4]))
def test_the_subset_path_and_the_memo_keep_every_meaning_guard(case: Case, level: int) -> None:
    """S-MEAN-7 on the join's new paths: with every token counted frequent (the small-vocabulary
    path probing pairs, triples or quadruples) and through the pass's shared memo, a rewrite that
    flips polarity, a number, a role or the modality is never a duplicate of the fact it alters,
    and one that keeps the meaning still is -- the same answer as the one-token-prefix path."""
    claims = [*(claim for _, claim in case.altering), *case.preserving]
    plain = [duplicates.duplicate_pairs([("m_1", case.facts[0]), ("m_2", c)]) for c in claims]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(duplicates, "_frequent_rank", lambda *_: 0)
        mp.setattr(duplicates, "_subset_level", lambda *_: level)
        for claim, expected in zip(claims, plain, strict=True):
            items = [("m_1", case.facts[0]), ("m_2", claim)]
            assert duplicates.duplicate_pairs(items) == expected, claim
            assert duplicates.JoinMemo().pairs(items, 0.9) == expected, claim
    for (what, claim), (pairs, _) in zip(case.altering, plain[:len(case.altering)], strict=True):
        assert not pairs, (what, claim, case.facts)
    for claim, (pairs, _) in zip(case.preserving, plain[len(case.altering):], strict=True):
        assert pairs, (claim, case.facts)


def test_join_memo_answers_a_subset_as_a_fresh_join_would() -> None:
    rng = random.Random(9)
    words = ["tea", "coffee", "lisbon", "dragon", "camp", "not", "two", "three", "Ana", "Marco"]
    items = [(f"m{i}", "The user " + " ".join(rng.sample(words, rng.randint(2, 5))) + ".")
             for i in range(300)]
    memo = duplicates.JoinMemo()
    assert memo.pairs(items, 0.9) == duplicates.duplicate_pairs(items, 0.9)
    for _ in range(5):
        subset = [it for it in items if rng.random() < 0.7]
        assert memo.pairs(subset, 0.9) == duplicates.duplicate_pairs(subset, 0.9)
    assert memo.computed == 1
    # a text changed, another threshold, another order: computed again
    changed = [(items[0][0], "The user drinks tea."), *items[1:]]
    assert memo.pairs(changed, 0.9) == duplicates.duplicate_pairs(changed, 0.9)
    assert memo.pairs(changed, 0.8) == duplicates.duplicate_pairs(changed, 0.8)
    backwards = list(reversed(changed))
    assert memo.pairs(backwards, 0.8) == duplicates.duplicate_pairs(backwards, 0.8)
    assert memo.computed == 4


def test_a_rules_only_sleep_computes_the_duplicate_join_once_per_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a chain of restatements the backstop drops in rounds (m_1 into m_2, then m_2 into m_3):
    # its plan and each round used to run a join of their own (four in this pass)
    texts = [
        "The user keeps a bearded dragon.",
        "The user keeps a bearded dragon called Saffron.",
        "The user keeps a bearded dragon called Saffron at home.",
        "The user went to a conference in Porto.",
        "The user's stack is Airflow and Postgres.",
    ]
    with Store(tmp_path / "m.db") as store:
        for t in texts:
            store.append("human", FactDraft(t, "context"))
    calls: list[int] = []
    real = duplicates.candidate_pairs

    def counting(*args: object, **kwargs: object) -> list[tuple[str, str, float]]:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(duplicates, "candidate_pairs", counting)
    per_pass: dict[str, int] = {}
    with Store(tmp_path / "m.db") as store:
        for ev in run_sleep(store, None, RetentionPolicy()):
            if ev.kind is SleepEventKind.PASS_STARTED:
                calls.clear()
            elif ev.kind.after_pass and ev.pass_name is not None:
                per_pass[ev.pass_name] = len(calls)
                if ev.pass_name == "dedupe":
                    dropped = {m.item_id: m.refs.get("duplicateOf") for m in ev.mutations
                               if m.accepted}
        active = [f.id for f in store.active_facts()]
    assert dropped == {"m_1": "m_2", "m_2": "m_3"}  # two backstop rounds
    assert active == ["m_3", "m_4", "m_5"]
    assert per_pass["dedupe"] == 1
    assert per_pass["merge"] == 1  # one block: one join
    assert sum(per_pass.values()) == 2
