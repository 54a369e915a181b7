"""The store's shared base: one connection per thread, transactions, change descriptors.

Every concern of :class:`~nocturne_desktop.core.store.Store` (facts and search, the log,
versions, the changes made as versions) is a class over this one; they share its connection,
its open transaction and the :class:`_Delta` that transaction collects. What lives here is what
all of them need: the thread check, ``BEGIN IMMEDIATE`` / savepoints / ``COMMIT`` with the
SQLite error classified (:mod:`.sqlerrors`), the pending version number, reading a live row,
and the input checks shared by every writer.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Self

from nocturne_desktop.core.errors import (
    InvalidInput,
    StoreError,
)
from nocturne_desktop.core.limits import text_problem
from nocturne_desktop.core.policy import check_importance
from nocturne_desktop.core.store import sqlerrors
from nocturne_desktop.core.store.sleeplock import SleepLock
from nocturne_desktop.core.types import (
    BLOCKS,
    CATEGORIES,
    Fact,
    StoreChanges,
)

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a write waits for another connection's lock before :class:`DatabaseLocked`."""

_IN_CHUNK = 500
"""Candidates looked up per statement (well under SQLite's bound on variables)."""

_ITEM_ID = re.compile(r"m_([1-9][0-9]*)")

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


def _fact(row: Sequence[Any]) -> Fact:
    # positional on purpose: state_at / diff build up to one Fact per stored fact
    return Fact(f"m_{row[0]}", row[1], row[2], row[3], row[4], row[5], row[6], row[7] == 1,
                row[10] == 1, row[8], None if row[9] is None else f"m_{row[9]}")


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

    __slots__ = ("inserted", "meta", "mutations", "sleeps", "strengths", "texts", "touched",
                 "turns", "versions")

    def __init__(self) -> None:
        self.inserted: set[int] = set()
        self.texts: set[int] = set()
        """Facts whose text was written (their meaning vectors are made before the commit)."""
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
        d.strengths, d.texts = set(self.strengths), set(self.texts)
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


class _Answer(list):  # type: ignore[type-arg]
    """An ``all_facts`` answer: a list that can be weakly referenced."""

    __slots__ = ("__weakref__",)


class _FactsMark:
    """What this ``Store``'s own commits changed since one ``all_facts`` answer was read (for
    ``facts_after``), and SQLite's ``data_version`` then (another connection's commit moves it)."""

    __slots__ = ("added", "answer", "data_version", "size", "touched")

    def __init__(self, answer: _Answer, data_version: int) -> None:
        self.answer = weakref.ref(answer)
        """The list returned (weakly: a freed list's id may be reused, its weakref is dead)."""
        self.size = len(answer)
        self.data_version = data_version
        self.touched: set[str] = set()
        self.added = False

    def of(self, facts: object) -> bool:
        """Whether ``facts`` is the answer marked, unchanged in length."""
        return self.answer() is facts and len(facts) == self.size  # type: ignore[arg-type]


class StoreBase:
    """The connection and the transaction every concern of the store works in (see
    :mod:`nocturne_desktop.core.store` for the layout and its guarantees)."""

    _conn: sqlite3.Connection

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        """The state only; :class:`~nocturne_desktop.core.store.Store` opens the connection."""
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
        self._facts_mark: _FactsMark | None = None
        self.last_changes = StoreChanges()
        """What the last write transaction committed on this ``Store`` changed (every write
        method - append, update, forget, apply, commit_pass, restore, snapshot, add_turn,
        set_meta, the sleep records - leaves its descriptor here)."""
        self.fts_enabled = False
        """False when this SQLite build lacks FTS5: :meth:`search` then ranks with LIKE."""

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

    def __enter__(self) -> Self:
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
            if depth == 0:
                self._before_commit()
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

    def _before_commit(self) -> None:
        """Called inside the outermost transaction just before its COMMIT, with the delta it
        collected (the meaning vectors of the facts it wrote are made here, in one batch). It
        must not raise for a failure of its own: the facts are what must commit."""

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
        if self._facts_mark is not None:
            self._facts_mark.touched.update(changes.changed, changes.deactivated)
            self._facts_mark.added |= bool(changes.added)
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

    def now(self) -> float:
        """The store's clock (what it stamps its rows with)."""
        return float(self._clock())

    def integrity_check(self) -> str:
        with self._read() as c:
            rows = c.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)
