"""The gates refuse for exact reasons, and no accepted mutation ever breaks an invariant."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.checks import gatecases
from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates, rules
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact

NOW = gatecases.NOW


@pytest.mark.parametrize("case", gatecases.CASES, ids=[c.name for c in gatecases.CASES])
def test_model_free_case(case: gatecases.GateCase) -> None:
    result = gatecases.run_case(case)
    assert result.ok, result.detail


def test_there_are_at_least_sixteen_cases_and_all_pass() -> None:
    results = gatecases.run_all()
    assert len(results) >= 16
    failed = [r for r in results if not r.ok]
    assert not failed, failed


def test_a_wrong_expectation_is_caught() -> None:
    """run_case must be able to fail: a legal drop expected to be refused is reported."""
    legal = next(c for c in gatecases.CASES if c.expect_accepted and c.pass_name == "dedupe")
    flipped = gatecases.GateCase(legal.name, legal.pass_name, legal.proposal, False, "whatever")
    assert not gatecases.run_case(flipped).ok
    wrong_reason = next(c for c in gatecases.CASES if not c.expect_accepted)
    other = gatecases.GateCase(wrong_reason.name, wrong_reason.pass_name, wrong_reason.proposal, False,
                               "a reason nobody writes")
    assert not gatecases.run_case(other).ok


def test_gate_is_pure_and_records_verified_policy() -> None:
    facts = gatecases.fixture_facts()
    snapshot = list(facts)
    result = gates.check("forget", facts, {"forget": [
        {"itemId": "m_10", "reason": "old trip", "policy": "capacity"}]}, RetentionPolicy(), now=NOW)
    assert facts == snapshot
    (m,) = result.accepted
    assert m.policy == "stale" and m.refs["claimedPolicy"] == "capacity"


def test_capacity_forgetting_is_authorised_by_overflow() -> None:
    facts = gatecases.fixture_facts()
    policy = RetentionPolicy(max_active_facts=9)
    overflow = policy.overflow(facts, NOW)
    assert len(overflow) == 2
    entries = [{"itemId": f.id, "reason": "over the cap", "policy": "capacity"} for f in overflow]
    proposal = {"forget": entries}
    result = gates.check("forget", facts, proposal, policy, now=NOW)
    assert [m.item_id for m in result.accepted] == [f.id for f in overflow]
    assert all(m.policy in ("capacity", "stale") for m in result.accepted)


def test_promotes_apply_protected_categories_first() -> None:
    facts = gatecases.fixture_facts()
    proposal = {"promote": [
        {"itemId": "m_7", "toBlock": "episodes", "reason": "an install event"},
        {"itemId": "m_6", "toBlock": "human", "reason": "commitment"},
    ]}
    result = gates.check("promote", facts, proposal, RetentionPolicy(), now=NOW)
    assert [m.item_id for m in result.in_order] == ["m_6", "m_7"]


def test_candidates_restrict_a_pass() -> None:
    facts = gatecases.fixture_facts()
    proposal = {"promote": [{"itemId": "m_1", "toBlock": "persona", "reason": "x"}]}
    result = gates.check("promote", facts, proposal, RetentionPolicy(), now=NOW, candidates={"m_6"})
    assert "was not among the facts given to this pass" in (result.rejected[0].rejection_reason or "")


def test_missing_list_is_no_proposal_but_wrong_type_is_refused() -> None:
    facts = gatecases.fixture_facts()
    empty = gates.check("dedupe", facts, {}, RetentionPolicy(), now=NOW)
    assert empty.proposed == 0 and not empty.in_order
    bad = gates.check("dedupe", facts, {"drop": "m_2"}, RetentionPolicy(), now=NOW)
    assert "'drop' is not a list" in (bad.rejected[0].rejection_reason or "")


def test_salience_formula() -> None:
    policy = RetentionPolicy(stale_after_days=30)
    f = Fact("m_1", "human", "x", "identity", None, NOW - 15 * 86400, NOW, True)
    # 50 (human) + 40 (protected) + 30 - 30*15/30 = 105
    assert policy.salience(f, NOW) == pytest.approx(105.0)
    old = Fact("m_2", "scratch", "x", "context", None, NOW - 90 * 86400, NOW, True)
    assert policy.salience(old, NOW) == pytest.approx(10.0)


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="unknown category"):
        RetentionPolicy(protected_categories=("identity", "wishes"))
    with pytest.raises(ValueError):
        RetentionPolicy(similarity_threshold=1.5)


# --- property tests: no accepted mutation breaks an invariant ---------------------------------

WORDS = ["lisbon", "porto", "dragon", "saffron", "airflow", "postgres", "morning", "coffee",
         "review", "friday", "kettle", "garden", "fence", "backup", "box"]

fact_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(
    lambda ws: "The user " + " ".join(ws) + ".")


@st.composite
def stores(draw: st.DrawFn) -> list[Fact]:
    n = draw(st.integers(1, 12))
    out = []
    for i in range(1, n + 1):
        age = draw(st.floats(0, 90))
        out.append(Fact(f"m_{i}", draw(st.sampled_from(BLOCKS)), draw(fact_text),
                        draw(st.sampled_from(CATEGORIES)), i, NOW - age * 86400, NOW,
                        draw(st.booleans() | st.just(True))))
    return out


ids = st.sampled_from([f"m_{i}" for i in range(15)]) | st.text(max_size=4)
reason = st.sampled_from(["", "same", "old", "why not"])


def proposals(pass_name: str) -> st.SearchStrategy[object]:
    entry = {
        "dedupe": st.fixed_dictionaries({"itemId": ids, "duplicateOf": ids, "reason": reason}),
        "merge": st.fixed_dictionaries({"intoId": ids, "fromIds": st.lists(ids, max_size=3),
                                        "mergedText": fact_text, "reason": reason}),
        "promote": st.fixed_dictionaries({"itemId": ids, "toBlock": st.sampled_from([*BLOCKS, "x"]),
                                          "reason": reason}),
        "forget": st.fixed_dictionaries({"itemId": ids, "reason": reason,
                                         "policy": st.sampled_from(["stale", "capacity"])}),
    }[pass_name]
    key = gates.LIST_KEY[pass_name]
    return st.one_of(st.fixed_dictionaries({key: st.lists(entry, max_size=6)}),
                     st.none(), st.integers(), st.fixed_dictionaries({key: st.text(max_size=3)}))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data(), facts=stores(), pass_name=st.sampled_from(["dedupe", "merge", "promote", "forget"]),
       cap=st.integers(1, 12))
def test_no_accepted_mutation_breaks_an_invariant(
    data: st.DataObject, facts: list[Fact], pass_name: str, cap: int
) -> None:
    policy = RetentionPolicy(max_active_facts=cap)
    proposal = data.draw(proposals(pass_name))
    result = gates.check(pass_name, facts, proposal, policy, now=NOW)
    by_id = {f.id: f for f in facts}
    overflow = {f.id for f in policy.overflow(facts, NOW)}
    touched: set[str] = set()
    for m in result.accepted:
        f = by_id[m.item_id]
        assert f.active and m.reason.strip()
        assert m.item_id not in touched
        if m.kind == "drop":
            keeper = by_id[m.refs["duplicateOf"]]
            assert keeper.active and keeper.id != f.id and keeper.id not in touched
            assert tm.similarity(f.text, keeper.text) >= policy.similarity_threshold
        elif m.kind == "merge":
            srcs = [by_id[i] for i in [m.item_id, *m.refs["fromIds"]]]
            assert len({s.id for s in srcs}) == len(srcs) >= 2
            assert all(s.active and s.id not in touched for s in srcs)
            assert len({s.block for s in srcs}) == 1
            assert tm.coverage(m.refs["mergedText"], [s.text for s in srcs])[0] == 1.0
            assert not gates.new_names(m.refs["mergedText"], [s.text for s in srcs])
            touched.update(m.refs["fromIds"])
        elif m.kind == "promote":
            assert m.refs["toBlock"] in ("persona", "human", "episodes") and f.block != m.refs["toBlock"]
        elif m.kind == "forget":
            assert not policy.is_protected(f)
            assert policy.is_stale(f, NOW) or f.id in overflow
            assert m.policy == ("stale" if policy.is_stale(f, NOW) else "capacity")
        touched.add(m.item_id)
    for m in result.rejected:
        assert m.rejection_reason and not m.accepted
    assert len(result.in_order) == len(result.accepted) + len(result.rejected)


@settings(max_examples=150, deadline=None)
@given(facts=stores(), cap=st.integers(1, 12))
def test_backstops_keep_invariants(facts: list[Fact], cap: int) -> None:
    policy = RetentionPolicy(max_active_facts=cap)
    drops = rules.duplicate_rule(facts, policy)
    active = [f for f in facts if f.active and f.id not in {m.item_id for m in drops}]
    assert not duplicates.candidate_pairs([(f.id, f.text) for f in active], policy.similarity_threshold)
    for m in rules.promotion_rule(facts):
        f = next(x for x in facts if x.id == m.item_id)
        assert f.block == "scratch" and f.active and m.refs["toBlock"] in ("human", "episodes")
    forgets = rules.retention_rule(facts, policy, now=NOW)
    assert all(not policy.is_protected(next(x for x in facts if x.id == m.item_id)) for m in forgets)
    n_active = sum(f.active for f in facts)
    n_unprotected = sum(f.active and not policy.is_protected(f) for f in facts)
    assert len(forgets) == min(max(0, n_active - cap), n_unprotected)


def test_non_chaining_turns_a_group_of_copies_into_one_keeper() -> None:
    texts = [(f"m_{i}", "The user keeps a bearded dragon called Saffron.") for i in range(1, 8)]
    pairs = duplicates.candidate_pairs(texts, 0.9)
    assert len(pairs) == 21  # every pair of 7 copies
    chosen = rules.non_chaining(pairs)
    assert sorted(chosen) == sorted((f"m_{i}", "m_1", 1.0) for i in range(2, 8))
    dropped = {d for d, _, _ in chosen}
    assert not dropped & {k for _, k, _ in chosen}  # no chains


def test_merge_clusters_do_not_chain_through_one_shared_word() -> None:
    from nocturne_desktop.core.sleep.passes.merge import clusters

    def f(n: int, text: str) -> Fact:
        return Fact(f"m_{n}", "scratch", text, "context", n, NOW, NOW, True)

    facts = [f(1, "The user's stack is Airflow and Postgres."),
             f(2, "The user's stack runs Airflow jobs nightly."),
             f(3, "The user runs nightly along the river."),
             f(4, "The user swims nightly in the river.")]
    # 1~2, 2~3 and 3~4 are related (2/3); 4 shares one word with 2 and none with 1
    groups = [[x.id for x in g] for g in clusters(facts)]
    assert groups == [["m_1", "m_2", "m_3"]]  # a star around m_2; m_4 does not chain in via m_3
