"""Generators of meaning-preserving and meaning-altering rewrites (S-MEAN-7).

A :class:`Case` is what a person said (first person, one or two source sentences), a faithful
third-person fact drawn from it, and rewrites: ``preserving`` ones (contractions, "I" → "the
user", clause order, singular/plural) that any judge must accept, and ``altering`` ones (insert
or drop a negation, permute numbers across or within sources, swap units, swap parties, move a
property to another party, change modality or time) that every judge must refuse. Used by the
property tests (hypothesis) and by ``bench.bench_meaning`` (counts and the acceptance rate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

VERBS: tuple[tuple[str, str, str], ...] = (
    ("eat", "eats", "meat"),
    ("eat", "eats", "fish"),
    ("drink", "drinks", "coffee"),
    ("drink", "drinks", "green tea"),
    ("play", "plays", "the cello"),
    ("read", "reads", "crime novels"),
    ("keep", "keeps", "a bearded dragon"),
    ("own", "owns", "a red bicycle"),
    ("speak", "speaks", "Portuguese"),
    ("cook", "cooks", "pasta at home"),
)
PLURALS: tuple[tuple[str, str], ...] = (
    ("cats", "cat"), ("board games", "board game"), ("long walks", "long walk"),
    ("old maps", "old map"), ("rare coins", "rare coin"),
)
PLACES = ("Lisbon", "Porto", "Berlin", "Madrid", "Oslo")
PEOPLE = ("Jonas", "Ana", "Marco", "Priya", "Tomas")
SPORTS: tuple[tuple[str, str], ...] = (("run", "runs"), ("swim", "swims"), ("cycle", "cycles"))
UNITS = ("km", "miles")
SKILLS = ("the cello", "Spanish", "pottery", "the guitar", "chess")


@dataclass
class Case:
    kind: str
    sources: list[str]
    """What the user said, first person (encoder evidence)."""
    facts: list[str]
    """The sources as faithful third-person facts (merge sources, dedupe partners)."""
    preserving: list[str] = field(default_factory=list)
    altering: list[tuple[str, str]] = field(default_factory=list)
    """(what was altered, the altered claim about ``facts[0]``)."""
    supported: list[str] = field(default_factory=list)
    """Claims that say part of what the user said (the encoder must accept them; a merge or a
    duplicate would lose the rest)."""


def _neg(verb: str, obj: str, form: int) -> str:
    return ("The user doesn't", "The user does not", "The user doesn’t")[form % 3] + f" {verb} {obj}."


@st.composite
def polarity_cases(draw: st.DrawFn) -> Case:
    verb, verbs, obj = draw(st.sampled_from(VERBS))
    place = draw(st.sampled_from(PLACES))
    negated = draw(st.booleans())
    form = draw(st.integers(0, 2))
    if negated:
        said = draw(st.sampled_from((f"I don't {verb} {obj}.", f"I do not {verb} {obj}.",
                                     f"I don’t {verb} {obj}.")))
        fact = _neg(verb, obj, form)
        flipped = f"The user {verbs} {obj}."
        order = (f"I live in {place}, but I don't {verb} {obj}.",
                 f"The user lives in {place} but does not {verb} {obj}.",
                 f"The user doesn't {verb} {obj}, but the user lives in {place}.")
    else:
        said = f"I {verb} {obj}."
        fact = f"The user {verbs} {obj}."
        flipped = _neg(verb, obj, form)
        order = (f"I live in {place} and I {verb} {obj}.",
                 f"The user lives in {place} and {verbs} {obj}.",
                 f"The user {verbs} {obj} and lives in {place}.")
    preserving = [fact, _neg(verb, obj, form + 1) if negated else f"User {verbs} {obj}."]
    case = Case("polarity", [said], [fact], preserving, [("negation", flipped)])
    if draw(st.booleans()):  # clause order, a second source
        case.sources = [order[0]]
        case.facts = [order[1]]
        case.preserving = [order[2]]
        case.altering = [("negation", flipped)]
    return case


@st.composite
def number_cases(draw: st.DrawFn) -> Case:
    (s1, s1s), (s2, s2s) = draw(st.permutations(SPORTS))[:2]
    a = draw(st.integers(2, 99))
    b = draw(st.integers(2, 99).filter(lambda x: x != a))
    unit = draw(st.sampled_from(UNITS))
    other = UNITS[1 - UNITS.index(unit)]
    mode = draw(st.sampled_from(("across", "within", "unit")))
    if mode == "across":
        sources = [f"I {s1} {a} {unit} every week.", f"I {s2} {b} {unit} every week."]
        facts = [f"The user {s1s} {a} {unit} every week.", f"The user {s2s} {b} {unit} every week."]
        altered = f"The user {s1s} {b} {unit} every week."
    elif mode == "within":
        sources = [f"My longest {s1} took {a} h {b} min.", f"I {s2} {b} {unit} every week."]
        facts = [f"The user's longest {s1} took {a} h {b} min.", f"The user {s2s} {b} {unit} every week."]
        altered = f"The user's longest {s1} took {b} h {a} min."
    else:
        sources = [f"I {s1} {a} {unit} every week.", f"I live {b} {other} from work."]
        facts = [f"The user {s1s} {a} {unit} every week.", f"The user lives {b} {other} from work."]
        altered = f"The user {s1s} {a} {other} every week."
    return Case(f"number ({mode})", sources, facts, [facts[0]], [(f"number {mode}", altered)])


@st.composite
def role_cases(draw: st.DrawFn) -> Case:
    who = draw(st.sampled_from(PEOPLE))
    mode = draw(st.sampled_from(("promise", "call", "property")))
    if mode == "promise":
        sources = [f"I promised {who} I'd drive him to the airport."]
        facts = [f"The user promised to drive {who} to the airport."]
        altered = f"{who} promised to drive the user to the airport."
    elif mode == "call":
        sources = [f"I called {who} about the flat yesterday."]
        facts = [f"The user called {who} about the flat yesterday."]
        altered = f"{who} called the user about the flat yesterday."
    else:
        sources = ["I'm vegetarian.", f"My dog is called {who}."]
        facts = ["The user is vegetarian.", f"The user's dog is called {who}."]
        altered = f"{who} is vegetarian."
    return Case(f"role ({mode})", sources, facts, [facts[0]], [(f"party {mode}", altered)])


@st.composite
def modality_cases(draw: st.DrawFn) -> Case:
    skill = draw(st.sampled_from(SKILLS))
    place = draw(st.sampled_from(PLACES))
    mode = draw(st.sampled_from(("wants", "might", "used", "without")))
    if mode == "wants":
        src, fact, altered = (f"I want to learn {skill}.", f"The user wants to learn {skill}.",
                              f"The user learns {skill}.")
    elif mode == "might":
        src, fact, altered = (f"I might move to {place}.", f"The user might move to {place}.",
                              f"The user will move to {place}.")
    elif mode == "used":
        src, fact, altered = (f"I used to live in {place}.", f"The user used to live in {place}.",
                              f"The user lives in {place}.")
    else:
        src, fact, altered = ("I take my coffee without sugar.",
                              "The user takes the user's coffee without sugar.",
                              "The user takes the user's coffee with sugar.")
    return Case(f"modality ({mode})", [src], [fact], [fact], [(f"modality {mode}", altered)])


@st.composite
def plural_cases(draw: st.DrawFn) -> Case:
    plural, singular = draw(st.sampled_from(PLURALS))
    verb = draw(st.sampled_from((("like", "likes"), ("collect", "collects"), ("love", "loves"))))
    src = f"I {verb[0]} {plural}."
    fact = f"The user {verb[1]} {plural}."
    return Case("plural", [src], [fact], [fact, f"The user {verb[1]} {singular}."],
                [("negation", f"The user doesn't {verb[0]} {plural}.")])


RACES = ("the Berlin marathon", "the city half marathon", "the Lisbon 10k")
INSERTS = ("last May", "in the rain", "last year", "for charity")
COUNTRIES = ("Peru", "Japan", "Iceland", "Mexico")
FOODS = (("pork", "chicken"), ("beef", "fish"), ("lamb", "tofu"))
COURSES = (("a Python course", "a cooking course"), ("a pottery course", "a French course"))


@st.composite
def inserted_modifier_cases(draw: st.DrawFn) -> Case:
    """A phrase inserted before a number: the number still binds to its unit."""
    race = draw(st.sampled_from(RACES))
    ins = draw(st.sampled_from(INSERTS))
    h = draw(st.integers(2, 5))
    m = draw(st.integers(11, 59))
    src = f"I ran {race} {ins} in {h} hours {m} minutes, a record."
    fact = f"The user ran {race} {ins} in {h} hours {m} minutes."
    moved = f"The user ran {race} in {h} hours {m} minutes {ins}."
    return Case("inserted modifier", [src], [fact], [fact, moved],
                [("number within", f"The user ran {race} {ins} in {m} hours {h} minutes."),
                 ("unit swap", f"The user ran {race} {ins} in {h} minutes {m} hours.")],
                supported=[f"The user ran {race} in {h} hours {m} minutes."])


@st.composite
def never_cases(draw: st.DrawFn) -> Case:
    """"never" before an auxiliary and "been": the place is negated."""
    country = draw(st.sampled_from(COUNTRIES))
    form = draw(st.integers(0, 2))
    said = (f"I've never been to {country}.", f"I have never been to {country}.",
            f"I haven't been to {country}.")[form]
    fact = (f"The user has never been to {country}." if form < 2
            else f"The user hasn't been to {country}.")
    other = (f"User has never been to {country}." if form < 2
             else f"The user has not been to {country}.")
    return Case("never + been", [said], [fact], [fact, other],
                [("negation", f"The user has been to {country}.")],
                supported=[fact])


@st.composite
def only_cases(draw: st.DrawFn) -> Case:
    """"I don't eat X, only Y": the contrast states Y."""
    bad, good = draw(st.sampled_from(FOODS))
    said = draw(st.sampled_from((f"I don't eat {bad}, only {good}.",
                                 f"I do not eat {bad}, only {good}.")))
    fact = f"The user doesn't eat {bad}, only {good}."
    return Case("only contrast", [said], [fact],
                [fact, f"The user does not eat {bad}, only {good}."],
                [("negation", f"The user eats {bad}."),
                 ("negation", f"The user doesn't eat {good}.")],
                supported=[f"The user eats {good}.", f"The user does not eat {bad}."])


@st.composite
def tense_swap_cases(draw: st.DrawFn) -> Case:
    """Two sources, one done and one wished: a merge may not exchange their objects."""
    done, wished = draw(st.sampled_from(COURSES))
    sources = [f"I finished {done} last year.", f"I want to start {wished}."]
    facts = [f"The user finished {done} last year.", f"The user wants to start {wished}."]
    return Case("tense swap", sources, facts, [facts[0]],
                [("modality swap", f"The user wants to finish {done} and started {wished} "
                                   "last year."),
                 ("modality swap", f"The user finished {wished} last year and wants to start "
                                   f"{done}.")])


def cases() -> st.SearchStrategy[Case]:
    return st.one_of(polarity_cases(), number_cases(), role_cases(), modality_cases(),
                     plural_cases(), inserted_modifier_cases(), never_cases(), only_cases(),
                     tense_swap_cases())
