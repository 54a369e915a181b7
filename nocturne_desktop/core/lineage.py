"""Lineage (S-LIN-1): why memory holds a fact - its whole ancestry and what became of it.

Computed from the audit log alone (plus the transcript for the turns' text and the facts' own
rows): nothing is recorded for lineage that is not already recorded for audit.

* **ancestry** of a fact: the transcript turn it was encoded from (with its text), then every
  fact that flowed into it - the sources of each merge into it, the copies dropped as its
  duplicates, the facts it superseded - each with *its* ancestry, to any depth (a fact merged
  from merged facts is a tree of depth ≥ 3);
* **steps** on each fact: every accepted change that touched it (encoding, drops, merges,
  promotions, supersedes, forgetting, restores, and the person's own hand: edits, pins and
  unpins, adds, imports, forget now, bring back, undo and redo, each "by you"), each with its
  version, pass, decided-by, reason and the fact's state once it took effect (S-WORDS-3: the
  last step's state is the fact's state now);
* **descendants**: what the fact went into - the merge target that absorbed it, the keeper it
  was dropped for, the fact that superseded it - and onward, to the fact that holds it now.

:func:`lineage` returns plain data; :func:`render` draws it as an indented text tree (the
``nocturne lineage m_12`` command prints it; the window draws the same data).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

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
    decided_by_label,
    from_row,
)
from nocturne_desktop.core.types import Fact, MutationRow, Turn

__all__ = ["Lineage", "LineageNode", "LineageStep", "lineage", "render", "successor_chain"]

MAX_NODES = 2000
"""A lineage larger than this is cut (and says so): a view must stay drawable."""


class LineageStore(Protocol):
    def get(self, item_id: str) -> Fact | None: ...
    def mutations(self, *, accepted: bool | None = None) -> list[MutationRow]: ...
    def turns(self, *, after: int = 0) -> list[Turn]: ...


@dataclass(frozen=True, slots=True)
class LineageStep:
    """One accepted change that touched a fact."""

    row_id: int
    version: str | None
    """The version the change belongs to (``s0012``); None for a row without one."""
    pass_name: str
    kind: str
    decided_by: str
    reason: str
    what: str
    """The change in words, from this fact's side ("merged into m_7", "promoted to human")."""
    related: tuple[str, ...] = ()
    sleep_id: int | None = None
    created_at: float = 0.0
    state: str = ""
    """The fact's state once this change took effect: ``active``, ``forgotten`` (an add undone
    too: it is not in memory) or ``superseded``."""


@dataclass
class LineageNode:
    """A fact in a lineage: what it says, where it came from, what happened to it."""

    fact_id: str
    text: str
    status: str
    """``active``, ``forgotten``, ``superseded`` or ``unknown`` (no such fact)."""
    via: str = ""
    """How this node flowed into its child ("merged into m_7", "dropped as a duplicate of m_3",
    "superseded by m_9"); empty for the root and for descendants."""
    turn: Turn | None = None
    """The transcript turn it was encoded from."""
    steps: list[LineageStep] = field(default_factory=list)
    parents: list[LineageNode] = field(default_factory=list)

    def depth(self) -> int:
        """Levels of the ancestry tree under this node (1 for a fact with no parents)."""
        return 1 + max((p.depth() for p in self.parents), default=0)

    def walk(self) -> Iterable[LineageNode]:
        yield self
        for p in self.parents:
            yield from p.walk()


@dataclass
class Lineage:
    root: LineageNode
    descendants: list[LineageNode]
    """What the fact went into, in order, ending at the fact that holds its content now."""
    truncated: bool = False


def _status(f: Fact | None) -> str:
    if f is None:
        return "unknown"
    if f.active:
        return "active"
    return "superseded" if f.superseded else "forgotten"


class _Index:
    def __init__(self, rows: Sequence[MutationRow]) -> None:
        self.steps: dict[str, list[LineageStep]] = {}
        self.parents: dict[str, list[tuple[str, str]]] = {}
        """fact → [(parent id, how the parent flowed into it)]"""
        self.child: dict[str, tuple[str, str]] = {}
        """fact → (the fact it went into, how)"""
        self.turn_of: dict[str, int] = {}
        effects: dict[str, list[tuple[int | None, _Effect]]] = {}
        for row in rows:
            try:
                change = from_row(row.mutation)
            except InvalidInput:
                continue
            for item, what, related in _touches(change):
                self.steps.setdefault(item, []).append(LineageStep(
                    row.id, None if row.seq is None else f"s{row.seq:04d}", change.pass_name,
                    change.row_kind, decided_by_label(change.decided_by), change.reason, what,
                    related, row.sleep_id, row.created_at))
                effects.setdefault(item, []).append((row.seq, _effect(change, item)))
            if isinstance(change, Append) and change.turn is not None:
                self.turn_of[change.target] = change.turn
            elif isinstance(change, Merge):
                for src in change.consumed:
                    self._link(src, change.into, f"merged into {change.into}")
            elif isinstance(change, Drop) and change.duplicate_of:
                self._link(change.target, change.duplicate_of,
                           f"dropped as a duplicate of {change.duplicate_of}")
            elif isinstance(change, Supersede):
                self._link(change.target, change.by, f"superseded by {change.by}")

        for item, steps in self.steps.items():
            self.steps[item] = _with_states(steps, effects[item])

    def _link(self, parent: str, child: str, how: str) -> None:
        self.parents.setdefault(child, []).append((parent, how))
        self.child[parent] = (child, how)


