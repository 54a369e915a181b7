"""Each text cut into clauses, each word tagged with the negation and the modality that reach it,
the numbers bound to their neighbours, and the parties named (the analysis the guards read)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning.canonical import Piece, _is_content, _scan
from nocturne_desktop.core.judges.meaning.words import (
    _AFTER_COMMA_SPLIT,
    _AUX,
    _DETERMINERS,
    _MODALS,
    _PARTY_WORDS,
    _PRONOUNS_ALL,
    _REPORTING,
    _SPLIT_WORDS,
    _TO_MARKERS,
    NEGATION_TOKENS,
)
from nocturne_desktop.core.judges.meaning.words import _words as _spaced


def _join(raws: Sequence[tuple[int, str]]) -> str:
    out: list[str] = []
    last = None
    for w, raw in raws:
        if w != last:
            out.append(raw)
        last = w
    return " ".join(out)


_PAST_FORMS = _spaced(
    "went had got made took came saw ran ate drank bought built met left felt kept lost paid "
    "said sent sold spent told thought wrote gave knew became began brought caught chose drove "
    "fell flew forgot found grew heard held won wore quit")


def _finite_past(low: str) -> bool:
    """A past-tense verb form ("started", "went"): after "and" it begins a predicate of its own."""
    return low in _PAST_FORMS or (low.endswith("ed") and len(low) > 4)


@dataclass(frozen=True, slots=True)
class Tok:
    stem: str
    raw: str
    neg: str | None
    """The cue that negates this word in its clause (as written), or None."""
    mods: frozenset[str]
    kind: str
    """``word``, ``num`` or ``party``."""
    party: str = ""
    value: str = ""
    poss: bool = False
    pos: int = -1
    """Index of the word's piece in its clause."""


@dataclass(frozen=True, slots=True)
class Clause:
    toks: tuple[Tok, ...]
    raws: tuple[tuple[int, str], ...]
    """(written-word index, word as written) per piece, for quoting."""

    @property
    def text(self) -> str:
        return _join(self.raws)

    def subject(self) -> Tok | None:
        for t in self.toks:
            if t.kind == "party" or t.stem in _PRONOUNS_ALL:
                return t
            if t.kind in ("word", "num"):
                return None
        return None


@dataclass(frozen=True, slots=True)
class Analysis:
    clauses: tuple[Clause, ...]


@lru_cache(maxsize=65536)
def _stem(low: str) -> str:
    """The token's stem with its verb ending folded, the same way on every side: "finished" =
    "finish", "started" = "start", "liked" = "like" (so a tense is compared, not a spelling)."""
    w = tm.stem_token(low)
    if w.endswith("ed") and len(w) >= 6 and w.isalpha():
        w = w[:-2]
        if w[-1] == w[-2] and w[-1] not in "lsfz":
            w = w[:-1]  # "stopped" → "stop"
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]  # "like"/"liked" → "lik", "move"/"moved" → "mov"
    return w


