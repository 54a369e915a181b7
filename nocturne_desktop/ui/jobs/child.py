"""The worker-process side of a job: its body run in a child process started with
``multiprocessing``'s spawn, so that the window's GUI thread shares no interpreter (no GIL) with
a long pass. :func:`child_main` is the entry point; the protocol on its two pipes is described
in ``docs/window.md`` (background work).

This module imports no Qt (the layering test holds it and everything it imports to that): the
worker loads the core, SQLite and, only for a model, the HTTP client; nothing of the window.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop.core import logfile
from nocturne_desktop.core.cancel import Cancelled, CancelToken
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.ports import ModelCancelled, ModelClient
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import StoreChanges
from nocturne_desktop.ui.jobs.body import BodyContext, drive
from nocturne_desktop.ui.jobs.errors import ChildFailure, unexpected
from nocturne_desktop.ui.jobs.pool import ClientSpec

log = logging.getLogger("nocturne.ui")

Connection = multiprocessing.connection.Connection
"""One end of a pipe between the window's process and its worker."""


@dataclass(frozen=True)
class ChildRequest:
    """What the worker process runs (pickled by the window's process)."""

    name: str
    body: Callable[[BodyContext], object]
    db_path: Path | None
    client: ClientSpec | None = None
    finish_on_cancel: bool = False
    log_path: Path | None = None
    """The window's log file, named by the messages of unexpected errors."""


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
    return ChildFailure(unexpected(exc), type_name=type(exc).__name__, child_traceback=tb)


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

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self.gone = False

    def send(self, msg: tuple[object, ...]) -> None:
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
        self._model: ModelClient | None = None

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
    def model(self) -> ModelClient:
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


def _listen(ctl: Connection, token: CancelToken, aborted: threading.Event) -> None:
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


def _receive_buffers(ctl: Connection, count: int) -> list[bytes]:
    """The request's out-of-band buffers, sent first on the control pipe. Its end before them
    (the window's process is gone) means there is nothing to run: a cancel."""
    try:
        return [ctl.recv_bytes() for _ in range(count)]
    except (EOFError, OSError) as exc:
        raise Cancelled("the window's process ended before the job's request arrived") from exc


def child_main(out_conn: Connection, ctl_conn: Connection, payload: bytes, buffers: int = 0) -> None:
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
    # would first free every object the passes left, and the window waits for the process to
    # end before the job ends.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(0)
