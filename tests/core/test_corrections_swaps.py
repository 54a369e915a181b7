"""Corrections said without a cue that names the old value (S-WORDS-1): a value swapped around
what the two facts share, an occupation taken up, a commute or a system changed, an amount that
moved, a subject left out ("Sold the Focus"), a dash between two statements. Written for these
rules, in other words than the corpus's; the controls beside them must stay unflagged."""

from __future__ import annotations

import pytest

from nocturne_desktop.core.judges.conflicts import changes
from nocturne_desktop.core.sleep import rules
from tests.core.pairs import fact, finds, found


# each was missed on the code before these rules (no candidate at all)
@pytest.mark.parametrize(("old", "new"), [
    ("I take my tea with sugar.", "I take my tea with honey these days."),
    ("The user's kitchen is yellow.", "The user repainted the kitchen grey."),
    ("My hair is short.", "I dyed my hair green."),
    ("I'm an accountant.", "I retrained as an electrician last year."),
    ("The user is a junior analyst.", "The user got promoted to senior consultant."),
    ("I'm a baker.", "I became a chef at the hotel."),
    ("I go to work by bus.", "These days I cycle in."),
    ("The user runs Ubuntu.", "The user switched to macOS."),
    ("I work part-time at the pharmacy.", "I'm full-time at the pharmacy now."),
    ("My water bill is 30 a month.", "The water company put my bill up to 36 a month."),
    ("I sleep 6 hours a night.", "I'm down to 5 hours a night now."),
    ("I swim twice a week.", "I only swim once a week now."),
    ("I start work at 8.", "I start work at 9 these days."),
    ("I drive a Volvo.", "Sold the Volvo last month."),
    ("I have a moustache.", "Shaved the moustache off for the photos."),
    ("My favourite month is June.", "October is my favourite month now."),
    ("My fiancee is Noor.", "Noor is my wife now."),
    ("I have a tortoise called Shelly.", "Shelly died in the winter."),
    ("I take 20mg of citalopram.", "The GP upped my citalopram to 40mg."),
    ("I don't eat sushi.", "I eat sushi every week now."),
    ("I'm a librarian.", "I retired from librarianship in June."),
    ("I have a mortgage with Leeds Building Society.",
     "We refinanced from Leeds Building Society to Santander."),
])
def test_a_swapped_value_is_a_correction(old: str, new: str) -> None:
    assert found(old, new) is not None, (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I take my tea with sugar.", "I take my tea with honey these days."),
    ("I'm an accountant.", "I retrained as an electrician last year."),
    ("My water bill is 30 a month.", "The water company put my bill up to 36 a month."),
    ("I start work at 8.", "I start work at 9 these days."),
    ("I drive a Volvo.", "Sold the Volvo last month."),
    ("I go to work by bus.", "These days I cycle in."),
])
def test_the_finder_reaches_the_older_fact(old: str, new: str) -> None:
    assert finds(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I take my tea with sugar.", "I had my tea with honey this morning."),  # an event
    ("I take my tea with sugar.", "I also like honey in my tea."),  # an addition
    ("My hair is short.", "My sister dyed her hair green."),  # another person
    ("I'm an accountant.", "My brother became an electrician."),
    ("I'm a mother.", "I became a grandmother last year."),  # kin, not an occupation
    ("I'm a teacher.", "I became a member of the tennis club."),
    ("My partner is Sam.", "Sam got promoted to manager!"),  # news of Sam, not of the user
    ("I use an Android phone.", "I bought my son an iPhone."),
    ("I go to work by bus.", "I walk the dog every morning now."),  # not the commute
    ("The user runs Ubuntu.", "The user's daughter switched to macOS."),
    ("My favourite film is Alien.", "My favourite book is Dune now."),  # another favourite
    ("I live in Leeds.", "I now live in a flat in Leeds."),  # a refinement
    ("I work for the council in the planning department.", "I love my job."),
    ("I married Tom in May.", "I might move to Bath."),  # a plan
    ("I drive a Volvo.", "I might sell the Volvo next year."),
    ("I swim twice a week.", "I used to swim every day."),  # history
    ("I grow kale and beans.", "I no longer eat kale."),  # what ended is not the old value
    # found by the memory benchmark's conversations (controls the rules never saw)
    ("Tom works as a nurse at the Royal Infirmary.", "Tom got promoted to senior nurse now."),
    ("Tom dislikes coriander in food.", "Tom came back from the trip to Lisbon and loved the food."),
    ("Tom went to a jazz night with Ana.", "Tom now uses no phone after ten at night."),
    ("Tom teaches at a primary school.", "Tom and Jo have been friends since primary school."),
])
def test_what_is_not_a_swap_is_left_alone(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))


def test_may_the_month_is_no_plan_and_a_planning_department_no_plan() -> None:
    # "in May" read as the modal "may" made every change said with the month tentative
    assert not changes.read("The user married Clara in May.").clauses[0].tentative
    assert changes.read("I might sell the car.").clauses[0].tentative
    assert not changes.read("I work in the planning department.").tentative
    assert changes.read("I'm planning to move to Bath.").tentative


def test_once_a_week_is_a_count_not_the_past() -> None:
    assert not changes.read("I only swim once a week now.").clauses[0].past
    assert changes.read("I once lived in Rome.").past


def test_a_subject_left_out_is_the_user() -> None:
    assert changes.read("Sold the Volvo last month.").who.who == ("user",)
    assert changes.read("Down to 70 kg after the summer.").who.who == ("user",)
    assert changes.read("Alfred sold the Volvo.").who.who == ("alfr",)


def test_a_dash_ends_a_statement() -> None:
    whole = changes.read("First week at the new job done \u2014 I left Acme on Friday.")
    assert len(whole.clauses) == 2


def test_the_model_free_rule_supersedes_a_swap_that_says_nothing_else() -> None:
    old, new = fact(1, "I take my tea with sugar."), fact(2, "I take my tea with honey now.")
    assert [m.item_id for m in rules.reconcile_rule([old, new])] == ["m_1"]
    # an older fact that says more than the swapped value is left to the model
    more = fact(3, "I take my tea with sugar and read the paper every morning at the cafe.")
    newer = fact(4, "I take my tea with honey now.")
    assert rules.reconcile_rule([more, newer]) == []