_Effect = tuple[str, int, int]
"""How a change sets a fact's state: ``("set:<state>", 0, 0)``, ``("keep", 0, 0)``,
``("undo", first, last)``, ``("redo", first, last)`` or ``("restore", seq, 0)``."""
_KEEP: _Effect = ("keep", 0, 0)


def _effect(change: Change, item: str) -> _Effect:
    if isinstance(change, (Append, Add, BringBack)):
        return ("set:active", 0, 0)
    if isinstance(change, (Forget, Drop)):
        return ("set:forgotten", 0, 0) if change.item_id == item else _KEEP
    if isinstance(change, Merge):
        return ("set:forgotten", 0, 0) if item in change.consumed else ("set:active", 0, 0)
    if isinstance(change, Supersede):
        return ("set:superseded", 0, 0) if change.target == item else _KEEP
    if isinstance(change, Redo):
        return ("redo", change.first, change.last)
    if isinstance(change, Undo):
        return ("undo", change.first, change.last)
    if isinstance(change, Restore):
        return ("restore", change.seq, 0)
    return _KEEP


def _with_states(steps: list[LineageStep],
                 effects: list[tuple[int | None, _Effect]]) -> list[LineageStep]:
    """Each step with the state it left the fact in, computed from the steps alone: an undo
    sets the state back to what it was before the undone versions, a redo to what they made,
    a restore to what it was at the restored version."""
    after: list[tuple[int | None, str]] = []
    out: list[LineageStep] = []
    state = ""
    for step, (seq, (how, a, b)) in zip(steps, effects, strict=True):
        if how.startswith("set:"):
            state = how[4:]
        elif how == "undo":
            state = next((st for v, st in reversed(after) if v is not None and v < a), "forgotten")
        elif how == "redo":
            state = next((st for v, st in reversed(after) if v is not None and a <= v <= b),
                         state)
        elif how == "restore":
            state = next((st for v, st in reversed(after) if v is not None and v <= a), "forgotten")
        elif not state:
            state = "active"
        after.append((seq, state))
        out.append(LineageStep(step.row_id, step.version, step.pass_name, step.kind,
                               step.decided_by, step.reason, step.what, step.related,
                               step.sleep_id, step.created_at, state))
    return out


def _by(change: Change) -> str:
    if change.decided_by == DecidedBy.LETTA:
        return " in Letta"
    return " by you" if change.decided_by in (DecidedBy.YOU, DecidedBy.USER) else ""


def _hand(change: Change) -> str:
    """Who made a hand change: the person here, or someone in the linked Letta agent."""
    return "in Letta" if change.decided_by == DecidedBy.LETTA else "by you"


def _touches(change: Change) -> list[tuple[str, str, tuple[str, ...]]]:
    """(fact, the change in words from its side, the other facts named)."""
    if isinstance(change, Edit):
        parts = [f"{k} {v!r}" for k, v in (("text", change.text), ("category", change.category),
                                             ("block", change.block)) if v is not None]
        return [(change.target, f"edited {_hand(change)} ({', '.join(parts) or 'unchanged'})", ())]
    if isinstance(change, Pin):
        pinned = "pinned" if change.pinned else "unpinned"
        return [(change.target, f"{pinned} {_hand(change)}", ())]
    if isinstance(change, BringBack):
        return [(change.target, f"brought back {_hand(change)}", ())]
    if isinstance(change, Add):
        source = change.extra.get("importedFrom") or change.extra.get("imported_from")
        what = (f"imported {_hand(change)} from {source}" if source
                else f"written {_hand(change)}")
        return [(change.target, f"{what} into {change.block}", ())]
    if isinstance(change, Redo):
        return [(i, f"redone by you ({change.undone or 'the last undone change'})", ())
                for i in change.changed_ids]
    if isinstance(change, Undo):
        return [(i, f"undone by you ({change.undone or 'the last change'})", ())
                for i in change.changed_ids]
    if isinstance(change, Append):
        turn = f" from turn {change.turn}" if change.turn is not None else ""
        return [(change.target, f"encoded{turn}", ())]
    if isinstance(change, Drop):
        k = change.duplicate_of or "?"
        return [(change.target, f"dropped as a duplicate of {k}", (k,)),
                (k, f"kept over its duplicate {change.target}", (change.target,))]
    if isinstance(change, Merge):
        out = [(change.into, f"rewritten by a merge of {', '.join(change.consumed)}",
                tuple(change.consumed))]
        out += [(s, f"merged into {change.into}", (change.into,)) for s in change.consumed]
        return out
    if isinstance(change, Promote):
        return [(change.target, f"promoted to {change.to_block}", ())]
    if isinstance(change, Forget):
        rule = f" ({change.policy})" if change.policy else ""
        return [(change.target, f"forgotten{_by(change)}{rule}", ())]
    if isinstance(change, Supersede):
        return [(change.target, f"superseded by {change.by}", (change.by,)),
                (change.by, f"supersedes {change.target}", (change.target,))]
    if isinstance(change, Update):
        return [(change.target, "edited by hand", ())]
    if isinstance(change, Restore):
        return [(i, f"restored to {change.version}{_by(change)}", ()) for i in change.changed_ids]
    return []


