"""Typed changes to memory: one frozen value per kind, one row format, one ``apply``.

A change to memory - proposed by the model and passed by a gate, enforced by a rule, or made by
the person - is one of the values below. Everything that needs to know what a kind *means*
asks this module instead of reading the audit row's ``refs`` by hand:

* :func:`to_row` / :func:`from_row` convert to and from the audit record
  (:class:`~nocturne_desktop.core.types.Mutation`: ``kind`` + a JSON ``refs`` object with the
  camelCase keys the database has always held, so existing stores read back unchanged);
* :mod:`~nocturne_desktop.core.applying` holds what a kind *does*: ``apply``, the one
  definition of what an accepted change does to the facts it names, and ``touched``, which
  facts a change writes and how, in words.

Keys a type does not name (``salvaged``, keys a newer version writes) travel in ``extra`` and
are written back verbatim, so a row survives ``from_row`` → ``to_row``.

Adding a kind (supersede and import are expected) means: a value here with its refs, a case in
``applying.apply`` and ``applying.touched``, and a check in the re-audit.

The person's own changes (S-EDIT-1) are kinds like the model's, decided by ``you``
(:data:`DecidedBy.YOU`, pass ``hand``): :class:`Edit` (text, category, block), :class:`Pin`
(pin or unpin), :class:`Forget` (forget now), :class:`BringBack`, :class:`Add`, and
:class:`Undo` / :class:`Redo` of the last change whoever made it. Each hand change carries
``before``, the fact's value just before it (``None`` for an added fact), so it can be undone
and re-audited from its row alone.

A **pinned** fact is never deactivated by ``applying.apply`` (a drop, a merge that consumes it, a
forgetting): the gates and the rules refuse first with a reason, this is the backstop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.types import Fact, Mutation

__all__ = [
    "ABSENT",
    "HAND_PASS",
    "LETTA_PASS",
    "RESERVED_KINDS",
    "Add",
    "Append",
    "BringBack",
    "Change",
    "DecidedBy",
    "Drop",
    "Edit",
    "Forget",
    "Kind",
    "Merge",
    "Pin",
    "Promote",
    "Redo",
    "Refusal",
    "Restore",
    "Supersede",
    "Undo",
    "Update",
    "decided_by_label",
    "fact_value",
    "from_row",
    "is_rule",
    "to_row",
]


class Kind(StrEnum):
    """The ``kind`` column of an audit row. A ``StrEnum``: it compares equal to its text."""

    DROP = "drop"
    MERGE = "merge"
    PROMOTE = "promote"
    FORGET = "forget"
    RESTORE = "restore"
    APPEND = "append"
    UPDATE = "update"
    SUPERSEDE = "supersede"
    REPLY = "reply"
    """A whole model reply that could not be used (always refused; its raw text is kept)."""
    EDIT = "edit"
    """The person changed a fact's text, category or block."""
    PIN = "pin"
    """The person pinned a fact (never forgotten) or unpinned it."""
    BRING_BACK = "bring-back"
    """The person brought a forgotten fact back."""
    ADD = "add"
    """The person wrote a new fact."""
    UNDO = "undo"
    """The last change (a hand edit, a sleep, a restore) undone, as a new version."""
    REDO = "redo"
    """The last undone change made again, as a new version."""


RESERVED_KINDS: tuple[str, ...] = ("import",)
"""Kinds the next features add; named here so nothing else takes the words."""


class DecidedBy(StrEnum):
    """Who decided a change. The deterministic rules are *rules*; the model server is never
    meant by any of these."""

    MODEL = "model"
    USER = "user"
    """The person, as older rows (restores) name them."""
    YOU = "you"
    """The person, by hand (edit, pin, forget now, bring back, add, undo, redo)."""
    ENCODER = "encoder"
    DUPLICATE_RULE = "duplicate-rule"
    PROMOTION_RULE = "promotion-rule"
    RETENTION_RULE = "retention-rule"
    RECONCILE_RULE = "reconcile-rule"
    LETTA = "letta"
    """A change made in a linked Letta agent's memory blocks (by the agent or a person there),
    read back by a pull: an edit, an added fact or a forgetting, with the hand kinds' rows."""


_LEGACY_RULES: dict[str, DecidedBy] = {
    "engine-duplicate-rule": DecidedBy.DUPLICATE_RULE,
    "engine-promotion-rule": DecidedBy.PROMOTION_RULE,
    "policy-engine": DecidedBy.RETENTION_RULE,
}
"""Labels older versions wrote for the rules; stored rows keep them, readers show the new name."""

