"""Background work: thin QObject adapters over the core's plain functions and generators.

Every job follows the canonical wiring (worker without parent → ``moveToThread`` →
``started→run``, ``finished→quit``, ``deleteLater`` on both). A worker opens ITS OWN
:class:`Store` on the database path inside its thread and closes it before finishing; the GUI
thread keeps its own ``Store`` for reads. Every signal carries the job's ``run_id`` so the
receiver can ignore what a cancelled (or superseded) job still sends.

Workers never touch widgets. Errors never vanish: anything raised inside ``work()`` is turned
into ``failed(run_id, message)``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

# Imported here, on the GUI thread at start-up, not lazily inside a worker: an import holds the
# GIL for long stretches, which would stall the GUI the first time a job starts.
from nocturne_desktop.core.agent import ChatAgent
from nocturne_desktop.core.cancel import Cancelled, CancelToken
from nocturne_desktop.core.encoder import Encoder
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelCancelled, ModelClient, ModelError, ModelTruncated
from nocturne_desktop.core.quiz import run_quiz
from nocturne_desktop.core.sleep import DEFAULT_BUDGET_TOKENS, run_sleep
from nocturne_desktop.core.store import Store

ModelFactory = Callable[[], ModelClient]
log = logging.getLogger("nocturne.ui")


class ModelSource:
    """Where a worker gets its model client and where it gives it back.

    This base builds a fresh client per job and closes it afterwards; :class:`ClientPool`
    reuses idle clients (building an HTTP client loads the TLS stack, tens of ms holding the
    GIL, which the GUI thread would feel at the start of every job).
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory

    def lease(self) -> Any:
        return self._factory()

    def give_back(self, client: Any) -> None:
        _close_quietly(client)

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
        _close_quietly(client)

    def warm(self) -> None:
        """Build one client now (start-up, on the GUI thread, before the window shows)."""
        self.give_back(self.lease())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            _close_quietly(c)

_run_ids = itertools.count(1)
_threads: weakref.WeakSet[QThread] = weakref.WeakSet()
_live_jobs: set[Job] = set()


def next_run_id() -> int:
    return next(_run_ids)


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
    return f"unexpected error ({type(exc).__name__}: {exc})"


def _close_quietly(obj: object) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # closing must never hide the real outcome
            traceback.print_exc()


