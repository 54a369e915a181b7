"""S-MEAN-7: every judge refuses meaning-altering rewrites and accepts meaning-preserving ones.

The rewrites come from :mod:`tests.core.meaning_rewrites`. Judges: the encoder gate (the claim
against what the user said), the Merge gate (the claim merged with the case's other source),
and Dedupe -- its gate, its candidate finder and the model-free duplicate backstop (an altered
fact is never a duplicate of the fact it alters). ``bench.bench_meaning`` counts the same
generators and reports the acceptance rate of the preserving rewrites.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.chat.encoder import check_fact
from nocturne_desktop.core.judges import duplicates, meaning
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates, rules
from nocturne_desktop.core.types import Fact
from tests.core.meaning_rewrites import Case, cases

NOW = 1_800_000_000.0
POLICY = RetentionPolicy()
OTHER = "The user visited Faro."
"""A second, compatible fact for merges (not "lives in Faro": merging two homes into one
sentence is a conflict, left to Reconcile)."""


def _facts(*texts: str) -> list[Fact]:
    return [Fact(f"m_{i}", "scratch", t, "context", i, NOW, NOW, True)
            for i, t in enumerate(texts, 1)]


def encoder_refuses(claim: str, case: Case) -> str | None:
    return check_fact(claim, case.sources)


def merge_refuses(claim: str, case: Case) -> str | None:
    second = case.facts[1] if len(case.facts) > 1 else OTHER
    facts = _facts(case.facts[0], second)
    merged = f"{claim} {second}"
    result = gates.check("merge", facts, {"merge": [{
        "intoId": "m_1", "fromIds": ["m_2"], "mergedText": merged, "reason": "related"}]},
        POLICY, now=NOW)
    (m,) = result.in_order
    return None if m.accepted else m.rejection_reason


def dedupe_refuses(claim: str, case: Case) -> str | None:
    """None when Dedupe treats ``claim`` and the case's fact as duplicates everywhere: the
    candidate finder pairs them, the backstop drops one, the gate accepts that drop."""
    facts = _facts(case.facts[0], claim)
    pairs, vetoed = duplicates.duplicate_pairs([(f.id, f.text) for f in facts])
    if not pairs:
        return vetoed[0][2] if vetoed else "not a candidate pair"
    drop, keeper, _ = pairs[0]
    backstop = rules.duplicate_rule(facts, POLICY)
    if [m.item_id for m in backstop] != [drop]:
        return f"backstop dropped {[m.item_id for m in backstop]}"
    result = gates.check("dedupe", facts, {"drop": [
        {"itemId": drop, "duplicateOf": keeper, "reason": "same fact"}]}, POLICY, now=NOW)
    (m,) = result.in_order
    return None if m.accepted else m.rejection_reason


def dedupe_separates(claim: str, case: Case) -> bool:
    """An altered fact is not a duplicate: no candidate pair, no backstop drop, and the gate
    refuses a drop in either direction."""
    facts = _facts(case.facts[0], claim)
    pairs, _ = duplicates.duplicate_pairs([(f.id, f.text) for f in facts])
    if pairs or rules.duplicate_rule(facts, POLICY):
        return False
    for drop, keeper in (("m_1", "m_2"), ("m_2", "m_1")):
        result = gates.check("dedupe", facts, {"drop": [
            {"itemId": drop, "duplicateOf": keeper, "reason": "same fact"}]}, POLICY, now=NOW)
        if result.accepted:
            return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_altering_rewrite_is_refused_by_every_judge(case: Case) -> None:
    for what, claim in case.altering:
        assert encoder_refuses(claim, case), (what, claim, case.sources)
        assert merge_refuses(claim, case), (what, claim, case.facts)
        assert dedupe_separates(claim, case), (what, claim, case.facts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_preserving_rewrite_is_accepted_by_every_judge(case: Case) -> None:
    for claim in case.preserving:
        assert encoder_refuses(claim, case) is None, (claim, case.sources)
        assert merge_refuses(claim, case) is None, (claim, case.facts)
        assert dedupe_refuses(claim, case) is None, (claim, case.facts)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_supported_claim_is_accepted_by_the_encoder(case: Case) -> None:
    """Part of what was said ("eats chicken" from "I don't eat pork, only chicken", a run's
    time without the phrase inserted before it) is a fact the encoder may store."""
    for claim in case.supported:
        assert encoder_refuses(claim, case) is None, (claim, case.sources)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), st.lists(st.text(max_size=300), max_size=3))
def test_the_guards_are_total_over_any_text(claim: str, sources: list[str]) -> None:
    """Model text is anything: the guards answer with a sentence or None, never raise."""
    labelled = [(f"m_{i}", s) for i, s in enumerate(sources)]
    for verdict in (meaning.check_claim(claim, labelled), meaning.statement_problem(claim),
                    meaning.completeness(claim, labelled),
                    meaning.duplicate_conflict(("a", claim), ("b", "".join(sources)))):
        assert verdict is None or isinstance(verdict, str)
    assert isinstance(meaning.canonical(claim), str)
    meaning.evidence_items([(1, "assistant", claim + "?"), *((2, "user", s) for s in sources)])


def test_a_long_source_is_judged_in_linear_time() -> None:
    import time

    names = " ".join(f"and Name{i} met Other{i}" for i in range(3000))
    source = f"I met Jonas {names} yesterday."
    t0 = time.perf_counter()
    meaning.check_claim("Jonas met the user yesterday.", [("t", source)])
    assert time.perf_counter() - t0 < 5.0
    assert meaning.check_claim("x " * 3000, [("t", "x")]) is not None
