"""Versions, diff and restore over the validity ranges (see the store's module docstring).

A snapshot copies nothing: it numbers the pending version. The state at a version, the diff
between two and a restore read only the rows whose range starts or ends between them, so their
cost follows the changes, not the size of the store (``kept`` in a diff is the exception: it
materialises a whole state).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

from nocturne_desktop.core import applying, mutations
from nocturne_desktop.core.errors import (
    InvalidInput,
    UnknownVersion,
)
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.store.base import (
    _FACT_COLS,
    _LIVE_COLS,
    _fact,
    _Live,
    _num,
)
from nocturne_desktop.core.store.log import LogStore
from nocturne_desktop.core.store.ranking import RankStore
from nocturne_desktop.core.types import (
    Diff,
    DiffEntry,
    Fact,
    MutationRow,
    Version,
)

_VERSION_ID = re.compile(r"s([0-9]+)")


class VersionStore(RankStore, LogStore):
    """Snapshots, the states at versions, the diff between two, restore."""

    def snapshot(self, label: str, *, sleep_id: int | None = None) -> Version:
        with self.transaction():
            return self._snapshot(label, sleep_id=sleep_id)

    def _snapshot(self, label: str, *, sleep_id: int | None) -> Version:
        if not isinstance(label, str) or not label.strip():
            raise InvalidInput("snapshot label is empty")
        if "\x00" in label or len(label) > 200:
            raise InvalidInput("snapshot label must be at most 200 characters, without NUL")
        if sleep_id is not None:
            self._require_sleep(sleep_id)
        c = self._conn
        seq = self._pending_seq()
        # O(changes since the last snapshot): its count, plus the facts whose value starts at
        # seq, minus the values they replaced (which end at seq). Covering indexes on both.
        prev = c.execute("SELECT active_count FROM snapshots WHERE seq = ?", (seq - 1,)).fetchone()
        (gained,) = c.execute(
            "SELECT coalesce(sum(active), 0) FROM items WHERE from_seq = ?", (seq,)
        ).fetchone()
        (lost,) = c.execute(
            "SELECT coalesce(sum(active), 0) FROM item_history WHERE to_seq = ?", (seq,)
        ).fetchone()
        count = (int(prev[0]) if prev else 0) + int(gained) - int(lost)
        now = self._clock()
        c.execute(
            "INSERT INTO snapshots(seq, label, created_at, active_count, sleep_id) "
            "VALUES (?,?,?,?,?)",
            (seq, label, now, count, sleep_id),
        )
        self._delta.versions.append(seq)
        self._pending = seq + 1
        return Version(seq, label, now, count, sleep_id)

    def _seq(self, c: sqlite3.Connection, version: int | str) -> int:
        seq: int | None = None
        if isinstance(version, bool):
            seq = None
        elif isinstance(version, int):
            seq = version
        elif isinstance(version, str):
            m = _VERSION_ID.fullmatch(version)
            if m is not None:
                seq = int(m.group(1))
        if (
            seq is not None
            and c.execute("SELECT 1 FROM snapshots WHERE seq = ?", (seq,)).fetchone()
        ):
            return seq
        raise UnknownVersion(
            f"unknown version {version!r}; versions are numbers or ids like 's0012'"
        )

    @staticmethod
    def _version(row: Sequence[Any]) -> Version:
        return Version(int(row[0]), row[1], row[2], int(row[3]), row[4])

    def versions(self) -> list[Version]:
        with self._read() as c:
            rows = c.execute(
                "SELECT seq, label, created_at, active_count, sleep_id FROM snapshots ORDER BY seq"
            ).fetchall()
        return [self._version(r) for r in rows]

    def version(self, version: int | str) -> Version:
        with self._read() as c:
            seq = self._seq(c, version)
            row = c.execute(
                "SELECT seq, label, created_at, active_count, sleep_id FROM snapshots "
                "WHERE seq = ?",
                (seq,),
            ).fetchone()
        return self._version(row)

    def latest_version(self) -> Version | None:
        with self._read() as c:
            row = c.execute(
                "SELECT seq, label, created_at, active_count, sleep_id FROM snapshots "
                "ORDER BY seq DESC LIMIT 1"
            ).fetchone()
        return None if row is None else self._version(row)

    @staticmethod
    def _state_rows(c: sqlite3.Connection, seq: int, *, active_only: bool) -> list[Any]:
        """Rows of the state at ``seq``, by num: live rows unchanged since ``seq`` (one pass over
        ``items`` in key order) plus, from ``item_history``, the values at ``seq`` of the facts
        changed since - found through the ``to_seq`` index, so the cost grows with the changes
        after ``seq``, never with the whole history."""
        only = " AND active = 1" if active_only else ""
        rows: list[Any] = c.execute(
            f"SELECT {_FACT_COLS} FROM items WHERE from_seq <= ?{only} ORDER BY num", (seq,)
        ).fetchall()
        older = c.execute(
            f"SELECT {_FACT_COLS} FROM item_history INDEXED BY item_history_to "
            f"WHERE to_seq > ?1 AND from_seq <= ?1{only}",
            (seq,),
        ).fetchall()
        if older:
            rows += older
            rows.sort(key=itemgetter(0))  # two sorted runs: timsort merges them in O(n)
        return rows

    def state_at(self, version: int | str) -> list[Fact]:
        """Every fact that existed at ``version`` (active or not), as it was, by numeric id."""
        with self._read() as c:
            seq = self._seq(c, version)
            rows = self._state_rows(c, seq, active_only=False)
        return [_fact(r) for r in rows]

    def _changed_between(
        self, c: sqlite3.Connection, lo: int, hi: int
    ) -> tuple[dict[int, Fact], dict[int, Fact]]:
        """Facts with a value starting in ``(lo, hi]``: their values at ``lo`` and at ``hi``."""
        at_lo = c.execute(
            f"SELECT {_FACT_COLS} FROM item_history "
            "WHERE to_seq > ?1 AND to_seq <= ?2 AND from_seq <= ?1",
            (lo, hi),
        ).fetchall()
        at_hi = c.execute(
            f"SELECT {_FACT_COLS} FROM item_history "
            "WHERE from_seq > ?1 AND from_seq <= ?2 AND to_seq > ?2 "
            f"UNION ALL SELECT {_FACT_COLS} FROM items WHERE from_seq > ?1 AND from_seq <= ?2",
            (lo, hi),
        ).fetchall()
        return {r[0]: _fact(r) for r in at_lo}, {r[0]: _fact(r) for r in at_hi}

    def _fact_at(self, c: sqlite3.Connection, num: int, seq: int) -> Fact | None:
        row = c.execute(
            f"SELECT {_FACT_COLS} FROM item_history WHERE num = ?1 AND from_seq <= ?2 "
            "AND to_seq > ?2",
            (num, seq),
        ).fetchone()
        if row is None:
            row = c.execute(
                f"SELECT {_FACT_COLS} FROM items WHERE num = ?1 AND from_seq <= ?2", (num, seq)
            ).fetchone()
        return None if row is None else _fact(row)

    def diff(self, a: int | str, b: int | str, *, include_kept: bool = True) -> Diff:
        """Classify every fact by id between the states at ``a`` and ``b``.

        The changed / forgotten / added sets come from the history rows that start or end in
        ``(min(a,b), max(a,b)]`` only. ``kept`` additionally materialises the state at ``a``
        (O(store)); pass ``include_kept=False`` to skip it when only the changes matter.
        """
        with self._read() as c:
            sa, sb = self._seq(c, a), self._seq(c, b)
            lo, hi = min(sa, sb), max(sa, sb)
            at_lo, at_hi = self._changed_between(c, lo, hi)
            before, after = (at_lo, at_hi) if sa <= sb else (at_hi, at_lo)
            muts = self._mutation_rows(c, "seq > ? AND seq <= ?", (lo, hi), order="id")
            touched: dict[str, MutationRow] = {}
            merged_from: dict[str, list[str]] = {}
            for row in muts:
                if not row.mutation.accepted:
                    continue
                try:
                    change = mutations.from_row(row.mutation)
                except InvalidInput:  # a row this version cannot read attributes only its id
                    touched[row.mutation.item_id] = row
                    continue
                if isinstance(change, mutations.Merge):
                    merged_from.setdefault(change.into, []).extend(change.from_ids)
                for item in (change.item_id, *applying.touched(change)):
                    touched[item] = row
            changed: list[DiffEntry] = []
            forgotten: list[DiffEntry] = []
            superseded: list[DiffEntry] = []
            added: list[DiffEntry] = []
            same: set[int] = set()
            for num in sorted(set(before) | set(after)):
                x, y = before.get(num), after.get(num)
                x_on = x is not None and x.active
                y_on = y is not None and y.active
                item_id = f"m_{num}"
                src = touched.get(item_id)
                info: dict[str, Any] = {}
                if src is not None:
                    sm = src.mutation
                    info = {
                        "pass_name": sm.pass_name,
                        "policy": sm.policy,
                        "reason": sm.reason,
                        "decided_by": sm.decided_by,
                    }
                if x_on and y_on:
                    assert x is not None and y is not None
                    if (x.text, x.block, x.category, x.pinned) == (
                            y.text, y.block, y.category, y.pinned):
                        same.add(num)
                        continue
                    sources: list[Fact] = []
                    for sid in dict.fromkeys(merged_from.get(item_id, [])):
                        try:
                            snum = _num(sid)
                        except InvalidInput:
                            continue
                        f = before.get(snum) if snum in before else self._fact_at(c, snum, sa)
                        if f is not None:
                            sources.append(f)
                    changed.append(
                        DiffEntry(item_id, "changed", x, y, sources=tuple(sources), **info)
                    )
                elif x_on and y is not None and y.superseded:
                    superseded.append(DiffEntry(item_id, "superseded", x, y, **info))
                elif x_on:
                    forgotten.append(DiffEntry(item_id, "forgotten", x, y, **info))
                elif y_on:
                    added.append(DiffEntry(item_id, "added", x, y, **info))
            kept: list[DiffEntry] = []
            if include_kept:
                for r in self._state_rows(c, sa, active_only=True):
                    num = r[0]
                    if num in before and num not in same:
                        continue
                    f = _fact(r)
                    g = after.get(num, f)
                    kept.append(DiffEntry(f.id, "kept", f, g))
            rejected = [r for r in muts if not r.mutation.accepted]
        return Diff(
            sa, sb, tuple(kept), tuple(changed), tuple(forgotten), tuple(added), tuple(rejected),
            tuple(superseded),
        )

    def restore(self, version: int | str) -> Version:
        """Make the live state equal the state at ``version``, as a new version.

        Only facts whose value changed since ``version`` are written. Facts created after it are
        forgotten (ids are never reused, rows never deleted). The new version is labelled
        ``restore:<id>``, and one audit row records it: pass ``restore``, kind ``restore``,
        ``item_id`` = the target version id (``s0011``), ``decided_by`` ``user``, ``refs`` =
        ``{"version", "seq", "changedIds"}`` - which :meth:`diff` uses to attribute the change.
        """
        with self.transaction():
            c = self._conn
            seq = self._seq(c, version)
            target_id = f"s{seq:04d}"
            live_rows = [
                _Live(*r)
                for r in c.execute(
                    f"SELECT {_LIVE_COLS} FROM items INDEXED BY items_from WHERE from_seq > ?",
                    (seq,),
                ).fetchall()
            ]
            live_rows.sort(key=attrgetter("num"))
            old = {
                r[0]: r
                for r in c.execute(
                    f"SELECT {_FACT_COLS} FROM item_history INDEXED BY item_history_to "
                    "WHERE to_seq > ?1 AND from_seq <= ?1",
                    (seq,),
                ).fetchall()
            }
            changed: list[str] = []
            for live in live_rows:
                was = old.get(live.num)
                if was is None:
                    if live.active:
                        self._put(live, active=False, pinned=False)
                        changed.append(f"m_{live.num}")
                    continue
                _, block, text, category, _st, _ca, updated_at, active, until, by, pinned = was
                if (block, text, category, active, updated_at, until, by, pinned) == (
                    live.block,
                    live.text,
                    live.category,
                    live.active,
                    live.updated_at,
                    live.valid_until,
                    live.superseded_by,
                    live.pinned,
                ):
                    continue
                self._put(
                    live,
                    block=block,
                    text=text,
                    category=category,
                    active=bool(active),
                    updated_at=updated_at,
                    valid_until=until,
                    superseded_by=by,
                    pinned=bool(pinned),
                    door=Door.RESTORE,
                )
                changed.append(f"m_{live.num}")
            new_seq = self._pending_seq()
            row = mutations.Restore(
                pass_name="restore",
                reason=f"restore to {target_id}",
                decided_by=mutations.DecidedBy.USER,
                version=target_id,
                seq=seq,
                changed_ids=tuple(changed),
            )
            self._record([mutations.to_row(row)], seq=new_seq, sleep_id=None)
            return self._snapshot(f"restore:{target_id}", sleep_id=None)
