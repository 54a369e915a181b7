"""Categories checked by code (S-WORDS-2): the model proposes a fact's category, a rule may
refuse or correct it, and the correction says which rule fired.

Two rules, in this order, each one sentence a person can check:

- **preference** — a preference word (likes, loves, prefers, enjoys, hates, dislikes, can't
  stand, favourite, fan of) makes a preference: "My favourite colour is blue" is not a
  commitment, nor is its correction an identity. A commitment that mentions a preference
  ("promised to bake her favourite cake") stays a commitment;
- **commitment** — a fact with no commitment word (promised, agreed to, will, going to, plans
  to, has to, must, needs to, appointment, deadline, booked, scheduled, signed up, due, owes,
  tomorrow, next week…) is not a commitment: it becomes an identity fact when it says who the
  person is or where they live or work (is a/an, name, lives in, works at/as, born, years
  old, from), an event when it is told in the past, else context.

An unknown category is refused (:func:`category_problem`). Pure; no model.
"""

from __future__ import annotations

import re

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning import canonical
from nocturne_desktop.core.types import CATEGORIES

__all__ = ["category_problem", "category_rule"]

_PREFERENCE = re.compile(
    r"\b(?:like|likes|liked|love|loves|loved|prefer|prefers|preferred|enjoy|enjoys|enjoyed|"
    r"hate|hates|hated|dislike|dislikes|disliked|adore|adores|favou?rite|fan of|"
    r"can ?not stand|cannot stand|into (?:jazz|rock|music|films|movies|books))\b")
_COMMITMENT = re.compile(
    r"\b(?:promise|promised|promises|agreed to|agree to|agrees to|will|shall|going to|gonna|"
    r"plan to|plans to|planned to|planning to|intend|intends|intended|has to|have to|had to|"
    r"must|need to|needs to|needed to|should|ought|committed|commit|commits|owe|owes|owed|"
    r"appointment|deadline|due|booked|scheduled|signed up|registered|reminder|remind|"
    r"meeting|tomorrow|tonight|next (?:week|month|year|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday)|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"the end))\b")
_IDENTITY = re.compile(
    r"\b(?:is an?|am an?|name is|is called|is named|lives in|lives near|lives with|live in|"
    r"works at|works as|works for|work at|work as|work for|born|years old|is from|am from|"
    r"comes from|nationality|grew up|studies at|studying at|married to|is \d+)\b")
_PAST_EVENT = re.compile(
    r"\b(?:yesterday|last (?:week|month|year|night|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|weekend)|ago|went|visited|ran|met|had|bought|saw|attended|finished|"
    r"travelled|traveled|flew|won|lost)\b")


def category_problem(category: object) -> str | None:
    """Why ``category`` is not one of the store's categories, or None."""
    if isinstance(category, str) and category in CATEGORIES:
        return None
    shown = repr(category)[:40]
    return f"unknown category {shown} (expected one of: {', '.join(CATEGORIES)})"


def _said(text: str) -> str:
    return " ".join(tm.normalize(canonical(text)).split())


def category_rule(text: str, proposed: str) -> tuple[str, str | None]:
    """(the category to store, the rule's sentence when it corrected ``proposed``, else None)
    for a fact ``text`` whose category the model proposed (module docstring)."""
    said = _said(text)
    pref = _PREFERENCE.search(said)
    commit = _COMMITMENT.search(said)
    if pref and proposed != "preferences" and not (proposed == "commitments" and commit):
        return "preferences", (f"category rule: {proposed!r} corrected to 'preferences': a "
                               f"preference word ({pref.group(0)!r}) makes a preference")
    if proposed == "commitments" and not commit:
        if _IDENTITY.search(said):
            target, why = "identity", "it says who the person is or where they live or work"
        elif _PAST_EVENT.search(said):
            target, why = "event", "it tells what happened"
        else:
            target, why = "context", "nothing in it is promised or planned"
        return target, (f"category rule: 'commitments' corrected to {target!r}: the fact has no "
                        f"commitment word (promised, will, has to, appointment…); {why}")
    return proposed, None
