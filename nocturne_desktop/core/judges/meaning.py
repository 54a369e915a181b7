"""Meaning guards (S-MEAN-1..6): bounded rules that see what token coverage cannot.

:mod:`.textmath` proves that no *word* was invented; this module checks that no *fact* was. Every
judge of a fact (the encoder gate, Dedupe and its candidate finder, Merge, the duplicate
backstop, the re-audit, the traceability sweep, verify and the Wake score) uses the same few
rules, each explainable in one sentence. No model, no embeddings.

Faithful forms first (:func:`canonical`): ``don't`` = ``do not`` = ``doesn't`` = ``does not``,
``can't`` = ``cannot`` = ``can not``, ``I'd`` = ``I would``, and the speaker's own words are
rewritten to the party they name (from the user: ``I``/``me``/``my`` → the user, ``you`` → the
assistant; from the assistant the reverse).

Then each text is cut into clauses (at ``. ! ? ; :``, line breaks, ``but``/``although``/
``because``/``while``…, and at ``and``/``or``/a comma followed by a new subject), and:

- **polarity** — a negation cue (not, no, never, nor, neither, none, nothing, nobody, without, no
  longer, n't) negates the content words after it in its clause;
- **modality and time** — a marker (will, would, might, may, can, could, should, must, wants to,
  plans to, hopes to, going to, used to, has to, no longer, anymore) qualifies the content words
  after it in its clause (``anymore``: the whole clause);
- **quantities** — a number (digits, number words, ordinals) is bound to the nearest content word
  before it and after it (its unit or what it counts) in its clause;
- **roles** — "the user", "the assistant" and named parties: the first party of a clause is its
  subject; two parties around a content word say who does what to whom.

A claim (a merged text, an encoded fact, a quiz answer's fact) is judged against its sources:
every content word it states must be stated somewhere with the same polarity and modality, every
number bound as in a source, no two parties swapped around a word, and no property moved from
the party a source gives it to another (:func:`check_claim`). Two facts are duplicates only if
none of that separates them (:func:`duplicate_conflict`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm

__all__ = [
    "MAX_CLAIM_CHARS",
    "NEGATION_TOKENS",
    "Analysis",
    "canonical",
    "check_claim",
    "completeness",
    "coverage",
    "duplicate_conflict",
    "evidence_items",
    "is_yes_no_question",
    "keeper_problem",
    "questions",
    "resolve_answer",
    "similarity",
    "statement_problem",
]

# --------------------------------------------------------------------------- word lists


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


NEGATION_TOKENS: frozenset[str] = _words(
    "not no never nor neither none nothing nobody noone nowhere without")
"""Folded tokens that negate the rest of their clause (after :func:`canonical`)."""

_SPLIT_WORDS = _words(
    "but although though whereas while because unless however except instead whilst")
_AFTER_COMMA_SPLIT = frozenset({"only", "then", "so", "plus"})
_PRONOUNS_OTHER = frozenset({"he", "she", "it", "they", "him", "her", "them"})
_PRONOUNS_ALL = _PRONOUNS_OTHER | {"we", "us"}
_PARTY_WORDS = frozenset({"user", "users", "assistant"})
_MODALS = _words("will would might may can could should must shall")
_REPORTING = _words(
    "promise promises promised agree agrees agreed decide decides decided swear swears swore "
    "say says said tell tells told think thinks thought expect expects expected")
"""After one of these, "will"/"would" is reported speech ("promised I'd drive" = "promised to
drive"), not a change of modality."""
_TO_MARKERS = {
    "want": "wants to", "wants": "wants to", "wanted": "wants to", "wanna": "wants to",
    "plan": "plans to", "plans": "plans to", "planned": "plans to", "planning": "plans to",
    "hope": "hopes to", "hopes": "hopes to", "hoped": "hopes to", "hoping": "hopes to",
    "intend": "intends to", "intends": "intends to", "intended": "intends to",
    "going": "going to", "gonna": "going to",
    "used": "used to",
    "try": "tries to", "tries": "tries to", "tried": "tries to", "trying": "tries to",
    "need": "has to", "needs": "has to", "needed": "has to",
    "have": "has to", "has": "has to", "had": "has to",
    "wish": "wishes to", "wishes": "wishes to", "wished": "wishes to",
    "about": "about to",
}
_DETERMINERS = _words(
    "a an the this that these those my your his her its our their some any no every each "
    "many few several much more most")
_AUX = _words(
    "am is are was were be been being has have had do does did will would can could should "
    "may might must shall")
_IRREGULAR = _words(
    "went had got made took came saw ran ate drank bought built met left felt kept lost paid "
    "said sent sold spent told thought wrote gave knew became began brought caught chose drove "
    "fell flew forgot found grew heard held hid hurt lent let lit meant put read rode rang rose "
    "sang sat slept spoke stood swam taught threw understood woke won wore lives likes loves "
    "owns keeps works uses prefers enjoys hates")
_GREETINGS = _words(
    "hello hi hey hiya howdy greeting greetings thanks thank bye goodbye good morning evening "
    "night afternoon welcome cheers please sorry ok okay yes yeah yep no nope sure great nice "
    "cool bonjour hola ciao lol haha")
_YES = _words("yes yeah yep yup sure definitely absolutely indeed correct right ok okay")
_NO = _words("no nope nah never")

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_ORDINAL_WORDS = {
    "first": 1, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "thirtieth": 30,
    "hundredth": 100,
}

_APOS = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})
_SCAN = re.compile(
    r"(?P<num>\d+(?:[.,:]\d+)*)(?P<ord>st|nd|rd|th)?"
    r"|(?P<word>[^\W\d_]+(?:'[^\W\d_]+)*'?)"
    r"|(?P<stop>[.!?;:\n()\[\]\u2026]+)"
    r"|(?P<comma>,)"
)
_NEG_NO_APOS = {
    "dont": "do", "doesnt": "does", "didnt": "did", "isnt": "is", "arent": "are",
    "wasnt": "was", "werent": "were", "cant": "can", "couldnt": "could", "wouldnt": "would",
    "shouldnt": "should", "wont": "will", "havent": "have", "hasnt": "has", "hadnt": "had",
    "mustnt": "must", "cannot": "can", "aint": "is",
}
_NT_BASE = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
_SUFFIX = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}
_S_IS = _words("he she it that there what who here where how")


