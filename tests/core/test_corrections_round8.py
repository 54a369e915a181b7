"""Corrections and controls for the readings built on the eighth blind batch (S-WORDS-1):
providers named without their service, a stage of schooling begun, someone brought to live
with the user, parting said as "called it quits", a weekday said anew, a thing that "is done",
a note led by its verb ("Goes to …", "let the … lapse"), a compound's last word, a name put
right after "I misspoke", an age in months; and what lasts a while only, the same dose after a
change of brand, a band member's news, an accessory, "too many". Written for these readings in
other words than the corpus; the controls beside them must stay unflagged."""

from __future__ import annotations

import pytest

from tests.core.pairs import finds, found, superseded


# on the code before this stop, 10 of these 13 fail (the pair test or the finder); the dad
# moved in, the club night said anew and the kitten's age were read there already
@pytest.mark.parametrize(("old", "new"), [
    ("My mobile contract is with Vodafone.", "ported over to voxi last week, half the price"),
    ("Gas and electric are with EDF.", "we've been with octopus since march, the app is great"),
    ("The user's mortgage is with Santander.", "remortgaged with nationwide on a 5 year fix"),
    ("My son Oisín is in Year 2.", "oisin started year 3 this week, where does the time go"),
    ("Our youngest goes to playgroup two mornings a week.",
     "our youngest started reception this september"),
    ("My dad lives on his own in Swansea.", "we moved dad over to live with us after his fall"),
    ("The user's girlfriend is called Nadia.", "nadia and I called it a day last month, it's fine"),
    ("I swim with the masters club every Tuesday.", "masters club swim is on fridays now"),
    ("I sing in a ceilidh band called The Hoolies.", "The Hoolies is done, we played our last gig"),
    ("Subscribes to the Economist.", "let the economist subscription lapse, never read it"),
    ("Keeps three rabbits in a hutch in the garden.", "a fox got in, we lost all the rabbits"),
    ("User's husband is called Stefan.", "sorry I misspoke, my husband's name is Stephan with a ph"),
    ("The user's kitten Nala is ten weeks old.", "Nala turned one on Sunday!"),
])
def test_a_correction_these_readings_read(old: str, new: str) -> None:
    c = found(old, new)
    assert c is not None and c.rule == "change", (old, new, c)
    assert finds(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("My mobile contract is with Vodafone.", "ported over to voxi last week, half the price"),
    ("My dad lives on his own in Swansea.", "we moved dad over to live with us after his fall"),
])
def test_the_rule_supersedes_what_they_read(old: str, new: str) -> None:
    assert superseded(old, new)


# five of these were false alarms on the code before this stop: the library closed for a
# fortnight, the tills for the christmas rush, the same dose, the band's singer, the soup kitchen
@pytest.mark.parametrize(("old", "new"), [
    ("My mobile contract is with Vodafone.", "my daughter is with voxi, way cheaper"),
    ("I volunteer at the library on Thursdays.",
     "library's closed for a fortnight for the new carpets, for all of march"),
    ("I work on the cheese counter at Waitrose.",
     "they've put me on the tills for the christmas rush, back on cheese in january"),
    ("I take omeprazole every morning.",
     "pharmacy changed the make of my omeprazole, different box, same dose"),
    ("I play keys in a band called The Strays.", "the strays' singer quit, we're auditioning"),
    ("My son sleeps in a cot in our room.", "bought a big cot for his own room, moving him at 6 months"),
    ("I help at the soup kitchen on Mondays.", "soup kitchen's shut next monday for the bank holiday"),
    ("I keep two goats.", "we have too many goats for the paddock honestly, two is plenty"),
    ("My son is in Year 4.", "my son's friend started secondary school this year"),
])
def test_what_these_readings_leave_alone(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))
    assert not superseded(old, new)
