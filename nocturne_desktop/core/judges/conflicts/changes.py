"""Change statements (S-WORDS-1): a newer fact that says, in the words people use, that an
older one no longer holds.

The newer fact is read for a change cue, and each cue names what changed:

- **from-to** — a change verb and "from X to Y" ("moved from Lisbon to Porto", "switched my
  editor from Vim to Emacs", "rent went up from 900 to 1000"): X is the old value. "Flew from
  Berlin to Hamburg" has no change verb: a trip is not a change;
- **not** — "Y now, not X" / ", no longer X" at the end of a clause ("my car is a Skoda now,
  not the Renault"), and "instead of X" / "rather than X" in a statement that says it holds
  now ("I run 8 km now instead of 5"; "had tea instead of coffee this morning" is an event);
- **gone** — a verb that ends a state, with its object X: sold, quit, left, cancelled,
  replaced / swapped / traded in X, got rid of, gave up, stopped, dropped (out of), retired
  from, broke up with, divorced, called off ("Ana and I divorced": X is Ana);
- **negated** — the newer fact negates what the older states, "no longer", "not … any more",
  "after all", "don't … now" ("I'm not vegan any more" for "I'm vegan");
- **amount** — the same thing counted or measured (same unit, or an age: "is 4", "turned 5")
  with another number, said as a change ("now", "turned", "down to", "grew to", "since"), or
  said as moving ("put my rent up to 1,100": :func:`.swaps.moved_amount`);
- **swap** / **role** / a **kind** — a value put in the place of another with no cue naming
  the old one ("I take milk in my coffee now", "retrained as a nurse", "drives to work now"):
  :mod:`.swaps`.

A clause with no subject is the user's ("Sold the Focus"); a dash ends a statement.

The older fact must be about the same party (:func:`same_party`: "my sister lives in Porto" is
not a change of where I live), stated affirmatively, not about the past ("used to"), and must
say X: its content words hold every content word of X (numbers included). Pure and cached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.conflicts import measures, shifts, slots, states, swaps
from nocturne_desktop.core.judges.conflicts.cues import (
    CHANGE_VERBS,
    CLAUSE_JOIN,
    COPULA,
    EVENT,
    GONE_VERBS,
    LOSS,
    Cue,
    clause_end,
    read_cues,
)
from nocturne_desktop.core.judges.conflicts.words import (
    _APOS,
    _FIRST_PERSON,
    _NO_APOS,
    _TOKEN,
    BREAKS,
    NEGATORS,
    NUMBER_WORDS,
    POSS,
    SENTENCE_END,
    SOFT_FOLDED,
    SPAN_UNITS,
    Number,
    Subject,
    content,
    fold,
    folded,
    is_content,
    numbers,
    other_party,
    says_no_subject,
    subject,
    tokens,
)
from nocturne_desktop.core.judges.conflicts.words import _set as _words_set

__all__ = ["ChangeReading", "Cue", "content", "index_words", "judge_change", "probes", "read",
           "same_party", "tokens"]

_GONE_OVER = re.compile(r"\b(?:gone|went|go|going|come|came)(?: \w+ly)? over to\b")
""""I've gone over to oat milk": a change of habit, said as a move."""
MARKERS = _words_set(
    "now nowadays currently anymore longer again after since turned turns became become "
    "actually correction switched changed new these moved finally officially misspoke typo "
    "misspelt misspelled")
"""Words that say a statement is a change or a correction ("now", "any more", "after all",
"these days", "actually")."""
_PAST = re.compile(r"\b(?:(?<!not )(?<!get )(?<!got )(?<!getting )(?<!be )(?<!been )(?<!am )"
                   r"(?<!is )(?<!are )used to|formerly|previously|once(?! (?:a|an|per|every)\b)|"
                   r"as a (?:kid|child|teenager)|when i was|back then|in the past|"
                   r"back in (?:\d{4}|the day)|at my (?:heaviest|lightest|worst|best)|"
                   r"before (?:we|i) (?:moved|came|left|got))\b")
NOT_YET = re.compile(
    r"\b(?:(?<!been )going to(?! bed| sleep| work| school| the gym| church| uni)|gonna|will|"
    r"might|(?<!in )(?<!since )(?<!last )(?<!this )(?<!of )"
    r"(?<!until )(?<!early )(?<!late )(?<!mid )(?<!end )(?<!\d )may(?! \d)|could|should|"
    r"would(?! say| call myself)|"
    r"thinking (?:of|about)|(?:i|we|they|he|she|user|you) plan (?:to|on)|plans (?:to|on)|"
    r"planning (?:to|on)|"
    r"want|wants|wanting|hope|hoping|hopes|(?<!from )next (?:week|month|year|spring|summer|"
    r"autumn|winter)|considering|maybe|if|aiming (?:to|for)|aim to)\b")
"""A plan or a wish ("I'm moving to Berlin next year", "I might sell the car"): not a change
that has happened."""
ADDED = re.compile(r"\b(?:also|too(?! (?:many|much|busy|far|late|early|long|expensive|pricey|"
                   r"hard|old|young))|as well|another|second job|either|an extra|"
                   r"extra (?:shifts?|days?|hours?)|on top of)\b")
"""An addition ("I also work at a bar"), not a replacement."""
_AMOUNT_CUES = frozenset({"now", "turned", "turns", "down", "up", "grew", "rose", "since",
                          "anymore", "actually", "fell", "dropped", "increased", "decreased",
                          "raised", "upped", "lowered", "weighed", "bump", "bumped", "hiked", "hit",
                          "birthday"})


@dataclass(frozen=True, slots=True)
class ChangeReading:
    """What the change rules read from one fact."""

    who: Subject
    words: frozenset[str]
    """Folded content words of the whole fact."""
    predicate: tuple[str, ...]
    """Folded content words after the subject, in order."""
    negated: bool
    past: bool
    marked: bool
    """Has a word that says it is a change (:data:`MARKERS`, "after all", "these days")."""
    cues: tuple[Cue, ...]
    numbers: tuple[Number, ...]
    copula: bool
    """The predicate starts with is/am/are ("I'm a nurse": its head is "nurse")."""
    toks: tuple[str, ...]
    tentative: bool
    """A plan or a wish ("might sell", "moving next year"): nothing has changed yet."""
    added: bool
    """An addition ("also", "too", "another"): nothing is replaced."""
    clauses: tuple[ChangeReading, ...]



def _phrase_of(r: ChangeReading, head: frozenset[str]) -> str:
    """The noun phrase of ``r``'s fact that ends in the word folded to ``head`` ("goes to Oak
    Park nursery" → "Oak Park nursery"), as written; ``""`` when there is none."""
    toks = r.toks
    for end, t in enumerate(toks):
        if fold(t) in head:
            start = end
            while start > 0 and (is_content(toks[start - 1]) or toks[start - 1] == POSS):
                start -= 1
            return " ".join(w for w in toks[start:end + 1] if w != POSS)
    return ""


