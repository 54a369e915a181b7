"""Facts: the live table, the history copy on each write, the FTS5 indexes kept in step.

Every write of a fact goes through :meth:`FactStore._put` (or ``_insert`` for a new one): it
copies the value the last snapshot saw into ``item_history``, updates the live row and keeps
the two FTS5 indexes (``items_fts`` for active facts, ``past_fts`` for the rest) in step, in the
caller's transaction; :mod:`.search` reads them. Strengths (importance and recalls, S-RET-2)
sit beside the facts and are not versioned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from nocturne_desktop.core.errors import (
    InvalidInput,
)
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.policy import reinforce
from nocturne_desktop.core.store.base import (
    _FACT_COLS,
    _IN_CHUNK,
    _KEEP,
    _LIVE_COLS,
    StoreBase,
    _Answer,
    _check_block,
    _check_category,
    _check_importance,
    _check_text,
    _fact,
    _FactsMark,
    _Live,
    _num,
)
from nocturne_desktop.core.store.schema import (
    _FTS_DEFINITION,
    _PAST_FTS_DEFINITION,
)
from nocturne_desktop.core.types import (
    BLOCKS,
    BlockInfo,
    Fact,
    FactDraft,
    Strength,
)


def _stems(text: str) -> str:
    """What the search index holds for ``text``: its words folded by ``textmath.stem_token``."""
    return " ".join(tm.tokens(text))









_SET_COLS = ("block", "text", "category", "updated_at", "active", "created_at", "valid_until",
             "superseded_by", "pinned", "from_seq")
"""The columns of ``items`` a write may change."""


def _differs(a: object, b: object) -> bool:
    return type(a) is not type(b) or a != b


class _Writes:
    """Fact writes staged by :meth:`FactStore._stage` for one :meth:`FactStore._flush`."""

    __slots__ = ("first", "history", "last")

    def __init__(self) -> None:
        self.history: list[tuple[Any, ...]] = []
        """``item_history`` rows, in the order the writes were staged."""
        self.first: dict[int, _Live] = {}
        """num → the fact's row before its first staged write (what the table holds)."""
        self.last: dict[int, _Live] = {}
        """num → its last staged value."""


