"""The window's controller: settings, the GUI thread's store, and the background jobs.

Panels never start threads or open stores themselves; they call the session and listen to its
signals. The session owns one :class:`Store` for reads on the GUI thread (plus the short
one-transaction writes a person triggers: restore and undo), and starts every long job through
:mod:`nocturne_desktop.ui.workers`. Only one store-writing job runs at a time (``busy``); a
cancelled or superseded job's late signals are dropped by run id, so it never repaints the UI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Version
from nocturne_desktop.llm import OpenAIClient, Timeouts
from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles
from nocturne_desktop.ui import workers
from nocturne_desktop.ui.workers import (
    ChatWorker,
    ClientPool,
    Job,
    ModelListWorker,
    ModelSource,
    QuizWorker,
    SleepWorker,
    next_run_id,
    start_job,
)

log = logging.getLogger("nocturne.ui")

BUSY_LABELS = {"chat": "replying", "sleep": "sleeping", "dry-run": "dry run", "quiz": "quiz"}


def client_factory(settings: Settings, key: ApiKey) -> Callable[[], Any]:
    """A factory that builds an HTTP client from a frozen copy of the settings (called in the
    worker thread, so each job has its own client)."""

    def make() -> Any:
        t = settings.timeouts
        return OpenAIClient(
            settings.base_url,
            settings.model,
            api_key=key.reveal() or None,
            timeouts=Timeouts(
                connect=t.connect, first_token=t.first_token, idle=t.idle, total=t.total
            ),
            temperature=settings.temperature,
        )

    return make


class Session(QObject):
    """Signals:

    - ``busyChanged(str)``: the running job's kind (``chat``, ``sleep``, ``dry-run``, ``quiz``)
      or ``""`` when idle.
    - ``storeChanged()``: the store was written; views re-read and apply the difference.
    - ``versionCreated(Version)``: a restore, undo, redo or hand edit made a new version.
    - ``chatStarted(str)``, ``chatAccepted(int turn)`` (the user's turn is committed),
      ``chatTokens(str)``, ``chatReplied(str, bool stopped)``,
      ``chatEncoded(EncodeSummary)``, ``chatFailed(str)``.
    - ``sleepStarted(SleepEvent)``, ``passStarted(PassFigures)``, ``passDone(PassFigures)``,
      ``passError(PassFigures, str)``, ``sleepFinished(str kind, str message, dict totals)``.
    - ``quizDone(QuizReport)``, ``quizFailed(str)``.
    - ``endpointChecked(bool ok, str message, list models, dict capabilities)``.
    - ``settingsChanged(Settings)``.
    """

    busyChanged = Signal(str)
    storeChanged = Signal()
    versionCreated = Signal(object)
    chatStarted = Signal(str)
    chatAccepted = Signal(int)
    chatTokens = Signal(str)
    chatReplied = Signal(str, bool)
    chatEncoded = Signal(object)
    chatFailed = Signal(str)
    sleepStarted = Signal(object)
    passStarted = Signal(object)
    passDone = Signal(object)
    passError = Signal(object, str)
    sleepFinished = Signal(str, str, object)
    quizDone = Signal(object)
    quizFailed = Signal(str)
    endpointChecked = Signal(bool, str, list, dict)
    settingsChanged = Signal(object)

    def __init__(
        self,
        db_path: Path,
        settings: Settings | None = None,
        api_key: ApiKey | None = None,
        *,
        files: SettingsFiles | None = None,
        model_factory: Callable[[], ModelClient] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.db_path = Path(db_path)
        self.files = files
        self.settings = settings or Settings()
        self.api_key = api_key or ApiKey()
        self.model_factory_override = model_factory
        """Tests and the verifier may hand the session any ModelClient factory."""
        self._pool = self._new_pool()
        self.store = Store(self.db_path)
        self.interrupted_sleeps: list[int] = self._mark_interrupted_sleeps()
        """Sleeps a killed or crashed process left ``running``, marked ``interrupted`` now."""
        self.busy = ""
        self.closed = False
        self._job: Job | None = None
        self._probe: Job | None = None
        self._jobs: list[Job] = []
        """Every job started and not yet known to be over (waited for on close)."""
        self.endpoint_ok: bool | None = None
        self.endpoint_message = "not checked yet"
        self.capabilities: dict[str, str] = {}

    # -- plumbing ------------------------------------------------------------------------------
    def _mark_interrupted_sleeps(self) -> list[int]:
        """Start-up: a sleep still ``running`` whose process is gone (no live holder of the
        store's sleep lock) is marked ``interrupted``, so the timeline never shows a dead sleep
        as running. A sleep running live in another process is left alone."""
        try:
            return self.store.mark_interrupted_sleeps()
        except StoreError as exc:  # e.g. a read-only store: it stays as it is, said in the log
            log.warning("could not mark interrupted sleeps: %s", exc)
            return []

    def _new_pool(self) -> ModelSource:
        if self.model_factory_override is not None:
            return ModelSource(self.model_factory_override)
        pool = ClientPool(client_factory(self.settings, self.api_key))
        pool.warm()
        return pool

    def models(self) -> ModelSource:
        """The model clients jobs lease (one per job, handed back when it ends)."""
        return self._pool

    def _current(self, run_id: int) -> bool:
        job = self._job
        return job is not None and job.run_id == run_id and not job.cancel_token.cancelled

    def _set_busy(self, kind: str) -> None:
        self.busy = kind
        self.busyChanged.emit(kind)

    def _begin(self, kind: str, worker: workers.Worker) -> Job:
        if self.busy:
            raise RuntimeError(f"already {BUSY_LABELS.get(self.busy, self.busy)}")
        worker.ended.connect(self._on_worker_ended)
        job = workers.Job(worker, kind)
        self._job = job
        self._jobs.append(job)
        self._set_busy(kind)
        return job.start()

    @Slot(int)
    def _on_worker_ended(self, run_id: int) -> None:
        # A cancelled job keeps the busy slot until its worker really ended: the store may still
        # be finishing a pass, and no conflicting action may start before that.
        job = self._job
        if job is not None and job.run_id == run_id:
            self._job = None
            self._set_busy("")

    @property
    def job(self) -> Job | None:
        return self._job

    def cancel(self) -> None:
        """Stop whatever runs; its late signals are ignored from now on.

        During a chat reply this stops the reply only (Esc): the encoder still reads what the
        person said; a second cancel, while it remembers, stops that too."""
        job = self._job
        if job is None:
            return
        stop_reply = getattr(job.worker, "stop_reply", None)
        if self.busy == "chat" and callable(stop_reply) and stop_reply():
            return
        job.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> None:
        """Cancel every job, wait for their threads, close the store (window close)."""
        for job in self._jobs:
            if not job.done:
                job.cancel()
        self.wait_threads(timeout_ms)
        self._job = None
        self._probe = None
        if self.busy:
            self._set_busy("")
        if not self.closed:
            self.closed = True
            self._pool.close()
            self.store.close()

    def wait_threads(self, timeout_ms: int = 30_000) -> bool:
        """Block until every job's thread ended (window close and tests only)."""
        ok = all(job.wait(timeout_ms) for job in self._jobs if not job.done)
        self._jobs = [j for j in self._jobs if not j.done]
        return ok

    # -- settings ------------------------------------------------------------------------------
    def apply_settings(self, settings: Settings, key: ApiKey | None = None, *, save: bool = True) -> None:
        self.settings = settings
        if key is not None:
            self.api_key = key
        if save and self.files is not None:
            self.files.save(settings)
            if key is not None:
                self.files.save_key(key)
        self._pool.close()  # idle clients speak to the old endpoint; leased ones come back closed
        self._pool = self._new_pool()
        self.settingsChanged.emit(settings)
        self.check_endpoint()

    # -- chat ----------------------------------------------------------------------------------
    def send(self, text: str) -> int:
        text = text.strip()
        if not text:
            raise ValueError("nothing to send")
        w = ChatWorker(next_run_id(), self.db_path, self.models(), text)
        w.accepted.connect(self._on_accepted)
        w.tokens.connect(self._on_tokens)
        w.replied.connect(self._on_replied)
        w.encoded.connect(self._on_encoded)
        w.failed.connect(self._on_chat_failed)
        self.chatStarted.emit(text)
        return self._begin("chat", w).run_id

    @Slot(int, int)
    def _on_accepted(self, run_id: int, turn: int) -> None:
        if self._job is not None and self._job.run_id == run_id:
            self.chatAccepted.emit(turn)

    @Slot(int, str)
    def _on_tokens(self, run_id: int, text: str) -> None:
        if self._job is not None and self._job.run_id == run_id:
            # tokens that arrive after Stop are still this reply's, kept as partial text
            self.chatTokens.emit(text)

    @Slot(int, str, bool)
    def _on_replied(self, run_id: int, text: str, stopped: bool) -> None:
        if self._job is not None and self._job.run_id == run_id:
            self.chatReplied.emit(text, stopped)
            self.storeChanged.emit()  # the turns were recorded

    @Slot(int, object)
    def _on_encoded(self, run_id: int, summary: object) -> None:
        if self._current(run_id):
            self.chatEncoded.emit(summary)
            self.storeChanged.emit()

    @Slot(int, str)
    def _on_chat_failed(self, run_id: int, message: str) -> None:
        if self._job is not None and self._job.run_id == run_id:
            self.chatFailed.emit(message)

    # -- sleep ---------------------------------------------------------------------------------
    def start_sleep(self, *, dry_run: bool = False, engine_only: bool = False) -> int:
        """Start Sleep (or a dry run). ``engine_only`` runs the engine's rules without a model."""
        source = None if engine_only else self.models()
        w = SleepWorker(next_run_id(), self.db_path, source, self.settings.retention,
                        dry_run=dry_run, budget_tokens=self.settings.pass_budget_tokens)
        w.sleepStarted.connect(self._on_sleep_started)
        w.passStarted.connect(self._on_pass_started)
        w.passDone.connect(self._on_pass_done)
        w.passError.connect(self._on_pass_error)
        w.sleepFinished.connect(self._on_sleep_finished)
        w.failed.connect(self._on_sleep_failed)
        return self._begin("dry-run" if dry_run else "sleep", w).run_id

    @Slot(int, object)
    def _on_sleep_started(self, run_id: int, ev: object) -> None:
        if self._current(run_id):
            self.sleepStarted.emit(ev)
            self.storeChanged.emit()

    @Slot(int, object)
    def _on_pass_started(self, run_id: int, fig: object) -> None:
        if self._current(run_id):
            self.passStarted.emit(fig)

    @Slot(int, object)
    def _on_pass_done(self, run_id: int, fig: object) -> None:
        if self._current(run_id):
            self.passDone.emit(fig)
            if self.busy == "sleep":
                self.storeChanged.emit()

    @Slot(int, object, str)
    def _on_pass_error(self, run_id: int, fig: object, message: str) -> None:
        if self._current(run_id):
            self.passError.emit(fig, message)
            if self.busy == "sleep":
                self.storeChanged.emit()

    @Slot(int, str, str, object)
    def _on_sleep_finished(self, run_id: int, kind: str, message: str, totals: object) -> None:
        if self._current(run_id):
            self.sleepFinished.emit(kind, message, totals)
            self.storeChanged.emit()

    @Slot(int, str)
    def _on_sleep_failed(self, run_id: int, message: str) -> None:
        if self._current(run_id):
            self.sleepFinished.emit("sleep failed", message, {})
            self.storeChanged.emit()

    def cancel_sleep(self) -> None:
        """Cancel the running sleep. The store stays at the last completed pass; the panel is
        told at once, and nothing the worker still sends reaches the UI."""
        if self.busy in ("sleep", "dry-run") and self._job is not None:
            self._job.cancel()
            self.sleepFinished.emit("sleep cancelled", "cancelled by you", {})

    # -- wake ----------------------------------------------------------------------------------
    def start_quiz(self, n_questions: int = 5) -> int:
        w = QuizWorker(next_run_id(), self.db_path, self.models(), n_questions)
        w.done.connect(self._on_quiz_done)
        w.failed.connect(self._on_quiz_failed)
        return self._begin("quiz", w).run_id

    @Slot(int, object)
    def _on_quiz_done(self, run_id: int, report: object) -> None:
        if self._current(run_id):
            self.quizDone.emit(report)

    @Slot(int, str)
    def _on_quiz_failed(self, run_id: int, message: str) -> None:
        if self._current(run_id):
            self.quizFailed.emit(message)

    # -- versions ------------------------------------------------------------------------------
    def restore(self, version: int | str) -> Version:
        if self.busy:
            raise RuntimeError("wait until the current job ends before restoring")
        v = self.store.restore(version)
        self.storeChanged.emit()
        self.versionCreated.emit(v)
        return v

    # -- the person's hands ---------------------------------------------------------------------
    HAND_OPS = ("edit", "pin", "forget_now", "bring_back", "add_fact", "undo", "redo")

    def hand(self, op: str, *args: Any, **kwargs: Any) -> Version:
        """One change by hand through the store (``edit``, ``pin``, ``forget_now``,
        ``bring_back``, ``add_fact``, ``undo``, ``redo``): one small transaction, refused while
        a job runs, like a restore. The views follow ``storeChanged`` / ``versionCreated``."""
        if op not in self.HAND_OPS:
            raise ValueError(f"unknown hand change {op!r}")
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "changing memory by hand")
        out = getattr(self.store, op)(*args, **kwargs)
        v: Version = out[1] if isinstance(out, tuple) else out
        self.storeChanged.emit()
        self.versionCreated.emit(v)
        return v

    def sleep_start_version(self, sleep_id: int) -> Version | None:
        """The snapshot taken when ``sleep_id`` began (the state undo returns to)."""
        for v in self.store.versions():
            if v.sleep_id == sleep_id:
                return v
        return None

    def last_undoable_sleep(self) -> int | None:
        ids = [v.sleep_id for v in self.store.versions() if v.sleep_id is not None]
        return ids[-1] if ids else None

    def undo_sleep(self, sleep_id: int | None = None) -> Version:
        sid = self.last_undoable_sleep() if sleep_id is None else sleep_id
        if sid is None:
            raise ValueError("no sleep to undo yet")
        start = self.sleep_start_version(sid)
        if start is None:
            raise ValueError(f"sleep {sid} left no snapshot to return to")
        return self.restore(start.seq)

    # -- endpoint ------------------------------------------------------------------------------
    def check_endpoint(self) -> None:
        """Probe ``GET /models`` in a worker; ``endpointChecked`` reports the outcome."""
        if self._probe is not None and not self._probe.done:
            self._probe.cancel()
        factory: Callable[[], Any]
        if self.model_factory_override is not None:
            factory = self.model_factory_override
        else:
            factory = client_factory(self.settings, self.api_key)
        w = ModelListWorker(next_run_id(), factory)
        w.listed.connect(self._on_listed)
        w.failed.connect(self._on_list_failed)
        self._probe = start_job(w, "probe")
        self._jobs = [j for j in self._jobs if not j.done]
        self._jobs.append(self._probe)

    def _probe_current(self, run_id: int) -> bool:
        p = self._probe
        return p is not None and p.run_id == run_id and not p.cancel_token.cancelled

    @Slot(int, list, dict)
    def _on_listed(self, run_id: int, models: list[str], caps: dict[str, str]) -> None:
        if self._probe_current(run_id):
            self.endpoint_ok = True
            self.capabilities = dict(caps)
            n = len(models)
            self.endpoint_message = f"reachable ({n} model{'s' if n != 1 else ''})"
            self.endpointChecked.emit(True, self.endpoint_message, models, caps)

    @Slot(int, str)
    def _on_list_failed(self, run_id: int, message: str) -> None:
        if self._probe_current(run_id):
            self.endpoint_ok = False
            self.endpoint_message = message
            self.endpointChecked.emit(False, message, [], {})
