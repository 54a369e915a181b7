"""Corrections that name the new value and leave the old one unsaid (S-WORDS-1,
:mod:`.conflicts.slots` and :mod:`.conflicts.states`): a new home in another town, a new place
of work or school, a favourite said the other way round, an agent acting on the user's things,
the states of a life that end without being named (someone moved in, a baby arrived, a pet
died, "single" and a new partner, a new bedtime, a new name), and the smaller readings beside
them (my boy = my son, "Lula not Luna", "the 21st", "12 May"). Written for these rules in other
words than the corpus's; the controls beside them must stay unflagged."""

from __future__ import annotations

import pytest

from tests.core.pairs import finds, found, superseded

CORRECTIONS = [
    # a new home in another place
    ("I live in Norwich.", "we finally got the keys to our new flat in Ipswich"),
    ("The user rents a house in Salford.", "Bought a little semi in Stockport, moved in Sunday."),
    ("I live with my parents in Porto.", "moved out of my parents' place, got a studio in Braga"),
    # a new place of work, study or play
    ("The user works at Siemens in Munich.", "Started at Bosch two weeks ago, still in Munich."),
    ("I'm an analyst at Lloyds.", "just signed my contract with Santander, start in May"),
    ("User's daughter Ava is in Year 4 at Hillcrest Primary.",
     "Ava started at Oakfield Secondary this autumn."),
    ("The user is a first-year at Durham.", "User has transferred to the University of York."),
    # a favourite said another way
    ("The user's favourite film is Alien.", "honestly Arrival is my favourite these days"),
    ("My favourite season is winter.", "spring is the best season, I've been converted"),
    ("User's favourite snack is crisps.", "new favourite snack is salted almonds"),
    ("My favourite album is Blue.", "Blonde has knocked Blue off the top spot for me"),
    # an agent acting on the user's things
    ("My rent is 1,200 a month.", "the landlord has put the rent up to 1,290 from June"),
    ("I work from home every day.", "my employer is making us come into the office twice a week"),
    # a household that ends
    ("I live on my own.", "my boyfriend moved in at Easter so it's the two of us"),
    ("I share a house with three housemates.", "all my housemates moved out, it's just me now"),
    # births, counts, deaths
    ("The user has one child.", "Our second baby was born on Friday, a little girl."),
    ("User's cousin Nadia is pregnant.", "nadia had the baby last night, a boy!"),
    ("I have three cats.", "we adopted a fourth cat from the rescue"),
    ("I have a rabbit called Clover.", "RIP clover, buried her in the garden this morning"),
    ("My grandad lives in Aberdeen.", "grandad passed away in his sleep on Sunday"),
    # a state denied, had at last
    ("The user doesn't have any pets.", "we brought home a kitten on Saturday!"),
    ("I don't own a bike.", "finally bought a bike, a secondhand Trek"),
    ("I'm single.", "been seeing someone since March, it's going well"),
    # the hour of a habit of sleep, a team's size, a name, a manager, a wait
    ("I go to bed around 1am.", "I'm asleep by 10 most nights now, new job"),
    ("I manage a team of five.", "after the merger I've got nine direct reports"),
    ("The user's surname is Hughes.", "took my husband's name when we married, so it's Price now"),
    ("User's manager is Gareth.", "Gareth retired and the user now reports to Sian."),
    ("I'm on the waiting list for a cataract operation.", "had the cataract done on Monday"),
    # a school year begun, the hours of work moved, studies finished
    ("I'm in my first year at college.", "The user has started their second year of college."),
    ("User's son Omar is in Year 5.", "Omar's moved up to year 6, new teacher and all"),
    ("I work night shifts at the warehouse.", "I'm on days now, six till two"),
    ("I work Monday to Friday.", "New contract: I work Wednesday to Sunday now."),
    ("The user is doing a PhD in physics at Bristol.", "passed my viva on Friday!!"),
    # amounts said in other words
    ("I weigh 95 kg.", "Weighed in this morning: 89 kg, the running is working."),
    ("The user drinks four cups of tea a day.", "down to two teas a day, sleeping better"),
    ("User's salary is £41,000.", "The user's salary was raised to £45,500 in April."),
    ("My physio appointment is on Wednesdays at 4pm.", "Physio's moved to Friday mornings."),
    ("I have two grandchildren.", "with the twins born in May I've got four grandkids now"),
    # a party, a faith, a friend, a habit someone else took over, a count after a loss
    ("I vote Conservative.", "voted Labour at the last election and I'm sticking with them"),
    ("The user is a practising Muslim.", "I stopped praying years back, I'm agnostic now"),
    ("My best friend is Tariq.", "Tariq and I lost touch, my best mate's Olu these days"),
    ("I cook dinner every evening.", "My husband has taken over cooking dinner, I do the dishes."),
    ("I keep six ducks.", "a fox got into the run, down to three ducks now"),
    ("User's cat Miso is 5.", "Miso had her 6th birthday on Sunday, tuna for everyone"),
    ("I work from home.", "work's making us come into the office three days a week now"),
    # another provider of the same service
    ("I bank with NatWest.", "moved my current account over to Starling last month"),
    ("Our broadband provider is Sky.", "switched the internet to Hyperoptic, way faster"),
    ("The user keeps their passwords in Dashlane.",
     "moved everything to Bitwarden after the price rise"),
    # parted, rehomed, discharged, said goodbye to, a pregnancy of one the older fact names
    ("User's girlfriend is called Ines.", "me and ines split up last month, it's fine"),
    ("I'm married to Tom.", "Tom and I separated in January."),
    ("I have a collie called Bess.", "Bess went to live with my brother on his farm."),
    ("My mum is in hospital with a broken hip.", "mum's been discharged, she's home with us"),
    ("I'm a freelance copywriter.", "took a staff job at an agency, bye bye freelance life"),
    ("My sister-in-law is pregnant.", "My sister-in-law had the baby on Monday, a boy."),
    ("My schedule review is on Tuesdays at 3.", "schedule review's moved to Fridays at 11"),
    # a new home said as "been in … since", a club, a job after none, a marker of a change
    ("I live in Perth.", "been in Adelaide since June and loving the beaches"),
    ("User's daughter Zoe plays for Eastfield Rangers.",
     "Zoe moved clubs in the summer, she's at Northgate Juniors now"),
    ("The user is unemployed and looking for work.", "Got the job!! I start at the museum on Monday"),
    ("The user uses an Android phone.", "finally switched to an iPhone 15"),
    # a kind of what is now denied
    ("I'm a Methodist.", "I'm not religious any more."),
    ("I have a tortoise called Shelly.", "no pets any more, the flat doesn't allow them"),
    # an aside, a newborn named, parting said plainly, a parent moved in, owning at last
    ("User's son Ravi plays the trumpet.", "ravi quit trumpet (thank god) and does judo now"),
    ("I'm 30 weeks pregnant.", "He's here! Felix was born on Sunday night."),
    ("The user's partner is called Dan.", "me and dan are done, he moved out on friday"),
    ("My dad lives in Swansea.", "dad sold up in swansea and moved in with us"),
    ("We're renting a flat in Hove.", "completed on the house, we're officially homeowners"),
    ("I'm training for the Dublin half.", "pulled out of dublin, my calf is still bad"),
    ("I sell candles on Etsy.", "shut the etsy shop, the fees were silly"),
    ("My favourite game is Tetris.", "Balatro has overtaken Tetris as my favourite game."),
    ("My manager is Lorna.", "lorna left, new manager is a guy called Tariq"),
    ("The user has one dog, Pip.", "We lost Pip in March, the house is so quiet."),
    ("I'm a primary school teacher.", "left teaching over the summer, I do data work now"),
    # a place joined with no preposition, a school started, a bedtime "going to bed"
    ("User works at Aviva as an actuary.", "The user joined Legal & General in June."),
    ("User's son attends Little Acorns Nursery.", "User's son started reception at Hill Primary."),
    ("usually in bed by midnight", "been going to bed at half ten since the new job"),
    ("I usually get up at 8.", "new job means the alarm goes at 6:15"),
    # a team named with its age group, a habit gone over, an app binned, a phone switched
    ("User's daughter Ella plays for Ashby Lions under-9s.",
     "ella's moved up and switched to Ibstock Rangers u10s"),
    ("I take sugar in my tea.", "gone totally over to honey in my tea"),
    ("I'm learning French on Babbel.", "binned babbel, doing french with a tutor instead"),
    ("I use a Samsung Galaxy.", "switched to an iPhone after the Galaxy screen cracked"),
    # smaller readings
    ("User's son is 8.", "my boy turned 9 on Thursday"),
    ("User's daughter Isla is 2.", "isla turned 3 on the weekend"),
    ("The user's dog is called Bramble.", "my dog is Brambles not Bramble, easy mistake"),
    ("The user's birthday is 3 June.", "my birthday's the 13th of June not the 3rd"),
    ("I smoke about five a day.", "three months smoke free as of today"),
]


