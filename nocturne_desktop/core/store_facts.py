"""Facts and search: the live table, the history copy on each write, the FTS5 indexes.

Every write of a fact goes through :meth:`FactStore._put` (or ``_insert`` for a new one): it
copies the value the last snapshot saw into ``item_history``, updates the live row and keeps
the two FTS5 indexes (``items_fts`` for active facts, ``past_fts`` for the rest) in step, in the
caller's transaction. Search folds words as the text measures do (see the store's module
docstring) and ranks BM25 with explicable boosts. Strengths (importance and recalls, S-RET-2)
sit beside the facts: search reads them, and they are not versioned.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from nocturne_desktop.core import textmath as tm
from nocturne_desktop.core.errors import (
    InvalidInput,
)
from nocturne_desktop.core.policy import DEFAULT_IMPORTANCE, decayed, reinforce
from nocturne_desktop.core.store_base import (
    _FACT_COLS,
    _IN_CHUNK,
    _KEEP,
    _LIVE_COLS,
    _N_FACT_COLS,
    StoreBase,
    _Answer,
    _check_block,
    _check_category,
    _check_importance,
    _check_text,
    _check_unicode,
    _fact,
    _FactsMark,
    _Live,
    _num,
)
from nocturne_desktop.core.store_schema import (
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

SEARCH_BLOCK_BOOST: dict[str, float] = {"persona": 0.2, "human": 0.2, "episodes": 0.1, "scratch": 0.0}
"""Search boost by block: consolidated facts win a near-tie with scratch notes."""
SEARCH_RECENCY_BOOST = 0.2
"""Search boost for a fact updated just now, falling linearly to 0 at :data:`SEARCH_RECENCY_DAYS`."""
SEARCH_RECENCY_DAYS = 90.0
SEARCH_SALIENCE_BOOST = 0.05
"""Search boost per point of importance off the category's usual one and per recall (decayed)."""
SEARCH_COMMON_MIN = 1000
"""A query word found in more facts than this and than a tenth of all facts is left out of the
search when rarer words remain (see ``Store._selective``)."""
_SEARCH_POOL = 2
"""BM25 candidates per result re-ranked with the boosts (and filtered by block; the pool widens
when the filter leaves fewer than ``limit``)."""

def _stems(text: str) -> str:
    """What the search index holds for ``text``: its words folded by ``textmath.stem_token``."""
    return " ".join(tm.tokens(text))


class FoundFact(NamedTuple):
    """One hit of :meth:`Store.search_all`: the fact as it is now, whether it is ``active``,
    ``forgotten`` or ``superseded``, the last version (seq) at which it was active (None for an
    active fact, or an inactive one no version ever showed active), the folded words of its text
    that matched (as :func:`textmath.stem_token` folds them; for highlighting) and its relevance
    (BM25, higher is better; search_scored's score for an active fact)."""

    fact: Fact
    status: str
    last_active_seq: int | None
    matched: frozenset[str]
    score: float


class SearchHit(NamedTuple):
    """One search result and why it ranks where it does: ``score = bm25 * (1 + boost)`` with
    ``boost = block + recency + salience`` (``bm25`` is FTS5's relevance, sign flipped so higher
    is better)."""

    fact: Fact
    score: float
    bm25: float
    block: float
    recency: float
    salience: float = 0.0
    """:data:`SEARCH_SALIENCE_BOOST` per point of importance above (below: minus) the category's
    usual one, plus the same per recall as it weighs now (at most 4)."""

_WORD = re.compile(r"\w+")
_MAX_QUERY_TERMS = 32


