"""Write ``bench/data/memory_conversations.json``: the multi-session memory benchmark's data.

    python -m bench.data.make_memory_data [--seed 12] [--out FILE]

Deterministic for a seed. Six people (each with their own family, work, city, pets, hobbies,
trips) talk with the assistant: 18–22 dated sessions each (about four months), every
session a mix of

* ``smalltalk`` turns (greetings, thanks; no fact),
* ``remark`` turns: passing remarks an encoder would still write down (what was for lunch, a
  late train, the weather) -- their facts are the *noise* that forgetting should take,
* ``info`` turns: something that matters later, with its annotated fact(s), and
* ``reply`` turns of the assistant (no fact).

Every ``info`` fact is asked about once by a question naming its evidence turn(s); a few
questions need two turns (a plan and what came of it). Questions reuse the facts' words in
another inflection ("painted" for "paints", "moving" for "moved", "allergies" for "allergic"
is *not* folded and stays a realistic miss), never the answer itself.

A second split, ``paraphrases``: one more question per ``info`` fact, written as a paraphrase
that shares no content word with its evidence (no name, no inflection, no stem: "What does she
do for a living?" for "Maya works as a nurse at Southmead Hospital."), a third of them held out
from any tuning (:func:`paraphrase_split`).
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("memory_conversations.json")
FORMAT = "nocturne-memory-bench/1"

PEOPLE: list[dict[str, Any]] = [
    {"name": "Maya", "they": "she", "their": "her", "partner": "Tom", "sibling": "Ines",
     "sib_rel": "sister", "city": "Bristol", "hometown": "Leeds", "sib_city": "Porto",
     "job": "nurse", "employer": "Southmead Hospital", "pet_kind": "greyhound", "pet": "Biscuit",
     "hobby": "watercolour landscapes", "instrument": "cello", "friend": "Priya",
     "friend2": "Jonah", "boss": "Dr Okafor", "dish": "mushroom risotto", "dislike": "coriander",
     "allergen": "penicillin", "sport": "open-water swimming", "book": "The Overstory",
     "car": "a blue Fiat Panda", "trip": "Lisbon", "trip2": "the Isle of Skye",
     "course": "Portuguese", "kid": "", "race": "Bristol 10k", "race_time": "58 minutes",
     "garden": "tomatoes", "show": "a community choir concert"},
    {"name": "Daniel", "they": "he", "their": "his", "partner": "Sofia", "sibling": "Marcus",
     "sib_rel": "brother", "city": "Manchester", "hometown": "Cork", "sib_city": "Toronto",
     "job": "structural engineer", "employer": "Arup", "pet_kind": "tabby cat", "pet": "Miso",
     "hobby": "charcoal portraits", "instrument": "bass guitar", "friend": "Kwame",
     "friend2": "Hannah", "boss": "Ruth Adeyemi", "dish": "lamb tagine", "dislike": "olives",
     "allergen": "peanuts", "sport": "bouldering", "book": "Piranesi",
     "car": "a grey Skoda Octavia", "trip": "Kyoto", "trip2": "the Lake District",
     "course": "Japanese", "kid": "Ellie", "race": "Manchester half marathon",
     "race_time": "one hour fifty-two", "garden": "chillies", "show": "a jazz night"},
    {"name": "Aisha", "they": "she", "their": "her", "partner": "Karim", "sibling": "Yusuf",
     "sib_rel": "brother", "city": "Glasgow", "hometown": "Birmingham", "sib_city": "Dubai",
     "job": "primary school teacher", "employer": "Hillhead Primary", "pet_kind": "rabbit",
     "pet": "Clover", "hobby": "linocut prints", "instrument": "piano", "friend": "Morag",
     "friend2": "Lena", "boss": "Mrs Fraser", "dish": "chicken biryani", "dislike": "mushrooms",
     "allergen": "latex", "sport": "netball", "book": "Homegoing", "car": "a red Toyota Yaris",
     "trip": "Marrakech", "trip2": "Orkney", "course": "Arabic calligraphy", "kid": "Zain",
     "race": "Glasgow Great Run", "race_time": "one hour five", "garden": "strawberries",
     "show": "a ceilidh"},
    {"name": "Lukas", "they": "he", "their": "his", "partner": "Anna", "sibling": "Greta",
     "sib_rel": "sister", "city": "Edinburgh", "hometown": "Munich", "sib_city": "Vienna",
     "job": "data analyst", "employer": "Skyscanner", "pet_kind": "border collie",
     "pet": "Pepper", "hobby": "oil still lifes", "instrument": "trumpet", "friend": "Callum",
     "friend2": "Nadia", "boss": "Fiona Grant", "dish": "käsespätzle", "dislike": "fennel",
     "allergen": "shellfish", "sport": "cycling", "book": "Klara and the Sun",
     "car": "a green Volkswagen Golf", "trip": "Reykjavik", "trip2": "the Cairngorms",
     "course": "Gaelic", "kid": "", "race": "Edinburgh marathon", "race_time": "four hours ten",
     "garden": "courgettes", "show": "a Fringe comedy show"},
    {"name": "Priyanka", "they": "she", "their": "her", "partner": "Sam", "sibling": "Rohan",
     "sib_rel": "brother", "city": "Cardiff", "hometown": "Leicester", "sib_city": "Bangalore",
     "job": "pharmacist", "employer": "Boots on Queen Street", "pet_kind": "cockapoo",
     "pet": "Mango", "hobby": "botanical illustrations", "instrument": "violin",
     "friend": "Gwen", "friend2": "Oliver", "boss": "Mr Evans", "dish": "paneer butter masala",
     "dislike": "blue cheese", "allergen": "sesame", "sport": "badminton",
     "book": "The Ministry of Utmost Happiness", "car": "a white Honda Jazz", "trip": "Goa",
     "trip2": "Snowdonia", "course": "Welsh", "kid": "Anika", "race": "Cardiff half marathon",
     "race_time": "two hours three", "garden": "runner beans", "show": "an opera at the WMC"},
    {"name": "Owen", "they": "he", "their": "his", "partner": "Jamie", "sibling": "Carys",
     "sib_rel": "sister", "city": "Brighton", "hometown": "Swansea", "sib_city": "Melbourne",
     "job": "sound engineer", "employer": "a recording studio in Hove", "pet_kind": "parrot",
     "pet": "Captain", "hobby": "acrylic seascapes", "instrument": "drums", "friend": "Femi",
     "friend2": "Rosa", "boss": "Dave Mills", "dish": "fish pie", "dislike": "beetroot",
     "allergen": "wasp stings", "sport": "sea kayaking", "book": "Shuggie Bain",
     "car": "an orange VW camper van", "trip": "Berlin", "trip2": "Pembrokeshire",
     "course": "Spanish", "kid": "", "race": "Brighton marathon", "race_time": "three hours forty",
     "garden": "lettuce", "show": "a gig at the Concorde 2"},
]

# Each topic: category, what the person says, the fact an encoder writes, the question asked
# later (another inflection of the fact's key word, never the answer), the answer.
TOPICS: list[dict[str, str]] = [
    {"cat": "identity", "say": "I work as a {job} at {employer}, have done for six years.",
     "fact": "{name} works as a {job} at {employer}.",
     "q": "Where has {name} been working for the last few years?", "a": "{employer}"},
    {"cat": "identity", "say": "My {sib_rel} {sibling} moved to {sib_city} last spring.",
     "fact": "{name}'s {sib_rel} {sibling} moved to {sib_city} last spring.",
     "q": "Which city is {name}'s {sib_rel} moving to, or has moved to?", "a": "{sib_city}"},
    {"cat": "preferences", "say": "On Sunday mornings I paint {hobby}, it's my quiet time.",
     "fact": "{name} paints {hobby} on Sunday mornings.",
     "q": "What kind of pictures has {name} been painting?", "a": "{hobby}"},
    {"cat": "event", "say": "We adopted a {pet_kind} from the rescue centre! We called him {pet}.",
     "fact": "{name} adopted a {pet_kind} from a rescue centre and named him {pet}.",
     "q": "What name did {name} give the animal from the rescue centres?", "a": "{pet}"},
    {"cat": "identity", "say": "I grew up in {hometown}, moved to {city} for university.",
     "fact": "{name} grew up in {hometown} and moved to {city} for university.",
     "q": "Which town did {name} grow up in before moving?", "a": "{hometown}"},
    {"cat": "preferences", "say": "I've started learning the {instrument}, lessons on Thursdays.",
     "fact": "{name} is learning the {instrument}, with lessons on Thursdays.",
     "q": "Which instrument has {name} learned to play in the Thursday lesson?",
     "a": "the {instrument}"},
    {"cat": "preferences", "say": "My favourite thing to cook is {dish}.",
     "fact": "{name}'s favourite dish to cook is {dish}.",
     "q": "What does {name} like cooking best?", "a": "{dish}"},
    {"cat": "preferences", "say": "I can't stand {dislike}, it ruins any dish for me.",
     "fact": "{name} dislikes {dislike} in food.",
     "q": "Which ingredient is {name} disliking so much it ruins dishes?", "a": "{dislike}"},
    {"cat": "identity", "say": "Important one: I'm allergic to {allergen}.",
     "fact": "{name} has an allergy to {allergen}.",
     "q": "What allergies does {name} have?", "a": "{allergen}"},
    {"cat": "commitments", "say": "I promised {friend} I'd help her move flat on the 14th.",
     "fact": "{name} promised to help {friend} move flat on the 14th.",
     "q": "Who is {name} helping with moving flats?", "a": "{friend}"},
    {"cat": "event", "say": "I ran the {race} on Saturday, {race_time}!",
     "fact": "{name} ran the {race} in {race_time}.",
     "q": "What was {name}'s time in the {race}s?", "a": "{race_time}"},
    {"cat": "preferences", "say": "I've really got into {sport} this year.",
     "fact": "{name} got into {sport} this year.",
     "q": "Which sport has {name} been getting into?", "a": "{sport}"},
    {"cat": "event", "say": "Just finished reading {book}, it wrecked me in a good way.",
     "fact": "{name} finished reading {book} and loved it.",
     "q": "Which book did {name} finish recently?", "a": "{book}"},
    {"cat": "context", "say": "I drive {car}, it's ancient but it runs.",
     "fact": "{name} drives {car}.",
     "q": "What car is {name} driving?", "a": "{car}"},
    {"cat": "event", "say": "We booked flights to {trip} for the end of next month.",
     "fact": "{name} booked flights to {trip} for the end of next month.",
     "q": "Where are the flights {name} is booking going to?", "a": "{trip}"},
    {"cat": "event", "say": "Back from {trip}. The tiles, the food, the hills, everything.",
     "fact": "{name} came back from the trip to {trip} and loved the tiles and the food.",
     "q": "What did {name} love about the trips abroad?", "a": "the tiles and the food"},
    {"cat": "event", "say": "{partner} and I got engaged on a beach walk last weekend.",
     "fact": "{name} and {partner} got engaged on a beach walk.",
     "q": "Who is {name} going to marry after the engagement?", "a": "{partner}"},
    {"cat": "context", "say": "My manager {boss} is leaving at the end of the year.",
     "fact": "{name}'s manager {boss} is leaving at the end of the year.",
     "q": "Which manager is leaving {name}'s team?", "a": "{boss}"},
    {"cat": "commitments", "say": "I signed up for an evening course in {course}, starts in March.",
     "fact": "{name} signed up for an evening course in {course} starting in March.",
     "q": "Which evening courses is {name} signing up for?", "a": "{course}"},
    {"cat": "event", "say": "Planted {garden} in the allotment today.",
     "fact": "{name} planted {garden} in the allotment.",
     "q": "What is {name} planting in the allotments?", "a": "{garden}"},
    {"cat": "event", "say": "Went to {show} with {friend2} on Friday, loved it.",
     "fact": "{name} went to {show} with {friend2}.",
     "q": "Who went with {name} to the shows?", "a": "{friend2}"},
    {"cat": "context", "say": "{friend} and I have been friends since primary school.",
     "fact": "{name} and {friend} have been friends since primary school.",
     "q": "Which friend has {name} known since primary schools?", "a": "{friend}"},
    {"cat": "event", "say": "I sprained my ankle stepping off a kerb, so no {sport} for a bit.",
     "fact": "{name} sprained an ankle stepping off a kerb.",
     "q": "How did {name} injure the ankles?", "a": "stepping off a kerb"},
    {"cat": "preferences", "say": "I'm vegetarian on weekdays, I eat fish at weekends.",
     "fact": "{name} eats vegetarian on weekdays and fish at weekends.",
     "q": "What does {name} eat at the weekend?", "a": "fish"},
    {"cat": "commitments", "say": "I told {boss} I'd present the winter rota on Monday.",
     "fact": "{name} committed to presenting the winter rota on Monday.",
     "q": "What did {name} commit to present on Monday?", "a": "the winter rota"},
    {"cat": "event", "say": "{pet} had to have a tooth out at the vet, poor thing.",
     "fact": "{pet} had a tooth removed at the vet.",
     "q": "What did the vets remove from {pet}?", "a": "a tooth"},
    {"cat": "context", "say": "Our flat is on the top floor, fourth floor, no lift.",
     "fact": "{name} lives in a fourth-floor flat with no lift.",
     "q": "Which floor is {name}'s flat on?", "a": "the fourth"},
    {"cat": "identity", "say": "My birthday's the 9th of June, by the way.",
     "fact": "{name}'s birthday is on the 9th of June.",
     "q": "When are {name}'s birthdays?", "a": "the 9th of June"},
    {"cat": "event", "say": "I got the promotion! Senior {job} from next month.",
     "fact": "{name} got promoted to senior {job}.",
     "q": "What promotion did {name} get?", "a": "senior {job}"},
    {"cat": "preferences", "say": "I prefer tea to coffee, always Earl Grey.",
     "fact": "{name} prefers Earl Grey tea to coffee.",
     "q": "Which tea is {name} preferring to coffee?", "a": "Earl Grey"},
    {"cat": "event", "say": "{partner} surprised me with a weekend in {trip2}.",
     "fact": "{partner} surprised {name} with a weekend in {trip2}.",
     "q": "Where did {partner}'s surprise weekend take {name}?", "a": "{trip2}"},
    {"cat": "context", "say": "I volunteer at the food bank every other Wednesday.",
     "fact": "{name} volunteers at the food bank every other Wednesday.",
     "q": "Where does {name} volunteering take place on Wednesdays?", "a": "the food bank"},
    {"cat": "event", "say": "Our boiler broke and the landlord took nine days to fix it.",
     "fact": "{name}'s boiler broke and the landlord took nine days to fix it.",
     "q": "How long did fixing the broken boilers take?", "a": "nine days"},
    {"cat": "commitments", "say": "I'm saving for a deposit, aiming for twenty thousand by 2028.",
     "fact": "{name} is saving for a house deposit, aiming for twenty thousand by 2028.",
     "q": "How much does {name} aim to have saved for the deposits?", "a": "twenty thousand"},
    {"cat": "event", "say": "My grandmother turned ninety, we had a huge party in {hometown}.",
     "fact": "{name}'s grandmother turned ninety with a party in {hometown}.",
     "q": "How old did {name}'s grandmother turn at the parties?", "a": "ninety"},
    {"cat": "identity", "say": "I'm dyslexic, so long emails take me ages.",
     "fact": "{name} is dyslexic and finds long emails slow.",
     "q": "Why does {name} find emailing slow?", "a": "dyslexia"},
    {"cat": "preferences", "say": "My comfort film is Paddington 2, I watch it when I'm low.",
     "fact": "{name}'s comfort film is Paddington 2.",
     "q": "Which film comforts {name}?", "a": "Paddington 2"},
    {"cat": "event", "say": "I passed my driving theory test on the second try.",
     "fact": "{name} passed the driving theory test on the second try.",
     "q": "On which try did {name} pass the theory tests?", "a": "the second"},
    {"cat": "context", "say": "{friend2} is a midwife, she works nights mostly.",
     "fact": "{friend2} is a midwife who works mostly nights.",
     "q": "What does {friend2} work as?", "a": "a midwife"},
    {"cat": "event", "say": "I joined a book club that meets at the Lantern pub.",
     "fact": "{name} joined a book club that meets at the Lantern pub.",
     "q": "Where do the book clubs {name} is joining meet?", "a": "the Lantern pub"},
    {"cat": "commitments", "say": "New year's resolution: no phone after ten at night.",
     "fact": "{name} resolved to use no phone after ten at night.",
     "q": "What was {name}'s resolution about phones?", "a": "none after ten at night"},
    {"cat": "event", "say": "We repainted the spare room sage green.",
     "fact": "{name} repainted the spare room sage green.",
     "q": "Which colour did {name} repaint the spare rooms?", "a": "sage green"},
    {"cat": "identity", "say": "I'm left-handed, which makes the {instrument} awkward.",
     "fact": "{name} is left-handed.",
     "q": "Which hands does {name} write with?", "a": "the left"},
    {"cat": "event", "say": "I lost my wedding-ring-shaped keyring, the one from {trip}.",
     "fact": "{name} lost a ring-shaped keyring bought in {trip}.",
     "q": "What did {name} lose that was bought abroad?", "a": "a ring-shaped keyring"},
    {"cat": "preferences", "say": "I hate flying, I'd take the train anywhere if I could.",
     "fact": "{name} hates flying and prefers trains.",
     "q": "How does {name} prefer to travel instead of flights?", "a": "by train"},
    {"cat": "context", "say": "{partner} works from home as a translator.",
     "fact": "{partner} works from home as a translator.",
     "q": "What job does {partner} do while working from home?", "a": "translator"},
    {"cat": "event", "say": "I fainted giving blood last week, first time ever.",
     "fact": "{name} fainted while giving blood.",
     "q": "What happened when {name} gave blood?", "a": "fainted"},
    {"cat": "event", "say": "Won the pub quiz with {friend} and {friend2}, the music round saved us.",
     "fact": "{name} won the pub quiz with {friend} and {friend2} thanks to the music round.",
     "q": "Which round helped {name} to win the quizzes?", "a": "the music round"},
]

# Pairs of topics whose later question needs both turns.
MULTI: list[dict[str, Any]] = [
    {"topics": (14, 15), "q": "Which trip did {name} book flights for, and how was it?",
     "a": "{trip}; loved the tiles and the food"},
    {"topics": (2, 41), "q": "What does {name} paint and which room was repainted?",
     "a": "{hobby}; the spare room"},
    {"topics": (10, 22), "q": "Which race did {name} run and how was the ankle sprained?",
     "a": "the {race}; stepping off a kerb"},
    {"topics": (3, 25), "q": "What animal did {name} adopt and what did the vet remove?",
     "a": "a {pet_kind}; a tooth"},
]

# The paraphrase split: one question per topic (same order as TOPICS), written to share no
# content word with the topic's fact - no name, no inflection, no word stem - so that only the
# meaning links them ("What does she do for a living?" for "Maya works as a nurse ...").
# {they}/{their}/{them}: the person's pronouns. Topics whose index is 2 mod 3 are held out:
# no ranking weight or choice was tuned on them (bench_memory reports them apart).
PARAPHRASES: list[str] = [
    "What does {they} do for a living?",
    "Where is {their} sibling based these days?",
    "What creative hobby does {they} pursue at weekends?",
    "Which pet did {they} take home, and what is it called?",
    "Where was {they} raised as a child?",
    "What music does {they} study each week?",
    "What meal does {they} most enjoy preparing?",
    "Which flavour can {they} not bear?",
    "What does {they} react badly to?",
    "Who is {they} giving a hand with relocating?",
    "Which race did {they} enter, and how fast?",
    "What exercise has {they} taken up lately?",
    "Which novel did {they} enjoy recently?",
    "What vehicle does {they} own?",
    "Where is {they} travelling soon by plane?",
    "What impressed {them} most on the holiday abroad?",
    "Who is {they} marrying?",
    "Who at {their} work is departing soon?",
    "What night class has {they} enrolled in?",
    "What is {they} growing in {their} vegetable plot?",
    "Who accompanied {them} to the performance?",
    "Who is {their} oldest pal from childhood?",
    "How did {they} hurt {their} foot?",
    "What is {their} diet like from Monday to Friday?",
    "What did {they} agree to show the team at the start of the week?",
    "What operation did {their} animal have?",
    "How many stairs does {they} climb to get home?",
    "When was {they} born?",
    "What new role did {they} earn at work?",
    "What hot drink does {they} like best?",
    "Where did {their} other half whisk {them} away to?",
    "What charity work does {they} do?",
    "How long was {they} without hot water at home?",
    "What sum is {they} putting aside to buy a home?",
    "What milestone did {their} elderly relative celebrate?",
    "What learning difference does {they} have?",
    "Which movie cheers {them} up when {they} feel down?",
    "How many attempts did {they} need for the written motoring exam?",
    "Which of {their} pals has a career in maternity care?",
    "Where does {their} reading group gather?",
    "What screen rule did {they} set for the new year?",
    "What colour are the walls of {their} guest bedroom now?",
    "Which side does {they} write with?",
    "What souvenir went missing?",
    "Which way of getting around does {they} choose over planes?",
    "What is {their} partner's occupation?",
    "What went wrong at the donation session?",
    "Which category carried the team to victory at trivia night?",
]
OBJECT_PRONOUN = {"she": "her", "he": "him"}


def paraphrase_split(topic: int) -> str:
    """``heldout`` for the topics kept out of every tuning (index 2 mod 3), else ``dev``."""
    return "heldout" if topic % 3 == 2 else "dev"


REMARKS: list[tuple[str, str, str]] = [
    # category, what is said, the trivial fact an encoder still writes down
    ("event", "Had {food} for lunch, nothing exciting.", "{name} had {food} for lunch on {day}."),
    ("context", "Train was late again this morning.", "{name}'s train was late on {day} morning."),
    ("context", "It's grey and drizzly in {city} today.",
     "The weather in {city} was grey and drizzly on {day}."),
    ("context", "I'm a bit tired today, slept badly.", "{name} slept badly and felt tired on {day}."),
    ("event", "Just made a cup of {drink}.", "{name} made a cup of {drink} on {day}."),
    ("event", "Watched an episode of {tv} last night.", "{name} watched an episode of {tv} on {day} night."),
    ("context", "The wifi is being slow, sorry if I vanish.", "{name}'s wifi was slow on {day}."),
    ("event", "Popped to the shop for milk.", "{name} went to the shop for milk on {day}."),
    ("context", "My phone battery is on 5 percent.", "{name}'s phone battery was low on {day}."),
    ("event", "Did the washing up finally.", "{name} did the washing up on {day}."),
    ("context", "Neighbours are drilling again.", "{name}'s neighbours were drilling on {day}."),
    ("event", "Had a quick nap after work.", "{name} had a nap after work on {day}."),
    ("context", "Sunny for once! Sunday mornings like this are rare.",
     "It was sunny in {city} on {day} morning."),
    ("event", "Ordered a {food} takeaway tonight.", "{name} ordered a {food} takeaway on {day}."),
    ("context", "I've got a bit of a headache.", "{name} had a headache on {day}."),
    ("event", "Bumped into an old colleague at the station.",
     "{name} bumped into an old colleague at the station on {day}."),
    ("context", "The bus was packed this morning.", "The bus was packed on {day} morning for {name}."),
    ("event", "Tidied my desk, feels better.", "{name} tidied the desk on {day}."),
    ("context", "Can't decide what to have for dinner.", "{name} could not decide on dinner on {day}."),
    ("event", "Listened to a podcast about {topic} on the walk.",
     "{name} listened to a podcast about {topic} on {day}."),
    ("context", "{pet} is asleep on my feet right now.", "{pet} was asleep on {name}'s feet on {day}."),
    ("event", "Just got back from a short walk around the park.",
     "{name} went for a short walk in the park on {day}."),
    ("context", "Work was a bit hectic today.", "{name}'s work day was hectic on {day}."),
    ("event", "Finally replied to all my emails.", "{name} replied to a backlog of emails on {day}."),
    ("context", "The heating's on full, it's freezing out.", "It was freezing in {city} on {day}."),
    ("event", "Treated myself to a pastry from the bakery.",
     "{name} bought a pastry from the bakery on {day}."),
    ("context", "I keep forgetting to water the plants.",
     "{name} forgot to water the house plants on {day}."),
    ("event", "Had a long call with {partner} at lunch.",
     "{name} had a long lunchtime call with {partner} on {day}."),
    ("context", "My laptop decided to update itself mid-meeting.",
     "{name}'s laptop updated itself during a meeting on {day}."),
    ("event", "Did a big food shop, fridge is full.", "{name} did a big food shop on {day}."),
    ("context", "Not much going on this evening.", "{name} had a quiet evening on {day}."),
    ("event", "Cleaned the bathroom, very glamorous.", "{name} cleaned the bathroom on {day}."),
    ("context", "The parcel I ordered still hasn't come.", "{name}'s parcel had not arrived by {day}."),
    ("event", "Went to bed early last night.", "{name} went to bed early on {day} night."),
]
FOODS = ["a cheese sandwich", "soup", "leftover pasta", "a jacket potato", "sushi", "a wrap",
         "noodles", "a salad", "pizza", "curry", "beans on toast", "a burrito"]
DRINKS = ["tea", "coffee", "hot chocolate", "peppermint tea", "green tea", "decaf"]
TVS = ["Bake Off", "Taskmaster", "The Bear", "Slow Horses", "a nature documentary", "University Challenge",
       "Gardeners' World", "a true-crime series"]
PODCASTS = ["history", "football", "space", "cooking", "economics", "true crime", "music"]
SMALLTALK = ["Hi again!", "Evening!", "Morning, how are you?", "Hey, got a minute?",
             "Thanks, that helps.", "Ha, fair enough.", "Anyway, that's me for today.",
             "Cheers, talk soon.", "Okay, good to know.", "Right, I should get going."]
REPLIES = ["Good to hear from you.", "That sounds lovely.", "Noted.", "Oh no, I'm sorry.",
           "That's great news!", "Thanks for telling me.", "Happy to help.", "Fair enough!",
           "How did that feel?", "I'll remember that."]


def fill(template: str, ctx: dict[str, str]) -> str:
    return template.format(**ctx)


def conversation(idx: int, person: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    name = person["name"]
    n_sessions = rng.randint(18, 22)
    start = datetime(2026, 1, 3 + idx * 2, 19, 0, tzinfo=UTC)
    dates = []
    at = start
    for _ in range(n_sessions):
        dates.append(at)
        at += timedelta(days=rng.randint(3, 8), hours=rng.randint(-3, 3))
    # Topics in a random order, but each multi pair's first topic before its second.
    order = list(range(len(TOPICS)))
    rng.shuffle(order)
    for pair in MULTI:
        a, b = pair["topics"]
        ia, ib = order.index(a), order.index(b)
        if ia > ib:
            order[ia], order[ib] = order[ib], order[ia]
    chunks: list[list[int]] = [[] for _ in range(n_sessions)]
    for i, t in enumerate(order):
        chunks[min(n_sessions - 1, i * n_sessions // len(order))].append(t)
    sessions = []
    topic_turn: dict[int, str] = {}
    remark_pool = list(range(len(REMARKS)))
    for s, when in enumerate(dates, start=1):
        ctx = {**person, "day": when.strftime("%A"), "food": rng.choice(FOODS),
               "drink": rng.choice(DRINKS), "tv": rng.choice(TVS), "topic": rng.choice(PODCASTS)}
        plan: list[tuple[str, Any]] = [("smalltalk", rng.choice(SMALLTALK[:4]))]
        items: list[tuple[str, Any]] = [("info", t) for t in chunks[s - 1]]
        rng.shuffle(remark_pool)
        items += [("remark", r) for r in remark_pool[: rng.randint(12, 16)]]
        rng.shuffle(items)
        plan += items
        plan.append(("smalltalk", rng.choice(SMALLTALK[4:])))
        turns: list[dict[str, Any]] = []
        for kind, what in plan:
            ctx = {**ctx, "food": rng.choice(FOODS), "drink": rng.choice(DRINKS),
                   "tv": rng.choice(TVS), "topic": rng.choice(PODCASTS)}
            tid = f"D{s}:{len(turns) + 1}"
            if kind == "smalltalk":
                turns.append({"id": tid, "speaker": name, "kind": "smalltalk", "text": what,
                              "facts": []})
            elif kind == "remark":
                cat, say, fact = REMARKS[what]
                turns.append({"id": tid, "speaker": name, "kind": "remark", "text": fill(say, ctx),
                              "facts": [{"text": fill(fact, ctx), "category": cat}]})
            else:
                topic = TOPICS[what]
                topic_turn[what] = tid
                turns.append({"id": tid, "speaker": name, "kind": "info",
                              "text": fill(topic["say"], ctx),
                              "facts": [{"text": fill(topic["fact"], ctx),
                                         "category": topic["cat"]}]})
            turns.append({"id": f"D{s}:{len(turns) + 1}", "speaker": "Nocturne", "kind": "reply",
                          "text": rng.choice(REPLIES), "facts": []})
        sessions.append({"n": s, "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "turns": turns})
    questions = []
    for t in order:
        topic = TOPICS[t]
        questions.append({"q": fill(topic["q"], person), "answer": fill(topic["a"], person),
                          "evidence": [topic_turn[t]], "kind": "single"})
    for pair in MULTI:
        questions.append({"q": fill(pair["q"], person), "answer": fill(pair["a"], person),
                          "evidence": [topic_turn[t] for t in pair["topics"]], "kind": "multi"})
    pronouns = {"they": person["they"], "their": person["their"],
                "them": OBJECT_PRONOUN[person["they"]]}
    paraphrases = [{"q": fill(PARAPHRASES[t], pronouns), "answer": fill(TOPICS[t]["a"], person),
                    "evidence": [topic_turn[t]], "kind": "paraphrase", "split": paraphrase_split(t)}
                   for t in order]
    return {"id": f"c{idx + 1}", "user": name, "sessions": sessions, "questions": questions,
            "paraphrases": paraphrases}


def build(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    convs = [conversation(i, p, rng) for i, p in enumerate(PEOPLE)]
    return {"format": FORMAT, "seed": seed, "conversations": convs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = build(args.seed)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    n_q = sum(len(c["questions"]) for c in data["conversations"])
    n_f = sum(len(t["facts"]) for c in data["conversations"] for s in c["sessions"]
              for t in s["turns"])
    print(f"wrote {args.out.name}: {len(data['conversations'])} conversations, {n_f} facts, "
          f"{n_q} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