def _names(text: str) -> frozenset[str]:
    """Folded words written capitalised other than at the start: names ("Carlos", "PureGym")."""
    words = _TOKEN.findall(text.translate(_APOS))
    return frozenset(fold(w.lower().split("'")[0]) for w in words[1:] if w[:1].isupper())


_NOT_NAMES = frozenset({"call", "nam", "mr", "mrs", "ms", "miss", "dr", "prof", "sir"})
"""Words before a name: "is called", "is named", titles ("Dr Haas" / "Dr Klein")."""


def _named_value(a: ChangeReading, b: ChangeReading, a_text: str,
                 b_text: str) -> tuple[str, str, str] | None:
    """"My boss is Maria" / "my new boss is Carlos": one thing of the user's, two names."""
    named_is = b.toks[b.who.end:b.who.end + 3] == (POSS, "name", "is")  # "my wife's name is"
    if len(a.who.who) < 2 or a.who.who != b.who.who or not (a.copula and (b.copula or named_is)):
        return None
    if not b.marked:
        return None
    va = next((w for w in a.predicate if w not in _NOT_NAMES), None)
    vb = next((w for w in b.predicate if w not in _NOT_NAMES), None)
    if va is None or vb is None or va == vb or va in b.predicate:
        return None  # "Mr Okafor sold the flat, so my landlord is Mrs Chen now": another clause
    if va in _names(a_text) and vb in _names(b_text):
        return "value", va, vb
    return None


_THING_IS = frozenset({"'s", "is", "are", "has", "have", "was"})
_THING_PAIRS = frozenset((w,) for w in _THING_IS)
"""A conjunction then "the X is" starts a clause of its own ("so the running's on hold")."""
_ENDS_AFTER_S = frozenset({"on", "off", "over", "gone", "done", "back", "out"})
""""the running's on hold", "keto's over": the "'s" is "is", and the thing before it leads."""
_STARTS_SUBJECT = frozenset({"i", "we", "my", "our", "user", "he", "she", "they", "his", "her",
                             "their"})
