"""The part of a job that lives on its thread: it runs the body and reports through signals,
which Qt queues onto the GUI thread. It never touches widgets."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from nocturne_desktop.core.cancel import Cancelled
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.ports import ModelCancelled
from nocturne_desktop.ui.jobs.body import BodyContext, drive

if TYPE_CHECKING:
    from nocturne_desktop.ui.jobs.job import JobContext

log = logging.getLogger("nocturne.ui")


class Reported(Exception):
    """A failure already logged where it happened (a worker process): delivered as ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


class ThreadRunner(QObject):
    """Runs a job's body on the job's thread (see :class:`~nocturne_desktop.ui.jobs.Job`)."""

    yielded = Signal(object)
    changed = Signal(object)
    returned = Signal(object)
    errored = Signal(object)
    ended = Signal()
    finished = Signal()

    def __init__(self, name: str, fn: Callable[[BodyContext], object], ctx: JobContext,
                 abort: threading.Event, finish_on_cancel: bool) -> None:
        super().__init__()
        self.name = name
        self.fn = fn
        self.ctx = ctx
        self.abort = abort
        self.finish_on_cancel = finish_on_cancel

    @Slot()
    def run(self) -> None:
        try:
            if self.abort.is_set():
                return
            result = self._execute()
            if not self.abort.is_set():
                self.returned.emit(result)
        except (Cancelled, ModelCancelled):
            pass
        except Reported as reported:  # logged where it happened (the worker process)
            if not self.abort.is_set():
                self.errored.emit(reported.exc)
        except Exception as exc:
            if not isinstance(exc, NocturneError | ValueError):  # a bug: keep its traceback
                log.error("job %s failed unexpectedly", self.name, exc_info=exc)
            if not self.abort.is_set():
                self.errored.emit(exc)
        finally:
            try:
                self.ctx.release()
            finally:
                self.ended.emit()
                self.finished.emit()

    def _execute(self) -> object:
        result = self.fn(self.ctx)
        if isinstance(result, Generator):
            result = drive(result, self.yielded.emit, self.abort, self.finish_on_cancel)
        return result

    def signal(self) -> None:
        """The job was stopped or cancelled (any thread): the token says so already."""