@lru_cache(maxsize=8192)
def _text_names(text: str, speaker: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(capitalised mid-sentence, capitalised sentence starts before a verb-like word, written
    in lowercase) for one text."""
    names: set[str] = set()
    starters: set[str] = set()
    lower: set[str] = set()
    pieces = _scan(text, speaker)
    for k, p in enumerate(pieces):
        if p.kind != "word":
            continue
        if not p.cap:
            lower.add(_stem(p.low))
        elif p.low not in tm.STOPWORDS:
            if not p.start:
                names.add(_stem(p.low))
            elif k + 1 < len(pieces) and pieces[k + 1].kind == "word":
                nxt = pieces[k + 1].low
                if nxt in _AUX or (len(nxt) > 3 and nxt.endswith(("s", "ed"))
                                   and not nxt.endswith("ss")):
                    starters.add(_stem(p.low))
    return frozenset(names), frozenset(starters), frozenset(lower)


def _names_in(texts: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Lowercased words written capitalised somewhere other than a sentence start, plus a
    capitalised sentence start followed by a verb-like word ("Bolt is", "Jonas promised") when
    no text writes it in lowercase."""
    names: set[str] = set()
    starters: set[str] = set()
    lower: set[str] = set()
    for text, speaker in texts:
        n, st_, lo = _text_names(text, speaker)
        names |= n
        starters |= st_
        lower |= lo
    return frozenset(names | (starters - lower))


def _split(pieces: Sequence[Piece], names: frozenset[str]) -> list[list[Piece]]:
    def subject_at(k: int) -> bool:
        while k < len(pieces) and pieces[k].low in ("the", "a", "an"):
            k += 1
        if k >= len(pieces) or pieces[k].kind != "word":
            return False
        low = pieces[k].low
        return (low in _PARTY_WORDS or low in _PRONOUNS_ALL
                or (pieces[k].cap and _stem(low) in names))

    clauses: list[list[Piece]] = [[]]
    for k, p in enumerate(pieces):
        prev = pieces[k - 1] if k else None
        cut = (
            p.kind == "stop"
            or (p.kind == "word" and p.low in _SPLIT_WORDS)
            or (p.kind == "word" and p.low in ("and", "or") and subject_at(k + 1))
            or (p.kind == "comma" and subject_at(k + 1))
            or (p.kind == "word" and p.low in _AFTER_COMMA_SPLIT and prev is not None
                and prev.kind == "comma")
        )
        if cut:
            clauses.append([])
            if p.kind == "word" and p.low in _AFTER_COMMA_SPLIT:
                clauses[-1].append(p)
            continue
        if p.kind != "comma":
            clauses[-1].append(p)
    return [c for c in clauses if c]


def _clause(pieces: list[Piece], names: frozenset[str], aliases: frozenset[str]) -> Clause:
    toks: list[Tok] = []
    neg: str | None = None
    mods: set[str] = set()
    whole: set[str] = set()
    n = len(pieces)
    lows = [p.low for p in pieces]
    if "anymore" in lows or any(lows[k] == "any" and k + 1 < n and lows[k + 1] == "more"
                                for k in range(n)):
        whole.add("no longer")
    for k, p in enumerate(pieces):
        low = p.low
        nxt = lows[k + 1] if k + 1 < n else ""
        if p.kind == "num":
            toks.append(Tok(p.value, p.raw, neg, frozenset(mods | whole), "num", pos=k, value=p.value))
            continue
        if low == "no" and nxt == "longer":
            neg = neg or p.raw
            mods.add("no longer")
            continue
        if low == "no" and k == 0 and (n == 1 or nxt in _PARTY_WORDS or nxt in _PRONOUNS_ALL):
            continue  # the interjection "No, I …"
        if low in NEGATION_TOKENS:
            neg = neg or p.raw
            continue
        if low in _MODALS and not (p.cap and not p.start):  # "last May" is a month
            if not (low in ("will", "would") and any(q.low in _REPORTING for q in pieces[:k])):
                mods.add(low)
            continue
        if low in ("and", "then") and mods and k + 1 < n and _finite_past(pieces[k + 1].low):
            mods.clear()  # "wants to finish X and started Y": a new finite verb, no "wants to"
            continue
        if low in _TO_MARKERS and nxt == "to":
            after = lows[k + 2] if k + 2 < n else ""
            motion = low == "going" and (after in _DETERMINERS or after in _PARTY_WORDS
                                         or not after)
            if not motion and not (low in ("have", "has", "had") and after in _DETERMINERS):
                mods.add(_TO_MARKERS[low])
                if low not in ("have", "has", "had", "going", "used", "about"):
                    toks.append(Tok(_stem(low), p.raw, neg, frozenset(mods | whole), "word", pos=k))
                continue
        if low in ("longer", "anymore") and ("no longer" in mods or "no longer" in whole):
            continue
        stem = _stem(low)
        if low in _PARTY_WORDS:
            party = "assistant" if low == "assistant" else "user"
            toks.append(Tok(party, p.raw, neg, frozenset(mods | whole), "party", pos=k, party=party,
                            poss=p.poss))
            continue
        if stem in names or stem in aliases:
            party = "user" if stem in aliases else stem
            toks.append(Tok(stem, p.raw, neg, frozenset(mods | whole), "party", pos=k, party=party,
                            poss=p.poss))
            continue
        if low in _PRONOUNS_ALL:
            toks.append(Tok(low, p.raw, neg, frozenset(mods | whole), "pronoun", pos=k, poss=p.poss))
            continue
        if _is_content(low) and stem:
            toks.append(Tok(stem, p.raw, neg, frozenset(mods | whole), "word", poss=p.poss, pos=k))
    return Clause(tuple(toks), tuple((p.w, p.raw) for p in pieces))


def _aliases(texts: Iterable[tuple[str, str]], names: frozenset[str]) -> frozenset[str]:
    """Names the user gives as their own: "I'm Maya", "my name is Maya", "call me Maya"."""
    found: set[str] = set()
    for text, speaker in texts:
        found |= _text_aliases(text, speaker)
    return frozenset(found)


@lru_cache(maxsize=8192)
def _text_aliases(text: str, speaker: str) -> frozenset[str]:
    found: set[str] = set()
    pieces = [p for p in _scan(text, speaker) if p.kind != "comma"]
    lows = [p.low for p in pieces]
    for k, p in enumerate(pieces):
        if p.kind != "word" or p.low != "user":
            continue
        j: int | None = None
        if not p.poss and lows[k + 1:k + 2] in (["am"], ["is"]):
            j = k + 3 if lows[k + 2:k + 3] == ["called"] else k + 2
        elif p.poss and lows[k + 1:k + 3] == ["name", "is"]:
            j = k + 3
        elif k and lows[k - 1] in ("call", "called"):
            j = k + 1
        if j is None or j >= len(pieces):
            continue
        cand = pieces[j]
        after = pieces[j + 1] if j + 1 < len(pieces) else None
        if (cand.kind == "word" and cand.cap and not cand.poss
                and (after is None or after.kind == "stop" or not _is_content(after.low))):
            found.add(_stem(cand.low))
    return frozenset(found)


def _contrast(prev: Clause, clause: Clause, first: Piece) -> Clause:
    """"I don't eat pork, only chicken": the "only" clause states what the negated clause's verb
    denies of the other thing (the user eats chicken). The verb is added to it, stated."""
    if first.low != "only":
        return clause
    verb = next((t for t in prev.toks if t.kind == "word" and t.neg is not None), None)
    if verb is None or any(t.stem == verb.stem for t in clause.toks):
        return clause
    stated = Tok(verb.stem, verb.raw, None, verb.mods, "word", poss=verb.poss, pos=-1)
    return Clause((stated, *clause.toks), clause.raws)


@lru_cache(maxsize=8192)
def _analyse(text: str, speaker: str, names: frozenset[str], aliases: frozenset[str]) -> Analysis:
    pieces = _scan(text, speaker)
    out: list[Clause] = []
    for c in _split(pieces, names):
        clause = _clause(c, names, aliases)
        if out and c:
            clause = _contrast(out[-1], clause, c[0])
        out.append(clause)
    return Analysis(tuple(c for c in out if c.toks))


@dataclass(frozen=True)
class _Ctx:
    names: frozenset[str]
    aliases: frozenset[str]

    def analyse(self, text: str, speaker: str = "user") -> Analysis:
        return _analyse(text, speaker, self.names, self.aliases)


def _context(texts: Sequence[tuple[str, str]]) -> _Ctx:
    names = _names_in(texts)
    return _Ctx(names, _aliases(texts, names))