_PRONOUN = frozenset({"he", "she", "they", "it"})
_OTHER_POSS = frozenset({"his", "her", "their"})


def _spans(toks: tuple[str, ...]) -> list[tuple[int, int]]:
    """Clause spans: cut at punctuation and at a conjunction followed by a new subject ("I'm
    vegetarian but my kids eat meat")."""
    spans: list[tuple[int, int]] = []
    start = 0
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        after = toks[i + 2] if i + 2 < len(toks) else ""
        cut = t in BREAKS or (t in CLAUSE_JOIN and (
            nxt in _STARTS_SUBJECT or (nxt == "the" and after == "user"))) or (
            t in ("so", "but", "cos", "coz", "because", "bc") and nxt == "the"
            and toks[i + 3:i + 4] in _THING_PAIRS)  # "so the running's on hold"
        if cut:
            if i > start:
                spans.append((start, i))
            start = i + 1
    if start < len(toks):
        spans.append((start, len(toks)))
    return spans


_LED_VERBS = _words_set("went moved got had left died passed started joined took came quit sold "
                        "lost dropped stopped gave switched changed turned retired")
"""Verbs that, right after a name opening a clause, make the name its subject."""


_NOT_LEADING_VERBS = frozenset({"back", "down", "up", "off", "done", "finally", "just",
                                "recently", "please"})
"""Words that may open a clause with no "I" but are no verb of its own ("…, back in Austin
Sunday night"): such a clause keeps the subject before it."""


def _clause_subject(ctoks: tuple[str, ...], previous: Subject | None,
                    spoken: bool = False) -> Subject:
    """A clause's own subject (first person, the user, "my X", "her X"), or the previous
    clause's for a clause led by a pronoun or by none (", not the Renault")."""
    if (len(ctoks) > 2 and is_content(ctoks[0]) and ctoks[1] in _LED_VERBS
            and ctoks[0] not in _FIRST_PERSON):
        return Subject((fold(ctoks[0]),), 1)  # "Bess went to live with my brother": Bess
    if ctoks[:2] in (("have", "not"), ("has", "not"), ("had", "not")) or (
            previous is not None and ctoks[:1] and says_no_subject(ctoks[0])
            and ctoks[0] not in _NOT_LEADING_VERBS):
        return Subject(("user",), 0)  # "…, havent done parkrun", "…, picked up a trek": the user
    thing = 1 if ctoks[:1] == ("the",) else 0
    if (len(ctoks) > thing + 2 and is_content(ctoks[thing]) and ctoks[thing] not in _PRONOUN
            and ctoks[thing] not in _FIRST_PERSON):
        led, verb = ctoks[thing + 1], ctoks[thing + 2]
        if led == POSS and verb in _ENDS_AFTER_S:
            return Subject((fold(ctoks[thing]),), thing + 1)  # "so the running's on hold"
        if led in _THING_IS and led != POSS:
            return subject(ctoks)  # "…, bt is gone": its own subject
    own = any(t in _FIRST_PERSON or t == "user" for k, t in enumerate(ctoks[:8])
              if not (t in ("my", "our") and k and ctoks[k - 1] == "of"))
    if own or previous is None or ctoks[:2] in (("down", "to"), ("up", "to")):
        return subject(ctoks)  # "…, down to two hens": the user's count, whoever led before
    if ctoks[:1] and ctoks[0] in _OTHER_POSS and len(ctoks) > 1:
        return Subject((ctoks[0], fold(ctoks[1])), 2)
    if spoken and previous.who == ("user",) and ctoks[:1] in (("he",), ("she",)):
        return Subject((ctoks[0],), 1)  # "weighed the dog, she's 30 kg": the one I speak of
    return Subject(previous.who, 1 if ctoks[:1] and ctoks[0] in _PRONOUN else 0)


_NOT_MISSED = re.compile(r"\b(?:not|never) (?:\w+ )?(?:missed|skipped|stopped|failed)\b")
""""haven't missed a yoga class since march": a negated negative verb says the thing goes on."""


def _reading(toks: tuple[str, ...], who: Subject, words: frozenset[str], marked: bool,
             cues: tuple[Cue, ...], clauses: tuple[ChangeReading, ...]) -> ChangeReading:
    low = " ".join(toks)
    return ChangeReading(
        who, words, tuple(folded(toks[who.end:])),
        any(t in NEGATORS for t in toks[who.end:]) and not _NOT_MISSED.search(low),
        bool(_PAST.search(low)), marked, cues,
        numbers(toks), toks[who.end:who.end + 1] in (("is",), ("am",), ("are",)), toks,
        bool(NOT_YET.search(low)), bool(ADDED.search(low)), clauses)


