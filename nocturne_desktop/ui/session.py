"""The window's controller: settings, the GUI thread's store, and the background jobs.

Panels never start threads or open stores themselves; they call the session, listen to its
signals and follow every commit through its change hub (:attr:`Session.changes`). It owns one
:class:`Store` for reads on the GUI thread (plus the short one-transaction writes of a hand
edit), and starts every long job, a restore too, as a :class:`~nocturne_desktop.ui.jobs.Job`.
Only one store-writing job runs at a time (``busy``), with one exception: the encoder of a chat
exchange ("remembering") runs as a job of its own, so the next message can be sent and answered
while memory reads the last one; exchanges are remembered one at a time, in order. A cancelled
or superseded job is dropped by the job itself, so it never repaints the UI. A sleep, a review's
plan and its apply run their passes in a worker process (:attr:`Session.child_process`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections import deque
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Never, TypeVar, cast

from PySide6.QtCore import QObject, Signal

from nocturne_desktop.core.chat import edits as chatedits
from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.checks.quiz import QuizProgress, QuizReport
from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.core.sleep.review import ApplyResult, Plan, PlanStale
from nocturne_desktop.core.store import Store, exchange, reads
from nocturne_desktop.core.store.memorypolicy import keep_policy, memory_policy
from nocturne_desktop.core.types import StoreChanges, Version
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.settings import (
    ApiKey,
    Settings,
    SettingsFiles,
    key_origin,
    needs_key_confirmation,
)
from nocturne_desktop.ui.changes import WINDOW, ChangeHub
from nocturne_desktop.ui.clients import client_factory, client_spec
from nocturne_desktop.ui.jobs import (
    AnyJob,
    BodyContext,
    ChildProcess,
    ClientPool,
    Job,
    JobSlot,
    ModelSource,
    deferred_full_collections,
    describe_error,
    running_threads,
)
from nocturne_desktop.ui.jobs.bodies import checks, endpoint
from nocturne_desktop.ui.jobs.bodies import sleep as sleep_bodies
from nocturne_desktop.ui.jobs.bodies.chat import (
    ChatAccepted,
    ChatItem,
    ChatReplied,
    ChatTokens,
    EncodeSummary,
    ReplyStop,
    chat_turn,
    remember_turns,
)
from nocturne_desktop.ui.jobs.bodies.endpoint import ListsModels, ModelList
from nocturne_desktop.ui.models.planpages import PlanPages

if TYPE_CHECKING:
    pass

log = logging.getLogger("nocturne.ui")
Y = TypeVar("Y")
T = TypeVar("T")

BUSY_LABELS = {"chat": "replying", "sleep": "sleeping", "dry-run": "dry run", "quiz": "quiz",
               "import": "importing", "restore": "restoring", "remembering": "remembering"}
REMEMBERING = "remembering"
"""``busy`` while only the encoder runs (no reply): a message may be sent, nothing else
that writes memory may start."""


class Session(QObject):
    """Signals:

    - ``busyChanged(str)``: the running job's kind (``chat``, ``sleep``, ``dry-run``, ``quiz``,
      ``import``, ``restore``), ``remembering`` while only the encoder runs, or ``""`` when
      idle.
    - ``versionCreated(Version)``: a restore, undo, redo or hand edit made a new version.
    - ``chatStarted(str)``, ``chatRegenerating()`` (a new reply to the last message),
      ``chatAccepted(int turn)`` (the user's turn is committed),
      ``chatTokens(str)``, ``chatReplied(str, bool stopped)``,
      ``chatRemembering(int key)`` (the encoder will read the exchange just answered; ``key``
      names it),
      ``chatEncoded(EncodeSummary)`` (its ``key`` says which),
      ``chatQueued(str)`` (a message sent while a reply streams: it is sent when the reply
      ends), ``chatFailed(str)`` (the turn failed, or its reply was cut: then the encoder
      still runs).
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
    chatRemembering = Signal(int)
    chatEncoded = Signal(object)
    chatQueued = Signal(str)
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
        self._declined: set[str] = set()
        """Servers the person said no to sending the key to, this session (asked once)."""
        self._pool = self._new_pool()
        self.changes = ChangeHub(self)
        """Every commit, on this session's store or a job's, with its rows and its source:
        what the views follow (:mod:`nocturne_desktop.ui.changes`)."""
        self.store = Store(self.db_path)
        self.store.subscribe(self._on_own_commit)
        self.own_policy = memory_policy(self.store)
        """The retention policy this memory carries (one imported with it), which it runs
        under instead of the settings' (:mod:`~nocturne_desktop.core.store.memorypolicy`)."""
        self.settings_retention = self.settings.retention
        """The retention of the person's settings (what a memory without its own runs under;
        the demo's window sets it to the settings' own, as its session runs under the demo's)."""
        if self.own_policy is not None:
            self.settings = self.settings.model_copy(update={"retention": self.own_policy})
        self._policy_to_keep: RetentionPolicy | None = None
        """A retention changed in this window, kept in the memory when no job writes it."""
        self.interrupted_sleeps: list[int] = self._mark_interrupted_sleeps()
        """Sleeps a killed or crashed process left ``running``, marked ``interrupted`` now."""
        self.busy = ""
        self.closed = False
        self._work = JobSlot()
        """The one store-writing job (a chat reply, a sleep, a quiz, ...)."""
        self._work_kind = ""
        self._memo = JobSlot()
        """The encoder's job ("remembering"): one at a time, beside a reply."""
        self._memo_key = 0
        self._memo_queue: deque[tuple[int, int | None]] = deque()
        """Exchanges waiting for the encoder: (key, last turn), in the order they ended."""
        self._memo_keys: list[int] = []
        """Every key not answered yet (the running one first)."""
        self._memo_running = 0
        """The key of the exchange the encoder reads now (0: none)."""
        self._outbox: deque[tuple[str, bool]] = deque()
        """Messages sent while a reply streamed: (text, remember), sent in order after it."""
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
        pool = ClientPool(client_factory(self.settings, self.request_key()))
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

    def _refresh_busy(self) -> None:
        """``busy`` from what runs: the store-writing job's kind, else ``remembering`` while
        the encoder has work, else ``""``; ``busyChanged`` when it changed."""
        kind = self._work_kind or (REMEMBERING if self._memo_keys else "")
        if kind != self.busy:
            self.busy = kind
            self.busyChanged.emit(kind)
        self._keep_policy()

    def _keep_policy(self) -> None:
        """Write the memory's own policy changed in this window, once no job writes the store
        (the GUI thread never waits on a sleep's or the encoder's write lock)."""
        if self._policy_to_keep is not None and not self.busy and not self.closed:
            keep_policy(self.store, self._policy_to_keep)
            self._policy_to_keep = None

    @property
    def remembering(self) -> bool:
        """Whether the encoder runs or has exchanges waiting."""
        return bool(self._memo_keys)

    def _writes(self, job: Job[Y, T], kind: str, initiator: object | None = None) -> None:
        """Make ``job`` a store writer: its commits reach :attr:`changes` with ``kind`` as their
        source, and :attr:`wrap_body` (a linked agent's syncs) runs around its body. Every job
        that writes the store is made one here, so none is left out of either."""
        job.on_changes(self.changes.publisher(kind, initiator))
        if self.wrap_body is not None:
            job.wrap(self.wrap_body)

    def _begin(self, kind: str, job: Job[Y, T], initiator: object | None = None) -> Job[Y, T]:
        """Start ``job`` as the one store-writing job; its commits reach :attr:`changes` with
        ``kind`` as their source. A chat reply may start while the encoder remembers."""
        if self._work_kind or (self.remembering and kind != "chat"):
            raise RuntimeError(f"already {BUSY_LABELS.get(self.busy, self.busy)}")
        self._writes(job, kind, initiator)
        # A cancelled job keeps the busy slot until its body really ended: the store may still
        # be finishing a pass, and no conflicting action may start before that.
        job.ended(lambda: self._on_work_ended(job))
        self._work_kind = kind
        self._refresh_busy()
        return self._work.start(job)

    def _on_work_ended(self, job: AnyJob) -> None:
        if self._work.current is job:
            self._work.current = None
            self._work_kind = ""
            self._reply_stop = None
            if self._outbox and not self.closed:
                text, remember = self._outbox.popleft()
                try:
                    self._start_reply(text, remember)
                    return
                except (RuntimeError, ValueError, StoreError) as exc:  # pragma: no cover
                    self.chatFailed.emit(describe_error(exc))
            self._refresh_busy()

    def _slots(self) -> list[JobSlot]:
        return [self._work, self._memo, self._probe, *self._reads.values()]

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
        that too (:meth:`stop_remembering`)."""
        job = self._work.current
        if job is None:
            if self.remembering:
                self.stop_remembering()
            return
        stop = self._reply_stop
        if self._work_kind == "chat" and stop is not None and stop.request():
            return
        job.cancel()

    def shutdown(self, timeout_ms: int = 30_000) -> None:
        """Cancel every job, wait for their threads (also a dialog's, cancelled when it closed
        and not over yet), close the store (window close)."""
        self._outbox.clear()
        self._memo_queue.clear()
        for slot in self._slots():
            slot.cancel()
        self.wait_threads(timeout_ms)
        for thread in running_threads():
            thread.wait(timeout_ms)
        self._work.current = None
        self._work_kind = ""
        self._memo.current = None
        self._memo_keys.clear()
        self._memo_running = 0
        self._probe.current = None
        self._refresh_busy()
        if not self.closed:
            self.closed = True
            self._pool.close()
            self.store.close()

    def wait_threads(self, timeout_ms: int = 30_000) -> bool:
        """Block until every job's thread ended (window close and tests only)."""
        waited = [slot.wait(timeout_ms) for slot in self._slots()]  # every slot, no short cut
        return all(waited)

    # -- settings ------------------------------------------------------------------------------
    def request_key(self) -> ApiKey:
        """The API key requests carry: none to the built-in engine (its clients send its own
        per-run key), and none to a server other than the one the key was saved for
        (``settings.key_host``) until the person confirms (:meth:`key_question`)."""
        s = self.settings
        if s.builtin or needs_key_confirmation(s.key_host, s.base_url, has_key=bool(self.api_key)):
            return ApiKey()
        return self.api_key

    def key_question(self, settings: Settings | None = None, key: ApiKey | None = None
                     ) -> tuple[str, str] | None:
        """``(server, saved for)`` when the key would go to a server it was not saved for and
        the person has not yet answered for it this session (the window then asks once); None
        when there is nothing to ask."""
        s = settings or self.settings
        k = self.api_key if key is None else key
        if s.builtin or not needs_key_confirmation(s.key_host, s.base_url, has_key=bool(k)):
            return None
        target = key_origin(s.base_url)
        return None if target in self._declined else (target, s.key_host)

    def decline_key(self, server: str) -> None:
        """The person said no: the key is not sent to ``server`` (and not asked again) for the
        rest of this session, unless the key changes."""
        self._declined.add(server)

    def apply_settings(self, settings: Settings, key: ApiKey | None = None, *, save: bool = True) -> None:
        """Use ``settings`` (and ``key``) from now on, saved unless ``save`` is False. A memory
        with its own policy keeps a changed retention itself; the settings keep theirs."""
        saved = settings
        if self.own_policy is not None:
            if save and settings.retention != self.own_policy:
                self.own_policy = settings.retention
                self._policy_to_keep = settings.retention
                self._keep_policy()
            saved = settings.model_copy(update={"retention": self.settings_retention})
        elif save and self.files is not None:  # the person's own retention changed (not the demo's)
            self.settings_retention = settings.retention
        self.settings = settings
        if key is not None:
            if key != self.api_key:
                self._declined.clear()
            self.api_key = key
        if save and self.files is not None:
            self.files.save(saved)
            if key is not None:
                self.files.save_key(key)
        self._pool.close()  # idle clients speak to the old endpoint; leased ones come back closed
        self._pool = self._new_pool()
        self.settingsChanged.emit(settings)
        self.check_endpoint()

    # -- chat ----------------------------------------------------------------------------------
    def send(self, text: str, *, remember: bool = True) -> Job[ChatItem, None] | None:
        """One chat turn. ``remember=False`` is a private exchange: nothing of it is saved or
        remembered (see :func:`~nocturne_desktop.ui.jobs.bodies.chat.chat_turn`).

        While memory reads the last exchange the reply starts at once (the encoder runs
        apart). While a reply streams the message waits (``chatQueued``; None is returned) and
        is sent as soon as that reply ends: a message is never answered before the one ahead
        of it, and the model's prompt then holds the whole reply it follows."""
        text = text.strip()
        if not text:
            raise ValueError("nothing to send")
        if self._work_kind == "chat":
            self._outbox.append((text, remember))
            self.chatQueued.emit(text)
            return None
        return self._start_reply(text, remember)

    @property
    def queued(self) -> list[str]:
        """The messages waiting for the reply that streams (oldest first)."""
        return [text for text, _ in self._outbox]

    def take_back_queued(self) -> list[str]:
        """Drop the messages still waiting (they are handed back, oldest first)."""
        texts = self.queued
        self._outbox.clear()
        return texts

    def _start_reply(self, text: str, remember: bool) -> Job[ChatItem, None]:
        stop = ReplyStop()
        job = Job(functools.partial(chat_turn, user_text=text, stop=stop, remember=remember),
                  name="chat", db_path=self.db_path, models=self.models())
        job.on_yield(lambda item: self._on_chat_item(item, remember)).failure(
            lambda exc: self.chatFailed.emit(describe_error(exc)))
        self.chatStarted.emit(text)
        started = self._begin("chat", job)
        self._reply_stop = stop
        return started

    def regenerate(self) -> Job[ChatItem, None]:
        """A new reply to the last message; the one it replaces is no longer carried. Only
        when nothing runs (memory must not be reading the reply it replaces)."""
        if self.busy:
            raise RuntimeError(f"wait until {BUSY_LABELS.get(self.busy, self.busy)} ends before "
                               "asking again")
        stop = ReplyStop()
        job = Job(functools.partial(chat_turn, user_text="", stop=stop, again=True),
                  name="chat", db_path=self.db_path, models=self.models())
        job.on_yield(lambda item: self._on_chat_item(item, True)).failure(
            lambda exc: self.chatFailed.emit(describe_error(exc)))
        started = self._begin("chat", job)
        self.chatRegenerating.emit()
        self._reply_stop = stop
        return started

    def _on_chat_item(self, item: object, remember: bool) -> None:
        if isinstance(item, ChatAccepted):
            self.chatAccepted.emit(item.turn)
        elif isinstance(item, ChatTokens):
            # tokens that arrive after Stop are still this reply's, kept as partial text
            self.chatTokens.emit(item.text)
        elif isinstance(item, ChatReplied):
            self.chatReplied.emit(item.text, item.stopped)
            if item.cut is not None:  # cut at the size cap: said now; the encoder still runs
                self.chatFailed.emit(item.cut)
            if remember:
                self._remember(item.through)
            else:
                self.chatEncoded.emit(EncodeSummary((), (), None, private=True))

    # -- remembering (the encoder, beside the chat) -------------------------------------------
    def _remember(self, through: int | None) -> int:
        """Queue the encoder over the turns up to ``through``; ``chatRemembering`` at once, and
        ``chatEncoded`` with the same key when it is done. Returns the key."""
        self._memo_key += 1
        key = self._memo_key
        self._memo_queue.append((key, through))
        self._memo_keys.append(key)
        self.chatRemembering.emit(key)
        self._next_memo()
        self._refresh_busy()
        return key

    def _next_memo(self) -> None:
        if self._memo.running or not self._memo_queue or self.closed:
            return
        key, through = self._memo_queue.popleft()
        self._memo_running = key
        job = Job(functools.partial(remember_turns, through=through), name="remember",
                  db_path=self.db_path, models=self.models())
        self._writes(job, "chat")
        job.success(lambda summary: self._memo_done(key, summary)).failure(
            lambda exc: self._memo_done(key, EncodeSummary((), (), describe_error(exc))))
        job.ended(lambda: self._on_memo_ended(job))
        self._memo.start(job)

    def _memo_done(self, key: int, summary: EncodeSummary) -> None:
        if key in self._memo_keys:
            self._memo_keys.remove(key)
        self.chatEncoded.emit(dataclasses.replace(summary, key=key))

    def _on_memo_ended(self, job: AnyJob) -> None:
        if self._memo.current is not job:
            return
        self._memo.current = None
        key, self._memo_running = self._memo_running, 0
        if key in self._memo_keys:  # cancelled: the job said nothing; its mark is answered here
            self._memo_done(key, EncodeSummary((), (), None, stopped=True))
        self._next_memo()
        self._refresh_busy()

    def stop_remembering(self) -> None:
        """Stop the encoder and drop the exchanges waiting for it: their turns stay after its
        cursor, and the next run (the next message's, in this window or after a restart)
        reads them."""
        waiting = [key for key, _ in self._memo_queue]
        self._memo_queue.clear()
        for key in waiting:
            self._memo_done(key, EncodeSummary((), (), None, stopped=True))
        self._memo.cancel()
        self._refresh_busy()

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
            client = client_spec(self.settings, self.request_key()) if use_model else None
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
            factory = client_factory(self.settings, self.request_key())
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
