"""Corrections that say the thing the older fact speaks of ended or moved on, in everyday words
(S-WORDS-1, :mod:`.conflicts.shifts`): "done with", "off the", "lapsed", "folded", "removed",
"put down", "-free", "moved to Tuesdays", "is off", a clause led by a verb or an opening word
("honestly the ..."), "plan" as a noun, "I'd say" as a hedge. Written for these rules, in other
words than the corpus's; the controls beside them must stay unflagged."""

from __future__ import annotations

import pytest

from tests.core.pairs import finds, found, superseded


# eight of these and both supersedes below fail on the code before the shift rule; the folded
# quartet, the pottery class and the gym were already found there (the swap and amount rules)
@pytest.mark.parametrize(("old", "new"), [
    ("The user is on the paleo diet.", "totally done with paleo, I missed bread too much"),
    ("I take sertraline every morning.", "I'm off the sertraline since the spring."),
    ("The user has a climbing wall membership.",
     "I let the climbing wall membership lapse over the winter."),
    ("I sing in a barbershop quartet.", "the barbershop quartet folded when our bass moved away"),
    ("The user wears a retainer at night.", "my retainer got removed at the orthodontist"),
    ("My knee is in a brace.", "knee brace is off, physio says I'm good"),
    ("The user chews nicotine gum.", "a whole year nicotine-free as of this week"),
    ("My pottery class is on Tuesday evenings.", "pottery class has moved to Friday mornings"),
    ("The user's gym membership costs 30 a month.",
     "The gym raised my membership to 38 a month."),
    ("I have an old tabby called Pickle.",
     "we had to put Pickle down last month, the house feels empty"),
    ("My hobby is knitting.", "honestly the knitting's fallen by the wayside since the baby"),
])
def test_an_ended_or_moved_on_thing_is_a_change(old: str, new: str) -> None:
    c = found(old, new)
    assert c is not None and c.rule == "change", (old, new, c)
    assert finds(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("The user is on the paleo diet.", "done with paleo for good"),
    ("I sing in a barbershop quartet.", "the barbershop quartet folded in the summer"),
])
def test_the_rule_supersedes_an_older_fact_that_says_nothing_else(old: str, new: str) -> None:
    assert superseded(old, new)


# controls: not a change of what the older fact says
@pytest.mark.parametrize(("old", "new"), [
    ("I work at the garden centre.", "I stopped at the garden centre for compost."),
    ("I live in Bath.", "I moved to a bigger flat in Bath."),
    ("I live in Bath.", "I now live in a terrace in Bath."),
    ("I grow tomatoes and basil.", "I no longer eat tomatoes."),
    ("I tutor French on Mondays.", "I still tutor French, just online now."),
    ("The user takes vitamin D.", "My husband's off the vitamin D, he hated the taste."),
    ("I'm on the phone plan with Vodafone.", "I might switch my phone plan next month."),
    ("I go to the pool on Fridays.", "I went to the pool with my niece."),
    ("My choir meets on Thursdays.", "I also joined a second choir that meets on Sundays."),
])
def test_what_did_not_end_or_move_is_left_alone(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))
    assert not superseded(old, new)
