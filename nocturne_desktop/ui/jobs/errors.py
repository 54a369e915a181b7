"""How a job's failure reaches a person: a sentence for any exception, and the two failures of
a worker process (an error that could not cross to the window as itself, a worker that died).
No Qt: the worker process uses these too."""

from __future__ import annotations

from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import NocturneError


def describe_error(exc: BaseException) -> str:
    """A sentence for a person: our typed errors already are one; anything else is a bug."""
    if isinstance(exc, NocturneError | ValueError):
        text = str(exc).strip()
        return text or type(exc).__name__
    return unexpected(exc)


def unexpected(exc: BaseException) -> str:
    """The words for a bug, with where the log is."""
    where = logfile.details()
    return f"unexpected error ({type(exc).__name__}: {exc})" + (f". {where}" if where else "")


class ChildFailure(NocturneError):
    """An error of the worker process that could not cross to the window as itself (it does
    not pickle): its type and message, with the child's traceback in :attr:`child_traceback`."""

    def __init__(self, message: str, *, type_name: str = "", child_traceback: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name
        self.child_traceback = child_traceback


class WorkerDied(NocturneError):
    """The worker process ended without saying so (killed, a crash, out of memory)."""

    def __init__(self, message: str, *, exitcode: int | None = None) -> None:
        super().__init__(message)
        self.exitcode = exitcode
