"""The person's files are private (S-DOOR-2): folders 0700, files 0600, written atomically.

Memory (every fact and the whole transcript), the log, the settings and the exports are read
by no other local user. :func:`private_umask` is set at start-up, so whatever a library creates
(SQLite's WAL and SHM files, a rotated log) is private too; the writers here also give explicit
modes, so a file is private even when the umask was changed back.

:func:`write_private` writes a file the way an export must be written: a fresh temporary file
in the target's own folder (``mkstemp``: created 0600 with ``O_EXCL``, so a link planted under
any name is never followed), flushed to disk, then renamed over the target (a crash leaves the
old file or the new one, never half of one; a symlink at the target is replaced, not followed).
:func:`read_regular` reads a file that may be hostile: only a regular file (never a FIFO, a
device such as ``/dev/zero``, a folder), opened without blocking, at most ``cap + 1`` bytes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from nocturne_desktop.core.errors import NocturneError

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "FileRefused",
    "ensure_private_dir",
    "make_private",
    "private_umask",
    "read_regular",
    "write_private",
]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
UMASK = 0o077


class FileRefused(NocturneError):
    """A file that is not read or written as asked (not a regular file, too large, a link
    where a file must be); the message is one sentence."""


def private_umask() -> int:
    """Make every file and folder this process creates private; returns the umask before."""
    return os.umask(UMASK)


def ensure_private_dir(path: str | os.PathLike[str], *, tighten: bool = True) -> Path:
    """``path`` as a folder only its owner may enter (created 0700, parents included). An
    existing folder of ours that others may read is tightened when ``tighten`` (Nocturne's own
    folders); a folder that belongs to someone else is left as it is."""
    folder = Path(path)
    folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if tighten:
        with contextlib.suppress(OSError):
            st = folder.stat()
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                folder.chmod(PRIVATE_DIR)
    return folder


def make_private(path: str | os.PathLike[str]) -> None:
    """Give an existing regular file of ours mode 0600 (a link or another's file is left)."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, PRIVATE_FILE)


def _temp_prefix(name: str) -> str:
    """A temporary file's prefix: the target's name, shortened so that the whole name stays
    within the 255 bytes a file name may have."""
    raw = name.encode("utf-8")[:60].decode("utf-8", "ignore")
    return f".{raw}."


def write_private(target: str | os.PathLike[str], data: bytes) -> int:
    """Write ``data`` to ``target`` atomically as a private file (see the module docstring);
    returns the bytes written. The folder must exist."""
    path = Path(target)
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), PRIVATE_FILE)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return len(data)


def read_regular(path: str | os.PathLike[str], cap: int, *, what: str = "the file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``cap`` of them: a FIFO, a device, a
    socket or a folder is refused without reading (a FIFO is opened without blocking), and a
    file longer than ``cap`` is refused after reading ``cap + 1`` bytes at most."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(f"{what} does not exist") from None
    except IsADirectoryError:
        raise FileRefused(f"{what} is a folder, not a file") from None
    except OSError as exc:
        raise FileRefused(f"{what} cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileRefused(f"{what} is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            kind = ("a pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else
                    "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                    "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise FileRefused(f"{what} is {kind}, not a regular file; it was not read")
        if st.st_size > cap:
            raise FileRefused(f"{what} is {st.st_size / 2**20:,.0f} MiB; at most "
                              f"{cap / 2**20:,.0f} MiB is read, so it was not read")
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise FileRefused(f"{what} grew past {cap / 2**20:,.0f} MiB while it was read; "
                              "it was not imported")
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"{what} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
