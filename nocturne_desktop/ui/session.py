"""The window's controller: settings, the GUI thread's store, and the background jobs.

Panels never start threads or open stores themselves; they call the session, listen to its
signals and follow every commit through its change hub (:attr:`Session.changes`). It owns one
:class:`Store` for reads on the GUI thread (plus the short one-transaction writes of a hand
edit), and starts every long job, a restore too, as a :class:`~nocturne_desktop.ui.jobs.Job`.
Only one store-writing job runs at a time (``busy``); a cancelled or superseded job is dropped
by the job itself, so it never repaints the UI. A sleep, a review's plan and its apply run
their passes in a worker process (:attr:`Session.child_process`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Never, TypeVar, cast

from PySide6.QtCore import QObject, Signal

from nocturne_desktop.core.chat import edits as chatedits
from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.checks.quiz import QuizProgress, QuizReport
from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.core.sleep.review import ApplyResult, Plan, PlanStale
from nocturne_desktop.core.store import Store, exchange, reads
from nocturne_desktop.core.types import StoreChanges, Version
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles
from nocturne_desktop.ui.changes import WINDOW, ChangeHub
from nocturne_desktop.ui.jobs import (
    AnyJob,
    BodyContext,
    ChildProcess,
    ClientPool,
    ClientSpec,
    Job,
    JobSlot,
    ModelSource,
    deferred_full_collections,
    describe_error,
)
from nocturne_desktop.ui.jobs.bodies import checks, endpoint
from nocturne_desktop.ui.jobs.bodies import sleep as sleep_bodies
from nocturne_desktop.ui.jobs.bodies.chat import (
    ChatAccepted,
    ChatEncoded,
    ChatItem,
    ChatReplied,
    ChatTokens,
    ReplyStop,
    chat_turn,
)
from nocturne_desktop.ui.jobs.bodies.endpoint import ListsModels, ModelList
from nocturne_desktop.ui.models.planpages import PlanPages

if TYPE_CHECKING:
    from nocturne_desktop.llm import OpenAIClient

log = logging.getLogger("nocturne.ui")
Y = TypeVar("Y")
T = TypeVar("T")

BUSY_LABELS = {"chat": "replying", "sleep": "sleeping", "dry-run": "dry run", "quiz": "quiz",
               "import": "importing", "restore": "restoring"}


def client_spec(settings: Settings, key: ApiKey) -> Callable[[], ClientSpec]:
    """A function that resolves the model client of a frozen copy of the settings to a
    picklable :class:`ClientSpec` (a worker process builds its client from that; the key travels
    in the spec, never on a command line or in the environment).

    With the built-in engine chosen (``settings.endpoint == "builtin"``) the address is found
    when it is called: the running engine's, or a fresh engine's, started there and then in
    this process (it blocks while the model loads, so it is never called on the GUI thread for
    it; see :meth:`Session._new_pool`)."""

    def resolve() -> ClientSpec:
        base_url, model = settings.base_url, settings.model
        if settings.builtin:
            engine = builtin_engine.start()
            base_url, model = engine.base_url, model or engine.model_name
        return ClientSpec(base_url, model, api_key=key.reveal() or None,
                          timeouts=settings.timeouts, temperature=settings.temperature)

    return resolve


def client_factory(settings: Settings, key: ApiKey) -> Callable[[], OpenAIClient]:
    """A factory that builds an HTTP client from a frozen copy of the settings (called in the
    job's thread, so each job has its own client; the built-in engine as in
    :func:`client_spec`)."""
    resolve = client_spec(settings, key)
    return lambda: resolve().build()


class Session(QObject):
    """Signals:

    - ``busyChanged(str)``: the running job's kind (``chat``, ``sleep``, ``dry-run``, ``quiz``,
      ``import``, ``restore``) or ``""`` when idle.
    - ``versionCreated(Version)``: a restore, undo, redo or hand edit made a new version.
    - ``chatStarted(str)``, ``chatRegenerating()`` (a new reply to the last message),
      ``chatAccepted(int turn)`` (the user's turn is committed),
      ``chatTokens(str)``, ``chatReplied(str, bool stopped)``, ``chatEncoded(EncodeSummary)``,
      ``chatFailed(str)`` (the turn failed, or its reply was cut: then the encoder still runs).
    - ``sleepEvent(SleepEvent)``: the one stream of a sleep, from ``sleep started`` through one
      event per pass boundary to exactly one end (``sleep done`` / ``sleep cancelled`` /
      ``sleep failed``).
    - ``quizProgress(QuizProgress)`` before each question and probe, ``quizDone(QuizReport)``,
      ``quizFailed(str)``.
    - ``endpointChecked(bool ok, str message, list models, dict capabilities)``.
    - ``settingsChanged(Settings)``.
    - ``conversationChanged(int)``: a new conversation was started, or an earlier one reopened.
    """

    busyChanged = Signal(str)
    versionCreated = Signal(object)
    chatStarted = Signal(str)
    chatRegenerating = Signal()
    chatAccepted = Signal(int)
    chatTokens = Signal(str)
    chatReplied = Signal(str, bool)
    chatEncoded = Signal(object)
    chatFailed = Signal(str)
    sleepEvent = Signal(object)
    quizProgress = Signal(object)
    quizDone = Signal(object)
    quizFailed = Signal(str)
    endpointChecked = Signal(bool, str, list, dict)
    settingsChanged = Signal(object)
    conversationChanged = Signal(int)

    def __init__(
        self,
        db_path: Path,
        settings: Settings | None = None,
        api_key: ApiKey | None = None,
        *,
        files: SettingsFiles | None = None,
        model_factory: Callable[[], ModelClient] | None = None,
        child_process: bool | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.child_process = model_factory is None if child_process is None else child_process
        """Whether a sleep, a review's plan and its apply run in a worker process (the GUI
        thread then shares no interpreter with the passes); by default yes, unless the model
        is an in-code object (``model_factory``: tests, the verifier), which a worker process
        could not build. ``False`` keeps them on a thread of this process, where code patched
        at run time (a test's monkeypatch) still applies."""
        self.db_path = Path(db_path)
        self.files = files
        self.settings = settings or Settings()
        self.api_key = api_key or ApiKey()
        self.model_factory_override = model_factory
        """Tests and the verifier may hand the session any ModelClient factory."""
        self._pool = self._new_pool()
        self.changes = ChangeHub(self)
        """Every commit, on this session's store or a job's, with its rows and its source:
        what the views follow (:mod:`nocturne_desktop.ui.changes`)."""
        self.store = Store(self.db_path)
        self.store.subscribe(self._on_own_commit)
        self.interrupted_sleeps: list[int] = self._mark_interrupted_sleeps()
        """Sleeps a killed or crashed process left ``running``, marked ``interrupted`` now."""
        self.busy = ""
        self.closed = False
        self._work = JobSlot()
        """The one store-writing job (chat, sleep, quiz)."""
        self._reply_stop: ReplyStop | None = None
        """The running chat turn's reply-only stop (Esc), apart from its job's cancel."""
        self._probe = JobSlot()
        self._reads: dict[str, JobSlot] = {}
        """Views' O(store) reads by kind (a diff, a past version's state)."""
        self.wrap_body: Callable[[Callable[[BodyContext], object]],
                                 Callable[[BodyContext], object]] | None = None
        """What every store-writing job's body runs inside, or None: the Letta link sets it
        (a sync before the body and after each of its commits, :mod:`nocturne_desktop.ui.letta`)."""
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

    def _on_own_commit(self, changes: StoreChanges) -> None:
        """A write on the GUI thread's store (a hand change, a chat edit): its rows are read by
        id at once (O(changed), the per-block counts left to the view) and published."""
        self.changes.publish(reads.rows_of_commit(self.store, changes, counts=False),
                             source=WINDOW)

    def _new_pool(self) -> ModelSource:
        if self.model_factory_override is not None:
            return ModelSource(self.model_factory_override)
        pool = ClientPool(client_factory(self.settings, self.api_key))
        if not self.settings.builtin:  # making its client may start the engine: in a job only
            pool.warm()
        return pool

    @property
    def endpoint_url(self) -> str:
        """Where the model is: the server's base URL, or the built-in engine's address (found
        at run time: the engine listens on a new port at every start)."""
        if self.settings.builtin:
            return builtin_engine.last_url() or builtin_engine.NAME
        return self.settings.base_url

    def uses_endpoint(self, base_url: str) -> bool:
        """Whether ``base_url`` is the endpoint this session talks to."""
        return base_url.rstrip("/") == self.endpoint_url.rstrip("/")

    def models(self) -> ModelSource:
        """The model clients jobs lease (one per job, handed back when it ends)."""
        return self._pool

    def _set_busy(self, kind: str) -> None:
        self.busy = kind
        self.busyChanged.emit(kind)

    def _begin(self, kind: str, job: Job[Y, T], initiator: object | None = None) -> Job[Y, T]:
        """Start ``job`` as the one store-writing job; its commits reach :attr:`changes` with
        ``kind`` as their source."""
        if self.busy:
            raise RuntimeError(f"already {BUSY_LABELS.get(self.busy, self.busy)}")
        job.on_changes(self.changes.publisher(kind, initiator))
        if self.wrap_body is not None:
            job.wrap(self.wrap_body)
        # A cancelled job keeps the busy slot until its body really ended: the store may still
        # be finishing a pass, and no conflicting action may start before that.
        job.ended(lambda: self._on_work_ended(job))
        self._set_busy(kind)
        return self._work.start(job)

    def _on_work_ended(self, job: AnyJob) -> None:
        if self._work.current is job:
            self._work.current = None
            self._reply_stop = None
            self._set_busy("")

    def _slots(self) -> list[JobSlot]:
        return [self._work, self._probe, *self._reads.values()]

    def read(self, kind: str, fn: Callable[[BodyContext], T], on_result: Callable[[T], None],
             on_failure: Callable[[BaseException], None]) -> Job[Never, T]:
        """Run an O(store) read (``fn(ctx)``, using ``ctx.store``) off the GUI thread, on a store
        of its own. A newer read of the same ``kind`` supersedes this one: its result is dropped."""
        job = Job(fn, name=f"read-{kind}", db_path=self.db_path)
        return self._reads.setdefault(kind, JobSlot()).start(
            job.success(on_result).failure(on_failure))

    def cancel_read(self, kind: str) -> None:
        """Drop the pending read of ``kind`` (its result no longer applies)."""
        slot = self._reads.get(kind)
        if slot is not None:
            slot.cancel()

    @property
    def job(self) -> AnyJob | None:
        return self._work.current

    def cancel(self) -> None:
        """Stop whatever runs; what it still sends is dropped from now on.

        During a chat reply this stops the reply only (Esc): the partial text is kept and the
        encoder still reads what the person said; a second cancel, while it remembers, stops
        that too."""
        job = self._work.current
        if job is None:
            return
        stop = self._reply_stop
        if self.busy == "chat" and stop is not None and stop.request():
            return
        job.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> None:
        """Cancel every job, wait for their threads, close the store (window close)."""
        for slot in self._slots():
            slot.cancel()
        self.wait_threads(timeout_ms)
        self._work.current = None
        self._probe.current = None
        if self.busy:
            self._set_busy("")
        if not self.closed:
            self.closed = True
            self._pool.close()
            self.store.close()

    def wait_threads(self, timeout_ms: int = 30_000) -> bool:
        """Block until every job's thread ended (window close and tests only)."""
        return all([slot.wait(timeout_ms) for slot in self._slots()])

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
    def send(self, text: str, *, remember: bool = True) -> Job[ChatItem, None]:
        """One chat turn. ``remember=False`` is a private exchange: nothing of it is saved or
        remembered (see :func:`~nocturne_desktop.ui.jobs.bodies.chat.chat_turn`)."""
        text = text.strip()
        if not text:
            raise ValueError("nothing to send")
        stop = ReplyStop()
        job = Job(functools.partial(chat_turn, user_text=text, stop=stop, remember=remember),
                  name="chat", db_path=self.db_path, models=self.models())
        job.on_yield(self._on_chat_item).failure(
            lambda exc: self.chatFailed.emit(describe_error(exc)))
        self.chatStarted.emit(text)
        started = self._begin("chat", job)
        self._reply_stop = stop
        return started

    def regenerate(self) -> Job[ChatItem, None]:
        """A new reply to the last message; the one it replaces is no longer carried."""
        stop = ReplyStop()
        job = Job(functools.partial(chat_turn, user_text="", stop=stop, again=True),
                  name="chat", db_path=self.db_path, models=self.models())
        job.on_yield(self._on_chat_item).failure(
            lambda exc: self.chatFailed.emit(describe_error(exc)))
        started = self._begin("chat", job)
        self.chatRegenerating.emit()
        self._reply_stop = stop
        return started

    def _on_chat_item(self, item: object) -> None:
        if isinstance(item, ChatAccepted):
            self.chatAccepted.emit(item.turn)
        elif isinstance(item, ChatTokens):
            # tokens that arrive after Stop are still this reply's, kept as partial text
            self.chatTokens.emit(item.text)
        elif isinstance(item, ChatReplied):
            self.chatReplied.emit(item.text, item.stopped)
            if item.cut is not None:  # cut at the size cap: said now; the encoder still runs
                self.chatFailed.emit(item.cut)
        elif isinstance(item, ChatEncoded):
            self.chatEncoded.emit(item.summary)

    # -- sleep ---------------------------------------------------------------------------------
    def start_sleep(self, *, dry_run: bool = False, engine_only: bool = False
                    ) -> Job[SleepEvent, None]:
        """Start Sleep (or a dry run). ``engine_only`` runs the engine's rules without a model."""
        body = functools.partial(sleep_bodies.sleep, policy=self.settings.retention,
                                 use_model=not engine_only, dry_run=dry_run,
                                 budget_tokens=self.settings.pass_budget_tokens)
        kind = "dry-run" if dry_run else "sleep"
        job = self._pass_job(body, kind, use_model=not engine_only,
                             what="the dry run" if dry_run else "the sleep",
                             after_death="memory is unchanged" if dry_run else
                             "memory is as of the last completed pass")
        job.on_yield(self._on_sleep_event).failure(
            lambda exc: self._on_sleep_event(
                SleepEvent(SleepEventKind.FAILED, message=describe_error(exc))))
        return self._begin(kind, job)

    def _pass_job(self, body: Callable[[BodyContext], Generator[SleepEvent, None, T]], name: str,
                  *, use_model: bool, what: str, after_death: str) -> Job[SleepEvent, T]:
        """A sleep's kind of job (a sleep, a review's plan or its apply), ended by the core on
        cancel: in a worker process when :attr:`child_process` (its model client built there
        from a spec, the built-in engine's address resolved here first), else on a thread with
        a client leased from the pool."""
        if self.child_process:
            client = client_spec(self.settings, self.api_key) if use_model else None
            return Job(body, name=name, db_path=self.db_path, finish_on_cancel=True,
                       process=ChildProcess(client, what=what, after_death=after_death))
        return Job(body, name=name, db_path=self.db_path, finish_on_cancel=True,
                   models=self.models() if use_model else None)

    def _on_sleep_event(self, ev: SleepEvent) -> None:
        self.sleepEvent.emit(ev)

    def cancel_sleep(self) -> None:
        """Cancel the running sleep. The store stays at the last completed pass; the panel is
        told at once, and nothing the job still sends reaches the UI."""
        job = self._work.current
        if self.busy in ("sleep", "dry-run") and job is not None and not job.cancelled:
            job.cancel()
            self.sleepEvent.emit(SleepEvent(SleepEventKind.CANCELLED, message="cancelled by you"))

    # -- sleep with review (S-EDIT-2) -------------------------------------------------------------
    def start_review_plan(self, *, engine_only: bool = False, initiator: object | None = None,
                          on_plan: Callable[[PlanPages], None] = lambda _p: None,
                          on_failure: Callable[[BaseException], None] = lambda _e: None
                          ) -> Job[SleepEvent, PlanPages]:
        """The plan of a sleep: a dry run in a job (its events go to ``sleepEvent``), then
        ``on_plan(PlanPages)``; its commits carry ``initiator``. See
        :mod:`nocturne_desktop.ui.review`."""
        body = functools.partial(sleep_bodies.plan_body, policy=self.settings.retention,
                                 use_model=not engine_only,
                                 budget_tokens=self.settings.pass_budget_tokens)
        job = self._pass_job(body, "dry-run", use_model=not engine_only,
                             what="the plan", after_death="memory is unchanged")
        def failed(exc: BaseException) -> None:
            self._on_sleep_event(SleepEvent(SleepEventKind.FAILED, message=describe_error(exc)))
            on_failure(exc)

        job.on_yield(self._on_sleep_event).success(on_plan).failure(failed)
        return self._begin("dry-run", job, initiator)

    def apply_review(self, plan: Plan | PlanPages, approved: Sequence[int], *,
                     on_result: Callable[[ApplyResult], None] = lambda _r: None,
                     on_failure: Callable[[BaseException], None] = lambda _e: None
                     ) -> Job[SleepEvent, ApplyResult]:
        """The approved changes of ``plan`` applied as one sleep in a job, re-gated against live
        memory; ``on_result(ApplyResult)``. A stale plan fails with ``PlanStale``, writing nothing."""
        job = self._pass_job(
            functools.partial(sleep_bodies.apply_body, plan=plan, approved=tuple(approved)),
            "sleep", use_model=False, what="the sleep",
            after_death="memory is as of the last completed pass")

        def failed(exc: BaseException) -> None:
            if not isinstance(exc, PlanStale):  # nothing ran: the dialog says why
                self._on_sleep_event(SleepEvent(SleepEventKind.FAILED, message=describe_error(exc)))
            on_failure(exc)

        job.on_yield(self._on_sleep_event).success(on_result).failure(failed)
        return self._begin("sleep", job)

    # -- wake ----------------------------------------------------------------------------------
    def start_quiz(self, n_questions: int = 5) -> Job[QuizProgress, QuizReport]:
        job = Job(functools.partial(checks.quiz, n_questions=n_questions), name="quiz",
                  db_path=self.db_path, models=self.models())
        job.on_yield(self.quizProgress.emit).success(self.quizDone.emit).failure(
            lambda exc: self.quizFailed.emit(describe_error(exc)))
        return self._begin("quiz", job)

    # -- versions ------------------------------------------------------------------------------
    def restore(self, version: int | str, *,
                on_done: Callable[[Version], None] = lambda _v: None,
                on_failure: Callable[[BaseException], None] = lambda _e: None) -> Job[Never, Version]:
        """Make the live memory equal ``version`` again, as a new version, in a job (the one
        store-writing job, ``busy`` = ``restore``; refused while another runs). A restore
        rewrites every fact changed since ``version`` (O(changed), thousands of rows after a
        big sleep), so it runs on the job's own store, never the GUI thread's. The views follow
        its commit by id (:attr:`changes`), then ``versionCreated(v)``; ``on_done(v)`` runs
        after them. A failed write (a read-only, locked or full store)
        reaches ``on_failure(exc)`` and writes nothing: the restore is one transaction."""
        if self.busy:
            raise RuntimeError("wait until the current job ends before restoring")

        def run(ctx: BodyContext) -> Version:
            # thousands of rows read and written: no full collection holding the GIL from the
            # window meanwhile (ui/jobs/deferred_gc.py)
            with deferred_full_collections():
                return ctx.store.restore(version)

        def done(v: Version) -> None:
            self.versionCreated.emit(v)
            on_done(v)

        job = Job(run, name="restore", db_path=self.db_path).success(done).failure(on_failure)
        return self._begin("restore", job)

    # -- the person's hands ---------------------------------------------------------------------
    HAND_OPS = ("edit", "pin", "forget_now", "bring_back", "add_fact", "undo", "redo")

    def hand(self, op: str, *args: object, **kwargs: object) -> Version:
        """One change by hand through the store (``edit``, ``pin``, ``forget_now``,
        ``bring_back``, ``add_fact``, ``undo``, ``redo``): one small transaction, refused while
        a job runs, like a restore. The views follow its commit (:attr:`changes`), then
        ``versionCreated``."""
        if op not in self.HAND_OPS:
            raise ValueError(f"unknown hand change {op!r}")
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "changing memory by hand")
        out = getattr(self.store, op)(*args, **kwargs)
        v: Version = out[1] if isinstance(out, tuple) else out
        self.versionCreated.emit(v)
        return v

    def confirm_chat_edit(self, proposal: HandProposal, item_id: str | None = None) -> Version:
        """A "remember that …" / "forget that …" said in chat and confirmed by the person: a hand
        edit decided by ``you`` (see :mod:`nocturne_desktop.core.chat.edits`), refused while a job
        runs like every hand edit."""
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "changing memory by hand")
        v = chatedits.confirm(self.store, proposal, item_id,
                              threshold=self.settings.retention.similarity_threshold)
        self.versionCreated.emit(v)
        return v

    def import_into_scratch(self, file: Path, on_done: Callable[[exchange.ScratchImport], None],
                            on_failed: Callable[[BaseException], None]
                            ) -> Job[Never, exchange.ScratchImport]:
        """Import the active facts of the export ``file`` into this memory's scratch block, as
        your own edits in one version (:func:`exchange.import_file_into_scratch`), off the GUI
        thread as the one store-writing job (refused while another runs). ``on_done`` gets the
        :class:`exchange.ScratchImport`."""
        threshold = self.settings.retention.similarity_threshold

        def run(ctx: BodyContext) -> exchange.ScratchImport:
            return exchange.import_file_into_scratch(file, ctx.store, threshold=threshold)

        def done(result: exchange.ScratchImport) -> None:
            if result.version is not None:
                self.versionCreated.emit(result.version)
            on_done(result)

        job = Job(run, name="import", db_path=self.db_path).success(done).failure(on_failed)
        return self._begin("import", job)

    # -- conversations -------------------------------------------------------------------------
    def new_conversation(self) -> int:
        """A fresh transcript over the same memory (refused while a job runs)."""
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "starting a new conversation")
        conv = self.store.new_conversation()
        self.conversationChanged.emit(conv)
        return conv

    def open_conversation(self, conversation: int) -> None:
        """Continue an earlier conversation: the model receives its history from now on."""
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "opening another conversation")
        self.store.open_conversation(conversation)
        self.conversationChanged.emit(conversation)

    def sleep_start_version(self, sleep_id: int) -> Version | None:
        """The snapshot taken when ``sleep_id`` began (the state undo returns to)."""
        for v in self.store.versions():
            if v.sleep_id == sleep_id:
                return v
        return None

    def last_undoable_sleep(self) -> int | None:
        ids = [v.sleep_id for v in self.store.versions() if v.sleep_id is not None]
        return ids[-1] if ids else None

    def undo_sleep(self, sleep_id: int | None = None, *,
                   on_done: Callable[[Version], None] = lambda _v: None,
                   on_failure: Callable[[BaseException], None] = lambda _e: None,
                   last_sleep: Callable[[], int | None] | None = None,
                   sleep_start: Callable[[int], Version | None] | None = None
                   ) -> Job[Never, Version]:
        """Restore the snapshot ``sleep_id`` (default: the last sleep) began from, as a
        :meth:`restore` job. No sleep, or one without a snapshot, is refused at once
        (``ValueError``), before any job starts. ``last_sleep`` and ``sleep_start`` find the
        sleep and its first version (default: read from the store; the window passes its
        timeline's, which already holds every version)."""
        if self.busy:
            raise RuntimeError("wait until the current job ends before restoring")
        last_sleep = last_sleep or self.last_undoable_sleep
        sleep_start = sleep_start or self.sleep_start_version
        sid = last_sleep() if sleep_id is None else sleep_id
        if sid is None:
            raise ValueError("no sleep to undo yet")
        start = sleep_start(sid)
        if start is None:
            raise ValueError(f"sleep {sid} left no snapshot to return to")
        return self.restore(start.seq, on_done=on_done, on_failure=on_failure)

    # -- endpoint ------------------------------------------------------------------------------
    def check_endpoint(self) -> None:
        """Probe ``GET /models`` in a job; ``endpointChecked`` reports the outcome. A new probe
        supersedes one still running."""
        factory: Callable[[], ListsModels]
        if self.model_factory_override is not None:
            # an in-code model (tests, the verifier): the probe asks it to list its models
            factory = cast(Callable[[], ListsModels], self.model_factory_override)
        else:
            factory = client_factory(self.settings, self.api_key)
        job = Job(functools.partial(endpoint.list_models, client_factory=factory), name="probe")
        self._probe.start(job.success(self._on_listed).failure(self._on_list_failed))

    def _on_listed(self, listed: ModelList) -> None:
        self.endpoint_ok = True
        self.capabilities = dict(listed.capabilities)
        n = len(listed.models)
        self.endpoint_message = f"reachable ({n} model{'s' if n != 1 else ''})"
        self.endpointChecked.emit(True, self.endpoint_message, listed.models, listed.capabilities)

    def _on_list_failed(self, exc: BaseException) -> None:
        self.endpoint_ok = False
        self.endpoint_message = describe_error(exc)
        self.endpointChecked.emit(False, self.endpoint_message, [], {})
