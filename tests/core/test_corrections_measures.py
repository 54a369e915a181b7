"""Corrections that give a measure a person has one value of another value, with or without a
word of change (S-WORDS-1, :mod:`.conflicts.measures`), and the readings added beside them:
an end said plainly ("the band split", "didn't renew", "haven't been since"), a clause led by
a thing ("…, the broadband is gone"), a note led by an -ing verb, "hit 9" as an age, and the
newer fact saying things are back as they were. Written for these rules, in other words than
the corpus's; the controls beside them must stay unflagged."""

from __future__ import annotations

import pytest

from tests.core.pairs import finds, found, superseded


# on the code before these readings, 17 of these 21 fail (the pair test or the finder); the
# mortgage, the hens, the grandkids and the choir were read there already
@pytest.mark.parametrize(("old", "new"), [
    ("My mortgage is 1,400 a month.", "remortgaged, so mortgage payments are 1,210 from now"),
    ("The user earns 48k a year.", "new contract sorted, salary's 55k"),
    ("I have about 6k saved for a car.", "car savings pot is at 9,500 after payday"),
    ("I weigh 14 stone.", "scales said 13 stone this morning, finally"),
    ("The user's day rate is 400.", "charging clients a rate of 450 since the summer"),
    ("My student loan balance is 27,000.", "loan statement came, balance of 24,300 left"),
    ("The user gets 6 hours of sleep a night.", "baby sleeps through so I get 8 hours a night"),
    ("We keep nine hens.", "a stoat got in, so we're down to five hens"),
    ("I have two grandkids.", "my youngest had twins, so that's four grandkids now"),
    ("User's cat Pip is 11.", "Pip hit 12 on Friday, still climbing the curtains"),
    ("Our pension is 1,900 a month.", "pension update: 1,960 with the uprating"),
    ("I'm a member of the tennis club.", "Didn't renew at the tennis club, the fees went silly."),
    ("I sing in a gospel choir.", "the gospel choir split up over the summer"),
    ("The user's internet provider is Sky.", "fibre man came round, sky is gone at last"),
    ("I swim at the lido every morning.", "shoulder's bad so the swimming's on hold for now"),
    ("The user goes to yoga on Wednesdays.", "work got busy, haven't been to yoga since march"),
    ("wearing hearing aids in both ears", "My left hearing aid died so I got a new pair."),
    ("I'm a keen runner.", "lost interest in running after the injury, cycling now"),
    ("The user drives a Honda Civic.", "The Civic has been written off after the crash."),
    ("I sing with the church choir.", "stepped down from the church choir at Easter"),
    ("I drink green tea every morning.", "haven't had green tea in months, it's all coffee"),
])
def test_a_measure_said_again_or_an_end_said_plainly_is_a_change(old: str, new: str) -> None:
    c = found(old, new)
    assert c is not None and c.rule == "change", (old, new, c)
    assert finds(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("My rent is 975 a month.", "rent went out today, 1,020 a month now"),
    ("I weigh 88 kg.", "weighed in at 83 kg this morning"),
    ("We keep nine hens.", "a stoat got in, so we're down to five hens"),
])
def test_the_rule_supersedes_a_measure_said_again(old: str, new: str) -> None:
    assert superseded(old, new)


# controls: not a new value of the older fact's measure, or nothing that ended (the paramedic
# back on the night crew was a false alarm on the code before)
@pytest.mark.parametrize(("old", "new"), [
    ("I weigh 88 kg.", "my target weight is 80 kg by summer"),
    ("I weigh 88 kg.", "my rucksack weighed 12 kg on the hike"),
    ("I weigh 88 kg.", "I lost 3 kg over Christmas somehow... no wait, gained"),
    ("My rent is 975 a month.", "my sister's rent is 1,300, London is mad"),
    ("My rent is 975 a month.", "I used to pay a rent of 700 in Leeds"),
    ("The user earns 48k a year.", "Tom earns 60k and never stops telling us"),
    ("I sleep 7 hours a night.", "I slept 4 hours last night, the storm"),
    ("We keep nine hens.", "we might get another two hens in spring"),
    ("I save 200 a month.", "I spent 200 on shoes today"),
    ("I'm a paramedic on the night crew.", "two weeks covering days, so glad to be back on the night crew"),
    ("I take an antihistamine every day.", "hay fever was bad last week, back to normal now"),
    ("I work four days a week at the bakery.", "did an extra shift this week, five days at the bakery"),
    ("I sing in a gospel choir.", "our gospel choir sang at a wedding on Saturday"),
    ("I go to yoga on Wednesdays.", "haven't missed a yoga class since march"),
    ("I go fishing on Sundays.", "my brother has not been fishing in years"),
    ("I drive a Honda Civic.", "my neighbour's car got stolen last night"),
])
def test_what_is_no_new_value_or_end_is_left_alone(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))
    assert not superseded(old, new)
