"""Statements and evidence (S-MEAN-6): is a text a statement at all, and what the user said
(a yes/no answer resolved against the question it answers)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning.canonical import Piece, _is_content, _scan, canonical
from nocturne_desktop.core.judges.meaning.words import (
    _AUX,
    _DETERMINERS,
    _GREETINGS,
    _IRREGULAR,
    _NO,
    _PARTY_WORDS,
    _PRONOUNS_OTHER,
    _YES,
    NEGATION_TOKENS,
)


def statement_problem(text: str) -> str | None:
    """Why ``text`` is not a statement (a greeting, a heading, a bare noun phrase), or None.

    S-WORDS-2: a fact is a sentence with a predicate about someone. A statement has a verb: an
    auxiliary or modal, a negation, a common irregular past or present form, a word written
    right after a pronoun or "the user" ("The user run" from "I run"), a word ending in
    -s/-ed that does not follow a determiner, a possessive or a number ("Saffron likes",
    "Jonas promised"). After a name, a bare word is not a verb: "Santa Maria hospital" is a
    place, not a fact. Pure and total: every judge of a fact's text may call it."""
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
            prev.low in _PARTY_WORDS or prev.low in _PRONOUNS_OTHER or prev.low == "we")
        if after_subject and _is_content(low):
            return None
        blocked = prev is not None and (prev.low in _DETERMINERS or prev.poss or prev.kind == "num")
        if (not blocked and len(low) > 3 and low.endswith(("s", "ed"))
                and not low.endswith(("ss", "us", "is"))):
            return None
        prev = p
    return f"statement guard: {stripped[:60]!r} states nothing (no verb): a fact is a sentence"


_COPULA_LEADS = re.compile(
    r"\b(?P<lead>i(?:'|\u2019)?m|i am|i was|i(?:'|\u2019)?ve been|i have been|"
    r"my (?P<noun>[a-z]+(?: [a-z]+)?) (?P<verb>is|was))\s+", re.IGNORECASE)


_CLAUSE_END = re.compile(r"\s*(?:$|[.,;:!?)]|(?:and|but|so|because|while)\b)")


def complete_predicate(fragment: str, said: Sequence[str]) -> str | None:
    """A predicate the model cut from its subject, completed from what the user said, or None.

    "18 years old" proposed from "I'm 18 years old" becomes "The user is 18 years old": the
    fragment is refused by :func:`statement_problem` on its own, but the user's sentence gives
    it a subject and a copula word for word ("I'm"/"I am" → "The user is", "I was" → "The user
    was", "my sister is" → "The user's sister is"). Only a fragment that follows such a lead
    in one of ``said`` (the user's turns) is completed; the result is judged like any fact."""
    frag = fragment.strip().rstrip(".!")
    if not frag or statement_problem(frag) is None or len(frag) > 120:
        return None
    want = " ".join(frag.lower().split())
    for text in said:
        flat = " ".join(text.replace("\u2019", "'").split())
        for m in _COPULA_LEADS.finditer(flat):
            rest = flat[m.end():].lower()
            if not rest.startswith(want) or not _CLAUSE_END.match(rest[len(want):]):
                continue  # the fragment must follow the lead word for word, to its clause's end
            lead = m.group("lead").lower().replace("\u2019", "'")
            if m.group("noun"):
                subject = f"The user's {m.group('noun').lower()} {m.group('verb').lower()}"
            elif lead == "i was":
                subject = "The user was"
            elif "been" in lead:
                subject = "The user has been"
            else:
                subject = "The user is"
            return f"{subject} {frag}"
    return None


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