class FactStore(StoreBase):
    """Reading, searching and writing facts (and their strengths)."""

    def _sync_fts(self) -> None:
        """Create / rebuild the FTS5 index when it is missing or was left stale."""
        c = self._conn
        synced = c.execute("SELECT value FROM counters WHERE name = 'fts_synced'").fetchone()[0]
        if not self.fts_enabled:
            if synced:
                c.execute("UPDATE counters SET value = 0 WHERE name = 'fts_synced'")
            return
        for table, definition, active in (
            ("items_fts", _FTS_DEFINITION, 1), ("past_fts", _PAST_FTS_DEFINITION, 0)
        ):
            row = c.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            if row is not None and synced and row[0] == definition:
                continue
            if row is not None:  # stale, or an older layout (schema 1 indexed raw text)
                c.execute(f"DROP TABLE {table}")
            c.execute(definition)
            rows = c.execute("SELECT num, text FROM items WHERE active = ?", (active,)).fetchall()
            c.executemany(
                f"INSERT INTO {table}(rowid, stems) VALUES (?, ?)",
                ((num, _stems(text)) for num, text in rows),
            )
        c.execute("UPDATE counters SET value = 1 WHERE name = 'fts_synced'")

    def _put(
        self,
        old: _Live,
        *,
        block: str | None = None,
        text: str | None = None,
        category: str | None = None,
        active: bool | None = None,
        updated_at: float | None = None,
        created_at: float | None = None,
        pinned: bool | None = None,
        valid_until: float | None = _KEEP,
        superseded_by: int | None = _KEEP,
        door: Door = Door.STORE,
    ) -> _Live:
        """Write a new value of a live fact, keeping its old value in the history. A fact made
        active again loses its validity interval unless one is given. A new text passes the
        admission check of ``door``."""
        writes = _Writes()
        new = self._stage(
            writes, old, block=block, text=text, category=category, active=active,
            updated_at=updated_at, created_at=created_at, pinned=pinned,
            valid_until=valid_until, superseded_by=superseded_by, door=door,
        )
        self._flush(writes)
        return new

    def _stage(
        self,
        writes: _Writes,
        old: _Live,
        *,
        block: str | None = None,
        text: str | None = None,
        category: str | None = None,
        active: bool | None = None,
        updated_at: float | None = None,
        created_at: float | None = None,
        pinned: bool | None = None,
        valid_until: float | None = _KEEP,
        superseded_by: int | None = _KEEP,
        door: Door = Door.STORE,
    ) -> _Live:
        """:meth:`_put`'s new value of ``old``, staged in ``writes`` (its history row, the live
        row's value and what the FTS indexes need) for :meth:`_flush` to write; the change
        descriptor is updated now. Call inside a write transaction. Every write of a fact's
        text passes here: a new text must pass :func:`admission.check` for ``door``."""
        if text is not None and text != old.text:
            admission.check(text, door)
        reactivated = bool(active) and not old.active
        new = old._replace(
            block=old.block if block is None else block,
            text=old.text if text is None else text,
            category=old.category if category is None else category,
            active=old.active if active is None else int(active),
            created_at=old.created_at if created_at is None else created_at,
            pinned=old.pinned if pinned is None else int(pinned),
            valid_until=(None if reactivated else old.valid_until)
            if valid_until is _KEEP else valid_until,
            superseded_by=(None if reactivated else old.superseded_by)
            if superseded_by is _KEEP else superseded_by,
        )
        if updated_at is not None:
            new = new._replace(updated_at=updated_at)
        if new == old:
            return old
        if updated_at is None:
            new = new._replace(updated_at=self._clock())
        self._delta.fact(old.num, was_active=bool(old.active), active=bool(new.active))
        p = self._pending_seq()
        if old.from_seq != p:
            writes.history.append((
                old.num, old.from_seq, p, old.block, old.text, old.category, old.source_turn,
                old.created_at, old.updated_at, old.active, old.valid_until, old.superseded_by,
                old.pinned,
            ))
        new = new._replace(from_seq=p)
        writes.first.setdefault(old.num, old)
        writes.last[old.num] = new
        return new

    def _flush(self, writes: _Writes) -> None:
        """Write what ``writes`` staged: the history rows in the order staged, each fact's last
        value, and each fact's FTS rows from its value before the first write to its last (the
        index holds a fact's folded text in ``items_fts`` while it is active, else in
        ``past_fts``, so only that difference is written). A fact that moves between the two
        with its text unchanged is copied across, not folded again."""
        c = self._conn
        if writes.history:
            c.executemany(
                "INSERT INTO item_history(num, from_seq, to_seq, block, text, category, "
                "source_turn, created_at, updated_at, active, valid_until, superseded_by, "
                "pinned) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                writes.history,
            )
        # Each row sets only the columns that change (a column not set leaves its indexes
        # alone: a forgetting does not rewrite the block index, a promotion the active ones).
        updates: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for num, new in writes.last.items():
            old = writes.first[num]
            cols = tuple(col for col in _SET_COLS if _differs(getattr(old, col), getattr(new, col)))
            updates.setdefault(cols, []).append((*(getattr(new, col) for col in cols), num))
        for cols, rows in updates.items():
            if cols:
                c.executemany(
                    f"UPDATE items SET {', '.join(f'{col} = ?' for col in cols)} WHERE num = ?",
                    rows,
                )
        self._delta.texts.update(
            num for num, new in writes.last.items() if new.text != writes.first[num].text)
        if not self.fts_enabled or not writes.last:
            return
        moved: dict[tuple[str, str], list[int]] = {}  # (from, to): text unchanged
        delete: dict[str, list[int]] = {"items_fts": [], "past_fts": []}
        insert: dict[str, list[tuple[int, str]]] = {"items_fts": [], "past_fts": []}
        for num, new in writes.last.items():
            old = writes.first[num]
            was = "items_fts" if old.active else "past_fts"
            now = "items_fts" if new.active else "past_fts"
            if old.text == new.text:
                if was != now:
                    moved.setdefault((was, now), []).append(num)
                continue
            delete[was].append(num)
            insert[now].append((num, _stems(new.text)))
        for (src, dst), nums in moved.items():
            for start in range(0, len(nums), _IN_CHUNK):
                chunk = nums[start : start + _IN_CHUNK]
                c.execute(
                    f"INSERT INTO {dst}(rowid, stems) SELECT rowid, stems FROM {src} "
                    f"WHERE rowid IN ({','.join('?' * len(chunk))})", chunk,
                )
            delete[src].extend(nums)
        for table, nums in delete.items():
            for start in range(0, len(nums), _IN_CHUNK):
                chunk = nums[start : start + _IN_CHUNK]
                c.execute(
                    f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)
        for table, rows in insert.items():
            if rows:
                c.executemany(f"INSERT INTO {table}(rowid, stems) VALUES (?, ?)", rows)

    def _lives(self, nums: Iterable[int]) -> dict[int, _Live]:
        """The live rows of ``nums`` (those that exist), read in chunks."""
        wanted = sorted(set(nums))
        out: dict[int, _Live] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            out.update((row[0], _Live(*row)) for row in self._conn.execute(
                f"SELECT {_LIVE_COLS} FROM items WHERE num IN ({','.join('?' * len(chunk))})",
                chunk,
            ))
        return out

    def _insert(self, block: str, draft: FactDraft, *, door: Door = Door.STORE) -> _Live:
        """Write a new fact (every new fact's text passes here, through the admission check
        of ``door``). Call inside a write transaction."""
        if not isinstance(draft, FactDraft):
            raise InvalidInput(f"expected a FactDraft, not {type(draft).__name__}")
        _check_block(block)
        text = admission.check(draft.text, door)
        category = _check_category(draft.category)
        if draft.source_turn is not None and (
            not isinstance(draft.source_turn, int) or draft.source_turn < 0
        ):
            raise InvalidInput(f"source_turn must be a turn number, not {draft.source_turn!r}")
        now = self._clock()
        created = now if draft.created_at is None else float(draft.created_at)
        if not math.isfinite(created):
            raise InvalidInput(f"created_at must be a finite timestamp, not {draft.created_at!r}")
        c = self._conn
        num = int(c.execute("SELECT value FROM counters WHERE name = 'next_item'").fetchone()[0])
        c.execute("UPDATE counters SET value = ? WHERE name = 'next_item'", (num + 1,))
        live = _Live(
            num, block, text, category, draft.source_turn, created, created, 1, None, None, 0,
            self._pending_seq(),
        )
        c.execute(f"INSERT INTO items({_LIVE_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", live)
        self._delta.inserted.add(num)
        self._delta.texts.add(num)
        if draft.importance is not None:
            c.execute("INSERT INTO strengths(num, importance) VALUES (?, ?)",
                      (num, _check_importance(draft.importance)))
        if self.fts_enabled:
            c.execute("INSERT INTO items_fts(rowid, stems) VALUES (?, ?)", (num, _stems(text)))
        return live

    # ------------------------------------------------------------------ reads

    def list_blocks(self) -> list[BlockInfo]:
        with self._read() as c:
            rows = c.execute(
                "SELECT block, count(*), coalesce(sum(active), 0) FROM items GROUP BY block"
            ).fetchall()
        counts = {r[0]: (int(r[2]), int(r[1])) for r in rows}
        return [BlockInfo(name, *counts.get(name, (0, 0))) for name in BLOCKS]

    def get_block(self, name: str, *, include_inactive: bool = False) -> list[Fact]:
        _check_block(name)
        where = "" if include_inactive else " AND active = 1"
        with self._read() as c:
            rows = c.execute(
                f"SELECT {_FACT_COLS} FROM items WHERE block = ?{where} ORDER BY num", (name,)
            ).fetchall()
        return [_fact(r) for r in rows]

    def get(self, item_id: str) -> Fact | None:
        try:
            num = _num(item_id)
        except InvalidInput:
            return None
        with self._read() as c:
            row = c.execute(f"SELECT {_FACT_COLS} FROM items WHERE num = ?", (num,)).fetchone()
        return None if row is None else _fact(row)

    def active_facts(self) -> list[Fact]:
        with self._read() as c:
            rows = c.execute(
                f"SELECT {_FACT_COLS} FROM items WHERE active = 1 ORDER BY num"
            ).fetchall()
        return [_fact(r) for r in rows]

    def all_facts(self) -> list[Fact]:
        with self._read() as c:
            rows = c.execute(f"SELECT {_FACT_COLS} FROM items ORDER BY num").fetchall()
            (version,) = c.execute("PRAGMA data_version").fetchone()
        facts = _Answer(_fact(r) for r in rows)
        # (read inside a write transaction, the answer may hold writes that roll back: no mark)
        self._facts_mark = None if self._depth else _FactsMark(facts, int(version))
        return facts

    def facts_after(self, facts: list[Fact]) -> list[Fact]:
        """What :meth:`all_facts` would answer now, given ``facts``, its last answer (or this
        method's): only the facts this ``Store``'s commits changed since are read again. Any
        other ``facts``, a fact added since, or a commit by another connection since (SQLite's
        ``data_version``), and it is :meth:`all_facts` itself."""
        mark = self._facts_mark
        if mark is None or not mark.of(facts) or mark.added or self._depth:
            return self.all_facts()
        nums = sorted({_num(i) for i in mark.touched})
        with self._read() as c:
            (version,) = c.execute("PRAGMA data_version").fetchone()
            if int(version) != mark.data_version:
                rows = None
            else:
                rows = []
                for start in range(0, len(nums), _IN_CHUNK):
                    chunk = nums[start : start + _IN_CHUNK]
                    rows += c.execute(
                        f"SELECT {_FACT_COLS} FROM items "
                        f"WHERE num IN ({','.join('?' * len(chunk))})", chunk,
                    ).fetchall()
        if rows is None:
            return self.all_facts()
        out = _Answer(facts)
        at = {f.id: i for i, f in enumerate(out)}
        for r in rows:
            fact = _fact(r)
            i = at.get(fact.id)
            if i is None:
                return self.all_facts()
            out[i] = fact
        self._facts_mark = _FactsMark(out, mark.data_version)
        return out

    def superseded_facts(self, *, limit: int = 500) -> list[Fact]:
        """Facts a correction replaced (S-REC-2), most recently ended first, at most ``limit``:
        the history the agent's "previously" section is chosen from."""
        if limit <= 0:
            return []
        with self._read() as c:
            rows = c.execute(
                f"SELECT {_FACT_COLS} FROM items INDEXED BY items_superseded "
                "WHERE superseded_by IS NOT NULL AND active = 0 "
                "ORDER BY valid_until DESC, num DESC LIMIT ?",
                (int(limit),),
            ).fetchall()
        return [_fact(r) for r in rows]

    def active_count(self) -> int:
        """How many facts are active. ``items_fts`` indexes exactly those (every write keeps it
        in step in its own transaction; ``fts_synced`` says it is), and counting the rows of its
        ``_docsize`` table (FTS5's one row per indexed document) reads a few hundred pages,
        where counting the active facts reads an index entry by entry (100k facts: 0.03 ms
        against 2.5; a chat turn asks it first). Without FTS5, or with an index not in step,
        the facts themselves are counted."""
        with self._read() as c:
            if self.fts_enabled:
                (indexed,) = c.execute(
                    "SELECT CASE WHEN (SELECT value FROM counters WHERE name = 'fts_synced') = 1 "
                    "THEN (SELECT count(*) FROM items_fts_docsize) END").fetchone()
                if indexed is not None:
                    return int(indexed)
            return int(c.execute("SELECT count(*) FROM items WHERE active = 1").fetchone()[0])


    def recent(self, *, limit: int = 20, exclude_blocks: Sequence[str] = ()) -> list[Fact]:
        """The ``limit`` most recently updated active facts, newest first (ties: newer id)."""
        excluded = [_check_block(b) for b in exclude_blocks]
        not_in = f" AND block NOT IN ({','.join('?' * len(excluded))})" if excluded else ""
        if limit <= 0:
            return []
        with self._read() as c:
            rows = c.execute(
                f"SELECT {_FACT_COLS} FROM items INDEXED BY items_recent "
                f"WHERE active = 1{not_in} ORDER BY updated_at DESC, num DESC LIMIT ?",
                (*excluded, int(limit)),
            ).fetchall()
        return [_fact(r) for r in rows]





    # ------------------------------------------------------------------ writes

    def append(self, block: str, item: FactDraft, *, door: Door = Door.STORE) -> Fact:
        """Add one fact to ``block``. ``door`` says how its text comes in (the encoder passes
        :attr:`Door.ENCODER`, a sync :attr:`Door.SYNC`): the admission check it must pass."""
        with self.transaction():
            return _fact(self._insert(block, item, door=door))

    def replace(self, block: str, items: Sequence[Fact | FactDraft]) -> list[Fact]:
        """Make ``block``'s active content exactly ``items``.

        Facts (matched by id) get their text and category from the given object, move into the
        block and become active; drafts are appended; active facts of the block that are not
        listed are forgotten.
        """
        _check_block(block)
        seen: set[int] = set()
        for it in items:
            if isinstance(it, Fact):
                num = _num(it.id)
                if num in seen:
                    raise InvalidInput(f"{it.id} is listed twice")
                seen.add(num)
                _check_text(it.text)
                _check_category(it.category)
            elif isinstance(it, FactDraft):
                _check_text(it.text)
                _check_category(it.category)
            else:
                raise InvalidInput(f"expected Fact or FactDraft, not {type(it).__name__}")
        out: list[Fact] = []
        with self.transaction():
            for it in items:
                if isinstance(it, Fact):
                    old = self._require(it.id)
                    new = self._put(
                        old, block=block, text=it.text, category=it.category, active=True
                    )
                else:
                    new = self._insert(block, it)
                    seen.add(new.num)
                out.append(_fact(new))
            rows = self._conn.execute(
                f"SELECT {_LIVE_COLS} FROM items WHERE block = ? AND active = 1", (block,)
            ).fetchall()
            for row in rows:
                live = _Live(*row)
                if live.num not in seen:
                    self._put(live, active=False)
        return out

    def update(
        self,
        item_id: str,
        *,
        text: str | None = None,
        block: str | None = None,
        category: str | None = None,
        created_at: float | None = None,
        door: Door = Door.STORE,
    ) -> Fact:
        """Change a fact's text, block, category and/or creation time (its ``active`` flag is
        untouched). ``created_at`` is what the retention policy measures age against; changing
        it is a versioned change like any other (the verifier backdates episodes with it). A
        new text passes the admission check of ``door``."""
        if created_at is not None and not (isinstance(created_at, int | float) and created_at >= 0):
            raise InvalidInput(f"created_at must be a non-negative timestamp, not {created_at!r}")
        if text is not None:
            _check_text(text)
        if block is not None:
            _check_block(block)
        if category is not None:
            _check_category(category)
        with self.transaction():
            old = self._require(item_id)
            return _fact(self._put(old, text=text, block=block, category=category,
                                   created_at=created_at, door=door))

    def forget(self, item_id: str) -> Fact:
        with self.transaction():
            old = self._require(item_id, active=True, what="forget")
            return _fact(self._put(old, active=False))

    # ------------------------------------------------------------------ strengths (S-RET-2)

    def strengths(self, item_ids: Iterable[str] | None = None) -> dict[str, Strength]:
        """Importance and recalls by fact id, for the facts that have any (all, or ``item_ids``).
        A fact absent from the answer has no importance of its own and was never recalled."""
        with self._read() as c:
            if item_ids is None:
                rows = c.execute(
                    "SELECT num, importance, uses, strength, last_used_at FROM strengths"
                ).fetchall()
            else:
                nums = sorted({_num(i) for i in item_ids})
                rows = []
                for start in range(0, len(nums), _IN_CHUNK):
                    chunk = nums[start : start + _IN_CHUNK]
                    rows += c.execute(
                        "SELECT num, importance, uses, strength, last_used_at FROM strengths "
                        f"WHERE num IN ({','.join('?' * len(chunk))})", chunk,
                    ).fetchall()
        return {f"m_{r[0]}": Strength(r[1], int(r[2]), float(r[3]), r[4]) for r in rows}

    def set_importance(self, item_id: str, importance: int | None) -> None:
        """Set (None: clear, so the category's default applies) a fact's importance (1–5)."""
        level = _check_importance(importance)
        with self.transaction():
            live = self._require(item_id, what="set importance of")
            self._conn.execute(
                "INSERT INTO strengths(num, importance) VALUES (?, ?) "
                "ON CONFLICT(num) DO UPDATE SET importance = excluded.importance",
                (live.num, level),
            )
            self._delta.strengths.add(live.num)

    def record_use(self, item_ids: Iterable[str], *, at: float | None = None) -> list[str]:
        """One recall of each fact (a reply carried it, a quiz answer named it): its strength
        becomes its old recalls decayed to ``at`` plus one (:func:`policy.reinforce`). Ids of
        facts that are unknown or forgotten are skipped; the ids reinforced are returned."""
        when = self._clock() if at is None else float(at)
        if not math.isfinite(when):
            raise InvalidInput(f"a use must have a finite time, not {at!r}")
        wanted = list(dict.fromkeys(item_ids))
        for i in wanted:
            _num(i)
        done: list[str] = []
        with self.transaction():
            current = self.strengths(wanted)
            c = self._conn
            for item_id in wanted:
                live = self._live(_num(item_id))
                if live is None or not live.active:
                    continue
                new = reinforce(current.get(item_id), when)
                c.execute(
                    "INSERT INTO strengths(num, importance, uses, strength, last_used_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(num) DO UPDATE SET uses = excluded.uses, "
                    "strength = excluded.strength, last_used_at = excluded.last_used_at",
                    (live.num, new.importance, new.uses, new.strength, new.last_used_at),
                )
                self._delta.strengths.add(live.num)
                done.append(item_id)
        return done
