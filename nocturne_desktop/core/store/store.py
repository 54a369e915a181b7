"""The memory store: one SQLite file, the only door to facts, versions and the audit log.

:class:`Store` is one class composed by concern over one shared connection (:mod:`.base`):
facts and search (:mod:`.facts`, :mod:`.search`), the log (:mod:`.log`), versions, diff and
restore (:mod:`.versions`), and changes applied as versions (:mod:`.changes`). This module
opens a file: the look before, the migrations (:mod:`.schema`), WAL. Why the layout is what
it is (validity ranges, the FTS5 indexes, locking, crash safety): ``docs/store.md``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nocturne_desktop.core import files
from nocturne_desktop.core.errors import InvalidInput, SchemaTooNew, StoreError
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.store import sqlerrors
from nocturne_desktop.core.store.base import _LIVE_COLS, DEFAULT_BUSY_TIMEOUT
from nocturne_desktop.core.store.changes import ChangeStore
from nocturne_desktop.core.store.schema import (
    _FTS_DEFINITION,
    _MIGRATIONS,
    _PAST_FTS_DEFINITION,
    SCHEMA_VERSION,
    _has_column,
    fts5_available,
)
from nocturne_desktop.core.store.vectors import DEFAULT_EMBEDDER
from nocturne_desktop.core.types import BLOCKS

if TYPE_CHECKING:
    from nocturne_desktop.core.ports import Embedder


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
        embedder: Embedder | None = DEFAULT_EMBEDDER,
    ) -> None:
        """``embedder``: what makes the facts' meaning vectors (:mod:`.vectors`); by default the
        process's (:func:`~nocturne_desktop.core.embedder.default_embedder`, loaded on first
        use), None for none (the ranking then uses the words alone)."""
        super().__init__(path, clock=clock, busy_timeout=busy_timeout)
        self._embedder_given = embedder
        try:
            files.ensure_private_dir(self.path.parent, tighten=False)
        except OSError as exc:
            raise sqlerrors.classify_os(exc, self.path) from exc
        self._inspect_existing()
        self._private_files()
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

    def _private_files(self) -> None:
        """The database is created 0600 before SQLite opens it (SQLite gives its WAL and SHM
        files the database's mode); an existing one, and its WAL and SHM, are made 0600 (they
        hold every fact and the whole transcript)."""
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, files.PRIVATE_FILE)
            os.close(fd)
        for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            files.make_private(p)

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
        ranges) are the backstop, and any failure leaves the store empty. Every fact text, the
        earlier values included, passes the admission check of the import door first."""
        seen: set[str] = set()
        for table, at in (("items", 2), ("item_history", 4)):
            for row in rows.get(table, []):
                text = row[at]
                if not (isinstance(text, str) and text in seen):
                    admission.check(text, Door.IMPORT, what=f"the text of m_{row[0]}")
                    seen.add(text)
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
            self._delta.texts.update(self._delta.inserted)  # their vectors, made before COMMIT
            self._delta.versions.extend(int(r[0]) for r in rows.get("snapshots", []))
            self._delta.meta.update(str(r[0]) for r in rows.get("meta", []))
