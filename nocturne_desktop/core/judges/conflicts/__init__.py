"""Conflict candidates (S-REC-1): pairs of active facts that cannot both be true now.

The code finds them; the Reconcile pass asks the model which really are corrections, and the
gate accepts a supersede only for a pair this module calls a conflict. Four rules, each small
enough to explain in one sentence:

- **value** — the same subject and *frame* (an exclusive relation: lives in, works at/for,
  works as, is from, born in, studies at, is married to, is called, drives a, favourite X is),
  both stated affirmatively, with values that share no word: "User lives in Lisbon" /
  "User has moved to Porto". Relations that take many values at once (likes, visited, speaks)
  are not frames, so "likes Lisbon" / "visited Porto" is never flagged.
- **polarity** — the same content words, one stated and the other negated: "User eats meat" /
  "User no longer eats meat" (not, no, never, n't, no longer, stopped, quit; dislikes = not
  likes, hates = not loves).
- **quantity** — the same content words around a different number (as many numbers on each
  side): "User has 2 cats" / "User has 3 cats". Facts of category ``event`` are left out of
  this rule (two runs of different lengths are two events, not a correction).
- **change** — the newer fact says, the way people say it, that the older no longer holds:
  "moved from X to Y", "Y now, not X", "no longer", "instead of", "sold/left/quit X", "turned
  N", a changed count, a value swapped around what both facts are about (:mod:`.changes`,
  :mod:`.swaps`, with its own subjects per clause, so "my sister lives in Porto" changes
  nothing about where I live). Tried after value and polarity, before
  quantity: "has 3 cats now" after "has 2 cats" is a change.

A statement marked as past ("used to", "formerly", "previously") is history and conflicts
with nothing, and neither does a plan ("moving to Berlin next year") or an addition ("also
works at a bar"). Text is read through :func:`textmath.normalize` and folded with a light verb fold of its own
(``lives``/``lived``/``living`` → ``liv``), so this module stands alone; the shared meaning
measures (polarity, quantities) can later replace :func:`_negated` and :func:`_numbers`.

Finding is sub-quadratic: every fact gets a few keys (frame + subject; content words; content
words without numbers), facts are bucketed by key, and within a bucket each fact is paired with
at most :data:`PAIRS_PER_FACT` of the nearest later facts (sorted by source order), so the cost
is ``O(n · PAIRS_PER_FACT)`` plus the sorting (``bench.bench_conflicts``). A change
statement probes a posting list of the rarest word its cue needs (:data:`CHANGE_SCAN` nearest
earlier facts).
:func:`pair_conflict` is the exact pairwise test the gate re-runs on any proposed pair.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.conflicts import changes
from nocturne_desktop.core.judges.conflicts import words as lexicon
from nocturne_desktop.core.policy import id_num
from nocturne_desktop.core.stepwise import sorted_yielding
from nocturne_desktop.core.types import Fact

__all__ = [
    "PAIRS_PER_FACT",
    "Conflict",
    "carries",
    "clause_words",
    "clear_caches",
    "find_conflicts",
    "left_over",
    "newer",
    "order_key",
    "pair_conflict",
]

PAIRS_PER_FACT = 4
"""Within one bucket, each fact is paired with at most this many later facts (nearest first)."""

_NEGATORS = frozenset({
    "not", "no", "never", "nor", "neither", "none", "nothing", "without", "cannot",
    "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "cant", "couldnt",
    "hasnt", "havent", "hadnt", "shouldnt", "wouldnt",
    "stopped", "stop", "stops", "quit", "quits",
})
_ANTONYMS: dict[str, str] = {
    "dislike": "like", "dislikes": "like", "disliked": "like",
    "hate": "love", "hates": "love", "hated": "love",
    "unmarried": "married", "single": "married",
}
_MODIFIERS = frozenset({
    "longer", "anymore", "now", "currently", "still", "again", "today", "nowadays", "recently",
    "actually", "really", "usually", "always", "also", "just", "finally", "lately", "gave",
    "up", "ago", "since", "last", "past", "new", "moved", "changed", "switched", "instead",
    "originally", "used",
})
"""Words that say *when* or *how firmly*, not *what*: left out of the content compared."""
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
    "a": -1, "an": -1,
}
"""Number words; ``a``/``an`` are not numbers (marked -1 and ignored)."""
_STOP = tm.STOPWORDS - {"no", "not", "nor"}

_FRAMES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern)) for name, pattern in (
        ("grew up in", r"\b(?:grew|grown|growing) up\s+(?:in|on)\b"),  # not where one lives
        ("lives in", r"\b(?:live|lives|living|lived|moved|moving|moves|relocated|relocating|"
                     r"resides|reside|residing|residence is|based|home is)(?: back)?"
                     r"(?:\s+(?:in|to))?\b(?=\s)"),
        ("works as", r"\b(?:works|work|working|worked|employed|job is|hired)\s+as\b"),
        ("works at", r"\b(?:works|work|working|worked|employed|employer is|job is|hired|"
                     r"joined)\s+(?:at|for)\b"),
        ("studies at", r"\b(?:studies|study|studying|studied|enrolled)\s+(?:at|in)\b"),
        ("born in", r"\bborn\s+(?:in|on)\b"),
        ("is from", r"\b(?:is|am|are|comes|come|originally)\s+from\b"),
        ("married to", r"\b(?:married to|engaged to|wife is|husband is|partner is|"
                       r"girlfriend is|boyfriend is|dating|spouse is)\b"),
        ("is called", r"\b(?:name is|is called|is named|named|called|goes by)\b"),
        ("drives", r"\b(?:drives|drive|driving)\s+(?:an?|the)\b"),
        ("favourite", r"\bfavou?rite\s+(\w+)\s+is\b"),
    )
)
_REPORTED = frozenset({"said", "says", "mentioned", "mentions", "told", "tells", "reported",
                       "explained", "they", "he", "she", "them", "us", "me"})
"""Reported speech and pronouns before a frame ("the user mentioned they now live in Bristol"):
not part of the subject."""
_DISCOURSE = frozenset({"honestly", "frankly", "basically", "anyway", "well", "oh", "ok", "okay",
                        "yeah", "yes", "guess", "think", "suppose", "reckon", "apparently",
                        "turns", "seems"})
"""Words that frame a statement without being its subject ("Honestly my favourite ... ")."""
_SUBJECT_CUT = frozenset({"and", "so", "then", "but"})
"""A frame's subject starts after these ("we packed up and moved ..."; "my wife and I")."""
_PAST = re.compile(
    r"\b(?:used to|formerly|previously|once lived|before (?:we|i) (?:moved|came|left))\b"
    r"|\b(?:lived|worked|studied)\b(?=.*\b(?:for (?:a|an|\w+) (?:years?|months?|weeks?)|"
    r"before|until)\b)")
