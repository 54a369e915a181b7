"""Storage errors said as what they are.

SQLite reports every failure with a result code (``sqlite3.Error.sqlite_errorcode``, Python
3.11+); its low byte is the primary code. The codes a person can meet on a working program -
another process holding the lock, a full disk, a read-only folder, an I/O error, a damaged file,
a file that is not a database - become a typed :class:`~nocturne_desktop.core.errors.StoreError`
whose message says what happened and what to do. Anything else (a misuse, a syntax error, an
unexpected code) is a bug: it is logged with its traceback and reported as one, its message
naming the log file when there is one (:func:`.logfile.details`).

Recovery advice always keeps ``nocturne.db`` together with its ``-wal`` and ``-shm`` files: the
write-ahead log holds committed transactions that are not yet in the main file, so moving the
database without it loses them (or, next to another database's log, corrupts it).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from pathlib import Path

from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import (
    CorruptDatabase,
    DatabaseLocked,
    DiskFull,
    NotADatabase,
    ReadOnlyStore,
    StorageIOError,
    StoreError,
)

log = logging.getLogger("nocturne.store")

# primary result codes (https://sqlite.org/rescode.html)
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_NOMEM = 7
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_PROTOCOL = 15
SQLITE_NOTADB = 26


def primary_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of ``exc`` (None when it carries none)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def keep_together(path: Path) -> str:
    """The sentence every recovery advice carries."""
    name = path.name
    return (f"If you move or copy it, move {name} together with {name}-wal and {name}-shm "
            "(the three files belong together; the -wal file holds recent changes).")


def _folder_read_only(path: Path) -> bool:
    folder = path.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return True
    except (OSError, AttributeError):
        pass
    return folder.exists() and not os.access(folder, os.W_OK)


def locked_message(path: Path, busy_timeout: float) -> str:
    return (f"{path} is locked by another connection or process, which did not let go within "
            f"{busy_timeout:g} s. Close other Nocturne windows or tools using this file and try "
            "again.")


def full_message(path: Path) -> str:
    return (f"The disk holding {path} is full: the last change was not saved (nothing was "
            "half-written; what was saved before is intact). Free some space, then try again.")


def read_only_message(path: Path) -> str:
    return (f"{path} cannot be written: the file, its folder or its disk is read-only (or this "
            "user may not write there). Nothing was changed. Make the folder writable or choose "
            "another data folder (--data-dir).")


def io_message(path: Path, detail: object) -> str:
    return (f"The operating system reported an input/output error on {path} ({detail}); the "
            "disk may be failing, full, or was removed. Nothing more was written. Copy the data "
            f"folder to a safe place before trying again. {keep_together(path)}")


def corrupt_message(path: Path, detail: object) -> str:
    return (f"{path} is damaged ({detail}); it was left untouched. Close Nocturne, then restore "
            f"a backup or move the database aside to start a new one. {keep_together(path)}")


def not_a_database_message(path: Path) -> str:
    return (f"{path} is not a SQLite database (another kind of file is in its place); it was "
            "left untouched. Move it aside or choose another data folder. "
            f"{keep_together(path)}")


def classify(exc: sqlite3.Error, path: Path, busy_timeout: float) -> StoreError:
    """The typed error for ``exc``; a bug (an unknown code) is logged with its traceback."""
    code = primary_code(exc)
    if isinstance(exc, sqlite3.ProgrammingError) and "thread" in str(exc).lower():
        return StoreError("this Store was opened in another thread; open a Store per thread "
                          f"(same path) instead ({exc})")
    if code in (SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL):  # PROTOCOL: a WAL locking race
        return DatabaseLocked(locked_message(path, busy_timeout))
    if code == SQLITE_FULL:
        return DiskFull(full_message(path))
    if code in (SQLITE_READONLY, SQLITE_PERM):
        return ReadOnlyStore(read_only_message(path))
    if code == SQLITE_CANTOPEN:
        if _folder_read_only(path):
            return ReadOnlyStore(read_only_message(path))
        return StoreError(f"{path} cannot be opened ({exc}). Check that the data folder exists "
                          "and that this user may read and write it.")
    if code == SQLITE_IOERR:
        return StorageIOError(io_message(path, exc))
    if code == SQLITE_CORRUPT:
        return CorruptDatabase(corrupt_message(path, exc))
    if code == SQLITE_NOTADB:
        return NotADatabase(not_a_database_message(path))
    if code == SQLITE_NOMEM:
        return StoreError(f"the computer ran out of memory working on {path}; nothing was "
                          "changed. Close other programs and try again.")
    log.error("unexpected SQLite error on %s (code %s)", path, code, exc_info=exc)
    return StoreError(_logged(f"memory database error on {path}: {exc} (an unexpected error, "
                              "logged with its details; please report it)"))


def classify_os(exc: OSError, path: Path) -> StoreError:
    """The typed error for an operating-system error around the database (folder, lock file)."""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DiskFull(full_message(path))
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ReadOnlyStore(read_only_message(path))
    if exc.errno == errno.EIO:
        return StorageIOError(io_message(path, exc))
    log.error("unexpected OS error on %s", path, exc_info=exc)
    return StoreError(_logged(f"{path}: {exc.strerror or exc} (an unexpected error, logged with "
                              "its details)"))


def _logged(message: str) -> str:
    """``message`` and, when a log file is open, the sentence saying where it is."""
    where = logfile.details()
    return f"{message}. {where}" if where else message


def folder_state(folder: Path, error: OSError | None = None) -> str:
    """Why ``folder`` cannot take a new file, in one sentence (read-only, full, permissions)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    code = error.errno if error is not None else None
    try:
        st = os.statvfs(probe)
    except (OSError, AttributeError):
        st = None
    if code == errno.EROFS or (st is not None and st.f_flag & os.ST_RDONLY):
        return "It is on a read-only disk or mount."
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)) or (
            st is not None and st.f_bavail == 0):
        return "The disk holding it is full."
    if code in (errno.EACCES, errno.EPERM) or not os.access(probe, os.W_OK):
        return "This user may not write in it (check its permissions)."
    detail = error.strerror if error is not None and error.strerror else "reason unknown"
    return f"Its lock file could not be created ({detail})."
