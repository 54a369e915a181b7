"""A job: a body run off the GUI thread, its callbacks on the GUI thread; and the slot that
keeps one current job of a kind.

    job = Job(lambda ctx: ctx.store.diff(a, b), name="diff", db_path=path)
    job.success(view.set_diff).failure(view.show_error).start()

The body gets a :class:`JobContext` (its own store and model client, the cancel token) and runs
on the job's ``QThread``, or in a worker process (``process=ChildProcess(...)``). The rules
every job follows (its own store, cancel, superseded jobs, failures as exceptions, the rows of
its commits) are in ``docs/window.md`` (background work). The shape follows Anki's
``QueryOp(...).success().failure()`` and superqt's ``GeneratorWorker``.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Generic, Never, TypeVar, overload

from PySide6.QtCore import QObject, Qt, QThread, Slot

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import StoreChanges
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.pool import ModelSource
from nocturne_desktop.ui.jobs.process import ChildProcess, ProcessRunner
from nocturne_desktop.ui.jobs.thread import ThreadRunner

Y = TypeVar("Y")
"""What a generator body yields (progress items)."""
T = TypeVar("T")
"""What a body returns (a generator's return value)."""

_threads: weakref.WeakSet[QThread] = weakref.WeakSet()
_live_jobs: set[AnyJob] = set()
"""Started jobs whose thread has not finished yet (keeps them, their runner and their thread
alive until then)."""


def running_threads() -> list[QThread]:
    """Job threads still running (the test harness fails a test that leaks one)."""
    alive = []
    for t in list(_threads):
        try:
            if t.isRunning():
                alive.append(t)
        except RuntimeError:  # the C++ object is already gone
            continue
    return alive


class JobContext:
    """What a body gets on a job's thread: the cancel token, and a store and a model client of
    its own, both made on first use (on the job's thread) and released when the body ends."""

    def __init__(self, cancel: CancelToken, db_path: Path | None, models: ModelSource | None) -> None:
        self.cancel = cancel
        self.db_path = db_path
        self.models = models
        """Where :attr:`model` is leased from (a job in a worker process sets one when its
        body runs on the thread after all)."""
        self._store: Store | None = None
        self._model: ModelClient | None = None
        self.store_thread: int | None = None
        """``threading.get_ident()`` of the thread that opened :attr:`store` (tests assert it)."""
        self.changes_to: Callable[[reads.ChangedRows], None] | None = None
        """Where the rows of every commit on :attr:`store` go (set by :meth:`Job.on_changes`)."""

    @property
    def store(self) -> Store:
        if self._store is None:
            if self.db_path is None:
                raise RuntimeError("this job was started without a database path")
            self._store = Store(self.db_path)
            self.store_thread = threading.get_ident()
            if self.changes_to is not None:
                self._store.subscribe(self._relay_changes)
        return self._store

    def _relay_changes(self, changes: StoreChanges) -> None:
        """Right after a commit, on the job's thread: read what it names and send it on. A
        failed read still sends the descriptor, marked incomplete (the view reloads)."""
        assert self._store is not None and self.changes_to is not None
        self.changes_to(reads.rows_of_commit(self._store, changes))

    @property
    def model(self) -> ModelClient:
        if self._model is None:
            if self.models is None:
                raise RuntimeError("this job was started without a model source")
            self._model = self.models.lease()
        return self._model

    def check(self) -> None:
        """Raise :class:`~nocturne_desktop.core.cancel.Cancelled` if the job was stopped or
        cancelled."""
        self.cancel.raise_if_cancelled()

    def release(self) -> None:
        if self._model is not None and self.models is not None:
            model, self._model = self._model, None
            self.models.give_back(model)
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


class Job(QObject, Generic[Y, T]):
    """A body run on its own thread (or in a worker process); callbacks run on the GUI thread.

    Build, attach callbacks (each returns the job), then :meth:`start`.
    """

    @overload
    def __init__(self: Job[Y, T], fn: Callable[[BodyContext], Generator[Y, None, T]], *,
                 name: str, db_path: Path | None = None, models: ModelSource | None = None,
                 finish_on_cancel: bool = False, process: ChildProcess | None = None) -> None: ...

    @overload
    def __init__(self: Job[Never, T], fn: Callable[[BodyContext], T], *,
                 name: str, db_path: Path | None = None, models: ModelSource | None = None,
                 finish_on_cancel: bool = False, process: ChildProcess | None = None) -> None: ...

    def __init__(
        self,
        fn: Callable[[BodyContext], object],
        *,
        name: str,
        db_path: Path | None = None,
        models: ModelSource | None = None,
        finish_on_cancel: bool = False,
        process: ChildProcess | None = None,
    ) -> None:
        """``finish_on_cancel``: after a cancel the body is drained, not closed (it ends on its
        token by itself). ``process``: run the body in a worker process, whose model client is
        ``process.client`` (so ``models`` must be None)."""
        if process is not None and models is not None:
            raise ValueError("a job in a worker process builds its own model client "
                             "(ChildProcess.client); pass no models")
        super().__init__()
        self.name = name
        self.token = CancelToken()
        self._abort = threading.Event()
        self._on_yield: list[Callable[[Y], None]] = []
        self._on_success: list[Callable[[T], None]] = []
        self._on_failure: list[Callable[[BaseException], None]] = []
        self._on_end: list[Callable[[], None]] = []
        self._on_changes: list[Callable[[reads.ChangedRows], None]] = []
        self._started = False
        self._ended = False
        self.context = JobContext(self.token, Path(db_path) if db_path is not None else None, models)
        self._runner = (ThreadRunner(name, fn, self.context, self._abort, finish_on_cancel)
                        if process is None else
                        ProcessRunner(name, fn, self.context, self._abort, finish_on_cancel,
                                      process))
        self.worker_thread = QThread()
        self.worker_thread.setObjectName(f"nocturne-{name}")

    # -- building ------------------------------------------------------------------------------
    def on_yield(self, cb: Callable[[Y], None]) -> Job[Y, T]:
        """``cb(item)`` for every item a generator body yields (not after a cancel)."""
        self._on_yield.append(cb)
        return self

    def on_changes(self, cb: Callable[[reads.ChangedRows], None]) -> Job[Y, T]:
        """``cb(ChangedRows)`` after every commit the body makes on ``ctx.store`` (also after a
        cancel: the write happened)."""
        self._on_changes.append(cb)
        self.context.changes_to = self._runner.changed.emit
        return self

    def success(self, cb: Callable[[T], None]) -> Job[Y, T]:
        """``cb(value)`` with what the body returned (a generator's return value)."""
        self._on_success.append(cb)
        return self

    def failure(self, cb: Callable[[BaseException], None]) -> Job[Y, T]:
        """``cb(exception)`` when the body raised (not for a cancel)."""
        self._on_failure.append(cb)
        return self

    def ended(self, cb: Callable[[], None]) -> Job[Y, T]:
        """``cb()`` once the body is over and its store closed; always, also after a cancel."""
        self._on_end.append(cb)
        return self

    def wrap(self, wrapper: Callable[[Callable[[BodyContext], Any]], Callable[[BodyContext], Any]]
             ) -> Job[Y, T]:
        """Run ``wrapper(body)`` instead of the body (before :meth:`start`). The wrapped body
        must yield what the body yields and return what it returns; in a worker process it
        must pickle, like the body (else the job runs on its thread)."""
        if self._started:
            raise RuntimeError(f"job {self.name} was started already")
        self._runner.fn = wrapper(self._runner.fn)
        return self

    def start(self) -> Job[Y, T]:
        if self._started:
            raise RuntimeError(f"job {self.name} was started already")
        self._started = True
        runner, thread = self._runner, self.worker_thread
        runner.moveToThread(thread)
        thread.started.connect(runner.run)
        # Direct: quit() is thread-safe, and a queued call would wait for the GUI thread, which
        # may itself be blocked in wait() (closing the window).
        runner.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        # No deleteLater on the runner or the thread: both are owned by Python (this job); the
        # job stays alive until its thread has finished, then Python frees both on the GUI
        # thread, when neither can be running (docs/window.md, background work).
        thread.finished.connect(self._thread_finished)
        # queued onto this object's (the GUI) thread
        runner.yielded.connect(self._deliver_yield)
        runner.changed.connect(self._deliver_changes)
        runner.returned.connect(self._deliver_success)
        runner.errored.connect(self._deliver_failure)
        runner.ended.connect(self._deliver_end)
        _threads.add(thread)
        _live_jobs.add(self)
        thread.start()
        return self

    # -- control -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the body to end early (the token); what it still reports is delivered."""
        self.token.cancel()
        self._runner.signal()

    def cancel(self) -> None:
        """Stop the body and drop everything it still sends (only ``ended`` callbacks run)."""
        self._abort.set()
        self.token.cancel()
        self._runner.signal()

    @property
    def child_pid(self) -> int | None:
        """The worker process's pid, once started (a job in a worker process only)."""
        return self._runner.pid if isinstance(self._runner, ProcessRunner) else None

    @property
    def in_child(self) -> bool:
        """Whether the body runs (or ran) in a worker process rather than on the thread."""
        return isinstance(self._runner, ProcessRunner) and self._runner.in_child

    @property
    def cancelled(self) -> bool:
        return self._abort.is_set()

    @property
    def done(self) -> bool:
        """The body is over (its end reached the GUI thread, or its thread finished)."""
        if self._ended or not self._started:
            return self._ended
        try:
            return bool(self.worker_thread.isFinished())
        except RuntimeError:
            return True

    def wait(self, ms: int = 30_000) -> bool:
        """Block until the thread ended (closing a window, and tests, only)."""
        if not self._started:
            return True
        try:
            return bool(self.worker_thread.wait(ms))
        except RuntimeError:
            return True

    # -- delivery (GUI thread) -----------------------------------------------------------------
    @Slot(object)
    def _deliver_yield(self, item: Y) -> None:
        if not self._abort.is_set():
            for cb in self._on_yield:
                cb(item)

    @Slot(object)
    def _deliver_changes(self, rows: reads.ChangedRows) -> None:
        for cb in self._on_changes:
            cb(rows)

    @Slot(object)
    def _deliver_success(self, value: T) -> None:
        if not self._abort.is_set():
            for cb in self._on_success:
                cb(value)

    @Slot(object)
    def _deliver_failure(self, exc: BaseException) -> None:
        if not self._abort.is_set():
            for cb in self._on_failure:
                cb(exc)

    @Slot()
    def _deliver_end(self) -> None:
        self._ended = True
        for cb in self._on_end:
            cb()

    @Slot()
    def _thread_finished(self) -> None:
        """The thread emitted ``finished``: let it return from its last C++ frame, then let the
        job (and with it the runner and the thread) go."""
        with contextlib.suppress(RuntimeError):  # the C++ object is already gone
            self.worker_thread.wait(5_000)
        _live_jobs.discard(self)


AnyJob = Job[Any, Any]
"""A job whatever it yields and returns (for code that only starts, cancels or waits)."""


class JobSlot:
    """At most one current job of a kind: starting the next supersedes (cancels) the previous,
    whose results are then dropped. Also remembers every job not over yet, to wait on close."""

    def __init__(self) -> None:
        self.current: AnyJob | None = None
        self._all: list[AnyJob] = []

    def start(self, job: Job[Y, T]) -> Job[Y, T]:
        if self.current is not None and not self.current.done:
            self.current.cancel()
        self.current = job
        self._all = [j for j in self._all if j in _live_jobs]  # their thread still runs
        self._all.append(job)
        return job.start()

    @property
    def running(self) -> bool:
        return self.current is not None and not self.current.done

    def cancel(self) -> None:
        for job in self._all:
            if not job.done:
                job.cancel()

    def wait(self, ms: int = 30_000) -> bool:
        """Block until the thread of every job this slot started has finished: also the jobs
        whose end was already delivered (``done``) while their thread was still returning —
        a thread freed then is "destroyed while still running", an abort."""
        waited = [job.wait(ms) for job in self._all]  # every job: no short cut on a timeout
        self._all = [j for j in self._all if j in _live_jobs]
        return all(waited)
