"""One way to run background work for the window.

A :class:`Job` runs a function on its own ``QThread``; the function gets a :class:`JobContext`
and either returns a value or is a generator whose every yield is one progress item::

    job = Job(lambda ctx: ctx.store.diff(a, b), name="diff", db_path=path)
    job.success(view.set_diff).failure(view.show_error).start()

The rules every job follows, so that no caller re-implements them:

- **Its own store.** ``ctx.store`` opens a :class:`Store` on the database path the first time it
  is used, which is on the job's thread; it is closed when the job ends. A connection is never
  shared across threads, and the GUI thread never waits for one.
- **Its own model client.** ``ctx.model`` leases one from the :class:`ModelSource` and gives it
  back at the end.
- **Cancellable.** :meth:`Job.cancel` sets the core's :class:`CancelToken` (``ctx.cancel``; model
  calls abort on it) and drops everything the job still sends: its remaining yields, its result,
  its failure. The abort is checked at every yield; a generator is closed there, unless the job
  was made with ``finish_on_cancel=True`` (the core's sleep ends on the token by itself, writing
  its own record, so it is drained without delivering anything). :meth:`Job.stop` only sets the
  token: the body ends early and what it still reports is delivered. A body with a phase of
  its own to stop (a chat reply, whose encoder must still run) takes a second token for that
  as an argument (:class:`~nocturne_desktop.ui.workers.ReplyStop`).
- **Superseded jobs never repaint.** A :class:`JobSlot` holds the one current job of a kind;
  starting the next cancels the previous, so its late results are dropped on the GUI side by the
  job object itself (no run ids to compare).
- **Failure carries the exception**, not a string: ``failure(cb)`` gets the exception object
  (:func:`describe_error` turns it into a sentence). ``Cancelled``/``ModelCancelled`` are not
  failures: a job that was stopped ends quietly.
- **Store changes follow the writes.** ``on_changes(cb)`` watches the job's store: after every
  commit the changed rows are read by id on the job's thread
  (:func:`~nocturne_desktop.core.store.reads.read_changed`) and ``cb(ChangedRows)`` gets them on the
  GUI thread, in commit order. These describe committed writes, so they are delivered also
  after a cancel (a view must not miss a write that happened).
- ``ended(cb)`` runs last, always (also for a cancelled job): bookkeeping such as "not busy any
  more", which must wait until the thread really let go of the store.
- **In a worker process** (``process=ChildProcess(...)``): the job's thread starts a child
  process (``multiprocessing``'s spawn) that runs the body with a store and a model client of
  its own (:mod:`~nocturne_desktop.ui.childproc`), and relays what it sends through the same
  signals: the same yields, changed rows, result, failure (the same exception type and
  message), cancel and end. The window's GUI thread then shares no GIL with a long pass. The
  body must pickle (a module-level function, or a ``functools.partial`` of one with picklable
  arguments); one that does not runs on the thread as before. A worker that dies (killed, a
  crash) is a failure that says so, and a sleep it left ``running`` is marked interrupted.

Callbacks run on the GUI thread. The shape follows Anki's ``QueryOp(...).success().failure()``
and superqt's ``GeneratorWorker`` (one ``yielded`` signal, an abort check at every yield, errors
as exceptions).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import pickle
import signal
import sys
import threading
import time
import traceback
import types
import weakref
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from nocturne_desktop.core import logfile
from nocturne_desktop.core.cancel import Cancelled, CancelToken
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.ports import ModelCancelled
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import StoreChanges
from nocturne_desktop.ui import childproc
from nocturne_desktop.ui.childproc import ChildRequest, ClientSpec, WorkerDied
from nocturne_desktop.ui.gcdefer import deferred_full_collections

Callback = Callable[[Any], None]
log = logging.getLogger("nocturne.ui")


# --- model clients -------------------------------------------------------------------------------


class ModelSource:
    """Where a job gets its model client and where it gives it back.

    This base builds a fresh client per job and closes it afterwards; :class:`ClientPool`
    reuses idle clients (building an HTTP client loads the TLS stack, tens of ms holding the
    GIL, which the GUI thread would feel at the start of every job).
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory

    def lease(self) -> Any:
        return self._factory()

    def give_back(self, client: Any) -> None:
        close_quietly(client)

    def close(self) -> None:
        """Nothing is kept here."""


