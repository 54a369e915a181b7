"""Small reads by id and by page, for views that follow :class:`StoreChanges` instead of
re-reading the store.

Each function costs what it returns (a page of one block, the facts named, the versions and
sleeps named) - never O(store) - except :func:`block_counts` and :func:`matching_ids`, which
scan the items table and are meant for a background job (or a one-off start-up read).
They run inside the store's own consistent read, on the store's thread; nothing here writes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, Fact, SleepRecord, StoreChanges, Strength, Version

log = logging.getLogger("nocturne.store")

_COLS = ("num, block, text, category, source_turn, created_at, updated_at, active, pinned, "
         "valid_until, superseded_by")
_CHUNK = 500
"""Ids per ``IN (...)`` list (well under SQLite's variable limit)."""


def _fact(r: Sequence[Any]) -> Fact:
    return Fact(f"m_{r[0]}", r[1], r[2], r[3], r[4], r[5], r[6], r[7] == 1, r[8] == 1, r[9],
                None if r[10] is None else f"m_{r[10]}")


def num_of(item_id: str) -> int:
    """``m_41`` → 41 (0 for an id of another shape)."""
    try:
        return int(item_id.split("_", 1)[1])
    except (IndexError, ValueError):
        return 0


def _chunks(nums: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(nums), _CHUNK):
        yield nums[start : start + _CHUNK]


def facts_by_ids(store: Store, item_ids: Iterable[str]) -> dict[str, Fact]:
    """The current value of each fact named (active or not); an unknown id is absent."""
    nums = sorted({num_of(i) for i in item_ids})
    out: dict[str, Fact] = {}
    with store._read() as c:
        for chunk in _chunks(nums):
            rows = c.execute(f"SELECT {_COLS} FROM items WHERE num IN "
                             f"({','.join('?' * len(chunk))})", tuple(chunk)).fetchall()
            for r in rows:
                f = _fact(r)
                out[f.id] = f
    return out


def block_page(store: Store, block: str, *, after: int = 0, upto: int | None = None,
               limit: int = 500, include_inactive: bool = False) -> tuple[list[Fact], bool]:
    """Up to ``limit`` facts of ``block`` with a number above ``after`` (and at most ``upto``),
    in numeric order, and whether more follow. A keyset read over ``items(block, num)``."""
    where = "" if include_inactive else " AND active = 1"
    bound = "" if upto is None else " AND num <= ?"
    args: tuple[Any, ...] = (block, after) + (() if upto is None else (upto,))
    lim = "" if upto is not None else f" LIMIT {int(limit) + 1}"
    with store._read() as c:
        rows = c.execute(f"SELECT {_COLS} FROM items WHERE block = ? AND num > ?{bound}{where} "
                         f"ORDER BY num{lim}", args).fetchall()
    if upto is not None:
        more = bool(_exists_after(store, block, rows[-1][0] if rows else upto, include_inactive))
        return [_fact(r) for r in rows], more
    more = len(rows) > limit
    return [_fact(r) for r in rows[:limit]], more


def block_page_before(store: Store, block: str, *, before: int, limit: int = 500,
                      include_inactive: bool = False) -> tuple[list[Fact], bool]:
    """The last ``limit`` facts of ``block`` with a number below ``before``, in numeric order,
    and whether more precede them. A keyset read over ``items(block, num)``, backwards."""
    where = "" if include_inactive else " AND active = 1"
    with store._read() as c:
        rows = c.execute(f"SELECT {_COLS} FROM items WHERE block = ? AND num < ?{where} "
                         f"ORDER BY num DESC LIMIT {int(limit) + 1}", (block, before)).fetchall()
    more = len(rows) > limit
    return [_fact(r) for r in reversed(rows[:limit])], more


def _exists_after(store: Store, block: str, num: int, include_inactive: bool) -> bool:
    where = "" if include_inactive else " AND active = 1"
    with store._read() as c:
        row = c.execute(f"SELECT 1 FROM items WHERE block = ? AND num > ?{where} LIMIT 1",
                        (block, num)).fetchone()
    return row is not None


def block_counts(store: Store) -> dict[str, tuple[int, int, int]]:
    """Per block: active, superseded and forgotten facts (one scan of ``items``)."""
    counts = {b: [0, 0, 0] for b in BLOCKS}
    with store._read() as c:
        rows = c.execute(
            "SELECT block, coalesce(sum(active), 0), "
            "coalesce(sum(active = 0 AND superseded_by IS NOT NULL), 0), "
            "coalesce(sum(active = 0 AND superseded_by IS NULL), 0) FROM items GROUP BY block"
        ).fetchall()
    for b, a, s, f in rows:
        if b in counts:
            counts[b] = [int(a), int(s), int(f)]
    return {b: (v[0], v[1], v[2]) for b, v in counts.items()}


def matching_ids(store: Store, text: str, *, include_inactive: bool = False) -> dict[str, list[int]]:
    """Per block, the numbers of the facts whose text, category or id contains ``text`` (case
    insensitive, as the tree's filter matches), in numeric order. One scan: run it in a job."""
    needle = text.casefold()
    out: dict[str, list[int]] = {b: [] for b in BLOCKS}
    if needle.isascii():  # SQLite scans in C (no GIL held): lower() folds ASCII, as needed here
        where = "" if include_inactive else " AND active = 1"
        with store._read() as c:
            for num, block in c.execute(
                    "SELECT num, block FROM items WHERE (instr(lower(text), ?1) > 0 OR "
                    f"instr(lower(category), ?1) > 0 OR instr('m_' || num, ?1) > 0){where} "
                    "ORDER BY num", (needle,)):
                if block in out:
                    out[block].append(int(num))
        return out
    where = "" if include_inactive else " WHERE active = 1"
    with store._read() as c:
        rows = c.execute(f"SELECT num, block, text, category FROM items{where} ORDER BY num")
        for num, block, body, cat in rows:
            if block in out and (needle in body.casefold() or needle in cat.casefold()
                                 or needle in f"m_{num}"):
                out[block].append(int(num))
    return out


def versions_by_seq(store: Store, seqs: Iterable[int]) -> list[Version]:
    wanted = sorted(set(seqs))
    out: list[Version] = []
    with store._read() as c:
        for chunk in _chunks(wanted):
            out += [Version(int(r[0]), r[1], r[2], int(r[3]), r[4]) for r in c.execute(
                "SELECT seq, label, created_at, active_count, sleep_id FROM snapshots WHERE seq IN "
                f"({','.join('?' * len(chunk))}) ORDER BY seq", tuple(chunk))]
    return sorted(out, key=lambda v: v.seq)


def sleeps_by_id(store: Store, ids: Iterable[int]) -> list[SleepRecord]:
    wanted = sorted(set(ids))
    out: list[SleepRecord] = []
    with store._read() as c:
        for chunk in _chunks(wanted):
            out += [SleepRecord(int(r[0]), r[1], r[2], bool(r[3]), r[4], json.loads(r[5]),
                                json.loads(r[6])) for r in c.execute(
                "SELECT id, started_at, finished_at, dry_run, status, policy, summary FROM sleeps "
                f"WHERE id IN ({','.join('?' * len(chunk))}) ORDER BY id", tuple(chunk))]
    return out


@dataclass(frozen=True)
class ChangedRows:
    """A :class:`StoreChanges` with the rows it names, read right after the commit on the
    writer's own store: what a view needs to update by id, with no read of its own."""

    changes: StoreChanges
    facts: dict[str, Fact] = field(default_factory=dict)
    """The current value of every fact added, changed or deactivated."""
    strengths: dict[str, Strength] = field(default_factory=dict)
    """Importance and recalls of those facts and of ``changes.strengths`` (those that have any)."""
    versions: list[Version] = field(default_factory=list)
    sleeps: list[SleepRecord] = field(default_factory=list)
    counts: dict[str, tuple[int, int, int]] | None = None
    """Per-block counts after the commit, when facts changed (None: not read)."""
    complete: bool = True
    """False when the rows could not be read: the view reloads."""

    @property
    def reload(self) -> bool:
        """Too many facts to apply row by row (a restore of a whole version, a huge pass), or
        the rows are missing: a view reloads its first pages instead."""
        return not self.complete or len(self.changes.facts) > BIG_CHANGE


BIG_CHANGE = 5_000
"""Fact changes above which a view reloads its first pages instead of applying row by row."""


def read_changed(store: Store, changes: StoreChanges, *, counts: bool = True) -> ChangedRows:
    """The rows ``changes`` names, from ``store`` (call it right after the commit, on the
    store's thread). A change of more than :data:`BIG_CHANGE` facts carries no fact rows:
    the view reloads its pages instead. ``counts`` False skips the per-block counts (one scan
    of the items; the GUI thread's own small writes let the view count incrementally)."""
    ids = changes.facts
    facts = facts_by_ids(store, ids) if ids and len(ids) <= BIG_CHANGE else {}
    strength_ids = list(facts) + list(changes.strengths)
    strengths = store.strengths(strength_ids) if strength_ids else {}
    versions = versions_by_seq(store, changes.versions) if changes.versions else []
    sleeps = sleeps_by_id(store, changes.sleeps) if changes.sleeps else []
    per_block = block_counts(store) if ids and counts else None
    return ChangedRows(changes, facts, strengths, versions, sleeps, per_block)


def rows_of_commit(store: Store, changes: StoreChanges, *, counts: bool = True) -> ChangedRows:
    """:func:`read_changed`, never failing the writer: a failed read is logged and gives the
    descriptor alone, marked incomplete (the view reloads)."""
    try:
        return read_changed(store, changes, counts=counts)
    except Exception:
        log.exception("reading the rows of a commit failed")
        return ChangedRows(changes, complete=False)


def merge_changed(rows: Sequence[ChangedRows]) -> ChangedRows:
    """Several commits' rows as one (in commit order: a later value of a fact wins), for a view
    that applies them together. Incomplete or too big: the merge asks for a reload."""
    if len(rows) == 1:
        return rows[0]
    facts: dict[str, Fact] = {}
    strengths: dict[str, Strength] = {}
    added: dict[str, None] = {}
    other: dict[str, None] = {}
    moved: dict[str, None] = {}
    versions: dict[int, Version] = {}
    sleeps: dict[int, SleepRecord] = {}
    counts: dict[str, tuple[int, int, int]] | None = None
    complete = True
    for r in rows:
        complete = complete and r.complete
        facts.update(r.facts)
        for i in r.facts:
            strengths.pop(i, None)
        strengths.update(r.strengths)
        added.update(dict.fromkeys(r.changes.added))
        other.update(dict.fromkeys(r.changes.changed + r.changes.deactivated))
        moved.update(dict.fromkeys(r.changes.strengths))
        versions.update((v.seq, v) for v in r.versions)
        sleeps.update((s.id, s) for s in r.sleeps)
        if r.changes.facts:
            counts = r.counts  # None after a commit that left them to the view: stays unknown
    changes = StoreChanges(
        added=tuple(added), changed=tuple(i for i in other if i not in added),
        strengths=tuple(i for i in moved if i not in facts),
        versions=tuple(sorted(versions)), sleeps=tuple(sorted(sleeps)),
        turns=tuple(t for r in rows for t in r.changes.turns),
        mutations=tuple(m for r in rows for m in r.changes.mutations),
        meta=tuple(dict.fromkeys(k for r in rows for k in r.changes.meta)),
    )
    return ChangedRows(changes, facts, strengths, [versions[s] for s in sorted(versions)],
                       [sleeps[i] for i in sorted(sleeps)], counts, complete)
