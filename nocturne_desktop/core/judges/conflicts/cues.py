"""Change cues (S-WORDS-1): the words in a newer fact that name what changed, read from its
tokens alone: "from X to Y" with a change verb, ", not X" / "X not Y" / "instead of X", a verb
that ends a state with its object ("sold the Focus", "quit the choir", "broke up with Sam"), a
loss ("my cat Luna died"), a changed kind ("changed schools"). :mod:`.changes` reads each
fact's cues once and judges them against the older fact. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from nocturne_desktop.core.judges.conflicts.words import (
    BREAKS,
    POSS,
    content,
    is_content,
)
from nocturne_desktop.core.judges.conflicts.words import _set as _words_set

__all__ = ["CHANGE_VERBS", "CLAUSE_JOIN", "COPULA", "EVENT", "GONE_VERBS", "LOSS", "Cue", "clause_end",
           "read_cues"]

COPULA = frozenset({"is", "are"})
CLAUSE_JOIN = frozenset({"but", "and", "so", "while", "because", "though", "although"})
"""Conjunctions that may open a clause of its own."""


CHANGE_VERBS = _words_set(
    "moved move moving switched switch switching changed change changing relocated relocate "
    "promoted renamed transferred upgraded downgraded shifted converted swapped rose risen "
    "fell grew dropped went gone increased decreased")
"""Verbs that, with "from X to Y", say a value changed."""
_MOTION_NEEDS_PARTICLE = frozenset({"went", "gone"})
""""Went from Paris to Rome" is a trip; "went up from 900 to 1000" is a change."""
_NOT_REDONE = _words_set("returned retired rented repeated reached recovered remembered")


def _redone(tok: str) -> bool:
    """A verb that does a thing again ("remortgaged", "rebooked", "re-registered"): with "from
    X to Y" a change, like "switched" ("returned from Paris to Rome" is a trip)."""
    return (tok.startswith("re") and tok.endswith("ed") and len(tok) >= 8
            and tok not in _NOT_REDONE)

_GONE: dict[str, tuple[str, ...]] = {
    "sold": (), "sell": (), "selling": (),
    "quit": (), "quitting": (), "quits": (),
    "left": (), "leaving": (),
    "cancelled": (), "canceled": (), "cancel": (),
    "replaced": (), "swapped": (), "traded": ("in",), "ditched": (), "dumped": (),
    "dropped": ("out", "of"),
    "stopped": (), "stop": (),
    "retired": ("from",), "resigned": ("from",),
    "divorced": (), "separated": (), "broke": ("up", "with"), "split": ("up", "with"),
    "called": ("off",),
    "shaved": ("off",), "gave": ("up", "on"), "given": ("up", "on"), "giving": ("up", "on"),
    "moved": ("out", "of"), "got": ("rid", "of"), "get": ("rid", "of"),
    "finished": ("at",), "graduated": ("from",),
    "handed": ("in", "notice", "at", "my", "their", "the"),
    "nicked": (), "stole": (), "pinched": (),
}
"""Verbs that end a state, with the particles that may follow them before the object."""
_GONE_NEEDS = {"got": "rid", "get": "rid", "called": "off", "handed": "notice",
               "moved": "out", "finished": "at", "graduated": "from"}
"""A verb that ends a state only with this particle ("got rid of", not "got a dog")."""
_INTRANSITIVE = frozenset({"divorced", "separated", "broke", "split", "called"})
"""Verbs whose object may be the party named beside the user ("Ana and I divorced")."""
_TRIP = re.compile(r"\b(?:for (?:a|the|two|three|few|couple)\b.{0,20}"
                   r"\b(?:week|weekend|day|days|holiday|trip|night)|on holiday|on a trip)\b")


_OBJECT_END = _words_set(
    "and but because so for with to at in on from as when while since after before until "
    "instead than which who that last this next yesterday today tonight ago recently now over "
    "during through around "
    "again") | BREAKS
_EVENT = re.compile(
    r"\b(?:at \d+|today|tonight|yesterday|this (?:morning|afternoon|evening)|for lunch|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|early|on the way)\b")
"""A clause about one moment ("left the office at 6 today"): an event, not a change."""


@dataclass(frozen=True, slots=True)
class Cue:
    kind: str
    """``from-to``, ``not``, ``gone``, ``negated`` or ``amount``."""
    old: frozenset[str]
    """Folded content words the older fact must say (the old value), numbers as ``#n``."""
    old_text: str
    said: str
    """The cue as written in the newer fact (for the reason a person reads)."""
    at: int = 0
    """Index of the cue's first token (which clause it belongs to)."""
    kind_of: bool = False
    """The cue names a kind ("changed schools"): the older fact's whole noun phrase of that
    kind ("St Mary's school") is what changed."""




