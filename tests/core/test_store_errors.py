"""Storage errors said as what they are, and one sleep at a time per store (issue 13, items 2-4).

Run against real SQLite files and real processes; the disk-full, read-only-mount cases that need
root are in ``test_fault_matrix.py``.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.errors import (
    CorruptDatabase,
    DatabaseLocked,
    DiskFull,
    NotADatabase,
    ReadOnlyStore,
    SleepAlreadyRunning,
    StorageIOError,
    StoreError,
)
from nocturne_desktop.core.store import Store, sleeplock, sqlerrors
from nocturne_desktop.core.types import FactDraft
from tests.core.storeholder import Holder, headless_sleep

MESSAGE = re.compile(r"a sleep is already running on this memory \(pid (\d+), since "
                     r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)")


def _sqlite_error(code: int, text: str, cls: type[sqlite3.Error] = sqlite3.OperationalError
                  ) -> sqlite3.Error:
    exc = cls(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


# ---------------------------------------------------------------- classification


@pytest.mark.parametrize(("code", "kind", "words"), [
    (5, DatabaseLocked, "locked"),
    (6, DatabaseLocked, "locked"),
    (15, DatabaseLocked, "locked"),
    (13, DiskFull, "full"),
    (8, ReadOnlyStore, "read-only"),
    (10 | (3 << 8), StorageIOError, "input/output"),  # SQLITE_IOERR_WRITE
    (11, CorruptDatabase, "damaged"),
    (26, NotADatabase, "not a SQLite database"),
])
def test_sqlite_errors_are_classified_by_result_code(tmp_path: Path, code: int, kind: type,
                                                      words: str) -> None:
    err = sqlerrors.classify(_sqlite_error(code, "whatever the text says"), tmp_path / "n.db", 5)
    assert type(err) is kind and words in str(err)
    assert str(tmp_path / "n.db") in str(err)


def test_recovery_advice_keeps_the_wal_with_the_database(tmp_path: Path) -> None:
    for code in (10, 11, 26):
        msg = str(sqlerrors.classify(_sqlite_error(code, "x"), tmp_path / "nocturne.db", 5))
        assert "nocturne.db-wal" in msg and "nocturne.db-shm" in msg and "together" in msg


def test_an_unknown_error_is_a_bug_logged_with_its_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise _sqlite_error(1, "near \"SELEC\": syntax error")
    except sqlite3.Error as exc:
        err = sqlerrors.classify(exc, tmp_path / "n.db", 5)
    assert type(err) is StoreError and "unexpected" in str(err)
    [record] = [r for r in caplog.records if r.name == "nocturne.store"]
    assert record.exc_info is not None and "syntax error" in caplog.text


class _FullOnCommit:
    """A connection whose COMMIT fails as on a full disk: SQLite has already rolled back."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            self._conn.execute("ROLLBACK")
            raise _sqlite_error(13, "database or disk is full")
        return self._conn.execute(sql, *args)


def test_a_failed_commit_is_not_masked_by_cannot_rollback(tmp_path: Path) -> None:
    """Fails on the old code: its ROLLBACK after the failed COMMIT raised 'cannot rollback - no
    transaction is active', which was all the person saw."""
    with Store(tmp_path / "n.db") as store:
        store.append("scratch", FactDraft("Kept before the disk filled."))
        real = store._conn
        store._conn = _FullOnCommit(real)  # type: ignore[assignment]
        try:
            with pytest.raises(DiskFull, match="full") as info:
                store.append("scratch", FactDraft("Never saved."))
            assert "rollback" not in str(info.value).lower()
        finally:
            store._conn = real
        assert [f.text for f in store.all_facts()] == ["Kept before the disk filled."]
        store.append("scratch", FactDraft("Saved once space is back."))
        assert store.integrity_check() == "ok"