"""A statement about the past ("used to live in Lisbon", "lived in York for two years before
Leeds": a past-tense frame with how long or until when) is history: it conflicts with nothing
current, so no rule reads it."""
_VALUE_END = frozenset({
    "and", "but", "since", "because", "for", "from", "until", "while", "after", "before",
    "when", "where", "which", "who", "with", "during", "as", "so",
})
_TIME_WORDS = frozenset({
    "last", "next", "this", "month", "months", "week", "weeks", "year", "years", "day", "days",
    "ago", "now", "today", "yesterday", "recently", "anymore", "again", "then", "currently",
    "still", "time", "full", "part", "permanently",
})


@lru_cache(maxsize=1 << 16)
def _vfold(word: str) -> str:
    """A light fold on top of ``stem_token``: ``lives``/``lived``/``living`` → ``liv``."""
    w = tm.stem_token(word)
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


@dataclass(frozen=True, slots=True)
class _Reading:
    """What the rules read from one fact."""

    negated: bool
    content: frozenset[str]
    """Folded content words, negators and modifiers left out (numbers kept)."""
    frame_free: frozenset[str]
    """``content`` without its numbers."""
    numbers: tuple[float, ...]
    frame: tuple[str, frozenset[str]] | None
    """(relation, subject words) when the fact states an exclusive relation affirmatively."""
    value: frozenset[str]
    value_text: str
    index: tuple[str, ...]
    """What the change rules index the fact by as an older fact (:func:`changes.index_entry`)."""
    probes: tuple[str, ...]
    """The words it probes for as a newer fact: empty when it states no change (most facts)."""


_DIGITS = re.compile(r"\d+(?:[.,]\d+)?")


def _num(word: str) -> float | None:
    if word[:1].isdigit() and _DIGITS.fullmatch(word):
        return float(word.replace(",", "."))
    n = _NUMBER_WORDS.get(word)
    return float(n) if n is not None and n >= 0 else None


_SKIP, _NEGATOR, _ANTONYM, _NUMBER, _CONTENT = range(5)


