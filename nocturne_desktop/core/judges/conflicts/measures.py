"""Measures (S-WORDS-1): a quantity a person has one value of at a time, said again with
another value, with or without a word of change.

People rarely say "my rent is now 925"; they say "first payment at the new rate went out,
925 a month", "deposit fund hit R210k", "weigh-in this morning, 84.5kg", "bp was 122/80 at my
checkup". What makes these corrections is knowledge of the thing measured, not the wording: a
rent, a salary, a weight, a savings pot, a loan's balance, a pension, an hourly rate, a blood
pressure, the hours slept a night, a count of the animals kept or of grandchildren has one
value now, so a newer value of the same measure, of the same party, ends the older one.

A measure is read from a number and the word that says what it measures: the number's unit
("84.5kg", "92 kilos", "4 hrs a night", "12 chickens" / "7 hens"), or a measure word in the
same clause before it ("rent is $1,850", "base is 85k", "deposit fund hit R210k"). "k" after a
number multiplies it ("85k"). Not a measure: a goal or a limit ("target", "aim", "budget"), a
change by an amount ("lost 8 kg", "saved another 2k": how much, not what), a day ("paid on the
28th"), a figure of one time ("ran 10k today", one night's sleep; a weighing or a check-up is
a measurement, so it counts), a thing's own measure ("my suitcase weighed 23 kg") or another
party's ("my sister's rent", "she's 30 kg" of the dog). Pure; read on the change reader's
clauses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from nocturne_desktop.core.judges.conflicts.words import (
    NUMBER_WORDS,
    SENTENCE_END,
    fold,
    other_party,
)

__all__ = ["KEY", "MEASURE_WORDS", "Measure", "measures", "probe_keys", "remeasured"]

KEY = "@measure"
"""The finder's key for an older fact holding a measure, and for a newer one probing it."""

_BY_UNIT = {
    "kg": "weight", "kgs": "weight", "kilo": "weight", "kilos": "weight", "kilogram": "weight",
    "kilograms": "weight", "lbs": "weight", "lb": "weight", "stone": "weight", "st": "weight",
    "hour": "sleep-hours", "hours": "sleep-hours", "hrs": "sleep-hours", "hr": "sleep-hours",
    "chicken": "hens", "chickens": "hens", "hen": "hens", "hens": "hens", "chooks": "hens",
    "grandchild": "grandchildren", "grandchildren": "grandchildren", "grandkids": "grandchildren",
    "grandkid": "grandchildren", "hive": "hives", "hives": "hives", "beehive": "hives",
    "beehives": "hives", "colony": "hives", "colonies": "hives",
}
"""Units that say what is measured whatever the clause says besides ("hours" counts only as
the hours slept a night, see :data:`_HABIT`; else "$60/hour" is a rate, read by its word)."""
_HABIT = re.compile(r"\b(?:a|per|every|each|most) nights?\b|\bnightly\b")
"""The hours slept as a habit ("4 hrs a night, every night"), not one night ("last night")."""
_BY_WORD = {
    "rent": "rent", "mortgage": "mortgage",
    "salary": "income", "earn": "income", "earns": "income", "earning": "income",
    "income": "income", "wage": "income", "base": "income",
    "deposit": "savings", "savings": "savings", "saved": "savings", "pot": "savings",
    "rate": "rate", "charge": "rate", "charges": "rate",
    "weigh": "weight", "weighs": "weight", "weighed": "weight", "weight": "weight",
    "bp": "blood-pressure", "pressure": "blood-pressure",
    "loan": "debt", "balance": "debt", "debt": "debt", "owe": "debt", "owes": "debt",
    "pension": "pension", "scales": "weight", "owed": "debt", "outstanding": "debt",
    "finance": "debt", "basic": "income", "council": "council-tax",
}
"""Words that say which single-valued quantity a number after them in the clause is."""
_AFTER = frozenset({"saved", "owed", "owe", "basic", "outstanding"})
"""Measure words that may follow their number ("6k saved")."""
_NOUN_AFTER = frozenset({"rent", "mortgage", "pension", "loan", "salary", "savings"})
"""Measures named after their number, with a word before them ("on the mortgage")."""
MEASURE_WORDS = frozenset(_BY_WORD) | frozenset(_BY_UNIT)
"""Every word a measure is read from (a change sign: a fact holding one is read in full)."""
_NOT_VALUE = frozenset({
    "target", "goal", "aim", "aiming", "budget", "limit", "max", "maximum", "minimum", "min",
    "lost", "lose", "losing", "gained", "gain", "another", "extra", "more", "less", "off",
    "by", "of", "per", "between", "each", "every", "than", "under", "over", "nearly", "almost",
    "to", "the", "on",
})
"""Words right before a number (a word or two back) that make it no value of the measure:
a goal, a limit, a change by an amount, a comparison, a day ("paid on the 28th"). "to" is
judged on its own (below)."""
_GOALS = frozenset({"target", "goal", "aim", "aiming", "budget", "limit", "hoping", "want",
                    "wants", "trying"})