# --------------------------------------------------------------------------- scanning


@dataclass(frozen=True, slots=True)
class Piece:
    """One canonical word: ``low`` is what the rules read, ``raw`` the word as written."""

    low: str
    raw: str
    cap: bool = False
    start: bool = False
    """First word of a sentence (capitalisation proves nothing there)."""
    poss: bool = False
    kind: str = "word"
    """``word``, ``num``, ``stop`` (clause end) or ``comma``."""
    value: str = ""
    w: int = 0
    """Index of the written word this piece comes from ("don't" gives two pieces)."""


def _first_person(speaker: str) -> tuple[str, str]:
    return ("user", "assistant") if speaker == "user" else ("assistant", "user")


def _expand(word: str, speaker: str) -> list[tuple[str, bool]]:
    """One written word → its canonical words (lowercase) and whether each is possessive."""
    w = word.lower().translate(_APOS)
    me, you = _first_person(speaker)
    if w.endswith("n't"):
        base = w[:-3]
        return [(_NT_BASE.get(base, base), False), ("not", False)]
    if w in _NEG_NO_APOS:
        return [(_NEG_NO_APOS[w], False), ("not", False)]
    if "'" in w:
        head, _, tail = w.rpartition("'")
        if tail in _SUFFIX and head:
            return [*_expand(head, speaker), (_SUFFIX[tail], False)]
        if tail == "s" and head in _S_IS:
            return [(head, False), ("is", False)]
        if tail in ("s", ""):
            inner = _expand(head, speaker)
            return [(inner[-1][0], True)] if len(inner) == 1 else inner
        w = w.replace("'", "")
    if w in ("i", "me", "myself"):
        return [(me, False)]
    if w in ("my", "mine"):
        return [(me, True)]
    if w in ("you", "yourself", "yourselves", "ya", "u"):
        return [(you, False)]
    if w in ("your", "yours"):
        return [(you, True)]
    if w == "gonna":
        return [("going", False), ("to", False)]
    if w == "wanna":
        return [("want", False), ("to", False)]
    return [(w, False)]


def _num_value(text: str, ordinal: bool) -> str:
    t = text
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", t):
        t = t.replace(",", "")
    elif "," in t and ":" not in t:
        t = t.replace(",", ".")
    if "." in t and ":" not in t:
        t = t.rstrip("0").rstrip(".") if re.fullmatch(r"\d+\.\d+", t) else t
    t = t.lstrip("0") or "0" if t.isdigit() else t
    return f"#{t}" if ordinal else t


