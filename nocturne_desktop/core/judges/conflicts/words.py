"""How the change reader sees a fact: tokens with contractions undone, who the fact is about,
its content words folded, and its numbers bound to their units (S-WORDS-1)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm


def _set(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


_TOKEN = re.compile(r"\d+(?:[.:,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)*|[,;:.!?\u2013\u2014]")
_APOS = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})
_NT = {"can": "can", "won": "will", "shan": "shall", "ain": "is"}
_NO_APOS = {
    "dont": "do", "doesnt": "does", "didnt": "did", "isnt": "is", "arent": "are",
    "wasnt": "was", "werent": "were", "cant": "can", "couldnt": "could", "wouldnt": "would",
    "shouldnt": "should", "wont": "will", "havent": "have", "hasnt": "has", "hadnt": "had",
    "cannot": "can", "aint": "is",
}
_NO_APOS_SUBJECT = {"im": ("i", "am"), "ive": ("i", "have")}
""""im a data engineer", "ive moved": the apostrophe left out of I'm and I've."""
_SUFFIX = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}
_S_IS = _set(
    "he she it that there what who here where how")
POSS = "'s"
"""The token a possessive ``'s`` becomes ("the user's cat" → ``user 's cat``)."""

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
    "second": 2, "third": 3, "fourth": 4, "fifth": 5,
}

BREAKS = frozenset({",", ";", ":", ".", "!", "?", "\u2013", "\u2014"})
"""Clause breaks: punctuation, and the dashes people put between two statements."""
SENTENCE_END = frozenset({".", "!", "?", ";"})
"""The breaks that end a sentence (a comma, a colon or a dash only ends a clause)."""
NEGATORS = frozenset({"not", "no", "never", "nor", "neither", "none", "nothing", "without"})

_TIME = _set(
    "now currently nowadays today tonight yesterday tomorrow recently lately last next this "
    "week weeks weekend weekends month months year years day days ago again still anymore "
    "longer any more time times since already just finally actually really honestly also "
    "too as well either these those then full every")
"""Words that say when or how firmly, not what: never part of a value or an object."""

_DETERMINERS = _set(
    "a an the my our your his her their its this that these those some any all every each "
    "both another")

_COMPOUND = _set(
    "favourite favorite best closest internet work phone home eldest oldest youngest "
    "younger older little big baby step mobile email")
"""A possessed word that needs the next one ("my favourite colour", "my work laptop")."""
_DROPPED_ADJ = frozenset({"new", "old", "current", "present"})
"""Dropped from a possessed noun: "my new boss" is about "my boss"."""

PEOPLE = _set(
    "mother mum mom father dad parent parents sister brother son daughter child children "
    "kid kids baby wife husband partner girlfriend boyfriend fiance fiancee friend boss "
    "manager colleague neighbour neighbor cousin aunt uncle nephew niece grandmother "
    "grandfather grandma grandpa granny nan family flatmate roommate landlord landlady "
    "teacher coach doctor dentist team sibling twin stepdad stepmum dog cat puppy kitten "
    "horse rabbit hamster tortoise parrot pet")
"""Possessed nouns that name another party (a person or a pet), not the user's own thing."""

_FIRST_PERSON = frozenset({"i", "we", "my", "our", "me", "us"})
_LEADS_TO_SKIP = 8
"""How far into a fact its subject is looked for ("Turns out, honestly, I'm ...")."""


_IRREGULAR = {"children": "child", "people": "person", "men": "man", "women": "woman",
              "feet": "foot", "teeth": "tooth", "mice": "mouse", "geese": "goose",
              "allergic": "allergy", "intolerant": "intolerance", "fags": "smoke",
              "fag": "smoke", "cigs": "smoke", "ciggies": "smoke", "cigarettes": "smoke",
              "cigarette": "smoke"}


_KIN = {"mum": "mother", "mom": "mother", "mam": "mother", "mammy": "mother", "mummy": "mother",
        "mommy": "mother", "ma": "mother",
        "dad": "father", "daddy": "father", "nan": "grandmother", "nana": "grandmother",
        "gran": "grandmother", "granny": "grandmother", "grandma": "grandmother",
        "grandpa": "grandfather", "grandad": "grandfather", "granddad": "grandfather",
        "hubby": "husband", "boy": "son", "boys": "son", "missus": "wife", "gf": "girlfriend",
        "bf": "boyfriend", "mate": "friend", "bestie": "friend", "bff": "friend"}