def test_an_error_inside_a_transaction_wins_over_a_failing_rollback(tmp_path: Path) -> None:
    with Store(tmp_path / "n.db") as store, pytest.raises(InterruptedError), store.transaction():
        store.append("scratch", FactDraft("Rolled back."))
        store._conn.execute("ROLLBACK")  # SQLite rolled back by itself (e.g. on SQLITE_FULL)
        raise InterruptedError("the real cause")
    with Store(tmp_path / "n.db") as store:
        assert store.all_facts() == []


def test_a_read_only_parent_folder_is_said_so(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions; the read-only mount case is in the fault "
                    "matrix")
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        with pytest.raises(ReadOnlyStore, match="read-only"):
            Store(parent / "sub" / "nocturne.db")
    finally:
        parent.chmod(0o755)


# ---------------------------------------------------------------- one sleep at a time


def test_a_second_sleep_on_the_same_store_is_refused_in_the_same_process(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    with Store(db) as first, Store(db) as second:
        sid = first.begin_sleep({"x": 1})
        with pytest.raises(SleepAlreadyRunning) as info:
            second.begin_sleep({"x": 2})
        m = MESSAGE.search(str(info.value))
        assert m and int(m.group(1)) == os.getpid() == info.value.pid
        assert second.mark_interrupted_sleeps() == []  # a live sleep is not "interrupted"
        assert [(s.id, s.status) for s in second.sleeps()] == [(sid, "running")]
        first.finish_sleep(sid, "done", {})
        again = second.begin_sleep({"x": 3})  # the lock was released with the finish
        second.finish_sleep(again, "done", {})
    assert sleeplock.read_holder(db) is None  # nobody holds it: the record is cleared


def test_closing_a_store_mid_sleep_releases_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    with Store(db) as first:
        first.begin_sleep({})
    with Store(db) as second:
        assert second.mark_interrupted_sleeps() == [1]
        second.finish_sleep(second.begin_sleep({}), "done", {})


def test_a_sleep_in_another_process_refuses_the_headless_sleep(tmp_path: Path,
                                                                holder: Holder) -> None:
    """Fails on the old code (nothing stopped the second sleep): the CLI says who holds the
    memory in one sentence, exits 1, and leaves the running sleep's record alone."""
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    sid = holder.send("sleep")
    run = headless_sleep(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    m = MESSAGE.search(run.stderr)
    assert m and int(m.group(1)) == holder.pid, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
    with Store(db) as store:
        assert store.mark_interrupted_sleeps() == []
        assert [(s.id, s.status) for s in store.sleeps()] == [(sid, "running")]
    holder.send(f"finish {sid}")
    run = headless_sleep(tmp_path)
    assert run.returncode == 0 and "sleep done" in run.stdout, run.stderr


def test_a_stale_lock_of_a_killed_sleep_is_detected_and_taken_over(tmp_path: Path,
                                                                   holder: Holder) -> None:
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    sid = holder.send("sleep")
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait(10)
    stale = sleeplock.read_holder(db)
    assert stale is not None and stale.pid == holder.pid and not stale.alive()
    with Store(db) as store:
        new = store.begin_sleep({})
        assert store.sleep_lock_stale_pid == holder.pid
        recs = {s.id: s.status for s in store.sleeps()}
        assert recs == {sid: "interrupted", new: "running"}
        store.finish_sleep(new, "done", {})


def test_start_up_leaves_a_live_sleep_of_another_process_running(tmp_path: Path,
                                                                 holder: Holder) -> None:
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    sid = holder.send("sleep")
    with Store(db) as store:
        assert store.mark_interrupted_sleeps() == []
        assert [s.status for s in store.sleeps()] == ["running"]
    holder.send(f"finish {sid}")


def test_headless_sleep_on_a_damaged_store_says_so_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "nocturne.db").write_bytes(b"my shopping list\n" * 400)
    run = subprocess.run([sys.executable, "-m", "nocturne_desktop", "sleep", "--engine-only",
                          "--data-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 1
    assert "is not a SQLite database" in run.stderr and "Traceback" not in run.stderr
    assert (tmp_path / "nocturne.db").read_bytes() == b"my shopping list\n" * 400
