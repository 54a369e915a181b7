"""Controls that must never be read as corrections (S-WORDS-1): hard ones, on the same topic
and often with the same words as the older fact — something temporary ("this week only", "for
a bit", a hire car while the Golf is in the garage), another person's news (a sister, a
partner, "she" when the user speaks of the dog), one day or one purchase, a plan, an
addition ("on top of the rent"), an accessory ("new strings for the guitar"), progress in
what goes on ("my first Spanish lesson"), a restatement. Written to hunt false alarms, in the
first person and as a note-taker writes, not from the corpus."""

from __future__ import annotations

import pytest

from tests.core.pairs import found, superseded

# false alarms on the code before these controls were written (the other 96 were left alone)
WERE_FALSE_ALARMS = [
    ('I have a sister called Ana.', 'Ana moved to Porto last year'),
    ('I play in a five-a-side league on Thursdays.',
     'five-a-side got moved to Wednesday this week only'),
    ('I weigh 70 kg.', "weighed the dog, she's 30 kg now"),
    ("I'm learning Spanish.", 'had my first spanish lesson with the new teacher'),
    ('The user plays the guitar.', 'The user bought a new set of strings for the guitar.'),
    ("The user's rent is 1,200 a month.", 'Council tax is 150 a month on top of the rent.'),
]

