"""The one admission check every fact's text passes, whichever door it comes through (S-DOOR-1).

A fact reaches memory by many doors: the encoder, the person's own *Add* and *Edit*, "remember
that …" in chat, a full import, an import into scratch, a sleep's merge, an undo or restore,
a sync with another memory (Letta). The store calls :func:`check` in its write path
(``FactStore._insert`` and ``_stage``, ``Store.load``), so no door can skip it; a gate calls
:func:`problem` first so that what it accepts the store can write (S-ROB-3). The rules, in
order, each refusal labelled by its rule:

* ``limits`` - a string, not empty, no NUL, at most :data:`~core.limits.MAX_TEXT_CHARS`;
* ``unicode`` - encodable (no lone surrogate) and free of control characters (C0 and C1,
  tab and line breaks aside: an escape sequence in a fact would drive a terminal that shows it);
* ``sensitive`` - nothing that looks like a secret (:func:`.sensitive.sensitive_reason`);
* ``statement`` - a sentence with a predicate (:func:`.meaning.statement_problem`), at the
  doors where new words enter memory (:data:`STATEMENT_DOORS`).

The statement guard is left out where it would refuse what memory already held or cannot
judge alone: a **merge** (its text is judged against its sources by the merge gate's meaning
guards, and a refusal inside the store would fail a whole pass instead of one proposal), a
**restore** (undo, redo, restore to a version: the value was admitted when first written, and
refusing it would leave the person unable to undo), a **full import** (a faithful copy of a
memory, whose history may hold texts an older Nocturne admitted before the guard existed), and
the store's generic API (:attr:`Door.STORE`: ``append``/``replace``/``update`` for scripts and
the verifier, which hold their callers to the floor). Secrets, limits and Unicode hold at every
door: a secret in an old version is not brought back by an undo either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from nocturne_desktop.core.errors import FactRefused
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.judges.sensitive import sensitive_reason
from nocturne_desktop.core.limits import MAX_TEXT_CHARS, text_problem

__all__ = ["STATEMENT_DOORS", "Door", "Refusal", "check", "control_problem", "problem"]


class Door(StrEnum):
    """The way a fact's text comes into memory."""

    ENCODER = "encoder"
    HAND_ADD = "hand add"
    HAND_EDIT = "hand edit"
    CHAT = "chat remember"
    IMPORT = "import"
    IMPORT_SCRATCH = "import into scratch"
    SYNC = "sync"
    MERGE = "merge"
    RESTORE = "restore"
    STORE = "store"


STATEMENT_DOORS: frozenset[Door] = frozenset({
    Door.ENCODER, Door.HAND_ADD, Door.HAND_EDIT, Door.CHAT, Door.IMPORT_SCRATCH, Door.SYNC,
})
"""Doors where new words enter memory, so the text must be a statement (S-WORDS-2)."""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Refusal:
    """Why a text may not enter memory: the rule that refused it and its one sentence."""

    rule: str
    reason: str
    door: Door

    @property
    def message(self) -> str:
        return self.reason


def control_problem(text: str, what: str = "text") -> str | None:
    """Why ``text`` holds a character no fact may hold (a C0 or C1 control other than tab and
    line breaks), or None."""
    bad = _CONTROL.search(text)
    if bad is None:
        return None
    return (f"{what} contains a control character (U+{ord(bad.group()):04X} at position "
            f"{bad.start()}); a fact is plain text")


def problem(text: object, door: Door, *, what: str = "text", limit: int = MAX_TEXT_CHARS,
            statement: bool | None = None) -> Refusal | None:
    """Why ``text`` may not come into memory through ``door``, or None. Pure and total.
    ``statement`` overrides whether the statement guard runs (default: by the door; the
    encoder's gate runs it itself, after its own content-word check)."""
    limits_problem = text_problem(text, what=what, limit=limit)
    if limits_problem is not None:
        rule = "unicode" if "not valid Unicode" in limits_problem else "limits"
        return Refusal(rule, limits_problem, door)
    assert isinstance(text, str)
    control = control_problem(text, what)
    if control is not None:
        return Refusal("unicode", control, door)
    secret = sensitive_reason(text)
    if secret is not None:
        return Refusal("sensitive", secret, door)
    if door in STATEMENT_DOORS if statement is None else statement:
        fragment = meaning.statement_problem(text)
        if fragment is not None:
            return Refusal("statement", fragment, door)
    return None


def check(text: object, door: Door, *, what: str = "text") -> str:
    """``text`` when it may come in through ``door``; else :class:`FactRefused` (an
    :class:`InvalidInput`) with the labelled reason."""
    refused = problem(text, door, what=what)
    if refused is not None:
        raise FactRefused(refused.message, rule=refused.rule, door=str(door))
    assert isinstance(text, str)
    return text
