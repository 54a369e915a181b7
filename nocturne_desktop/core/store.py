"""The memory store: one SQLite file, the only door to facts, versions and the audit log.

Layout and why
==============
Live state and history are kept in two tables:

``items``
    One row per fact, always its *current* value, plus ``from_seq``: the version number from
    which this value is valid. Everything that reads the live memory (the chat prompt, the
    passes, the block tree, FTS5 retrieval) reads this plain table, with no range predicate and
    no duplicated text.
``item_history``
    Every *earlier* value of a fact, closed: valid for versions ``[from_seq, to_seq)``.

A fact's versions therefore tile the version line without gaps: its history rows, then its live
row from ``items.from_seq`` onwards. Version numbers (``seq``) are handed out by
:meth:`Store.snapshot`. Let ``S`` be the latest snapshot's seq (0 before the first) and
``P = S + 1`` the *pending* version. A change to a fact whose live row has ``from_seq < P``
copies that row into ``item_history`` with ``to_seq = P`` and updates the live row with
``from_seq = P``; if the live row already has ``from_seq = P`` (no snapshot has seen it yet) it is
simply updated in place. So:

* ``snapshot()`` writes one row in ``snapshots`` (the active count comes from a partial index)
  - it copies nothing;
* the state at version ``v`` is the history rows with ``from_seq <= v < to_seq`` plus the live
  rows with ``from_seq <= v``;
* the facts that changed between ``a < b`` are exactly those with a value *starting* in
  ``(a, b]``; their value at ``a`` is the history row ending in ``(a, b]`` that started at or
  before ``a``, their value at ``b`` the row starting in ``(a, b]`` that is still valid at ``b``.
  Indexes on both ends of the ranges make :meth:`Store.diff` and :meth:`Store.restore`
  proportional to the number of changed facts, not to the size of the store or its history;
* ``restore(v)`` rewrites only the live rows whose value started after ``v``, then snapshots.

Keeping the live table separate (rather than one range table with an "open" sentinel) costs one
extra row copy per change, and buys cheap live reads plus a stable integer key for an FTS5
index (``items_fts``, rowid = the ``n`` of ``m_<n>``). The FTS index holds active facts only and
is maintained by this module in the same transaction as each write; if the SQLite build lacks
FTS5, :meth:`Store.search` falls back to a LIKE-based count of matching words (and
:attr:`Store.fts_enabled` says so).

Search folds inflections. The index holds each fact's words already folded by the text
measures' :func:`textmath.stem_token` (lowercase, possessive and plural stripped: ``Lisbon's``
→ ``lisbon``), and FTS5's Porter tokenizer folds the verb and noun endings on top
(``painted``/``painting`` → ``paint``); the query goes through the same two steps, so anything
the measures call the same word, search does too. Ranking is BM25 times one plus explicable
boosts (:data:`SEARCH_BLOCK_BOOST`, :data:`SEARCH_RECENCY_BOOST`; see :meth:`Store.search_scored`).
Schema 2 re-indexes an older store's facts this way when it is first opened.

Rules kept here
===============
* Ids are ``m_<n>`` from a counter in the ``counters`` table (internal; ``meta`` holds the
  callers' keys such as ``extracted_through``); they are never reused. Facts are never
  deleted: forgetting flips ``active``. A restore is itself a new version.
* A superseded fact (a correction replaced it, S-REC-2) is inactive with ``valid_until`` (the
  successor's ``created_at``) and ``superseded_by`` (its num) set, in the live row and in every
  history row, so diff, restore and undo carry the interval exactly (schema 3).
* Fact text: not empty or whitespace-only, no NUL byte, valid Unicode, at most
  :data:`MAX_TEXT_CHARS` (4000) characters - long enough for any merged fact, short enough that a
  pasted document cannot become a "fact". Text is stored exactly as given (no normalisation).
* One SQLite connection per :class:`Store`, bound to the thread that created it; other threads
  open their own ``Store`` on the same path (WAL lets readers and one writer work together).
  A write that cannot get the lock within ``busy_timeout`` raises :class:`DatabaseLocked`.
* A file that is not SQLite (or is damaged) raises :class:`CorruptDatabase` and is never written;
  a file whose ``user_version`` is newer than :data:`SCHEMA_VERSION` raises
  :class:`SchemaTooNew` after a read-only look, and is never altered.
* Nothing but SQLite touches the database file: the look before opening goes through a
  read-only SQLite connection, never Python's ``open()``. Closing *any* descriptor of the file
  drops every POSIX lock the process holds on it (SQLite's "How To Corrupt" list, first
  hazard), so another process would think itself the last connection, checkpoint and delete
  the WAL under this process's open connections. SQLite's own VFS shares one lock state per
  file across the connections of a process and defers such closes.
* Storage errors are classified by their SQLite result code (:mod:`.sqlerrors`): locked, full,
  read-only, I/O, corrupt, not a database each raise a typed :class:`StoreError` saying what to
  do; anything else is logged with its traceback as a bug.
* One sleep at a time per store, across processes: :meth:`Store.begin_sleep` takes an OS lock
  on ``<db>.sleep-lock`` (:mod:`.sleeplock`) and holds it until :meth:`Store.finish_sleep` or
  :meth:`Store.close`; a second sleep raises :class:`SleepAlreadyRunning`.
* Every committed write transaction leaves a :class:`~nocturne_desktop.core.types.StoreChanges`
  (fact ids added / changed / deactivated, versions, sleeps, turns, audit rows, meta keys) in
  :attr:`Store.last_changes` and hands it to :meth:`Store.subscribe` listeners, so a view can
  follow by id instead of re-reading; a rolled-back transaction or savepoint reports nothing.
  What a mutation does to the facts is defined once, in :mod:`nocturne_desktop.core.mutations`.
* ``synchronous=NORMAL`` with WAL: a crash of the application never loses a committed
  transaction; a power cut may lose the last few, never corrupts.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from nocturne_desktop.core import mutations, sqlerrors
from nocturne_desktop.core import textmath as tm
from nocturne_desktop.core.errors import (
    InvalidInput,
    SchemaTooNew,
    SleepAlreadyRunning,
    StoreError,
    UnknownVersion,
)
from nocturne_desktop.core.limits import MAX_TEXT_CHARS, MAX_TURN_CHARS, text_problem
from nocturne_desktop.core.policy import DEFAULT_IMPORTANCE, check_importance, decayed, reinforce
from nocturne_desktop.core.sleeplock import SleepLock
from nocturne_desktop.core.types import (
    BLOCKS,
    CATEGORIES,
    BlockInfo,
    Conversation,
    Diff,
    DiffEntry,
    Fact,
    FactDraft,
    Mutation,
    MutationRow,
    SleepRecord,
    StoreChanges,
    Strength,
    Turn,
    Version,
)

__all__ = [
    "APPLY_KINDS",
    "MAX_TEXT_CHARS",
    "MAX_TURN_CHARS",
    "SCHEMA_VERSION",
    "SEARCH_BLOCK_BOOST",
    "SEARCH_RECENCY_BOOST",
    "SEARCH_RECENCY_DAYS",
    "SEARCH_SALIENCE_BOOST",
    "FoundFact",
    "SearchHit",
    "Store",
    "UndoStep",
    "fts5_available",
]

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a write waits for another connection's lock before :class:`DatabaseLocked`."""

