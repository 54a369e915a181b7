"""Shifted topics (S-WORDS-1): a newer fact that speaks of what the older one is about and says,
in everyday words, that it ended or moved on, without naming the old value as a cue.

The forms people use when a thing they told before no longer holds:

- **ended** — the newer clause says the thing stopped: "done with keto", "I'm off the
  metformin", "let my tennis membership lapse", "the book club folded", "the braces were
  removed", "we had to put Biscuit down", "the birding's fallen by the wayside", "no more
  freelancing", "debt free", "smoke-free";
- **moved on** — the newer clause says a change ("now", "these days", "switched", "since",
  "ever since", "promoted", "raised", "overtaken", "took", "joined", "got my first") and puts
  something the older fact does not say beside the thing both speak of: "the rent's 1,080
  now" after "my rent is 950", "team sync's moved to Thursdays" after "the weekly team meeting
  is on Mondays".

What both speak of (the *anchor*) is a content word they share that is not a common verb or
filler (:data:`.swaps.GENERIC`), not a time word and not the subject's own name. The guards of
every change rule hold: the same party (:func:`.changes.same_party`: "my husband's on the same
stuff" is news of him), neither fact is history ("used to") or a plan ("might", "thinking of"),
the newer is no addition ("also", "another") and does not say the thing goes on ("still").
A newer clause that only repeats the older's words says nothing new. Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nocturne_desktop.core.judges.conflicts.swaps import GENERIC, topic
from nocturne_desktop.core.judges.conflicts.words import (
    BREAKS,
    SOFT_FOLDED,
    SOFT_TIME,
    _set,
    fold,
    folded,
    is_content,
    other_party,
)

if TYPE_CHECKING:
    from nocturne_desktop.core.judges.conflicts.changes import ChangeReading

__all__ = ["SIGNS", "index_words", "probe_words", "shifted"]

_ENDED_WORDS = _set(
    "stopped quit quitting gave given lapsed lapse folded removed cancelled canceled rehomed "
    "retired ended ditched scrapped dropped expired closed shut withdrew withdrawn deleted binned "
    "died killed")
"""Verbs that say a thing ended, with what ended beside them."""
_ENDED = re.compile(
    r"(?:^|\s)(?:'s|is|are) (?:off|over|gone|done)\b|"
    r"\bnot renewing|\bhad to give (?:\w+ ){0,4}up\b|"
    r"\b(?:have|has|had) not (?:been|done|gone|played|had|touched|seen|used|worn)\b"
    r"(?=.*\b(?:since|in (?:over |more than )?(?:(?:a|an|\w+) )?(?:years?|months?|weeks?))\b)|"
    r"\b(?:stepped|stood) down\b|\bhanded (?:\w+ ){1,5}(?:over|to)\b|"
    r"\blost (?:both|all|all of|the last)\b|\bdid not (?:\w+ ){0,2}renew|"
    r"\b(?:done with|off (?:the|my|it|them)|no more|not any more|"
    r"any more|anymore|no longer|put (?:\w+ )?down|by the wayside|fell out|fallen out|"
    r"free of|paid off|last (?:payment|day|shift|session|lesson)|"
    r"came off|come off|taken off|got rid|got shot|split up|broke up|moved out|cut out|"
    r"lost (?:interest|my|the)|on hold|so over|over it|packed (?:\w+ )?in|bye bye|goodbye|"
    r"(?:went|gone|moved) to live with|pulled out)\b")
_MOVED_WORDS = _set(
    "now nowadays currently switched changed moved became become promoted raised "
    "overtaken replaced traded joined upgraded downgraded converted relocated transferred "
    "reassigned renamed demoted rescheduled newly")
"""Words that say a new state holds."""
_MOVED = re.compile(
    r"\b(?:these days|ever since|turns out|turned out|from now on|from this (?:term|week|"
    r"month|year)|as of|took (?:a|an|the|up)|taken (?:a|an|up)|got my first|"
    r"went (?:up|down|back)|gone (?:up|down|back)|put (?:\w+ )?up|cut (?:down|back)|"
    r"down to|up to|back on|back to|over to|go by|shifted to|swapped (?:me|us|it|them) to)\b")
_CONTINUES = re.compile(r"\b(?:still|as usual|as always|same as ever|again and again|"
                        r"same (?:dose|amount|strength|price|time|as before)|"
                        r"(?:never|not) (?:\w+ )?(?:stopped|quit|missed|given up|gave up))\b"
                        r"|\bstopped (?:at|by|in|off)\b")
"""The newer fact says the thing goes on ("I still tutor maths"), or "stopped" is a visit
("stopped at the bakery")."""
_TODAY = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|afternoon|evening|weekend|"
                    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b")
"""One day: a newer fact that says it ("the trains were cancelled so I drove in today") tells
of that day, not of what ended."""
_SPANS = frozenset({"day", "week", "month", "year"})
"""Units of a span ("six months"): a state that has lasted, whatever day it is said on."""
_FOR_GOOD = re.compile(r"\b(?:debt free|paid off|last payment|for good|(?:is|are) gone)\b")
"""An end that is for good whatever day it is said on ("paid off the card today, debt free")."""
_TOWARDS = frozenset({"to", "into", "onto"})
_OTHERS = _set(
    "husband wife partner boyfriend girlfriend son daughter mum mom dad mother father sister "
    "brother friend friends colleague colleagues boss kids kid children neighbour neighbor "
    "flatmate housemate roommate cousin aunt uncle grandma grandpa nan he she they his her "
    "their him them")
"""Someone else the newer clause may be about ("my wife quit pharmacy")."""
_MEMBERS = _set("drummer singer guitarist bassist keyboardist vocalist frontman conductor "
                "captain coach manager owner chef teacher trainer instructor secretary chair")
"""Someone of a band, team or place, said with its name ("the lodgers' drummer quit")."""
_TEAM_THINGS = _set("meeting meetings sync standup call lunch huddle catchup review")
_FIRST = _set("my our i we")
_ME = _set("me us")
"""The user as the object ("piano teacher swapped me to monday evenings"): the user's news."""
_KIN = _set("sister brother mother mum mom father dad son daughter friend cousin aunt uncle "
            "partner wife husband girlfriend boyfriend niece nephew grandson granddaughter "
            "children child kids kid sons daughters twins")
