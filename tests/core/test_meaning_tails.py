"""The meaning guards' tails (S-MEAN-2, -1, -3) and the Wake scorer on paraphrases: each case
here was judged wrongly by the guards before these rules (numbers bound to a neighbouring
word, "never" before an auxiliary, "only X" after a negation, a merge exchanging tense)."""

from __future__ import annotations

import pytest

from nocturne_desktop.core.chat.encoder import check_fact
from nocturne_desktop.core.checks.quiz import answer_score
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates
from nocturne_desktop.core.types import Fact

NOW = 1_800_000_000.0


def test_a_number_binds_to_its_unit_past_an_inserted_phrase() -> None:
    said = "I ran it last May in 3 hours 10 minutes, a record."
    assert meaning.check_claim("The user ran it in 3 hours 10 minutes.", [("t", said)]) is None
    assert meaning.check_claim("The user ran it in 3 hours 10 minutes last May.",
                               [("t", said)]) is None
    assert meaning.check_claim("The user ran it last May in 10 hours 3 minutes.",
                               [("t", said)]) is not None
    assert meaning.check_claim("The user ran it last May in 3 minutes 10 hours.",
                               [("t", said)]) is not None


def test_may_the_month_is_not_a_modal() -> None:
    assert meaning.check_claim("The user moved to Faro last May.",
                               [("t", "I moved to Faro last May.")]) is None
    assert meaning.check_claim("The user will move to Faro.",
                               [("t", "I may move to Faro.")]) is not None


@pytest.mark.parametrize("said", ["I've never been to Peru.", "I have never been to Peru.",
                                  "I haven't been to Peru."])
def test_never_before_an_auxiliary_negates_the_place(said: str) -> None:
    why = check_fact("The user has been to Peru.", [said])
    assert why is not None and why.startswith("polarity guard") and "Peru" in why
    assert check_fact("The user has been to Peru.", ["I've been to Peru twice."]) is None


def test_only_after_a_negation_states_the_contrast() -> None:
    said = ["I don't eat pork, only chicken."]
    assert check_fact("The user eats chicken.", said) is None
    assert check_fact("The user does not eat pork.", said) is None
    assert check_fact("The user eats pork.", said) is not None
    assert check_fact("The user doesn't eat chicken.", said) is not None


def _merge(merged: str, *texts: str) -> str | None:
    facts = [Fact(f"m_{i}", "scratch", t, "context", i, NOW, NOW, True)
             for i, t in enumerate(texts, 1)]
    result = gates.check("merge", facts, {"merge": [{
        "intoId": "m_1", "fromIds": [f.id for f in facts[1:]], "mergedText": merged,
        "reason": "related"}]}, RetentionPolicy(), now=NOW)
    (m,) = result.in_order
    return None if m.accepted else m.rejection_reason


def test_a_merge_may_not_exchange_tense_and_modality_between_its_sources() -> None:
    done, wished = "The user finished a Python course last year.", \
        "The user wants to start a cooking course."
    assert _merge("The user finished a Python course last year and wants to start a cooking "
                  "course.", done, wished) is None
    for swapped in ("The user wants to finish a Python course and started a cooking course "
                    "last year.",
                    "The user finished a cooking course last year and wants to start a Python "
                    "course."):
        why = _merge(swapped, done, wished)
        assert why is not None, swapped


@pytest.mark.parametrize("reply", [
    "Your daughter? She's 7 years old.",
    "She's 7 years old.",
    "Your daughter is 7 years old.",
])
def test_the_scorer_accepts_a_paraphrase_with_the_facts_key_content(reply: str) -> None:
    question = "How old is the user's daughter?"
    assert answer_score("The user's daughter is 7.", reply, (), question) == (1.0, None)


@pytest.mark.parametrize("reply", [
    "Your daughter is not 7.",
    "Your daughter is 8.",
    "She's 17 years old.",
    "I don't have that in memory.",
])
def test_the_scorer_rejects_a_reply_that_negates_or_changes_the_fact(reply: str) -> None:
    score, _ = answer_score("The user's daughter is 7.", reply, (),
                            "How old is the user's daughter?")
    assert score == 0.0