@lru_cache(maxsize=1 << 16)
def _role(word: str) -> tuple[int, str, float]:
    """What one normalised word is to :func:`_read`: (role, folded content word, number)."""
    if word in _NEGATORS:
        return _NEGATOR, "", 0.0
    if word in _ANTONYMS:
        return _ANTONYM, _vfold(_ANTONYMS[word]), 0.0
    if word in _MODIFIERS or word in _STOP or tm.stem_token(word) in _STOP:
        return _SKIP, "", 0.0
    n = _num(word)
    if n is not None:
        return _NUMBER, f"#{n:g}", n
    return _CONTENT, _vfold(word), 0.0


_ANY_FRAME = re.compile("|".join(f"(?:{p.pattern})" for _, p in _FRAMES))
"""Whether any frame is said at all (most facts state none): one search instead of ten."""


READ_CACHE = 1 << 18
"""Readings (and clause words) kept per process: more than a 100k-fact store's texts, so a
second scan of the same store (Merge's conflict checks, then Reconcile) hits the cache."""


_NOT_NOW = re.compile(f"{_PAST.pattern}|{changes.NOT_YET.pattern}")
"""History or a plan: what :func:`_read` reads as stating nothing current."""


@lru_cache(maxsize=READ_CACHE)
def _read(text: str) -> _Reading:
    words = tm.normalize(text).split()
    index, probes = changes.plain_entry(text, words) or changes.index_entry(text)
    spaced_all = " ".join(words)
    if _NOT_NOW.search(spaced_all):
        return _Reading(False, frozenset(), frozenset(), (), None, frozenset(), "", index, probes)
    neg = 0
    content: list[str] = []
    numbers: list[float] = []
    for w in words:
        role, folded, n = _role(w)
        if role == _SKIP:
            continue
        if role == _NEGATOR:
            neg += 1
            continue
        if role == _ANTONYM:
            neg += 1
        elif role == _NUMBER:
            numbers.append(n)
        content.append(folded)
    negated = neg % 2 == 1
    frame: tuple[str, frozenset[str]] | None = None
    value: frozenset[str] = frozenset()
    value_text = ""
    if (not negated and _ANY_FRAME.search(spaced_all) is not None
            and not changes.ADDED.search(spaced_all)):
        spaced = spaced_all
        for name, pattern in _FRAMES:
            m = pattern.search(spaced)
            if m is None:
                continue
            relation = name if name != "favourite" else f"favourite {m.group(1)}"
            before = spaced[: m.start()].split()
            cut = max((k for k, w in enumerate(before) if w in _SUBJECT_CUT), default=-1)
            if cut == len(before) - 1 >= 0:  # "my sister packed up and moved to ...": hers
                toks = lexicon.tokens(" ".join(before))
                before = list(toks[:lexicon.subject(toks).end])
            else:
                before = before[cut + 1:]  # "my wife and I live in ...": we
            subject = frozenset(
                _vfold(w) for w in before
                if w not in _STOP and w not in _MODIFIERS and w not in _NEGATORS
                and w not in _TIME_WORDS and w not in _REPORTED and w not in _DISCOURSE
                and w not in ("has", "have", "had", "user", "users")
            )
            after: list[str] = []
            for w in spaced[m.end():].split():
                if w in _VALUE_END:
                    break
                after.append(w)
            vals = [w for w in after if w not in _STOP and w not in _TIME_WORDS
                    and _num(w) is None and w not in _MODIFIERS]
            if vals:
                frame = (relation, subject)
                value = frozenset(_vfold(w) for w in vals)
                value_text = " ".join(vals)
            break
    return _Reading(negated, frozenset(content), frozenset(c for c in content if c[0] != "#"),
                    tuple(sorted(set(numbers))), frame, value, value_text, index, probes)


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two facts that cannot both hold now: ``older`` (by source order) and ``newer``."""

    older: str
    newer: str
    rule: str
    """``value``, ``polarity``, ``quantity`` or ``change`` (:mod:`.changes`)."""
    frame: str
    """What the two share, in words ("lives in", "eat meat")."""
    older_value: str
    newer_value: str

    @property
    def why(self) -> str:
        """One sentence a person can check."""
        if self.rule == "value":
            return (f"same frame {self.frame!r}, different value: "
                    f"{self.older_value!r} vs {self.newer_value!r}")
        if self.rule == "change":
            return (f"the newer fact says it changed ({self.frame}: {self.newer_value!r}), "
                    f"and the older says {self.older_value!r}")
        if self.rule == "polarity":
            return (f"same content ({self.frame}), opposite polarity: "
                    f"{self.older_value} vs {self.newer_value}")
        return (f"same quantity ({self.frame}), different number: "
                f"{self.older_value} vs {self.newer_value}")

    def as_dict(self) -> dict[str, str]:
        return {"olderId": self.older, "newerId": self.newer, "rule": self.rule,
                "frame": self.frame, "olderValue": self.older_value,
                "newerValue": self.newer_value}


def order_key(fact: Fact) -> tuple[float, float, int]:
    """Source order: the transcript turn (a fact without one sorts by its time alone), then
    ``created_at``, then the id (the encoder writes a turn's facts in the order said)."""
    turn = float(fact.source_turn) if fact.source_turn is not None else float("inf")
    return (turn, fact.created_at, id_num(fact.id))


def newer(a: Fact, b: Fact) -> Fact:
    """The later-sourced of two facts by :func:`order_key` (turn order, then ``created_at``,
    then id; a fact with no turn - added by hand - counts as later than any turn's)."""
    return a if order_key(a) > order_key(b) else b


def _words(tokens: Iterable[str]) -> str:
    return " ".join(sorted(t.lstrip("#") for t in tokens))


def _judge(old: Fact, new: Fact, ra: _Reading, rb: _Reading) -> Conflict | None:
    """The frame and polarity rules, then a change statement (:mod:`.changes`), then the
    quantity rule: "has 3 cats now" after "has 2 cats" is a change, "has 3 cats" a conflict."""
    found = _judge_frames(old, new, ra, rb)
    if found is not None:
        return found
    change = changes.judge_change(old.text, new.text) if rb.probes else None
    if change is not None:
        kind, old_value, said = change
        return Conflict(old.id, new.id, "change", kind, old_value, said)
    return _judge_quantity(old, new, ra, rb)


def _judge_frames(old: Fact, new: Fact, ra: _Reading, rb: _Reading) -> Conflict | None:
    if ra.frame is not None and ra.frame == rb.frame and not (ra.value & rb.value):
        relation, subject = ra.frame
        frame = relation if not subject else f"{_words(subject)} {relation}"
        return Conflict(old.id, new.id, "value", frame, ra.value_text, rb.value_text)
    if ra.content and ra.content == rb.content and ra.negated != rb.negated:
        pol = {True: "negated", False: "stated"}
        return Conflict(old.id, new.id, "polarity", _words(ra.content), pol[ra.negated],
                        pol[rb.negated])
    return None


def _judge_quantity(old: Fact, new: Fact, ra: _Reading, rb: _Reading) -> Conflict | None:
    if (ra.frame_free and ra.frame_free == rb.frame_free and ra.negated == rb.negated
            and ra.numbers and len(ra.numbers) == len(rb.numbers) and ra.numbers != rb.numbers
            and "event" not in (old.category, new.category)):
        return Conflict(old.id, new.id, "quantity", _words(ra.frame_free),
                        "/".join(f"{n:g}" for n in ra.numbers),
                        "/".join(f"{n:g}" for n in rb.numbers))
    return None


def pair_conflict(a: Fact, b: Fact) -> Conflict | None:
    """Whether two facts conflict, and how (older first by :func:`newer`). Exact and pure:
    what the gate re-runs on a proposed supersede."""
    if a.id == b.id:
        return None
    new = newer(a, b)
    old = b if new is a else a
    return _judge(old, new, _read(old.text), _read(new.text))


_CLAUSE_BREAK = re.compile(
    r"\s*(?:[,;:]|\s(?:and(?!\s+(?:i|me)\b)|but|while|whereas|although|though|plus)\s)\s*",
    re.IGNORECASE)
"""Where one statement ends and another begins inside a fact ("lives in Lisbon and works best
in the morning")."""
_NOT_CONTENT = _MODIFIERS | _TIME_WORDS | _NEGATORS


@lru_cache(maxsize=READ_CACHE)
def clause_words(text: str) -> frozenset[str]:
    """Folded content words of one clause: stopwords, modifiers, time and negation words out."""
    return frozenset(
        _vfold(w) for w in tm.normalize(text).split()
        if w not in _NOT_CONTENT and tm.content_tokens(w)
    )


def carries(text: str, words: frozenset[str]) -> bool:
    """Whether ``text`` has every one of the folded content ``words`` (of :func:`clause_words`).
    A folded word is a prefix of the lowercase word it came from unless the text has an
    apostrophe or non-ASCII letters, so plain texts missing one are ruled out without being
    read (a 100k-fact store is scanned in milliseconds)."""
    low = text.lower()
    if low.isascii() and "'" not in low and not all(w in low for w in words):
        return False
    return words <= clause_words(text)


def left_over(old: Fact, new: Fact, conflict: Conflict) -> list[tuple[str, frozenset[str]]]:
    """The clauses of ``old`` that ``new`` neither restates nor replaces, as written, each with
    its folded content words: what superseding ``old`` by ``new`` would take out of the current
    facts besides the conflicting value. Empty for an atomic fact.

    ``old`` is cut into clauses at commas, semicolons and conjunctions (and, but, while, ...).
    The clause that carries the conflict's old value (or number) is the one being corrected;
    any other clause with a content word ``new`` does not have is left over:
    "User lives in Lisbon and works best in the morning" / "User lives in Porto now" leaves
    ``works best in the morning``. The polarity and quantity rules compare facts with the same
    content words, so only the value rule can leave anything over. Pure and exact."""
    replaced = clause_words(conflict.older_value)
    value = changes.content(changes.tokens(conflict.older_value))
    kept = clause_words(new.text)
    out: list[tuple[str, frozenset[str]]] = []
    for clause in _CLAUSE_BREAK.split(old.text.strip().rstrip(".!?")):
        clause = clause.strip()
        words = clause_words(clause)
        if not words or words & replaced or value & changes.content(changes.tokens(clause)):
            continue
        if words - kept:
            out.append((clause, words))
    return out


def _keys(r: _Reading) -> list[tuple[object, ...]]:
    keys: list[tuple[object, ...]] = []
    if r.frame is not None:
        keys.append(("v", r.frame))
    if r.content:
        keys.append(("p", r.content))
    if r.frame_free and r.numbers:
        keys.append(("q", r.frame_free, r.negated))
    return keys


def clear_caches() -> None:
    """Forget every reading kept (per text and per word), so the next find starts cold."""
    for cached in (_read, clause_words, _vfold, _role, changes.read, changes.index_entry,
                   changes.negated_clause_cache, *lexicon.CACHES):
        cached.cache_clear()


def find_conflicts(facts: Sequence[Fact], *, per_fact: int = PAIRS_PER_FACT) -> list[Conflict]:
    """Conflict candidates among the active ``facts``, each pair once, in source order of the
    newer fact. Bucketed by key (see the module docstring): never every pair."""
    active = sorted_yielding((f for f in facts if f.active), key=order_key)
    buckets: dict[tuple[object, ...], list[int]] = {}
    readings = [_read(f.text) for f in active]
    for i, r in enumerate(readings):
        for k in _keys(r):
            buckets.setdefault(k, []).append(i)
    seen: set[tuple[int, int]] = set()
    found: list[tuple[int, int, Conflict]] = []
    for members in buckets.values():
        if len(members) < 2:
            continue
        for pos, i in enumerate(members):
            taken = 0
            for j in members[pos + 1:]:
                if taken >= per_fact:
                    break
                if (i, j) in seen:
                    continue
                c = _judge(active[i], active[j], readings[i], readings[j])
                if c is None:
                    continue
                seen.add((i, j))
                found.append((j, i, c))
                taken += 1
    _find_changes(active, readings, seen, found)
    found.sort(key=lambda t: (t[0], t[1]))
    return [c for _, _, c in found]


CHANGE_SCAN = 16
"""For each word a change statement needs in the older fact, at most this many of the nearest
earlier facts holding it are judged (:func:`changes.probes`)."""


def _find_changes(active: Sequence[Fact], readings: Sequence[_Reading],
                  seen: set[tuple[int, int]], found: list[tuple[int, int, Conflict]]) -> None:
    """Change statements (:mod:`.changes`): each newer fact with a cue is judged against the
    nearest earlier facts holding a word the cue needs (a posting list per word probed).

    A fact's probe words are taken rarest first, and a *frequent* word (held by ``2·√n``
    facts, at least :data:`CHANGE_SCAN`) only when it is the fact's rarest: the nearest
    holders of "eat" or "work" are arbitrary facts, and the statement's rarer words ("no
    longer eats *okra*") reach the fact it corrects."""
    wanted = {w for r in readings for w in r.probes}
    if not wanted:
        return
    postings: dict[str, list[int]] = {w: [] for w in wanted}
    for i, r in enumerate(readings):
        for w in r.index:
            if w in wanted:
                postings[w].append(i)
    frequent = max(CHANGE_SCAN, math.ceil(2 * math.sqrt(len(readings))))
    for j, r in enumerate(readings):
        if not r.probes:
            continue
        ranked = sorted(set(r.probes), key=lambda w: (len(postings[w]), w))
        for rank, word in enumerate(ranked):
            post = postings[word]
            if rank and len(post) >= frequent:
                break
            end = bisect.bisect_left(post, j)
            for i in reversed(post[max(0, end - CHANGE_SCAN):end]):
                if (i, j) in seen:
                    continue
                c = _judge(active[i], active[j], readings[i], r)
                if c is not None:
                    seen.add((i, j))
                    found.append((j, i, c))
