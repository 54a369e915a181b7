"""Natural corrections (S-WORDS-1): change statements as people say them are found in first and
third person across blocks and superseded without a model; the controls (another person,
"used to", additions, trips, plans, events) are left alone; the labelled corpus holds its
thresholds on the part it was tuned on and on the whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_conflicts
from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, gates, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, FactDraft
from tests.core.pairs import fact, superseded

NOW = 1_800_000_000.0
POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=120)




# the issue's examples: each failed on the code before this change (0 candidates, no supersede)
@pytest.mark.parametrize(("old", "new"), [
    ("My favourite colour is blue.", "My favourite colour is now green, no longer blue."),
    ("I live in Lisbon.", "I moved from Lisbon to Porto."),
    ("I live in Berlin.", "I moved from Berlin to Hamburg."),
    ("I work at Acme.", "I'm at Initech now, I left Acme."),
    ("I use Vim.", "I switched my editor from Vim to Emacs."),
    ("We have a Roomba.", "We replaced the Roomba with a Dyson."),
    ("My son is 4.", "My son turned 5."),
    ("I run 5 km every morning.", "I run 8 km now instead of 5."),
    ("I have two kids.", "I have three kids now."),
    ("I'm vegan.", "I'm not vegan any more."),
    ("I'm lactose intolerant.", "Turns out I'm not lactose intolerant after all."),
    ("My car is a Renault.", "My car is a Skoda now, not the Renault."),
    ("I sing in the choir.", "I quit the choir."),
    ("I coach football.", "I no longer coach football; I coach rugby now."),
    ("The user lives in Lisbon.", "The user moved from Lisbon to Porto."),
    ("The user's daughter is 7.", "The user's daughter turned 8."),
    ("The user owns a Honda.", "The user sold the Honda."),
])
def test_the_issues_corrections_are_superseded_without_a_model(old: str, new: str) -> None:
    c = conflicts.pair_conflict(fact(1, old), fact(2, new, "scratch"))
    assert c is not None and (c.older, c.newer) == ("m_1", "m_2")
    assert c.why and c.older_value
    assert superseded(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I live in Lisbon.", "My sister lives in Porto."),          # another person
    ("I'm vegan.", "My brother is not vegan."),
    ("The user smokes.", "The user's father stopped smoking."),
    ("I live in Porto.", "I used to live in Lisbon."),           # history
    ("I have a cat.", "I also got a dog."),                      # an addition
    ("I work at Acme.", "I also work at a bar on weekends."),
    ("I live in Berlin.", "I flew from Berlin to Hamburg for a meeting."),  # a trip
    ("I live in Lisbon.", "I'm moving to Berlin next year."),    # a plan
    ("I have a car.", "I might sell the car."),
    ("I drink coffee.", "I had tea instead of coffee this morning."),  # one morning
    ("I work in an office.", "I left the office at 6 today."),  # an event
    ("I work at Acme.", "I left my keys at work today."),
    ("I'm vegetarian.", "I'm vegetarian but my kids eat meat."),
    ("I eat meat.", "I don't eat meat on Fridays."),             # a refinement
    ("I quit smoking.", "I quit sugar too."),
    ("I sold my bike.", "I sold my old sofa as well."),
])
def test_controls_are_not_corrections(old: str, new: str) -> None:
    assert conflicts.pair_conflict(fact(1, old), fact(2, new, "scratch")) is None
    assert not superseded(old, new)


# what the first held-out batch missed and a rule can read from the words (each failed before)
@pytest.mark.parametrize(("old", "new"), [
    ("I live in Glasgow.", "We packed up and moved down to Manchester."),      # elided subject
    ("My favourite sport is rugby.", "Honestly my favourite sport is cricket now."),
    ("The user works at Nokia.",
     "The user handed in their notice at Nokia and starts at Ericsson on Monday."),
    ("The user's girlfriend is Nora.", "The user and Nora broke up; the user is seeing Ines now."),
    ("I'm engaged to Sara.", "Sara and I called off the wedding."),
    ("I'm in my final year at Leeds.", "I've finished at Leeds, so I'm not a student now."),
    ("My mortgage is 1200 a month.", "My mortgage went from 1200 to 1350 a month."),
    ("My landlord is Mr Okafor.", "Mr Okafor sold the flat, so my landlord is Mrs Chen now."),
    ("The user's supervisor is Dr Haas.", "The user's new supervisor is Dr Klein."),
    ("The user eats dairy.", "The user is dairy-free now."),
    ("My son goes to Oak Park nursery.", "My son moved nurseries; he's at Little Acorns now."),
    ("I drink almond milk.", "I've gone over to oat milk instead of almond."),
    ("I work nights.", "I don't work nights any more, I'm on days now."),
])
def test_phrasings_the_first_held_out_batch_missed_are_read(old: str, new: str) -> None:
    assert conflicts.pair_conflict(fact(1, old), fact(2, new, "scratch")) is not None
    assert superseded(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I live in Glasgow.", "My sister packed up and moved to Leeds."),
    ("I'm engaged to Sara.", "Sara and I called off the trip to Rome."),
    ("My partner is Sam.", "Sam and I split the bill."),
    ("I work at Acme.", "I finished at 6 today."),
    ("My rent is 900.", "I went from Paris to Rome by train."),
    ("My boss is Maria.", "Maria's new boss is Carlos."),
    ("My doctor is Dr Patel.", "My dentist is Dr Jones now."),
    ("I work nights.", "I don't work Sundays any more."),
    ("I live in Glasgow.", "Honestly I think my brother lives in Leeds now."),
    ("We have a sofa.", "We moved boxes all day."),
    ("I drink almond milk.", "My sister has gone over to oat milk instead of almond."),
    ("I live in Bath.", "I lived in Bristol for a year before Bath."),        # history
    ("My daughter is at Hillside school.", "My daughter's friend changed schools."),
])
def test_the_same_phrasings_about_something_else_are_not_corrections(old: str, new: str) -> None:
    assert conflicts.pair_conflict(fact(1, old), fact(2, new, "scratch")) is None
    assert not superseded(old, new)


def test_the_older_fact_says_nothing_else_or_the_model_decides() -> None:
    """A compound older fact loses a clause the newer does not replace: no model-free supersede."""
    old = "I work at Acme and I play chess on Sundays."
    assert conflicts.pair_conflict(fact(1, old), fact(2, "I quit Acme.")) is not None
    assert not superseded(old, "I quit Acme.")


def test_the_gate_accepts_a_models_supersede_of_a_natural_correction() -> None:
    facts = [fact(1, "I live in Lisbon."), fact(2, "I moved from Lisbon to Porto.", "scratch")]
    result = gates.check("reconcile", facts, {"supersede": [
        {"oldId": "m_1", "newId": "m_2", "reason": "the user moved"}]}, POLICY, now=NOW)
    (m,) = result.in_order
    assert m.accepted, m.rejection_reason


def test_change_statements_are_found_among_many_facts_in_linear_time() -> None:
    filler = bench_conflicts.synthetic(3000)
    old = Fact("m_9001", "human", "I drive an old Ford.", "context", 9001, 9001.0, 9001.0)
    new = Fact("m_9002", "scratch", "I finally got rid of the old Ford.", "context", 9002,
               9002.0, 9002.0)
    found = conflicts.find_conflicts([*filler, old, new])
    assert any((c.older, c.newer) == ("m_9001", "m_9002") for c in found)


def test_rules_only_sleep_supersedes_a_promoted_fact_by_a_correction_in_scratch(
        tmp_path: Path) -> None:
    with Store(tmp_path / "n.db", clock=lambda: NOW) as s:
        old = s.append("human", FactDraft("My favourite colour is blue.", "preferences", 1,
                                          NOW - 900))
        s.append("human", FactDraft("I live in Lisbon.", "identity", 2, NOW - 800))
        new = s.append("scratch", FactDraft("My favourite colour is now green, no longer blue.",
                                            "preferences", 7, NOW - 100))
        events = list(run_sleep(s, None, POLICY, now=NOW))
        done = {e.pass_name: e for e in events if e.kind is SleepEventKind.PASS_DONE}
        assert done["reconcile"].changes.deactivated == (old.id,)  # type: ignore[union-attr]
        got = s.get(old.id)
        assert got is not None and got.superseded_by == new.id
        assert "I live in Lisbon." in {f.text for f in s.active_facts()}


def test_the_corpus_is_large_varied_and_split() -> None:
    pairs = bench_conflicts.correction_pairs()
    assert len(pairs) >= 300
    assert sum(not p["conflict"] for p in pairs) >= 100
    assert {p["part"] for p in pairs} == {"tune", "held-out"}
    held = [p for p in pairs if p["part"] == "held-out"]
    assert len(held) >= 240 and sum(not p["conflict"] for p in held) >= 80
    # the earlier held-out batches were read and tuned on: they are part of the tuned part now
    assert {p.get("batch") for p in held} == {"held-out-9"}
    tuned = [p for p in pairs if p["part"] == "tune"]
    assert [sum(p.get("was") == w for p in tuned) for w in (
        "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5", "held-out-6",
        "held-out-7", "held-out-8", "targeted")] == [143, 134, 150, 150, 240, 240, 240, 240, 320]
    third = [p for p in pairs if str(p["a"]).startswith(("The user", "User"))]
    first = [p for p in pairs if str(p["a"]).startswith(("I ", "I'", "My ", "We "))]
    assert len(third) >= 80 and len(first) >= 150


def test_the_corpus_holds_its_thresholds() -> None:
    figures = bench_conflicts.corrections()
    # precision >= 0.98 where the rules were tuned; recall there and on the whole is guarded
    # against falling below what it is, not tuned up to a target. The blind batch held-out-9
    # (written before this round's rules; first run on the rules before them: recall 0.19,
    # precision 0.94; 0.31 and 0.96 at the round's end, unread) is guarded as measured:
    # docs/benchmarks.md.
    floors = {"tune": (0.77, 0.66), "all": (0.72, 0.61), "held-out": (0.31, 0.21),
              "formerly held-out": (0.97, 0.97), "formerly held-out-2": (0.99, 0.99),
              "formerly held-out-3": (0.83, 0.72), "formerly held-out-4": (0.83, 0.73),
              "formerly held-out-5": (0.79, 0.65), "formerly held-out-6": (0.67, 0.48),
              "formerly held-out-7": (0.62, 0.48), "formerly held-out-8": (0.51, 0.3),
              "written for the readings": (0.64, 0.5)}
    least = {"held-out": 0.96}
    for part, (finder, rule) in floors.items():
        f = figures[part]
        bar = least.get(part, 0.98)
        assert float(f["precision"]) >= bar and float(f["recall"]) >= finder, (part, f)  # type: ignore[arg-type]
        assert float(f["rulePrecision"]) >= bar and float(f["ruleRecall"]) >= rule, (part, f)  # type: ignore[arg-type]


def test_the_earlier_labelled_set_keeps_its_figures() -> None:
    pr = bench_conflicts.precision_recall()
    assert pr["precision"] == 1.0 and float(pr["recall"]) >= 0.97, pr  # type: ignore[arg-type]