"""A goal or a wish anywhere before the number in its clause ("goal weight is 84 kg")."""
_TO_VALUE = frozenset({"up", "down", "dropped", "rose", "risen", "fell", "went", "gone",
                       "hiked", "bumped", "put", "moved", "increased", "decreased", "raised",
                       "lowered", "cut", "upped", "come"})
"""Before "to": a move to a new value ("hiked us to 2100", "down to 7 hens")."""
_ONE_TIME = re.compile(r"\b(?:ran|run|walked|cycled|swam|spent|bought|paid for|won|cost|costs)\b")
"""A figure of one time ("ran 10k today", "spent 200 on shoes"): not a measure's value."""
_WE_NOW = re.compile(r"\bso (?:we|were|we are|i|im|i am)\b")
""""…, so were down to four hens": the count is ours, whoever led the clause."""
_USUAL = re.compile(r"\b(?:usually|normally|typically|on average|most days|generally)\b")
_ONE_READING = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|afternoon|evening))\b")
"""What is usually so, and one reading of a day: the reading does not change the usual."""
_OTHERS = frozenset({"his", "her", "their", "he", "she", "him", "sister", "brother", "mum", "mom",
                     "dad", "mother", "father", "friend", "husband", "wife", "partner", "son", "daughter",
                     "neighbour", "neighbor", "colleague", "boss", "flatmate", "roommate"})
"""Another person's measure ("my sister's rent", "his salary"): not the user's."""




@dataclass(frozen=True, slots=True)
class Measure:
    key: str
    value: float
    said: str
    at: int = 0
    """Where its number stands in the tokens read."""


def _number(tok: str) -> float | None:
    if tok[:1].isdigit():
        try:
            return float(tok.replace(",", "")) if tok.count(":") == 0 else None
        except ValueError:
            return None
    n = NUMBER_WORDS.get(tok)
    return float(n) if n is not None and tok not in ("second",) else None


def measures(toks: tuple[str, ...], first: int = 0) -> tuple[Measure, ...]:
    """The measures stated from token ``first`` on (a measure word may stand before it in the
    sentence), first of each key (module docstring)."""
    if MEASURE_WORDS.isdisjoint(toks):
        return ()
    out: dict[str, Measure] = {}
    for i, t in enumerate(toks):
        v = _number(t) if i >= first else None
        if v is None:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        said = t
        if toks[i + 1:i + 4] == ("and", "a", "half"):
            v += 0.5  # "a solid 7 and a half hours"
            said = t + " and a half"
            nxt = toks[i + 4] if i + 4 < len(toks) else ""
        if nxt == "k":
            v *= 1000
            said = t + "k"
            nxt = toks[i + 2] if i + 2 < len(toks) else ""
        before = toks[max(0, i - 2):i]
        if before[-1:] == ("to",):
            if not (set(toks[max(0, i - 4):i - 1]) & _TO_VALUE):
                continue  # "get to 80", "from 90 to 85" without a word that moves it
        elif set(before) & _NOT_VALUE and not (before[-1:] == ("of",) and before[0] in _BY_WORD):
            continue  # but "a rate of 450", "balance of 24,300"
        start = i  # a measure word is looked for back to the sentence's start, 8 words at most
        while (start > 0 and toks[start - 1] not in SENTENCE_END and i - start < 8
               and _number(toks[start - 1]) is None):
            start -= 1
        if start > 0 and _number(toks[start - 1]) is not None:
            start += 1  # "paid 900 rent plus 120 for bills": "rent" is the 900's
        if not _GOALS.isdisjoint(toks[start:i]):
            continue  # "my goal weight is 84 kg"
        key = _BY_UNIT.get(nxt)
        if key == "sleep-hours" and not _HABIT.search(" ".join(toks)):
            key = None  # "$60/hour" is a rate; "slept 4 hours last night" is one night
        if key is not None:
            out.setdefault(key, Measure(key, v, f"{said} {nxt}", i))
            continue
        led = [_BY_WORD[w] for w in toks[start:i] if w in _BY_WORD]
        if not led and nxt in _AFTER:
            led = [_BY_WORD[nxt]]  # "6k saved", "38,000 owed", "£44,500 basic"
        if not led:  # "paying 1,060 a month on the mortgage"
            led = [_BY_WORD[w] for k, w in enumerate(toks[i + 1:i + 6], i + 1)
                   if w in _NOUN_AFTER and toks[k - 1] in ("the", "my", "our", "on", "in", "for")][:1]
        if led:
            out.setdefault(led[-1], Measure(led[-1], v, said, i))
    return tuple(out.values())