_SIGNS = (NEGATORS | MARKERS | CHANGE_VERBS | GONE_VERBS | LOSS | _AMOUNT_CUES
          | swaps.CHANGE_MAKERS | shifts.SIGNS | slots.SIGNS | states.SIGNS | measures.MEASURE_WORDS
          | _words_set("instead rather after any turns vegetarian vegan married marry single "
                       "divorced dairy meat back from divorce pescatarian dating eating raised upped "
                       "lowered increased decreased sticking stick"))
"""A fact with none of these words states no change (most facts): its clauses are not read."""


@lru_cache(maxsize=1 << 18)
def read(text: str) -> ChangeReading:
    """The whole fact (read as the older fact: its first subject, all its words) with a reading
    of each of its clauses (read as the newer fact: each clause has its own subject)."""
    toks = tokens(text)
    words = content(toks)
    low = " ".join(toks)
    marked = (bool(set(toks) & MARKERS) or "these days" in low or "after all" in low
              or "turns out" in low or "any more" in low or "from now" in low
              or "sticking with" in low or "stick with" in low
              or _GONE_OVER.search(low) is not None or swaps.says_back(low))
    cues = read_cues(toks, text, marked)
    if not (set(toks) & _SIGNS):  # no cue a change could be read from: read as an older fact
        return _reading(toks, subject(toks), words, marked, cues, ())
    clauses: list[ChangeReading] = []
    previous: Subject | None = None
    spoken = "user" not in toks  # said by the user, not a note about them: "she" is not "I"
    for start, end in _spans(toks):
        ctoks = toks[start:end]
        who = _clause_subject(ctoks, previous, spoken)
        previous = who if who.who else previous  # "Anyway," says no one
        mine = tuple(c for c in cues if start <= c.at < end)
        clauses.append(_reading(ctoks, who, words, marked, mine, ()))
    return _reading(toks, subject(toks), words, marked, cues, tuple(clauses))


def same_party(a: ChangeReading, b: ChangeReading) -> bool:
    """Whether two facts are about the same party: the same subject, or the user and a thing
    of the user's ("my phone is an iPhone" / "I swapped my iPhone"), but never the user and
    another person or pet unless the other fact names it ("my dog is Rex" / "we renamed the
    dog")."""
    x, y = a.who.who, b.who.who
    if not x or not y:
        return False
    if x == y:
        return True
    if (len(x), len(y)) in ((1, 2), (2, 1)) and "user" in (x[0], y[0]) and x[-1] == y[-1]:
        return True  # "Physio appointments on Fridays" / "User's physio appointments have moved"
    if len(x) == 2 and len(y) == 1 and x[0] == "user" and y[0] in a.words:
        return True  # "User's daughter Mia is 4" / "mia turned 5": the one the older fact names
    if x[0] != y[0] or (len(x) > 1 and len(y) > 1):
        return False
    short, long_, other = (a, b, a) if len(x) < len(y) else (b, a, b)
    extra = long_.who.who[1:]
    if set(extra) <= other.words:
        return True
    return short.who.who == ("user",) and not other_party(long_.who.who)


_PARTING = frozenset({"broke", "split", "divorced", "dumped", "separated"})