"""A person of the user's the older fact names: a move of theirs is their news."""
SIGNS = _ENDED_WORDS | _MOVED_WORDS | _set(
    "done off anymore longer more free wayside fell fallen out first took taken went gone back "
    "down up over as lost hold packed bye goodbye live pulled renew renewing give since sold "
    "scrapped stolen written stepped stood handed nicked pinched failed gearbox engine conked "
    "ghost shot")
"""Tokens without which a fact says no shift (the change reader reads its clauses only then)."""
_MARKER_FOLDS = frozenset(fold(w) for w in SIGNS | _set("lapse rid paid"))
_NOT_TOPIC = GENERIC | SOFT_FOLDED | _MARKER_FOLDS
"""Folded words that are never what a shift is about: common verbs, times, the shift's words."""


_GONE_BY = re.compile(r"(\w+) (?:'s been|is been|has been|have been|got|was|were) "
                      r"(?:sold|scrapped|stolen|nicked|pinched|written off|towed)\b")
"""A thing sold, scrapped or stolen, said of it ("the Leaf's been sold", "the Fiesta got written
off"): an end of the older fact only when the thing is what it names ("my fishing rods got
stolen" ends no fishing)."""


def _gone_by(a: ChangeReading, low: str) -> bool:
    return any(fold(m.group(1)) in a.words for m in _GONE_BY.finditer(low))


_ONLY_DENIED = frozenset({"no more", "not any more", "any more", "anymore", "no longer"})
"""Ends said by a negation alone: what the negation denies must be what the older fact says."""


def _ended_plainly(toks: tuple[str, ...], low: str) -> bool:
    """The clause says an end by a word of its own ("the band broke up ... so no more gigs"),
    not only by a negation ("I no longer eat kale")."""
    return (not _ENDED_WORDS.isdisjoint(toks)
            or any(m.group(0).strip() not in _ONLY_DENIED for m in _ENDED.finditer(low)))


def _says_shift(toks: tuple[str, ...], low: str) -> tuple[bool, bool]:
    """(says something ended, says something moved on), from the clause's words alone."""
    return (not _ENDED_WORDS.isdisjoint(toks) or _ENDED.search(low) is not None,
            not _MOVED_WORDS.isdisjoint(toks) or _MOVED.search(low) is not None)


def _destinations(toks: tuple[str, ...]) -> set[str]:
    """Folded words after a change's "to" ("moved to a flat in Porto"): where the change went,
    which an older fact naming them agrees with."""
    out: set[str] = set()
    state = 0  # 1: after a change word, 2: after its "to"
    for t in toks:
        if t in _MOVED_WORDS:
            state = 1
        elif t in BREAKS:
            state = 0
        elif state == 1 and t in _TOWARDS:
            state = 2
        elif state == 2 and is_content(t):
            out.add(fold(t))
    return out


