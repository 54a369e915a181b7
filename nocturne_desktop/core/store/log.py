"""The log: audit rows of mutations, sleeps, turns, conversations and meta.

Nothing here writes a fact. The audit log (``mutations``) keeps every decision, accepted or
refused, with who decided it; a sleep's record carries the OS sleep lock (:mod:`.sleeplock`)
from :meth:`LogStore.begin_sleep` to :meth:`LogStore.finish_sleep`; turns belong to a
conversation, and the current one is a meta key.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from nocturne_desktop.core.errors import (
    InvalidInput,
    SleepAlreadyRunning,
)
from nocturne_desktop.core.judges.sensitive import withheld
from nocturne_desktop.core.limits import MAX_TURN_CHARS
from nocturne_desktop.core.store import sqlerrors
from nocturne_desktop.core.store.base import (
    StoreBase,
    _check_unicode,
    _to_json,
)
from nocturne_desktop.core.types import (
    Conversation,
    Mutation,
    MutationRow,
    SleepRecord,
    Turn,
)

ROLES: tuple[str, ...] = ("user", "assistant", "system")
SLEEP_STATUSES: tuple[str, ...] = ("running", "done", "cancelled", "error", "interrupted")
"""``interrupted`` is set by the store only: a sleep still ``running`` when a new one begins
(its process was killed or crashed; its completed passes stay, at a pass boundary)."""
_INTERRUPTED_NOTE = (
    "the process running this sleep ended before it finished (a crash, a kill or a power cut); "
    "the passes it completed stay applied and the store is at the last completed pass"
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


class LogStore(StoreBase):
    """The audit log, the transcript, conversations, meta and the sleep records."""

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
            refs = m.refs if m.refs is not None else {}
            if not m.accepted and str(m.rejection_reason or "").startswith("sensitive:"):
                refs = withheld(refs)  # a refused secret is not kept in the log either
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
                    _to_json(refs, "mutation refs"),
                    now,
                )
            )
        c = self._conn
        if sleep_id is not None:
            self._require_sleep(sleep_id)
        # One statement for all rows; the ids are those above the largest before it (the id
        # only grows, and the write transaction holds the file: no other writer interleaves).
        (last,) = c.execute("SELECT coalesce(max(id), 0) FROM mutations").fetchone()
        c.executemany(
            "INSERT INTO mutations(seq, sleep_id, pass_name, kind, item_id, accepted, reason, "
            "rejection_reason, policy, decided_by, refs, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        ids = [int(r[0]) for r in c.execute(
            "SELECT id FROM mutations WHERE id > ? ORDER BY id", (last,))] if rows else []
        assert len(ids) == len(rows)
        self._delta.mutations.extend(ids)
        return ids

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

    def get_link_state(self, name: str) -> str | None:
        """The bookkeeping of the link ``name`` to another home of the live state (what was
        last written there), or None. Not a fact, not exported, never a change."""
        with self._read() as c:
            row = c.execute("SELECT value FROM link_state WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_link_state(self, name: str, value: str | None) -> None:
        """Set (None: remove) the bookkeeping of the link ``name``. It joins the caller's write
        transaction, so a pull's version and what the link saw commit together; subscribers are
        not told (nothing of memory changed)."""
        if not isinstance(name, str) or not name.strip() or "\x00" in name:
            raise InvalidInput("link name is empty or contains a NUL byte")
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise InvalidInput("link state must be a string without a NUL byte")
        with self.transaction():
            if value is None:
                self._conn.execute("DELETE FROM link_state WHERE name = ?", (name,))
            else:
                self._conn.execute(
                    "INSERT INTO link_state(name, value) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (name, value))

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