def _parted(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"The user broke up with Sam" for "the user's partner is called Sam": the user parted
    from the party the older fact names (the user's own partner, whatever the subject)."""
    if b.who.who != ("user",) or a.who.who[:1] != ("user",):
        return None
    for cue in b.cues:
        if cue.kind == "gone" and cue.said.split(" ", 1)[0] in _PARTING and cue.old <= a.words:
            return cue.kind, _as_written(a, cue.old) or cue.old_text, cue.said
    return None


@lru_cache(maxsize=1 << 16)
def _negated_clause(toks: tuple[str, ...], start: int) -> frozenset[str]:
    """Folded content words of the first negated clause after ``start``: the words after the
    negation and the verb right before it ("do not play the violin" → play, violin)."""
    for i in range(start, len(toks)):
        if toks[i] in NEGATORS:
            j = i - 1
            while j >= start and not is_content(toks[j]) and toks[j] not in BREAKS:
                j -= 1
            lead = [toks[j]] if j >= start and is_content(toks[j]) else []
            return content(lead + list(toks[i + 1:clause_end(toks, i)]))
    return frozenset()


def judge_change(old_text: str, new_text: str) -> tuple[str, str, str] | None:
    """(kind, old value, the newer fact's cue) when ``new_text`` says ``old_text`` no longer
    holds, else None (module docstring). Each clause of the newer fact is read on its own,
    with its own subject ("I'm at Initech now, I left Acme")."""
    if not index_entry(new_text)[1]:
        return None  # the newer fact has nothing a change could be read from (most facts)
    a, whole = read(old_text), read(new_text)
    if a.past or a.tentative or not a.words:
        return None
    if _FOR_A_WHILE.search(" ".join(whole.toks)):
        return None  # "moved to Wednesday this week only", "staying at mum's for a bit"
    for b in whole.clauses:
        if b.past or b.tentative or _returned(a, b):
            continue
        if a.negated:
            found = _affirmed(a, b) if same_party(a, b) else None
        elif slots.acting_for_user(a, b) and "still" not in whole.toks:  # the user's news
            found = _judge_clause(a, replace(b, who=Subject(("user",), b.who.end), marked=True),
                                  old_text, new_text, whole)  # what an agent does is a change
        elif same_party(a, b) or swaps.about_its_thing(a, b):
            found = _judge_clause(a, b, old_text, new_text, whole)
        else:  # a clause led by a thing or no one
            found = (_parted(a, b) or _shift(a, b, whole) or slots.slot_change(a, b)
                     or states.state_change(a, b, whole.toks, same=False))
        if found is None and not b.added:  # "deposit fund hit R210k": a measure said again
            found = measures.remeasured(a.toks, a.who.who, b.toks, b.who.who,
                                        _sentence_of(whole.toks, b.toks))
        if found is not None:
            return found
    return None


_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december")
_FOR_A_WHILE = re.compile(
    r"\b(?:this (?:week|weekend|month|time) only|only (?:this|for this) (?:week|weekend|once|time)|"
    r"just (?:this|for this) (?:week|weekend|once|time)|for a (?:bit|few days|couple of (?:days|weeks))|"
    r"temporarily|for the time being|"
    r"(?:closed|shut|off|away|out|stuck me \w+(?: \w+)?) (?:\w+ ){0,5}for (?:a|one|two|three|four|"
    r"\d+|a few|a couple of|all of) (?:days?|weeks?|fortnight|months?|" + _MONTHS + r")|"
    r"for the (?:christmas|summer|easter|holiday|holidays|half term) (?:rush|period|break|holidays)|"
    r"back (?:to|on|in|at) (?:\w+ ){1,4}(?:in|from|after) (?:" + _MONTHS + r"|the new year)|"
    r"(?:closed|shut|cancelled) (?:\w+ ){0,3}(?:next|this) (?:mon|tues?|wed|thu|thur|thurs|"
    r"fri|sat|sun)(?:day|nesday|rsday|urday|s)?|"
    r"same (?:dose|amount|strength|price|as before|as ever)|"
    r"(?:just |only )?for the (?:\d+|two|three|four|five|few|couple of) (?:days?|weeks?)|"
    r"(?:then|and) (?:straight |right )?back (?:on|to) (?:it|them|him|her)\b)\b")
"""A change said to last a while only, or said to leave the thing the same ("changed the brand,
same dose"): nothing the older fact says has ended."""


def _sentence_of(whole: tuple[str, ...], clause: tuple[str, ...]) -> tuple[str, ...]:
    """The newer fact's tokens from its clause back to the start of its sentence ("deposit fund
    update: 18.2k": the measure is named before the colon)."""
    n = len(clause)
    for end in range(n, len(whole) + 1):
        if whole[end - n:end] == clause:
            start = end - n
            while start > 0 and whole[start - 1] not in SENTENCE_END:
                start -= 1
            return whole[start:end]
    return clause


_BACK = re.compile(r"\bback (?:to normal|on|at|in|to|with|into)\b(.*)")


def _returned(a: ChangeReading, b: ChangeReading) -> bool:
    """The newer clause says things are back as they were ("inhaler use is back to normal",
    "so glad to be back on cardiac" for "a nurse on the cardiac ward"): no change of the older."""
    m = _BACK.search(" ".join(b.toks))
    if m is None:
        return False
    if m.group(0).startswith("back to normal"):
        return True
    after = {fold(t) for t in m.group(1).split() if t.isalnum() and t not in tm.STOPWORDS}
    return bool(after) and after <= {fold(t) for t in a.toks}  # "back on days": not "nights"


_EVERYDAY = _words_set("every day daily week weekly morning evening now these days again "
                       "regularly often always lot")


def _affirmed(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"I don't drink coffee" / "I drink coffee every day now": the newer clause, said as a
    change, states what the older one denied (and only that, besides how often)."""
    denied = _negated_clause(a.toks, a.who.end)
    if denied and (b.who.who == ("user",) or b.who.who == a.who.who):
        got = states.acquired(denied, b)  # "no pets" / "we got a rabbit!"
        if got is not None:
            return got
    if b.negated or not b.marked:
        return None
    said = set(b.predicate) - {fold(w) for w in _EVERYDAY}
    if denied and denied <= set(b.predicate) and said <= denied | {"#1"}:
        return "affirmed", " ".join(sorted(denied)), " ".join(b.predicate)
    return None


negated_clause_cache = _negated_clause
"""The cache of :func:`_negated_clause` (cleared with the others)."""
_JOB = frozenset({"work"})
""""Quit my job" ends whatever "works at/for/as" said."""


def _judge_clause(a: ChangeReading, b: ChangeReading, old_text: str, new_text: str,
                  whole: ChangeReading) -> tuple[str, str, str] | None:
    for cue in b.cues:
        needed = _JOB if cue.old == {"job"} and "work" in a.predicate[:1] else cue.old
        if not needed <= a.words and len(needed) == 1:
            needed = _agent(a, needed)  # "retired from teaching" for "I'm a teacher"
        if len(needed) == 2 and len(needed & a.words) == 1 and not needed & _cue_words(a):
            needed = needed & a.words  # "cancelled the gym membership" for "pays for the gym"
        if needed <= a.words and not (needed <= _cue_words(a)):
            value = (_phrase_of(a, needed) if cue.kind_of else "") or _as_written(a, needed)
            return cue.kind, value or cue.old_text, cue.said
    named = _named_value(a, b, old_text, new_text) or states.opposite(a, b)
    if named is not None:
        kind, value, new = named
        return kind, _as_written(a, frozenset(value.split())) or value, new
    if b.negated:
        neg = _negated_clause(b.toks, b.who.end)
        pred = [w for w in a.predicate if not w.startswith("#")]
        # "I'm a nurse": the head is "nurse"; "I play the violin": the object is "violin"
        obj = set(pred[:1]) if a.copula or len(pred) == 1 else set(pred[1:])
        obj = (obj - SOFT_FOLDED) or obj  # "on Sundays" is when, unless it is all ("nights")
        verb_only = not a.copula and b.marked and neg == set(pred[:1])  # "I don't drive now"
        if verb_only or (pred and obj and obj <= neg and (b.marked or set(pred) <= neg)):
            extra = neg - set(pred)
            if b.marked or not extra:
                return "negated", " ".join(pred), "negated: " + " ".join(sorted(neg))
        if b.marked:  # "I'm a Catholic" / "no longer religious": a kind of what is denied
            member = states.denied_kind(set(a.predicate), neg)
            if member is not None:
                return "negated", member, "negated: " + " ".join(sorted(neg))
    if b.added:
        return None
    return (_amount(a, b, whole.toks) or _swap(a, b) or _shift(a, b, whole) or slots.slot_change(a, b)
            or states.state_change(a, b, whole.toks, same=True))


def _swap(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """A value swapped without a cue that names the old one (:mod:`.swaps`)."""
    if b.negated or EVENT.search(" ".join(b.toks)):
        return None  # "no longer eats X" says what ended (the negated rule), not a new value
    return swaps.swapped(a.who.who, a.predicate, a.toks, b.who.who, b.predicate, b.toks,
                         b.marked, counted=bool(a.numbers and b.numbers))


def _shift(a: ChangeReading, b: ChangeReading,
           whole: ChangeReading) -> tuple[str, str, str] | None:
    """The thing the older fact speaks of ended or moved on (:mod:`.shifts`)."""
    found = shifts.shifted(a, b, whole.toks)
    low = " ".join(b.toks)
    if found is None or (found[0] != "ended" and EVENT.search(low) and not _RECURRING.search(low)):
        return None  # a change said of one moment is an event; an end has its day
    kind, anchors, said = found
    return kind, _as_written(a, frozenset(anchors.split())) or anchors, said


_RECURRING = re.compile(r"\b(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
                        r"every|weekly|each)\b")
"""A time that recurs ("moved to Thursdays at 2"): a habit's new time, not one moment."""


def _agent(a: ChangeReading, needed: frozenset[str]) -> frozenset[str]:
    """The older fact's word for the one who does ``needed`` ("teach" → "teacher"), if any."""
    (word,) = needed
    for w in a.words:
        if w != word and w.startswith(word) and w[len(word):] in ("er", "r", "or", "ist"):
            return frozenset({w})
    return needed


def _as_written(r: ChangeReading, words: frozenset[str]) -> str:
    """The words of ``r``'s fact whose folds are in ``words``, as written (the old value)."""
    return " ".join(t for t in r.toks if (is_content(t) or t[:1].isdigit()) and fold(t) in words)


def _cue_words(a: ChangeReading) -> frozenset[str]:
    """Words the older fact itself names as gone or changed (a fact that already says "sold the
    bike" is not the bike's owner)."""
    out: frozenset[str] = frozenset()
    for c in a.cues:
        out |= c.old
    return out


_GOAL = re.compile(r"\b(?:trying to|try to|aiming|aim to|goal|target|hoping to)\b")


def _amount(a: ChangeReading, b: ChangeReading,
            whole: tuple[str, ...]) -> tuple[str, str, str] | None:
    if not b.marked and not (set(whole) & _AMOUNT_CUES):  # "weighed myself this morning, 76 kg"
        return None
    if _GOAL.search(" ".join(b.toks)):
        return None  # "trying to get down to 5 a day by christmas": a goal, not the amount
    if (a.who.who == ("user",) and b.who.who[:1] == ("user",) and not set(b.who.who[1:]) <= a.words
            and not slots.is_agent(b.who.who[-1])):
        return None  # "my suitcase weighed 23 kg": the suitcase's weight, not "I weigh 95 kg"
    ages = [(n, m) for n in a.numbers for m in b.numbers if n.unit == m.unit == "age"]
    if ages and b.who.who != ("user",) and ages[0][0].value != ages[0][1].value:
        return "amount", ages[0][0].said, ages[0][1].said  # "Rolo had his 4th birthday"
    if len(a.words - b.words - {f"#{n.value:g}" for n in a.numbers} - swaps.GENERIC) > 1:
        return None
    new_by_unit: dict[str, set[float]] = {}
    for n in b.numbers:
        if n.unit:
            new_by_unit.setdefault(n.unit, set()).add(n.value)
    for n in a.numbers:
        if n.unit and n.unit in new_by_unit and n.value not in new_by_unit[n.unit]:
            new = next(m.said for m in b.numbers if m.unit == n.unit)
            return "amount", n.said, new
    if (a.copula and b.copula and b.marked and len(b.who.who) > 1 and b.who.who == a.who.who
            and len(a.numbers) == len(b.numbers) == 1 and b.numbers[0].unit in ("", "age")
            and a.numbers[0].value != b.numbers[0].value and a.numbers[0].unit != "age"):
        return "amount", a.numbers[0].said, b.numbers[0].said  # "…up again, it's 1,080 now"
    return swaps.moved_amount(a, b)


AGE_KEY = "@age"


def _age_keys(toks: tuple[str, ...], who: Subject) -> list[str]:
    """An older fact's age keys: its subject's, and the name it gives them ("User's cat Miso
    is 5" is Miso's age too, for "Miso had her 6th birthday")."""
    out = [f"{AGE_KEY}:{'/'.join(who.who)}"]
    named = toks[who.end:who.end + 1]
    if (len(who.who) > 1 and named and is_content(named[0])
            and toks[who.end + 1:who.end + 2] in (("is",), ("are",), ("turned",))):
        out.append(f"{AGE_KEY}:{fold(named[0])}")
    return out
UNIT_KEY = "@unit"
"""An older fact is indexed by its span units (:data:`.words.SPAN_UNITS`: "at 6", "four days
a week", "1100 a month", no content words of the fact) as ``@unit:<unit>``, so a newer amount
reaches it."""


def _span_keys(found: tuple[Number, ...]) -> list[str]:
    return sorted({f"{UNIT_KEY}:{n.unit}" for n in found if n.unit in SPAN_UNITS})


WHO_KEY = "@is"


def probes(r: ChangeReading) -> list[str]:
    """Words an older fact must have for ``r`` (a newer fact) to be a change of it, one per
    cue: the rarest is looked up by the finder (its posting list), so finding stays linear.
    ``@age:<subject>`` stands for "an age of the same subject"."""
    out: list[str] = [min(c.old) for c in r.cues] + states.whole_probes(r.toks)
    out += [f"{w}er" for c in r.cues if len(c.old) == 1 for w in c.old]  # teaching → teacher
    out += ["work" for c in r.cues if c.old == {"job"}]
    for c in r.clauses:
        if c.negated:
            denied = _negated_clause(c.toks, c.who.end)
            out += sorted(denied)[:3]
            out += states.kind_probes(denied)  # "no pets any more": the older fact's dog
        for n in c.numbers:
            if n.unit == "age":
                out.append(f"{AGE_KEY}:{'/'.join(c.who.who)}")
            elif n.unit:
                out.append(n.unit)
                if n.unit in SPAN_UNITS:
                    out.append(f"{UNIT_KEY}:{n.unit}")
        if c.copula and len(c.who.who) > 1 and c.marked:
            out.append(f"{WHO_KEY}:{'/'.join(c.who.who)}")
        out += states.opposite_probes(c.predicate)
        out += states.probe_words(c)
        out += swaps.probe_words(c.toks, c.marked or (bool(c.numbers)
                                                      and not swaps.MOVED.isdisjoint(c.toks)))
        out += shifts.probe_words(c)
        out += slots.probe_words(c)
        sentence = _sentence_of(r.toks, c.toks)  # "pension update: 1,960"
        out += measures.probe_keys(sentence, len(sentence) - len(c.toks))
    return out


def index_words(r: ChangeReading) -> list[str]:
    """What an (older) fact is indexed by: its content words, and its subject's age."""
    out = sorted(r.words)
    if any(n.unit == "age" for n in r.numbers):
        out += _age_keys(r.toks, r.who)
    out += _span_keys(r.numbers)
    if r.copula and len(r.who.who) > 1:
        out.append(f"{WHO_KEY}:{'/'.join(r.who.who)}")
    return [*out, *swaps.index_words(r.toks), *slots.index_words(r.toks),
            *states.index_words(r.toks), *measures.probe_keys(r.toks),
            *shifts.index_words(r.words)]


_NUMBERISH = frozenset(NUMBER_WORDS)
_DIGIT = re.compile(r"[0-9]")
_UNDONE = frozenset(_NO_APOS)
""""dont", "cannot": written without an apostrophe, still a negation once tokenised."""


def plain_entry(text: str, words: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """:func:`index_entry` of a plain fact from its words as :func:`textmath.normalize` gives
    them (a caller that has them reads the fact once), or None when the fact is not plain: it
    has an apostrophe, a digit, a letter outside ASCII, a change sign, a number word or says
    "my X is". For a plain fact those words are its tokens less punctuation, and it states
    no change."""
    if not text.isascii() or "'" in text or _DIGIT.search(text) is not None:
        return None
    seen = set(words)
    if not (seen.isdisjoint(_SIGNS) and seen.isdisjoint(_NUMBERISH)
            and seen.isdisjoint(_UNDONE)):
        return None
    if ("my" in seen or "our" in seen) and not seen.isdisjoint(COPULA):
        return None
    toks = tuple(words)
    said = content(words)
    return (*sorted(said), *swaps.index_words(toks), *slots.index_words(toks),
            *states.index_words(toks), *shifts.index_words(said)), ()


@lru_cache(maxsize=1 << 18)
def index_entry(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(what the fact is indexed by as an older fact, the words it probes for as a newer one),
    read cheaply: a fact with no change sign (most facts) states no change, so it probes for
    nothing and is only tokenised, its subject and numbers read when it has a number or says
    "my X is"."""
    toks = tokens(text)
    words = content(toks)
    seen = set(toks)
    if not seen.isdisjoint(_SIGNS):
        r = read(text)
        return tuple(index_words(r)), tuple(probes(r))
    out = sorted(words)
    counted = (not seen.isdisjoint(_NUMBERISH)
               or (_DIGIT.search(text) is not None if text.isascii()
                   else any(t[:1].isdigit() for t in toks)))
    owned = (POSS in seen or "my" in seen or "our" in seen) and not seen.isdisjoint(COPULA)
    if counted or owned:
        who = subject(toks)  # what read() would say of it: the same subject and numbers
        counts = numbers(toks) if counted else ()
        if any(n.unit == "age" for n in counts):
            out += _age_keys(toks, who)
        out += _span_keys(counts)
        if len(who.who) > 1 and toks[who.end:who.end + 1] in (("is",), ("am",), ("are",)):
            out.append(f"{WHO_KEY}:{'/'.join(who.who)}")
    return (*out, *swaps.index_words(toks), *slots.index_words(toks),
            *states.index_words(toks), *shifts.index_words(words)), ()