CONTROLS = [
    ('I live in Bristol.', "staying at my mum's in Bath this week while the flat gets painted"),
    ('I live in Bristol.', "we're in Lisbon for a fortnight, back in Bristol on the 20th"),
    ('I take sertraline every morning.', 'on antibiotics for a few days for a chest infection'),
    ('I work at the library.', 'off sick this week with flu, the library is managing'),
    ('I work at the library.', 'covering at the town hall for a couple of days'),
    ('I drive a Golf.', 'got a hire car while the Golf is in the garage'),
    ('I drive a Golf.', "borrowed my dad's van to move the sofa"),
    ("I'm vegetarian.", 'my husband had steak last night, I stuck to the risotto'),
    ("I'm vegetarian.", 'made a chicken curry for the kids tonight'),
    ('My daughter is 7.', 'my niece turned 8 on sunday'),
    ('I have two cats.', "looking after my neighbour's cat for the week, so three in the house"),
    ('I have two cats.', 'the cats had their jabs today, both fine'),
    ('I earn 40k a year.', 'my partner earns 55k'),
    ('I earn 40k a year.', 'got a 500 bonus this month'),
    ('My rent is 900 a month.', 'paid 900 rent plus 120 for bills this month'),
    ('I run 5k on Saturdays.', 'ran a 10k today for charity'),
    ('I run 5k on Saturdays.', 'my brother ran the london marathon'),
    ("I'm learning Spanish.", 'also started a bit of italian on duolingo'),
    ('My favourite band is Radiohead.', 'saw the national live, they were great'),
    ('My favourite colour is green.', 'painted the bathroom blue'),
    ('I work from home.', 'went into the office for the christmas party'),
    ('I work from home.', 'might have to go in more after the new year'),
    ("I'm single.", "went on a first date last night, we'll see"),
    ("I'm married to Sam.", "Sam's away in Leeds for work till Friday"),
    ('My manager is Priya.', 'priya is on maternity leave, Tom is covering'),
    ('I use an iPhone.', 'got my son an android for his birthday'),
    ('I play tennis on Tuesdays.', 'tennis cancelled this tuesday because of the rain'),
    ('I go to the gym on Mondays.', 'skipped the gym today, too tired'),
    ('I go to church every Sunday.', 'missed church this week, the car broke down'),
    ("I don't drink alcohol.", "had a sip of champagne at my sister's wedding"),
    ("I'm allergic to peanuts.", 'my son tested negative for the peanut allergy'),
    ('I live with my partner.', 'my partner is visiting her parents in Spain for a month'),
    ('The user is a nurse.', "The user is a nurse on the night shift at the children's ward."),
    ('The user works at Tesco.', 'The user works at the big Tesco on the ring road.'),
    ('I cycle to work.', 'took the bus today, puncture'),
    ('I cycle to work.', 'got a new bike for commuting, the old one was stolen'),
    ('I have three kids.', 'the kids are back at school today'),
    ('My dog is called Max.', 'max had a bath today, he hated it'),
    ("I'm a teacher at Oak Primary.", 'oak primary got a new head teacher'),
    ("I'm a teacher at Oak Primary.", 'took my class on a trip to the zoo'),
    ('I sleep about 7 hours a night.', 'only got 5 hours last night, the baby'),
    ('I drink two coffees a day.', 'had four coffees today, deadline'),
    ('My phone is a Pixel 7.', 'my pixel 7 screen cracked, getting it fixed'),
    ('I have a mortgage with Nationwide.', 'nationwide sent the annual statement'),
    ('My car is a blue Fiesta.', 'the fiesta failed its mot, needs new brakes'),
    ("I'm training for a half marathon.", 'did an 18 mile training run'),
    ("I'm a member of the golf club.", 'the golf club put the fees up again'),
    ('My salary is 35k.', 'my salary is paid on the 28th'),
    ('I live in Leeds.', 'I grew up in Hull before we moved to Leeds'),
    ('I work at Deloitte.', 'my old boss from KPMG got in touch'),
    ("I'm vegan.", "I've been vegan for five years now"),
    ("I'm a vegan.", 'still vegan, still loving it'),
    ('I support Arsenal.', "went to watch my nephew's team play on saturday"),
    ('The user lives in Manchester.', "The user's brother has just moved to Manchester too."),
    ('The user works as a paramedic.', "The user's wife has started training as a paramedic."),
    ('The user drives a Toyota Yaris.', 'The user hired a van for the weekend move.'),
    ('The user has a cat called Miso.', 'Miso was at the vet today for her teeth.'),
    ('The user is a vegetarian.', "The user's daughter has decided to go vegan."),
    ("The user's favourite food is sushi.", 'The user had pizza for dinner tonight.'),
    ('The user is married to Leo.', 'Leo started a new job at the hospital.'),
    ('The user is married to Leo.', 'Leo and the user celebrated their tenth anniversary.'),
    ("The user's son is 4.", "The user's son starts reception in September."),
    ('The user works at Aviva.', "Aviva announced layoffs, but the user's team is safe."),
    ('The user rents a flat in Leeds.', 'The landlord is selling the building next year.'),
    ('The user takes the train to work.', 'The trains were on strike so the user drove in today.'),
    ("The user's phone is a Samsung S21.", 'The user is thinking of upgrading to an S24.'),
    ('The user has two children.', "The user's sister had her second baby."),
    ('The user goes swimming on Fridays.', 'The pool was closed this Friday for cleaning.'),
    ('The user is training for a marathon.',
     'The user ran 30 km at the weekend as part of training.'),
    ('The user weighs 80 kg.', "The user's suitcase was 23 kg at check-in."),
    ('The user earns 50k.', "The user's bonus was 5k this year."),
    ('I volunteer at the food bank on Saturdays.',
     'food bank was rammed this saturday, ran out of pasta'),
    ("I'm doing an MA in history.", 'handed in my second essay for the MA'),
    ("I'm doing an MA in history.", 'my MA supervisor is on leave so I have a new one for now'),
    ('I teach piano to kids.', 'one of my piano kids passed grade 3!'),
    ('My allotment is plot 7.', 'the allotment next to mine got taken over by a new couple'),
    ('I keep bees.', 'lost a hive over winter but the other two are thriving'),
    ('I have three hives.', "split one of the hives so that's four now"),
    ("I'm on 50mg of sertraline.", "my mum's on sertraline too, it helps her"),
    ('I shop at Lidl.', 'popped into Aldi for the middle aisle stuff'),
    ('My broadband is with BT.', 'BT engineer came to fix the line'),
    ('I live in a flat in Hackney.', 'looking at houses in Walthamstow, nothing decided'),
    ("I'm a night owl.", 'up early tomorrow for a flight, ugh'),
    ("I don't eat meat.", "I don't eat fish either, to be clear"),
    ('I have a Labrador called Rolo.', "Rolo's getting old, 11 next month"),
    ("I'm a secondary school teacher.", "school's out for summer!"),
    ('My partner is called Jess.', "Jess's mum is moving in with us for a bit"),
    ('My commute is 40 minutes.', 'commute took 90 minutes today, crash on the M6'),
    ('I save 300 a month.', 'put an extra 100 in savings this month'),
    ("I'm renting.", 'our landlord finally fixed the boiler'),
    ("I'm a Christian.", "went to a friend's wedding at the mosque, beautiful"),
    ('I use Windows at work.', 'my laptop at home is a mac'),
    ('My favourite film is Alien.', 'watched Aliens again, still not as good as the first'),
    ('I run a bakery.', 'the bakery had its best week ever'),
    ('I work nights.', 'swapped one night for a day shift this week'),
    ("I'm training to be an electrician.", 'passed my 2nd year exams'),
]


@pytest.mark.parametrize(("old", "new"), [*WERE_FALSE_ALARMS, *CONTROLS])
def test_a_hard_control_is_no_correction(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))
    assert not superseded(old, new)