@lru_cache(maxsize=8192)
def _scan(text: str, speaker: str = "user") -> tuple[Piece, ...]:
    text = unicodedata.normalize("NFC", text).translate(_APOS)
    out: list[Piece] = []
    start = True
    for w, m in enumerate(_SCAN.finditer(text)):
        if m.group("stop"):
            out.append(Piece(m.group("stop"), m.group("stop"), kind="stop", w=w))
            start = True
            continue
        if m.group("comma"):
            out.append(Piece(",", ",", kind="comma", w=w))
            continue
        num = m.group("num")
        if num:
            out.append(Piece(num, m.group(0), kind="num", w=w,
                             value=_num_value(num, bool(m.group("ord")))))
            start = False
            continue
        raw = m.group("word")
        cap = raw[:1].isupper() and raw not in ("I",) and not raw.startswith("I'")
        for low, poss in _expand(raw, speaker):
            out.append(Piece(low, raw, cap=cap, start=start, poss=poss, w=w))
        start = False
    return tuple(_number_words(out))


def _number_words(pieces: list[Piece]) -> list[Piece]:
    """Fold runs of number words ("twenty five", "two hundred") into one number piece."""
    out: list[Piece] = []
    i = 0
    while i < len(pieces):
        p = pieces[i]
        if p.kind != "word" or not (p.low in _NUMBER_WORDS or p.low in _ORDINAL_WORDS):
            out.append(p)
            i += 1
            continue
        if p.low == "one" and not (i + 1 < len(pieces) and pieces[i + 1].kind == "word"
                                   and _is_content(pieces[i + 1].low)):
            out.append(p)  # "no one", "one of": a pronoun, not a count
            i += 1
            continue
        total, current, ordinal, j, raws = 0, 0, False, i, []
        while j < len(pieces) and pieces[j].kind == "word":
            low = pieces[j].low
            if low in _NUMBER_WORDS:
                current += _NUMBER_WORDS[low]
            elif low in _SCALES:
                current = max(current, 1) * _SCALES[low]
                if _SCALES[low] >= 1000:
                    total, current = total + current, 0
            elif low in _ORDINAL_WORDS:
                current += _ORDINAL_WORDS[low]
                ordinal = True
                raws.append(pieces[j].raw)
                j += 1
                break
            elif low == "and" and raws and j + 1 < len(pieces) and pieces[j + 1].low in _NUMBER_WORDS:
                pass
            else:
                break
            raws.append(pieces[j].raw)
            j += 1
        value = str(total + current)
        out.append(Piece(" ".join(raws).lower(), " ".join(raws), start=p.start, kind="num",
                         value=f"#{value}" if ordinal else value, w=p.w))
        i = j
    return out


def _is_content(low: str) -> bool:
    return bool(low) and low not in tm.STOPWORDS and low not in NEGATION_TOKENS


_CANON = re.compile(
    r"\b(?:(?P<nt>[A-Za-z]+)n['’ʼ]t"
    r"|(?P<neg>dont|doesnt|didnt|isnt|arent|wasnt|werent|cant|couldnt|wouldnt|shouldnt|wont"
    r"|havent|hasnt|hadnt|mustnt|cannot|aint)"
    r"|(?P<pro>[A-Za-z]+)['’ʼ](?P<suf>ll|d|ve|re|m|s)"
    r"|(?P<me>i|me|myself|my|mine)"
    r"|(?P<you>you|yourself|yourselves|your|yours)"
    r"|(?P<gon>gonna|wanna))\b",
    re.IGNORECASE,
)


_ASCII_LOWER_WORD = re.compile(r"[a-z]+")
_TRIGGERS = _words(
    "i me my mine myself you your yours yourself yourselves dont doesnt didnt isnt arent wasnt "
    "werent cant couldnt wouldnt shouldnt wont havent hasnt hadnt mustnt cannot aint gonna "
    "wanna")


def canonical(text: str, speaker: str = "user") -> str:
    """``text`` with the faithful forms made equal, for the token measures: contractions
    expanded (``doesn't`` → ``does not``, ``can't``/``cannot`` → ``can not``, ``I'd`` → ``I
    would``) and the speaker's pronouns replaced by the party they name (from the user,
    ``I``/``me``/``my`` → ``user``, ``you`` → ``assistant``; from the assistant the reverse).
    Everything else, punctuation included, is left as written. One regular-expression pass, and
    none for a text with no apostrophe and no pronoun or contraction to rewrite."""
    if ("'" not in text and "\u2019" not in text and "\u02bc" not in text
            and _TRIGGERS.isdisjoint(_ASCII_LOWER_WORD.findall(text.lower()))):
        return text
    me, you = _first_person(speaker)

    def swap(m: re.Match[str]) -> str:
        if m.group("nt"):
            base = m.group("nt").lower()
            return f"{_NT_BASE.get(base, base)} not"
        if m.group("neg"):
            return f"{_NEG_NO_APOS[m.group('neg').lower()]} not"
        if m.group("pro"):
            pro, suf = m.group("pro"), m.group("suf").lower()
            if suf == "s" and pro.lower() not in _S_IS:
                return m.group(0)
            head = me if pro.lower() == "i" else you if pro.lower() == "you" else pro
            return f"{head} {_SUFFIX.get(suf, 'is')}"
        if m.group("me"):
            return f"{me}'s" if m.group("me").lower() in ("my", "mine") else me
        if m.group("you"):
            return f"{you}'s" if m.group("you").lower() in ("your", "yours") else you
        return "going to" if m.group("gon").lower() == "gonna" else "want to"

    return _CANON.sub(swap, text.translate(_APOS) if "’" in text or "ʼ" in text else text)