def _marked(highlighted: str) -> frozenset[str]:
    """The folded words FTS5's ``highlight(..., char(1), char(2))`` marked in a stems column."""
    words: set[str] = set()
    inside = False
    for word in highlighted.split(" "):
        if inside or "\x01" in word:
            words.add(word.replace("\x01", "").replace("\x02", ""))
        if "\x01" in word or "\x02" in word:
            inside = word.rfind("\x01") > word.rfind("\x02")
    words.discard("")
    return frozenset(words)


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
    ) -> _Live:
        """Write a new value of a live fact, keeping its old value in the history. A fact made
        active again loses its validity interval unless one is given."""
        writes = _Writes()
        new = self._stage(
            writes, old, block=block, text=text, category=category, active=active,
            updated_at=updated_at, created_at=created_at, pinned=pinned,
            valid_until=valid_until, superseded_by=superseded_by,
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
    ) -> _Live:
        """:meth:`_put`'s new value of ``old``, staged in ``writes`` (its history row, the live
        row's value and what the FTS indexes need) for :meth:`_flush` to write; the change
        descriptor is updated now. Call inside a write transaction."""
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

    def _insert(self, block: str, draft: FactDraft) -> _Live:
        if not isinstance(draft, FactDraft):
            raise InvalidInput(f"expected a FactDraft, not {type(draft).__name__}")
        _check_block(block)
        text = _check_text(draft.text)
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
        with self._read() as c:
            return int(c.execute("SELECT count(*) FROM items WHERE active = 1").fetchone()[0])

    @staticmethod
    def _selective(c: sqlite3.Connection, quoted: list[str]) -> list[str]:
        """The query terms without those in more than a tenth of the facts (at least
        :data:`SEARCH_COMMON_MIN`), unless every term is that common.

        BM25 gives such a word little weight, but ranking every fact it matches is most of a
        search's cost on a large store (the user's name in every fact); counting stops at the
        threshold, so the check costs at most that many index entries per term.
        """
        if len(quoted) < 2:
            return quoted
        (next_item,) = c.execute("SELECT value FROM counters WHERE name = 'next_item'").fetchone()
        common = max(SEARCH_COMMON_MIN, (int(next_item) - 1) // 10)
        keep = [
            q for q in quoted
            if c.execute(
                "SELECT count(*) FROM (SELECT 1 FROM items_fts WHERE items_fts MATCH ? LIMIT ?)",
                (q, common + 1),
            ).fetchone()[0] <= common
        ]
        return keep or quoted

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

    def search(
        self, query: str, *, limit: int = 20, exclude_blocks: Sequence[str] = ()
    ) -> list[Fact]:
        """Active facts matching any word of ``query``, best first: :meth:`search_scored`'s facts."""
        return [h.fact for h in self.search_scored(query, limit=limit, exclude_blocks=exclude_blocks)]

    def search_scored(
        self,
        query: str,
        *,
        limit: int = 20,
        exclude_blocks: Sequence[str] = (),
        now: float | None = None,
    ) -> list[SearchHit]:
        """Active facts matching any word of ``query`` (inflections folded), best first.

        ``query`` is free text: it is cut into words, folded as the index is, each quoted, and
        OR-ed, so FTS syntax in it (quotes, ``NEAR``, ``*``, ``-``, parentheses) is matched
        literally and never errors. The score is ``bm25 * (1 + block + recency + salience)``
        (the boost never below -0.5): ``bm25`` is
        FTS5's BM25 (sign flipped), ``block`` is :data:`SEARCH_BLOCK_BOOST` of the fact's block,
        ``recency`` is :data:`SEARCH_RECENCY_BOOST` for a fact updated at ``now`` (the store's
        clock by default) falling linearly to 0 at :data:`SEARCH_RECENCY_DAYS`, ``salience`` is
        :attr:`SearchHit.salience` (importance and recalls). Ties go to the
        older id. Without FTS5 the relevance is the number of query words found (LIKE on the
        folded words).
        """
        if not isinstance(query, str):
            raise InvalidInput(f"search query must be a string, not {type(query).__name__}")
        excluded = [_check_block(b) for b in exclude_blocks]
        query = query.replace("\x00", " ")
        for word in _WORD.findall(query):
            _check_unicode(word, "search query")
        terms = list(dict.fromkeys(tm.tokens(query)))
        if not terms or limit <= 0:
            return []
        terms = terms[:_MAX_QUERY_TERMS]
        not_in = ""
        if excluded:
            not_in = f" AND i.block NOT IN ({','.join('?' * len(excluded))})"
        pool = int(limit) * _SEARCH_POOL
        with self._read() as c:
            if self.fts_enabled:
                quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
                match = " OR ".join(self._selective(c, quoted))
                rows: list[Any] = []
                while True:  # the BM25 best `pool`, then the block filter; widen if it took many
                    ranked = c.execute(
                        "SELECT rowid, -bm25(items_fts) FROM items_fts WHERE items_fts MATCH ? "
                        "ORDER BY bm25(items_fts) LIMIT ?",
                        (match, pool),
                    ).fetchall()
                    rank = dict(ranked)
                    nums = list(rank)
                    rows = []
                    for start in range(0, len(nums), _IN_CHUNK):  # bounded SQL variables
                        chunk = nums[start : start + _IN_CHUNK]
                        rows += [(*r, rank[r[0]]) for r in c.execute(
                            f"SELECT i.num, i.block, i.text, i.category, i.source_turn, "
                            f"i.created_at, i.updated_at, i.active, i.valid_until, "
                            f"i.superseded_by, i.pinned, s.importance, s.strength, "
                            f"s.last_used_at "
                            f"FROM items i LEFT JOIN strengths s ON s.num = i.num "
                            f"WHERE i.active = 1 AND i.num IN ({','.join('?' * len(chunk))})"
                            f"{not_in}",
                            (*chunk, *excluded),
                        )]
                    if len(rows) >= limit or len(ranked) < pool:
                        break
                    pool *= 4
            else:
                likes = [
                    "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for t in terms
                ]
                score = " + ".join("(i.text LIKE ? ESCAPE '\\')" for _ in likes)
                rows = c.execute(
                    f"SELECT i.num, i.block, i.text, i.category, i.source_turn, i.created_at, "
                    f"i.updated_at, i.active, i.valid_until, i.superseded_by, i.pinned, "
                    f"s.importance, s.strength, s.last_used_at, ({score}) AS score "
                    f"FROM items i LEFT JOIN strengths s ON s.num = i.num "
                    f"WHERE i.active = 1{not_in} AND score > 0 "
                    f"ORDER BY score DESC, i.num LIMIT ?",
                    (*likes, *excluded, pool),
                ).fetchall()
        at = self._clock() if now is None else now
        hits = []
        for r in rows:  # the fact's columns, its strengths row's (NULL if none), the relevance
            fact = _fact(r)
            relevance = float(r[14])
            block = SEARCH_BLOCK_BOOST.get(fact.block, 0.0)
            age = max(0.0, (at - fact.updated_at) / 86400.0)
            recency = SEARCH_RECENCY_BOOST * max(0.0, 1.0 - age / SEARCH_RECENCY_DAYS)
            importance, strength, last_used = r[11], r[12], r[13]
            off = 0 if importance is None else importance - DEFAULT_IMPORTANCE.get(fact.category, 3)
            used = 0.0 if strength is None else min(4.0, decayed(strength, last_used, at))
            salience = SEARCH_SALIENCE_BOOST * (off + used)
            boost = max(-0.5, block + recency + salience)
            hits.append(SearchHit(fact, relevance * (1.0 + boost), relevance, block, recency,
                                  salience))
        hits.sort(key=lambda h: (-h.score, _num(h.fact.id)))
        return hits[: int(limit)]

    def search_all(self, query: str, *, limit: int = 50) -> list[FoundFact]:
        """Facts matching any word of ``query`` (folded as :meth:`search_scored` folds it; its
        stopwords are left out unless it has no other word), active
        or not: up to ``limit`` active ones (search_scored's order), then up to ``limit``
        forgotten or superseded ones (best BM25 first), each with the last version at which it
        was active and the words that matched.

        Both parts read an FTS5 index (``items_fts``, ``past_fts``); the last active version is
        one indexed look-up per inactive hit in ``item_history`` - nothing here scans the store
        or its history. Without FTS5 the inactive part uses the LIKE count as search_scored does.
        """
        active = self.search_scored(query, limit=limit)  # checks the query
        query = query.replace("\x00", " ")
        terms = list(dict.fromkeys(tm.tokens(query)))
        content = tm.content_tokens(query)
        if content and len(content) < len(terms):  # "in", "the": only when nothing else is asked
            terms = [t for t in terms if t in content]
            active = self.search_scored(" ".join(terms), limit=limit)
        terms = terms[:_MAX_QUERY_TERMS]
        if not terms or limit <= 0:
            return []
        quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        cols = ", ".join(f"i.{col.strip()}" for col in _FACT_COLS.split(","))
        found: list[FoundFact] = []
        with self._read() as c:
            if self.fts_enabled:
                (next_item,) = c.execute(
                    "SELECT value FROM counters WHERE name = 'next_item'").fetchone()
                common = max(SEARCH_COMMON_MIN, (int(next_item) - 1) // 10)
                rare = [q for q in quoted.split(" OR ") if c.execute(  # as _selective does
                    "SELECT count(*) FROM (SELECT 1 FROM past_fts WHERE past_fts MATCH ? LIMIT ?)",
                    (q, common + 1)).fetchone()[0] <= common]
                rows = c.execute(
                    f"SELECT {cols}, -bm25(past_fts) FROM past_fts "
                    "JOIN items i ON i.num = past_fts.rowid "
                    "WHERE past_fts MATCH ? AND i.active = 0 ORDER BY bm25(past_fts), i.num LIMIT ?",
                    (" OR ".join(rare) if rare and len(terms) > 1 else quoted, int(limit)),
                ).fetchall()
                marked = self._marked_words(c, "items_fts", quoted,
                                            [_num(h.fact.id) for h in active])
                marked.update(self._marked_words(c, "past_fts", quoted, [r[0] for r in rows]))
                past = [(r[:_N_FACT_COLS], float(r[_N_FACT_COLS]), marked.get(r[0], frozenset()))
                        for r in rows]
            else:
                wanted = set(terms)
                marked = {_num(h.fact.id): frozenset(wanted & set(tm.tokens(h.fact.text)))
                          for h in active}
                likes = [
                    "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for t in terms
                ]
                score = " + ".join("(i.text LIKE ? ESCAPE '\\')" for _ in likes)
                rows = c.execute(
                    f"SELECT {cols}, ({score}) AS score FROM items i "
                    "WHERE i.active = 0 AND score > 0 ORDER BY score DESC, i.num LIMIT ?",
                    (*likes, int(limit)),
                ).fetchall()
                past = [(r[:_N_FACT_COLS], float(r[_N_FACT_COLS]),
                         frozenset(wanted & set(tm.tokens(r[2])))) for r in rows]
            for h in active:
                found.append(FoundFact(h.fact, "active", None,
                                       marked.get(_num(h.fact.id), frozenset()), h.score))
            for row, relevance, words in past:
                fact = _fact(row)
                (last,) = c.execute(
                    "SELECT max(to_seq) - 1 FROM item_history WHERE num = ? AND active = 1",
                    (row[0],),
                ).fetchone()
                status = "superseded" if fact.superseded else "forgotten"
                found.append(FoundFact(fact, status, last, words, relevance))
        return found

    @staticmethod
    def _marked_words(
        c: sqlite3.Connection, table: str, match: str, nums: list[int]
    ) -> dict[int, frozenset[str]]:
        """For each of ``nums`` in the FTS ``table``, the folded words ``match`` matched in it."""
        marked: dict[int, frozenset[str]] = {}
        for start in range(0, len(nums), _IN_CHUNK):
            chunk = nums[start : start + _IN_CHUNK]
            marked.update((num, _marked(text)) for num, text in c.execute(
                f"SELECT rowid, highlight({table}, 0, char(1), char(2)) FROM {table} "
                f"WHERE {table} MATCH ? AND rowid IN ({','.join('?' * len(chunk))})",
                (match, *chunk),
            ))
        return marked

    # ------------------------------------------------------------------ writes

    def append(self, block: str, item: FactDraft) -> Fact:
        with self.transaction():
            return _fact(self._insert(block, item))

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
    ) -> Fact:
        """Change a fact's text, block, category and/or creation time (its ``active`` flag is
        untouched). ``created_at`` is what the retention policy measures age against; changing
        it is a versioned change like any other (the verifier backdates episodes with it)."""
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
            return _fact(
                self._put(old, text=text, block=block, category=category, created_at=created_at)
            )

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