class ClientPool(ModelSource):
    """Reuses idle clients. A client is used by one job at a time (they are handed over, never
    shared); ``close`` drops the idle ones, e.g. when the settings change."""

    def __init__(self, factory: Callable[[], Any], *, keep: int = 2) -> None:
        super().__init__(factory)
        self._idle: list[Any] = []
        self._keep = keep
        self._lock = threading.Lock()
        self._closed = False

    def lease(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._factory()

    def give_back(self, client: Any) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._keep:
                self._idle.append(client)
                return
        close_quietly(client)

    def warm(self) -> None:
        """Build one client now (start-up, on the GUI thread, before the window shows)."""
        self.give_back(self.lease())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            close_quietly(c)


# --- helpers -------------------------------------------------------------------------------------

_threads: weakref.WeakSet[QThread] = weakref.WeakSet()
_live_jobs: set[Job] = set()
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


def describe_error(exc: BaseException) -> str:
    """A sentence for a person: our typed errors already are one; anything else is a bug."""
    if isinstance(exc, NocturneError | ValueError):
        text = str(exc).strip()
        return text or type(exc).__name__
    where = logfile.details()
    return f"unexpected error ({type(exc).__name__}: {exc})" + (f". {where}" if where else "")


def close_quietly(obj: object) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # closing must never hide the real outcome
            traceback.print_exc()


# --- the job -------------------------------------------------------------------------------------


class JobContext:
    """What a job body gets: the cancel token, and a store and a model client of its own, both
    made on first use (on the job's thread) and released when the body ends."""

    def __init__(self, cancel: CancelToken, db_path: Path | None, models: ModelSource | None) -> None:
        self.cancel = cancel
        self._db_path = db_path
        self._models = models
        self._store: Store | None = None
        self._model: Any = None
        self.store_thread: int | None = None
        """``threading.get_ident()`` of the thread that opened :attr:`store` (tests assert it)."""
        self.changes_to: Callable[[reads.ChangedRows], None] | None = None
        """Where the rows of every commit on :attr:`store` go (set by :meth:`Job.on_changes`)."""

    @property
    def store(self) -> Store:
        if self._store is None:
            if self._db_path is None:
                raise RuntimeError("this job was started without a database path")
            self._store = Store(self._db_path)
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
    def model(self) -> Any:
        if self._model is None:
            if self._models is None:
                raise RuntimeError("this job was started without a model source")
            self._model = self._models.lease()
        return self._model

    def check(self) -> None:
        """Raise :class:`Cancelled` if the job was stopped or cancelled."""
        self.cancel.raise_if_cancelled()

    def release(self) -> None:
        if self._model is not None and self._models is not None:
            model, self._model = self._model, None
            self._models.give_back(model)
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


class _Runner(QObject):
    """The part of a job that lives on its thread. It never touches widgets."""

    yielded = Signal(object)
    changed = Signal(object)
    returned = Signal(object)
    errored = Signal(object)
    ended = Signal()
    finished = Signal()

    def __init__(self, name: str, fn: Callable[[JobContext], Any], ctx: JobContext,
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
        except _Reported as reported:  # logged where it happened (the worker process)
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

    def _execute(self) -> Any:
        result = self.fn(self.ctx)
        if isinstance(result, Generator):
            result = self._drive(result)
        return result

    def signal(self) -> None:
        """The job was stopped or cancelled (any thread): the token says so already."""

    def _drive(self, gen: Generator[Any, None, Any]) -> Any:
        """Relay every yield; the abort check runs at each one."""
        return childproc.drive(gen, self.yielded.emit, self.abort, self.finish_on_cancel)


# --- a job in a worker process -------------------------------------------------------------------

SPAWN = multiprocessing.get_context("spawn")
"""Never fork: the window's process runs Qt and threads, which a forked child would inherit
half-locked."""
_main_lock = threading.Lock()


@dataclass(frozen=True)
class ChildProcess:
    """How a job runs in a worker process (``Job(..., process=ChildProcess(...))``)."""

    client: ClientSpec | Callable[[], ClientSpec | None] | None = None
    """The worker's model client: a spec, or a function that makes one on the job's thread in
    the window's process (it may start the built-in engine there, and block while it loads)."""
    what: str = "the job"
    """Names the work in the message of a worker that died (``the sleep``)."""
    after_death: str = ""
    """Said after that message (``memory is as of the last completed pass``)."""
    grace_s: float = 20.0
    """Seconds a cancelled worker may take to end at its next boundary before it is killed (a
    window closing waits for it)."""


class _NotStarted(Exception):
    """The worker process could not be started (the job then runs on its thread)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Reported(Exception):
    """A worker's failure: delivered as ``exc``, already logged in the worker's records."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


@contextlib.contextmanager
def _no_main_for_the_child() -> Iterator[None]:
    """While a worker starts: spawn would have the child import this process's ``__main__``
    module again (the script or ``-m`` module that started the window, a benchmark, a test
    runner), which for Nocturne is never needed (every body is a function of a package module)
    and may load Qt there. With a bare ``__main__`` in its place for the moment of the start,
    the child imports only what the request names."""
    with _main_lock:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


def _send_buffers(ctl: Any, buffers: list[pickle.PickleBuffer]) -> None:
    """The request's out-of-band buffers to the worker, each as one message: the writes
    release the GIL (the worker reads them before anything else). A worker that died before
    reading them breaks the pipe: quietly, its end is seen when it is followed."""
    try:
        for buf in buffers:
            ctl.send_bytes(buf)
    except (OSError, ValueError):
        pass


def _ended_how(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"exit code {code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"exit code {code}"
    return f"exit code {code}"


class _ProcessRunner(_Runner):
    """The job's thread of a job in a worker process: starts the child, relays its messages
    as this runner's signals, forwards a cancel, reaps it (see :mod:`~.childproc`)."""

    def __init__(self, name: str, fn: Callable[[JobContext], Any], ctx: JobContext,
                 abort: threading.Event, finish_on_cancel: bool, process: ChildProcess) -> None:
        super().__init__(name, fn, ctx, abort, finish_on_cancel)
        self.process = process
        self.pid: int | None = None
        self.in_child = False
        self._ctl: Any = None
        self._ctl_lock = threading.Lock()
        self._sent: bool | None = None
        """None: no cancel sent yet; False: a stop; True: an abort."""
        self._cancel_at: float | None = None
        self._killed = False

    def _client(self) -> ClientSpec | None:
        client = self.process.client
        return client() if callable(client) else client

    def _execute(self) -> Any:
        spec = self._client()
        self.ctx.check()  # cancelled while the engine started: no worker
        request = ChildRequest(self.name, self.fn, self.ctx._db_path, spec,
                               self.finish_on_cancel, logfile.log_path())
        # The request's big parts (a review plan's pages: ~37 MB at 100k facts) stay out of
        # its pickle, as buffers sent to the worker once it runs (see _run_child): one pickle
        # of them here, then again into spawn's start-up data, is a C call each of tens of ms
        # holding the GIL, which the GUI thread would wait for.
        buffers: list[pickle.PickleBuffer] = []
        try:
            payload = pickle.dumps(request, protocol=5, buffer_callback=buffers.append)
        except Exception as exc:  # a closure, a model object: it runs on this thread instead
            log.info("job %s runs on its thread: its body does not pickle (%s)", self.name, exc)
            return self._on_the_thread(spec)
        try:
            return self._run_child(payload, buffers)
        except _NotStarted as exc:  # no process could be made (out of memory, of processes)
            log.warning("job %s runs on its thread: its worker process did not start (%s)",
                        self.name, exc.cause)
            return self._on_the_thread(spec)

    def _on_the_thread(self, spec: ClientSpec | None) -> Any:
        if spec is not None and self.ctx._models is None:
            self.ctx._models = ModelSource(spec.build)
        return super()._execute()

    # -- control (any thread) ----------------------------------------------------------------------
    def signal(self) -> None:
        with self._ctl_lock:
            if self._ctl is None or not self.ctx.cancel.cancelled:
                return
            abort = self.abort.is_set()
            if self._sent is not None and (self._sent or not abort):
                return
            with contextlib.suppress(OSError, EOFError, ValueError):  # it ended already
                self._ctl.send(("cancel", abort))
            self._sent = abort
            if self._cancel_at is None:
                self._cancel_at = time.monotonic()

    # -- the child -----------------------------------------------------------------------------
    def _run_child(self, payload: bytes, buffers: list[pickle.PickleBuffer]) -> Any:
        """Start the worker with the request's pickle (small: spawn pickles it once more into
        the worker's start-up data), send it the request's out-of-band buffers on the control
        pipe, then follow it to its end."""
        recv, child_send = SPAWN.Pipe(duplex=False)
        child_recv, ctl = SPAWN.Pipe(duplex=False)
        proc = SPAWN.Process(target=childproc.child_main,
                             args=(child_send, child_recv, payload, len(buffers)),
                             name=f"nocturne-{self.name}", daemon=True)
        try:
            with _no_main_for_the_child():
                proc.start()
        except BaseException as exc:
            for c in (recv, child_send, child_recv, ctl):
                c.close()
            if isinstance(exc, OSError):
                raise _NotStarted(exc) from exc
            raise
        child_send.close()  # the child's ends: our copies would hide its end of file
        child_recv.close()
        self.pid, self.in_child = proc.pid, True
        try:
            _send_buffers(ctl, buffers)
            buffers.clear()
            with self._ctl_lock:  # only now: a cancel must follow the buffers on this pipe
                self._ctl = ctl
            self.signal()  # a cancel that came while it started
            # each commit's rows are unpickled here, a Forget's ~50k mutations at once: a full
            # collection set off meanwhile scans them all holding this process's GIL (10-160
            # ms the GUI thread could not run); deferred as in the worker (ui/gcdefer.py)
            with deferred_full_collections():
                outcome = self._follow(proc, recv)
        finally:
            with self._ctl_lock:
                self._ctl = None
            ctl.close()  # a worker still running sees its end and cancels itself
            code = self._reap(proc)
            recv.close()
        kind, value = outcome
        if kind == "error":
            raise _Reported(value)
        if kind == "died":
            message = (f"{self.process.what}'s worker process did not end within "
                       f"{self.process.grace_s:g} s of the cancel and was stopped"
                       if self._killed else
                       f"{self.process.what}'s worker process ended unexpectedly "
                       f"({_ended_how(code)})")
            if self.process.after_death:
                message += f"; {self.process.after_death}"
            if not self._killed:
                log.warning("job %s: %s", self.name, message)
            self._mark_interrupted()
            raise _Reported(WorkerDied(message, exitcode=code))
        return value

    def _follow(self, proc: Any, recv: Any) -> tuple[str, Any]:
        """Relay the worker's messages until its end: ``("return", value)``, ``("error",
        exc)``, or ``("died", None)`` when it ended without saying so."""
        outcome: tuple[str, Any] = ("return", None)
        while True:
            if not recv.poll(0):
                ready = multiprocessing.connection.wait([recv, proc.sentinel], timeout=0.25)
                if not ready:
                    self._watch_grace(proc)
                    continue
                if recv not in ready and not recv.poll(0):
                    return ("died", None)
            try:
                msg = recv.recv()
            except EOFError:  # its end of the pipe closed without an end message
                return ("died", None)
            except Exception:  # a message that does not unpickle here: said, and skipped
                log.exception("job %s: a message from its worker process could not be read",
                              self.name)
                continue
            tag = msg[0]
            if tag == "end":
                return outcome
            if tag == "yield":
                if not self.abort.is_set():
                    self.yielded.emit(msg[1])
            elif tag == "changes":
                self.changed.emit(msg[1])
            elif tag == "log":
                _tag, name, level, text, exc_text, thread = msg
                childproc.relog(name, level, text, exc_text, thread, pid=proc.pid)
            elif tag == "return":
                outcome = ("return", msg[1])
            elif tag == "error":
                outcome = ("error", msg[1])

    def _watch_grace(self, proc: Any) -> None:
        at = self._cancel_at
        if at is None or self._killed or time.monotonic() - at < self.process.grace_s:
            return
        log.warning("job %s: its worker process (pid %s) did not end within %g s of the "
                    "cancel; killing it", self.name, proc.pid, self.process.grace_s)
        self._killed = True
        with contextlib.suppress(OSError, ValueError):
            proc.kill()

    def _reap(self, proc: Any) -> int | None:
        """Join the worker (killed if it does not exit); its exit code."""
        proc.join(5.0)
        if proc.is_alive():  # it said its end but does not exit
            log.warning("job %s: its worker process (pid %s) did not exit; killing it",
                        self.name, proc.pid)
            with contextlib.suppress(OSError, ValueError):
                proc.kill()
            proc.join(5.0)
        code: int | None = proc.exitcode
        with contextlib.suppress(ValueError):
            proc.close()
        return code

    def _mark_interrupted(self) -> None:
        """A worker that died may have left its sleep ``running``: mark it interrupted now (its
        sleep lock went with its process), and let the views see that commit."""
        path = self.ctx._db_path
        if path is None:
            return
        try:
            with Store(path) as store:
                relay = self.ctx.changes_to
                if relay is not None:
                    store.subscribe(lambda ch: relay(reads.rows_of_commit(store, ch)))
                ids = store.mark_interrupted_sleeps()
        except Exception as exc:
            log.warning("job %s: could not mark its sleep interrupted: %s", self.name, exc)
            return
        if ids:
            log.warning("job %s: sleep %s marked interrupted", self.name,
                        ", ".join(map(str, ids)))


class Job(QObject):
    """A function or generator run on its own thread; callbacks run on the GUI thread.

    Build, attach callbacks (each returns the job), then :meth:`start`. See the module docstring.
    """

    def __init__(
        self,
        fn: Callable[[JobContext], Any],
        *,
        name: str,
        db_path: Path | None = None,
        models: ModelSource | None = None,
        finish_on_cancel: bool = False,
        process: ChildProcess | None = None,
    ) -> None:
        """``process``: run the body in a worker process (see the module docstring); its
        model client is ``process.client``, so ``models`` must be None."""
        if process is not None and models is not None:
            raise ValueError("a job in a worker process builds its own model client "
                             "(ChildProcess.client); pass no models")
        super().__init__()
        self.name = name
        self.token = CancelToken()
        self._abort = threading.Event()
        self._on_yield: list[Callback] = []
        self._on_success: list[Callback] = []
        self._on_failure: list[Callback] = []
        self._on_end: list[Callable[[], None]] = []
        self._on_changes: list[Callback] = []
        self._started = False
        self._ended = False
        self.context = JobContext(self.token, Path(db_path) if db_path is not None else None, models)
        self._runner = (_Runner(name, fn, self.context, self._abort, finish_on_cancel)
                        if process is None else
                        _ProcessRunner(name, fn, self.context, self._abort, finish_on_cancel,
                                       process))
        self.worker_thread = QThread()
        self.worker_thread.setObjectName(f"nocturne-{name}")

    # -- building ------------------------------------------------------------------------------
    def on_yield(self, cb: Callback) -> Job:
        """``cb(item)`` for every item a generator body yields (not after a cancel)."""
        self._on_yield.append(cb)
        return self

    def on_changes(self, cb: Callback) -> Job:
        """``cb(ChangedRows)`` after every commit the body makes on ``ctx.store`` (also after a
        cancel: the write happened)."""
        self._on_changes.append(cb)
        self.context.changes_to = self._runner.changed.emit
        return self

    def success(self, cb: Callback) -> Job:
        """``cb(value)`` with what the body returned (a generator's return value)."""
        self._on_success.append(cb)
        return self

    def failure(self, cb: Callback) -> Job:
        """``cb(exception)`` when the body raised (not for a cancel)."""
        self._on_failure.append(cb)
        return self

    def ended(self, cb: Callable[[], None]) -> Job:
        """``cb()`` once the body is over and its store closed; always, also after a cancel."""
        self._on_end.append(cb)
        return self

    def start(self) -> Job:
        if self._started:
            raise RuntimeError(f"job {self.name} was started already")
        self._started = True
        runner, thread = self._runner, self.worker_thread
        runner.moveToThread(thread)
        thread.started.connect(runner.run)
        # Direct: quit() is thread-safe, and a queued call would wait for the GUI thread, which
        # may itself be blocked in wait() (closing the window).
        runner.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        # No deleteLater on the runner or the thread: both are owned by Python (this job), and a
        # deferred delete on the worker thread raced the GUI thread freeing the same objects
        # when the job's last reference went (a native crash at random, mostly on close). The
        # job stays alive until its thread has finished (below), then Python frees both on the
        # GUI thread, when neither can be running.
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
        return self._runner.pid if isinstance(self._runner, _ProcessRunner) else None

    @property
    def in_child(self) -> bool:
        """Whether the body runs (or ran) in a worker process rather than on the thread."""
        return isinstance(self._runner, _ProcessRunner) and self._runner.in_child

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
    def _deliver_yield(self, item: object) -> None:
        if not self._abort.is_set():
            for cb in self._on_yield:
                cb(item)

    @Slot(object)
    def _deliver_changes(self, rows: object) -> None:
        for cb in self._on_changes:
            cb(rows)

    @Slot(object)
    def _deliver_success(self, value: object) -> None:
        if not self._abort.is_set():
            for cb in self._on_success:
                cb(value)

    @Slot(object)
    def _deliver_failure(self, exc: object) -> None:
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


class JobSlot:
    """At most one current job of a kind: starting the next supersedes (cancels) the previous,
    whose results are then dropped. Also remembers every job not over yet, to wait on close."""

    def __init__(self) -> None:
        self.current: Job | None = None
        self._all: list[Job] = []

    def start(self, job: Job) -> Job:
        if self.current is not None and not self.current.done:
            self.current.cancel()
        self.current = job
        self._all = [j for j in self._all if not j.done]
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
        ok = all(job.wait(ms) for job in self._all if not job.done)
        self._all = [j for j in self._all if not j.done]
        return ok
