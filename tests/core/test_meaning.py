"""The meaning guards one by one, and each judge that uses them (S-MEAN-1..6, S-WAK-2).

Every test here fails on the code before the guards: the old measures accepted each of these
inversions (or refused the faithful form) because every content word was traceable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop.core.chat.encoder import Encoder, check_fact, evidence
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.checks.quiz import answer_score, template_question
from nocturne_desktop.core.judges import duplicates, meaning
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates, rules
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, Turn
from tests.core.fakemodel import FakeModel

NOW = 1_800_000_000.0


def _facts(*texts: str) -> list[Fact]:
    return [Fact(f"m_{i}", "scratch", t, "context", i, NOW, NOW, True)
            for i, t in enumerate(texts, 1)]


# -- the measures ---------------------------------------------------------------------------


def test_faithful_forms_are_equal() -> None:
    for form in ("doesn't", "does not", "don't", "do not", "doesn’t"):
        assert meaning.canonical_coverage(f"The user {form} eat meat.", ["I don't eat meat."]) == (1.0, [])
    assert meaning.canonical_coverage("The user cannot swim.", ["I can't swim."]) == (1.0, [])
    assert meaning.canonical_similarity("The user does not eat meat.", "I don't eat meat.") == 1.0
    # the article's measures are untouched
    assert tm.similarity("The user does not eat meat.", "I don't eat meat.") < 0.9


def test_polarity_is_bound_to_its_clause() -> None:
    src = [("m_3", "I don't eat meat, only fish.")]
    assert meaning.check_claim("The user eats meat and fish.", src, what="merged text") == (
        "polarity guard: m_3 negates 'eat meat' (don't); the merged text states it")
    assert meaning.check_claim("The user doesn't eat meat.", src) is None
    both = [("m_1", "I live in Lisbon but I don't drive.")]
    assert meaning.check_claim("The user lives in Lisbon.", both) is None
    assert "polarity guard" in (meaning.check_claim("The user drives.", both) or "")
    assert "polarity guard" in (meaning.check_claim(
        "The user takes coffee with sugar.", [("t", "I take coffee without sugar.")]) or "")
    assert "polarity guard" in (meaning.check_claim(
        "The user no longer lives in Lisbon.", [("t", "I live in Lisbon.")]) or "")


@pytest.mark.parametrize(("claim", "sources"), [
    ("The user runs 84 km and swims 48 laps.", ["The user runs 48 km.", "The user swims 84 laps."]),
    ("The user runs 48 miles.", ["The user runs 48 km.", "The user lives 3 miles away."]),
    ("The run took 15 h 2.", ["The run took 2 h 15."]),
    ("The user runs 2 km and swims 48 km.", ["The user runs 48 km.", "The user swims 2 km."]),
])
def test_numbers_and_units_cannot_be_recombined(claim: str, sources: list[str]) -> None:
    why = meaning.check_claim(claim, [(f"m_{i}", s) for i, s in enumerate(sources, 1)])
    assert why is not None and why.startswith("number guard:")


def test_number_words_and_ellipsis_bind() -> None:
    assert meaning.check_claim("The user keeps two cats.", [("t", "I keep a cat, two in fact.")]) is None
    assert meaning.check_claim("The user has twenty five cats.",
                               [("t", "I have twenty-five cats.")]) is None


def test_roles_cannot_be_swapped_or_moved() -> None:
    said = [("turn 1", "I promised Jonas I'd drive him to the airport.")]
    assert meaning.check_claim("The user promised to drive Jonas to the airport.", said) is None
    assert meaning.check_claim("Jonas promised to drive the user to the airport.", said) == (
        "role guard: turn 1 has the user before 'promised' and Jonas after it; the claim swaps them")
    moved = meaning.check_claim("Bolt is a vegetarian.",
                                [("turn 1", "I'm vegetarian."), ("turn 2", "My dog is called Bolt.")])
    assert moved == ("role guard: turn 1 says 'vegetarian' of the user ('I'm vegetarian'); "
                     "the claim says it of Bolt")
    # a name the user gives as their own is the user
    assert meaning.check_claim("Maya lives in Lisbon.",
                               [("t", "Hi! I'm Maya. I live in Lisbon.")]) is None


@pytest.mark.parametrize(("said", "claim"), [
    ("I want to learn the cello.", "The user learns the cello."),
    ("I might move to Porto.", "The user will move to Porto."),
    ("I used to live in Berlin.", "The user lives in Berlin."),
    ("I plan to sell the van.", "The user sells the van."),
])
def test_modality_and_time_cannot_change(said: str, claim: str) -> None:
    why = meaning.check_claim(claim, [("t", said)])
    assert why is not None and why.startswith("modality guard:")


def test_statements_only() -> None:
    for fragment in ("Hello", "Hello!", "## My week", "My week", "The user's hobbies", "Maya"):
        assert (meaning.statement_problem(fragment) or "").startswith("statement guard:"), fragment
    for fact in ("The user lives in Lisbon.", "Saffron likes basking under her lamp.",
                 "The user had toast for breakfast.", "The user is Maya."):
        assert meaning.statement_problem(fact) is None, fact


def test_duplicates_need_the_same_meaning() -> None:
    pairs, vetoed = duplicates.duplicate_pairs([
        ("m_1", "The user does not eat meat."), ("m_2", "The user eats meat."),
        ("m_3", "I don't eat meat."), ("m_4", "Bolt is vegetarian."),
        ("m_5", "The user is vegetarian."),
    ])
    assert pairs == [("m_3", "m_1", 1.0)]
    assert {(d, k) for d, k, _ in vetoed} == {("m_2", "m_1"), ("m_2", "m_3"), ("m_5", "m_4")}


# -- the judges -----------------------------------------------------------------------------


def test_merge_gate_refuses_a_flip_and_a_lost_source() -> None:
    facts = _facts("I don't eat meat, only fish.", "The user eats fish.", "The kitchen tap leaks.")
    res = gates.check("merge", facts, {"merge": [
        {"intoId": "m_1", "fromIds": ["m_2"], "mergedText": "The user eats meat and fish.",
         "reason": "diet"},
        {"intoId": "m_3", "fromIds": ["m_2"], "mergedText": "The kitchen tap leaks.",
         "reason": "x"},
    ]}, RetentionPolicy(), now=NOW)
    first, second = res.in_order
    assert first.rejection_reason == (
        "polarity guard: m_1 negates 'eat meat' (don't); the merged text states it")
    assert (second.rejection_reason or "").startswith("completeness guard: the merged text loses m_2's")
    ok = gates.check("merge", facts, {"merge": [{
        "intoId": "m_1", "fromIds": ["m_2"], "reason": "diet",
        "mergedText": "The user doesn't eat meat, only fish; the user eats fish."}]},
        RetentionPolicy(), now=NOW)
    assert ok.accepted


def test_dedupe_gate_and_backstop_keep_opposite_facts_and_the_fuller_one() -> None:
    facts = _facts("The user does not eat meat.", "The user eats meat.",
                   "The user keeps a bearded dragon called Saffron.", "The user keeps a bearded dragon.")
    res = gates.check("dedupe", facts, {"drop": [
        {"itemId": "m_2", "duplicateOf": "m_1", "reason": "same"},
        {"itemId": "m_3", "duplicateOf": "m_4", "reason": "same"},
    ]}, RetentionPolicy(), now=NOW)
    flip, fuller = res.in_order
    assert "polarity guard: m_1 negates 'eat meat' (not); m_2 states it" in (flip.rejection_reason or "")
    assert "keeper guard: m_3 says more than m_4" in (fuller.rejection_reason or "")
    backstop = rules.duplicate_rule(facts, RetentionPolicy())
    assert [(m.item_id, m.refs["duplicateOf"]) for m in backstop] == [("m_4", "m_3")]


def test_encoder_evidence_resolves_yes_no_answers() -> None:
    turns = [Turn(1, "assistant", "Do you eat meat?", NOW), Turn(2, "user", "No.", NOW)]
    ev = evidence(turns)
    assert "Do you eat meat?" not in ev
    labels = ["a", "b"][: len(ev)]
    assert (check_fact("The user eats meat.", ev, labels=labels) or "").startswith("polarity guard")
    assert check_fact("The user doesn't eat meat.", ev, labels=labels) is None
    unanswered = evidence([Turn(1, "assistant", "Do you eat meat?", NOW),
                           Turn(2, "user", "Why do you ask?", NOW)])
    assert check_fact("The user eats meat.", unanswered) is not None


def test_encoder_refuses_fragments_moved_properties_and_same_batch_copies(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        store.add_turn("user", "Hello! I'm vegetarian and my dog is called Bolt.")
        model = FakeModel([{"facts": [
            {"text": "Hello", "category": "identity", "turn": 1},
            {"text": "Bolt is a vegetarian.", "category": "context", "turn": 1},
            {"text": "The user is vegetarian.", "category": "preferences", "turn": 1},
            {"text": "The user is vegetarian.", "category": "preferences", "turn": 1},
        ]}])
        result = Encoder(store, model).encode_new_turns()
        assert [f.text for f in result.accepted] == ["The user is vegetarian."]
        reasons = [r for _, r in result.rejected]
        assert reasons[0].startswith("statement guard:")
        assert reasons[1].startswith("role guard: turn 1 says 'vegetarian' of the user")
        assert reasons[2].startswith("same fact as proposal 3")


def test_reaudit_and_sweep_see_a_flip(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as store:
        store.add_turn("user", "I don't eat meat.")
        facts = audit.meaning_sweep(
            [Fact("m_1", "human", "The user eats meat.", "preferences", 1, NOW, NOW, True),
             Fact("m_2", "human", "The user doesn't eat meat.", "preferences", 1, NOW, NOW, True)],
            store.turns())
        assert [fid for fid, _ in facts.problems] == ["m_1"]
        trace = audit.traceability(
            [Fact("m_2", "human", "The user doesn't eat meat.", "preferences", 1, NOW, NOW, True)],
            ["I don't eat meat."])
        assert trace.problems == ()


def test_wake_scores_meaning_not_words() -> None:
    reply = "I'm a person named Bolt. I'm a vegetarian. I'm a person named Bolt."
    score, why = answer_score("Bolt is a vegetarian.", reply)
    assert score == 0.0 and (why or "").startswith("role guard:")
    assert answer_score("The user lives in Lisbon.", "You live in Lisbon.") == (1.0, None)
    assert answer_score("The user does not eat meat.", "You eat meat.")[0] == 0.0
    q = template_question(Fact("m_1", "human", "The user doesn't eat meat or fish at home.",
                               "preferences", 1, NOW, NOW, True))
    assert "don't" not in q and "meat" not in q and q.endswith("?")


def test_reaudit_finds_a_flipped_merge_and_an_opposite_drop(tmp_path: Path) -> None:
    """A row the gate would refuse, written straight to the store, is caught from the database."""
    from nocturne_desktop.core.types import FactDraft, Mutation

    with Store(tmp_path / "r.db") as store:
        a = store.append("scratch", FactDraft("I don't eat meat, only fish.", "context", None, NOW))
        b = store.append("scratch", FactDraft("The user eats fish.", "context", None, NOW))
        c = store.append("scratch", FactDraft("The user does not drive.", "context", None, NOW))
        d = store.append("scratch", FactDraft("The user drives.", "context", None, NOW))
        sid = store.begin_sleep(RetentionPolicy().model_dump() | {"evaluatedAt": NOW})
        store.snapshot("consolidation:start", sleep_id=sid)
        store.commit_pass([Mutation(
            pass_name="merge", kind="merge", item_id=a.id, accepted=True, reason="diet",
            decided_by="model", refs={"fromIds": [b.id], "mergedText": "The user eats meat and fish.",
                                      "block": "scratch"})], label="pass:merge:after", sleep_id=sid)
        store.commit_pass([Mutation(
            pass_name="dedupe", kind="drop", item_id=d.id, accepted=True, reason="same",
            decided_by="model", refs={"duplicateOf": c.id})], label="pass:dedupe:after", sleep_id=sid)
        _, findings = audit.reaudit(store, sid)
        problems = {f.kind: f.problem for f in findings}
        assert problems["merge"] == (
            f"polarity guard: {a.id} negates 'eat meat' (don't); the merged text states it")
        assert problems["drop"].startswith(f"polarity guard: {c.id} negates 'drive'")


def test_an_opposite_fact_does_not_hold_a_forgotten_one() -> None:
    from nocturne_desktop.core.checks.quiz import closest_active

    facts = _facts("The user does not eat meat.", "The user eats meat at home on Sundays.")
    assert closest_active(facts[:1], "The user eats meat.") is None
    assert closest_active(facts, "The user eats meat.") == ("m_2", 1.0)
