"""A job whose body runs in a worker process: the job's thread starts the child (spawn), sends
it the request, relays its messages as the runner's signals, forwards a cancel and reaps it.
The worker side is :mod:`nocturne_desktop.ui.jobs.child`; why and how, ``docs/window.md``
(background work)."""

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
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from typing import TYPE_CHECKING

from nocturne_desktop.core import logfile
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.ui.jobs import child
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.child import ChildRequest, Connection
from nocturne_desktop.ui.jobs.deferred_gc import deferred_full_collections
from nocturne_desktop.ui.jobs.errors import ChildFailure, WorkerDied
from nocturne_desktop.ui.jobs.pool import ClientSpec, ModelSource
from nocturne_desktop.ui.jobs.thread import Reported, ThreadRunner

if TYPE_CHECKING:
    from nocturne_desktop.ui.jobs.job import JobContext

log = logging.getLogger("nocturne.ui")

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


def _send_buffers(ctl: Connection, buffers: list[pickle.PickleBuffer]) -> None:
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


class ProcessRunner(ThreadRunner):
    """The job's thread of a job in a worker process: starts the child, relays its messages
    as this runner's signals, forwards a cancel, reaps it. A body that does not pickle, or a
    worker that cannot start, runs on this thread instead."""

    def __init__(self, name: str, fn: Callable[[BodyContext], object], ctx: JobContext,
                 abort: threading.Event, finish_on_cancel: bool, process: ChildProcess) -> None:
        super().__init__(name, fn, ctx, abort, finish_on_cancel)
        self.process = process
        self.pid: int | None = None
        self.in_child = False
        self._ctl: Connection | None = None
        self._ctl_lock = threading.Lock()
        self._sent: bool | None = None
        """None: no cancel sent yet; False: a stop; True: an abort."""
        self._cancel_at: float | None = None
        self._killed = False

    def _client(self) -> ClientSpec | None:
        client = self.process.client
        return client() if callable(client) else client

    def _execute(self) -> object:
        spec = self._client()
        self.ctx.check()  # cancelled while the engine started: no worker
        request = ChildRequest(self.name, self.fn, self.ctx.db_path, spec,
                               self.finish_on_cancel, logfile.log_path())
        # The request's big parts (a review plan's pages) stay out of its pickle, as buffers
        # sent to the worker once it runs (_run_child): pickled here and again into spawn's
        # start-up data, they would hold the GIL from the GUI thread twice.
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

    def _on_the_thread(self, spec: ClientSpec | None) -> object:
        if spec is not None and self.ctx.models is None:
            self.ctx.models = ModelSource(spec.build)
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
    def _run_child(self, payload: bytes, buffers: list[pickle.PickleBuffer]) -> object:
        """Start the worker with the request's pickle (small: spawn pickles it once more into
        the worker's start-up data), send it the request's out-of-band buffers on the control
        pipe, then follow it to its end."""
        recv, child_send = SPAWN.Pipe(duplex=False)
        child_recv, ctl = SPAWN.Pipe(duplex=False)
        proc = SPAWN.Process(target=child.child_main,
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
            # each commit's rows are unpickled here (a Forget's mutations at once): no full
            # collection scanning them all while the GUI thread waits for the GIL
            with deferred_full_collections():
                outcome = self._follow(proc, recv)
        finally:
            with self._ctl_lock:
                self._ctl = None
            ctl.close()  # a worker still running sees its end and cancels itself
            code = self._reap(proc)
            recv.close()
        kind, value = outcome
        if kind == "error":  # the worker sends an exception (crossing() makes sure)
            raise Reported(value if isinstance(value, BaseException) else ChildFailure(str(value)))
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
            raise Reported(WorkerDied(message, exitcode=code))
        return value

    def _follow(self, proc: SpawnProcess, recv: Connection) -> tuple[str, object]:
        """Relay the worker's messages until its end: ``("return", value)``, ``("error",
        exc)``, or ``("died", None)`` when it ended without saying so."""
        outcome: tuple[str, object] = ("return", None)
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
                child.relog(name, level, text, exc_text, thread, pid=proc.pid)
            elif tag == "return":
                outcome = ("return", msg[1])
            elif tag == "error":
                outcome = ("error", msg[1])

    def _watch_grace(self, proc: SpawnProcess) -> None:
        at = self._cancel_at
        if at is None or self._killed or time.monotonic() - at < self.process.grace_s:
            return
        log.warning("job %s: its worker process (pid %s) did not end within %g s of the "
                    "cancel; killing it", self.name, proc.pid, self.process.grace_s)
        self._killed = True
        with contextlib.suppress(OSError, ValueError):
            proc.kill()

    def _reap(self, proc: SpawnProcess) -> int | None:
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
        path = self.ctx.db_path
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
