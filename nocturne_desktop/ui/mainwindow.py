"""The main window: it arranges the panels and wires them to the :class:`Session`.

Layout: chat on the left; on the right a tab widget (Memory | Timeline | Diff | Sleep | Wake);
the status bar (:mod:`~nocturne_desktop.ui.statusbar`), the menus
(:mod:`~nocturne_desktop.ui.menus`). The window holds no business logic: it forwards actions to
the session, and each view follows the session's commits through its change hub
(:mod:`~nocturne_desktop.ui.changes`). Its title names the memory it shows; it is one of the
process's windows (:mod:`~nocturne_desktop.ui.windows`), which Quit closes together.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QMainWindow,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop import demo as demo_data
from nocturne_desktop.core.chat.agent import DEFAULT_HISTORY_TOKENS, carried_history
from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.errors import FactRefused, NocturneError
from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.core.stepwise import release
from nocturne_desktop.core.store import FoundFact
from nocturne_desktop.core.types import Conversation, Turn, Version
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.tuning import tuning_for
from nocturne_desktop.ui import refusals, windows
from nocturne_desktop.ui.autosleep import AutoSleeper, SleepNotice
from nocturne_desktop.ui.chat import ChatPane
from nocturne_desktop.ui.chatrequests import ChatRequests
from nocturne_desktop.ui.conversations import ConversationsDialog
from nocturne_desktop.ui.exportimport import ExportImport
from nocturne_desktop.ui.helpdialogs import AboutDialog, ShortcutsDialog
from nocturne_desktop.ui.jobs import BodyContext, deferred_full_collections, describe_error
from nocturne_desktop.ui.jobs.bodies.checks import still_know_body
from nocturne_desktop.ui.keyconfirm import KeyConfirmation
from nocturne_desktop.ui.letta import LettaLink
from nocturne_desktop.ui.lineageview import LineageDialog
from nocturne_desktop.ui.menus import WindowActions
from nocturne_desktop.ui.models.pagers import StatePager
from nocturne_desktop.ui.models.text import change_sentence
from nocturne_desktop.ui.onboarding import EndpointBanner, Onboarding
from nocturne_desktop.ui.plaintext import plain_labels, warn
from nocturne_desktop.ui.review import ReviewDialog
from nocturne_desktop.ui.session import BUSY_LABELS, Session
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from nocturne_desktop.ui.statusbar import StatusLine
from nocturne_desktop.ui.tabs.diff import DiffPanel
from nocturne_desktop.ui.tabs.memory import MemoryPanel
from nocturne_desktop.ui.tabs.sleep import SleepPanel
from nocturne_desktop.ui.tabs.timeline import TimelinePanel, default_pair
from nocturne_desktop.ui.tabs.wake import WakePanel

TABS = ("Memory", "Timeline", "Diff", "Sleep", "Wake")


def window_settings() -> QSettings:
    """Geometry and splitter sizes (tests redirect QSettings' IniFormat path to tmp)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "Nocturne", "window")


class MainWindow(QMainWindow):
    def __init__(self, session: Session, *, qsettings: QSettings | None = None,
                 saves_geometry: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.qsettings = qsettings if qsettings is not None else window_settings()
        self.saves_geometry = saves_geometry
        """Whether closing saves the geometry (a second window, on the demo or an imported
        memory, does not overwrite the first one's)."""
        self.quitting = False
        """Set by Quit, which asked once for every window: closing asks nothing more."""
        self.is_demo = session.store.get_meta(demo_data.DEMO_META_KEY) == "1"
        self.memory_name = windows.memory_name(session.db_path.parent, demo=self.is_demo,
                                               usual=session.settings.resolved_data_dir())
        self.setWindowTitle(f"Nocturne — {self.memory_name}")
        self.resize(1280, 800)
        self.viewing: Version | None = None
        self._landing = False
        """True while the timeline is moved to a version just made (it is live, not a view)."""
        self._select_in_version: str | None = None
        """A search hit to select once the version being read is shown."""
        self.conversations_dialog: ConversationsDialog | None = None
        self.review_dialog: ReviewDialog | None = None
        self._busy_message = ""
        """The status bar's note while a job runs (cleared when it ends, if still shown)."""
        self._version_timer = QTimer(self)
        self._version_timer.setSingleShot(True)
        self._version_timer.setInterval(0)
        self._version_timer.timeout.connect(self._read_version)

        self.chat = ChatPane(self)
        self.chat_requests = ChatRequests(self.session, self.chat, self.statusBar(), self._guard)
        self.memory = MemoryPanel(self)
        self.timeline = TimelinePanel(self)
        self.diff = DiffPanel(self)
        self.sleep = SleepPanel(self)
        self.wake = WakePanel(self)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        for name, w in zip(TABS, (self.memory, self.timeline, self.diff, self.sleep, self.wake), strict=True):
            self.tabs.addTab(w, name)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.chat)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([440, 840])
        self.splitter.setChildrenCollapsible(False)
        self.banner = EndpointBanner(self)
        self.onboarding = Onboarding(self, session, self.banner)
        central = QWidget(self)
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        self._build_autosleep()
        column.addWidget(self.notice)
        column.addWidget(self.splitter, 1)
        self.setCentralWidget(central)

        self.status = StatusLine(self, session, self.memory)
        self.letta = LettaLink(self, session)  # the Letta link's mark, banner and syncs
        column.insertWidget(1, self.letta.banner)
        self.exchange = ExportImport(self, session)
        self.keys = KeyConfirmation(self, session)
        self.menus = WindowActions(self)
        self._connect()
        self._restore_geometry()
        self.reload()
        self._show_previous_turns()
        self._on_busy("")
        self.status.update()
        plain_labels(self)
        self.chat.input.setFocus()  # to type at once (the first in tab order is the transcript)
        windows.register(self)

    # -- construction ------------------------------------------------------------------------------
    def _connect(self) -> None:
        s = self.session
        # Each view follows every commit itself, in this order: the tree first (the status bar
        # reads its counts), the timeline before the diff (whose default pair it holds).
        self.memory.run_read = s.read
        self.memory.search.bind(s)
        self.diff.bind(s, shown=lambda: self.tabs.currentWidget() is self.diff,
                       default_pair=self.timeline.last_sleep_pair)
        for view in (self.memory, self.timeline, self.diff, self.memory.search, self.status):
            s.changes.subscribe(view.on_commit)
        s.busyChanged.connect(self._on_busy)
        s.settingsChanged.connect(lambda st: self.memory.model.set_policy(st.retention))
        s.versionCreated.connect(self._on_version_created)
        s.chatStarted.connect(self.chat.on_started)
        s.chatRegenerating.connect(self.chat.on_regenerating)
        s.chatAccepted.connect(self.chat.on_accepted)
        s.chatTokens.connect(self.chat.on_tokens)
        s.chatReplied.connect(self.chat.on_replied)
        s.chatRemembering.connect(self.chat.on_remembering)
        s.chatEncoded.connect(self.chat.on_encoded)
        s.chatQueued.connect(self.chat.on_queued)
        self.chat.takeBackRequested.connect(
            lambda: self.chat.take_back(self.session.take_back_queued()))
        s.chatFailed.connect(self._on_chat_failed)
        s.sleepEvent.connect(self._on_sleep_event)
        s.quizProgress.connect(self.wake.show_progress)
        s.quizDone.connect(self.wake.show_report)
        s.quizFailed.connect(self.wake.on_failed)
        self.onboarding.endpointChanged.connect(self.status.update)
        s.settingsChanged.connect(lambda _s: self.status.update())
        s.conversationChanged.connect(self._on_conversation_changed)
        self.chat.edit_bar.accepted.connect(self.accept_chat_edit)
        self.chat.edit_bar.dismissed.connect(self.chat_requests.dismissed)
        self.chat.sendRequested.connect(self.send)
        self.chat.stopRequested.connect(self.stop)
        self.chat.regenerateRequested.connect(self.regenerate)
        self.memory.backToLive.connect(self.back_to_live)
        self.memory.handRequested.connect(self.hand)
        self.memory.whyRequested.connect(self.open_lineage)
        self.memory.search.activated.connect(self.jump_to_hit)
        self.memory.search.versionRequested.connect(self.open_hit_version)
        self.timeline.versionSelected.connect(self._on_version_selected)
        self.timeline.undoRequested.connect(self.undo_sleep)
        self.timeline.restoreRequested.connect(self.restore_version)
        self.timeline.compareRequested.connect(self._compare)
        self.tabs.currentChanged.connect(self._on_tab)
        self.sleep.sleepRequested.connect(self.start_sleep)
        self.sleep.dryRunRequested.connect(self.start_dry_run)
        self.sleep.cancelRequested.connect(self.session.cancel_sleep)
        self.wake.quizRequested.connect(self.start_quiz)
        self.wake.cancelRequested.connect(self.session.cancel)
        self.wake.still_know.fileChosen.connect(self.run_still_know)
        self.exchange.runningChanged.connect(self.menus.set_exchange_running)

    # -- geometry ----------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        q = self.qsettings
        geo = q.value("geometry")
        if isinstance(geo, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geo))
        for key, splitter in (("splitter", self.splitter), ("diffSplitter", self.diff.splitter)):
            state = q.value(key)
            if isinstance(state, QByteArray | bytes):
                splitter.restoreState(QByteArray(state))
        tab = q.value("tab")
        if tab is not None:
            with contextlib.suppress(ValueError):
                self.tabs.setCurrentIndex(int(str(tab)))

    def save_geometry(self) -> None:
        if not self.saves_geometry:
            return
        q = self.qsettings
        q.setValue("geometry", self.saveGeometry())
        q.setValue("splitter", self.splitter.saveState())
        q.setValue("diffSplitter", self.diff.splitter.saveState())
        q.setValue("tab", self.tabs.currentIndex())
        q.sync()

    # -- reading the store -------------------------------------------------------------------------
    @Slot()
    def reload(self) -> None:
        """Read the store's first pages, versions and sleeps (start-up: O(page) facts; the
        views then follow its commits by id)."""
        store = self.session.store
        versions = store.versions()
        sleeps = store.sleeps()
        if self.viewing is None:
            self.memory.attach_store(store, policy=self.session.settings.retention)
            self.status.active_count = self.memory.model.active_count()  # with the first pages
        else:
            self.status.active_count = None
        self.timeline.set_versions(versions, sleeps)
        self.diff.set_versions(versions, default_pair(versions))
        self.diff.mark_dirty()
        self.status.update()

    def _history_budget(self) -> int:
        """The history window's token budget (the model's own tighter one when it has one)."""
        tuning = tuning_for(self.session.settings.model)
        budget = DEFAULT_HISTORY_TOKENS
        if tuning is not None and tuning.history_tokens is not None:
            budget = min(budget, tuning.history_tokens)
        return budget

    def _show_previous_turns(self) -> None:
        """The turns the next prompt carries, shown on start so the pane matches what the model
        receives (the history window, with the model's own tighter budget when it has one)."""
        try:
            turns = carried_history(self.session.store, history_tokens=self._history_budget())
        except NocturneError as exc:
            self.statusBar().showMessage(f"The earlier conversation could not be read: {exc}", 8000)
            return
        self.chat.show_history(turns)

    @Slot(int)
    def _on_tab(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.diff:
            self.diff.on_shown()

    def _compare(self, a: int, b: int) -> None:
        self.diff.select_pair(a, b)
        self.tabs.setCurrentWidget(self.diff)

    @Slot(str)
    def run_still_know(self, path: str) -> None:
        """A benchmark file's questions put to this memory, in a read job (its own store); a
        newer file supersedes one still running."""
        box = self.wake.still_know
        self.session.read("still-know", lambda ctx: still_know_body(path, ctx),
                          box.show_report, lambda exc: box.show_error(describe_error(exc)))

    # -- actions -----------------------------------------------------------------------------------
    @Slot(str)
    def _on_busy(self, kind: str) -> None:
        idle = not kind
        # the tree takes a job's commits when the job ended; a restore's one commit comes as
        # the job ends anyway, and the live tree must hold it when versionCreated lands there
        # (a job in a worker process: the tree follows its commits as they land, see hold);
        # the encoder's few rows land as it commits them
        self.memory.hold(kind not in ("", "restore", "remembering"), unless=self._job_in_worker)
        self.chat.set_busy(kind)
        if kind != "chat":
            self.chat.on_idle()
        if idle:
            self.chat_requests.accept_pending()
            self._read_conversations()  # the turn counts changed
        self.sleep.set_busy(kind)
        self.wake.set_busy(kind)
        self.timeline.set_busy(bool(kind))
        for a in self.menus.writing:
            a.setEnabled(idle)
        if self.conversations_dialog is not None:
            self.conversations_dialog.set_busy(not idle)
        self.menus.stop.setEnabled(not idle)
        bar = self.statusBar()
        if kind:
            self._busy_message = f"{BUSY_LABELS.get(kind, kind)}…"
            bar.showMessage(self._busy_message)
        else:
            # only the busy note: a job's own last word (a restore's new version, its error)
            # stays for its time
            if bar.currentMessage() == self._busy_message:
                bar.clearMessage()
            self._busy_message = ""

    def _job_in_worker(self) -> bool:
        """Whether the store-writing job runs in a worker process (not on a thread here)."""
        job = self.session.job
        return job is not None and job.in_child

    def _guard(self, fn: object, *args: object) -> object:
        try:
            return fn(*args)  # type: ignore[operator]
        except (NocturneError, ValueError, RuntimeError) as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return None

    @Slot(str)
    def send(self, text: str) -> None:
        """Send a message: at once, or after the reply that streams (it then waits, shown
        above the box); the encoder reading the last exchange never holds it."""
        try:
            self.session.send(text, remember=self.chat.remember.isChecked())
        except (NocturneError, ValueError, RuntimeError) as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return
        self.chat_requests.propose(text)

    @Slot(object)
    def accept_chat_edit(self, proposal: HandProposal) -> None:
        """The person confirmed a request said in chat (:class:`ChatRequests`)."""
        self.chat_requests.accept(proposal)

    # -- conversations (S-CONV-1) ------------------------------------------------------------------
    @Slot()
    def new_conversation(self) -> None:
        self._guard(self.session.new_conversation)

    @Slot()
    def open_conversations(self) -> ConversationsDialog:
        """The list of conversations (non-modal), read off the GUI thread."""
        dlg = self.conversations_dialog
        if dlg is None:
            dlg = self.conversations_dialog = ConversationsDialog(self)
            dlg.openRequested.connect(self.open_conversation)
            dlg.newRequested.connect(self.new_conversation)
        dlg.set_busy(bool(self.session.busy))
        self._read_conversations()
        if dlg.isVisible():
            dlg.activateWindow()
        else:
            dlg.show()
        return dlg

    def _read_conversations(self) -> None:
        dlg = self.conversations_dialog
        if dlg is None:
            return

        def read(ctx: BodyContext) -> tuple[list[Conversation], int | None]:
            return ctx.store.conversations(), ctx.store.current_conversation()

        self.session.read("conversations", read, lambda got: dlg.set_conversations(*got),
                          lambda exc: dlg.show_error(describe_error(exc)))

    @Slot(int)
    def open_conversation(self, conversation: int) -> None:
        self._guard(self.session.open_conversation, conversation)

    @Slot(int)
    def _on_conversation_changed(self, conversation: int) -> None:
        """A new conversation clears the pane; a reopened one shows its turns, read off the GUI
        thread with the history the model will receive."""
        budget = self._history_budget()
        self.chat.clear_conversation()

        def read(ctx: BodyContext) -> tuple[list[Turn], int, str]:
            turns = ctx.store.turns(conversation=conversation)
            carried = carried_history(ctx.store, history_tokens=budget)
            title = next((c.title for c in ctx.store.conversations() if c.id == conversation), "")
            return turns, len(carried), title

        def show(got: tuple[list[Turn], int, str]) -> None:
            turns, carried, title = got
            # a message sent into the emptied pane meanwhile wins (its turn is already shown)
            if turns and not self.chat.transcript.messages \
                    and self.session.store.current_conversation() == conversation:
                self.chat.show_conversation(title, turns, carried)

        self.session.read("conversation", read, show, lambda exc: self.statusBar().showMessage(
            f"The conversation could not be read: {describe_error(exc)}", 8000))
        self.statusBar().showMessage(f"Conversation {conversation} — memory is kept", 8000)
        self._read_conversations()

    @Slot()
    def regenerate(self) -> None:
        self._guard(self.session.regenerate)

    @Slot()
    def stop(self) -> None:
        busy = self.session.busy
        if busy in ("sleep", "dry-run"):
            self.session.cancel_sleep()
        elif busy:
            self.session.cancel()

    @Slot(str)
    def _on_chat_failed(self, message: str) -> None:
        self.chat.on_failed(message)
        self.session.check_endpoint()

    def _start(self, start: object, tab: QWidget) -> None:
        """Start a job through the session; show its tab once it runs."""
        if self._guard(start) is not None:
            self.tabs.setCurrentWidget(tab)

    @Slot()
    def start_sleep(self) -> None:
        self._start(self.session.start_sleep, self.sleep)

    @Slot()
    def start_dry_run(self) -> None:
        self._start(lambda: self.session.start_sleep(dry_run=True), self.sleep)

    @Slot()
    def start_rules_sleep(self) -> None:
        self._start(lambda: self.session.start_sleep(engine_only=True), self.sleep)

    @Slot()
    def open_review(self) -> None:
        """Sleep with review (S-EDIT-2): the plan of a dry run, ticked change by change."""
        if self.review_dialog is None:
            self.review_dialog = ReviewDialog(self.session, self)
        self.review_dialog.show()
        self.review_dialog.activateWindow()
        self.review_dialog.replan()

    @Slot(object)
    def _on_sleep_event(self, ev: SleepEvent) -> None:
        self.sleep.on_event(ev)
        if ev.kind == SleepEventKind.DONE and self.session.busy == "sleep":
            self.timeline.scroll_to_latest()

    @Slot()
    def start_quiz(self) -> None:
        self._start(self.session.start_quiz, self.wake)

    @Slot()
    @Slot(str, object, object)
    def hand(self, op: str, args: object, kwargs: object) -> None:
        """A change by hand from the memory tree; a refusal (empty text, pinned …) is shown in
        the status bar and nothing is written. A text the admission check refuses is said in
        one sentence, and the text dialog opens again with it kept (nothing typed is lost)."""
        a = tuple(args) if isinstance(args, tuple | list) else ()
        kw = dict(kwargs) if isinstance(kwargs, dict) else {}
        try:
            v = self.session.hand(op, *a, **kw)
        except FactRefused as exc:
            what = "the new fact" if op == "add_fact" else "the edited text"
            message = refusals.refused(exc, what)
            self.statusBar().showMessage(message, 15000)
            self.memory.refused(op, a, kw, message, self.session.store.get)
            return
        except (NocturneError, ValueError, RuntimeError) as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return
        if isinstance(v, Version):
            retold = "text" in kw  # the words changed: "Edited …", and the category after it
            said = self.said(v, category=None if retold else kw.get("category"),
                             block=kw.get("block"))
            if retold and isinstance(kw.get("category"), str):
                said += f", filed under {kw['category']}"
            self.statusBar().showMessage(f"{said} — Ctrl+Z undoes it", 8000)

    def said(self, v: Version, *, category: object = None, block: object = None) -> str:
        """Version ``v`` as the sentence the status line shows (a fact by its words, read by id
        from the window's store, not by its id)."""
        def text_of(item_id: str) -> str | None:
            try:
                fact = self.session.store.get(item_id)
            except NocturneError:
                return None
            return fact.text if fact is not None else None

        return change_sentence(v.label, text_of,
                               category=category if isinstance(category, str) else None,
                               block=block if isinstance(block, str) else None)

    def undo_change(self) -> None:
        v = self._guard(self.session.hand, "undo")
        if isinstance(v, Version):
            self.statusBar().showMessage(f"{self.said(v)} — Ctrl+Shift+Z redoes it", 8000)

    def redo_change(self) -> None:
        v = self._guard(self.session.hand, "redo")
        if isinstance(v, Version):
            self.statusBar().showMessage(f"{self.said(v)} — Ctrl+Z undoes it again", 8000)

    def undo_last_sleep(self) -> None:
        self._guard(lambda: self._undo_sleep(None))

    @Slot(int)
    def undo_sleep(self, sleep_id: int) -> None:
        self._guard(lambda: self._undo_sleep(sleep_id))

    def _undo_sleep(self, sleep_id: int | None) -> object:
        """:meth:`Session.undo_sleep`, with the sleep and the version it began from found in
        the versions the timeline holds (it follows every commit), not by reading every
        version on the GUI thread (thousands after a thousand sleeps)."""
        groups = self.timeline.model
        return self.session.undo_sleep(sleep_id, on_failure=self._on_restore_failed,
                                       last_sleep=groups.last_sleep,
                                       sleep_start=groups.sleep_start)

    @Slot(int)
    def restore_version(self, seq: int) -> None:
        """Restore ``seq`` as a new version, in a job (the window shows it busy meanwhile and
        refuses a second write); :meth:`_on_version_created` lands on live when it is done."""
        self._guard(lambda: self.session.restore(seq, on_failure=self._on_restore_failed))

    def _on_restore_failed(self, exc: BaseException) -> None:
        """A restore that could not write (read-only, locked, full store): said in the status
        bar; the store is as it was (one transaction)."""
        self.statusBar().showMessage(describe_error(exc), 8000)

    @Slot(object)
    def _on_version_created(self, v: Version) -> None:
        """An undo or a restore made a new version: the timeline marks it, and the Memory tab
        lands on live (the new version is live memory, not a view: facts from chat appear)."""
        self._landing = True
        try:
            self.timeline.select_version(v.seq)
        finally:
            self._landing = False
        self.back_to_live()
        self.statusBar().showMessage(
            f"{self.said(v)}: memory is live ({v.active_count} active facts)", 8000)

    @Slot(object)
    def _on_version_selected(self, v: Version | None) -> None:
        """Show a past version read-only. Its state is rebuilt off the GUI thread (O(store));
        selecting another version, or going back to live, drops a result still coming."""
        if v is None or self._landing:
            return
        self.viewing = v
        # The read starts on the next turn of the event loop: a layout or paint already queued
        # (a filter just cleared, the timeline's selection) runs first, not while the read's
        # Python holds the GIL (each of a paint's calls into the model would wait).
        self._version_timer.start()

    def _read_version(self) -> None:
        v = self.viewing
        if v is None:
            return

        def read(ctx: BodyContext) -> tuple[StatePager, Version | None]:
            # the tree's structure is built here too: the GUI thread only swaps it in; the
            # state's new objects would set off a full collection holding the GIL
            with deferred_full_collections():
                facts = ctx.store.state_at(v.seq)
                state = StatePager(facts)
                release(facts)  # freed fact by fact here, not in one call holding the GIL
                return state, ctx.store.latest_version()

        self.session.read("version", read, lambda result: self._show_version(v, *result),
                          lambda exc: self._on_version_failed(v, exc))

    def _show_version(self, v: Version, state: StatePager, latest: Version | None) -> None:
        if self.viewing is not v:
            return
        self.memory.show_state(state, v)
        if latest is not None and latest.seq == v.seq:
            self.memory.banner.label.setText(
                self.memory.banner.label.text() + "  — the latest version")
        wanted, self._select_in_version = self._select_in_version, None
        if wanted is not None:
            self.memory.select_fact(wanted)

    # -- search (S-EDIT-3) -------------------------------------------------------------------------
    @Slot()
    def focus_search(self) -> None:
        self.tabs.setCurrentWidget(self.memory)
        self.memory.search.field.setFocus()
        self.memory.search.field.selectAll()

    def jump_to_hit(self, hit: FoundFact) -> None:
        """An active or forgotten fact: select it in the live tree ("Show forgotten" on for a
        forgotten one). A superseded fact: open the version where it was last active."""
        if hit.status == "superseded" and hit.last_active_seq is not None:
            self.open_hit_version(hit)
            return
        self.tabs.setCurrentWidget(self.memory)
        self.back_to_live()
        if not hit.fact.active:
            self.memory.show_forgotten.setChecked(True)
        if self.memory.select_fact(hit.fact.id):
            self.memory.view.setFocus()
        else:
            self.statusBar().showMessage(f"{hit.fact.id} is not in the tree any more", 6000)

    def open_hit_version(self, hit: FoundFact) -> None:
        """Open the version where ``hit`` was last active, as the timeline does, and select it."""
        seq = hit.last_active_seq
        if seq is None:
            return
        self.tabs.setCurrentWidget(self.memory)
        self._select_in_version = hit.fact.id
        current = self.timeline.current_version()
        if current is not None and current.seq == seq:
            self._on_version_selected(current)  # already selected there: read it again
        else:
            self.timeline.select_version(seq)
        if self.viewing is None or self.viewing.seq != seq:
            self._select_in_version = None
            self.statusBar().showMessage(f"Version s{seq:04d} is not on the timeline", 6000)

    def _on_version_failed(self, v: Version, exc: BaseException) -> None:
        if self.viewing is v:
            self.viewing = None
        self.statusBar().showMessage(f"Version {v.id} could not be read: {describe_error(exc)}", 8000)

    @Slot()
    def show_lineage(self) -> None:
        fact = self.memory.current_fact()
        if fact is None:
            self.statusBar().showMessage("Select a fact in the Memory tab to see why it is remembered",
                                         6000)
            return
        self.open_lineage(fact.id)

    def open_lineage(self, item_id: str) -> LineageDialog:
        """Open the lineage view of ``item_id`` (computed on a worker thread)."""
        dialog = LineageDialog(self.session.store.path, item_id, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.lineage_dialog = dialog
        dialog.show()
        return dialog

    @Slot()
    def back_to_live(self) -> None:
        self._version_timer.stop()
        self.session.cancel_read("version")
        if self.viewing is None:
            return
        self.viewing = None
        self.memory.attach_store(self.session.store, policy=self.session.settings.retention)

    @Slot()
    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.actions(), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    @Slot()
    def show_about(self) -> AboutDialog:
        dialog = AboutDialog(self.session.db_path.parent, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    @Slot()
    def open_settings(self) -> None:
        result = SettingsDialog.ask(self.session.settings, self.session.api_key,
                                    dict(self.session.capabilities), self)
        if result is None:
            return
        settings, key = result
        settings = self.keys.before_saving(settings, key)
        try:
            self.session.apply_settings(settings, key)
        except (OSError, NocturneError) as exc:
            warn(self, f"The settings could not be saved: {exc}")

    # -- automatic sleep (S-AUTO-1) -----------------------------------------------------------------
    def _build_autosleep(self) -> None:
        self.notice = SleepNotice(self)
        self.autosleep = AutoSleeper(self.session, self)
        self._quit_sleep = False
        """True once closing started the on-quit sleep: the window closes when it ends."""
        self.autosleep.started.connect(
            lambda: self.statusBar().showMessage("Sleeping by itself (Esc cancels)…", 8000))
        self.autosleep.finished.connect(self.notice.show_done)
        self.notice.undoRequested.connect(self._undo_auto_sleep)
        self.notice.quitNowRequested.connect(self._quit_now)
        self.session.busyChanged.connect(self._close_after_quit_sleep)

    @Slot(int)
    def _undo_auto_sleep(self, sleep_id: int) -> None:
        """The notice's Undo: the same path as Memory → Undo last sleep, for that sleep."""
        self._guard(lambda: self.session.undo_sleep(
            sleep_id, on_failure=self._on_restore_failed,
            sleep_start=self.timeline.model.sleep_start,
            on_done=lambda v: self.notice.show_undone(
                f"Sleep undone — memory is back as before, in new version {v.id}.")))

    def _sleep_before_quit(self) -> bool:
        """Closing with "sleep before quitting" on: start the sleep and keep the window open
        until it ends (the notice offers "Quit now"). Whether the close must wait."""
        s = self.session
        if self._quit_sleep or s.closed or s.busy or not s.settings.auto_sleep.on_quit:
            return False
        try:
            s.start_sleep()
        except (NocturneError, RuntimeError):
            return False
        self._quit_sleep = True
        self.notice.show_quitting()
        self.tabs.setCurrentWidget(self.sleep)
        return True

    @Slot()
    def _quit_now(self) -> None:
        """Cancel the on-quit sleep; the window closes once its job has really ended."""
        self.session.cancel_sleep()

    @Slot(str)
    def _close_after_quit_sleep(self, kind: str) -> None:
        if self._quit_sleep and not kind and not self.session.closed:
            QTimer.singleShot(0, self.close)

    # -- closing -----------------------------------------------------------------------------------
    def confirm_close_during_sleep(self) -> bool:
        """Ask before cancelling a running sleep (tests monkeypatch this)."""
        answer = QMessageBox.question(
            self, "Nocturne is sleeping",
            "A sleep is running. Cancel it and quit? Memory stays at the last completed pass.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def confirm_quit(self, question: str) -> bool:
        """Ask once before Quit closes every window (tests monkeypatch this)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Quit Nocturne?", question,
                          QMessageBox.StandardButton.Cancel, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        quit_button = box.addButton("Quit", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(quit_button)
        box.exec()
        return box.clickedButton() is quit_button

    @Slot()
    def quit_app(self) -> None:
        """File → Quit (Ctrl+Q): every window of Nocturne, after one question when there is
        something to say (:func:`~nocturne_desktop.ui.windows.quit_all`)."""
        windows.quit_all(self)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._sleep_before_quit():
            event.ignore()
            return
        if (self.session.busy == "sleep" and not self.quitting
                and not self.confirm_close_during_sleep()):
            event.ignore()
            return
        self.save_geometry()
        self.letta.close()
        self.session.shutdown()
        self.onboarding.close()
        windows.unregister(self)
        if not windows.open_windows():
            builtin_engine.stop()  # the built-in engine, if this process started one
        event.accept()
