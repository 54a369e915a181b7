"""The person's hands on memory (S-EDIT-1): edit, pin, forget now, bring back, add, undo, redo.

Each is a typed mutation decided by ``you``, its own version and audit row, visible in the diff;
a pinned fact is never forgotten by a rule or the model; undo and redo are new versions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.mutations import Kind, Merge, from_row, to_row
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, gates, rules, run_sleep
from nocturne_desktop.core.store import MAX_TEXT_CHARS, Store
from nocturne_desktop.core.types import FactDraft
from tests.clock import Clock

T0 = 1_700_000_000.0
DAY = 86_400.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "n.db", clock=Clock()) as s:
        yield s


def add(store: Store, text: str, block: str = "scratch", category: str = "context",
        age_days: float = 0.0) -> str:
    return store.append(block, FactDraft(text, category, created_at=T0 - age_days * DAY)).id


def footprint(store: Store) -> tuple[object, ...]:
    return (store.all_facts(), store.versions(), store.mutations())


# ------------------------------------------------------------------ each edit


def test_edit_text_is_its_own_version_and_audit_row_visible_in_the_diff(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")
    v0 = store.snapshot("start")
    v = store.edit(a, text="The user lives in Porto.")
    assert v.seq == v0.seq + 1 and v.label == f"edit:{a}"
    fact = store.get(a)
    assert fact is not None and fact.text == "The user lives in Porto." and fact.active
    (row,) = store.mutations(seq_range=(v0.seq, v.seq))
    m = row.mutation
    assert (m.kind, m.pass_name, m.decided_by, m.accepted) == ("edit", "hand", "you", True)
    assert m.refs["text"] == "The user lives in Porto."
    assert m.refs["before"]["text"] == "The user lives in Lisbon."
    assert not m.enforced
    d = store.diff(v0.seq, v.seq)
    (entry,) = d.changed
    assert entry.item_id == a and entry.decided_by == "you" and entry.pass_name == "hand"
    assert entry.before is not None and entry.before.text == "The user lives in Lisbon."
    assert store.last_changes.changed == (a,) and store.last_changes.versions == (v.seq,)


def test_edit_category_and_block_show_in_the_diff(store: Store) -> None:
    a = add(store, "The user is vegetarian.")
    v0 = store.snapshot("start")
    v = store.edit(a, category="preferences", block="human")
    f = store.get(a)
    assert f is not None and (f.category, f.block) == ("preferences", "human")
    (entry,) = store.diff(v0.seq, v.seq).changed
    assert entry.after is not None and entry.after.category == "preferences"
    refs = store.mutations(item_id=a)[-1].mutation.refs
    assert (refs["category"], refs["block"]) == ("preferences", "human") and "text" not in refs
    assert {k: refs["before"][k] for k in ("block", "category", "active", "pinned")} == {
        "block": "scratch", "category": "context", "active": True, "pinned": False}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"text": ""}, "empty"),
    ({"text": "   \n\t"}, "empty"),
    ({"text": "x" * 100_000}, f"limit is {MAX_TEXT_CHARS}"),
    ({"text": "nul\x00here"}, "NUL"),
    ({"category": "gossip"}, "unknown category 'gossip'"),
    ({"block": "attic"}, "unknown block 'attic'"),
    ({"text": "The user lives in Lisbon."}, "nothing would change"),
    ({}, "nothing would change"),
])
def test_bad_edits_say_why_and_write_nothing(store: Store, kwargs: dict[str, str],
                                             message: str) -> None:
    a = add(store, "The user lives in Lisbon.")
    store.snapshot("start")
    before = footprint(store)
    with pytest.raises(InvalidInput, match=message):
        store.edit(a, **kwargs)
    assert footprint(store) == before


def test_bad_additions_and_unknown_ids_write_nothing(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")
    store.forget(a)
    before = footprint(store)
    for call, message in [
        (lambda: store.add_fact("scratch", " "), "empty"),
        (lambda: store.add_fact("scratch", "y" * 100_000), "limit"),
        (lambda: store.add_fact("scratch", "a\x00b"), "NUL"),
        (lambda: store.add_fact("scratch", "fine", "gossip"), "unknown category"),
        (lambda: store.add_fact("attic", "fine"), "unknown block"),
        (lambda: store.edit("m_99", text="x"), "unknown item id"),
        (lambda: store.edit(a, text="x"), "forgotten"),
        (lambda: store.pin(a), "forgotten"),
        (lambda: store.forget_now(a), "forgotten"),
        (lambda: store.bring_back("m_99"), "unknown item id"),
        (lambda: store.pin("nonsense"), "ids look like"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            call()
    assert footprint(store) == before


def test_add_fact_is_written_by_you_with_no_turn(store: Store) -> None:
    v0 = store.snapshot("start")
    fact, v = store.add_fact("human", "The user's sister is called Ana.", "identity")
    assert v.label == f"add:{fact.id}" and fact.source_turn is None and fact.block == "human"
    (row,) = store.mutations(item_id=fact.id)
    assert (row.mutation.kind, row.mutation.decided_by, row.seq) == ("add", "you", v.seq)
    (entry,) = store.diff(v0.seq, v.seq).added
    assert entry.item_id == fact.id and entry.decided_by == "you"


def test_forget_now_and_bring_back(store: Store) -> None:
    a = add(store, "The user had toast.")
    other = add(store, "active one")
    v1 = store.forget_now(a)
    f = store.get(a)
    assert f is not None and not f.active and v1.label == f"forget:{a}"
    row = store.mutations(item_id=a)[-1].mutation
    assert (row.kind, row.pass_name, row.decided_by) == ("forget", "hand", "you")
    with pytest.raises(InvalidInput, match="not forgotten"):
        store.bring_back(other)
    v2 = store.bring_back(a)
    g = store.get(a)
    assert g is not None and g.active and g.text == "The user had toast."
    assert v2.label == f"bring-back:{a}"
    assert [e.item_id for e in store.diff(v1.seq, v2.seq).added] == [a]


# ------------------------------------------------------------------ pins


def test_pin_and_unpin_are_versions_and_pinned_facts_cannot_be_forgotten_by_hand(
        store: Store) -> None:
    a = add(store, "The user is allergic to peanuts.")
    v = store.pin(a)
    f = store.get(a)
    assert f is not None and f.pinned and v.label == f"pin:{a}"
    assert store.state_at(v.seq)[0].pinned
    with pytest.raises(InvalidInput, match="already pinned"):
        store.pin(a)
    with pytest.raises(InvalidInput, match="pinned"):
        store.forget_now(a)
    with pytest.raises(InvalidInput, match="pinned"):
        store.apply(from_row_forget(a))
    u = store.pin(a, False)
    assert u.label == f"unpin:{a}"
    g = store.get(a)
    assert g is not None and not g.pinned
    assert not store.state_at(u.seq)[0].pinned and store.state_at(v.seq)[0].pinned
    assert [e.item_id for e in store.diff(v.seq, u.seq).changed] == [a]


def from_row_forget(item_id: str):  # type: ignore[no-untyped-def]
    from nocturne_desktop.core.types import Mutation

    return Mutation("forget", "forget", item_id, True, "stale", policy="stale")


def test_gates_refuse_dropping_merging_or_forgetting_a_pinned_fact(store: Store) -> None:
    a = add(store, "The user had toast for breakfast.", age_days=90)
    b = add(store, "The user had toast for breakfast today.", age_days=90)
    store.pin(a)
    policy = RetentionPolicy(max_active_facts=1)
    facts = store.all_facts()
    forget = gates.check("forget", facts, {"forget": [{"itemId": a, "reason": "old", "policy": "stale"}]},
                         policy, now=T0)
    (refused,) = forget.rejected
    assert "pinned by you" in (refused.rejection_reason or "")
    drop = gates.check("dedupe", facts, {"drop": [{"itemId": a, "duplicateOf": b, "reason": "same"}]},
                       policy, now=T0)
    assert not drop.accepted and "pinned" in (drop.rejected[0].rejection_reason or "")
    merge = gates.check("merge", facts, {"merge": [{"intoId": b, "fromIds": [a], "reason": "same",
                                                   "mergedText": "The user had toast for breakfast."}]},
                        policy, now=T0)
    assert not merge.accepted and "pinned" in (merge.rejected[0].rejection_reason or "")
    # the rules: a pinned copy is the keeper; the cap never picks a pinned fact
    assert [m.item_id for m in rules.duplicate_rule(facts, policy)] == [b]
    assert a not in {m.item_id for m in rules.retention_rule(facts, policy, now=T0)}


def test_a_pinned_fact_survives_a_rules_only_sleep_with_a_cap_that_would_forget_it(
        store: Store) -> None:
    keep = add(store, "The user had a dentist appointment.", "episodes", "event", age_days=80)
    other = add(store, "The user bought a lamp.", "episodes", "event", age_days=10)
    store.pin(keep)
    policy = RetentionPolicy(max_active_facts=1, stale_after_days=30)
    events = list(run_sleep(store, None, policy, now=T0))
    assert events[-1].kind is SleepEventKind.DONE
    k, o = store.get(keep), store.get(other)
    assert k is not None and k.active and k.pinned
    assert o is not None and not o.active  # the cap fell on the unpinned one
    sleep_id = events[0].sleep_id
    assert sleep_id is not None
    checked, problems = audit.reaudit(store, sleep_id)
    assert checked and not problems


# ------------------------------------------------------------------ undo and redo


def test_undo_and_redo_an_edit_are_new_versions(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")
    assert store.undo_step() is None
    with pytest.raises(InvalidInput, match="nothing to undo"):
        store.undo()
    v1 = store.edit(a, text="The user lives in Porto.")
    step = store.undo_step()
    assert step is not None and step.name == f"edit {a}" and step.ids == (a,)
    u = store.undo()
    assert u.seq == v1.seq + 1 and u.label == f"undo:edit {a}"
    f = store.get(a)
    assert f is not None and f.text == "The user lives in Lisbon."
    assert store.undo_step() is None
    redo = store.redo_step()
    assert redo is not None and redo.name == f"edit {a}"
    r = store.redo()
    assert r.label == f"redo:edit {a}"
    g = store.get(a)
    assert g is not None and g.text == "The user lives in Porto."
    assert store.redo_step() is None
    assert [x.label for x in store.versions()][-3:] == [f"edit:{a}", f"undo:edit {a}",
                                                       f"redo:edit {a}"]
    (undo_row,) = store.mutations(seq_range=(v1.seq, u.seq))
    assert (undo_row.mutation.kind, undo_row.mutation.decided_by) == ("undo", "you")
    (entry,) = store.diff(v1.seq, u.seq).changed
    assert entry.decided_by == "you" and entry.after is not None
    assert entry.after.text == "The user lives in Lisbon."


def test_undo_walks_back_through_changes_and_a_new_change_clears_redo(store: Store) -> None:
    a = add(store, "one")
    b = add(store, "two")
    store.edit(a, text="The user edited one.")
    store.pin(b)
    fact, _ = store.add_fact("scratch", "The user wrote three by hand.")
    store.undo()  # the add
    f = store.get(fact.id)
    assert f is not None and not f.active
    store.undo()  # the pin
    g = store.get(b)
    assert g is not None and not g.pinned
    step = store.undo_step()
    assert step is not None and step.name == f"edit {a}"
    store.redo()  # the pin again
    g = store.get(b)
    assert g is not None and g.pinned
    store.forget_now(a)  # a new change: redo of the add is gone
    assert store.redo_step() is None
    store.undo()
    h = store.get(a)
    assert h is not None and h.active and h.text == "The user edited one."


def test_undo_of_an_edit_to_a_fact_never_snapshotted_keeps_the_fact(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")  # pending: no version holds it yet
    store.edit(a, text="The user lives in Porto.")
    store.undo()
    f = store.get(a)
    assert f is not None and f.active and f.text == "The user lives in Lisbon."


def test_undo_of_a_sleep_keeps_facts_added_after_it(store: Store) -> None:
    a = add(store, "The user keeps a bearded dragon called Saffron.", category="preferences")
    b = add(store, "The user keeps a bearded dragon called Saffron!")
    c = add(store, "The user bought a lamp.", "episodes", "event", age_days=80)
    events = list(run_sleep(store, None, RetentionPolicy(max_active_facts=1), now=T0))
    assert events[-1].kind is SleepEventKind.DONE
    assert [(f.id, f.block) for f in store.active_facts()] == [(a, "human")]
    later = add(store, "A fact from chat after the sleep.")
    step = store.undo_step()
    assert step is not None and step.sleep_id == events[0].sleep_id
    assert set(step.ids) == {a, b, c}
    u = store.undo()
    assert u.label == f"undo:sleep {events[0].sleep_id}"
    assert {(f.id, f.block) for f in store.active_facts()} == {
        (a, "scratch"), (b, "scratch"), (c, "episodes"), (later, "scratch")}
    store.redo()
    assert {(f.id, f.block) for f in store.active_facts()} == {(a, "human"), (later, "scratch")}


# ------------------------------------------------------------------ re-audit and traceability


def test_reaudit_of_hand_changes_passes_and_catches_a_tampered_row(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    with Store(path, clock=Clock()) as store:
        a = add(store, "The user lives in Lisbon.")
        b = add(store, "The user had toast.")
        store.edit(a, text="The user lives in Porto.", category="identity")
        store.pin(a)
        store.forget_now(b)
        store.bring_back(b)
        store.add_fact("human", "The user's sister is Ana.", "identity")
        store.undo()
        checked, problems = audit.reaudit_hand(store)
        assert checked == 6 and problems == []
    raw = sqlite3.connect(path)
    try:
        raw.execute("UPDATE mutations SET refs = json_set(refs, '$.text', 'The user lives in Faro.') "
                    "WHERE kind = 'edit'")
        raw.commit()
    finally:
        raw.close()
    with Store(path) as store:
        _, problems = audit.reaudit_hand(store)
        assert [p.kind for p in problems] == ["edit"]
        assert "not what the recorded edit makes of it" in problems[0].problem


def test_facts_written_by_you_are_traceable_to_the_edit(store: Store) -> None:
    store.add_turn("user", "I live in Lisbon.")
    a = add(store, "The user lives in Lisbon.")
    store.edit(a, text="The user lives in Lisbon with Ana.")
    fact, _ = store.add_fact("human", "The user's sister is Marta.", "identity")
    facts = store.active_facts()
    transcript = [t.text for t in store.turns()]
    old = audit.traceability(facts, transcript)
    assert old.traceable == 0  # without the edits, neither is traceable
    trace = audit.traceability(facts, transcript, audit.hand_written(store))
    assert trace.traceable == trace.total == 2 and trace.problems == ()
    assert dict(trace.by_you) == {a: "written by you on 2023-11-14",
                                  fact.id: "written by you on 2023-11-14"}


def test_a_merge_of_a_hand_written_fact_is_traceable_through_it(store: Store) -> None:
    store.add_turn("user", "I keep a dragon.")
    fact, _ = store.add_fact("scratch", "The user's dragon is called Saffron.")
    b = add(store, "The user keeps a dragon.")
    store.commit_pass([to_row(Merge(
        pass_name="merge", into=b, from_ids=(fact.id,),
        merged_text="The user keeps a dragon called Saffron."))], label="pass:merge:after",
        sleep_id=None)
    trace = audit.traceability(store.active_facts(), [t.text for t in store.turns()],
                               audit.hand_written(store))
    assert trace.problems == () and trace.by_you == ()


def test_hand_rows_read_back_typed() -> None:
    from nocturne_desktop.core import mutations as mu

    for change in [
        mu.Edit(target="m_1", text="x", before={"text": "y"}),
        mu.Pin(target="m_1", pinned=False, before={"pinned": True}),
        mu.BringBack(target="m_2", before={"active": False}),
        mu.Add(target="m_3", text="t", block="human", category="identity"),
        mu.Undo(first=3, last=5, undone="sleep 2", changed_ids=("m_1",)),
        mu.Redo(first=3, last=5, undone="sleep 2", changed_ids=("m_1",)),
    ]:
        row = mu.to_row(change)
        assert row.decided_by == "you" and row.pass_name == "hand"
        assert from_row(row) == change and Kind(row.kind) is change.kind


def test_a_sleep_still_running_is_not_undone(store: Store) -> None:
    a = add(store, "The user had toast.")
    sleep_id = store.begin_sleep({})
    store.commit_pass([to_row(Merge(pass_name="merge", into=a, from_ids=(add(store, "toast"),),
                                    merged_text="The user had toast."))],
                      label="pass:merge:after", sleep_id=sleep_id)
    with pytest.raises(InvalidInput, match=f"sleep {sleep_id} is still running"):
        store.undo()
    store.finish_sleep(sleep_id, "done", {})
    assert store.undo().label == f"undo:sleep {sleep_id}"