def _other_party(a: ChangeReading, b: ChangeReading) -> bool:
    """The newer clause is about someone else: a subject that is neither the user nor a thing
    the older fact names ("Fiona left"; "knee brace is off" is of "my knee"), or another
    person of the user's ("my wife quit pharmacy")."""
    who = b.who.who
    lead = [t for t in b.toks[:4] if is_content(t)]
    if (len(lead) > 1 and lead[1] in _MEMBERS and fold(lead[1]) not in a.words
            and _FIRST.isdisjoint(b.toks[:3]) and _ME.isdisjoint(b.toks)):
        return True  # "the lodgers' drummer quit": a member of the band, not the band
    if who[:1] in (("he",), ("she",)):
        return True  # "weighed the dog, she's 30 kg now" (the change reader's "she" is not "I")
    if who[-1:] == ("team",) and not _TEAM_THINGS.isdisjoint(b.toks[:6]):
        return False  # "our team meeting got shifted": the user's meeting, not the team's news
    if who and who[0] != "user":
        # "a whole year nicotine-free": a clause led by no one is the user's
        return is_content(who[0]) and not who[0].startswith("#") and who[0] not in a.words
    return other_party(who) or (len(who) > 1 and who[-1] in _OTHERS)


_BROKE_FOR_GOOD = re.compile(r"\bfailed (?:its|the|it is) mot\b|\b(?:gearbox|engine|motor) "
                             r"(?:went|died|blew|gone|packed up)\b|\bgave up the ghost\b|"
                             r"\bpacked up\b|\bconked out\b")
_GOT_NEW = re.compile(r"\b(?:so|and) (?:we|i) (?:got|bought|picked up)\b|\b(?:bought|got|picked up) "
                      r"(?:a|an) (?:used|new|second hand|secondhand|second-hand)\b")
"""A thing that broke, failed its MOT or gave up, and a new one got in the same breath ("the
fiesta failed its MOT so we got a corsa"): the old one is gone."""
_TERM = re.compile(r"\bthis (?:term|season|year|semester)\b|\bfrom now on\b")
"""A time said to hold from now ("choir's on tuesdays this term")."""
_PRICED = re.compile(r"\b(?:put|putting|puts|went|gone|going|goes|is|are)(?: \w+){0,3} "
                     r"(?:up|down) (?:to|by) \d")
"""A number moved up or down: the older fact's own amount, if it has one (else no shift)."""


_NAMING = frozenset({"called", "named", ",", "and", "is"})


def _kin_named(toks: tuple[str, ...], name: str) -> bool:
    """Whether the older fact names ``name`` as a person of the user's ("a sister called Ana",
    "two children, Ella and Sam"), not as a thing ("picks the kids up from school")."""
    for k, t in enumerate(toks):
        if t in _KIN:
            said = [w for w in toks[k + 1:k + 6] if w not in _NAMING][:2]
            if name in {fold(w) for w in said}:
                return True
    return False


def _with_doings(words: set[str]) -> set[str]:
    """Words with what their agent nouns do ("birdwatcher" → "birdwatch", "runner" → "run"):
    "lost interest in birdwatching" speaks of "a keen birdwatcher"."""
    out = set(words)
    for w in words:
        if len(w) > 5 and w.endswith("er"):
            base = w[:-2]
            out.add(base[:-1] if base[-1] == base[-2] else base)
    return out


