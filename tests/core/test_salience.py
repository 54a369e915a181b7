"""Salience that knows what matters (S-RET-2): importance, use, the floor, the forgetting order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.encoder import Encoder, build_encoder_messages, check_importance
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy, decayed
from nocturne_desktop.core.sleep import rules, run_sleep
from nocturne_desktop.core.sleep.passes.forget import ForgetPass
from nocturne_desktop.core.store import SCHEMA_VERSION, Store
from nocturne_desktop.core.types import Fact, FactDraft, Strength, Turn
from tests.core.fakemodel import FakeModel

DAY = 86400.0
NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    clock = [NOW]
    with Store(tmp_path / "memory.db", clock=lambda: clock[0]) as s:
        yield s


def fact(i: int, block: str = "scratch", category: str = "event", age: float = 0.0) -> Fact:
    at = NOW - age * DAY
    return Fact(f"m_{i}", block, f"fact {i}", category, None, at, at, True)


# -- the arithmetic ---------------------------------------------------------------------------


def test_importance_moves_salience_from_the_categorys_usual() -> None:
    policy = RetentionPolicy(stale_after_days=30)
    f = fact(1, "episodes", "event", age=15)  # 30 + 0 + 15 = 45 with no importance of its own
    assert policy.salience(f, NOW) == pytest.approx(45.0)
    assert policy.salience(f, NOW, Strength(importance=3)) == pytest.approx(45.0)
    assert policy.salience(f, NOW, Strength(importance=1)) == pytest.approx(15.0)
    assert policy.salience(f, NOW, Strength(importance=5)) == pytest.approx(75.0)


def test_use_adds_ten_a_recall_halving_every_thirty_days_capped() -> None:
    policy = RetentionPolicy()
    f = fact(1, age=90)  # scratch 10, no recency
    once_now = Strength(uses=1, strength=1.0, last_used_at=NOW)
    once_a_month_ago = Strength(uses=1, strength=1.0, last_used_at=NOW - 30 * DAY)
    assert policy.salience(f, NOW, once_now) == pytest.approx(20.0)
    assert policy.salience(f, NOW, once_a_month_ago) == pytest.approx(15.0)
    many = Strength(uses=9, strength=9.0, last_used_at=NOW)
    assert policy.salience(f, NOW, many) == pytest.approx(10.0 + 40.0)
    assert decayed(2.0, NOW - 60 * DAY, NOW) == pytest.approx(0.5)


def test_explain_is_the_sum_it_shows() -> None:
    policy = RetentionPolicy(stale_after_days=30)
    f = fact(1, "scratch", "context", age=15)
    parts = policy.salience_parts(f, NOW, Strength(importance=4, uses=2, strength=1.5,
                                                   last_used_at=NOW - 3 * DAY))
    text = parts.explain()
    assert text.startswith(f"salience {parts.total:.1f} = scratch 10 + recency 15.0 + importance 4 → +15")
    assert "use 14.0 (2 recalls, last 3 d ago)" in text
    plain = policy.salience_parts(f, NOW).explain()
    assert "importance 3 (the category's usual) → +0" in plain and "never recalled" in plain


# -- the store keeps importance and recalls ---------------------------------------------------


def test_importance_and_recalls_are_stored_apart_from_the_fact(store: Store) -> None:
    assert SCHEMA_VERSION >= 5
    a = store.append("scratch", FactDraft("Maya is allergic to penicillin.", "identity", importance=5))
    b = store.append("scratch", FactDraft("Maya had soup for lunch on Saturday.", "event"))
    assert store.strengths() == {a.id: Strength(importance=5)}
    seq = store.latest_version()
    assert store.record_use([a.id, b.id, "m_99"], at=NOW) == [a.id, b.id]
    assert store.last_changes.strengths == (a.id, b.id) and not store.last_changes.changed
    assert store.latest_version() == seq  # a recall is not a version
    store.record_use([b.id], at=NOW + 30 * DAY)
    got = store.strengths([b.id])[b.id]
    assert got.uses == 2 and got.strength == pytest.approx(1.5) and got.last_used_at == NOW + 30 * DAY
    store.set_importance(b.id, 1)
    assert store.strengths([b.id])[b.id].importance == 1
    store.forget(b.id)
    assert store.record_use([b.id]) == []  # a forgotten fact is not reinforced


def test_bad_importance_is_refused_clearly_and_nothing_is_written(store: Store) -> None:
    for bad in (0, 6, 2.5, "high", True):
        with pytest.raises(InvalidInput, match="importance must be a whole number from 1 to 5"):
            store.append("scratch", FactDraft("Maya paints.", "event", importance=bad))  # type: ignore[arg-type]
    assert store.active_facts() == [] and store.strengths() == {}
    with pytest.raises(InvalidInput, match="unknown item id"):
        store.set_importance("m_7", 3)


def test_a_schema_2_store_gains_the_strengths_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path, clock=lambda: NOW) as s:
        f = s.append("scratch", FactDraft("Maya paints watercolour landscapes."))
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE strengths")
    raw.execute("PRAGMA user_version = 2")
    raw.commit()
    raw.close()
    with Store(path, clock=lambda: NOW) as s:
        assert s.strengths() == {}
        s.record_use([f.id])
        assert s.strengths()[f.id].uses == 1
        assert s.get(f.id) == f


# -- the encoder proposes, the gate checks ----------------------------------------------------


def test_encoder_prompt_asks_for_importance_and_the_gate_checks_its_range(store: Store) -> None:
    system = build_encoder_messages([Turn(1, "user", "hi", NOW)], None, max_facts=3)[0]["content"]
    assert "importance from 1 to 5" in system and "1 a passing remark" in system
    assert check_importance(None) is None and check_importance(4) is None
    assert check_importance(4.0) is None
    assert "from 1 to 5" in (check_importance(9) or "")
    store.add_turn("user", "I am allergic to penicillin and I had soup for lunch.")
    model = FakeModel([{"facts": [
        {"text": "The user is allergic to penicillin.", "category": "identity", "turn": 1,
         "importance": 5},
        {"text": "The user had soup for lunch.", "category": "event", "turn": 1, "importance": 9},
        {"text": "The user had soup.", "category": "event", "turn": 1},
    ]}])
    result = Encoder(store, model).encode_new_turns()
    assert [f.text for f in result.accepted] == ["The user is allergic to penicillin.",
                                                 "The user had soup."]
    assert "importance must be a whole number from 1 to 5, not 9" in result.rejected[0][1]
    allergy, soup = result.accepted
    assert store.strengths() == {allergy.id: Strength(importance=5)}  # soup: the category's usual
    append = next(r.mutation for r in store.mutations() if r.mutation.item_id == soup.id)
    assert "importance" not in append.refs["proposal"]  # an old-style reply stays old-style


# -- forgetting follows salience ----------------------------------------------------------------


def test_the_cap_forgets_the_unimportant_first_and_spares_the_used() -> None:
    policy = RetentionPolicy(max_active_facts=2)
    facts = [fact(1, age=1), fact(2, age=40), fact(3, age=2), fact(4, age=3)]
    # by the article's salience the oldest two go; importance and use change that
    strengths = {"m_1": Strength(importance=1), "m_3": Strength(importance=2),
                 "m_2": Strength(importance=5, uses=1, strength=1.0, last_used_at=NOW)}
    assert [f.id for f in policy.overflow(facts, NOW)] == ["m_2", "m_4"]
    assert [f.id for f in policy.overflow(facts, NOW, strengths)] == ["m_1", "m_3"]
    rows = rules.retention_rule(facts, policy, now=NOW, strengths=strengths)
    assert [m.item_id for m in rows] == ["m_1", "m_3"]
    assert all(m.policy == "capacity" and m.decided_by == "retention-rule" for m in rows)


def test_the_floor_forgets_stale_trivia_only() -> None:
    policy = RetentionPolicy(forget_below=5.0)
    facts = [
        fact(1, "episodes", "event", age=40),   # 30 - 30 = 0: below the floor
        fact(2, "episodes", "event", age=40),   # 30: kept
        fact(3, "episodes", "event", age=10),   # importance 1 but not stale: kept
        fact(4, "human", "identity", age=400),  # protected: never
        fact(5, "episodes", "event", age=40),   # trivia, but recalled last week: kept
    ]
    strengths = {"m_1": Strength(importance=1), "m_3": Strength(importance=1),
                 "m_4": Strength(importance=1),
                 "m_5": Strength(importance=1, uses=1, strength=1.0, last_used_at=NOW - 7 * DAY)}
    rows = rules.retention_rule(facts, policy, now=NOW, strengths=strengths)
    assert [m.item_id for m in rows] == ["m_1"]
    assert rows[0].policy == "stale" and "below the floor 5" in rows[0].reason
    assert rules.retention_rule(facts, RetentionPolicy(forget_below=0), now=NOW,
                                strengths=strengths) == []  # no floor: only the cap


def test_forget_pass_offers_the_least_salient_first_with_their_salience() -> None:
    policy = RetentionPolicy()
    facts = [fact(1, "episodes", age=40), fact(2, "scratch", age=40), fact(3, "episodes", age=50)]
    plan = ForgetPass().plan(facts, policy, NOW, 10_000, {"m_1": Strength(importance=1)})
    shown = plan.chunks[0].payload["eligible"]
    assert [e["itemId"] for e in shown] == ["m_1", "m_2", "m_3"]
    assert [e["salience"] for e in shown] == [0.0, 10.0, 30.0]


def test_a_rules_only_sleep_forgets_by_the_stored_importance(store: Store) -> None:
    old = NOW - 60 * DAY
    keep = store.append("scratch", FactDraft("Maya drives a blue Fiat Panda.", "context",
                                             created_at=old, importance=3))
    trivia = store.append("scratch", FactDraft("Maya had soup for lunch on Saturday.", "context",
                                               created_at=old, importance=1))
    events = list(run_sleep(store, None, RetentionPolicy(forget_below=5.0), now=NOW))
    assert events[-1].kind == "sleep done"
    assert {f.id for f in store.active_facts()} == {keep.id}
    row = store.mutations(pass_name="forget", accepted=True)[0].mutation
    assert row.item_id == trivia.id and row.decided_by == "retention-rule"


# -- use: a reply that carries a fact, a quiz answer -------------------------------------------


def test_a_reply_that_carries_a_shown_fact_reinforces_it_and_only_it(store: Store) -> None:
    from nocturne_desktop.core.chat.agent import ChatAgent, recalled

    lisbon = store.append("human", FactDraft("The user lives in Lisbon.", "identity"))
    tea = store.append("human", FactDraft("The user prefers tea over coffee.", "preferences"))
    store.append("scratch", FactDraft("The user does not live in Porto.", "context"))
    model = FakeModel(["You live in Lisbon, as far as I remember."])
    agent = ChatAgent(store, model)
    agent.reply("Where do I live?")
    got = store.strengths()
    assert set(got) == {lisbon.id} and got[lisbon.id].uses == 1
    assert tea in agent.last_shown  # shown, but the reply did not carry it
    # the meaning guards decide, not the words alone
    porto = Fact("m_9", "scratch", "The user lives in Porto.", "context", None, NOW, NOW, True)
    assert recalled([porto], "You do not live in Porto.") == []


def test_a_streamed_reply_reinforces_when_finished_not_when_stopped(store: Store) -> None:
    from nocturne_desktop.core.chat.agent import ChatAgent

    lisbon = store.append("human", FactDraft("The user lives in Lisbon.", "identity"))
    agent = ChatAgent(store, FakeModel(["You live in Lisbon."]))
    stream = agent.stream_reply("Where do I live?")
    assert "".join(stream) == "You live in Lisbon."
    assert stream.recalled == (lisbon.id,) and store.strengths()[lisbon.id].uses == 1
    stream = ChatAgent(store, FakeModel(["You live in Lisbon."])).stream_reply("Where?")
    next(iter(stream))
    stream.close()
    assert stream.stopped and store.strengths()[lisbon.id].uses == 1


def test_a_quiz_answer_reinforces_the_fact_it_got_right(store: Store) -> None:
    from nocturne_desktop.core.checks.quiz import run_quiz

    right = store.append("human", FactDraft("The user lives in Lisbon.", "identity"))
    wrong = store.append("human", FactDraft("The user keeps bees on the roof.", "context"))

    def script(call: object) -> object:
        if getattr(call, "kind", "") == "structured":
            user = call.last_user  # type: ignore[attr-defined]
            return {"question": "Which city is home?" if "Lisbon" in user else "What is on the roof?"}
        last = call.last_user  # type: ignore[attr-defined]
        return "You live in Lisbon." if "city" in last else "I don't have that in memory."

    report = run_quiz(store, FakeModel(responder=script), n_questions=2, seed=0)
    assert {i.fact_id: i.correct for i in report.questions} == {right.id: True, wrong.id: False}
    assert set(store.strengths()) == {right.id}


def test_search_ranks_the_important_and_the_used_first_among_equals(store: Store) -> None:
    a = store.append("scratch", FactDraft("Maya went to the park on Saturday.", "event", importance=1))
    b = store.append("scratch", FactDraft("Maya went to the park with Jonah.", "event", importance=4))
    c = store.append("scratch", FactDraft("Maya went to the park at dawn.", "event"))
    hits = store.search_scored("park")
    assert [h.fact.id for h in hits] == [b.id, c.id, a.id]
    assert [round(h.salience, 2) for h in hits] == [0.05, 0.0, -0.1]
    for _ in range(4):
        store.record_use([a.id], at=NOW)
    hits = store.search_scored("park", now=NOW)
    assert hits[0].fact.id == a.id and hits[0].salience == pytest.approx(0.05 * (-2 + 4))


def test_the_audit_checks_a_capacity_forget_by_the_salience_it_was_chosen_by(store: Store) -> None:
    from nocturne_desktop.core.checks import audit

    old = NOW - 5 * DAY
    keep = store.append("scratch", FactDraft("Maya is saving for a house deposit.", "context",
                                             created_at=old - DAY, importance=5))
    trivia = store.append("scratch", FactDraft("Maya had soup for lunch on Saturday.", "context",
                                               created_at=old, importance=1))
    events = list(run_sleep(store, None, RetentionPolicy(max_active_facts=1), now=NOW))
    assert {f.id for f in store.active_facts()} == {keep.id}  # not the older one, by age
    assert trivia.id not in {f.id for f in store.active_facts()}
    store.record_use([keep.id], at=NOW + DAY)  # later recalls do not change the verdict
    assert audit.reaudit(store, events[0].sleep_id or 0)[1] == []
