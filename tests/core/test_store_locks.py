"""Nothing but SQLite touches the database file while a connection is open (issue 13, item 1).

Closing any file descriptor of a file drops every POSIX advisory lock the process holds on it.
When the store used to read the database header with Python's ``open()``, opening a second
``Store`` (as every chat or sleep job does) silently dropped the SHARED lock of the window's own
connection; a ``nocturne sleep`` in another process then believed it was the last connection,
checkpointed and deleted the WAL, and the window went on writing into a WAL that no longer
existed: the database was malformed at the next start (5 of 5 runs).

These tests run a real second process (``tests/core/storeholder.py``) holding Stores the way
the window does, and look at its locks from outside it: ``/proc/locks`` and ``fcntl(F_GETLK)``
from a third process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop.core.store import Store
from tests.core.storeholder import Holder, headless_sleep

ROUNDS = 20

SHARED_FIRST = 0x40000000 + 2
"""SQLite's unix VFS: a SHARED lock is a read lock on [PENDING_BYTE + 2, +510)."""
SHARED_SIZE = 510

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX locks, Linux")


def proc_locks(pid: int, path: Path) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each POSIX lock ``pid`` holds on ``path``, from /proc/locks.

    Reading /proc/locks opens no descriptor of the database itself."""
    inode = os.stat(path).st_ino
    found = []
    with open("/proc/locks") as fh:
        for line in fh:
            f = line.split()
            if "->" in f or f[1] != "POSIX":
                continue
            if f[5].split(":")[-1] == str(inode) and int(f[4]) == pid:
                end = -1 if f[7] == "EOF" else int(f[7])
                found.append((f[3], int(f[6]), end))
    return found


GETLK = r"""
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
req = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, int(sys.argv[2]), int(sys.argv[3]), 0)
kind, _, _, _, pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, req))
print(pid if kind != fcntl.F_UNLCK else 0)
"""


def getlk_holder(path: Path) -> int:
    """From a third process: the pid holding a lock that conflicts with a write lock on the
    SHARED range (0 = none). That process has no SQLite connection, so its open() is harmless."""
    out = subprocess.run([sys.executable, "-c", GETLK, str(path), str(SHARED_FIRST),
                          str(SHARED_SIZE)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def holds_shared(pid: int, path: Path) -> bool:
    return any(kind == "READ" and start <= SHARED_FIRST and (end == -1 or end >= SHARED_FIRST)
               for kind, start, end in proc_locks(pid, path))


def test_a_second_store_in_the_process_keeps_its_posix_locks(tmp_path: Path, holder: Holder) -> None:
    """Fails on the old code: the second Store's header read dropped the first one's lock."""
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    assert holds_shared(holder.pid, db), proc_locks(holder.pid, db)
    assert getlk_holder(db) == holder.pid
    holder.send("worker 3")  # a chat job: opens its own Store on the file, writes, closes it
    assert holds_shared(holder.pid, db), (
        f"opening a second Store dropped the process's SHARED lock: {proc_locks(holder.pid, db)}")
    assert getlk_holder(db) == holder.pid

    # another process now runs a whole sleep and closes: it must see it is not the last
    # connection, so it neither checkpoints-and-deletes the WAL nor leaves the holder unlocked
    run = headless_sleep(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sleep done" in run.stdout
    assert holds_shared(holder.pid, db), proc_locks(holder.pid, db)
    assert Path(f"{db}-wal").exists(), "the other process deleted the WAL under open connections"
    holder.send("write 2")
    holder.send("close")


def test_window_less_reproduction_survives_20_of_20(tmp_path: Path, holder: Holder) -> None:
    """The issue's scenario without Qt: connections open in A, a headless sleep in B on the same
    folder, more writes in A, close, reopen: integrity ok and every turn A wrote is there."""
    failures: list[str] = []
    for r in range(ROUNDS):
        folder = tmp_path / f"round{r}"
        db = folder / "nocturne.db"
        try:
            holder.send(f"open {db}")
            holder.send("worker 2")  # the first chat
            run = headless_sleep(folder)
            if run.returncode != 0:
                failures.append(f"round {r}: the sleep failed: {run.stderr.strip()[-300:]}")
            holder.send("write 5")  # the second chat, through both kinds of store
            written = holder.send("worker 1")
        except AssertionError as exc:  # the holder's own writes failed
            failures.append(f"round {r}: {exc}")
            with contextlib.suppress(AssertionError):
                holder.send("close")
            continue
        holder.send("close")
        try:
            with Store(db) as store:
                check = store.integrity_check()
                turns = len(store.turns())
        except Exception as exc:  # a malformed store refuses to open
            failures.append(f"round {r}: reopening failed: {exc}")
            continue
        if check != "ok":
            failures.append(f"round {r}: integrity_check: {check[:200]}")
        if turns != written:
            failures.append(f"round {r}: {turns} turns on reopening, {written} were committed")
    assert not failures, f"{len(failures)}/{ROUNDS} rounds lost or corrupted the store:\n" + \
        "\n".join(failures)
