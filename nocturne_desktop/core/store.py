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

Where the code is
=================
:class:`Store` is one class composed by concern, each a class over one shared connection base
(so the thread check, the open transaction and its change descriptor are one, whatever concern
writes), stacked in the order they depend on each other:

* :mod:`.store_base` - the connection, transactions and savepoints, change descriptors, the
  live row and the input checks every writer shares;
* :mod:`.store_schema` - the migrations and the FTS5 index definitions;
* :mod:`.store_facts` - facts, the history copy on each write, search (FTS5 or LIKE), strengths;
* :mod:`.store_log` - the audit log, turns, conversations, meta, the sleep records;
* :mod:`.store_versions` - snapshots, the state at a version, diff, restore;
* :mod:`.store_changes` - mutations and passes applied, the person's hand edits, undo and redo;
* this module - opening a file (the look before, the migrations, WAL), export and import, and
  every name callers import from ``core.store``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from nocturne_desktop.core import sqlerrors
from nocturne_desktop.core.errors import CorruptDatabase as CorruptDatabase
from nocturne_desktop.core.errors import DatabaseLocked as DatabaseLocked
from nocturne_desktop.core.errors import InvalidInput as InvalidInput
from nocturne_desktop.core.errors import SchemaTooNew
from nocturne_desktop.core.errors import SleepAlreadyRunning as SleepAlreadyRunning
from nocturne_desktop.core.errors import StoreError as StoreError
from nocturne_desktop.core.errors import UnknownVersion as UnknownVersion
from nocturne_desktop.core.limits import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from nocturne_desktop.core.limits import MAX_TURN_CHARS as MAX_TURN_CHARS
from nocturne_desktop.core.store_base import _LIVE_COLS
from nocturne_desktop.core.store_base import DEFAULT_BUSY_TIMEOUT as DEFAULT_BUSY_TIMEOUT
from nocturne_desktop.core.store_changes import APPLY_KINDS as APPLY_KINDS
from nocturne_desktop.core.store_changes import ChangeStore
from nocturne_desktop.core.store_changes import UndoStep as UndoStep
from nocturne_desktop.core.store_facts import SEARCH_BLOCK_BOOST as SEARCH_BLOCK_BOOST
from nocturne_desktop.core.store_facts import SEARCH_COMMON_MIN as SEARCH_COMMON_MIN
from nocturne_desktop.core.store_facts import SEARCH_RECENCY_BOOST as SEARCH_RECENCY_BOOST
from nocturne_desktop.core.store_facts import SEARCH_RECENCY_DAYS as SEARCH_RECENCY_DAYS
from nocturne_desktop.core.store_facts import SEARCH_SALIENCE_BOOST as SEARCH_SALIENCE_BOOST
from nocturne_desktop.core.store_facts import FoundFact as FoundFact
from nocturne_desktop.core.store_facts import SearchHit as SearchHit
from nocturne_desktop.core.store_log import CONVERSATION_KEY as CONVERSATION_KEY
from nocturne_desktop.core.store_log import ROLES as ROLES
from nocturne_desktop.core.store_log import SLEEP_STATUSES as SLEEP_STATUSES
from nocturne_desktop.core.store_log import TITLE_CHARS as TITLE_CHARS
from nocturne_desktop.core.store_schema import (
    _FTS_DEFINITION,
    _MIGRATIONS,
    _PAST_FTS_DEFINITION,
    _has_column,
)
from nocturne_desktop.core.store_schema import SCHEMA_VERSION as SCHEMA_VERSION
from nocturne_desktop.core.store_schema import fts5_available as fts5_available
from nocturne_desktop.core.types import BLOCKS
from nocturne_desktop.core.types import BlockInfo as BlockInfo
from nocturne_desktop.core.types import Conversation as Conversation
from nocturne_desktop.core.types import Diff as Diff
from nocturne_desktop.core.types import DiffEntry as DiffEntry
from nocturne_desktop.core.types import Fact as Fact
from nocturne_desktop.core.types import FactDraft as FactDraft
from nocturne_desktop.core.types import Mutation as Mutation
from nocturne_desktop.core.types import MutationRow as MutationRow
from nocturne_desktop.core.types import SleepRecord as SleepRecord
from nocturne_desktop.core.types import StoreChanges as StoreChanges
from nocturne_desktop.core.types import Strength as Strength
from nocturne_desktop.core.types import Turn as Turn
from nocturne_desktop.core.types import Version as Version

# What this module has always offered, now defined by the concern that owns it: every existing
# ``from nocturne_desktop.core.store import ...`` keeps working (``X as X`` re-exports it).
# SCHEMA_VERSION, _MIGRATIONS and fts5_available are read from this module's namespace when a
# store is opened, so replacing them here (as the migration tests do) takes effect.
__all__ = [
    "APPLY_KINDS",
    "MAX_TEXT_CHARS",
    "MAX_TURN_CHARS",
    "ROLES",
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


class Store(ChangeStore):
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
        super().__init__(path, clock=clock, busy_timeout=busy_timeout)
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
