"""Faithful forms (S-MEAN-1): ``don't`` = ``do not``, ``I'd`` = ``I would``, "I" → "the user" from
the user (the reverse from the assistant), numbers in words as digits; and the token measures
over those forms (:func:`canonical_coverage`, :func:`canonical_similarity`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning.words import (
    _APOS,
    _NEG_NO_APOS,
    _NT_BASE,
    _NUMBER_WORDS,
    _ORDINAL_WORDS,
    _S_IS,
    _SCALES,
    _SCAN,
    _SUFFIX,
    NEGATION_TOKENS,
    _words,
)


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


def canonical_coverage(claim: str, sources: str | Iterable[str], speakers: Sequence[str] | None = None
             ) -> tuple[float, list[str]]:
    """:func:`textmath.coverage` over the canonical forms (``doesn't`` is covered by ``do
    not``). ``speakers`` gives each source's speaker (default: the user)."""
    texts = [sources] if isinstance(sources, str) else list(sources)
    who = list(speakers) if speakers is not None else ["user"] * len(texts)
    return tm.coverage(canonical(claim), [canonical(t, s) for t, s in zip(texts, who, strict=True)])


def canonical_similarity(a: str, b: str) -> float:
    """:func:`textmath.similarity` over the canonical forms."""
    return tm.similarity(canonical(a), canonical(b))
