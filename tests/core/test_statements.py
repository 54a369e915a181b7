"""Honest facts (S-WORDS-2): one statement guard for every fact, a predicate fragment completed
only from the user's own words, categories checked by a rule that says what it corrected, and
the correction probe's verdict in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop.core.chat.encoder import Encoder, check_fact
from nocturne_desktop.core.checks.quiz import CorrectionProbe
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.judges.categories import category_problem, category_rule
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import FakeModel


@pytest.mark.parametrize("text", [
    "Santa Maria hospital", "Santa Maria Hospital", "New York", "Maria Lopez",
    "18 years old", "The user's daughter", "Hello there!", "## Notes",
])
def test_fragments_are_not_facts(text: str) -> None:
    why = meaning.statement_problem(text)
    assert why is not None and why.startswith("statement guard")
    assert check_fact(text, [f"I said {text}."]) is not None


@pytest.mark.parametrize("text", [
    "The user works at Santa Maria hospital.", "Santa Maria Hospital is where the user works.",
    "Saffron likes apples.", "Jonas promised to call.", "The user is 18 years old.",
    "I run 5 km.", "Mia turned 7.", "Lives in Lisbon.",
])
def test_sentences_are_facts(text: str) -> None:
    assert meaning.statement_problem(text) is None


def test_a_predicate_fragment_is_completed_only_from_the_users_words() -> None:
    assert meaning.complete_predicate("18 years old", ["I'm 18 years old."]) == \
        "The user is 18 years old"
    assert meaning.complete_predicate("18 years old", ["My sister is 18 years old."]) == \
        "The user's sister is 18 years old"
    assert meaning.complete_predicate("18 years old", ["She said 18 years old."]) is None
    assert meaning.complete_predicate("18 years", ["I'm 18 years old."]) is None  # not whole
    assert meaning.complete_predicate("The user is 18.", ["I'm 18."]) is None  # a statement


def test_the_encoder_completes_a_fragment_and_says_so(tmp_path: Path) -> None:
    reply = {"facts": [{"text": "18 years old", "category": "identity", "turn": 1},
                       {"text": "Santa Maria hospital", "category": "commitments", "turn": 1}]}
    with Store(tmp_path / "n.db") as store:
        store.add_turn("user", "I'm 18 years old and I work at Santa Maria hospital.")
        result = Encoder(store, FakeModel(replies=[reply])).encode_new_turns()
        assert [f.text for f in result.accepted] == ["The user is 18 years old"]
        (refused,) = result.rejected
        assert refused[1].startswith("statement guard: 'Santa Maria hospital'")
        (row,) = [r.mutation for r in store.mutations(pass_name="encoder") if r.mutation.accepted]
        assert row.refs["corrected"]["text"].startswith(
            "statement rule: the fragment '18 years old' was completed from turn 1")
        assert "statement rule" in row.reason


@pytest.mark.parametrize(("text", "proposed", "want"), [
    ("My favourite colour is blue.", "commitments", "preferences"),
    ("My favourite colour is now green, no longer blue.", "identity", "preferences"),
    ("The user loves horror films.", "context", "preferences"),
    ("The user works as a nurse.", "commitments", "identity"),
    ("The user went to Madrid last weekend.", "commitments", "event"),
    ("The user walks to work most days.", "commitments", "context"),
])
def test_the_category_rule_corrects_and_says_which_rule(text: str, proposed: str,
                                                         want: str) -> None:
    got, why = category_rule(text, proposed)
    assert got == want
    assert why is not None and why.startswith(f"category rule: {proposed!r} corrected to {want!r}")


@pytest.mark.parametrize(("text", "category"), [
    ("The user promised to bake her favourite cake on Friday.", "commitments"),
    ("The user has a dentist appointment next Tuesday.", "commitments"),
    ("The user will call the bank tomorrow.", "commitments"),
    ("The user prefers tea.", "preferences"),
    ("The user lives in Porto.", "identity"),
])
def test_the_category_rule_leaves_a_fitting_category(text: str, category: str) -> None:
    assert category_rule(text, category) == (category, None)


def test_an_unknown_category_is_refused() -> None:
    assert category_problem("feelings") is not None and category_problem("event") is None


def test_the_encoder_files_a_preference_as_a_preference_and_logs_the_rule(tmp_path: Path) -> None:
    reply = {"facts": [{"text": "My favourite colour is blue.", "category": "commitments",
                        "turn": 1}]}
    with Store(tmp_path / "n.db") as store:
        store.add_turn("user", "My favourite colour is blue.")
        (fact,) = Encoder(store, FakeModel(replies=[reply])).encode_new_turns().accepted
        assert fact.category == "preferences"
        (row,) = [r.mutation for r in store.mutations(pass_name="encoder")]
        assert row.refs["proposal"]["category"] == "commitments"
        assert "a preference word ('favourite') makes a preference" in row.refs["corrected"][
            "category"]


def test_the_correction_probes_verdict_is_one_line() -> None:
    probe = CorrectionProbe("m_1", "I live in Lisbon.", "m_3", "I moved to Porto.",
                            "Where does the user live?", "You live in Lisbon.", True, False, True,
                            False, ("porto",))
    assert probe.verdict == ("failed: asked about m_1: the answer does not carry the current "
                             "value (porto); the answer presents the old value as current")
    ok = CorrectionProbe("m_1", "I live in Lisbon.", "m_3", "I moved to Porto.", "Where?",
                         "In Porto.", True, True, False, True, ("porto",))
    assert ok.verdict.startswith("passed: asked about m_1 (superseded by m_3)")