"""Everyday words for kin, folded to one word ("my boy turned 7" for "the user's son is 6")."""


_GOING = {"going": "go", "goes": "go", "doing": "do", "does": "do", "having": "hav"}


@lru_cache(maxsize=1 << 16)
def fold(word: str) -> str:
    """A light fold: ``lives``/``lived``/``living`` → ``liv``; numbers as ``#7``."""
    word = _IRREGULAR.get(word) or _KIN.get(word, word)
    if word[:1].isdigit():
        return "#" + word
    n = NUMBER_WORDS.get(word)
    if n is not None and word not in ("second",):
        return f"#{n}"
    w = tm.stem_token(word)
    if w in _GOING:
        return _GOING[w]
    for suffix in ("ing", "ed", "ment", "ship"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and w[-1] == w[-2] and w[-1] not in "lsfz":
                w = w[:-1]  # "swimming", "stopped" → "swim", "stop"
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("y") and w[-2] not in "aeiouy":
        w = w[:-1] + "i"  # "nursery" / "nurseries", "family" / "families" → "nurseri", "famili"
    return w


@lru_cache(maxsize=1 << 16)
def _expand(raw: str) -> tuple[str, ...]:
    """One raw token, lowercased, its contraction undone (``don't`` → ``do``, ``not``)."""
    low = raw.lower()
    if low in _NO_APOS:
        return (_NO_APOS[low], "not")
    if low in _NO_APOS_SUBJECT:
        return _NO_APOS_SUBJECT[low]
    if "'" not in low:
        return (low,)
    base, _, suf = low.partition("'")
    if suf == "t" and base.endswith("n"):
        stem = base[:-1]
        return (_NT.get(stem, stem), "not")
    if suf == "s":
        return (base, "is") if base in _S_IS else (base, POSS)
    if suf in _SUFFIX:
        return (base, _SUFFIX[suf])
    return (low.replace("'", ""),)


_PART_EX = re.compile(r"\bpart[- ]?ex(?:ed|'d|changed)\b", re.IGNORECASE)


def says_no_subject(tok: str) -> bool:
    """Whether a clause led by this word leaves out its "I" ("picked up a trek", "sold the
    Focus")."""
    return _says_no_subject(tok)


def _unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> tuple[str, ...]:
    """Lowercase tokens with contractions undone (``don't`` → ``do not``, ``I'm`` → ``i am``,
    ``user's`` → ``user 's``) and punctuation kept as clause breaks."""
    text = text.translate(_APOS)
    if "ex" in text and "art" in text:
        text = _PART_EX.sub("traded in", text)  # "part-exed the golf": traded it in
    if not text.isascii():
        text = _unaccented(text)  # "Tomás" and "tomas" are one name, as people type them
    if "(" in text or ")" in text:
        text = text.replace("(", ",").replace(")", ",")  # an aside is a clause of its own
    if text.isascii() and "'" not in text:
        toks = _TOKEN.findall(text.lower())
        if _NO_APOS.keys().isdisjoint(toks) and _NO_APOS_SUBJECT.keys().isdisjoint(toks):
            return _ordinals_read(tuple(toks))  # nothing to undo (most facts)
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        out += _expand(raw)
    return _ordinals_read(tuple(out))


_ORDINAL = frozenset({"st", "nd", "rd", "th"})


def _ordinals_read(toks: tuple[str, ...]) -> tuple[str, ...]:
    """"the 21st" is the number 21: an ordinal's ending is no word of its own."""
    if _ORDINAL.isdisjoint(toks):
        return toks
    return tuple(t for k, t in enumerate(toks)
                 if not (t in _ORDINAL and k and toks[k - 1][:1].isdigit()))


def is_content(tok: str) -> bool:
    return (tok not in BREAKS and tok != POSS and tok not in tm.STOPWORDS and tok not in _TIME
            and tok not in _DETERMINERS and tok not in NEGATORS and len(tok) > 0)


def said_plainly(toks: tuple[str, ...]) -> str:
    """A fact's tokens as one plain line, without its punctuation (what a whole older fact
    says, named as the value a change ended)."""
    return " ".join(t if t != POSS else "'s" for t in toks if t not in BREAKS).replace(" 's", "'s")


def first_group(m: re.Match[str] | None) -> str | None:
    """The first group of a match that matched (patterns of alternatives, each with its own
    group), or None for no match."""
    return next((g for g in m.groups() if g), None) if m is not None else None


def content(toks: tuple[str, ...] | list[str]) -> frozenset[str]:
    """Folded content words (numbers as ``#n``)."""
    return frozenset(folded(toks))


@lru_cache(maxsize=1 << 16)
def _folded_one(tok: str) -> str:
    """The folded content word of one token, or ``""`` when it is not one."""
    if is_content(tok) or tok[:1].isdigit():
        f = fold(tok)
        if f not in _TIME:
            return f
    return ""


def folded(toks: tuple[str, ...] | list[str]) -> list[str]:
    """The folded content words in order (numbers as ``#n``; "weekends" is a time word)."""
    return [f for f in map(_folded_one, toks) if f]


@dataclass(frozen=True, slots=True)
class Subject:
    who: tuple[str, ...]
    """``("user",)``, ``("user", "sister")``, ``("ana",)``: folded."""
    end: int
    """Index of the first token after the subject."""


def subject(toks: tuple[str, ...]) -> Subject:
    """Who a fact is about: the user (I, we, the user, "Ana and I"), something of the user's
    ("my favourite colour", "the user's sister") or a named party; discourse words before it
    ("Actually,", "Turns out") are skipped. "One of my cats" is about the user."""
    start = None
    if toks[:3] == ("can", "not", "believe"):
        toks = toks[3:]  # "cant believe the twins are juniors": the twins
    lead = next((k for k, t in enumerate(toks) if t not in BREAKS and t not in _DISCOURSE), None)
    if lead is not None and (_says_no_subject(toks[lead]) or _gerund_led(toks, lead)
                             or toks[lead] in _NOTE_VERBS or (
                                 toks[lead] in _NOTE_ROLES and toks[lead + 1:lead + 2] in _OF_AT)
                             or (
            toks[lead] in ("no", "never", "not") and toks[lead + 1:lead + 2] != ("one",))):
        return Subject(("user",), lead)  # "Sold the Focus", "Down to 84 kg", "No pets any more"
    for i, t in enumerate(toks[:_LEADS_TO_SKIP]):
        if t in _FIRST_PERSON or t == "user":
            if t in ("my", "our") and i and toks[i - 1] == "of":
                continue  # "one of my cats ..."
            start = i
            break
    if start is None:
        start = 0
        while start < len(toks) and (toks[start] in BREAKS or toks[start] in _DISCOURSE
                                     or toks[start] in _EVERY):
            start += 1  # "Weekly team meeting: Monday 9am": the team meeting
        if start >= len(toks):
            return Subject((), len(toks))
        if toks[start] == "the" and start + 1 < len(toks):
            start += 1
            while start + 1 < len(toks) and toks[start] in _DROPPED_ADJ:
                start += 1  # "the old macbook finally died": the macbook
            if toks[start] == "family" and start + 1 < len(toks) and is_content(toks[start + 1]):
                return Subject(("user", fold(toks[start + 1])), start + 2)  # "the family car"
    t = toks[start]
    if t in ("i", "we", "me", "us"):
        return Subject(("user",), start + 1)
    j = start + 1
    if t in ("my", "our"):
        owner = "user"
    elif j < len(toks) and toks[j] == POSS:
        if t != "user" and toks[j + 1:j + 2] and _is_done(toks[j + 1]):
            return Subject((fold(t),), j)  # "the knitting's fallen", "therapy's moved": is/has
        owner = "user" if t == "user" else fold(t)
        j += 1
    elif t == "users" and j < len(toks) and is_content(toks[j]):
        owner = "user"  # "the users parents": the possessive written without its apostrophe
    else:
        return Subject(("user",) if t == "user" else (fold(t),), j)
    words: list[str] = []
    while j < len(toks) and toks[j] in _DETERMINERS:
        j += 1
    while j < len(toks) and toks[j] in _DROPPED_ADJ:
        j += 1
    if j < len(toks) and is_content(toks[j]):
        words.append(fold(toks[j]))
        j += 1
        if toks[j - 1] in _COMPOUND and j < len(toks) and is_content(toks[j]):
            words.append(fold(toks[j]))
            j += 1
    while toks[j:j + 1] == (POSS,) and j + 1 < len(toks) and toks[j + 1] in PEOPLE:
        words.append(fold(toks[j + 1]))  # "my son's friend": another party ("my son's name": his)
        j += 2
    if owner == "user" and toks[j:j + 2] in (("and", "i"), ("and", "me")):
        return Subject(("user",), j + 2)  # "my wife and I live in Oslo": we
    return Subject((owner, *words), j)


_DISCOURSE = _set(
    "honestly frankly basically anyway anyways well oh ok okay yeah yes so btw ugh lol tbh "
    "update fyi also plus totally completely literally officially seriously definitely "
    "apparently luckily sadly unfortunately fortunately thankfully finally")
"""Words a person opens with before the subject ("honestly the birding's ...", "so I moved")."""
_ELLIPSIS = _set(
    "got gave sold quit left went took made had been bought began begun ran drove flew "
    "finally just recently down up please done off back cut put started stopped getting "
    "switching picked blew spent lost found paid sent sold won shut let")
"""Words a person starts with when they leave out the "I" ("Sold the Focus", "Finally bought
a car"); so does a past-tense verb ("Moved everything to Bitwarden")."""


_DONE = _set("off gone been got over done out back moved fallen gotten taken become put made "
             "had")


def _past_form(tok: str) -> bool:
    return len(tok) > 4 and tok.endswith("ed") and tok not in _NOT_VERBS


def _is_done(tok: str) -> bool:
    """A participle or particle after "'s": the "'s" is "is" or "has", not a possessive
    ("kofi's loving year 6")."""
    return tok in _DONE or _past_form(tok) or (len(tok) > 5 and tok.endswith("ing")
                                               and tok not in _NOT_GERUNDS)


_NOTE_VERBS = _set(
    "goes does has lives works cycles drives runs plays uses volunteers grows keeps takes reads "
    "eats drinks wears owns rents attends teaches studies walks swims trains coaches sings "
    "prefers loves likes hates enjoys visits commutes shops banks pays earns gets makes knits "
    "bakes cooks writes speaks feeds helps manages supports follows sleeps wakes smokes "
    "catches rides sees belongs holds shares cares subscribes sponsors donates tutors mentors "
    "fosters collects paints hikes climbs sails dances skates surfs")
"""A note that leaves out its subject, led by a verb ("Goes to PureGym", "Cycles to work",
"Lives with two housemates"): it is the user's."""
_EVERY = _set("weekly monthly daily nightly annual yearly fortnightly regular usual")
_NOTE_ROLES = _set("member volunteer treasurer governor trustee chair secretary captain supporter "
                   "fan regular patron subscriber")
_OF_AT = frozenset({("of",), ("at",), ("for",), ("in",), ("with",)})
"""A note led by the user's role ("Member of the local golf club."): the user's."""
_IS_FORMS = frozenset({"is", "are", "was", "were", "has", POSS})


def _gerund_led(toks: tuple[str, ...], lead: int) -> bool:
    """"wearing a fitbit 24/7", "living in Leeds": a note led by a verb's -ing form is the
    user's, unless the -ing word is itself the subject ("running is my hobby")."""
    t = toks[lead]
    return (len(t) > 5 and t.endswith("ing") and t not in _NOT_GERUNDS
            and lead + 1 < len(toks) and toks[lead + 1] not in _IS_FORMS)


_NOT_GERUNDS = _set("morning evening during nothing something anything everything thing "
                    "king ring spring string wedding building ceiling darling sibling")


def _says_no_subject(tok: str) -> bool:
    return tok in _ELLIPSIS or _past_form(tok)


_NOT_VERBS = _set("indeed hundred seed speed breed need bed red shed alfred jared")


@lru_cache(maxsize=1)
def _people() -> frozenset[str]:
    return frozenset(fold(w) for w in PEOPLE) | PEOPLE


def other_party(who: tuple[str, ...]) -> bool:
    """Whether a possessed subject names another party ("my sister", "my wife", "my dog")."""
    return len(who) > 1 and who[-1] in _people()


SOFT_TIME = _set(
    "monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays "
    "saturday saturdays sunday sundays morning mornings evening evenings night nights "
    "weekday weekdays")
"""When a habit happens ("on Sundays"): not what the habit is, though it can be a value
("the gym on Thursdays now, not Mondays")."""
SOFT_FOLDED = frozenset(fold(w) for w in SOFT_TIME)
""":data:`SOFT_TIME` folded, as content words are."""


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    unit: str
    """The folded word the number measures or counts ("kg", "cat"), ``age`` for "is 7" /
    "7 years old" / "turned 7", or ``""``."""
    said: str
    """The number and its unit as written ("three coffees", "7")."""


_OLDEST = 130
"""A bare "is N" above this is no one's age."""
_CONTAINERS = frozenset({"cup", "cups", "glass", "glasses", "pint", "pints", "mug", "mugs",
                         "bottle", "bottles", "can", "cans", "shot", "shots", "slice", "slices"})
"""What a count of a drink or food is measured in ("three cups of coffee")."""
_AGE_VERBS = frozenset({"turned", "turns", "turning", "turn", "aged"})
_SPAN = {"time": "time", "times": "time", "day": "day", "days": "day", "night": "night",
         "nights": "night", "hour": "hour", "hours": "hour", "week": "week", "weeks": "week",
         "month": "month", "months": "month"}
"""Time words a number counts ("four days a week"): units, though they are no content words."""
SPAN_UNITS = frozenset({"o'clock", *_SPAN.values(), *(f"per {u}" for u in _SPAN.values())})
"""The units :func:`numbers` gives that are no content word of the fact: "at 6" (``o'clock``),
"four days a week" (``day``), "1100 a month" (``per month``)."""
_TIMES = {"once": 1.0, "twice": 2.0}
_UNIT_SKIP = frozenset({"of", "more", "or", "so", "about", "around", "my", "our", "the"})


def _value(tok: str) -> float | None:
    if tok[:1].isdigit():
        try:
            return float(tok.replace(",", "").replace(":", "."))
        except ValueError:
            return None
    n = NUMBER_WORDS.get(tok)
    return float(n) if n is not None else None


def numbers(toks: tuple[str, ...]) -> tuple[Number, ...]:
    """Each number with what it is bound to: the content word right after it (its unit or
    what it counts), or ``age`` ("is 29", "29 years old", "turned 30")."""
    out: list[Number] = []
    for i, t in enumerate(toks):
        v = _value(t)
        if v is None:
            if t in _TIMES:
                out.append(Number(_TIMES[t], "time", t))  # "once a week"
            continue
        k = i - 1
        while k >= 0 and toks[k] in _TIME:
            k -= 1  # "I'm now 31": the age is bound past "now"
        before = toks[k] if k >= 0 else ""
        j = i + 1
        while j < len(toks) and toks[j] in _UNIT_SKIP:
            j += 1
        after = toks[j] if j < len(toks) else ""
        said = t
        years_old = after in ("year", "years") and toks[j + 1:j + 2] == ("old",)
        if after in ("month", "months", "week", "weeks") and toks[j + 1:j + 2] == ("old",):
            v = v / (12 if after.startswith("month") else 52)  # "a puppy, five months old"
            years_old = True
        bare = (before in ("is", "am", "are") and (after in BREAKS or after in _TIME or not after)
                and v <= _OLDEST)  # "my salary is 62,000" is no age
        birthday = after in ("birthday", "bday")  # "his 4th birthday"
        hit = before in ("hit", "hits") and (not after or after in BREAKS or after in _TIME
                                             or after in ("on", "in", "at"))
        if years_old or bare or birthday or before in _AGE_VERBS or hit:  # "Bruno hit 8"
            unit = "age"
        elif after in _CONTAINERS and toks[j + 1:j + 2] == ("of",) and toks[j + 2:j + 3]:
            unit = fold(toks[j + 2])  # "three cups of coffee" counts coffee
            said = " ".join(toks[i:j + 3])
        elif after and is_content(after) and _value(after) is None:
            unit = fold(after)
            said = " ".join(toks[i:j + 1])
        elif after in _SPAN and j == i + 1:
            unit = _SPAN[after]  # "four days a week", "three times a week"
            said = " ".join(toks[i:j + 1])
        elif after in ("a", "an", "per") and toks[i + 2:i + 3] and toks[i + 2] in _SPAN:
            unit = "per " + _SPAN[toks[i + 2]]  # "1100 a month"
            said = " ".join(toks[i:i + 3])
        elif before == "at" and (not after or after in BREAKS or after in _TIME):
            unit = "o'clock"  # "I get up at 6"
        else:
            unit = ""
        out.append(Number(v, unit, said))
    return tuple(out)


CACHES = (fold, _expand, _folded_one, _people)
"""The per-word caches (cleared by :func:`..conflicts.clear_caches`)."""