class Worker(QObject):
    """Base worker. Subclasses implement :meth:`work`.

    Signals: ``failed(run_id, message)`` when ``work`` raised; ``ended(run_id)`` then
    ``finished()`` always, last.
    """

    failed = Signal(int, str)
    ended = Signal(int)
    finished = Signal()

    def __init__(self, run_id: int, cancel: CancelToken | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.cancel = cancel or CancelToken()

    def work(self) -> None:
        raise NotImplementedError

    @Slot()
    def run(self) -> None:
        try:
            self.work()
        except (Cancelled, ModelCancelled):
            pass
        except Exception as exc:
            if not isinstance(exc, NocturneError | ValueError):  # a bug: keep its traceback
                log.error("%s failed unexpectedly", type(self).__name__, exc_info=exc)
            self.failed.emit(self.run_id, describe_error(exc))
        finally:
            self.ended.emit(self.run_id)
            self.finished.emit()


class Job:
    """A started worker on its own thread. Hold it to cancel or wait; drop it when done."""

    def __init__(self, worker: Worker, name: str) -> None:
        self.worker = worker
        self.run_id = worker.run_id
        self.cancel_token = worker.cancel
        self.name = name
        self.thread = QThread()
        self.thread.setObjectName(f"nocturne-{name}-{self.run_id}")
        self._done = False
        worker.moveToThread(self.thread)
        self.thread.started.connect(worker.run)
        # Direct: quit() is thread-safe, and a queued call would wait for the GUI thread, which
        # may itself be blocked in wait() (closing the window).
        worker.finished.connect(self.thread.quit, Qt.ConnectionType.DirectConnection)
        worker.finished.connect(worker.deleteLater)
        self.thread.finished.connect(self.thread.deleteLater)
        _threads.add(self.thread)

    def start(self) -> Job:
        _live_jobs.add(self)
        self.thread.finished.connect(self._forget)
        self.thread.start()
        return self

    def _forget(self) -> None:
        self._done = True
        _live_jobs.discard(self)

    @property
    def done(self) -> bool:
        if self._done:
            return True
        try:
            return self.thread.isFinished()
        except RuntimeError:
            return True

    def cancel(self) -> None:
        self.cancel_token.cancel()

    def wait(self, ms: int = 30_000) -> bool:
        """Block until the thread ended (used on close and in tests only)."""
        try:
            return bool(self.thread.wait(ms))
        except RuntimeError:
            return True


def start_job(worker: Worker, name: str) -> Job:
    return Job(worker, name).start()


# --- chat ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EncodeSummary:
    """What the encoder did after a reply, flattened for the chat pane."""

    remembered: tuple[tuple[str, str, str], ...]
    """(id, block, text) of each accepted fact."""
    refused: tuple[tuple[str, str], ...]
    """(proposed text, reason) of each refused fact."""
    error: str | None = None


def _summarise_encode(result: Any) -> EncodeSummary:
    remembered = tuple((f.id, f.block, f.text) for f in getattr(result, "accepted", ()))
    refused = []
    for item, reason in getattr(result, "rejected", ()):
        text = item.get("text") if isinstance(item, dict) else None
        refused.append((str(text if text is not None else item), str(reason)))
    return EncodeSummary(remembered, tuple(refused), getattr(result, "error", None))


class ChatWorker(Worker):
    """Records the user's turn, streams one reply, then runs the encoder over the new turns.

    Signals: ``accepted(run_id, turn_number)`` once the user's turn is committed (before the
    model is called; the input box may let go of the text then), ``tokens(run_id, text)``
    (coalesced to at most one per ~16 ms), ``replied(run_id, full_text, stopped)``,
    ``encoded(run_id, EncodeSummary)``, ``failed(run_id, message)``, ``finished()``.

    :meth:`stop_reply` (Esc) stops the reply only: the encoder still reads what the person
    said. Cancelling the job's token stops everything, the encoder included.
    """

    accepted = Signal(int, int)
    tokens = Signal(int, str)
    replied = Signal(int, str, bool)
    encoded = Signal(int, object)

    COALESCE_S = 0.016

    def __init__(
        self, run_id: int, db_path: Path, models: ModelSource, user_text: str
    ) -> None:
        super().__init__(run_id)
        self.db_path = db_path
        self.models = models
        self.user_text = user_text
        self.reply_cancel = CancelToken()
        self.cancel.on_cancel(self.reply_cancel.cancel)
        self._phase_lock = threading.Lock()
        self._replying = True

    def stop_reply(self) -> bool:
        """Stop the reply, keep the encoder; False once the reply is over (cancel the job)."""
        with self._phase_lock:
            if not self._replying:
                return False
            self.reply_cancel.cancel()
            return True

    def work(self) -> None:
        store = Store(self.db_path)
        model = None
        try:
            model = self.models.lease()
            parts: list[str] = []
            pending: list[str] = []
            last = 0.0
            stopped = False
            cut: str | None = None
            reply = ChatAgent(store, model).stream_reply(self.user_text, cancel=self.reply_cancel)
            if reply.user_turn is not None:
                self.accepted.emit(self.run_id, reply.user_turn.n)
            stream: Iterator[str] = reply
            try:
                for piece in stream:
                    parts.append(piece)
                    pending.append(piece)
                    now = time.monotonic()
                    if now - last >= self.COALESCE_S:
                        self.tokens.emit(self.run_id, "".join(pending))
                        pending.clear()
                        last = now
                    if self.reply_cancel.cancelled:
                        stopped = True
                        break
            except (ModelCancelled, Cancelled):
                stopped = True
            except ModelTruncated as exc:  # cut at the reply-size cap: the part before is kept
                stopped = True
                cut = describe_error(exc)
            finally:
                close = getattr(stream, "close", None)
                if callable(close):
                    close()
                with self._phase_lock:
                    self._replying = False
            if pending:
                self.tokens.emit(self.run_id, "".join(pending))
            stopped = stopped or self.reply_cancel.cancelled
            self.replied.emit(self.run_id, "".join(parts), stopped)
            if cut is not None:
                self.failed.emit(self.run_id, cut)
            if self.cancel.cancelled:
                return
            # A stopped or cut reply still lets the encoder read what the person said.
            try:
                result = Encoder(store, model).encode_new_turns(cancel=self.cancel)
            except (ModelCancelled, Cancelled):
                return
            except ModelError as exc:
                self.encoded.emit(self.run_id, EncodeSummary((), (), describe_error(exc)))
                return
            self.encoded.emit(self.run_id, _summarise_encode(result))
        finally:
            if model is not None:
                self.models.give_back(model)
            store.close()


# --- sleep --------------------------------------------------------------------------------------


def _copy_figures(fig: Any) -> Any:
    """Passes mutate their figures after yielding; send the GUI a frozen copy."""
    if fig is None:
        return None
    return dataclasses.replace(fig, errors=list(fig.errors))


class SleepWorker(Worker):
    """Runs :func:`core.sleep.run_sleep` and relays one signal per event (S-APP-2).

    Signals: ``sleepStarted(run_id, SleepEvent)``, ``passStarted(run_id, PassFigures)``,
    ``passDone(run_id, PassFigures)``, ``passError(run_id, PassFigures, message)``,
    ``sleepFinished(run_id, kind, message, totals)`` with kind ``sleep done`` /
    ``sleep cancelled`` / ``sleep failed``; ``failed``; ``finished``.
    """

    sleepStarted = Signal(int, object)
    passStarted = Signal(int, object)
    passDone = Signal(int, object)
    passError = Signal(int, object, str)
    sleepFinished = Signal(int, str, str, object)

    def __init__(
        self,
        run_id: int,
        db_path: Path,
        models: ModelSource | None,
        policy: RetentionPolicy,
        *,
        dry_run: bool = False,
        temperature: float = 0.0,
        budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    ) -> None:
        super().__init__(run_id)
        self.db_path = db_path
        self.models = models
        self.policy = policy
        self.dry_run = dry_run
        self.temperature = temperature
        self.budget_tokens = budget_tokens

    def work(self) -> None:
        store = Store(self.db_path)
        model = None
        try:
            model = self.models.lease() if self.models is not None else None
            for ev in run_sleep(store, model, self.policy, dry_run=self.dry_run, cancel=self.cancel,
                                temperature=self.temperature, budget_tokens=self.budget_tokens):
                fig = _copy_figures(ev.figures)
                if ev.kind == "sleep started":
                    self.sleepStarted.emit(self.run_id, ev)
                elif ev.kind == "pass started":
                    self.passStarted.emit(self.run_id, fig)
                elif ev.kind == "pass done":
                    self.passDone.emit(self.run_id, fig)
                elif ev.kind == "pass error":
                    self.passError.emit(self.run_id, fig, ev.message)
                else:
                    self.sleepFinished.emit(self.run_id, ev.kind, ev.message, ev.totals or {})
        finally:
            if model is not None:
                self.models.give_back(model)  # type: ignore[union-attr]
            store.close()


# --- wake ---------------------------------------------------------------------------------------


class QuizWorker(Worker):
    """Runs :func:`core.quiz.run_quiz`. Signals: ``done(run_id, QuizReport)``, ``failed``,
    ``finished``."""

    done = Signal(int, object)

    def __init__(self, run_id: int, db_path: Path, models: ModelSource,
                 n_questions: int = 5) -> None:
        super().__init__(run_id)
        self.db_path = db_path
        self.models = models
        self.n_questions = n_questions

    def work(self) -> None:
        store = Store(self.db_path)
        model = None
        try:
            model = self.models.lease()
            report = run_quiz(store, model, n_questions=self.n_questions, cancel=self.cancel)
            if not self.cancel.cancelled:
                self.done.emit(self.run_id, report)
        finally:
            if model is not None:
                self.models.give_back(model)
            store.close()


# --- model listing / endpoint probe -------------------------------------------------------------


class ModelListWorker(Worker):
    """Asks the endpoint for its models (also serves as the reachability probe).

    Signals: ``listed(run_id, models, capabilities)``, ``failed``, ``finished``.
    """

    listed = Signal(int, list, dict)

    def __init__(self, run_id: int, client_factory: Callable[[], Any]) -> None:
        super().__init__(run_id)
        self.client_factory = client_factory

    def work(self) -> None:
        client = self.client_factory()
        # list_models() takes no token: closing the client from the cancelling thread aborts it.
        unregister = self.cancel.on_cancel(lambda: _close_quietly(client))
        try:
            if self.cancel.cancelled:
                return
            models = list(client.list_models())
            caps_fn = getattr(client, "capabilities", None)
            caps = dict(caps_fn()) if callable(caps_fn) else {}
            self.listed.emit(self.run_id, models, caps)
        finally:
            unregister()
            _close_quietly(client)