def lineage(store: LineageStore, item_id: str) -> Lineage:
    """The lineage of ``item_id`` (live or not). :class:`InvalidInput` for an id that never
    existed."""
    fact = store.get(item_id)
    if fact is None:
        raise InvalidInput(f"unknown item id {item_id!r}")
    index = _Index(store.mutations(accepted=True))
    turns = {t.n: t for t in store.turns()}
    facts: dict[str, Fact | None] = {}
    count = 0
    truncated = False

    def get(i: str) -> Fact | None:
        if i not in facts:
            facts[i] = store.get(i)
        return facts[i]

    def node(i: str, via: str) -> LineageNode:
        f = get(i)
        n = index.turn_of.get(i, f.source_turn if f is not None else None)
        return LineageNode(i, f.text if f is not None else "", _status(f), via,
                           turns.get(n) if n is not None else None, index.steps.get(i, []))

    root = node(item_id, "")
    seen = {item_id}
    stack = [root]
    while stack:
        cur = stack.pop()
        for parent, how in index.parents.get(cur.fact_id, []):
            if parent in seen:
                continue
            if count >= MAX_NODES:
                truncated = True
                break
            seen.add(parent)
            count += 1
            p = node(parent, how)
            cur.parents.append(p)
            stack.append(p)
    descendants: list[LineageNode] = []
    cur_id = item_id
    down = {item_id}
    while cur_id in index.child:
        nxt, how = index.child[cur_id]
        if nxt in down:
            break
        down.add(nxt)
        d = node(nxt, "")
        d.via = f"{cur_id} {how}"
        descendants.append(d)
        cur_id = nxt
    return Lineage(root, descendants, truncated)


def successor_chain(store: LineageStore, fact: Fact) -> list[Fact]:
    """The facts that superseded ``fact``, in order (empty if it was not superseded); the chain
    stops at a missing fact or a cycle."""
    out: list[Fact] = []
    seen = {fact.id}
    cur = fact
    while cur.superseded_by is not None:
        nxt = store.get(cur.superseded_by)
        if nxt is None or nxt.id in seen:
            break
        seen.add(nxt.id)
        out.append(nxt)
        cur = nxt
    return out


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _step_line(s: LineageStep) -> str:
    where = s.version or "no version"
    shown = s.reason and s.reason not in s.what and s.kind not in ("undo", "redo")
    reason = f" - {_clip(s.reason, 80)}" if shown else ""
    state = f"; now {s.state}" if s.state else ""
    return f"{where} {s.pass_name}: {s.what} (decided by {s.decided_by}{state}){reason}"


def render(lin: Lineage) -> str:
    """An indented text tree: the fact, its steps, its ancestry, then its descendants."""
    lines: list[str] = []

    def draw(n: LineageNode, indent: str) -> None:
        head = f"{n.via}: " if n.via else ""
        lines.append(f"{indent}{head}{n.fact_id} [{n.status}] {_clip(n.text)!r}")
        if n.turn is not None:
            lines.append(f"{indent}    turn {n.turn.n} ({n.turn.role}): {_clip(n.turn.text)!r}")
        for s in n.steps:
            lines.append(f"{indent}    {_step_line(s)}")
        for p in n.parents:
            draw(p, indent + "  ")

    lines.append("Why memory holds this:")
    draw(lin.root, "")
    if lin.descendants:
        lines.append("What became of it:")
        for d in lin.descendants:
            lines.append(f"  {d.via} → {d.fact_id} [{d.status}] {_clip(d.text)!r}")
    if lin.truncated:
        lines.append(f"(cut at {MAX_NODES} ancestors)")
    return "\n".join(lines)