def coverage(claim: str, sources: str | Iterable[str], speakers: Sequence[str] | None = None
             ) -> tuple[float, list[str]]:
    """:func:`textmath.coverage` over the canonical forms (``doesn't`` is covered by ``do
    not``). ``speakers`` gives each source's speaker (default: the user)."""
    texts = [sources] if isinstance(sources, str) else list(sources)
    who = list(speakers) if speakers is not None else ["user"] * len(texts)
    return tm.coverage(canonical(claim), [canonical(t, s) for t, s in zip(texts, who, strict=True)])


def similarity(a: str, b: str) -> float:
    """:func:`textmath.similarity` over the canonical forms."""
    return tm.similarity(canonical(a), canonical(b))


# --------------------------------------------------------------------------- analysis


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
    return tm.stem_token(low)


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
        if low in _MODALS:
            if not (low in ("will", "would") and any(q.low in _REPORTING for q in pieces[:k])):
                mods.add(low)
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


@lru_cache(maxsize=8192)
def _analyse(text: str, speaker: str, names: frozenset[str], aliases: frozenset[str]) -> Analysis:
    pieces = _scan(text, speaker)
    clauses = tuple(_clause(c, names, aliases) for c in _split(pieces, names))
    return Analysis(tuple(c for c in clauses if c.toks))


@dataclass(frozen=True)
class _Ctx:
    names: frozenset[str]
    aliases: frozenset[str]

    def analyse(self, text: str, speaker: str = "user") -> Analysis:
        return _analyse(text, speaker, self.names, self.aliases)


def _context(texts: Sequence[tuple[str, str]]) -> _Ctx:
    names = _names_in(texts)
    return _Ctx(names, _aliases(texts, names))


# --------------------------------------------------------------------------- judging a claim


