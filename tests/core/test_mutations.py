"""Typed changes: the row format round-trips, and the store and a dry run apply alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop.core import applying as ap
from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.checks import gatecases
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, gates, rules, simulate
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft, Mutation

NOW = gatecases.NOW


def gate_rows() -> list[Mutation]:
    """What the gates and the rules really write, accepted and refused, every kind."""
    facts = gatecases.fixture_facts()
    policy = RetentionPolicy(max_active_facts=6)
    out: list[Mutation] = []
    for case in gatecases.CASES:
        out += gates.check(case.pass_name, facts, case.proposal, policy, now=NOW).in_order
    out += rules.identical_rule(facts)
    out += rules.duplicate_rule(facts, policy)
    out += rules.promotion_rule(facts)
    out += rules.retention_rule(facts, policy, now=NOW)
    return out


def test_every_row_the_gates_write_round_trips() -> None:
    rows = gate_rows()
    kinds = {(m.kind, m.accepted) for m in rows}
    assert {("drop", True), ("merge", True), ("promote", True), ("forget", True)} <= kinds
    assert {("drop", False), ("merge", False), ("promote", False), ("forget", False)} <= kinds
    for m in rows:
        assert mu.to_row(mu.from_row(m)) == m, m


@pytest.mark.parametrize("row", [
    Mutation("dedupe", "reply", "-", False, rejection_reason="cut off",
             refs={"raw": '{"drop": [', "mode": "json_schema", "finishReason": "length"}),
    Mutation("encoder", "append", "-", False, rejection_reason="not traceable", decided_by="encoder",
             refs={"proposal": {"text": "x", "turn": 9}, "turn": 2, "claimed_turn": 9}),
    Mutation("encoder", "append", "m_4", True, "traceable to turn 2", decided_by="encoder",
             refs={"proposal": {"text": "x"}, "turn": 2, "claimed_turn": None}),
    Mutation("restore", "restore", "s0003", True, "restore to s0003", decided_by="user",
             refs={"version": "s0003", "seq": 3, "changedIds": ["m_1", "m_2"]}),
    Mutation("promote", "promote", "m_5", True, "old", decided_by="engine-promotion-rule",
             refs={"toBlock": "human", "salvaged": True}),
])
def test_rows_other_writers_and_older_versions_wrote_round_trip(row: Mutation) -> None:
    assert mu.to_row(mu.from_row(row)) == row


def test_typed_values_name_the_row_fields() -> None:
    drop = mu.from_row(Mutation("dedupe", "drop", "m_2", True, "same",
                                refs={"duplicateOf": "m_1", "similarity": 1.0, "salvaged": True}))
    assert isinstance(drop, mu.Drop)
    assert (drop.target, drop.duplicate_of, drop.similarity) == ("m_2", "m_1", 1.0)
    assert drop.extra == {"salvaged": True}  # a key the type does not name is kept
    merge = mu.from_row(Mutation("merge", "merge", "m_1", True,
                                 refs={"fromIds": ["m_1", "m_2", "m_2"], "mergedText": "x"}))
    assert isinstance(merge, mu.Merge) and merge.consumed == ("m_2",)
    refused = mu.from_row(Mutation("merge", "merge", "?", False, "", "no", refs={"proposal": None}))
    assert isinstance(refused, mu.Refusal) and refused.of == "merge" and refused.proposal is None
    assert mu.from_row(Mutation("merge", "merge", "?", False)).proposal is mu.ABSENT
    promote = Mutation("promote", "promote", "m_5", True, "stable", refs={"toBlock": "human"})
    assert mu.to_row(mu.from_row(promote)) == promote  # a hand-made row stays as written


def test_a_row_that_cannot_be_applied_as_written_is_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown mutation kind 'explode'"):
        mu.from_row(Mutation("x", "explode", "m_1", True))
    with pytest.raises(InvalidInput, match="must be a list of item ids"):
        mu.from_row(Mutation("merge", "merge", "m_1", True, refs={"fromIds": "m_2"}))
    with pytest.raises(InvalidInput, match="always a refusal"):
        mu.from_row(Mutation("dedupe", "reply", "-", True))


def test_apply_validates_everything_before_returning_anything() -> None:
    facts = {f.id: f for f in gatecases.fixture_facts()}
    merge = mu.Merge(pass_name="merge", into="m_4", from_ids=("m_5", "m_12"), merged_text="x")
    with pytest.raises(InvalidInput, match="m_12 is not active"):
        ap.apply(merge, facts.get)
    with pytest.raises(InvalidInput, match="unknown item id 'm_99'"):
        ap.apply(mu.Forget(pass_name="forget", target="m_99"), facts.get)
    with pytest.raises(InvalidInput, match="unknown block 'attic'"):
        ap.apply(mu.Promote(pass_name="promote", target="m_5", to_block="attic"), facts.get)
    with pytest.raises(InvalidInput, match="refused mutation cannot be applied"):
        ap.apply(mu.Refusal(pass_name="merge", of="merge", target="m_4", why="no"), facts.get)
    ok = mu.Merge(pass_name="merge", into="m_4", from_ids=("m_5",), merged_text="merged")
    new = ap.apply(ok, facts.get)
    assert [(f.id, f.text, f.active) for f in new] == [("m_4", "merged", True),
                                                      ("m_5", facts["m_5"].text, False)]


def test_touched_says_what_each_change_wrote() -> None:
    merge = mu.Merge(pass_name="merge", into="m_1", from_ids=("m_2",), merged_text="x")
    assert ap.touched(merge) == {"m_2": "merged into m_1", "m_1": "rewritten by a merge"}
    restore = mu.Restore(pass_name="restore", version="s0003", seq=3, changed_ids=("m_4",))
    assert ap.touched(restore) == {"m_4": "restored to s0003"}
    assert ap.touched(mu.Refusal(pass_name="dedupe", of="drop", target="m_1", why="no")) == {}


def test_the_store_and_a_dry_run_apply_the_same_changes(tmp_path: Path) -> None:
    texts = ["The user lives in Lisbon.", "User lives in Lisbon.", "The user likes tea.",
             "The user likes green tea.", "The user went to Porto.", "The user owns a bike."]
    with Store(tmp_path / "m.db") as store:
        for t in texts:
            store.append("scratch", FactDraft(t, "context"))
        muts = [
            mu.to_row(mu.Drop(pass_name="dedupe", target="m_2", duplicate_of="m_1")),
            mu.to_row(mu.Merge(pass_name="merge", into="m_3", from_ids=("m_4",),
                               merged_text="The user likes green tea.")),
            mu.to_row(mu.Promote(pass_name="promote", target="m_5", to_block="episodes")),
            mu.to_row(mu.Forget(pass_name="forget", target="m_6", policy="stale")),
            mu.to_row(mu.Refusal(pass_name="forget", of="forget", target="m_1", why="protected")),
        ]
        before = store.all_facts()
        simulated = simulate(before, muts)
        store.commit_pass(muts, label="after", sleep_id=None)
        stored = store.all_facts()
    assert [(f.id, f.block, f.text, f.active) for f in simulated] == [
        (f.id, f.block, f.text, f.active) for f in stored]
    assert [f.active for f in stored] == [True, False, True, False, True, False]


def test_rule_labels_read_well_and_old_ones_still_read() -> None:
    assert {str(d) for d in mu.DecidedBy if mu.is_rule(d)} == {
        "duplicate-rule", "promotion-rule", "retention-rule", "reconcile-rule"}
    assert mu.decided_by_label("engine-duplicate-rule") == "duplicate-rule"
    assert mu.decided_by_label("policy-engine") == "retention-rule"
    assert mu.decided_by_label("model") == "model"
    assert mu.is_rule("policy-engine") and not mu.is_rule("user") and not mu.is_rule(None)
    assert not any("engine" in str(d) for d in mu.DecidedBy)


def test_sleep_event_kinds_are_typed_and_compare_as_their_text() -> None:
    assert SleepEventKind.DONE == "sleep done" and f"{SleepEventKind.PASS_DONE}" == "pass done"
    assert {k for k in SleepEventKind if k.final} == {
        SleepEventKind.DONE, SleepEventKind.CANCELLED, SleepEventKind.FAILED}
    assert {k for k in SleepEventKind if k.after_pass} == {
        SleepEventKind.PASS_DONE, SleepEventKind.PASS_ERROR}