def _clause_end(toks: tuple[str, ...], i: int) -> int:
    while i < len(toks) and toks[i] not in BREAKS:
        i += 1
    return i


def _phrase(toks: tuple[str, ...], i: int, stop: frozenset[str] = _OBJECT_END) -> tuple[str, ...]:
    """The words of the noun phrase starting at ``i`` (up to a preposition or a break)."""
    out: list[str] = []
    while i < len(toks) and toks[i] not in stop:
        if toks[i] == POSS:
            out.clear()  # "the user's car" → "car"
        else:
            out.append(toks[i])
        i += 1
    return tuple(out)


def _cue(kind: str, words: tuple[str, ...], said: tuple[str, ...], at: int) -> Cue | None:
    old = content(list(words))
    if not old:
        return None
    return Cue(kind, old, " ".join(w for w in words if is_content(w) or w[:1].isdigit()),
               " ".join(said), at)


def _from_to(toks: tuple[str, ...]) -> list[Cue]:
    out: list[Cue] = []
    if "from" not in toks:
        return out
    for i, t in enumerate(toks):
        if t != "from":
            continue
        verb = next((k for k in range(i - 1, max(-1, i - 7), -1)
                     if toks[k] in CHANGE_VERBS or _redone(toks[k])), None)
        if verb is None:
            continue
        if (toks[verb] in _MOTION_NEEDS_PARTICLE and toks[verb + 1:verb + 2] not in (
                ("up",), ("down",), ("over",)) and not toks[i + 1][:1].isdigit()):
            continue  # "went from 1200 to 1350": an amount, not a trip
        end = i + 1
        while end < len(toks) and toks[end] != "to" and toks[end] not in BREAKS:
            end += 1
        if end >= len(toks) or toks[end] != "to":
            continue
        cue = _cue("from-to", toks[i + 1:end], toks[verb:_clause_end(toks, end)], verb)
        if cue:
            out.append(cue)
    return out


_NOT_CUES = frozenset({"not", "no", "instead", "rather"})


def _not_value(toks: tuple[str, ...], marked: bool) -> list[Cue]:
    """", not X" / ", no longer X" closing a clause; "instead of X" / "rather than X" in a
    statement marked as holding now."""
    out: list[Cue] = []
    if not _NOT_CUES.intersection(toks):
        return out
    for i, t in enumerate(toks):
        if t in ("not", "no") and i and (toks[i - 1] in (",", "now", ";")
                                         or (t == "not" and _value_before(toks, i))):
            k = i + 1
            if t == "no":
                if toks[k:k + 1] != ("longer",):
                    continue
                k += 1
            end = _clause_end(toks, k)
            words = toks[k:end]
            if any(w in ("is", "am", "are", "do", "does", "have", "has", "was") for w in words):
                continue  # ", not that I mind": a clause of its own, not a value
            cue = _cue("not", words, toks[max(0, i - 1):end], i)
            if cue:
                out.append(cue)
        elif marked and ((t == "instead" and toks[i + 1:i + 2] == ("of",))
                         or (t == "rather" and toks[i + 1:i + 2] == ("than",))):
            end = _clause_end(toks, i + 2)
            cue = _cue("not", toks[i + 2:end], toks[i:end], i)
            if cue:
                out.append(cue)
    return out


def _value_before(toks: tuple[str, ...], i: int) -> bool:
    """"my cat is Lula not Luna", "a data engineer not software": a value said right before
    "not" in a statement of what is (not "do not", "is not")."""
    return (is_content(toks[i - 1]) or toks[i - 1][:1].isdigit()) and any(
        w in COPULA or w in ("am", POSS) for w in toks[:i - 1])