_NOT_RULES = frozenset({DecidedBy.MODEL, DecidedBy.USER, DecidedBy.YOU, DecidedBy.ENCODER,
                        DecidedBy.LETTA})

HAND_PASS = "hand"
"""The ``pass_name`` of the person's own changes."""
LETTA_PASS = "letta"
"""The ``pass_name`` of the changes read back from a linked Letta agent (decided by ``letta``)."""


def decided_by_label(decided_by: str) -> str:
    """The current name of a ``decided_by`` value (an older rule label maps to its new name;
    anything unknown is returned as it is)."""
    return str(_LEGACY_RULES.get(decided_by, decided_by))


def is_rule(decided_by: str | None) -> bool:
    """Whether a deterministic rule (not the model, the person or the encoder) decided."""
    return bool(decided_by) and decided_by not in _NOT_RULES


# ---------------------------------------------------------------------------------- values


class _Absent:
    """A refs key the row does not hold (distinct from one that holds JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What every change carries besides its kind's own fields (the audit row's envelope)."""

    kind: ClassVar[Kind]
    accepted: ClassVar[bool] = True

    pass_name: str
    reason: str = ""
    decided_by: str = DecidedBy.MODEL
    policy: str | None = None
    """For a forgetting: the retention rule verified by the gate (``stale``/``capacity``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Refs keys this kind does not name, kept verbatim (``salvaged`` …)."""

    @property
    def item_id(self) -> str:
        """The fact acted on (for a merge its target, for a restore the version id)."""
        raise NotImplementedError

    @property
    def row_kind(self) -> str:
        """The ``kind`` column: the kind, or for a refusal the kind that was refused."""
        return self.kind.value

    def refs(self) -> dict[str, Any]:
        """The kind's own fields as the camelCase ``refs`` object of the audit row."""
        raise NotImplementedError


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Drop(Change):
    """Dedupe: ``target`` says the same as ``duplicate_of`` and is deactivated."""

    kind: ClassVar[Kind] = Kind.DROP
    target: str
    duplicate_of: str | None = None
    similarity: float | None = None
    dropped_text: str | None = None
    keeper_text: str | None = None
    identical: bool = False

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        return _drop_none({
            "duplicateOf": self.duplicate_of, "similarity": self.similarity,
            "droppedText": self.dropped_text, "keeperText": self.keeper_text,
            "identical": True if self.identical else None,
        })


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge(Change):
    """Merge: ``into`` takes ``merged_text``; every other id of ``from_ids`` is deactivated.
    ``sources`` holds each source's text before the merge (id → text)."""

    kind: ClassVar[Kind] = Kind.MERGE
    into: str
    from_ids: tuple[str, ...]
    merged_text: str
    sources: Mapping[str, str] | None = None
    block: str | None = None

    @property
    def item_id(self) -> str:
        return self.into

    @property
    def consumed(self) -> tuple[str, ...]:
        """The ids a merge deactivates: its sources other than the target, once each."""
        return tuple(i for i in dict.fromkeys(self.from_ids) if i != self.into)

    def refs(self) -> dict[str, Any]:
        return _drop_none({
            "fromIds": list(self.from_ids), "mergedText": self.merged_text,
            "sources": dict(self.sources) if self.sources is not None else None,
            "block": self.block,
        })


@dataclass(frozen=True, slots=True, kw_only=True)
class Promote(Change):
    """Promote: ``target`` moves out of ``from_block`` into ``to_block``."""

    kind: ClassVar[Kind] = Kind.PROMOTE
    target: str
    to_block: str
    from_block: str | None = None
    category: str | None = None

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        return _drop_none({"fromBlock": self.from_block, "toBlock": self.to_block,
                           "category": self.category})


@dataclass(frozen=True, slots=True, kw_only=True)
class Forget(Change):
    """Forget: ``target`` is deactivated under the retention rule in ``policy``."""

    kind: ClassVar[Kind] = Kind.FORGET
    target: str
    claimed_policy: str | None = None
    """The rule the model claimed (the gate records the verified one in ``policy``)."""
    age_days: float | None = None
    salience: float | None = None
    text: str | None = None

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        return _drop_none({"claimedPolicy": self.claimed_policy, "ageDays": self.age_days,
                           "salience": self.salience, "text": self.text})