APPLY_KINDS: tuple[str, ...] = ("drop", "merge", "promote", "forget", "supersede")
"""Mutation kinds :meth:`Store.apply` knows how to apply."""

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
_IN_CHUNK = 500
"""Candidates looked up per statement (well under SQLite's bound on variables)."""
_FTS_DEFINITION = (
    "CREATE VIRTUAL TABLE items_fts USING fts5(stems, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
_PAST_FTS_DEFINITION = (
    "CREATE VIRTUAL TABLE past_fts USING fts5(stems, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
"""The inactive facts' index (forgotten and superseded), folded as ``items_fts``: what
:meth:`Store.search_all` finds beyond the active facts. A fact is in exactly one of the two."""


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


ROLES: tuple[str, ...] = ("user", "assistant", "system")
SLEEP_STATUSES: tuple[str, ...] = ("running", "done", "cancelled", "error", "interrupted")
"""``interrupted`` is set by the store only: a sleep still ``running`` when a new one begins
(its process was killed or crashed; its completed passes stay, at a pass boundary)."""
_INTERRUPTED_NOTE = (
    "the process running this sleep ended before it finished (a crash, a kill or a power cut); "
    "the passes it completed stay applied and the store is at the last completed pass"
)

_ITEM_ID = re.compile(r"m_([1-9][0-9]*)")
_VERSION_ID = re.compile(r"s([0-9]+)")
_WORD = re.compile(r"\w+")
_MAX_QUERY_TERMS = 32

# Each migration is a list of single statements (never executescript: it would COMMIT the
# surrounding transaction). Migration i brings user_version from i to i + 1.
_MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE blocks(
            name TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE
        )""",
        """CREATE TABLE items(
            num INTEGER PRIMARY KEY,
            block TEXT NOT NULL REFERENCES blocks(name),
            text TEXT NOT NULL,
            category TEXT NOT NULL,
            source_turn INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            active INTEGER NOT NULL CHECK (active IN (0, 1)),
            from_seq INTEGER NOT NULL
        )""",
        "CREATE INDEX items_block ON items(block, num)",
        "CREATE INDEX items_from ON items(from_seq, active)",
        "CREATE INDEX items_active ON items(num) WHERE active = 1",
        """CREATE TABLE item_history(
            id INTEGER PRIMARY KEY,
            num INTEGER NOT NULL REFERENCES items(num),
            from_seq INTEGER NOT NULL,
            to_seq INTEGER NOT NULL,
            block TEXT NOT NULL,
            text TEXT NOT NULL,
            category TEXT NOT NULL,
            source_turn INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            active INTEGER NOT NULL,
            UNIQUE (num, from_seq),
            CHECK (from_seq < to_seq)
        )""",
        "CREATE INDEX item_history_to ON item_history(to_seq, from_seq, active)",
        "CREATE INDEX item_history_from ON item_history(from_seq, to_seq)",
        """CREATE TABLE sleeps(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at REAL NOT NULL,
            finished_at REAL,
            dry_run INTEGER NOT NULL,
            status TEXT NOT NULL,
            policy TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE snapshots(
            seq INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            created_at REAL NOT NULL,
            active_count INTEGER NOT NULL,
            sleep_id INTEGER REFERENCES sleeps(id)
        )""",
        """CREATE TABLE mutations(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            seq INTEGER,
            sleep_id INTEGER REFERENCES sleeps(id),
            pass_name TEXT NOT NULL,
            kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            accepted INTEGER NOT NULL,
            reason TEXT NOT NULL,
            rejection_reason TEXT,
            policy TEXT,
            decided_by TEXT NOT NULL,
            refs TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX mutations_seq ON mutations(seq)",
        "CREATE INDEX mutations_item ON mutations(item_id)",
        "CREATE INDEX mutations_sleep ON mutations(sleep_id)",
        """CREATE TABLE turns(
            n INTEGER PRIMARY KEY,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO counters(name, value) VALUES ('next_item', 1)",
        "INSERT INTO counters(name, value) VALUES ('fts_synced', 0)",
    ],
    # 2: the FTS index holds stemmed words (_sync_fts rebuilds it on open); newest-first reads.
    [
        "UPDATE counters SET value = 0 WHERE name = 'fts_synced'",
        "CREATE INDEX items_recent ON items(updated_at, num) WHERE active = 1",
    ],
    # 3: validity intervals (S-REC-2): a superseded fact keeps when it stopped being true and
    # which fact replaced it, in its live row and in every history row.
    [
        "ALTER TABLE items ADD COLUMN valid_until REAL",
        "ALTER TABLE items ADD COLUMN superseded_by INTEGER",
        "ALTER TABLE item_history ADD COLUMN valid_until REAL",
        "ALTER TABLE item_history ADD COLUMN superseded_by INTEGER",
        "CREATE INDEX IF NOT EXISTS items_superseded ON items(valid_until, num) "
        "WHERE superseded_by IS NOT NULL",
    ],
    # 4: hand edits: pins (a versioned column of a fact's value) and conversations (turns belong
    # to one; turn numbers stay global, so source_turn and the encoder cursor span conversations).
    # Each statement is a no-op on a store whose version number was set back by hand.
    [
        "ALTER TABLE items ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1))",
        "ALTER TABLE item_history ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
        """CREATE TABLE IF NOT EXISTS conversations(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at REAL NOT NULL
        )""",
        "ALTER TABLE turns ADD COLUMN conversation INTEGER REFERENCES conversations(id)",
        "INSERT OR IGNORE INTO conversations(id, created_at) SELECT 1, min(created_at) FROM turns "
        "WHERE conversation IS NULL HAVING count(*) > 0",
        "UPDATE turns SET conversation = 1 WHERE conversation IS NULL",
        "CREATE INDEX IF NOT EXISTS turns_conversation ON turns(conversation, n)",
    ],
    # 5: what salience knows beyond the fact's value - the encoder's importance and the fact's
    # recalls (S-RET-2). Not versioned: a recall is not an edit, undo does not take it back.
    [
        """CREATE TABLE strengths(
            num INTEGER PRIMARY KEY REFERENCES items(num),
            importance INTEGER CHECK (importance IS NULL OR importance BETWEEN 1 AND 5),
            uses INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0),
            strength REAL NOT NULL DEFAULT 0 CHECK (strength >= 0),
            last_used_at REAL
        )""",
    ],
]

SCHEMA_VERSION = len(_MIGRATIONS)
"""The ``PRAGMA user_version`` this code writes."""

_FACT_COLS = (
    "num, block, text, category, source_turn, created_at, updated_at, active, valid_until, "
    "superseded_by, pinned"
)
_N_FACT_COLS = len(_FACT_COLS.split(","))
"""How many columns a fact row has (the positional readers' offset for what follows)."""
_LIVE_COLS = _FACT_COLS + ", from_seq"


class _Live(NamedTuple):
    """A row of ``items``."""

    num: int
    block: str
    text: str
    category: str
    source_turn: int | None
    created_at: float
    updated_at: float
    active: int
    valid_until: float | None
    superseded_by: int | None
    pinned: int
    from_seq: int


_KEEP: Any = object()
"""``_put``: leave this field as it is."""


_ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def _has_column(c: sqlite3.Connection, statement: str) -> bool:
    """Whether ``statement`` adds a column the table already has (a store whose version number
    was set back by hand: its migration is then a no-op, never an error)."""
    m = _ADD_COLUMN.match(statement)
    if m is None:
        return False
    table, column = m.groups()
    return any(row[1] == column for row in c.execute(f"PRAGMA table_info({table})"))


def fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite build has the FTS5 module."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.nocturne_fts_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.nocturne_fts_probe")
    except sqlite3.OperationalError:
        return False
    return True


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


def _fact(row: Sequence[Any]) -> Fact:
    # positional on purpose: state_at / diff build up to one Fact per stored fact
    return Fact(f"m_{row[0]}", row[1], row[2], row[3], row[4], row[5], row[6], row[7] == 1,
                row[10] == 1, row[8], None if row[9] is None else f"m_{row[9]}")


def _validity_of(value: Mapping[str, Any]) -> dict[str, Any]:
    """``_put``'s validity arguments from a hand change's recorded value before it (a value
    recorded without them leaves the fact's interval to ``_put``)."""
    out: dict[str, Any] = {}
    if "validUntil" in value:
        until = value["validUntil"]
        out["valid_until"] = float(until) if isinstance(until, int | float) else None
    if "supersededBy" in value:
        by = value["supersededBy"]
        out["superseded_by"] = _num(by) if isinstance(by, str) else None
    return out


def _num(item_id: object) -> int:
    if not isinstance(item_id, str):
        raise InvalidInput(f"item id must be a string like 'm_17', not {item_id!r}")
    m = _ITEM_ID.fullmatch(item_id)
    if m is None:
        raise InvalidInput(f"unknown item id {item_id!r}; ids look like 'm_17'")
    return int(m.group(1))


def _check_text(text: object, *, what: str = "text") -> str:
    """The limits live in :mod:`core.limits`, where the gates check the same ones."""
    problem = text_problem(text, what=what)
    if problem is not None:
        raise InvalidInput(problem)
    assert isinstance(text, str)
    return text


def _text_of(text: object, what: str) -> str:
    return _check_text(text, what=what)


def _check_unicode(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} is not valid Unicode (a lone surrogate at position {exc.start})"
        ) from None


def _check_importance(value: object) -> int | None:
    try:
        return check_importance(value)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def _check_block(block: object) -> str:
    if not isinstance(block, str) or block not in BLOCKS:
        raise InvalidInput(f"unknown block {block!r}; expected one of {', '.join(BLOCKS)}")
    return block


def _check_category(category: object) -> str:
    if not isinstance(category, str) or category not in CATEGORIES:
        raise InvalidInput(
            f"unknown category {category!r}; expected one of {', '.join(CATEGORIES)}"
        )
    return category


def _to_json(value: object, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} is not JSON-serialisable: {exc}") from None


class _Delta:
    """What the open write transaction has changed so far; frozen into a :class:`StoreChanges`
    when it commits."""

    __slots__ = ("inserted", "meta", "mutations", "sleeps", "strengths", "touched", "turns",
                 "versions")

    def __init__(self) -> None:
        self.inserted: set[int] = set()
        self.strengths: set[int] = set()
        self.touched: dict[int, tuple[bool, bool]] = {}
        """num → (active before the transaction, active now)."""
        self.versions: list[int] = []
        self.sleeps: list[int] = []
        self.turns: list[int] = []
        self.mutations: list[int] = []
        self.meta: set[str] = set()

    def copy(self) -> _Delta:
        d = _Delta()
        d.inserted, d.touched, d.meta = set(self.inserted), dict(self.touched), set(self.meta)
        d.strengths = set(self.strengths)
        d.versions, d.sleeps = list(self.versions), list(self.sleeps)
        d.turns, d.mutations = list(self.turns), list(self.mutations)
        return d

    def fact(self, num: int, *, was_active: bool, active: bool) -> None:
        first = self.touched.get(num, (was_active, active))[0]
        self.touched[num] = (first, active)

    def freeze(self) -> StoreChanges:
        changed: list[int] = []
        deactivated: list[int] = []
        for num, (was, now) in self.touched.items():
            if num in self.inserted:
                continue
            (deactivated if was and not now else changed).append(num)

        def ids(nums: Iterable[int]) -> tuple[str, ...]:
            return tuple(f"m_{n}" for n in sorted(nums))

        return StoreChanges(
            added=ids(self.inserted), changed=ids(changed), deactivated=ids(deactivated),
            versions=tuple(self.versions), sleeps=tuple(dict.fromkeys(self.sleeps)),
            turns=tuple(self.turns), mutations=tuple(self.mutations), meta=tuple(sorted(self.meta)),
            strengths=ids(self.strengths - self.inserted),
        )


CONVERSATION_KEY = "conversation"
"""Meta key: the id of the current conversation."""
TITLE_CHARS = 60
"""A conversation's title: at most this many characters of its first user message."""


def _title(first: str | None) -> str:
    if not first:
        return ""
    line = " ".join(first.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


class UndoStep(NamedTuple):
    """A change :meth:`Store.undo` or :meth:`Store.redo` would act on: versions ``first`` ..
    ``last`` (a sleep's versions, or one), ``name`` in words (``sleep 3``, ``edit m_4``), and
    the facts it wrote."""

    first: int
    last: int
    name: str
    sleep_id: int | None
    ids: tuple[str, ...]


class _Step(NamedTuple):
    first: int
    last: int
    name: str
    sleep_id: int | None
    rows: tuple[MutationRow, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for r in self.rows:
            change = _typed(r.mutation)
            if change is None:
                continue
            if isinstance(change, mutations.Restore | mutations.Undo):
                named: Iterable[str] = change.changed_ids
            else:
                named = (change.item_id, *mutations.touched(change))
            out.update((i, None) for i in named if _ITEM_ID.fullmatch(i))
        return tuple(sorted(out, key=_num))

    def public(self) -> UndoStep:
        return UndoStep(self.first, self.last, self.name, self.sleep_id, self.ids)


def _typed(m: Mutation) -> mutations.Change | None:
    try:
        return mutations.from_row(m)
    except InvalidInput:
        return None


def _before_of(m: Mutation, item_id: str) -> dict[str, Any] | None:
    """The value a hand change's row recorded for ``item_id`` just before it (else None)."""
    before = m.refs.get("before") if isinstance(m.refs, dict) else None
    return before if m.item_id == item_id and isinstance(before, dict) else None


class Store:
    """The memory store. See the module docstring for the layout and its guarantees.

    One ``Store`` owns one SQLite connection and may only be used from the thread that created
    it; every other thread opens its own ``Store`` on the same path.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._busy_timeout = float(busy_timeout)
        self._owner = threading.get_ident()
        self._depth = 0
        self._pending: int | None = None
        self._closed = False
        self._sleep_lock = SleepLock(self.path)
        self._my_sleeps: set[int] = set()
        """Sleeps this Store began and has not finished (it holds the sleep lock for them)."""
        self._delta = _Delta()
        self._saved: list[_Delta] = []
        """The delta at each open savepoint, restored when it rolls back."""
        self._listeners: list[Callable[[StoreChanges], None]] = []
        self.last_changes = StoreChanges()
        """What the last write transaction committed on this ``Store`` changed (every write
        method - append, update, forget, apply, commit_pass, restore, snapshot, add_turn,
        set_meta, the sleep records - leaves its descriptor here)."""
        self.fts_enabled = False
        """False when this SQLite build lacks FTS5: :meth:`search` then ranks with LIKE."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise sqlerrors.classify_os(exc, self.path) from exc
        self._inspect_existing()
        try:
            self._conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,
                check_same_thread=True,
            )
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        try:
            self._setup()
        except BaseException:
            self._conn.close()
            self._closed = True
            raise

    # ------------------------------------------------------------------ opening

    def _inspect_existing(self) -> None:
        """Refuse a file that is not SQLite, is damaged, or is newer - touching nothing.

        The look goes through a read-only SQLite connection only (a file that is not a database
        fails with SQLITE_NOTADB): never ``open()`` the file from Python, see the module notes.
        """
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise sqlerrors.classify_os(exc, self.path) from exc
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a memory database file")
        if st.st_size == 0:
            return  # an empty file is an empty SQLite database
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            probe = sqlite3.connect(uri, uri=True, timeout=self._busy_timeout)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        try:
            (version,) = probe.execute("PRAGMA user_version").fetchone()
            (n_objects,) = probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        finally:
            probe.close()
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(self._too_new_message(version))
        if version == 0 and n_objects:
            raise StoreError(
                f"{self.path} is a SQLite database of another program (it has tables but no "
                "Nocturne schema); it was left untouched. Choose another data folder."
            )

    def _too_new_message(self, version: int) -> str:
        return (
            f"{self.path} was written by a newer Nocturne (schema {version}; this version "
            f"understands up to {SCHEMA_VERSION}). It was not changed. Update Nocturne to "
            "open it."
        )

    def _setup(self) -> None:
        c = self._conn
        try:
            c.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            c.execute("PRAGMA foreign_keys = ON")
            mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"could not switch {self.path} to WAL mode (got {mode!r})")
            c.execute("PRAGMA synchronous = NORMAL")
            self.fts_enabled = fts5_available(c)
            if not self._needs_setup():
                return  # the common case: no write lock taken just to open
            with self.transaction():
                (version,) = c.execute("PRAGMA user_version").fetchone()
                if version > SCHEMA_VERSION:
                    raise SchemaTooNew(self._too_new_message(version))
                for step in range(version, SCHEMA_VERSION):
                    for statement in _MIGRATIONS[step]:
                        if not _has_column(c, statement):
                            c.execute(statement)
                    if step == 0:
                        c.executemany(
                            "INSERT INTO blocks(name, position) VALUES (?, ?)",
                            [(name, i) for i, name in enumerate(BLOCKS)],
                        )
                if version != SCHEMA_VERSION:
                    c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._sync_fts()
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _needs_setup(self) -> bool:
        """Whether opening must write: a migration to run or an FTS index to (re)build."""
        c = self._conn
        (version,) = c.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(self._too_new_message(version))
        if version != SCHEMA_VERSION:
            return True
        synced = c.execute("SELECT value FROM counters WHERE name = 'fts_synced'").fetchone()[0]
        if not self.fts_enabled:
            return bool(synced)
        rows = dict(c.execute(
            "SELECT name, sql FROM sqlite_master WHERE name IN ('items_fts', 'past_fts')"
        ).fetchall())
        return not (synced and rows.get("items_fts") == _FTS_DEFINITION
                    and rows.get("past_fts") == _PAST_FTS_DEFINITION)

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

    def _translate(self, exc: sqlite3.Error) -> Exception:
        return sqlerrors.classify(exc, self.path, self._busy_timeout)

    # ------------------------------------------------------------------ plumbing

    @property
    def _db(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the store on {self.path} is closed")
        if threading.get_ident() != self._owner:
            raise StoreError(
                "this Store belongs to the thread that opened it; open another Store on "
                f"{self.path} in this thread (one connection per thread)"
            )
        return self._conn

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def close(self) -> None:
        if self._closed:
            return
        if threading.get_ident() != self._owner:
            raise StoreError("close this Store from the thread that opened it")
        self._closed = True
        self._my_sleeps.clear()
        self._sleep_lock.release()
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` if the body raises.

        Nested uses become savepoints: an exception inside rolls back only the inner part
        (unless it propagates further, as it does by default).
        """
        c = self._db
        depth = self._depth
        name = f"nocturne_sp{depth}"
        with self._errors():
            if depth == 0:
                c.execute("BEGIN IMMEDIATE")
                self._pending = None
                self._delta = _Delta()
            else:
                c.execute(f"SAVEPOINT {name}")
                self._saved.append(self._delta.copy())
        self._depth = depth + 1
        try:
            yield
        except BaseException as exc:
            self._depth = depth
            self._pending = None
            self._delta = self._saved.pop() if depth else _Delta()
            self._rollback(c, depth, name)  # never masks exc: the first error is the true one
            if isinstance(exc, sqlite3.Error):
                raise self._translate(exc) from exc
            raise
        else:
            self._depth = depth
            if depth == 0:
                try:
                    c.execute("COMMIT")
                except sqlite3.Error as exc:
                    # A failed COMMIT (disk full, I/O) may already have rolled back: a ROLLBACK
                    # now would fail with "no transaction is active" and hide the real reason.
                    self._delta = _Delta()
                    self._rollback(c, 0, name)
                    raise self._translate(exc) from exc
                finally:
                    self._pending = None
            else:
                self._saved.pop()
                with self._errors():
                    c.execute(f"RELEASE {name}")
            if depth == 0:
                self._publish()

    # ------------------------------------------------------------------ change descriptors

    def subscribe(self, listener: Callable[[StoreChanges], None]) -> Callable[[], None]:
        """Call ``listener`` with the :class:`StoreChanges` of every write transaction this
        ``Store`` commits that changed anything (on this thread, right after the commit; an
        exception it raises reaches the writer, whose write is committed). Returns a function
        that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def _publish(self) -> None:
        changes, self._delta = self._delta.freeze(), _Delta()
        self.last_changes = changes
        if changes:
            for listener in list(self._listeners):
                listener(changes)

    def _rollback(self, c: sqlite3.Connection, depth: int, name: str) -> None:
        """Undo the transaction (depth 0) or the savepoint ``name``, if SQLite has not already;
        a failure here is logged, never raised (the caller raises the error that caused it)."""
        try:
            if depth == 0:
                if c.in_transaction:
                    c.execute("ROLLBACK")
            elif c.in_transaction:
                c.execute(f"ROLLBACK TO {name}")
                c.execute(f"RELEASE {name}")
        except sqlite3.Error as exc:
            sqlerrors.log.warning("rollback on %s failed (%s); SQLite keeps the last committed "
                                  "state", self.path, exc)

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read: several statements see one committed state."""
        c = self._db
        with self._errors():
            if self._depth:
                yield c
                return
            c.execute("BEGIN")
            try:
                yield c
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    if c.in_transaction:
                        c.execute("ROLLBACK")
                raise
            c.execute("COMMIT")

    def _pending_seq(self) -> int:
        """``S + 1``: the seq the next snapshot will get (call inside a write transaction)."""
        if self._pending is None:
            row = self._conn.execute("SELECT coalesce(max(seq), 0) FROM snapshots").fetchone()
            self._pending = int(row[0]) + 1
        return self._pending

    def _live(self, num: int) -> _Live | None:
        row = self._conn.execute(f"SELECT {_LIVE_COLS} FROM items WHERE num = ?", (num,)).fetchone()
        return None if row is None else _Live(*row)

    def _require(self, item_id: str, *, active: bool = False, what: str = "") -> _Live:
        num = _num(item_id)
        live = self._live(num)
        prefix = f"{what}: " if what else ""
        if live is None:
            raise InvalidInput(f"{prefix}unknown item id {item_id!r}")
        if active and not live.active:
            raise InvalidInput(f"{prefix}{item_id} is not active (it was forgotten)")
        return live

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
        c = self._conn
        p = self._pending_seq()
        if old.from_seq != p:
            c.execute(
                "INSERT INTO item_history(num, from_seq, to_seq, block, text, category, "
                "source_turn, created_at, updated_at, active, valid_until, superseded_by, "
                "pinned) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    old.num,
                    old.from_seq,
                    p,
                    old.block,
                    old.text,
                    old.category,
                    old.source_turn,
                    old.created_at,
                    old.updated_at,
                    old.active,
                    old.valid_until,
                    old.superseded_by,
                    old.pinned,
                ),
            )
        new = new._replace(from_seq=p)
        c.execute(
            "UPDATE items SET block = ?, text = ?, category = ?, updated_at = ?, active = ?, "
            "created_at = ?, valid_until = ?, superseded_by = ?, pinned = ?, from_seq = ? "
            "WHERE num = ?",
            (new.block, new.text, new.category, new.updated_at, new.active, new.created_at,
             new.valid_until, new.superseded_by, new.pinned, p, old.num),
        )
        if self.fts_enabled:
            text_changed = old.text != new.text
            if old.active and (not new.active or text_changed):
                c.execute("DELETE FROM items_fts WHERE rowid = ?", (old.num,))
            if new.active and (not old.active or text_changed):
                c.execute(
                    "INSERT INTO items_fts(rowid, stems) VALUES (?, ?)", (new.num, _stems(new.text))
                )
            if not old.active and (new.active or text_changed):
                c.execute("DELETE FROM past_fts WHERE rowid = ?", (old.num,))
            if not new.active and (old.active or text_changed):
                c.execute(
                    "INSERT INTO past_fts(rowid, stems) VALUES (?, ?)", (new.num, _stems(new.text))
                )
        return new

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
        return [_fact(r) for r in rows]

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

    # ------------------------------------------------------------------ the person's hands

    def _hand(self, change: mutations.Change, label: str) -> Version:
        """Apply one hand change (validated in full by ``mutations.apply`` first), log its audit
        row and snapshot it as a version of its own. Call inside a write transaction."""
        lives: dict[str, _Live] = {}

        def get(item_id: str) -> Fact | None:
            live = self._live(_num(item_id))
            if live is None:
                return None
            lives[item_id] = live
            return _fact(live)

        for new in mutations.apply(change, get, check_text=_text_of):
            self._put(lives[new.id], block=new.block, text=new.text, category=new.category,
                      active=new.active, pinned=new.pinned)
        self._record([mutations.to_row(change)], seq=self._pending_seq(), sleep_id=None)
        return self._snapshot(label, sleep_id=None)

    def edit(
        self,
        item_id: str,
        *,
        text: str | None = None,
        category: str | None = None,
        block: str | None = None,
    ) -> Version:
        """The person changes an active fact's text, category and/or block: one audited ``edit``
        decided by ``you``, a version of its own (labelled ``edit:m_3``). Bad input (empty or
        whitespace text, over :data:`MAX_TEXT_CHARS`, NUL, an unknown category or block, nothing
        that changes) raises :class:`InvalidInput` and writes nothing."""
        if text is not None:
            _check_text(text)
        if category is not None:
            _check_category(category)
        if block is not None:
            _check_block(block)
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what="edit"))
            change = mutations.Edit(
                target=fact.id, reason="edited by you", before=mutations.fact_value(fact),
                text=None if text in (None, fact.text) else text,
                category=None if category in (None, fact.category) else category,
                block=None if block in (None, fact.block) else block,
            )
            if change.text is None and change.category is None and change.block is None:
                raise InvalidInput(f"edit {fact.id}: nothing would change")
            return self._hand(change, f"edit:{fact.id}")

    def pin(self, item_id: str, pinned: bool = True) -> Version:
        """Pin an active fact (no rule or model may forget it) or unpin it: one audited ``pin``
        decided by ``you``, a version of its own (``pin:m_3`` / ``unpin:m_3``)."""
        if not isinstance(pinned, bool):
            raise InvalidInput(f"pinned must be True or False, not {pinned!r}")
        what = "pin" if pinned else "unpin"
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what=what))
            if fact.pinned == pinned:
                raise InvalidInput(f"{what} {fact.id}: it is already {'pinned' if pinned else 'not pinned'}")
            change = mutations.Pin(target=fact.id, pinned=pinned, before=mutations.fact_value(fact),
                                   reason=f"{what}ned by you")
            return self._hand(change, f"{what}:{fact.id}")

    def forget_now(self, item_id: str) -> Version:
        """The person forgets an active fact now, without a sleep: an audited ``forget`` decided
        by ``you`` (pass ``hand``), a version of its own. A pinned fact is refused: unpin it
        first."""
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what="forget"))
            change = mutations.Forget(
                pass_name=mutations.HAND_PASS, decided_by=mutations.DecidedBy.YOU, target=fact.id,
                reason="forgotten by you", text=fact.text,
                extra={"before": mutations.fact_value(fact)},
            )
            return self._hand(change, f"forget:{fact.id}")

    def bring_back(self, item_id: str) -> Version:
        """The person brings one forgotten fact back, as it last was: an audited ``bring-back``
        decided by ``you``, a version of its own."""
        with self.transaction():
            fact = _fact(self._require(item_id, what="bring back"))
            if fact.active:
                raise InvalidInput(f"bring back {fact.id}: it is not forgotten")
            change = mutations.BringBack(target=fact.id, reason="brought back by you",
                                         before=mutations.fact_value(fact))
            return self._hand(change, f"bring-back:{fact.id}")

    def add_fact(self, block: str, text: str, category: str = "context") -> tuple[Fact, Version]:
        """The person writes a new fact: an audited ``add`` decided by ``you`` (its source is the
        edit, not a turn), a version of its own. Bad input raises :class:`InvalidInput`."""
        _check_block(block)
        _check_text(text)
        _check_category(category)
        with self.transaction():
            live = self._insert(block, FactDraft(text, category))
            fact = _fact(live)
            row = mutations.Add(target=fact.id, text=text, block=block, category=category,
                                reason="written by you")
            self._record([mutations.to_row(row)], seq=self._pending_seq(), sleep_id=None)
            return fact, self._snapshot(f"add:{fact.id}", sleep_id=None)

    def _steps(self, c: sqlite3.Connection) -> tuple[list[_Step], list[_Step]]:
        """The undo and redo stacks, from the timeline: every change (a sleep's versions, or one
        hand edit, restore, undo or redo) in order; a change pushes on the undo stack and clears
        redo, an undo moves its change to the redo stack, a redo moves it back."""
        by_seq: dict[int, list[MutationRow]] = {}
        for row in self._mutation_rows(c, "accepted = 1 AND seq IS NOT NULL", ()):
            assert row.seq is not None
            by_seq.setdefault(row.seq, []).append(row)
        units: list[_Step] = []
        for seq, label, sleep_id in c.execute(
                "SELECT seq, label, sleep_id FROM snapshots ORDER BY seq").fetchall():
            rows = tuple(by_seq.get(seq, ()))
            if sleep_id is not None and units and units[-1].sleep_id == sleep_id:
                units[-1] = units[-1]._replace(last=seq, rows=units[-1].rows + rows)
            else:
                name = f"sleep {sleep_id}" if sleep_id is not None else label.replace(":", " ", 1)
                units.append(_Step(seq, seq, name, sleep_id, rows))
        undo: list[_Step] = []
        redo: list[_Step] = []
        for unit in units:
            marks = [ch for ch in (_typed(r.mutation) for r in unit.rows)
                     if isinstance(ch, mutations.Undo)]
            if marks:
                mark = marks[0]
                src, dst = (redo, undo) if isinstance(mark, mutations.Redo) else (undo, redo)
                if src and (src[-1].first, src[-1].last) == (mark.first, mark.last):
                    dst.append(src.pop())
                continue
            if unit.ids:
                undo.append(unit)
                redo.clear()
        return undo, redo

    def undo_step(self) -> UndoStep | None:
        """What :meth:`undo` would undo (None: nothing)."""
        with self._read() as c:
            undo, _ = self._steps(c)
        return undo[-1].public() if undo else None

    def redo_step(self) -> UndoStep | None:
        """What :meth:`redo` would make again (None: nothing)."""
        with self._read() as c:
            _, redo = self._steps(c)
        return redo[-1].public() if redo else None

    def undo(self) -> Version:
        """Undo the last change, whoever made it (a hand edit, a sleep, a restore): every fact it
        wrote goes back to its value before it, as a new version (``undo:sleep 3``); facts it did
        not write (new ones from chat) stay. :class:`InvalidInput` if there is nothing to undo."""
        with self.transaction():
            undo, _ = self._steps(self._conn)
            if not undo:
                raise InvalidInput("nothing to undo")
            step = undo[-1]
            self._refuse_running(step, "undo")
            targets: dict[int, Fact | dict[str, Any] | None] = {}
            base = step.first if step.sleep_id is not None else step.first - 1
            for item_id in step.ids:
                num = _num(item_id)
                before = next((b for b in (_before_of(r.mutation, item_id) for r in step.rows)
                               if b is not None), None)
                if before is not None and step.sleep_id is None:
                    targets[num] = before
                    continue
                targets[num] = self._fact_at(self._conn, num, base) if base > 0 else None
                if targets[num] is None and not any(
                        r.mutation.kind == mutations.Kind.ADD and r.mutation.item_id == item_id
                        for r in step.rows):
                    del targets[num]  # its value before is not recorded anywhere: leave it
            return self._rewind(step, targets, mutations.Undo)

    def redo(self) -> Version:
        """Make the last undone change again (each fact it wrote set to its value right after
        it), as a new version (``redo:sleep 3``). :class:`InvalidInput` if there is nothing."""
        with self.transaction():
            _, redo = self._steps(self._conn)
            if not redo:
                raise InvalidInput("nothing to redo")
            step = redo[-1]
            self._refuse_running(step, "redo")
            targets: dict[int, Fact | dict[str, Any] | None] = {}
            for item_id in step.ids:
                num = _num(item_id)
                value = self._fact_at(self._conn, num, step.last)
                if value is not None:
                    targets[num] = value
            return self._rewind(step, targets, mutations.Redo)

    def _refuse_running(self, step: _Step, verb: str) -> None:
        if step.sleep_id is None:
            return
        row = self._conn.execute("SELECT status FROM sleeps WHERE id = ?", (step.sleep_id,)).fetchone()
        if row is not None and row[0] == "running":
            raise InvalidInput(f"sleep {step.sleep_id} is still running; {verb} it when it has ended")

    def _rewind(
        self, step: _Step, targets: dict[int, Fact | dict[str, Any] | None],
        kind: type[mutations.Undo],
    ) -> Version:
        changed: list[str] = []
        for num in sorted(targets):
            live = self._live(num)
            if live is None:
                continue
            want = targets[num]
            if want is None:  # created by the change: it did not exist before
                new = self._put(live, active=False, pinned=False)
            elif isinstance(want, Fact):
                new = self._put(live, block=want.block, text=want.text, category=want.category,
                                active=want.active, pinned=want.pinned, updated_at=want.updated_at,
                                valid_until=want.valid_until,
                                superseded_by=None if want.superseded_by is None
                                else _num(want.superseded_by))
            else:
                upd = want.get("updatedAt")
                new = self._put(
                    live, block=_check_block(want.get("block", live.block)),
                    text=_check_text(want.get("text", live.text)),
                    category=_check_category(want.get("category", live.category)),
                    active=bool(want.get("active", live.active)),
                    pinned=bool(want.get("pinned", live.pinned)),
                    updated_at=float(upd) if isinstance(upd, int | float) else None,
                    **_validity_of(want))
            if new != live:
                changed.append(f"m_{num}")
        verb = "undo" if kind is mutations.Undo else "redo"
        row = kind(first=step.first, last=step.last, undone=step.name, changed_ids=tuple(changed),
                   reason=f"{verb} {step.name}")
        self._record([mutations.to_row(row)], seq=self._pending_seq(), sleep_id=None)
        return self._snapshot(f"{verb}:{step.name}", sleep_id=None)

    def apply(self, mutation: Mutation) -> None:
        """Apply one accepted mutation (drop, merge, promote, forget) to the live store."""
        with self.transaction():
            self._apply(mutation)

    def _apply(self, m: Mutation) -> None:
        if not isinstance(m, Mutation):
            raise InvalidInput(f"expected a Mutation, not {type(m).__name__}")
        if not m.accepted:
            raise InvalidInput(f"{m.kind} {m.item_id}: a refused mutation cannot be applied")
        if m.kind not in APPLY_KINDS:
            raise InvalidInput(
                f"unknown mutation kind {m.kind!r}; apply knows {', '.join(APPLY_KINDS)}"
            )
        lives: dict[str, _Live] = {}

        def get(item_id: str) -> Fact | None:
            live = self._live(_num(item_id))
            if live is None:
                return None
            lives[item_id] = live
            return _fact(live)

        # validated in full before anything is written: a bad source leaves the target as it was
        for new in mutations.apply(mutations.from_row(m), get, check_text=_text_of):
            self._put(lives[new.id], block=new.block, text=new.text, category=new.category,
                      active=new.active, pinned=new.pinned, valid_until=new.valid_until,
                      superseded_by=None if new.superseded_by is None
                      else _num(new.superseded_by))

    def record_mutations(
        self, mutations: Sequence[Mutation], *, seq: int | None, sleep_id: int | None
    ) -> list[int]:
        """Write audit rows (accepted and refused) and return their ids. Applies nothing."""
        with self.transaction():
            return self._record(mutations, seq=seq, sleep_id=sleep_id)

    def _record(
        self, mutations: Sequence[Mutation], *, seq: int | None, sleep_id: int | None
    ) -> list[int]:
        if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 1):
            raise InvalidInput(f"seq must be a version number >= 1 or None, not {seq!r}")
        rows = []
        now = self._clock()
        for m in mutations:
            if not isinstance(m, Mutation):
                raise InvalidInput(f"expected a Mutation, not {type(m).__name__}")
            for name, value in (
                ("pass_name", m.pass_name),
                ("kind", m.kind),
                ("decided_by", m.decided_by),
            ):
                if not isinstance(value, str) or not value.strip():
                    raise InvalidInput(f"mutation {name} is empty")
            if not isinstance(m.item_id, str):
                raise InvalidInput(f"mutation item_id must be a string, not {m.item_id!r}")
            rows.append(
                (
                    seq,
                    sleep_id,
                    m.pass_name,
                    m.kind,
                    m.item_id,
                    int(bool(m.accepted)),
                    m.reason or "",
                    m.rejection_reason,
                    m.policy,
                    m.decided_by,
                    _to_json(m.refs if m.refs is not None else {}, "mutation refs"),
                    now,
                )
            )
        c = self._conn
        if sleep_id is not None:
            self._require_sleep(sleep_id)
        ids: list[int] = []
        for r in rows:
            cur = c.execute(
                "INSERT INTO mutations(seq, sleep_id, pass_name, kind, item_id, accepted, reason, "
                "rejection_reason, policy, decided_by, refs, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                r,
            )
            assert cur.lastrowid is not None
            ids.append(cur.lastrowid)
        self._delta.mutations.extend(ids)
        return ids

    def commit_pass(
        self, mutations: Sequence[Mutation], *, label: str, sleep_id: int | None
    ) -> Version:
        """One transaction: apply accepted mutations in order, log all, snapshot ``label``."""
        with self.transaction():
            seq = self._pending_seq()
            for m in mutations:
                if isinstance(m, Mutation) and m.accepted:
                    self._apply(m)
            self._record(mutations, seq=seq, sleep_id=sleep_id)
            version = self._snapshot(label, sleep_id=sleep_id)
        return version

    # ------------------------------------------------------------------ versions

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
                for item in (change.item_id, *mutations.touched(change)):
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
                    info = dict(
                        pass_name=sm.pass_name,
                        policy=sm.policy,
                        reason=sm.reason,
                        decided_by=sm.decided_by,
                    )
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

    # ------------------------------------------------------------------ audit log

    def _mutation_rows(
        self, c: sqlite3.Connection, where: str, params: Iterable[Any], *, order: str = "id"
    ) -> list[MutationRow]:
        rows = c.execute(
            "SELECT id, seq, sleep_id, pass_name, kind, item_id, accepted, reason, "
            "rejection_reason, policy, decided_by, refs, created_at FROM mutations "
            f"WHERE {where} ORDER BY {order}",
            tuple(params),
        ).fetchall()
        out = []
        for r in rows:
            m = Mutation(
                pass_name=r[3],
                kind=r[4],
                item_id=r[5],
                accepted=bool(r[6]),
                reason=r[7],
                rejection_reason=r[8],
                policy=r[9],
                decided_by=r[10],
                refs=json.loads(r[11]),
            )
            out.append(MutationRow(id=r[0], mutation=m, seq=r[1], sleep_id=r[2], created_at=r[12]))
        return out

    def mutations(
        self,
        *,
        sleep_id: int | None = None,
        pass_name: str | None = None,
        accepted: bool | None = None,
        seq_range: tuple[int, int] | None = None,
        item_id: str | None = None,
    ) -> list[MutationRow]:
        """Audit rows, oldest first. ``seq_range=(lo, hi)`` means ``lo < seq <= hi``."""
        where = ["1"]
        params: list[Any] = []
        if sleep_id is not None:
            where.append("sleep_id = ?")
            params.append(sleep_id)
        if pass_name is not None:
            where.append("pass_name = ?")
            params.append(pass_name)
        if accepted is not None:
            where.append("accepted = ?")
            params.append(int(accepted))
        if seq_range is not None:
            lo, hi = seq_range
            where.append("seq > ? AND seq <= ?")
            params += [lo, hi]
        if item_id is not None:
            where.append("item_id = ?")
            params.append(item_id)
        with self._read() as c:
            return self._mutation_rows(c, " AND ".join(where), params)

    # ------------------------------------------------------------------ transcript & meta

    def add_turn(self, role: str, text: str, *, conversation: int | None = None) -> Turn:
        """Append a turn to ``conversation`` (default: the current one, started if there is
        none). Turn numbers count across conversations."""
        if role not in ROLES:
            raise InvalidInput(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if not isinstance(text, str):
            raise InvalidInput(f"turn text must be a string, not {type(text).__name__}")
        if "\x00" in text:
            raise InvalidInput("turn text contains a NUL byte")
        if len(text) > MAX_TURN_CHARS:
            raise InvalidInput(
                f"turn text is {len(text)} characters; the limit is {MAX_TURN_CHARS}"
            )
        _check_unicode(text, "turn text")
        with self.transaction():
            now = self._clock()
            if conversation is None:
                conv = (self._current_conversation(self._conn)
                        or self._start_conversation(current=False))
            else:
                conv = self._require_conversation(conversation)
            cur = self._conn.execute(
                "INSERT INTO turns(role, text, created_at, conversation) VALUES (?, ?, ?, ?)",
                (role, text, now, conv),
            )
            assert cur.lastrowid is not None
            n = cur.lastrowid
            self._delta.turns.append(n)
        return Turn(n, role, text, now, conv)

    def turns(self, *, after: int = 0, conversation: int | None = None) -> list[Turn]:
        """Turns after turn ``after``, oldest first: of every conversation, or of one."""
        where, params = "n > ?", [after]
        if conversation is not None:
            where += " AND conversation = ?"
            params.append(conversation)
        with self._read() as c:
            rows = c.execute(
                f"SELECT n, role, text, created_at, conversation FROM turns WHERE {where} "
                "ORDER BY n", params,
            ).fetchall()
        return [Turn(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows]

    # ------------------------------------------------------------------ conversations

    def _current_conversation(self, c: sqlite3.Connection) -> int | None:
        row = c.execute("SELECT value FROM meta WHERE key = ?", (CONVERSATION_KEY,)).fetchone()
        if row is not None and str(row[0]).isdigit() and c.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (int(row[0]),)).fetchone():
            return int(row[0])
        last = c.execute("SELECT max(id) FROM conversations").fetchone()[0]
        return None if last is None else int(last)

    def _start_conversation(self, *, current: bool = True) -> int:
        """A new conversation; ``current`` False when it is the only one (the newest is current
        unless the meta key names another)."""
        c = self._conn
        cur = c.execute("INSERT INTO conversations(created_at) VALUES (?)", (self._clock(),))
        assert cur.lastrowid is not None
        conv = int(cur.lastrowid)
        if current:
            self._set_current(conv)
        return conv

    def _set_current(self, conv: int) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (CONVERSATION_KEY, str(conv)))
        self._delta.meta.add(CONVERSATION_KEY)

    def _require_conversation(self, conv: object) -> int:
        if (not isinstance(conv, int) or isinstance(conv, bool) or not self._conn.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (conv,)).fetchone()):
            raise InvalidInput(f"unknown conversation {conv!r}")
        return conv

    def current_conversation(self) -> int | None:
        """The conversation new turns go to (None before the first turn)."""
        with self._read() as c:
            return self._current_conversation(c)

    def new_conversation(self) -> int:
        """Start a fresh transcript over the same memory and make it current. If the current
        conversation has no turn yet, it is the new one (no empty conversations pile up)."""
        with self.transaction():
            c = self._conn
            cur = self._current_conversation(c)
            if cur is not None and not c.execute(
                    "SELECT 1 FROM turns WHERE conversation = ? LIMIT 1", (cur,)).fetchone():
                self._set_current(cur)
                return cur
            return self._start_conversation()

    def open_conversation(self, conversation: int) -> None:
        """Make an earlier conversation current again, to continue it."""
        with self.transaction():
            self._set_current(self._require_conversation(conversation))

    def conversations(self) -> list[Conversation]:
        """Every conversation, newest first: title (the start of its first user message), the
        time it began and its last turn, and its number of turns."""
        with self._read() as c:
            rows = c.execute(
                "SELECT c.id, c.created_at, count(t.n), max(t.created_at), "
                "(SELECT text FROM turns f WHERE f.conversation = c.id AND f.role = 'user' "
                " ORDER BY f.n LIMIT 1) "
                "FROM conversations c LEFT JOIN turns t ON t.conversation = c.id "
                "GROUP BY c.id ORDER BY c.id DESC"
            ).fetchall()
        return [Conversation(int(r[0]), _title(r[4]), float(r[1]),
                             float(r[3]) if r[3] is not None else float(r[1]), int(r[2]))
                for r in rows]

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

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._read() as c:
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not key.strip():
            raise InvalidInput("meta key is empty")
        if not isinstance(value, str):
            raise InvalidInput(f"meta value must be a string, not {type(value).__name__}")
        if "\x00" in key or "\x00" in value:
            raise InvalidInput("meta key or value contains a NUL byte")
        with self.transaction():
            self._conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            self._delta.meta.add(key)

    # ------------------------------------------------------------------ sleeps

    def _require_sleep(self, sleep_id: int) -> None:
        if (
            not isinstance(sleep_id, int)
            or isinstance(sleep_id, bool)
            or not self._conn.execute("SELECT 1 FROM sleeps WHERE id = ?", (sleep_id,)).fetchone()
        ):
            raise InvalidInput(f"unknown sleep id {sleep_id!r}")

    def begin_sleep(self, policy: dict[str, Any], *, dry_run: bool = False) -> int:
        """Record a new ``running`` sleep, holding the store's sleep lock (an OS lock, see
        :mod:`.sleeplock`) until :meth:`finish_sleep` or :meth:`close`. Another sleep on the same
        database - in this process or another - raises :class:`SleepAlreadyRunning` naming its
        pid and start time. Any sleep still ``running`` is marked ``interrupted`` in the same
        transaction: with the lock held, such a record belongs to a process that died mid-way."""
        if not isinstance(policy, dict):
            raise InvalidInput(f"policy must be a dict, not {type(policy).__name__}")
        blob = _to_json(policy, "policy")
        _ = self._db  # closed / wrong thread: refuse before taking the lock
        took = not self._sleep_lock.held
        try:
            self._sleep_lock.acquire()
        except OSError as exc:
            raise sqlerrors.classify_os(exc, self._sleep_lock.path) from exc
        try:
            with self.transaction():
                self._my_sleeps.difference_update(self._mark_interrupted())
                cur = self._conn.execute(
                    "INSERT INTO sleeps(started_at, dry_run, status, policy) VALUES (?, ?, ?, ?)",
                    (self._clock(), int(bool(dry_run)), "running", blob),
                )
                assert cur.lastrowid is not None
                sleep_id = int(cur.lastrowid)
                self._delta.sleeps.append(sleep_id)
        except BaseException:
            if took:
                self._sleep_lock.release()
            raise
        self._my_sleeps.add(sleep_id)
        return sleep_id

    @property
    def sleep_lock_stale_pid(self) -> int | None:
        """The pid of a dead process whose sleep-lock record the last :meth:`begin_sleep`
        took over (its sleep was killed mid-way), else None."""
        stale = self._sleep_lock.stale
        return stale.pid if stale is not None else None

    def mark_interrupted_sleeps(self) -> list[int]:
        """Mark every sleep still ``running`` whose process is gone as ``interrupted`` (with
        ``finished_at`` and a summary saying why); returns their ids. Safe at any time: it takes
        the sleep lock first, so while a live sleep (here or in another process) holds it,
        nothing is marked and ``[]`` is returned. Called at start-up; :meth:`begin_sleep` does
        it by itself."""
        db = self._db
        if self._sleep_lock.held:
            with self.transaction():
                return self._mark_interrupted(keep=self._my_sleeps)
        try:
            self._sleep_lock.acquire()
        except SleepAlreadyRunning:
            return []  # a live sleep: its record is rightly ``running``
        except OSError as exc:  # no lock file possible (read-only folder): nothing to mark
            with self._errors():
                running = db.execute("SELECT 1 FROM sleeps WHERE status = 'running'").fetchone()
            if not running:
                return []
            raise sqlerrors.classify_os(exc, self._sleep_lock.path) from exc
        try:
            with self.transaction():
                return self._mark_interrupted()
        finally:
            self._sleep_lock.release()

    def _mark_interrupted(self, keep: Iterable[int] = ()) -> list[int]:
        c = self._conn
        kept = set(keep)
        ids = [int(r[0]) for r in c.execute(
            "SELECT id FROM sleeps WHERE status = 'running' ORDER BY id").fetchall()
            if int(r[0]) not in kept]
        if ids:
            blob = json.dumps({"interrupted": _INTERRUPTED_NOTE})
            c.executemany(
                "UPDATE sleeps SET status = 'interrupted', finished_at = ?, summary = ? "
                "WHERE id = ?",
                [(self._clock(), blob, i) for i in ids],
            )
            self._delta.sleeps.extend(ids)
        return ids

    def finish_sleep(self, sleep_id: int, status: str, summary: dict[str, Any]) -> None:
        if status not in SLEEP_STATUSES or status in ("running", "interrupted"):
            raise InvalidInput(
                f"unknown sleep status {status!r}; expected done, cancelled or error"
            )
        if not isinstance(summary, dict):
            raise InvalidInput(f"summary must be a dict, not {type(summary).__name__}")
        blob = _to_json(summary, "summary")
        with self.transaction():
            self._require_sleep(sleep_id)
            self._conn.execute(
                "UPDATE sleeps SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
                (self._clock(), status, blob, sleep_id),
            )
            self._delta.sleeps.append(sleep_id)
        self._my_sleeps.discard(sleep_id)
        if not self._my_sleeps:
            self._sleep_lock.release()

    def sleeps(self) -> list[SleepRecord]:
        with self._read() as c:
            rows = c.execute(
                "SELECT id, started_at, finished_at, dry_run, status, policy, summary "
                "FROM sleeps ORDER BY id"
            ).fetchall()
        return [
            SleepRecord(int(r[0]), r[1], r[2], bool(r[3]), r[4], json.loads(r[5]), json.loads(r[6]))
            for r in rows
        ]

    # ------------------------------------------------------------------ export / import

    _DUMP_TABLES: tuple[tuple[str, str], ...] = (
        ("items", _LIVE_COLS),
        ("item_history", "num, from_seq, to_seq, block, text, category, source_turn, created_at, "
                         "updated_at, active, valid_until, superseded_by, pinned"),
        ("strengths", "num, importance, uses, strength, last_used_at"),
        ("sleeps", "id, started_at, finished_at, dry_run, status, policy, summary"),
        ("snapshots", "seq, label, created_at, active_count, sleep_id"),
        ("mutations", "id, seq, sleep_id, pass_name, kind, item_id, accepted, reason, "
                      "rejection_reason, policy, decided_by, refs, created_at"),
        ("conversations", "id, created_at"),
        ("turns", "n, role, text, created_at, conversation"),
        ("meta", "key, value"),
    )
    """What an export holds, table by table, in the order an import writes it."""

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table an export holds (one consistent read), plus
        ``next_item``: the id counter. The rows are exactly as stored (JSON columns as text)."""
        with self._read() as c:
            out: dict[str, list[tuple[Any, ...]]] = {
                table: [tuple(r) for r in c.execute(
                    f"SELECT {cols} FROM {table} ORDER BY {', '.join(cols.split(', ')[:2])}"
                ).fetchall()]
                for table, cols in self._DUMP_TABLES
            }
            (next_item,) = c.execute(
                "SELECT value FROM counters WHERE name = 'next_item'").fetchone()
        out["next_item"] = [(int(next_item),)]
        return out

    def now(self) -> float:
        """The store's clock (what it stamps its rows with)."""
        return float(self._clock())

    def is_empty(self) -> bool:
        """No fact, version, sleep, audit row or turn (a store an import may fill)."""
        with self._read() as c:
            return not any(c.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in (
                "items", "snapshots", "sleeps", "mutations", "turns"))

    def load(self, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        """Write an export's rows (as :meth:`dump` gives them) into this empty store, verbatim,
        in one transaction; the search index is rebuilt from them. The caller validates the
        rows first (``core.exchange``); SQLite's own constraints (unique ids, foreign keys,
        ranges) are the backstop, and any failure leaves the store empty."""
        with self.transaction():
            c = self._conn
            if not self.is_empty():
                raise InvalidInput(
                    f"{self.path} already holds a memory; import into a new, empty data folder")
            c.execute("DELETE FROM meta")
            for table, cols in self._DUMP_TABLES:
                marks = ",".join("?" * len(cols.split(",")))
                c.executemany(f"INSERT INTO {table}({cols}) VALUES ({marks})", rows.get(table, []))
            (next_item,) = rows["next_item"][0]
            c.execute("UPDATE counters SET value = ? WHERE name = 'next_item'", (int(next_item),))
            c.execute("UPDATE counters SET value = 0 WHERE name = 'fts_synced'")
            self._sync_fts()  # rebuilt from the imported facts
            self._delta.inserted.update(int(r[0]) for r in rows.get("items", []))
            self._delta.versions.extend(int(r[0]) for r in rows.get("snapshots", []))
            self._delta.meta.update(str(r[0]) for r in rows.get("meta", []))

    def integrity_check(self) -> str:
        with self._read() as c:
            rows = c.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)
