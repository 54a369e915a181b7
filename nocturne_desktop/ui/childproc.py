"""The worker-process side of a job: a body run in a child process, so that the window's GUI
thread shares no interpreter (no GIL) with it.

A long pass (a sleep over 100k facts) runs Python for seconds; on a thread of the window's
process every C++ → Python callback of the GUI thread (a model's ``data()`` during a paint)
waits for the GIL behind it - a convoy that made 150-250 ms gaps in the window. A
:class:`~nocturne_desktop.ui.jobs.Job` made with ``process=`` runs its body here instead,
through :func:`child_main`, in a process started with ``multiprocessing``'s *spawn* method
(never fork: the parent is a Qt process with threads).

This module imports no Qt (the layering test holds it and everything it imports to that): the
child loads the core, SQLite and - only for a model - the HTTP client, nothing of the window.

**The protocol.** The parent sends one pickled :class:`ChildRequest` (the body, the database
path, the model client's :class:`ClientSpec` with its API key: in the pickled start-up data on
a pipe, never on the command line or in the environment), pickled with protocol 5: what it
holds as :class:`pickle.PickleBuffer` (a review plan's pages, ~37 MB at 100k facts) is left
out of that pickle and sent first on a second pipe, one buffer per message (``send_bytes``:
the window's process never pickles them, and its writes release the GIL), and the child
reassembles the request from both before it runs the body. Later, on that second pipe, come
control messages ``("cancel", abort)``. The child answers with tagged tuples, in order:

- ``("yield", item)``: each item the body yields (dropped at once after an abort);
- ``("changes", ChangedRows)``: after each commit on the child's store, the rows it names read
  right after it (:func:`~nocturne_desktop.core.store.reads.rows_of_commit`, the consistency of an
  in-thread job), pickled: the window unpickles them in one C call instead of reading rows in
  its own Python;
- ``("log", name, level, message, exc_text, thread)``: a log record, written by the window to
  its one log file (:func:`relog`);
- ``("return", value)`` or ``("error", exception)`` (the same type and message when it
  pickles; else a :class:`ChildFailure` carrying the type, message and traceback), then
- ``("end",)``, always last.

A closed control pipe (the window's process is gone) cancels the body: a sleep then ends at
the next pass boundary and records itself cancelled, as it would in the window.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nocturne_desktop.core import logfile
from nocturne_desktop.core.cancel import Cancelled, CancelToken
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.ports import ModelCancelled
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import StoreChanges

log = logging.getLogger("nocturne.ui")


class BodyContext(Protocol):
    """What a job body may use, wherever it runs (a :class:`~nocturne_desktop.ui.jobs.JobContext`
    on a thread of the window, :class:`ChildContext` in a worker process)."""

    cancel: CancelToken

    @property
    def store(self) -> Store: ...

    @property
    def model(self) -> Any: ...

    def check(self) -> None: ...


@dataclass(frozen=True)
class ClientSpec:
    """A model client as data, so that a worker process can build its own: picklable, resolved
    (the built-in engine's address is found in the window's process, which runs the engine;
    a worker never starts a second one). The key is not in the ``repr``."""

    base_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    timeouts: Any = None
    """A :class:`nocturne_desktop.llm.Timeouts` (None: the client's defaults)."""
    temperature: float = 0.2

    def build(self) -> Any:
        """The HTTP client (imported here: a rules-only sleep never loads the HTTP stack)."""
        from nocturne_desktop.llm import OpenAIClient

        kwargs: dict[str, Any] = {} if self.timeouts is None else {"timeouts": self.timeouts}
        return OpenAIClient(self.base_url, self.model, api_key=self.api_key or None,
                            temperature=self.temperature, **kwargs)


@dataclass(frozen=True)
class ChildRequest:
    """What the worker process runs (pickled by the window's process)."""

    name: str
    body: Callable[[Any], Any]
    db_path: Path | None
    client: ClientSpec | None = None
    finish_on_cancel: bool = False
    log_path: Path | None = None
    """The window's log file, named by the messages of unexpected errors."""


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


def crossing(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling as the same type with the same message, else a
    :class:`ChildFailure` that says what it was (in the words the window uses for a bug)."""
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # any failure to round-trip means: send a substitute
        pass
    tb = "".join(traceback.format_exception(exc))
    where = logfile.details()
    return ChildFailure(f"unexpected error ({type(exc).__name__}: {exc})" +
                        (f". {where}" if where else ""),
                        type_name=type(exc).__name__, child_traceback=tb)


def relog(name: str, level: int, message: str, exc_text: str | None, thread: str,
          pid: int | None = None) -> None:
    """A worker's log record, written in this process (its handlers, its one log file)."""
    logger = logging.getLogger(name)
    if not logger.isEnabledFor(level):
        return
    record = logging.makeLogRecord({
        "name": name, "levelno": level, "levelname": logging.getLevelName(level),
        "msg": message, "args": None, "exc_text": exc_text or None,
        "threadName": f"worker {pid}:{thread}" if pid is not None else thread,
    })
    logger.handle(record)


# --- the child -----------------------------------------------------------------------------------


class _Outbox:
    """Sends to the parent from any thread of the child; once the parent is gone, quietly
    nothing (the body still ends cleanly on its cancelled token)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self.gone = False

    def send(self, msg: tuple[Any, ...]) -> None:
        with self._lock:
            if self.gone:
                return
            try:
                self._conn.send(msg)
            except (OSError, EOFError):
                self.gone = True


class _ForwardLogs(logging.Handler):
    def __init__(self, out: _Outbox) -> None:
        super().__init__()
        self._out = out

    def emit(self, record: logging.LogRecord) -> None:
        try:
            exc_text = record.exc_text
            if record.exc_info and not exc_text:
                exc_text = logging.Formatter().formatException(record.exc_info)
            self._out.send(("log", record.name, record.levelno, record.getMessage(), exc_text,
                            record.threadName or ""))
        except Exception:
            self.handleError(record)


class ChildContext:
    """The worker process's :class:`BodyContext`: its own store (opened on first use, every
    commit's rows sent to the window) and its own model client (built from the spec)."""

    def __init__(self, cancel: CancelToken, request: ChildRequest, out: _Outbox) -> None:
        self.cancel = cancel
        self._request = request
        self._out = out
        self._store: Store | None = None
        self._model: Any = None

    @property
    def store(self) -> Store:
        if self._store is None:
            if self._request.db_path is None:
                raise RuntimeError("this job was started without a database path")
            self._store = Store(self._request.db_path)
            self._store.subscribe(self._relay)
        return self._store

    def _relay(self, changes: StoreChanges) -> None:
        assert self._store is not None
        try:
            self._out.send(("changes", reads.rows_of_commit(self._store, changes)))
        except Exception:  # never fail the writer over a view's rows: the view reloads
            log.exception("sending the rows of a commit failed")
            self._out.send(("changes", reads.ChangedRows(changes, complete=False)))

    @property
    def model(self) -> Any:
        if self._model is None:
            if self._request.client is None:
                raise RuntimeError("this job was started without a model")
            self._model = self._request.client.build()
        return self._model

    def check(self) -> None:
        self.cancel.raise_if_cancelled()

    def release(self) -> None:
        model, self._model = self._model, None
        close = getattr(model, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.exception("closing the model client failed")
        store, self._store = self._store, None
        if store is not None:
            store.close()


def _listen(ctl: Any, token: CancelToken, aborted: threading.Event) -> None:
    """The control pipe: ``("cancel", abort)`` sets the token (and the abort); the pipe's end
    (the window's process is gone) cancels too."""
    while True:
        try:
            msg = ctl.recv()
        except (EOFError, OSError):
            aborted.set()
            token.cancel()
            return
        if isinstance(msg, tuple) and msg and msg[0] == "cancel":
            if len(msg) > 1 and msg[1]:
                aborted.set()
            token.cancel()


def _receive_buffers(ctl: Any, count: int) -> list[bytes]:
    """The request's out-of-band buffers, sent first on the control pipe. Its end before them
    (the window's process is gone) means there is nothing to run: a cancel."""
    try:
        return [ctl.recv_bytes() for _ in range(count)]
    except (EOFError, OSError) as exc:
        raise Cancelled("the window's process ended before the job's request arrived") from exc


def child_main(out_conn: Any, ctl_conn: Any, payload: bytes, buffers: int = 0) -> None:
    """The worker process's entry point (the target ``multiprocessing`` starts): ``payload``
    is the pickled :class:`ChildRequest` without its ``buffers`` out-of-band buffers, which
    come first on the control pipe."""
    # Ctrl+C in the terminal reaches the whole process group: the window decides (it cancels
    # or closes), the worker does not die of it mid-pass.
    with contextlib.suppress(ValueError, OSError):  # not the main thread, or no signals here
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = _Outbox(out_conn)
    token, aborted = CancelToken(), threading.Event()
    handler = _ForwardLogs(out)
    ctx: ChildContext | None = None
    name = "?"
    try:
        parts = _receive_buffers(ctl_conn, buffers)
        threading.Thread(target=_listen, args=(ctl_conn, token, aborted), name="control",
                         daemon=True).start()
        request: ChildRequest = pickle.loads(payload, buffers=parts)
        del parts
        name = request.name
        logfile.forward(handler, request.log_path)
        if request.client is not None:
            logfile.add_secret(request.client.api_key)
        ctx = ChildContext(token, request, out)
        result = request.body(ctx)
        if isinstance(result, Generator):
            result = drive(result, lambda item: out.send(("yield", item)), aborted,
                           request.finish_on_cancel)
        if not aborted.is_set():
            out.send(("return", result))
    except (Cancelled, ModelCancelled):
        pass
    except Exception as exc:
        if not isinstance(exc, NocturneError | ValueError):  # a bug: its traceback to the log
            log.error("job %s failed unexpectedly in its worker process", name, exc_info=exc)
        if not aborted.is_set():
            out.send(("error", crossing(exc)))
    finally:
        try:
            if ctx is not None:
                ctx.release()
        finally:
            out.send(("end",))
            logging.getLogger().removeHandler(handler)
            out_conn.close()
    # Everything is said and the store is closed: exit now. An interpreter's ordinary exit
    # would first free every object the passes left (a second or more after a sleep over 100k
    # facts), and the window waits for the process to end before the job ends.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)


def drive(gen: Generator[Any, None, Any], relay: Callable[[Any], None], aborted: threading.Event,
          finish_on_cancel: bool) -> Any:
    """Run a job body's generator to its return value, ``relay(item)`` for every yield, the
    abort checked at each one (a job on a thread and one in a worker process both use it).

    After an abort a body made with ``finish_on_cancel`` is drained (it ends on its cancel token
    by itself, writing its own record) with nothing more relayed; any other is closed there."""
    try:
        while True:
            try:
                item = next(gen)
            except StopIteration as stop:
                return stop.value
            if aborted.is_set():
                if not finish_on_cancel:
                    return None
                continue
            relay(item)
    finally:
        gen.close()