def probe_keys(toks: tuple[str, ...], first: int = 0) -> list[str]:
    """The finder's keys of a fact's measures (indexed for an older fact, probed by a newer),
    of the numbers from token ``first`` on."""
    return [f"{KEY}:{m.key}" for m in measures(toks, first)]


def _others(toks: Iterable[str]) -> bool:
    return not _OTHERS.isdisjoint(toks)


_MEASURE_FOLDS = frozenset(fold(w) for w in MEASURE_WORDS) | frozenset({"fund", "blood"})


def _mine(who: tuple[str, ...]) -> bool:
    """The user, a thing of the user's, no one said, or the measure itself leading its clause
    ("deposit fund hit R210k", "bp was 122/80")."""
    return not who or who[0] == "user" or who[0] in _MEASURE_FOLDS


_NOUNS = frozenset(w for w in _BY_WORD if not w.startswith(("weigh", "earn", "owe", "charge")))
_VERBS = frozenset({"is", "are", "was", "were", "'s", "has", "weighs", "weighed", "weigh",
                    "earns", "costs", "went", "hit", "came"})


def _names_measure(toks: tuple[str, ...]) -> bool:
    """"my student loan balance is …": the possessed noun phrase names the measure ("my
    suitcase weighed 23 kg", "the user's suitcase was 23 kg" name a thing, whose it is)."""
    first = next((k for k, t in enumerate(toks) if _number(t) is not None), len(toks))
    owner = next((k for k, t in enumerate(toks[:min(6, first)]) if t in ("my", "our", "'s")), None)
    if owner is None:
        return True  # no possessed thing before the value ("bp was 122/80 at my checkup")
    for t in toks[owner + 1:owner + 6]:
        if t in _VERBS:
            return False
        if t in _NOUNS:
            return True
    return False


_LEAD_SKIP = frozenset({"the", "my", "our", "new", "car", "house", "student", "monthly"})


def _led_by_measure(toks: tuple[str, ...]) -> bool:
    """A clause whose first words name a measure ("salary's 55k", "car savings pot is at …",
    "Monthly mortgage payment is £870", "Car loan outstanding: about £7,200"), or that is
    the measure's value alone ("£44,500 basic")."""
    if toks[:1] and _number(toks[0]) is not None and toks[1:2] and toks[1] in _AFTER:
        return True
    lead = [t for t in toks[:4] if t not in _LEAD_SKIP and _number(t) is None]
    said = not _VERBS.isdisjoint(toks[:6]) or ":" in toks[:5]  # "… is £870", "…: about £7,200"
    return said and any(t in _NOUNS for t in lead[:3])


def remeasured(a_toks: tuple[str, ...], a_who: tuple[str, ...], b_toks: tuple[str, ...],
               b_who: tuple[str, ...],
               b_sentence: tuple[str, ...] = ()) -> tuple[str, str, str] | None:
    """("amount", old value, new value) when the newer clause (``b_toks``, ending
    ``b_sentence`` when given: its measure word may stand before it) gives one of the older
    fact's measures another value, for the same party (module docstring)."""
    if other_party(a_who) or other_party(b_who) or _others(a_toks):
        return None
    if not ((_mine(a_who) or _led_by_measure(a_toks))
            and (_mine(b_who) or _led_by_measure(b_toks) or _WE_NOW.search(" ".join(b_toks)))):
        return None  # "Tom earns 50k": Tom's
    if any(who[1:] and not _names_measure(toks) for toks, who in ((a_toks, a_who), (b_toks, b_who))):
        return None  # "my suitcase weighed 23 kg": the suitcase's weight
    if _ONE_TIME.search(" ".join(b_toks)):
        return None
    if _USUAL.search(" ".join(a_toks)) and _ONE_READING.search(" ".join(b_sentence or b_toks)):
        return None  # "usually around 120/80" / "145/95 at the dentist today": one reading
    said = b_sentence or b_toks
    new = {m.key: m for m in measures(said, len(said) - len(b_toks))
           if not _others(said[max(0, m.at - 5):m.at])}  # "my sister's rent is 1,300": hers
    for old in measures(a_toks):
        m = new.get(old.key)
        if m is not None and abs(m.value - old.value) > 1e-9 * max(1.0, old.value):
            return "amount", old.said, m.said
    return None