def _clip(text: str, limit: int = 70) -> str:
    """A quoted clause, bounded so that a refusal stays one readable sentence."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _join(raws: Sequence[tuple[int, str]]) -> str:
    out: list[str] = []
    last = None
    for w, raw in raws:
        if w != last:
            out.append(raw)
        last = w
    return " ".join(out)


def _quote(clause: Clause, tok: Tok, by: str = "neg", limit: int = 5) -> str:
    """The words of ``tok``'s clause in the same scope (negated or not, same markers), from the
    first such word through ``tok`` and what follows it, at most ``limit`` written words."""
    def same(u: Tok) -> bool:
        return ((u.neg is None) == (tok.neg is None)) if by == "neg" else u.mods == tok.mods

    scope = [u for u in clause.toks if u.kind in ("word", "num", "party") and same(u)]
    if not scope:
        return tok.raw
    first = next((u for u in scope if u.pos >= 0), tok)
    if by != "neg" and first.kind != "word":
        first = tok
    raws = clause.raws[max(0, first.pos):max(scope[-1].pos, tok.pos) + 1]
    words = _join(raws).split(" ")
    return _clip(" ".join(words[:limit]), 60)


def _mods_text(mods: frozenset[str]) -> str:
    return ", ".join(f"'{m}'" for m in sorted(mods)) if mods else "no modal or time marker"


@dataclass(frozen=True)
class _Occ:
    label: str
    clause: Clause
    tok: Tok


def _occurrences(analyses: Sequence[tuple[str, Analysis]]) -> dict[str, list[_Occ]]:
    occ: dict[str, list[_Occ]] = {}
    for label, a in analyses:
        for c in a.clauses:
            for t in c.toks:
                if t.kind in ("word", "num", "party"):
                    occ.setdefault(t.stem, []).append(_Occ(label, c, t))
    return occ


def _tag_problem(what: str, claim_a: Analysis, occ: dict[str, list[_Occ]],
                 guard: str) -> str | None:
    """``guard`` ``neg``: a word the claim states (or negates) only ever negated (or stated) in
    the sources. ``mods``: a word said with the same polarity, but never with the same modal
    and time markers."""
    for c in claim_a.clauses:
        for t in c.toks:
            if t.kind != "word":
                continue
            seen = occ.get(t.stem)
            if not seen:
                continue
            same_pol = [o for o in seen if (o.tok.neg is None) == (t.neg is None)]
            if guard == "neg":
                if same_pol:
                    continue
                o = seen[0]
                if o.tok.neg is not None:
                    return (f"polarity guard: {o.label} negates '{_quote(o.clause, o.tok)}' "
                            f"({o.tok.neg}); the {what} states it")
                return (f"polarity guard: the {what} negates '{_quote(c, t)}' ({t.neg}); "
                        f"{o.label} states it")
            if not same_pol or any(o.tok.mods == t.mods for o in same_pol):
                continue
            o = same_pol[0]
            return (f"modality guard: {o.label} says '{_quote(o.clause, o.tok, 'mods')}' with "
                    f"{_mods_text(o.tok.mods)}; the {what} says it with {_mods_text(t.mods)}")
    return None


def _bindings(clause: Clause) -> list[tuple[Tok, str | None, str | None]]:
    content = [t for t in clause.toks if t.kind in ("word", "num", "party")]
    out = []
    for i, t in enumerate(content):
        if t.kind != "num":
            continue
        prev = next((u.stem for u in reversed(content[:i]) if u.kind != "num"), None)
        nxt = next((u.stem for u in content[i + 1:] if u.kind != "num"), None)
        out.append((t, prev, nxt))
    return out


def _binds(claim: tuple[Tok, str | None, str | None],
           source: tuple[Tok, str | None, str | None], counted: set[str]) -> bool:
    """Is a claim number bound like a source number? Same value and the same word after it
    (its unit, or what it counts), and the same word before it when both have one; or, for an
    elliptic source ("a cat, two in fact"), the claim's word after is the source's word before,
    provided no other number of that source counts that word."""
    t, prev, nxt = claim
    s, s_prev, s_next = source
    if t.value != s.value:
        return False
    if nxt == s_next and (prev is None or s_prev is None or prev == s_prev):
        return True
    return nxt is not None and nxt == s_prev and nxt not in counted


def _number_problem(what: str, claim_a: Analysis,
                    sources: Sequence[tuple[str, Analysis]]) -> str | None:
    src: list[tuple[str, Clause, tuple[Tok, str | None, str | None], set[str]]] = []
    for label, a in sources:
        for c in a.clauses:
            bs = _bindings(c)
            for b in bs:
                counted = {n for other, _, n in bs if other is not b[0] and n is not None}
                src.append((label, c, b, counted))
    for c in claim_a.clauses:
        for b in _bindings(c):
            same = [s for s in src if s[2][0].value == b[0].value]
            if not same:
                return f"number guard: the {what} says '{_clip(b[0].raw, 20)}', which no source states"
            if any(_binds(b, s[2], s[3]) for s in same):
                continue
            label, sc, sb, _ = same[0]
            return (f"number guard: {label} binds '{sb[0].raw}' as '{_clip(sc.text)}'; the "
                    f"{what} binds it as '{_clip(c.text)}'")
    return None


TRIPLE_WINDOW = 12
"""Two parties say who does what to whom only when at most this many words apart (keeps a long
clause linear)."""


def _triples(clause: Clause) -> set[tuple[str, str, str]]:
    out: set[tuple[str, str, str]] = set()
    toks = [t for t in clause.toks if t.kind in ("word", "party")]
    parties = [i for i, t in enumerate(toks) if t.kind == "party"]
    for a_i, i in enumerate(parties):
        for k in parties[a_i + 1:]:
            if k - i > TRIPLE_WINDOW:
                break
            if toks[i].party == toks[k].party:
                continue
            for w in toks[i + 1:k]:
                if w.kind == "word":
                    out.add((toks[i].party, w.stem, toks[k].party))
    return out


_DISPLAY: dict[str, str] = {}


def _party_name(p: str) -> str:
    if p in ("user", "assistant"):
        return f"the {p}"
    return _DISPLAY.get(p, p.capitalize())


def _remember_names(analyses: Iterable[Analysis]) -> None:
    for a in analyses:
        for c in a.clauses:
            for t in c.toks:
                if t.kind == "party" and t.party not in ("user", "assistant"):
                    raw = t.raw.translate(_APOS)
                    _DISPLAY[t.party] = raw[:-2] if raw.endswith("'s") else raw.rstrip("'")
    if len(_DISPLAY) > 4096:
        _DISPLAY.clear()


def _compatible(x: Tok, y: Tok) -> bool:
    """Can subject ``y`` of a source clause be the same party as ``x``?"""
    if y.kind == "pronoun":
        return y.stem in ("we", "us") or x.party not in ("user", "assistant")
    if x.kind == "pronoun":
        return x.stem in ("we", "us") or y.party not in ("user", "assistant")
    return x.party == y.party


def _role_problem(what: str, claim_a: Analysis,
                  sources: Sequence[tuple[str, Analysis]]) -> str | None:
    _remember_names([claim_a, *(a for _, a in sources)])
    src_triples: dict[tuple[str, str, str], str] = {}
    shapes: list[tuple[str, Clause, set[str], set[str], Tok | None]] = []
    for label, a in sources:
        for c in a.clauses:
            for tr in _triples(c):
                src_triples.setdefault(tr, label)
            shapes.append((label, c, {t.stem for t in c.toks if t.kind == "word"},
                           {t.party for t in c.toks if t.kind == "party"}, c.subject()))
    for c in claim_a.clauses:
        for x, w, y in sorted(_triples(c)):
            if (x, w, y) in src_triples or (y, w, x) not in src_triples:
                continue
            return (f"role guard: {src_triples[(y, w, x)]} has {_party_name(y)} before "
                    f"'{w}' and {_party_name(x)} after it; the {what} swaps them")
        subj = c.subject()
        if subj is None or subj.kind != "party" or subj.poss:
            continue
        words = [t for t in c.toks if t.kind == "word"]
        for word in words:
            together = False
            moved: tuple[str, Clause, Tok] | None = None
            for label, sc, stems, parties, ss in shapes:
                if word.stem not in stems:
                    continue
                if subj.party in parties or (ss is not None and _compatible(subj, ss)):
                    together = True
                elif ss is not None and not ss.poss and moved is None:
                    moved = (label, sc, ss)
                elif ss is None or ss.poss:
                    together = True  # said of nobody in particular
            if moved is not None and not together:
                label, sc, mover = moved
                who = _party_name(mover.party) if mover.kind == "party" else f"'{mover.raw}'"
                return (f"role guard: {label} says '{word.raw}' of {who} ('{_clip(sc.text)}'); the "
                        f"{what} says it of {_party_name(subj.party)}")
    return None


MAX_CLAIM_CHARS = 4000
"""A fact or a merged text longer than this is refused unread (a fact is a sentence or two)."""


def check_claim(claim: str, sources: Sequence[tuple[str, str]], *, what: str = "claim",
                speakers: Sequence[str] | None = None, context: Sequence[str] = ()) -> str | None:
    """Why ``claim`` does not say what its ``sources`` (``(label, text)`` pairs) say, or None.

    Polarity, numbers, roles, modality, in that order; the first guard that fires explains
    itself in one sentence quoting the words. ``speakers`` gives each source's speaker
    (``user`` by default; an assistant's "you" is the user). The claim is read as third-person
    memory text (``I`` in it is the user). ``context`` texts only teach names and the user's
    own names ("I'm Maya"); they are not sources."""
    if len(claim) > MAX_CLAIM_CHARS:
        return (f"meaning guards: the {what} is {len(claim):,} characters long; a claim of at "
                f"most {MAX_CLAIM_CHARS:,} can be judged")
    who = list(speakers) if speakers is not None else ["user"] * len(sources)
    ctx = _context([(claim, "user"), *((t, s) for (_, t), s in zip(sources, who, strict=True)),
                    *((t, "user") for t in context)])
    claim_a = ctx.analyse(claim)
    src = [(label, ctx.analyse(text, s)) for (label, text), s in zip(sources, who, strict=True)]
    occ = _occurrences(src)
    return (_tag_problem(what, claim_a, occ, "neg")
            or _number_problem(what, claim_a, src)
            or _role_problem(what, claim_a, src)
            or _tag_problem(what, claim_a, occ, "mods"))


# --------------------------------------------------------------------------- duplicates


_CUE_WORDS = (NEGATION_TOKENS | _MODALS | frozenset(_TO_MARKERS)
              | frozenset({"longer", "anymore"}))
_NUMBER_WORD_SET = frozenset(_NUMBER_WORDS) | frozenset(_ORDINAL_WORDS) | frozenset(_SCALES)
_ASCII_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")


@lru_cache(maxsize=65536)
def _signals(text: str) -> tuple[bool, bool, frozenset[str]] | None:
    """(has a negation or a modal/time marker, has a number, the parties it may name) read
    cheaply from an ASCII text; None for any other text (then it is analysed in full)."""
    if not text.isascii():
        return None
    c = canonical(text)
    words = set(_ASCII_LOWER_WORD.findall(c.lower()))
    cue = bool(words & _CUE_WORDS) or {"any", "more"} <= words
    number = bool(words & _NUMBER_WORD_SET) or any(ch.isdigit() for ch in c)
    parties = {w.lower() for w in _ASCII_CAPITALISED.findall(c) if w.lower() not in tm.STOPWORDS}
    if words & _PARTY_WORDS:
        parties.add("user")
    parties |= words & _PRONOUNS_ALL
    return cue, number, frozenset(parties)


def _may_conflict(a: str, b: str) -> bool:
    """False when no guard can separate ``a`` and ``b``: neither has a negation or a marker,
    not both have a number, and together they name at most one party."""
    sa, sb = _signals(a), _signals(b)
    if sa is None or sb is None:
        return True
    return sa[0] or sb[0] or (sa[1] and sb[1]) or len(sa[2] | sb[2]) > 1


def duplicate_conflict(a: tuple[str, str], b: tuple[str, str]) -> str | None:
    """Why facts ``a`` and ``b`` (``(label, text)``) are not duplicates whatever their token
    similarity, or None: opposite polarity or different modality on a shared word, a number
    one of them binds differently, or parties swapped or a property moved between them."""
    if not _may_conflict(a[1], b[1]):
        return None
    ctx = _context([(a[1], "user"), (b[1], "user")])
    aa, ba = ctx.analyse(a[1]), ctx.analyse(b[1])
    occ_b = _occurrences([(b[0], ba)])
    occ_a = _occurrences([(a[0], aa)])
    for first, fa, second, oc in ((a, aa, b, occ_b), (b, ba, a, occ_a)):
        for c in fa.clauses:
            for t in c.toks:
                if t.kind != "word" or t.stem not in oc:
                    continue
                seen = oc[t.stem]
                if any((o.tok.neg is None) == (t.neg is None) and o.tok.mods == t.mods
                       for o in seen):
                    continue
                o = seen[0]
                if (o.tok.neg is None) != (t.neg is None):
                    neg_label, neg_c, neg_t = ((first[0], c, t) if t.neg is not None
                                               else (second[0], o.clause, o.tok))
                    pos_label = second[0] if neg_label == first[0] else first[0]
                    return (f"polarity guard: {neg_label} negates '{_quote(neg_c, neg_t)}' "
                            f"({neg_t.neg}); {pos_label} states it")
                return (f"modality guard: {first[0]} says '{_quote(c, t, 'mods')}' with "
                        f"{_mods_text(t.mods)}; {second[0]} with {_mods_text(o.tok.mods)}")
    na = sum(len(_bindings(c)) for c in aa.clauses)
    nb = sum(len(_bindings(c)) for c in ba.clauses)
    pairs = [((a[0], aa), (b[0], ba))] if na <= nb else []
    if nb <= na:
        pairs.append(((b[0], ba), (a[0], aa)))
    for (la, xa), (lb, xb) in pairs:
        if not sum(len(_bindings(c)) for c in xa.clauses):
            continue
        why = _number_problem(f"fact {la}", xa, [(lb, xb)])
        if why:
            return why.replace("which no source states", f"which {lb} does not")
    for (la, xa), (lb, xb) in (((a[0], aa), (b[0], ba)), ((b[0], ba), (a[0], aa))):
        why = _role_problem(f"fact {la}", xa, [(lb, xb)])
        if why:
            return why
    return None


def keeper_problem(drop: tuple[str, str], keeper: tuple[str, str]) -> str | None:
    """S-MEAN-5: the fuller fact survives. Why dropping ``drop`` for ``keeper`` loses more than
    it keeps, or None."""
    da, ka = tm.content_tokens(canonical(drop[1])), tm.content_tokens(canonical(keeper[1]))
    extra = sorted(da - ka)
    if extra and len(da) > len(ka):
        return (f"keeper guard: {drop[0]} says more than {keeper[0]} ({', '.join(extra[:6])}); "
                f"the fuller fact is kept, so drop {keeper[0]} instead")
    return None


def completeness(merged: str, sources: Sequence[tuple[str, str]]) -> str | None:
    """S-MEAN-4: a merged text has a content word and carries every source's content words."""
    have = tm.content_tokens(canonical(merged))
    if not have:
        return "completeness guard: the merged text has no content word"
    for label, text in sources:
        lost = [t for t in tm._content_in_order(canonical(text)) if t not in have]
        if lost:
            return (f"completeness guard: the merged text loses {label}'s "
                    f"{', '.join(repr(t) for t in lost[:6])}")
    return None


# --------------------------------------------------------------------------- statements


def statement_problem(text: str) -> str | None:
    """Why ``text`` is not a statement (a greeting, a heading, a bare noun phrase), or None.

    A statement has a verb: an auxiliary or modal, a negation, a word written right after its
    subject ("The user lives", "Saffron likes"), a common irregular past or present form, or a
    word ending in -s/-ed that does not follow a determiner, a possessive or a number."""
    stripped = text.strip()
    if stripped.startswith(("#", "=")) or stripped.endswith(":"):
        return f"statement guard: {stripped[:60]!r} is a heading, not a fact"
    content = tm.content_tokens(canonical(stripped))
    if content and content <= _GREETINGS:
        return f"statement guard: {stripped[:60]!r} is a greeting, not a fact"
    pieces = [p for p in _scan(stripped, "user") if p.kind in ("word", "num")]
    prev: Piece | None = None
    for p in pieces:
        low = p.low
        if low in _AUX or low in NEGATION_TOKENS or low in _IRREGULAR:
            return None
        after_subject = prev is not None and not prev.poss and (
            prev.low in _PARTY_WORDS or prev.low in _PRONOUNS_OTHER or prev.low == "we"
            or (prev.cap and not prev.start))
        if after_subject and _is_content(low):
            return None
        blocked = prev is not None and (prev.low in _DETERMINERS or prev.poss or prev.kind == "num")
        if (not blocked and len(low) > 3 and low.endswith(("s", "ed"))
                and not low.endswith(("ss", "us", "is"))):
            return None
        prev = p
    return f"statement guard: {stripped[:60]!r} states nothing (no verb): a fact is a sentence"


# --------------------------------------------------------------------------- evidence


def resolve_answer(question: str, answer: str) -> str | None:
    """A yes/no question and the user's answer as one statement, or None.

    "Do you eat meat?" + "No." → "user not eat meat"; + "Yes, …" → "user eat meat". The
    question is the assistant's ("you" is the user); the leading auxiliary is dropped. Any
    other answer resolves nothing (the question is then no evidence of polarity)."""
    words = [p for p in _scan(question, "assistant") if p.kind in ("word", "num")]
    if not words or words[0].low not in _AUX:
        return None
    lows = [p.low for p in _scan(answer, "user") if p.kind == "word"][:4]
    if not lows:
        return None
    first = lows[:1]
    if lows[0] == "user" and len(lows) > 1 and lows[1] in _AUX:
        first = ["no"] if lows[2:3] == ["not"] else ["yes"]
    elif lows[0] == "not":
        first = ["no"]
    body = " ".join(p.low if p.kind == "word" else p.raw for p in words[1:])
    if first[0] in _YES:
        return body
    if first[0] in _NO:
        rest = words[1:]
        if rest and rest[0].kind == "word" and rest[0].low in _PARTY_WORDS:
            return " ".join([rest[0].low, "not", *(p.low if p.kind == "word" else p.raw
                                                   for p in rest[1:])])
        return "not " + body
    return None


def is_yes_no_question(question: str) -> bool:
    words = [p for p in _scan(question, "assistant") if p.kind in ("word", "num")]
    return bool(words) and words[0].low in _AUX


def evidence_items(turns: Sequence[tuple[int, str, str]]) -> list[tuple[str, str, str]]:
    """S-MEAN-6: what a fact may be traced to, as ``(label, text, speaker)``.

    ``turns`` are ``(number, role, text)``. Everything the user said counts. An assistant's
    statements never do; its questions count only together with the user's answer in the next
    turn: a wh-question ("What is your dragon called?" / "Saffron.") lends its words, a yes/no
    question is resolved by the answer into a statement of the right polarity ("Do you eat
    meat?" / "No." → "user not eat meat") or, when the answer is neither yes nor no, counts
    for nothing."""
    out: list[tuple[str, str, str]] = []
    for i, (n, role, text) in enumerate(turns):
        if role == "user":
            out.append((f"turn {n}", text, "user"))
            continue
        if role != "assistant" or i + 1 >= len(turns) or turns[i + 1][1] != "user":
            continue
        answer_n, answer = turns[i + 1][0], turns[i + 1][2]
        for q in questions(text):
            if is_yes_no_question(q):
                resolved = resolve_answer(q, answer)
                if resolved is not None:
                    out.append((f"turn {n} as answered in turn {answer_n}", resolved, "user"))
            else:
                out.append((f"turn {n} (asked)", q, "assistant"))
    return out


_QUESTION_END = re.compile(r"(?<=[.!?\n])")


def questions(text: str) -> list[str]:
    """The sentences of ``text`` that are questions. Linear: a pattern like ``[^.!?]*\\?``
    rescans from every position and took seconds on a long reply with no question mark."""
    return [q.strip() for q in _QUESTION_END.split(text) if q.rstrip().endswith("?")]
