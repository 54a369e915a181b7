"""What an accepted change does to the facts it names (:func:`apply`) and which facts it writes,
in words (:func:`touched`): the one definition of each kind's effect, over the values of
:mod:`~nocturne_desktop.core.mutations`.

:func:`apply` is what the store writes, what ``sleep.simulate`` (dry runs) keeps in memory and
what the gates' backstops measure what is still standing after; :func:`touched` is what the gate
state reports ("already merged into m_2") and how the diff attributes a changed fact to its
change. A **pinned** fact is never deactivated here (a drop, a merge that consumes it, a
forgetting): the gates and the rules refuse first with a reason, this is the backstop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.mutations import (
    Add,
    Append,
    BringBack,
    Change,
    DecidedBy,
    Drop,
    Edit,
    Forget,
    Merge,
    Pin,
    Promote,
    Redo,
    Restore,
    Supersede,
    Undo,
    Update,
)
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact

__all__ = ["FactLookup", "TextCheck", "apply", "apply_all", "touched"]

FactLookup = Callable[[str], Fact | None]
"""The current value of a fact by id (None if there is none)."""
TextCheck = Callable[[Any, str], str]
"""Checks a text a change writes (``(text, what)`` → text, or :class:`InvalidInput`)."""


def _plain_text(text: Any, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{what} is empty")
    return text


def _active(get: FactLookup, item_id: str, what: str) -> Fact:
    fact = get(item_id)
    if fact is None:
        raise InvalidInput(f"{what}: unknown item id {item_id!r}")
    if not fact.active:
        raise InvalidInput(f"{what}: {item_id} is not active (it was forgotten)")
    return fact


def _unpinned(fact: Fact, what: str) -> Fact:
    if fact.pinned:
        raise InvalidInput(f"{what}: {fact.id} is pinned, and a pinned fact is never forgotten "
                           "(unpin it first)")
    return fact


def apply(change: Change, get: FactLookup, *, check_text: TextCheck = _plain_text) -> list[Fact]:
    """What an accepted ``change`` makes of the facts it names: their new values, in the order
    they are to be written. Validates against ``get`` first and returns nothing half-done:
    :class:`InvalidInput` if a fact it needs is unknown or inactive, or what it writes is
    not a block or a text. Pure: the caller writes (the store) or keeps (a dry run) the result.
    """
    what = f"{change.row_kind} {change.item_id}"
    if not change.accepted:
        raise InvalidInput(f"{what}: a refused mutation cannot be applied")
    if isinstance(change, Drop | Forget):
        return [replace(_unpinned(_active(get, change.target, what), what), active=False)]
    if isinstance(change, Promote):
        fact = _active(get, change.target, what)
        if not isinstance(change.to_block, str) or change.to_block not in BLOCKS:
            raise InvalidInput(
                f"{what}: unknown block {change.to_block!r}; expected one of {', '.join(BLOCKS)}")
        return [replace(fact, block=change.to_block)]
    if isinstance(change, Merge):
        into = _active(get, change.into, what)
        try:
            text = check_text(change.merged_text, "mergedText")
        except InvalidInput as exc:
            raise InvalidInput(f"{what}: {exc}") from None
        consumed = [_unpinned(_active(get, i, what), what) for i in change.consumed]
        return [replace(into, text=text), *(replace(f, active=False) for f in consumed)]
    if isinstance(change, Supersede):
        old = _unpinned(_active(get, change.target, what), what)
        new = _active(get, change.by, what)
        if old.id == new.id:
            raise InvalidInput(f"{what}: a fact cannot supersede itself")
        return [replace(old, active=False, valid_until=new.created_at, superseded_by=new.id)]
    if isinstance(change, Update):
        fact = _active(get, change.target, what)
        if change.block is not None and change.block not in BLOCKS:
            raise InvalidInput(f"{what}: unknown block {change.block!r}")
        text = fact.text if change.text is None else check_text(change.text, "text")
        return [replace(fact, text=text, block=change.block or fact.block,
                        category=change.category or fact.category)]
    if isinstance(change, Edit):
        fact = _active(get, change.target, what)
        if change.block is not None and change.block not in BLOCKS:
            raise InvalidInput(
                f"{what}: unknown block {change.block!r}; expected one of {', '.join(BLOCKS)}")
        if change.category is not None and change.category not in CATEGORIES:
            raise InvalidInput(f"{what}: unknown category {change.category!r}; expected one of "
                               f"{', '.join(CATEGORIES)}")
        text = fact.text if change.text is None else check_text(change.text, "text")
        return [replace(fact, text=text, block=change.block or fact.block,
                        category=change.category or fact.category)]
    if isinstance(change, Pin):
        return [replace(_active(get, change.target, what), pinned=change.pinned)]
    if isinstance(change, BringBack):
        gone = get(change.target)
        if gone is None:
            raise InvalidInput(f"{what}: unknown item id {change.target!r}")
        if gone.active:
            raise InvalidInput(f"{what}: {change.target} is not forgotten (it is active)")
        return [replace(gone, active=True, valid_until=None, superseded_by=None)]
    raise InvalidInput(f"{what}: a {change.row_kind} is not applied to facts by apply")


def apply_all(facts: Sequence[Fact], changes: Sequence[Change]) -> list[Fact]:
    """``facts`` after the accepted ``changes`` in order, in memory (same order, same ids)."""
    by_id = {f.id: f for f in facts}
    for c in changes:
        if c.accepted:
            for new in apply(c, by_id.get):
                by_id[new.id] = new
    return list(by_id.values())


def _by(change: Change) -> str:
    return "in Letta" if change.decided_by == DecidedBy.LETTA else "by you"


def touched(change: Change) -> dict[str, str]:
    """The facts an accepted ``change`` writes, each with how, in words ("merged into m_2")."""
    if not change.accepted:
        return {}
    if isinstance(change, Drop):
        return {change.target: f"dropped as a duplicate of {change.duplicate_of or '?'}"}
    if isinstance(change, Merge):
        out = dict.fromkeys(change.from_ids, f"merged into {change.into}")
        out[change.into] = "rewritten by a merge"
        return out
    if isinstance(change, Promote):
        return {change.target: f"promoted to {change.to_block}"}
    if isinstance(change, Forget):
        return {change.target: "forgotten"}
    if isinstance(change, Restore):
        return dict.fromkeys(change.changed_ids, f"restored to {change.version}")
    if isinstance(change, Append):
        return {change.target: "written by the encoder"}
    if isinstance(change, Update):
        return {change.target: "edited"}
    if isinstance(change, Edit):
        return {change.target: f"edited {_by(change)}"}
    if isinstance(change, Pin):
        return {change.target: "pinned by you" if change.pinned else "unpinned by you"}
    if isinstance(change, BringBack):
        return {change.target: "brought back by you"}
    if isinstance(change, Add):
        return {change.target: f"written {_by(change)}"}
    if isinstance(change, Redo):
        return dict.fromkeys(change.changed_ids, f"redone ({change.undone})")
    if isinstance(change, Undo):
        return dict.fromkeys(change.changed_ids, f"undone ({change.undone})")
    if isinstance(change, Supersede):
        return {change.target: f"superseded by {change.by}"}
    return {}
