"""Typed errors. Every error a person can meet carries a message that says what happened
and what to do next; nothing is half-written when one is raised."""

from __future__ import annotations

from typing import Any


class NocturneError(Exception):
    """Base of every error Nocturne raises on purpose.

    Every subclass pickles with its type, message and attributes (a sleep runs in a worker
    process and its error crosses to the window that way): the default pickling of an exception
    calls ``type(exc)(*exc.args)`` on the way back, which a subclass with keyword-only
    arguments (``ModelTimeout(message, which=...)``) refuses."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[NocturneError], args: tuple[Any, ...], state: dict[str, Any]) -> NocturneError:
    """An unpickled :class:`NocturneError`: built without its ``__init__`` (whose signature
    may differ from ``args``), then given back its arguments and attributes."""
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class InvalidInput(NocturneError, ValueError):
    """Text, block, category or id that the store refuses (empty, too long, NUL bytes, unknown)."""


class StoreError(NocturneError):
    """A problem with the memory database itself."""


class SchemaTooNew(StoreError):
    """The database was written by a newer Nocturne; it is refused and never altered."""


class CorruptDatabase(StoreError):
    """The file is not a SQLite database or fails its integrity check; it is never overwritten."""


class DatabaseLocked(StoreError):
    """Another process holds the database and did not let go in time."""


class UnknownVersion(StoreError, KeyError):
    """A snapshot id that does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown version"


class DiskFull(StoreError):
    """The disk (or the file system holding the data folder) is full; nothing was written."""


class ReadOnlyStore(StoreError):
    """The database, its folder or its file system cannot be written to; nothing was changed."""


class StorageIOError(StoreError):
    """The operating system reported an input/output error reading or writing the database."""


class NotADatabase(CorruptDatabase):
    """The file is not a SQLite database at all (another kind of file); it is never overwritten."""


class SleepAlreadyRunning(StoreError):
    """Another sleep (in this or another process) is consolidating the same memory right now."""

    def __init__(self, message: str, *, pid: int | None = None, since: float | None = None) -> None:
        super().__init__(message)
        self.pid = pid
        self.since = since


class FactRefused(InvalidInput):
    """A fact's text was refused at the admission check (:mod:`core.judges.admission`): a
    secret, a text over the limits, a control character, or (where the door asks for one) not
    a statement. ``rule`` names the check that refused it (``limits``, ``unicode``,
    ``sensitive``, ``statement``), ``door`` the way it came in; nothing was written."""

    def __init__(self, message: str, *, rule: str, door: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.door = door