def _gone(toks: tuple[str, ...], text: str) -> list[Cue]:
    out: list[Cue] = []
    if _GONE.keys().isdisjoint(toks) or _TRIP.search(text.lower()):
        return out
    for i, t in enumerate(toks):
        particles = _GONE.get(t)
        if particles is None or toks[i - 1:i] in (("not",), ("never",)):
            continue  # "haven't left the post office", "never stopped going": it goes on
        k = i + 1
        while k < len(toks) and toks[k] in particles:
            k += 1
        need = _GONE_NEEDS.get(t)
        if need is not None and need not in toks[i + 1:k]:
            continue
        while k < len(toks) and toks[k] in ("the", "a", "an", "my", "our", "his", "her",
                                          "their", "all"):
            k += 1
        words = tuple(w for w in _phrase(toks, k) if w not in _MANNER)
        if t == "moved" and len(words) > 1 and words[-1] in _DWELLING:
            words = words[:-1]  # "moved out of my parents' place": the parents' is what ended
        party = _beside_user(toks, i) if t in _INTRANSITIVE else None
        apart = t in ("broke", "split") and "up" in toks[i + 1:k] and "with" not in toks[i + 1:k]
        if party is not None and (not content(list(words)) or apart):
            words = (party,)  # "Ana and I divorced", "me and Jess split up a few weeks back"
        if _EVENT.search(" ".join(toks[i:_statement_end(toks, k)])):
            continue  # "left the office at 6 today": an event, not a change
        cue = _cue("gone", words, toks[i:_clause_end(toks, k)], i)
        if cue:
            out.append(cue)
        if party is not None and t == "called" and set(words) & _BOND:
            cue = _cue("gone", (party,), toks[i:_clause_end(toks, k)], i)
            if cue:  # "Sara and I called off the wedding": the engagement to Sara ended
                out.append(cue)
    return out


_BOND = frozenset({"wedding", "engagement"})
_MANNER = _words_set("completely entirely altogether totally fully for good")
_DWELLING = _words_set("place house flat home")
_USER_WORDS = frozenset({"i", "user", "me"})


def _beside_user(toks: tuple[str, ...], i: int) -> str | None:
    """The party named with the user right before ``toks[i]``: "Ana and I", "the user and
    Nora", "Nora and the user"."""
    if i >= 3 and toks[i - 2] == "and" and toks[i - 1] in _USER_WORDS:
        return toks[i - 3] if toks[i - 3] != "the" else None
    if i >= 3 and toks[i - 2] == "and" and toks[i - 3] in _USER_WORDS:
        return toks[i - 1]
    if i >= 4 and toks[i - 3] == "and" and toks[i - 2] == "the" and toks[i - 1] == "user":
        return toks[i - 4]
    return None


def _statement_end(toks: tuple[str, ...], i: int) -> int:
    """Where the statement holding ``toks[i]`` ends: a break or a conjunction ("handed in their
    notice at Nokia *and* starts at Ericsson on Monday": the Monday is the new job's)."""
    while i < len(toks) and toks[i] not in BREAKS and toks[i] not in CLAUSE_JOIN:
        i += 1
    return i


_LOSS = frozenset({"died", "stolen", "passed", "totalled", "totaled", "wrecked"})
"""Verbs by which the thing before them is gone ("my cat Luna died", "the Trek was stolen")."""
_LOSS_SKIP = frozenset({"was", "got", "has", "had", "been", "is", "away"})


def _lost_things(toks: tuple[str, ...]) -> list[Cue]:
    out: list[Cue] = []
    if _LOSS.isdisjoint(toks):
        return out
    for i, t in enumerate(toks):
        if t not in _LOSS or (t == "passed" and toks[i + 1:i + 2] not in ((), ("away",),
                                                                        ("on",))
                                  and toks[i + 1] not in BREAKS):
            continue  # "passed her grade 5" is no loss; "Nan passed away" is
        k = i - 1
        while k >= 0 and toks[k] in _LOSS_SKIP:
            k -= 1
        start = k
        while start >= 0 and toks[start] not in _OBJECT_END and toks[start] != POSS:
            start -= 1
        cue = _cue("gone", toks[start + 1:k + 1], toks[start + 1:i + 1], i)
        if cue:
            out.append(cue)
    return out


def _changed_kind(toks: tuple[str, ...]) -> list[Cue]:
    """"Changed schools", "switched banks": a change verb and a plural noun, no "from"."""
    out: list[Cue] = []
    if "changed" not in toks and "switched" not in toks and "moved" not in toks:
        return out
    for i, t in enumerate(toks[:-1]):
        nxt = toks[i + 1]
        if (t in ("changed", "switched", "moved") and nxt.endswith("s") and len(nxt) > 3
                and is_content(nxt) and "from" not in toks[i + 1:i + 4]
                and not _EVENT.search(" ".join(toks[i:_clause_end(toks, i)]))):
            cue = _cue("gone", (nxt,), toks[i:i + 2], i)
            if cue:
                out.append(replace(cue, kind_of=True))
    return out



def read_cues(toks: tuple[str, ...], text: str, marked: bool) -> tuple[Cue, ...]:
    """Every cue of a fact, in the order of the readers above."""
    return tuple(_from_to(toks) + _not_value(toks, marked) + _gone(toks, text)
                 + _lost_things(toks) + _changed_kind(toks))


clause_end = _clause_end
EVENT = _EVENT
GONE_VERBS = frozenset(_GONE)
LOSS = _LOSS