@dataclass(frozen=True, slots=True, kw_only=True)
class Restore(Change):
    """A restore to ``version`` (``s0011``, seq ``seq``) that rewrote ``changed_ids``.
    Written by ``Store.restore`` itself (it needs the history rows), never by :func:`apply`."""

    kind: ClassVar[Kind] = Kind.RESTORE
    version: str
    seq: int
    changed_ids: tuple[str, ...] = ()

    @property
    def item_id(self) -> str:
        return self.version

    def refs(self) -> dict[str, Any]:
        return {"version": self.version, "seq": self.seq, "changedIds": list(self.changed_ids)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Append(Change):
    """The encoder wrote ``target`` from transcript turn ``turn`` (the store's ``append`` made
    the fact; this is its audit row). ``proposal`` is the model's entry as sent."""

    kind: ClassVar[Kind] = Kind.APPEND
    target: str
    turn: int | None = None
    proposal: Mapping[str, Any] | None = None
    claimed_turn: Any = ABSENT
    """The turn the model claimed, when it was not one of the new turns (may be ``None``)."""

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        out = _drop_none({"proposal": self.proposal, "turn": self.turn})
        if self.claimed_turn is not ABSENT:
            out["claimed_turn"] = self.claimed_turn
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Update(Change):
    """A fact's text, block or category set by hand (the ground for the hand-edit kinds)."""

    kind: ClassVar[Kind] = Kind.UPDATE
    target: str
    text: str | None = None
    block: str | None = None
    category: str | None = None

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        return _drop_none({"text": self.text, "block": self.block, "category": self.category})


def fact_value(fact: Fact | None) -> dict[str, Any] | None:
    """The part of a fact a hand change can alter, as the ``before`` of its row."""
    if fact is None:
        return None
    return {"block": fact.block, "text": fact.text, "category": fact.category,
            "active": fact.active, "pinned": fact.pinned, "updatedAt": fact.updated_at,
            "validUntil": fact.valid_until, "supersededBy": fact.superseded_by}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hand(Change):
    """A change the person made. ``before`` is the fact's value just before it
    (:func:`fact_value`), kept so the change can be undone and re-audited from its row."""

    pass_name: str = HAND_PASS
    decided_by: str = DecidedBy.YOU
    target: str
    before: Mapping[str, Any] | None = None

    @property
    def item_id(self) -> str:
        return self.target

    def _with_before(self, out: dict[str, Any]) -> dict[str, Any]:
        if self.before is not None:
            out["before"] = dict(self.before)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit(_Hand):
    """The person set ``target``'s text, category and/or block (None: unchanged)."""

    kind: ClassVar[Kind] = Kind.EDIT
    text: str | None = None
    block: str | None = None
    category: str | None = None

    def refs(self) -> dict[str, Any]:
        return self._with_before(
            _drop_none({"text": self.text, "block": self.block, "category": self.category}))


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin(_Hand):
    """The person pinned ``target`` (``pinned`` True: never forgotten) or unpinned it."""

    kind: ClassVar[Kind] = Kind.PIN
    pinned: bool = True

    def refs(self) -> dict[str, Any]:
        return self._with_before({"pinned": self.pinned})


@dataclass(frozen=True, slots=True, kw_only=True)
class BringBack(_Hand):
    """The person brought the forgotten ``target`` back (active again, as it last was)."""

    kind: ClassVar[Kind] = Kind.BRING_BACK

    def refs(self) -> dict[str, Any]:
        return self._with_before({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Add(_Hand):
    """The person wrote ``target`` (the store's ``add_fact`` made it; this is its row)."""

    kind: ClassVar[Kind] = Kind.ADD
    text: str
    block: str
    category: str

    def refs(self) -> dict[str, Any]:
        return {"text": self.text, "block": self.block, "category": self.category}


@dataclass(frozen=True, slots=True, kw_only=True)
class Undo(Change):
    """The change held by versions ``first``..``last`` (a sleep, a hand edit, a restore) undone:
    each fact it wrote set back to its value before it. Written by ``Store.undo``."""

    kind: ClassVar[Kind] = Kind.UNDO
    pass_name: str = HAND_PASS
    decided_by: str = DecidedBy.YOU
    first: int
    last: int
    undone: str = ""
    """What was undone, in words ("sleep 3", "edit m_4")."""
    changed_ids: tuple[str, ...] = ()

    @property
    def item_id(self) -> str:
        return f"s{self.last:04d}"

    def refs(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "undone": self.undone,
                "changedIds": list(self.changed_ids)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Redo(Undo):
    """The undone change of versions ``first``..``last`` made again: each fact it wrote set to
    its value at ``last``. Written by ``Store.redo``."""

    kind: ClassVar[Kind] = Kind.REDO


@dataclass(frozen=True, slots=True, kw_only=True)
class Supersede(Change):
    """Reconcile: ``target`` is replaced by the newer fact ``by`` (a correction). The old fact
    leaves the active set as history: valid until ``by``'s ``created_at``, linked to ``by``.
    ``rule``/``frame``/``old_value``/``new_value`` are the conflict the code found."""

    kind: ClassVar[Kind] = Kind.SUPERSEDE
    target: str
    by: str
    rule: str | None = None
    frame: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    valid_until: float | None = None

    @property
    def item_id(self) -> str:
        return self.target

    def refs(self) -> dict[str, Any]:
        return _drop_none({"supersededBy": self.by, "rule": self.rule, "frame": self.frame,
                           "oldText": self.old_text, "newText": self.new_text,
                           "validUntil": self.valid_until})


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal(Change):
    """A proposal a gate refused, or a reply that could not be used (``kind`` ``reply``).
    ``proposal`` is the raw entry, ``raw`` the raw reply text; nothing was applied."""

    accepted: ClassVar[bool] = False
    of: str
    """The kind that was refused (``drop``, ``merge``, …, ``reply``, or what the row says)."""
    target: str
    why: str
    proposal: Any = ABSENT
    """The model's entry as sent (any JSON value; :data:`ABSENT` when the row has none)."""
    raw: str | None = None

    @property
    def item_id(self) -> str:
        return self.target

    @property
    def row_kind(self) -> str:
        return self.of

    def refs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.proposal is not ABSENT:
            out["proposal"] = self.proposal
        if self.raw is not None:
            out["raw"] = self.raw
        return out


# ------------------------------------------------------------------------------ row format

_KNOWN_REFS: dict[Kind, frozenset[str]] = {
    Kind.DROP: frozenset({"duplicateOf", "similarity", "droppedText", "keeperText", "identical"}),
    Kind.MERGE: frozenset({"fromIds", "mergedText", "sources", "block"}),
    Kind.PROMOTE: frozenset({"fromBlock", "toBlock", "category"}),
    Kind.FORGET: frozenset({"claimedPolicy", "ageDays", "salience", "text"}),
    Kind.RESTORE: frozenset({"version", "seq", "changedIds"}),
    Kind.APPEND: frozenset({"proposal", "turn", "claimed_turn"}),
    Kind.UPDATE: frozenset({"text", "block", "category"}),
    Kind.EDIT: frozenset({"text", "block", "category", "before"}),
    Kind.PIN: frozenset({"pinned", "before"}),
    Kind.BRING_BACK: frozenset({"before"}),
    Kind.ADD: frozenset({"text", "block", "category"}),
    Kind.UNDO: frozenset({"first", "last", "undone", "changedIds"}),
    Kind.REDO: frozenset({"first", "last", "undone", "changedIds"}),
    Kind.SUPERSEDE: frozenset({"supersededBy", "rule", "frame", "oldText", "newText",
                               "validUntil"}),
}


def to_row(change: Change) -> Mutation:
    """The audit record of ``change`` (what ``Store.record_mutations`` writes)."""
    refs = {**change.extra, **change.refs()}
    return Mutation(
        pass_name=change.pass_name,
        kind=str(change.row_kind),
        item_id=change.item_id,
        accepted=change.accepted,
        reason=change.reason,
        rejection_reason=change.why if isinstance(change, Refusal) else None,
        policy=change.policy,
        decided_by=str(change.decided_by),
        refs=refs,
    )


def _ids(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise InvalidInput(f"{what}: refs['fromIds'] must be a list of item ids")
    return tuple(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def from_row(m: Mutation) -> Change:
    """The typed value of an audit record.

    Lenient with what older or hand-made rows hold (a missing optional key is None), strict
    where a change could not be applied as written (a merge without a list of ids, a kind
    nobody knows: :class:`InvalidInput`). The block and text a change writes are checked by
    :func:`apply`, against the facts."""
    if not isinstance(m, Mutation):
        raise InvalidInput(f"expected a Mutation, not {type(m).__name__}")
    refs: Mapping[str, Any] = m.refs if isinstance(m.refs, dict) else {}
    env: dict[str, Any] = {"pass_name": m.pass_name, "reason": m.reason or "",
                               "decided_by": m.decided_by, "policy": m.policy}
    if not m.accepted:
        known = {"proposal", "raw"}
        return Refusal(of=m.kind, target=m.item_id, why=m.rejection_reason or "",
                       proposal=refs.get("proposal", ABSENT), raw=_str(refs.get("raw")),
                       extra={k: v for k, v in refs.items() if k not in known}, **env)
    try:
        kind = Kind(m.kind)
    except ValueError:
        raise InvalidInput(f"unknown mutation kind {m.kind!r}") from None
    extra = {k: v for k, v in refs.items() if k not in _KNOWN_REFS.get(kind, frozenset())}
    what = f"{m.kind} {m.item_id}"
    if kind is Kind.DROP:
        return Drop(target=m.item_id, duplicate_of=_str(refs.get("duplicateOf")),
                    similarity=_num(refs.get("similarity")),
                    dropped_text=_str(refs.get("droppedText")),
                    keeper_text=_str(refs.get("keeperText")),
                    identical=refs.get("identical") is True, extra=extra, **env)
    if kind is Kind.MERGE:
        sources = refs.get("sources")
        merged: Any = refs.get("mergedText")
        return Merge(into=m.item_id, from_ids=_ids(refs.get("fromIds"), what),
                     merged_text=merged,  # checked by apply
                     sources=sources if isinstance(sources, dict) else None,
                     block=_str(refs.get("block")), extra=extra, **env)
    if kind is Kind.PROMOTE:
        to_block: Any = refs.get("toBlock")
        return Promote(target=m.item_id, to_block=to_block,  # checked by apply
                       from_block=_str(refs.get("fromBlock")), category=_str(refs.get("category")),
                       extra=extra, **env)
    if kind is Kind.FORGET:
        return Forget(target=m.item_id, claimed_policy=_str(refs.get("claimedPolicy")),
                      age_days=_num(refs.get("ageDays")), salience=_num(refs.get("salience")),
                      text=_str(refs.get("text")), extra=extra, **env)
    if kind is Kind.RESTORE:
        changed = refs.get("changedIds")
        seq = refs.get("seq")
        return Restore(version=m.item_id, seq=seq if isinstance(seq, int) else 0,
                       changed_ids=tuple(x for x in changed if isinstance(x, str))
                       if isinstance(changed, list) else (), extra=extra, **env)
    if kind is Kind.APPEND:
        turn = refs.get("turn")
        proposal = refs.get("proposal")
        return Append(target=m.item_id, turn=turn if isinstance(turn, int) else None,
                      proposal=proposal if isinstance(proposal, dict) else None,
                      claimed_turn=refs.get("claimed_turn", ABSENT), extra=extra, **env)
    if kind is Kind.UPDATE:
        return Update(target=m.item_id, text=_str(refs.get("text")), block=_str(refs.get("block")),
                      category=_str(refs.get("category")), extra=extra, **env)
    before = refs.get("before")
    hand: dict[str, Any] = dict(target=m.item_id, extra=extra,
                                before=before if isinstance(before, dict) else None, **env)
    if kind is Kind.EDIT:
        return Edit(text=_str(refs.get("text")), block=_str(refs.get("block")),
                    category=_str(refs.get("category")), **hand)
    if kind is Kind.PIN:
        return Pin(pinned=refs.get("pinned") is not False, **hand)
    if kind is Kind.BRING_BACK:
        return BringBack(**hand)
    if kind is Kind.ADD:
        hand.pop("before")
        return Add(text=_str(refs.get("text")) or "", block=_str(refs.get("block")) or "",
                   category=_str(refs.get("category")) or "", **hand)
    if kind in (Kind.UNDO, Kind.REDO):
        first, last = refs.get("first"), refs.get("last")
        if not (isinstance(first, int) and isinstance(last, int)):
            raise InvalidInput(f"{what}: refs must name the versions first and last")
        changed = refs.get("changedIds")
        cls = Undo if kind is Kind.UNDO else Redo
        return cls(first=first, last=last, undone=_str(refs.get("undone")) or "",
                   changed_ids=tuple(x for x in changed if isinstance(x, str))
                   if isinstance(changed, list) else (), extra=extra, **env)
    if kind is Kind.SUPERSEDE:
        by = refs.get("supersededBy")
        if not isinstance(by, str):
            raise InvalidInput(f"{what}: refs['supersededBy'] must be an item id")
        return Supersede(target=m.item_id, by=by, rule=_str(refs.get("rule")),
                         frame=_str(refs.get("frame")), old_text=_str(refs.get("oldText")),
                         new_text=_str(refs.get("newText")),
                         valid_until=_num(refs.get("validUntil")), extra=extra, **env)
    raise InvalidInput(f"{what}: a {kind} row is always a refusal")


# ----------------------------------------------------------------------------------- apply
