"""One sleep at a time per store, across processes.

The lock is an OS lock (``flock`` on POSIX, ``msvcrt.locking`` on Windows) on a separate file
next to the database, ``<db>.sleep-lock`` - never on the database file itself: closing any
descriptor of the database would drop SQLite's own POSIX locks (see the store's notes). Taking
the lock is one atomic system call, not a check-then-act; the OS releases it when its process
ends, however it ends, so a killed sleep never leaves the memory locked.

The file's content says who holds it (``<pid> <unix time>``), for the message a second sleep
gets. A record left by a process that is gone is a *stale* lock: the OS lock is free, the next
sleep takes it over and :attr:`SleepLock.stale` says whose it was.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop.core.errors import SleepAlreadyRunning

log = logging.getLogger("nocturne.store")

SUFFIX = ".sleep-lock"
_WIN_LOCK_OFFSET = 1 << 16
"""Windows locks a byte range: lock one byte past the holder record so it stays readable."""


@dataclass(frozen=True)
class Holder:
    pid: int
    since: float

    def alive(self) -> bool:
        return pid_alive(self.pid)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - POSIX test machines
        return True  # no cheap probe; the OS lock is what counts
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_path(db_path: Path) -> Path:
    return Path(f"{db_path}{SUFFIX}")


if sys.platform == "win32":  # pragma: no cover - POSIX test machines
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WIN_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _read_holder(fd: int) -> Holder | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 200)
        pid_s, since_s = raw.decode("ascii").split()[:2]
        return Holder(int(pid_s), float(since_s))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def read_holder(db_path: Path) -> Holder | None:
    """Who the lock file names (without locking anything); None when nobody or unreadable."""
    try:
        fd = os.open(lock_path(db_path), os.O_RDONLY)
    except OSError:
        return None
    try:
        return _read_holder(fd)
    finally:
        os.close(fd)


def describe(holder: Holder | None) -> str:
    if holder is None:
        return "a sleep is already running on this memory (pid unknown, since just now)"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.since))
    return f"a sleep is already running on this memory (pid {holder.pid}, since {since})"


class SleepLock:
    """The cross-process sleep lock of one database. ``acquire`` raises
    :class:`SleepAlreadyRunning` when another holder has it, an ``OSError`` when the lock file
    cannot be created (read-only or full folder)."""

    def __init__(self, db_path: Path) -> None:
        self.path = lock_path(db_path)
        self._fd: int | None = None
        self.stale: Holder | None = None
        """The dead holder whose record this lock took over, if any."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not _try_lock(fd):
                holder = _read_holder(fd)
                raise SleepAlreadyRunning(
                    f"{describe(holder)}. Wait for it to finish (or stop it), then try again.",
                    pid=holder.pid if holder else None, since=holder.since if holder else None)
            previous = _read_holder(fd)
            self.stale = previous if previous is not None and previous.pid != os.getpid() else None
            if self.stale is not None:
                log.warning("sleep lock %s: taking over the stale record of process %d "
                            "(%s), which ended without releasing it", self.path, self.stale.pid,
                            "still running?" if self.stale.alive() else "no longer running")
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()} {time.time():.3f}\n".encode("ascii"))
        except BaseException:
            os.close(fd)  # closing drops a lock taken just above
            raise
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # nobody holds it now: no record left to mislead
        with contextlib.suppress(OSError):
            _unlock(fd)
        os.close(fd)

    def __del__(self) -> None:  # a forgotten lock must not outlive its owner object
        with contextlib.suppress(Exception):
            self.release()