# 73 of these 85 fail on the code before these rules; among the twelve found there are the studio
# in Braga, the new favourite snack, the housemates who moved out and the grandad (the
# moved-out cue, the favourite frame and the loss verbs)
@pytest.mark.parametrize(("old", "new"), CORRECTIONS)
def test_a_new_value_in_place_of_the_old_is_a_change(old: str, new: str) -> None:
    assert found(old, new) is not None, (old, new)
    assert finds(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I live in Norwich.", "we finally got the keys to our new flat in Ipswich"),
    ("I'm single.", "been seeing someone since March, it's going well"),
    ("I have three cats.", "we adopted a fourth cat from the rescue"),
    ("The user's favourite film is Alien.", "honestly Arrival is my favourite these days"),
])
def test_the_rule_supersedes_an_older_fact_that_says_nothing_else(old: str, new: str) -> None:
    assert superseded(old, new)


# controls: the same words and topics, no change of what the older fact says (the violin pupil
# who passed her grade and the date with a guy from work were false alarms on the code before:
# "passed" read as a loss, one date read as dating)
CONTROLS = [
    ("I live in Norwich.", "we got a new flat in Norwich, two streets from the old one"),
    ("I live in Norwich.", "my sister bought a house in Ipswich"),
    ("I live in Norwich.", "we're thinking of buying a place in Ipswich next year"),
    ("I live in Norwich.", "we bought a holiday cottage in Cromer"),
    ("The user works at Siemens in Munich.", "My husband started at Bosch last month."),
    ("The user works at Siemens in Munich.", "I started at 7 this morning, long day."),
    ("The user works at Siemens in Munich.",
     "I moved to Augsburg but I still work at Siemens in Munich."),
    ("I'm an analyst at Lloyds.", "I joined a running club in the spring."),
    ("I work as an engineer at Arup.", "signed up for an evening course in Welsh from March"),
    ("I teach at Ashgrove Primary.", "I moved to Dundee for university years ago."),
    ("The user's favourite film is Alien.", "my son's favourite film is Frozen"),
    ("The user's favourite film is Alien.", "Alien is still my favourite, nothing beats it"),
    ("My favourite season is winter.", "my favourite colour is green"),
    ("My rent is 1,200 a month.", "my landlord lives in Spain"),
    ("I live on my own.", "my sister moved in with her boyfriend"),
    ("I share a house with three housemates.", "my brother moved out of his flat"),
    ("The user has one child.", "my sister's second baby was born on Friday"),
    ("I have three cats.", "my neighbour adopted a fourth cat"),
    ("I have a rabbit called Clover.", "Clover had her claws trimmed at the vet today"),
    ("My grandad lives in Aberdeen.", "my friend's grandad passed away last week"),
    ("The user doesn't have any pets.", "we looked after my sister's kitten for a weekend"),
    ("I'm single.", "I'm seeing friends for dinner tonight"),
    ("I go to bed around 1am.", "my kids go to bed at 8"),
    ("I manage a team of five.", "My wife manages a team of twelve."),
    ("User's manager is Gareth.", "Gareth is away until Monday."),
    ("I'm on the waiting list for a cataract operation.", "still on the waiting list, no date yet"),
    ("User's son is 8.", "my sister's boy turned 9 on Thursday"),
    ("The user's dog is called Bramble.", "my dog is lazy, not energetic"),
    ("The user's birthday is 3 June.", "The user's wedding anniversary is 12 May."),
    ("The user teaches violin.", "one of my violin pupils passed her grade 3"),
    ("I live in Leeds.", "I grew up in York but moved here for work."),
    ("I smoke about five a day.", "I smoked one on the way home today"),
    ("I'm in my first year at college.", "My sister has started her second year of college."),
    ("I work night shifts at the warehouse.", "I picked up a day shift for extra money."),
    ("I work Monday to Friday.", "This week I'm covering Saturday for a colleague."),
    ("The user is doing a PhD in physics at Bristol.", "My friend passed her viva on Friday."),
    ("I weigh 95 kg.", "My suitcase weighed 23 kg at the airport."),
    ("User's salary is £41,000.", "My brother's salary was raised to £45,500."),
    ("My physio appointment is on Wednesdays at 4pm.", "I moved the sofa to the other wall."),
    ("I vote Conservative.", "My dad votes Labour and always has."),
    ("I cook dinner every evening.", "My husband took over the garden this year."),
    ("I keep six ducks.", "The neighbours are down to three ducks now."),
    ("User's cat Miso is 5.", "My niece had her 6th birthday on Sunday."),
    ("I work from home.", "work's kitchen is being refitted this month"),
    ("I bank with NatWest.", "my son moved his account to Starling"),
    ("Our broadband provider is Sky.", "switched to decaf in the afternoons"),
    ("Our broadband provider is Sky.", "we're thinking of switching the internet to Hyperoptic"),
    ("User's girlfriend is called Ines.", "Ines and I split the cost of the flights."),
    ("I'm married to Tom.", "Tom and I called off the trip to Rome."),
    ("My mum is in hospital with a broken hip.", "My neighbour was discharged on Friday."),
    ("My schedule review is on Tuesdays at 3.", "the review moved to 4 today only"),
    ("I live in Perth.", "been in Adelaide since Tuesday for a conference"),
    ("The user is unemployed and looking for work.", "My brother got the job at the museum."),
    ("The user uses an Android phone.", "my wife finally switched to an iPhone"),
    ("I don't drink alcohol.", "had a glass of wine at the wedding last night"),
    ("I'm a Methodist.", "My brother isn't religious any more."),
    ("User is single.", "went on a date with a guy from work, nice but no spark"),
    ("User works at Aviva as an actuary.", "I joined the gym near the office in June."),
    ("usually in bed by midnight", "I'm going to bed early tonight, shattered"),
    ("I use a Samsung Galaxy.", "my son switched to an iPhone after his Galaxy cracked"),
    ("I'm learning French on Babbel.", "binned the old textbooks, still doing Babbel daily"),
    ("I'm 30 weeks pregnant.", "My cousin's baby was born on Sunday night."),
    ("My dad lives in Swansea.", "my brother moved in with us for a month"),
    ("The user's partner is called Dan.", "me and dan are done with the garden for this year"),
]


@pytest.mark.parametrize(("old", "new"), CONTROLS)
def test_what_did_not_change_is_left_alone(old: str, new: str) -> None:
    assert found(old, new) is None, (old, new, found(old, new))
    assert not superseded(old, new)