def shifted(a: ChangeReading, b: ChangeReading,
            whole: tuple[str, ...]) -> tuple[str, str, str] | None:
    """(kind, old value, the newer clause's words) when ``b`` (a clause of the newer fact,
    whose tokens are ``whole``) says the thing ``a`` speaks of ended or moved on (module
    docstring), else None."""
    if a.negated or b.added or _other_party(a, b):
        return None
    if (_TODAY.search(" ".join(whole)) and not any(n.unit in _SPANS for n in b.numbers)
            and not _FOR_GOOD.search(" ".join(whole))):
        return None  # one day, not "six months smoke-free as of today", "debt free"
    if (a.who.who[:1] != ("user",) and not set(b.who.who) <= a.words
            and not (b.who.who[:1] == ("user",) and len(b.who.who) > 1
                     and set(b.who.who[1:]) <= a.words)):
        return None  # "Alice works at the bakery" / "I quit the bakery": not Alice's news
    if other_party(a.who.who) and b.who.who != a.who.who:
        return None  # "My partner is Alex" / "Alex got promoted": news of Alex
    low = " ".join(b.toks)
    if _CONTINUES.search(low):
        return None
    ended, moved = _says_shift(b.toks, low)
    retimed = False
    if not SOFT_TIME.isdisjoint(b.toks) and not SOFT_TIME.isdisjoint(a.toks):
        fa_, fb_ = set(folded(a.toks)), set(folded(b.toks))
        retimed = bool((fb_ & SOFT_FOLDED) - fa_ and (fa_ & SOFT_FOLDED) - fb_
                       and (moved or b.marked or _TERM.search(low)))
    moved = moved or retimed  # "choir's on tuesdays this term"
    ended = ended or _gone_by(a, low) or (_BROKE_FOR_GOOD.search(low) is not None
                                          and _GOT_NEW.search(" ".join(whole)) is not None)
    if not ended and _PRICED.search(low) and not any(t[:1].isdigit() for t in a.toks):
        return None  # "puregym's put the membership up to £27": a price, not the gym
    ended = ended or any(t == "free" and k and fold(b.toks[k - 1]) in a.words
                         for k, t in enumerate(b.toks))  # "nicotine-free" after "chews nicotine"
    if not (ended or moved):
        return None
    # the subject of both is who, not what ("Maya"), unless it is a thing of the user's
    # ("my therapy session" / "therapy's moved to Mondays")
    mine = set(a.who.who[1:]) if a.who.who[:1] == ("user",) and not other_party(a.who.who) else set()
    named = (set(a.who.who) & set(b.who.who)) - mine
    said_of = _with_doings(topic(a.toks)) if ended else topic(a.toks)
    said_now = topic(b.toks)
    if ended:  # "lost both hives" for "keeps two beehives": the compound's last word
        said_of |= {w for w in said_now if len(w) >= 3 and any(
            x.endswith(w) and len(x) > len(w) + 2 for x in said_of)}
    anchors = (said_of & said_now) - _NOT_TOPIC - named - _destinations(b.toks)
    if not anchors and retimed and a.who.who == b.who.who and a.who.who[0] != "user":
        anchors = named  # "Yoga class is Tuesday at 6pm" / "yoga's moved to thursdays at 7"
    if not ended and a.who.who == ("user",) and len(b.who.who) == 1 and _kin_named(a.toks, b.who.who[0]):
        anchors -= set(b.who.who)  # "I have a sister called Ana" / "Ana moved to Porto": hers
    if not anchors:
        return None
    fa, fb = set(folded(a.toks)) - {"user"}, set(folded(b.toks)) - {"user"}  # numbers count
    said = fb - _NOT_TOPIC
    if ended and b.negated and not said <= a.words and not _ended_plainly(b.toks, low):
        return None  # "I no longer eat kale" ends eating it, not "I grow kale": the negated rule
    # a change puts something new in place of something the older fact says: "now live in a
    # flat in Leeds" only adds to "I live in Leeds"
    # or one time for another: "physio's moved to Friday mornings" after "on Wednesdays at 4pm"
    if (not ended and not (said - a.words and fa - fb - GENERIC - SOFT_FOLDED)
            and not retimed):
        return None
    written = " ".join(t for t in b.toks if is_content(t) or t[:1].isdigit())
    return ("ended" if ended else "moved on"), " ".join(sorted(anchors)), written


def index_words(words: frozenset[str]) -> list[str]:
    """An older fact is also indexed by what its agent nouns do ("birdwatcher" → "birdwatch"),
    so an end said of the doing reaches it (``words``: its folded content words)."""
    if not any(len(w) > 5 and w.endswith("er") for w in words):
        return []  # no agent noun (most facts)
    return sorted(_with_doings(set(words)) - words)


def probe_words(b: ChangeReading) -> list[str]:
    """The words an older fact must hold for a clause to shift it: its anchor candidates."""
    if "free" in b.toks[1:]:  # "debt free": what it is free of
        free = [fold(b.toks[k - 1]) for k, t in enumerate(b.toks) if t == "free" and k]
    else:
        free = []
    low = " ".join(b.toks)
    if not any(_says_shift(b.toks, low)) and _BROKE_FOR_GOOD.search(low) is None:
        return free
    return sorted(topic(b.toks) - _NOT_TOPIC) + free
