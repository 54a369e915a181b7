"""Model-free adversarial cases for the gates and backstops (SPEC S-VFY-2).

Each case pushes one hand-written proposal straight through :func:`gates.check` (or a backstop)
over a fixed little store, and states what must happen: accepted, or refused *for a stated
reason*. The test suite and ``nocturne verify`` both run them; none needs a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nocturne_desktop.core.mutations import DecidedBy, Drop, Promote, from_row
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates, rules
from nocturne_desktop.core.types import Fact

NOW = 1_800_000_000.0
DAY = 86400.0


def _fact(n: int, block: str, category: str, text: str, age_days: float = 1.0) -> Fact:
    t = NOW - age_days * DAY
    return Fact(f"m_{n}", block, text, category, n, t, t, True)


def fixture_facts() -> list[Fact]:
    """A small store with the shapes every case needs."""
    return [
        _fact(1, "human", "identity", "The user lives in Lisbon and works best in the morning."),
        _fact(2, "scratch", "identity", "User lives in Lisbon and works best in the morning."),
        _fact(3, "scratch", "context", "I live in Porto and work best in the morning."),
        _fact(4, "human", "preferences", "The user keeps a bearded dragon called Saffron."),
        _fact(5, "scratch", "context", "The user keeps a bearded dragon."),
        _fact(6, "scratch", "commitments", "The user promised to review the Airflow migration on Friday."),
        _fact(7, "scratch", "context", "The user installed postgres 16 on the backup box."),
        _fact(8, "scratch", "context", "The kitchen tap leaks beside the kettle."),
        _fact(9, "human", "commitments", "The user committed to a weekly backup check.", age_days=70),
        _fact(10, "episodes", "event", "The user went to a conference in Porto.", age_days=70),
        _fact(11, "episodes", "event", "The user fixed the garden fence.", age_days=3),
        Fact("m_12", "scratch", "context", "The user once owned a red bicycle.", 12, NOW, NOW, False),
    ]


def meaning_facts() -> list[Fact]:
    """The small store plus facts that share their words and differ in meaning (S-MEAN)."""
    return [
        *fixture_facts(),
        _fact(13, "scratch", "context", "I don't eat meat, only fish."),
        _fact(14, "scratch", "context", "The user eats fish."),
        _fact(15, "scratch", "context",
              "The user runs 48 km every week with the running club near the river in Lisbon."),
        _fact(16, "scratch", "context",
              "The user runs 84 km every week with the running club near the river in Lisbon."),
        _fact(17, "scratch", "context", "The user does not eat fish."),
    ]


@dataclass(frozen=True)
class GateCase:
    name: str
    pass_name: str
    proposal: Any
    expect_accepted: bool
    expect_reason: str = ""
    """A substring the refusal reason must contain (refusals only)."""
    entry: int = -1
    """Which resulting mutation to judge, in proposal order (default: the last)."""
    meaning: bool = False
    """Judge against :func:`meaning_facts` instead of :func:`fixture_facts`."""


CASES: tuple[GateCase, ...] = (
    GateCase("dedupe: keeper never existed", "dedupe",
             {"drop": [{"itemId": "m_2", "duplicateOf": "m_99", "reason": "same fact"}]},
             False, "duplicateOf 'm_99' does not exist in the pre-pass store"),
    GateCase("dedupe: dropped id never existed", "dedupe",
             {"drop": [{"itemId": "m_98", "duplicateOf": "m_1", "reason": "same fact"}]},
             False, "itemId 'm_98' does not exist in the pre-pass store"),
    GateCase("dedupe: self-pair", "dedupe",
             {"drop": [{"itemId": "m_2", "duplicateOf": "m_2", "reason": "same fact"}]},
             False, "a fact cannot duplicate itself"),
    GateCase("dedupe: dissimilar 'duplicate' (Porto vs Lisbon, 0.800)", "dedupe",
             {"drop": [{"itemId": "m_3", "duplicateOf": "m_1", "reason": "both about mornings"}]},
             False, "= 0.800 is below the threshold 0.9"),
    GateCase("dedupe: consumed earlier in this pass (not 'never existed')", "dedupe",
             {"drop": [{"itemId": "m_2", "duplicateOf": "m_1", "reason": "same fact"},
                       {"itemId": "m_2", "duplicateOf": "m_1", "reason": "same fact again"}]},
             False, "itemId m_2 was already dropped as a duplicate of m_1 by an earlier mutation"),
    GateCase("dedupe: forgotten before this pass", "dedupe",
             {"drop": [{"itemId": "m_12", "duplicateOf": "m_1", "reason": "old"}]},
             False, "was forgotten before this pass"),
    GateCase("dedupe: chain (keeper of an earlier drop dropped)", "dedupe",
             {"drop": [{"itemId": "m_2", "duplicateOf": "m_1", "reason": "same fact"},
                       {"itemId": "m_1", "duplicateOf": "m_2", "reason": "same fact"}]},
             False, "would chain duplicates"),
    GateCase("dedupe: empty reason", "dedupe",
             {"drop": [{"itemId": "m_5", "duplicateOf": "m_4", "reason": "  "}]},
             False, "reason is empty"),
    GateCase("dedupe: legal subset drop", "dedupe",
             {"drop": [{"itemId": "m_5", "duplicateOf": "m_4", "reason": "subset restatement"}]},
             True),
    GateCase("merge: invented token", "merge",
             {"merge": [{"intoId": "m_7", "fromIds": ["m_8"], "reason": "same place",
                         "mergedText": "The user installed postgres 16 on the backup box near the kettle."}]},
             False, "1 content token(s) appear in none of them (near)"),
    GateCase("merge: new TitleCased name", "merge",
             {"merge": [{"intoId": "m_7", "fromIds": ["m_8"], "reason": "household",
                         "mergedText": "The user installed postgres 16 on the backup box "
                                       "and the Kitchen leaks."}]},
             False, "mergedText introduces proper nouns absent from every source: ['Kitchen']"),
    GateCase("merge: sources span two blocks", "merge",
             {"merge": [{"intoId": "m_1", "fromIds": ["m_2"], "reason": "same",
                         "mergedText": "The user lives in Lisbon and works best in the morning."}]},
             False, "a merge stays within one block"),
    GateCase("merge: ghost source", "merge",
             {"merge": [{"intoId": "m_7", "fromIds": ["m_77"], "reason": "x",
                         "mergedText": "The user installed postgres 16 on the backup box."}]},
             False, "fromIds entry 'm_77' does not exist in the pre-pass store"),
    GateCase("merge: legal, fully traceable", "merge",
             {"merge": [{"intoId": "m_7", "fromIds": ["m_8"], "reason": "two house notes",
                         "mergedText": "The user installed postgres 16 on the backup box; "
                                       "the kitchen tap leaks beside the kettle."}]},
             True),
    GateCase("merge: negation dropped (polarity guard)", "merge",
             {"merge": [{"intoId": "m_13", "fromIds": ["m_14"], "reason": "diet",
                         "mergedText": "The user eats meat and fish."}]},
             False, "m_13 negates 'eat meat' (don't); the merged text states it", meaning=True),
    GateCase("merge: a source silently lost (completeness guard)", "merge",
             {"merge": [{"intoId": "m_7", "fromIds": ["m_8"], "reason": "house",
                         "mergedText": "The user installed postgres 16 on the backup box."}]},
             False, "completeness guard: the merged text loses m_8's"),
    GateCase("dedupe: opposite polarity is not a duplicate", "dedupe",
             {"drop": [{"itemId": "m_17", "duplicateOf": "m_14", "reason": "same fish"}]},
             False, "polarity guard: m_17 negates 'eat fish' (not); m_14 states it", meaning=True),
    GateCase("dedupe: another number is not a duplicate", "dedupe",
             {"drop": [{"itemId": "m_16", "duplicateOf": "m_15", "reason": "same run"}]},
             False, "number guard", meaning=True),
    GateCase("dedupe: the fuller fact is kept", "dedupe",
             {"drop": [{"itemId": "m_4", "duplicateOf": "m_5", "reason": "same dragon"}]},
             False, "keeper guard: m_4 says more than m_5"),
    GateCase("promote: illegal block", "promote",
             {"promote": [{"itemId": "m_6", "toBlock": "longterm", "reason": "durable"}]},
             False, "toBlock 'longterm' is not one of ('persona', 'human', 'episodes')"),
    GateCase("promote: already there", "promote",
             {"promote": [{"itemId": "m_1", "toBlock": "human", "reason": "durable"}]},
             False, "m_1 is already in human"),
    GateCase("promote: legal commitment to human", "promote",
             {"promote": [{"itemId": "m_6", "toBlock": "human", "reason": "a commitment"}]},
             True),
    GateCase("forget: stale but protected commitment", "forget",
             {"forget": [{"itemId": "m_9", "reason": "old", "policy": "stale"}]},
             False, "category 'commitments' is protected by the retention policy"),
    GateCase("forget: ineligible (fresh, under the cap)", "forget",
             {"forget": [{"itemId": "m_11", "reason": "trivial", "policy": "stale"}]},
             False, "no retention rule authorises forgetting it"),
    GateCase("forget: ghost id", "forget",
             {"forget": [{"itemId": "m_404", "reason": "gone", "policy": "stale"}]},
             False, "itemId 'm_404' does not exist in the pre-pass store"),
    GateCase("forget: legal stale event (claimed policy ignored)", "forget",
             {"forget": [{"itemId": "m_10", "reason": "70 days old", "policy": "capacity"}]},
             True),
    GateCase("any pass: reply is not a JSON object", "promote", ["m_6", "human"],
             False, "the reply is not a JSON object"),
    GateCase("any pass: entry is not an object", "dedupe", {"drop": ["m_2"]},
             False, "entry is not a JSON object"),
)


@dataclass(frozen=True)
class CaseResult:
    name: str
    ok: bool
    detail: str


def run_case(case: GateCase, policy: RetentionPolicy | None = None) -> CaseResult:
    policy = policy or RetentionPolicy()
    facts = meaning_facts() if case.meaning else fixture_facts()
    result = gates.check(case.pass_name, facts, case.proposal, policy, now=NOW)
    target = result.in_order[case.entry]
    if target.accepted != case.expect_accepted:
        verdict = "accepted" if target.accepted else f"refused ({target.rejection_reason})"
        wanted = "acceptance" if case.expect_accepted else "refusal"
        return CaseResult(case.name, False, f"expected {wanted}, got {verdict}")
    if not case.expect_accepted and case.expect_reason not in (target.rejection_reason or ""):
        return CaseResult(case.name, False, f"refused for the wrong reason: {target.rejection_reason!r}")
    detail = "accepted" if target.accepted else f"refused as required -- {target.rejection_reason}"
    if target.accepted and target.policy:
        detail += f" (verified policy: {target.policy})"
    return CaseResult(case.name, True, detail)


def _backstop_cases() -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    facts = fixture_facts()

    def capacity() -> tuple[bool, str]:
        active = [f for f in facts if f.active]
        protected = [f for f in active if f.category in RetentionPolicy().protected_categories]
        policy = RetentionPolicy(max_active_facts=len(active) - 4)
        muts = rules.retention_rule(facts, policy, now=NOW)
        ids = [m.item_id for m in muts]
        ok = (len(muts) == 4
              and all(m.decided_by == DecidedBy.RETENTION_RULE and m.policy == "capacity" for m in muts)
              and not {f.id for f in protected} & set(ids))
        # the four forgotten must be the four lowest-salience unprotected facts
        ranked = sorted((f for f in active if f not in protected),
                        key=lambda f: (policy.salience(f, NOW), f.created_at))
        ok = ok and set(ids) == {f.id for f in ranked[:4]}
        return ok, f"capacity enforcement forgot exactly {len(ids)} unprotected facts: {', '.join(ids)}"

    def floor() -> tuple[bool, str]:
        policy = RetentionPolicy(max_active_facts=1)
        muts = rules.retention_rule(facts, policy, now=NOW)
        protected = {f.id for f in facts if f.active and policy.is_protected(f)}
        left = {f.id for f in facts if f.active} - {m.item_id for m in muts}
        return left == protected, f"cap 1 leaves exactly the {len(left)} protected facts"

    def promotion() -> tuple[bool, str]:
        muts = rules.promotion_rule(facts)
        promotes = [c for c in map(from_row, muts) if isinstance(c, Promote)]
        moves = {p.target: (p.from_block, p.to_block) for p in promotes}
        ok = moves == {"m_2": ("scratch", "human"), "m_6": ("scratch", "human")} and all(
            p.decided_by == DecidedBy.PROMOTION_RULE for p in promotes) and len(promotes) == len(muts)
        moved = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in moves.items())
        return ok, f"promotion enforcement moved {moved}"

    def duplicates() -> tuple[bool, str]:
        muts = rules.duplicate_rule(facts, RetentionPolicy())
        drops = [c for c in map(from_row, muts) if isinstance(c, Drop)]
        pairs = {(d.target, d.duplicate_of) for d in drops}
        ok = pairs == {("m_2", "m_1"), ("m_5", "m_4")} and all(
            d.decided_by == DecidedBy.DUPLICATE_RULE for d in drops) and len(drops) == len(muts)
        return ok, "duplicate enforcement dropped " + ", ".join(f"{a} (dup of {b})" for a, b in sorted(pairs))

    def duplicates_respect_model() -> tuple[bool, str]:
        model = gates.check("dedupe", facts, {"drop": [
            {"itemId": "m_2", "duplicateOf": "m_1", "reason": "same"}]}, RetentionPolicy(), now=NOW)
        muts = rules.duplicate_rule(facts, RetentionPolicy(), model.accepted)
        ids = [m.item_id for m in muts]
        return ids == ["m_5"], f"after the model's drop of m_2 the duplicate rule added only {ids}"

    def duplicates_see_meaning() -> tuple[bool, str]:
        muts = rules.duplicate_rule(meaning_facts(), RetentionPolicy())
        pairs = {(m.item_id, m.refs["duplicateOf"]) for m in muts}
        ok = pairs == {("m_2", "m_1"), ("m_5", "m_4")}
        return ok, ("with 'eats fish' / 'does not eat fish' / 'don't eat meat, only fish' and "
                    "48 km / 84 km beside them, the duplicate rule still dropped only "
                    + ", ".join(f"{a} (dup of {b})" for a, b in sorted(pairs)))

    return [
        ("backstop: duplicate rule sees polarity and numbers", duplicates_see_meaning),
        ("backstop: capacity", capacity),
        ("backstop: protected floor", floor),
        ("backstop: promotion rule", promotion),
        ("backstop: duplicate rule", duplicates),
        ("backstop: duplicate rule after the model", duplicates_respect_model),
    ]


def run_all(policy: RetentionPolicy | None = None) -> list[CaseResult]:
    out = [run_case(c, policy) for c in CASES]
    for name, fn in _backstop_cases():
        try:
            ok, detail = fn()
        except Exception as exc:  # a crash is a failed case, reported, not a crashed verifier
            ok, detail = False, f"raised {type(exc).__name__}: {exc}"
        out.append(CaseResult(name, ok, detail))
    return out
