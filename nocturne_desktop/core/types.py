"""Plain data shared by every layer: facts, versions, audit rows, diffs.

Frozen dataclasses, no behaviour beyond convenience properties, so they cross threads and
layers freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BLOCKS: tuple[str, ...] = ("persona", "human", "episodes", "scratch")
"""The four memory blocks, in display order."""

PROMOTE_TARGETS: tuple[str, ...] = ("persona", "human", "episodes")
"""Blocks a fact may be promoted into (everything but scratch)."""

CATEGORIES: tuple[str, ...] = ("identity", "preferences", "commitments", "event", "context")
"""Fact categories the store accepts."""

PASSES: tuple[str, ...] = ("dedupe", "merge", "reconcile", "promote", "forget")
"""Sleep passes, in the order they run."""

@dataclass(frozen=True, slots=True)
class Fact:
    """One memory row. ``active`` False means forgotten (rows are never deleted). ``pinned``
    True: the person pinned it, and no rule or model may forget it.

    A *superseded* fact (S-REC-2) is inactive with ``superseded_by`` naming its successor and
    ``valid_until`` the successor's time: it is history, not a forgetting."""

    id: str
    block: str
    text: str
    category: str
    source_turn: int | None
    created_at: float
    updated_at: float
    active: bool = True
    pinned: bool = False
    valid_until: float | None = None
    superseded_by: str | None = None

    @property
    def superseded(self) -> bool:
        """Inactive because a correction replaced it (not forgotten)."""
        return not self.active and self.superseded_by is not None

    def age_days(self, now: float) -> float:
        return max(0.0, (now - self.created_at) / 86400.0)


@dataclass(frozen=True, slots=True)
class FactDraft:
    """What a caller gives :meth:`Store.append`; the store assigns id and timestamps
    (``created_at`` may be given, e.g. to backdate a fact in tests and the verifier)."""

    text: str
    category: str = "context"
    source_turn: int | None = None
    created_at: float | None = None
    importance: int | None = None
    """1–5 as the encoder proposed it (None: the policy's default for the category)."""


IMPORTANCE_RANGE: tuple[int, int] = (1, 5)
"""The importance scale: 1 a passing remark true of one day, 5 something never to forget."""


@dataclass(frozen=True, slots=True)
class Strength:
    """What salience knows about a fact beyond its row: its importance and how it was used.

    Kept apart from the fact's versioned value (a recall is not an edit: it makes no version
    and undo does not take it back). ``strength`` is the recalls so far, each decayed to
    ``last_used_at`` (see :meth:`RetentionPolicy.salience_parts`)."""

    importance: int | None = None
    uses: int = 0
    strength: float = 0.0
    last_used_at: float | None = None


@dataclass(frozen=True, slots=True)
class Version:
    """A snapshot on the timeline. ``id`` is ``s`` + zero-padded ``seq`` (``s0012``)."""

    seq: int
    label: str
    created_at: float
    active_count: int
    sleep_id: int | None = None

    @property
    def id(self) -> str:
        return f"s{self.seq:04d}"


@dataclass(frozen=True, slots=True)
class Mutation:
    """The audit row of one change, accepted or refused, exactly as the log stores it.

    ``kind`` is a :class:`~nocturne_desktop.core.mutations.Kind` value and ``refs`` the JSON
    lineage with the camelCase keys the database has always held. Code that needs to know what
    a kind means does not read ``refs`` by hand: :func:`nocturne_desktop.core.mutations.from_row`
    gives the typed value (``Drop``, ``Merge``, ``Promote``, ``Forget``, ``Restore``, ``Append``,
    ``Update``, ``Refusal``) and ``to_row`` writes one.
    """

    pass_name: str
    kind: str
    item_id: str
    accepted: bool
    reason: str = ""
    rejection_reason: str | None = None
    policy: str | None = None
    decided_by: str = "model"
    refs: dict[str, Any] = field(default_factory=dict)

    @property
    def enforced(self) -> bool:
        """Whether a deterministic rule decided (not the model, the person or the encoder)."""
        return self.decided_by not in ("model", "user", "you", "encoder", "letta")


@dataclass(frozen=True, slots=True)
class MutationRow:
    """A mutation as recorded in the audit log."""

    id: int
    mutation: Mutation
    seq: int | None
    """The version the mutation belongs to (the after-snapshot of its pass)."""
    sleep_id: int | None
    created_at: float


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One fact in a diff. ``before``/``after`` are the fact at each end (None if absent)."""

    item_id: str
    status: Literal["kept", "changed", "forgotten", "added", "superseded"]
    before: Fact | None
    after: Fact | None
    pass_name: str | None = None
    policy: str | None = None
    reason: str | None = None
    decided_by: str | None = None
    sources: tuple[Fact, ...] = ()


@dataclass(frozen=True, slots=True)
class Diff:
    a: int
    b: int
    kept: tuple[DiffEntry, ...]
    changed: tuple[DiffEntry, ...]
    forgotten: tuple[DiffEntry, ...]
    added: tuple[DiffEntry, ...]
    rejected: tuple[MutationRow, ...]
    superseded: tuple[DiffEntry, ...] = ()
    """Facts active at the older end and superseded (by a correction) at the newer one; they
    are not in ``forgotten``."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One transcript turn. ``n`` counts from 1 across every conversation and is what
    ``Fact.source_turn`` points at; ``conversation`` is the conversation it belongs to."""

    n: int
    role: str
    text: str
    created_at: float
    conversation: int | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its own transcript, over the one shared memory. ``title`` is the start
    of its first user message (empty before there is one)."""

    id: int
    title: str
    created_at: float
    last_at: float
    turn_count: int


@dataclass(frozen=True, slots=True)
class BlockInfo:
    name: str
    active_count: int
    total_count: int


@dataclass(frozen=True, slots=True)
class SleepRecord:
    """One run of Sleep (or a dry run): the verified policy it ran under and how it ended."""

    id: int
    started_at: float
    finished_at: float | None
    dry_run: bool
    status: str
    """``running``, ``done``, ``cancelled``, ``error``, or ``interrupted`` (still running when a
    later sleep began: its process died; see ``Store.begin_sleep``)."""
    policy: dict[str, Any]
    summary: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoreChanges:
    """What one committed write transaction changed - the descriptor views update from by id,
    instead of re-reading the store.

    A fact created in the transaction is in ``added`` only; one active before and inactive after
    is in ``deactivated``; any other fact whose value changed (text, block, category, dates, or
    brought back by a restore) is in ``changed``. Ids are in numeric order.
    """

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    deactivated: tuple[str, ...] = ()
    versions: tuple[int, ...] = ()
    """Seqs of the snapshots written."""
    sleeps: tuple[int, ...] = ()
    """Sleeps begun, finished or marked interrupted."""
    turns: tuple[int, ...] = ()
    """Transcript turns added."""
    mutations: tuple[int, ...] = ()
    """Audit rows written."""
    meta: tuple[str, ...] = ()
    """Meta keys set."""
    strengths: tuple[str, ...] = ()
    """Facts (not added in the transaction) whose importance or recalls changed: their salience
    moved, their value did not."""

    def __bool__(self) -> bool:
        return any((self.added, self.changed, self.deactivated, self.versions, self.sleeps,
                    self.turns, self.mutations, self.meta, self.strengths))

    @property
    def facts(self) -> tuple[str, ...]:
        """Every fact id the transaction wrote (added, changed or deactivated)."""
        return self.added + self.changed + self.deactivated
