"""The guards (S-MEAN-1..5): a claim judged against its sources (polarity, modality, numbers,
roles), two facts that are not duplicates whatever their tokens, the keeper and completeness."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning.canonical import _ASCII_LOWER_WORD, canonical
from nocturne_desktop.core.judges.meaning.clauses import Analysis, Clause, Tok, _context, _join
from nocturne_desktop.core.judges.meaning.words import (
    _APOS,
    _MODALS,
    _NUMBER_WORDS,
    _ORDINAL_WORDS,
    _PARTY_WORDS,
    _PRONOUNS_ALL,
    _SCALES,
    _TO_MARKERS,
    NEGATION_TOKENS,
)
from nocturne_desktop.core.judges.meaning.words import _words as _spaced


def _clip(text: str, limit: int = 70) -> str:
    """A quoted clause, bounded so that a refusal stays one readable sentence."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
            # a number or a place can be negated too ("not 7", "never been to Peru"); a
            # modality is read on words only
            if t.kind != "word" and not (guard == "neg" and t.kind in ("num", "party")):
                continue
            seen = occ.get(t.stem)
            if not seen:
                continue
            if t.kind != "word" and not any(o.tok.neg is not None for o in seen) and t.neg is None:
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


_WHEN = _spaced(
    "last next this ago yesterday today tonight morning evening night afternoon week weekend "
    "month year spring summer autumn winter january february march april may june july august "
    "september october november december monday tuesday wednesday thursday friday saturday "
    "sunday rain charity record")
"""Words that say when or how a thing was done, not what a number counts: a number binds past
them to its verb or noun ("ran it last May in 3 hours" binds 3 as "ran it in 3 hours")."""


def _bindings(clause: Clause) -> list[tuple[Tok, str | None, str | None]]:
    content = [t for t in clause.toks if t.kind in ("word", "num", "party")]
    out = []
    for i, t in enumerate(content):
        if t.kind != "num":
            continue
        prev = next((u.stem for u in reversed(content[:i])
                     if u.kind != "num" and u.raw.lower().rstrip(".,") not in _WHEN), None)
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
    same_before = prev is None or s_prev is None or prev == s_prev
    if nxt == s_next and same_before:
        return True
    if nxt is None and same_before and s_next is not None:
        return True  # "is 7" said as "is 7 years old": the claim leaves the unit out
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
            said = next((t.raw for t in c.toks if t.stem == w), w)
            return (f"role guard: {src_triples[(y, w, x)]} has {_party_name(y)} before "
                    f"'{said}' and {_party_name(x)} after it; the {what} swaps them")
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
                if t.kind not in ("word", "num", "party") or t.stem not in oc:
                    continue
                seen = oc[t.stem]
                if any((o.tok.neg is None) == (t.neg is None) and o.tok.mods == t.mods
                       for o in seen):
                    continue
                if t.kind != "word" and (t.neg is None) == all(o.tok.neg is None for o in seen):
                    continue  # a number or a name: only a negation separates them
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
