"""Corrections that stick (S-REC-1/2): the Supersede mutation in the store (validity interval,
link to the successor, history not forgetting, diff, restore), the Reconcile gate, the
reconcile rule, and a whole sleep through the scripted server."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from nocturne_desktop.core import applying as ap
from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, gates, rules, run_sleep
from nocturne_desktop.core.sleep.passes import PASS_SPECS
from nocturne_desktop.core.store import SCHEMA_VERSION, Store
from nocturne_desktop.core.store.schema import _MIGRATIONS
from nocturne_desktop.core.types import Fact, FactDraft
from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from tests.clock import Clock
from tests.core.sleepkit import cooperative, pass_responder, task_of
from tests.fakeserver import FakeLLM

NOW = 1_800_000_000.0
POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=120)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "n.db", clock=Clock(NOW - 10_000))
    yield s  # type: ignore[misc]
    s.close()


def supersede(old: str, new: str) -> mu.Supersede:
    return mu.Supersede(pass_name="reconcile", target=old, by=new, reason="moved")


def test_supersede_keeps_the_old_fact_as_history_with_its_interval(store: Store) -> None:
    old = store.append("human", FactDraft("User lives in Lisbon", "identity", 1))
    new = store.append("human", FactDraft("User has moved to Porto", "identity", 5))
    before = store.snapshot("before")
    store.commit_pass([mu.to_row(supersede(old.id, new.id))], label="after", sleep_id=None)
    got = store.get(old.id)
    assert got is not None and not got.active and got.superseded
    assert got.superseded_by == new.id and got.valid_until == new.created_at
    assert got.text == old.text  # nothing lost
    assert [f.id for f in store.active_facts()] == [new.id]
    assert [f.id for f in store.superseded_facts()] == [old.id]
    assert store.search("Lisbon") == []  # left the active set (and its index)
    d = store.diff(before.seq, store.latest_version().seq)  # type: ignore[union-attr]
    assert [e.item_id for e in d.superseded] == [old.id] and d.forgotten == ()
    assert d.superseded[0].status == "superseded" and d.superseded[0].pass_name == "reconcile"
    # restore brings it back exactly, and forward again exactly
    after = store.latest_version()
    assert after is not None
    store.restore(before.seq)
    assert store.get(old.id) == old
    store.restore(after.seq)
    assert store.get(old.id) == got
    assert store.state_at(after.seq) == store.all_facts()


def test_supersede_needs_two_different_active_facts(store: Store) -> None:
    a = store.append("human", FactDraft("User lives in Lisbon"))
    b = store.append("human", FactDraft("User lives in Porto"))
    store.forget(b.id)
    with pytest.raises(InvalidInput, match="not active"):
        store.apply(mu.to_row(supersede(a.id, b.id)))
    with pytest.raises(InvalidInput, match="itself"):
        store.apply(mu.to_row(supersede(a.id, a.id)))
    with pytest.raises(InvalidInput, match="unknown item id"):
        store.apply(mu.to_row(supersede(a.id, "m_99")))
    assert store.get(a.id) == a


def test_supersede_row_round_trips() -> None:
    c = mu.Supersede(pass_name="reconcile", target="m_1", by="m_2", reason="r", rule="value",
                     frame="lives in", old_text="a", new_text="b", valid_until=5.0,
                     decided_by=mu.DecidedBy.RECONCILE_RULE)
    row = mu.to_row(c)
    assert row.kind == "supersede" and row.refs["supersededBy"] == "m_2"
    assert mu.from_row(row) == c
    assert ap.touched(c) == {"m_1": "superseded by m_2"}
    assert mu.is_rule(row.decided_by)


def test_a_schema_2_store_gains_validity_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for step in _MIGRATIONS[:2]:
        for statement in step:
            conn.execute(statement)
    conn.executemany("INSERT INTO blocks(name, position) VALUES (?, ?)",
                     [("persona", 0), ("human", 1), ("episodes", 2), ("scratch", 3)])
    conn.execute("INSERT INTO items VALUES (1, 'human', 'User lives in Lisbon', 'identity', 1, "
                 "5.0, 5.0, 1, 1)")
    conn.execute("UPDATE counters SET value = 2 WHERE name = 'next_item'")
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    assert SCHEMA_VERSION >= 3  # the validity columns came with version 3
    with Store(path) as s:
        f = s.get("m_1")
        assert f is not None and f.active and f.valid_until is None and f.superseded_by is None
        s.append("human", FactDraft("User lives in Porto", "identity", 2))
        s.apply(mu.to_row(supersede("m_1", "m_2")))
        assert s.get("m_1").superseded_by == "m_2"  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------ gate


def facts() -> list[Fact]:
    def f(n: int, text: str, turn: int | None, cat: str = "context", active: bool = True) -> Fact:
        return Fact(f"m_{n}", "human", text, cat, turn, NOW - 100 + n, NOW - 100 + n, active)

    return [f(1, "User lives in Lisbon", 1, "identity"), f(2, "User lives in Porto", 7, "identity"),
            f(3, "User likes Lisbon", 2), f(4, "User eats meat", 3),
            f(5, "User no longer eats meat", 9), f(6, "User lives in Faro", 4, active=False),
            f(7, "User lives in Braga", 8)]


def gate(entries: list[object], **kw: object) -> gates.GateResult:
    return gates.check("reconcile", facts(), {"supersede": entries}, POLICY, now=NOW, **kw)  # type: ignore[arg-type]


def test_gate_accepts_a_code_candidate_newer_over_older_even_when_protected() -> None:
    r = gate([{"oldId": "m_1", "newId": "m_2", "reason": "moved to Porto"}])
    assert len(r.accepted) == 1 and r.rejected == ()
    m = r.accepted[0]
    assert (m.kind, m.item_id, m.refs["supersededBy"], m.refs["rule"]) == (
        "supersede", "m_1", "m_2", "value")
    assert POLICY.is_protected(facts()[0])  # identity: a correction is not a forgetting


@pytest.mark.parametrize(("entry", "why"), [
    ({"oldId": "m_3", "newId": "m_2", "reason": "r"}, "not a conflict the code found"),
    ({"oldId": "m_2", "newId": "m_1", "reason": "r"}, "only the newer source may supersede"),
    ({"oldId": "m_1", "newId": "m_2", "reason": " "}, "reason is empty"),
    ({"oldId": "m_1", "newId": "m_1", "reason": "r"}, "cannot supersede itself"),
    ({"oldId": "m_6", "newId": "m_2", "reason": "r"}, "forgotten before this pass"),
    ({"oldId": "m_42", "newId": "m_2", "reason": "r"}, "does not exist in the pre-pass store"),
    ({"oldId": "m_1", "reason": "r"}, "newId is missing"),
])
def test_gate_refusals_say_why(entry: dict[str, object], why: str) -> None:
    r = gate([entry])
    assert r.accepted == () and len(r.rejected) == 1
    assert why in (r.rejected[0].rejection_reason or "")


def test_consumed_earlier_in_the_pass_is_not_never_existed() -> None:
    r = gate([{"oldId": "m_1", "newId": "m_2", "reason": "moved"},
              {"oldId": "m_1", "newId": "m_7", "reason": "moved again"}])
    assert len(r.accepted) == 1
    assert "already superseded by m_2 by an earlier mutation in this pass" in (
        r.rejected[0].rejection_reason or "")


def test_gate_keeps_to_the_ids_it_showed() -> None:
    r = gate([{"oldId": "m_1", "newId": "m_2", "reason": "r"}], candidates={"m_4", "m_5"})
    assert "not among the facts given" in (r.rejected[0].rejection_reason or "")


def test_plan_offers_only_conflicting_pairs() -> None:
    plan = PASS_SPECS["reconcile"].plan(facts(), POLICY, NOW, 1500)
    pairs = [(p["oldId"], p["newId"]) for c in plan.chunks for p in c.payload["candidatePairs"]]
    assert ("m_1", "m_2") in pairs and ("m_4", "m_5") in pairs
    assert all("m_3" not in p and "m_6" not in p for p in pairs)
    assert plan.chunks[0].payload["task"] == "reconcile"
    contract = PASS_SPECS["reconcile"].contract(3)
    assert contract.model_validate({"supersede": [{"oldId": "m_1", "newId": "m_2",
                                                   "reason": "r"}]})


# ------------------------------------------------------------------------------------ rule


def test_rule_supersedes_only_where_certain() -> None:
    out = rules.reconcile_rule(facts())
    by = {m.item_id: m for m in out}
    assert set(by) == {"m_4"}  # polarity flip from the transcript; Lisbon/Porto has no change word
    assert by["m_4"].refs["supersededBy"] == "m_5"
    assert by["m_4"].decided_by == "reconcile-rule" and by["m_4"].reason
    moved = [*facts()[:1], Fact("m_9", "human", "User has moved to Porto", "identity", 9,
                                NOW, NOW)]
    assert [(m.item_id, m.refs["supersededBy"]) for m in rules.reconcile_rule(moved)] == [
        ("m_1", "m_9")]


def test_rule_leaves_what_the_model_did() -> None:
    model = gate([{"oldId": "m_4", "newId": "m_5", "reason": "stopped"}]).accepted
    assert rules.reconcile_rule(facts(), model) == []


# ------------------------------------------------------------------------------------ sleep


def seed_correction(path: Path) -> None:
    with Store(path, clock=lambda: NOW - 50) as s:
        for text, cat, turn in [("User lives in Lisbon", "identity", 1),
                                ("User eats meat", "preferences", 2),
                                ("User likes green tea", "preferences", 3),
                                ("User lives in Porto", "identity", 6),
                                ("User no longer eats meat", "preferences", 7)]:
            s.append("human", FactDraft(text, cat, turn, NOW - 1000 + turn))


def test_rules_only_sleep_reconciles_the_polarity_flip(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    seed_correction(db)
    with Store(db, clock=lambda: NOW) as s:
        events = list(run_sleep(s, None, POLICY, now=NOW))
        done = {e.pass_name: e for e in events if e.kind is SleepEventKind.PASS_DONE}
        fig = done["reconcile"].figures
        assert fig is not None and fig.candidates == 4 and fig.enforced == 1
        assert done["reconcile"].changes.deactivated == ("m_2",)  # type: ignore[union-attr]
        assert {f.text for f in s.active_facts()} >= {"User lives in Lisbon", "User lives in Porto"}
        assert s.get("m_2").superseded_by == "m_5"  # type: ignore[union-attr]
        checked, problems = audit.reaudit(s, events[0].sleep_id)  # type: ignore[arg-type]
        assert problems == [] and checked >= 1


def test_sleep_through_the_server_supersedes_what_the_model_proposes(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    db = tmp_path / "n.db"
    seed_correction(db)
    fake_llm.respond_with(pass_responder(cooperative()))
    client = OpenAIClient(fake_llm.base_url, "fake-model",
                          timeouts=Timeouts(connect=2, first_token=5, idle=5))
    with Store(db, clock=lambda: NOW) as s:
        events = list(run_sleep(s, client, POLICY, now=NOW))
        assert events[-1].kind is SleepEventKind.DONE
        bodies = {task_of(r)[0]: task_of(r)[1] for r in fake_llm.chat_requests()}
        shown = {(p["oldId"], p["newId"]) for p in bodies["reconcile"]["candidatePairs"]}
        assert shown == {("m_1", "m_4"), ("m_2", "m_5")}
        assert "User likes green tea" not in str(bodies["reconcile"])  # candidates only
        done = {e.pass_name: e.figures for e in events if e.kind is SleepEventKind.PASS_DONE}
        assert done["reconcile"] is not None and done["reconcile"].accepted == 2
        assert done["reconcile"].enforced == 0 and done["reconcile"].calls == 1
        assert {f.id for f in s.superseded_facts()} == {"m_1", "m_2"}
        assert all(s.get(i).superseded_by in ("m_4", "m_5") for i in ("m_1", "m_2"))  # type: ignore[union-attr]
        rows = s.mutations(pass_name="reconcile", accepted=True)
        assert {r.mutation.decided_by for r in rows} == {"model"}
        _, problems = audit.reaudit(s, events[0].sleep_id)  # type: ignore[arg-type]
        assert problems == []


def test_dry_run_reconciles_in_memory_only(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    seed_correction(db)
    with Store(db, clock=lambda: NOW) as s:
        versions = s.versions()
        events = list(run_sleep(s, None, POLICY, now=NOW, dry_run=True))
        fig = next(e.figures for e in events if e.kind is SleepEventKind.PASS_DONE
                   and e.pass_name == "reconcile")
        assert fig is not None and fig.accepted == 1
        assert s.versions() == versions and s.superseded_facts() == []


def test_dedupe_and_merge_leave_conflicts_to_reconcile() -> None:
    fs = facts()
    drop = gates.check("dedupe", fs, {"drop": [{"itemId": "m_4", "duplicateOf": "m_5",
                                                 "reason": "same"}]}, POLICY, now=NOW)
    assert drop.accepted == () and drop.rejected  # the polarity guard or the conflict rule
    assert rules.duplicate_rule(fs, POLICY) == []  # similarity 1.0, yet a correction
    merge = gates.check("merge", fs, {"merge": [{"intoId": "m_4", "fromIds": ["m_5"],
                                                 "mergedText": "User eats meat no longer",
                                                 "reason": "same topic"}]}, POLICY, now=NOW)
    assert merge.accepted == () and "one sentence would claim both" in (
        merge.rejected[0].rejection_reason or "")
    plan = PASS_SPECS["dedupe"].plan(fs, POLICY, NOW, 1500)
    assert plan.candidate_count == 0


# ------------------------------------------------------------------------------------ prompt


def test_prompt_carries_the_current_value_and_a_relevant_previously(store: Store) -> None:
    from nocturne_desktop.core.chat import agent

    old = store.append("human", FactDraft("User lives in Lisbon", "identity", 1))
    store.append("human", FactDraft("User likes green tea", "preferences", 2))
    new = store.append("human", FactDraft("User has moved to Porto", "identity", 5))
    meat = store.append("human", FactDraft("User eats meat", "preferences", 3))
    veg = store.append("human", FactDraft("User no longer eats meat", "preferences", 6))
    store.commit_pass([mu.to_row(supersede(old.id, new.id)), mu.to_row(supersede(meat.id, veg.id))],
                      label="after", sleep_id=None)
    view = agent.render_memory(store, "Where did I live before?")
    current, _, prev = view.text.partition("[previously")
    assert "Lisbon" not in current and "Porto" in current
    assert [f.id for f in view.previously] == [old.id]  # relevance: the meat fact is not asked
    assert "User lives in Lisbon (until " in prev
    assert "Porto" not in prev  # its successor is shown above: no line twice
    prompt = agent.system_prompt(view)
    assert "never present them as current" in prompt
    plain = agent.render_memory(store, "What tea do I like?")
    assert plain.previously == () and "previously" not in plain.text
    assert "previously" not in agent.system_prompt(plain)


# ------------------------------------------------------------------------------- wake probe


@pytest.mark.parametrize(("reply", "carries", "presents_old", "passed"), [
    ("You live in Porto now; you used to live in Lisbon.", True, False, True),
    ("You have moved to Porto.", True, False, True),
    ("You live in Lisbon.", False, True, False),
    ("You live in Lisbon and Porto.", True, True, False),
    ("I don't have that in memory.", False, False, False),
])
def test_correction_probe_three_conditions(store: Store, reply: str, carries: bool,
                                           presents_old: bool, passed: bool) -> None:
    from nocturne_desktop.core.checks.quiz import run_quiz
    from tests.core.fakemodel import FakeCall, FakeModel

    old = store.append("human", FactDraft("User lives in Lisbon", "identity", 1))
    new = store.append("human", FactDraft("User has moved to Porto", "identity", 5))
    store.apply(mu.to_row(supersede(old.id, new.id)))

    def script(call: FakeCall) -> object:
        if call.kind == "structured":
            return {"question": "Where does the user live?"}
        return reply

    report = run_quiz(store, FakeModel(responder=script), n_questions=1, seed=0)
    probe = report.correction
    assert probe is not None and (probe.fact_id, probe.successor_id) == (old.id, new.id)
    assert probe.successor_active
    assert (probe.carries_current, probe.presents_old, probe.passed) == (
        carries, presents_old, passed)
    assert "porto" in probe.current_words
    assert report.probe is None or report.probe.fact_id != old.id  # history is not forgotten


def test_a_probes_template_question_is_noted_in_the_report(store: Store) -> None:
    """Fails on the old code: only the five questions' fallbacks were noted, so a window
    showing the notes could not say the correction probe asked a template question."""
    from nocturne_desktop.core.checks.quiz import run_quiz
    from tests.core.fakemodel import FakeCall, FakeModel

    old = store.append("human", FactDraft("User lives in Lisbon", "identity", 1))
    new = store.append("human", FactDraft("User has moved to Porto", "identity", 5))
    store.apply(mu.to_row(supersede(old.id, new.id)))

    def script(call: FakeCall) -> object:
        if call.kind == "structured":
            return {"question": "What is the answer to the question?"}  # refused every time
        return "You live in Porto now."

    report = run_quiz(store, FakeModel(responder=script), n_questions=1, seed=0)
    assert report.correction is not None and report.correction.template_fallback
    (note,) = [n for n in report.notes if n.startswith("the correction probe:")]
    assert "the model's question was refused: " in note
    assert f"a template question was asked: {report.correction.question!r}" in note
    assert report.fallbacks == sum(1 for n in report.notes if "template question" in n)


def test_no_superseded_fact_no_correction_probe(store: Store) -> None:
    from nocturne_desktop.core.checks.quiz import superseded_fact

    store.append("human", FactDraft("User lives in Lisbon", "identity", 1))
    assert superseded_fact(store, 0) is None


def test_rule_leaves_a_compound_fact_to_the_model() -> None:
    old = Fact("m_1", "human", "User lives in Lisbon and works best in the morning", "identity",
               1, NOW, NOW)
    new = Fact("m_2", "human", "User lives in Porto now", "identity", 9, NOW, NOW)
    assert rules.reconcile_rule([old, new]) == []
    # The model may not either: superseding would retire "works best in the morning" too.
    r = gate_pair(old, new)
    assert r.accepted == () and len(r.rejected) == 1


def gate_pair(old: Fact, new: Fact, *others: Fact) -> gates.GateResult:
    return gates.check("reconcile", [old, new, *others], {"supersede": [
        {"oldId": old.id, "newId": new.id, "reason": "moved"}]}, POLICY, now=NOW)


COMPOUND = Fact("m_2", "human", "User lives in Lisbon and works best in the morning.",
                "identity", 1, NOW, NOW)
MOVED = Fact("m_5", "human", "User lives in Porto now", "identity", 9, NOW + 5, NOW + 5)


def test_gate_refuses_to_supersede_a_compound_fact_whose_other_half_still_holds() -> None:
    r = gate_pair(COMPOUND, MOVED)
    assert r.accepted == () and len(r.rejected) == 1
    assert r.rejected[0].rejection_reason == (
        "m_2 also says 'works best in the morning', which m_5 does not replace (and no other "
        "current fact says it): superseding would retire it with the old value")
    assert r.rejected[0].item_id == "m_2"


def test_gate_supersedes_a_compound_fact_when_nothing_of_it_is_lost() -> None:
    # the other half is restated by the new fact ...
    restated = Fact("m_5", "human", "User lives in Porto now, and still works best in the morning",
                    "identity", 9, NOW + 5, NOW + 5)
    assert len(gate_pair(COMPOUND, restated).accepted) == 1
    # ... or carried in full by another current fact
    apart = Fact("m_3", "human", "The user works best in the morning", "preferences", 2, NOW, NOW)
    assert len(gate_pair(COMPOUND, MOVED, apart).accepted) == 1
    # not by a fact that carries only part of it
    part = Fact("m_3", "human", "The user works best at night", "preferences", 2, NOW, NOW)
    assert gate_pair(COMPOUND, MOVED, part).accepted == ()
    # nor by one that is no longer current
    gone = Fact("m_3", "human", "The user works best in the morning", "preferences", 2, NOW, NOW,
                active=False)
    assert gate_pair(COMPOUND, MOVED, gone).accepted == ()


@pytest.mark.parametrize("old_text", [
    "User lives in Lisbon",
    "User lives in Lisbon near the river",  # one clause: the detail goes with the old value
    "User lives in Lisbon since 2019",
    "The user lives in Lisbon, Portugal",  # the clause is the value's own
])
def test_gate_supersedes_an_atomic_fact(old_text: str) -> None:
    old = Fact("m_2", "human", old_text, "identity", 1, NOW, NOW)
    r = gate_pair(old, MOVED)
    assert len(r.accepted) == 1, r.rejected[0].rejection_reason if r.rejected else ""


def test_left_over_names_the_clauses_a_supersede_would_retire() -> None:
    from nocturne_desktop.core.judges import conflicts

    c = conflicts.pair_conflict(COMPOUND, MOVED)
    assert c is not None and c.rule == "value"
    assert [t for t, _ in conflicts.left_over(COMPOUND, MOVED, c)] == ["works best in the morning"]
    eats = Fact("m_1", "human", "User eats meat", "preferences", 1, NOW, NOW)
    vegan = Fact("m_4", "human", "User no longer eats meat", "preferences", 4, NOW, NOW)
    p = conflicts.pair_conflict(eats, vegan)
    assert p is not None and conflicts.left_over(eats, vegan, p) == []


def test_rule_does_not_retire_a_short_second_clause() -> None:
    # few enough lost words for the rule's word count, but "cooks" is a second statement
    old = Fact("m_1", "human", "User lives in Lisbon and cooks", "identity", 1, NOW, NOW)
    new = Fact("m_2", "human", "User now lives in Porto", "identity", 9, NOW, NOW)
    assert rules.reconcile_rule([old, new]) == []
    assert len(rules.reconcile_rule([replace(old, text="User lives in Lisbon"), new])) == 1


@pytest.mark.parametrize("entry", [
    {"oldId": ["m_1"], "newId": "m_2", "reason": "r"},
    {"oldId": "m_1", "newId": {"id": "m_2"}, "reason": "r"},
    {"oldId": "m_" + "9" * 5000, "newId": "m_2", "reason": "r"},
    {"oldId": "m_1", "newId": "m_2", "reason": ["why"]},
    {"oldId": "m_1\x00", "newId": "m_2", "reason": "r"},
    {"oldId": None, "newId": None},
    "not an object",
    {},
])
def test_hostile_supersede_entries_are_refused_not_raised(entry: object) -> None:
    r = gates.check("reconcile", facts(), {"supersede": [entry]}, POLICY, now=NOW)
    assert r.accepted == () and len(r.rejected) == 1
    assert r.rejected[0].rejection_reason


@pytest.mark.parametrize("text", [
    "The user works best in the morning", "User WORKED best in the Mornings!",
    "The user's working best in the morning", "User works best in the morning’s light",
    "User works best at night", "Ｕser works best in the morning", "", "works",
])
def test_carries_is_the_clause_words_test_read_fast(text: str) -> None:
    from nocturne_desktop.core.judges import conflicts

    words = conflicts.clause_words("works best in the morning")
    assert conflicts.carries(text, words) == (words <= conflicts.clause_words(text))


# -- pins and hand edits meet validity intervals ----------------------------------------------


def test_a_pinned_fact_is_never_superseded_by_gate_rule_or_apply(store: Store) -> None:
    pinned = [replace(f, pinned=True) if f.id in ("m_1", "m_4") else f
              for f in facts()]
    r = gates.check("reconcile", pinned, {"supersede": [
        {"oldId": "m_1", "newId": "m_2", "reason": "moved to Porto"}]}, POLICY, now=NOW)
    assert r.accepted == () and "pinned by you" in (r.rejected[0].rejection_reason or "")
    assert "m_4" not in {m.item_id for m in rules.reconcile_rule(pinned)}  # the polarity flip
    old = store.append("human", FactDraft("User lives in Lisbon", "identity", source_turn=1))
    new = store.append("human", FactDraft("User lives in Porto", "identity", source_turn=2))
    store.pin(old.id)
    with pytest.raises(InvalidInput, match="pinned"):
        store.apply(mu.to_row(supersede(old.id, new.id)))
    assert store.get(old.id).active  # type: ignore[union-attr]


def test_bringing_back_a_superseded_fact_makes_it_current_and_undo_restores_its_interval(
        store: Store) -> None:
    old = store.append("human", FactDraft("User lives in Lisbon", "identity", source_turn=1))
    new = store.append("human", FactDraft("User lives in Porto", "identity", source_turn=2))
    store.commit_pass([mu.to_row(supersede(old.id, new.id))], label="pass:reconcile:after",
                      sleep_id=None)
    gone = store.get(old.id)
    assert gone is not None and gone.superseded and gone.valid_until == new.created_at
    store.bring_back(old.id)
    back = store.get(old.id)
    assert back is not None and back.active and (back.valid_until, back.superseded_by) == (None, None)
    store.undo()
    assert store.get(old.id) == gone  # superseded again, with its interval and successor
    store.redo()
    assert store.get(old.id).active  # type: ignore[union-attr]
