"""The main window: it arranges the panels and wires them to the :class:`Session`.

Layout: chat on the left; on the right a tab widget (Memory | Timeline | Diff | Sleep | Wake);
a status bar with the endpoint, the model, the store path and the active count. The window holds
no business logic: it forwards actions to the session and redraws from the store on
``storeChanged``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from PySide6.QtCore import QByteArray, QObject, QSettings, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop import paths
from nocturne_desktop.core.chat import edits as chatedits
from nocturne_desktop.core.chat.agent import DEFAULT_HISTORY_TOKENS, carried_history
from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.core.stepwise import release
from nocturne_desktop.core.store import FoundFact
from nocturne_desktop.core.store.exchange import ScratchImport
from nocturne_desktop.core.store.reads import ChangedRows
from nocturne_desktop.core.types import Conversation, Diff, Turn, Version
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.engine import EngineExit
from nocturne_desktop.llm.tuning import tuning_for
from nocturne_desktop.settings import choose_endpoint
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.autosleep import AutoSleeper, SleepNotice
from nocturne_desktop.ui.chat import ChatPane
from nocturne_desktop.ui.conversations import ConversationsDialog
from nocturne_desktop.ui.diffview import DiffPanel
from nocturne_desktop.ui.exchangeui import (
    Exported,
    Imported,
    check_import_folder,
    export_body,
    import_body,
    launch_window,
)
from nocturne_desktop.ui.firstrun import FirstRunDialog
from nocturne_desktop.ui.gcdefer import deferred_full_collections
from nocturne_desktop.ui.helpdialogs import AboutDialog, ShortcutsDialog
from nocturne_desktop.ui.jobs import JobContext, describe_error
from nocturne_desktop.ui.lineageview import LineageDialog
from nocturne_desktop.ui.memory import MemoryPanel
from nocturne_desktop.ui.models.pagers import StatePager
from nocturne_desktop.ui.models.text import version_label
from nocturne_desktop.ui.onboarding import EndpointBanner, launch_demo_window
from nocturne_desktop.ui.panels import SleepPanel, WakePanel
from nocturne_desktop.ui.plain import plain_labels
from nocturne_desktop.ui.review import ReviewDialog
from nocturne_desktop.ui.session import Session
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from nocturne_desktop.ui.stillknow import still_know_body
from nocturne_desktop.ui.timeline import TimelinePanel

TABS = ("Memory", "Timeline", "Diff", "Sleep", "Wake")


def window_settings() -> QSettings:
    """Geometry and splitter sizes (tests redirect QSettings' IniFormat path to tmp)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "Nocturne", "window")


class EngineExitBridge(QObject):
    """Carries the built-in engine's exit (reported on a watcher thread) to the GUI thread."""

    stopped = Signal(str)

    def report(self, base_url: str, _ended: EngineExit) -> None:
        self.stopped.emit(base_url)  # queued: the receiver lives on the GUI thread


class MainWindow(QMainWindow):
    def __init__(self, session: Session, *, qsettings: QSettings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.qsettings = qsettings if qsettings is not None else window_settings()
        self.setWindowTitle("Nocturne")
        self.resize(1280, 800)
        self.viewing: Version | None = None
        self._landing = False
        """True while the timeline is moved to a version just made (it is live, not a view)."""
        self._diff_dirty = True
        self._select_in_version: str | None = None
        """A search hit to select once the version being read is shown."""
        self._pending_edit: HandProposal | None = None
        """A chat edit the person accepted while the reply ran: applied when it ends."""
        self.conversations_dialog: ConversationsDialog | None = None
        self.review_dialog: ReviewDialog | None = None
        self._busy_message = ""
        """The status bar's note while a job runs (cleared when it ends, if still shown)."""
        self._active: int | None = None
        """The live memory's active facts for the status bar: from the tree's counts at start,
        then from each commit's (None: not known here; counted off the GUI thread)."""
        self._version_timer = QTimer(self)
        self._version_timer.setSingleShot(True)
        self._version_timer.setInterval(0)
        self._version_timer.timeout.connect(self._read_version)

        self.chat = ChatPane(self)
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
        self.banner.setupRequested.connect(self.open_first_run)
        self.engine_exits = EngineExitBridge(self)
        self.engine_exits.stopped.connect(self._on_builtin_engine_stopped)
        report = self.engine_exits.report
        builtin_engine.add_exit_listener(report)
        self.engine_exits.destroyed.connect(lambda *_: builtin_engine.remove_exit_listener(report))
        central = QWidget(self)
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        self._build_autosleep()
        column.addWidget(self.notice)
        column.addWidget(self.splitter, 1)
        self.setCentralWidget(central)

        self._build_status_bar()
        self._build_actions()
        self._connect()
        self._restore_geometry()
        self.reload()
        self._show_previous_turns()
        self._on_busy("")
        self._update_status()
        plain_labels(self)

    # -- construction ------------------------------------------------------------------------------
    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.st_endpoint = QLabel(self)
        self.st_model = QLabel(self)
        self.st_store = QLabel(self)
        self.st_active = QLabel(self)
        for lab in (self.st_endpoint, self.st_model, self.st_store, self.st_active):
            lab.setTextFormat(Qt.TextFormat.PlainText)
            lab.setContentsMargins(6, 0, 6, 0)
        sb.addWidget(self.st_endpoint)
        sb.addWidget(self.st_model)
        sb.addWidget(self.st_store, 1)
        sb.addPermanentWidget(self.st_active)

    def _action(self, text: str, shortcut: str | QKeySequence.StandardKey | None, slot: object,
                tip: str = "") -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
            keys = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            a.setToolTip(f"{tip or text} ({keys})")
        a.setStatusTip(tip or text)
        a.triggered.connect(slot)
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        self.act_settings = self._action("&Settings…", "Ctrl+,", self.open_settings,
                                         "Model server, timeouts, retention policy, data folder")
        self.act_quit = self._action("&Quit", "Ctrl+Q", self.close)
        self.act_sleep = self._action("&Sleep", "Ctrl+Shift+S", self.start_sleep,
                                      "Consolidate memory: Dedupe → Merge → Reconcile → Promote → Forget")
        self.act_dry = self._action("&Dry run", "Ctrl+Shift+D", self.start_dry_run,
                                    "Run the passes without applying anything")
        self.act_rules = self._action("Sleep with &rules only", None, self.start_rules_sleep,
                                      "Consolidate without the model: duplicate, reconcile, "
                                      "promotion and capacity rules only, each labelled")
        self.act_review = self._action("Sleep with re&view…", None, self.open_review,
                                       "Plan a sleep (a dry run), tick the changes to keep, apply "
                                       "them as one sleep")
        self.act_stop = self._action("S&top / cancel", "Esc", self.stop,
                                     "Stop the reply, the sleep or the quiz")
        self.act_undo_change = self._action("&Undo", "Ctrl+Z", self.undo_change,
                                            "Undo the last change to memory, whoever made it (an "
                                            "edit by you or a sleep), as a new version")
        self.act_redo = self._action("&Redo", "Ctrl+Shift+Z", self.redo_change,
                                     "Make the last undone change again, as a new version")
        self.act_undo = self._action("&Undo last sleep", None, self.undo_last_sleep,
                                     "Restore the state from before the last sleep, as a new version")
        self.act_quiz = self._action("Run &quiz", "Ctrl+Shift+Q", self.start_quiz,
                                     "The Wake quiz: can the agent recall what it kept?")
        self.act_probe = self._action("Check &endpoint", "F5", self.session.check_endpoint,
                                      "Ask the model server for its models")
        self.act_live = self._action("Back to &live", "Ctrl+L", self.back_to_live,
                                     "Leave the read-only view of a past version")
        self.act_focus = self._action("Focus the message box", "Ctrl+K", self.chat.input.setFocus)
        self.act_search = self._action("&Search memory…", "Ctrl+F", self.focus_search,
                                       "Search every fact, forgotten and superseded ones too")
        self.act_why = self._action("&Why do you remember this?", "Ctrl+I", self.show_lineage,
                                    "The selected fact's lineage: turns, merges, drops, "
                                    "supersedes, each with version and reason")
        self.act_new_conv = self._action("&New conversation", "Ctrl+N", self.new_conversation,
                                         "A fresh transcript; memory is kept")
        self.act_conversations = self._action("&Conversations…", "Ctrl+O", self.open_conversations,
                                              "Every conversation: reopen one to continue it")
        mb = self.menuBar()
        m_file = mb.addMenu("&File")
        m_file.addAction(self.act_new_conv)
        m_file.addAction(self.act_conversations)
        m_file.addSeparator()
        self.act_first_run = self._action("&Connect to a model…", None, self.open_first_run,
                                          "Detect local servers, enter a URL, or use the "
                                          "built-in engine")
        self.act_demo = self._action("Open &demo memory", None, self.open_demo,
                                     "A ready-made memory in its own folder, to try Sleep, Diff "
                                     "and Undo")
        m_file.addAction(self.act_settings)
        m_file.addAction(self.act_first_run)
        m_file.addAction(self.act_demo)
        self._build_exchange_actions(m_file)
        m_file.addSeparator()
        m_file.addAction(self.act_quit)
        m_edit = mb.addMenu("&Edit")
        m_edit.addAction(self.act_undo_change)
        m_edit.addAction(self.act_redo)
        m_mem = mb.addMenu("&Memory")
        for a in (self.act_sleep, self.act_dry, self.act_rules, self.act_review, self.act_stop,
                  None, self.act_undo,
                  self.act_live, self.act_why, self.act_search,
                  None, self.act_quiz, self.act_probe):
            if a is None:
                m_mem.addSeparator()
            else:
                m_mem.addAction(a)
        m_view = mb.addMenu("&View")
        m_view.addAction(self.act_focus)
        for i, name in enumerate(TABS):
            act = self._action(f"{name} tab", f"Ctrl+{i + 1}",
                               lambda _=False, i=i: self.tabs.setCurrentIndex(i))
            m_view.addAction(act)
        m_help = mb.addMenu("&Help")
        self.act_shortcuts = self._action("&Keyboard shortcuts", "F1", self.show_shortcuts,
                                          "Every key the window answers to")
        self.act_about = self._action("&About Nocturne", None, self.show_about,
                                      "Version, where memory is kept")
        m_help.addAction(self.act_shortcuts)
        m_help.addAction(self.act_about)

    def _connect(self) -> None:
        s = self.session
        s.busyChanged.connect(self._on_busy)
        s.storeChanges.connect(self._on_store_changes)
        s.storeChanged.connect(self._on_store_written)
        s.settingsChanged.connect(lambda st: self.memory.model.set_policy(st.retention))
        self.memory.run_read = s.read
        s.versionCreated.connect(self._on_version_created)
        s.chatStarted.connect(self.chat.on_started)
        s.chatRegenerating.connect(self.chat.on_regenerating)
        s.chatAccepted.connect(self.chat.on_accepted)
        s.chatTokens.connect(self.chat.on_tokens)
        s.chatReplied.connect(self.chat.on_replied)
        s.chatEncoded.connect(self.chat.on_encoded)
        s.chatFailed.connect(self._on_chat_failed)
        s.sleepEvent.connect(self._on_sleep_event)
        s.quizProgress.connect(self.wake.show_progress)
        s.quizDone.connect(self.wake.show_report)
        s.quizFailed.connect(self.wake.on_failed)
        s.endpointChecked.connect(self._on_endpoint)
        s.settingsChanged.connect(lambda _s: self._update_status())
        s.conversationChanged.connect(self._on_conversation_changed)
        self.chat.edit_bar.accepted.connect(self.accept_chat_edit)
        self.chat.edit_bar.dismissed.connect(self._on_chat_edit_dismissed)
        self.chat.sendRequested.connect(self.send)
        self.chat.stopRequested.connect(self.stop)
        self.chat.regenerateRequested.connect(self.regenerate)
        self.memory.backToLive.connect(self.back_to_live)
        self.memory.handRequested.connect(self.hand)
        self.memory.whyRequested.connect(self.open_lineage)
        self.memory.search.queryChanged.connect(self.search_memory)
        self.memory.search.activated.connect(self.jump_to_hit)
        self.memory.search.versionRequested.connect(self.open_hit_version)
        self.timeline.versionSelected.connect(self._on_version_selected)
        self.timeline.undoRequested.connect(self.undo_sleep)
        self.timeline.restoreRequested.connect(self.restore_version)
        self.timeline.compareRequested.connect(self._compare)
        self.diff.pairChanged.connect(self._show_diff)
        self.diff.show_kept.toggled.connect(self._on_show_kept)
        self.tabs.currentChanged.connect(self._on_tab)
        self.sleep.sleepRequested.connect(self.start_sleep)
        self.sleep.dryRunRequested.connect(self.start_dry_run)
        self.sleep.cancelRequested.connect(self.session.cancel_sleep)
        self.wake.quizRequested.connect(self.start_quiz)
        self.wake.cancelRequested.connect(self.session.cancel)
        self.wake.still_know.fileChosen.connect(self.run_still_know)

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
        views then follow :meth:`_on_store_changes` by id)."""
        store = self.session.store
        versions = store.versions()
        sleeps = store.sleeps()
        if self.viewing is None:
            self.memory.attach_store(store, policy=self.session.settings.retention)
            self._active = self.memory.model.active_count()  # counted with the first pages
        else:
            self._active = None
        self.timeline.set_versions(versions, sleeps)
        self.diff.set_versions(versions, self.default_pair(versions))
        self._on_store_written()

    @Slot(object)
    def _on_store_changes(self, rows: ChangedRows) -> None:
        """One commit's rows (read by id on the writer's thread): each view applies them as
        row inserts, ``dataChanged`` and removes. Nothing here reads the store."""
        self.memory.apply_changes(rows)
        if rows.versions or rows.sleeps:
            self.timeline.append(rows.versions, rows.sleeps)
        if rows.versions:
            self.diff.append_versions(rows.versions, self._default_pair_now())
        if rows.changes.facts:
            self._active = self._active_after(rows)
            self._show_active()

    def _active_after(self, rows: ChangedRows) -> int | None:
        """The live active count after the commit ``rows``: its own per-block counts (a job's
        commit reads them in its worker), else the live tree's once it applied the commit
        (a small change by hand, counted from the rows it touched); None when neither knows."""
        if rows.counts is not None:
            return sum(c[0] for c in rows.counts.values())
        if self.memory.follows_live():
            return self.memory.model.active_count()
        return None

    def _show_active(self) -> None:
        """The status bar's active count, with no count of the store on the GUI thread: the
        one known, else one counted in a read job (a newer commit's count wins over it)."""
        if self._active is not None:
            self.st_active.setText(f"{self._active} active facts")
            return

        def counted(n: int) -> None:
            if self._active is None:
                self._active = n
                self.st_active.setText(f"{n} active facts")

        self.session.read("active-count", lambda ctx: ctx.store.active_count(), counted,
                          lambda exc: self.st_active.setText(describe_error(exc)))

    def _default_pair_now(self) -> tuple[int, int] | None:
        """:meth:`default_pair` from the versions the timeline holds, searched from the end."""
        groups = self.timeline.model
        for row in range(groups.rowCount() - 1, -1, -1):
            sid = groups.sleep_of(groups.index(row, 0))
            if sid is not None:
                parent = groups.index(row, 0)
                first = groups.version_at(groups.index(0, 0, parent))
                last = groups.version_at(groups.index(groups.rowCount(parent) - 1, 0, parent))
                if first is not None and last is not None:
                    return first.seq, last.seq
        return self.default_pair(groups.all_versions()[-2:])  # no sleep yet: a short history

    @Slot()
    def _on_store_written(self) -> None:
        """A chat turn, pass or hand change ended: the hits and the diff follow."""
        if self.memory.search.query:  # the hits shown may have changed status
            self.search_memory(self.memory.search.query)
        self._diff_dirty = True
        if self.tabs.currentWidget() is self.diff:
            self._refresh_diff()
        self._update_status()

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

    def _refresh_diff(self) -> None:
        """Diffs are computed when the Diff tab is shown (a big one takes a moment)."""
        self._diff_dirty = False
        pair = self.diff.pair()
        if pair is None:
            self.diff.set_diff(None)
        else:
            self._show_diff(*pair)

    @Slot(int)
    def _on_tab(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.diff and self._diff_dirty:
            self._refresh_diff()

    @staticmethod
    def default_pair(versions: list[Version]) -> tuple[int, int] | None:
        """Before and after the last sleep (else the last two versions)."""
        sleep_ids = [v.sleep_id for v in versions if v.sleep_id is not None]
        if sleep_ids:
            own = [v for v in versions if v.sleep_id == sleep_ids[-1]]
            return own[0].seq, own[-1].seq
        if len(versions) >= 2:
            return versions[-2].seq, versions[-1].seq
        return None

    @Slot(int, int)
    def _show_diff(self, a: int, b: int) -> None:
        """Computed off the GUI thread (with kept facts it reads the whole store); a newer pair
        supersedes one still computing."""
        include_kept = self.diff.model.show_kept

        def read(ctx: JobContext) -> Diff:
            with deferred_full_collections():  # as the version's read above
                return ctx.store.diff(a, b, include_kept=include_kept)

        self.session.read("diff", read, self.diff.set_diff, self._on_diff_failed)

    @Slot(bool)
    def _on_show_kept(self, on: bool) -> None:
        """The diff on screen was computed without kept facts (cheap); showing them needs the
        state at ``a``, read off the GUI thread."""
        if not on:
            return
        if self.tabs.currentWidget() is self.diff:
            self._refresh_diff()
        else:
            self._diff_dirty = True

    def _on_diff_failed(self, exc: BaseException) -> None:
        self.diff.set_diff(None)
        self.diff.summary.setText(describe_error(exc))

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

    def _update_status(self) -> None:
        s = self.session
        ok = s.endpoint_ok
        mark = "●"
        if ok is None:
            self.st_endpoint.setText(f"{mark} endpoint: checking…")
            tone = "kept"
        elif ok:
            self.st_endpoint.setText(f"{mark} endpoint reachable")
            tone = "ok"
        else:
            self.st_endpoint.setText(f"{mark} endpoint unreachable")
            tone = "error"
        pal = self.st_endpoint.palette()
        pal.setColor(self.st_endpoint.foregroundRole(), palette.accent(tone))
        self.st_endpoint.setPalette(pal)
        self.st_endpoint.setToolTip(f"{s.endpoint_url}\n{s.endpoint_message}")
        self.st_model.setText(f"model: {s.settings.model or '(server default)'}")
        self.st_store.setText(f"store: {s.db_path}")
        self.st_store.setToolTip(str(s.db_path))
        self._show_active()

    @Slot(bool, str, list, dict)
    def _on_endpoint(self, ok: bool, message: str, _models: list[str], _caps: dict[str, str]) -> None:
        self._update_status()
        if ok:
            self.banner.hide()
        else:
            self.banner.show_problem(self.session.endpoint_url, message)

    @Slot(str)
    def _on_builtin_engine_stopped(self, base_url: str) -> None:
        if not self.session.uses_endpoint(base_url):
            return  # an engine this window no longer uses
        stopped = builtin_engine.stopped_report(base_url)
        if stopped is not None:
            self.session.endpoint_ok = False
            self.session.endpoint_message = stopped.message()
            self._update_status()
            self.banner.show_engine_stopped(stopped)

    def open_first_run(self) -> None:
        """Detect local servers, enter a URL, or start the built-in engine (the first-run
        panel); the choice is applied like a Settings change."""
        choice = FirstRunDialog.ask(self.session.endpoint_url, self.banner.problem, parent=self)
        if choice is None:
            return
        url, model = choice
        engine = builtin_engine.current()  # the built-in engine is saved as itself, not its port
        settings = choose_endpoint(self.session.settings, url, model,
                                   builtin_url=engine.base_url if engine is not None else None)
        try:
            self.session.apply_settings(settings)
        except (OSError, NocturneError) as exc:
            QMessageBox.warning(self, "Nocturne", f"The settings could not be saved: {exc}")
            return
        self.session.check_endpoint()

    def open_demo(self) -> None:
        """Open the demo memory in its own data folder, in a new window (this one stays on
        your memory): a newcomer can sleep, diff and undo at once."""
        try:
            folder = launch_demo_window()
        except (OSError, NocturneError) as exc:
            QMessageBox.warning(self, "Nocturne", f"The demo memory could not be opened: {exc}")
            return
        self.statusBar().showMessage(f"Demo memory opened in a new window ({folder})", 8000)

    # -- export and import (S-EXP-1) --------------------------------------------------------------
    def _build_exchange_actions(self, menu: QMenu) -> None:
        self.act_export_json = self._action(
            "Export memory as &JSON…", None, lambda: self.export_memory(markdown=False),
            "Every fact with its full history, the versions, sleeps, audit log and "
            "conversations, in one file that imports back exactly")
        self.act_export_md = self._action(
            "Export memory as &Markdown…", None, lambda: self.export_memory(markdown=True),
            "The facts by block, with dates, as readable text")
        self.act_import = self._action(
            "&Import a JSON export into a new memory folder…", None, self.import_memory,
            "Read an export into a new, empty data folder (this window's memory is not touched; "
            "pick this window's own folder to import its facts into scratch instead)")
        self.act_import_scratch = self._action(
            "Import facts from a JSON export into &scratch…", None, self.import_scratch_memory,
            "Add an export's active facts to this memory's scratch block as your own edits, "
            "duplicates skipped, in one version Ctrl+Z undoes")
        self.exchange_notice: QMessageBox | None = None
        """The last export/import message box (non-modal; tests read and click it)."""
        self.import_choice: QMessageBox | None = None
        menu.addSeparator()
        for a in (self.act_export_json, self.act_export_md, self.act_import,
                  self.act_import_scratch):
            menu.addAction(a)

    def _notice(self, icon: QMessageBox.Icon, text: str,
                buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok) -> QMessageBox:
        box = QMessageBox(icon, "Nocturne", text, buttons, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.exchange_notice = box
        box.open()
        return box

    def _exchange_running(self, running: bool) -> None:
        """One export or import at a time (a second would supersede the first's message)."""
        for a in (self.act_export_json, self.act_export_md, self.act_import,
                  self.act_import_scratch):
            a.setEnabled(not running)

    def export_memory(self, *, markdown: bool) -> None:
        kind, suffix = ("Markdown", "md") if markdown else ("JSON", "json")
        path, _ = QFileDialog.getSaveFileName(
            self, f"Export memory as {kind}", str(Path.home() / f"nocturne-memory.{suffix}"),
            f"{kind} (*.{suffix});;All files (*)")
        if path:
            self.export_to(path, markdown=markdown)

    def export_to(self, path: str, *, markdown: bool = False) -> None:
        """Export the live memory to ``path`` off the GUI thread; say where and how many facts."""
        self.statusBar().showMessage(f"Exporting memory to {path}…")
        self._exchange_running(True)

        def done(result: Exported) -> None:
            self._exchange_running(False)
            self.statusBar().showMessage(result.message(), 15000)
            self._notice(QMessageBox.Icon.Information, result.message())

        def failed(exc: BaseException) -> None:
            self._exchange_running(False)
            self.statusBar().clearMessage()
            self._notice(QMessageBox.Icon.Warning,
                         f"The memory was not exported: {describe_error(exc)}")

        self.session.read("export", export_body(Path(path), markdown=markdown), done, failed)

    def _pick_export(self, title: str) -> str:
        file, _ = QFileDialog.getOpenFileName(
            self, title, str(Path.home()), "Nocturne export (*.json);;All files (*)")
        return file

    def import_memory(self) -> None:
        file = self._pick_export("Import a JSON export")
        if not file:
            return
        folder = QFileDialog.getExistingDirectory(
            self, "A new, empty folder for the imported memory", str(Path(file).parent))
        if folder:
            self.import_into(file, folder)

    def _offer_scratch(self, file: str, text: str) -> QMessageBox:
        """Ask before importing ``file``'s facts into this memory's scratch (non-modal)."""
        box = self._notice(QMessageBox.Icon.Question, text, QMessageBox.StandardButton.Cancel)
        into = box.addButton("Import facts into scratch", QMessageBox.ButtonRole.AcceptRole)
        into.clicked.connect(lambda: self.import_into_scratch(file))
        box.setDefaultButton(into)
        self.import_choice = box  # the last "into scratch?" question (tests click its buttons)
        return box

    def import_scratch_memory(self) -> None:
        file = self._pick_export("Import facts into scratch from a JSON export")
        if file:
            self.import_into_scratch(file)

    def import_into_scratch(self, file: str) -> None:
        """Add the active facts of the export ``file`` to this memory's scratch block off the
        GUI thread (one version, your edits, duplicates skipped and counted); a refused file
        shows the core's sentence and writes nothing."""
        self.statusBar().showMessage(f"Importing the facts of {file} into scratch…")
        self._exchange_running(True)

        def done(result: ScratchImport) -> None:
            self._exchange_running(False)
            self.statusBar().showMessage(result.message(), 15000)
            text = result.message() + "."
            lines = result.skipped_lines()
            if lines:
                text += "\n\nAlready in memory:\n" + "\n".join(f"• {t}" for t in lines[:8])
                if len(lines) > 8:
                    text += f"\n… and {len(lines) - 8} more"
            self._notice(QMessageBox.Icon.Information, text)

        def failed(exc: BaseException) -> None:
            self._exchange_running(False)
            self.statusBar().clearMessage()
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {describe_error(exc)}")

        try:
            self.session.import_into_scratch(Path(file), done, failed)
        except RuntimeError as exc:  # another job writes memory
            self._exchange_running(False)
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {exc}")

    def import_into(self, file: str, folder: str) -> None:
        """Import the export ``file`` into the new memory folder ``folder`` off the GUI thread; a
        refused file or folder shows the core's sentence and writes nothing. On success, offer
        to open the imported memory in a new window."""
        target = Path(folder)
        if (paths.db_path(target).resolve() == self.session.db_path.resolve()
                and not self.session.store.is_empty()):
            self._offer_scratch(
                file, f"{target} is the memory this window has open, and it is not empty: a whole "
                "export cannot replace it.\n\nImport the export's active facts into this memory's "
                "scratch block instead, as your own edits (facts memory already holds are "
                "skipped), in one version that Ctrl+Z undoes?")
            return
        try:
            check_import_folder(target, self.session.db_path)
        except NocturneError as exc:
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {exc}")
            return
        self.statusBar().showMessage(f"Importing {file}…")
        self._exchange_running(True)

        def done(result: Imported) -> None:
            self._exchange_running(False)
            self.statusBar().showMessage(result.message(), 15000)
            box = self._notice(
                QMessageBox.Icon.Information,
                f"{result.message()}.\n\nOpen the imported memory in a new window?",
                QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Close)
            box.button(QMessageBox.StandardButton.Open).clicked.connect(
                lambda: self.open_memory_folder(result.folder))

        def failed(exc: BaseException) -> None:
            self._exchange_running(False)
            self.statusBar().clearMessage()
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {describe_error(exc)}")

        self.session.read("import", import_body(Path(file), target), done, failed)

    def open_memory_folder(self, folder: Path) -> None:
        """A new window on another data folder (this one stays on its memory)."""
        try:
            launch_window(folder)
        except OSError as exc:
            self._notice(QMessageBox.Icon.Warning, f"The imported memory could not be opened: {exc}")
            return
        self.statusBar().showMessage(f"Imported memory opened in a new window ({folder})", 8000)

    # -- actions -----------------------------------------------------------------------------------
    @Slot(str)
    def _on_busy(self, kind: str) -> None:
        idle = not kind
        # the tree takes a job's commits when the job ended; a restore's one commit comes as
        # the job ends anyway, and the live tree must hold it when versionCreated lands there
        # (a job in a worker process: the tree follows its commits as they land, see hold)
        self.memory.hold(kind not in ("", "restore"), unless=self._job_in_worker)
        self.chat.set_can_send(idle)
        if kind != "chat":
            self.chat.on_idle()
        if idle and self._pending_edit is not None:
            self.accept_chat_edit(self._pending_edit)
        if idle:
            self._read_conversations()  # the turn counts changed
        self.sleep.set_busy(kind)
        self.wake.set_busy(kind)
        self.timeline.set_busy(bool(kind))
        for a in (self.act_sleep, self.act_dry, self.act_rules, self.act_review, self.act_undo,
                  self.act_undo_change,
                  self.act_redo, self.act_quiz,
                  self.act_settings, self.act_new_conv):
            a.setEnabled(idle)
        if self.conversations_dialog is not None:
            self.conversations_dialog.set_busy(not idle)
        self.act_stop.setEnabled(not idle)
        bar = self.statusBar()
        if kind:
            self._busy_message = f"{kind}…"
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
        job = self._guard(lambda: self.session.send(text, remember=self.chat.remember.isChecked()))
        if job is not None:
            self._propose_chat_edit(text)

    # -- "remember that …" / "forget that …" said in chat -----------------------------------------
    def _propose_chat_edit(self, text: str) -> None:
        """Read what the message asks of memory off the GUI thread (against memory as it was
        when it was sent); a request is offered in the chat pane, nothing is written."""
        threshold = self.session.settings.retention.similarity_threshold

        def read(ctx: JobContext) -> HandProposal | None:
            return chatedits.propose(ctx.store, text, threshold=threshold)

        self.session.read("chat-edit", read, self._offer_chat_edit,
                          lambda exc: self.statusBar().showMessage(
                              f"Could not read memory for your request: {describe_error(exc)}",
                              8000))

    def _offer_chat_edit(self, proposal: HandProposal | None) -> None:
        if proposal is not None:
            self._pending_edit = None
            self.chat.edit_bar.offer(proposal)

    @Slot(object)
    def accept_chat_edit(self, proposal: HandProposal) -> None:
        """The person confirmed: a hand edit decided by you, now, or when the reply ends."""
        if self.session.busy:
            self._pending_edit = proposal
            self.chat.edit_bar.waiting()
            return
        self._pending_edit = None
        def attempt() -> Version | chatedits.AlreadyRemembered:
            try:
                return self.session.confirm_chat_edit(proposal)
            except chatedits.AlreadyRemembered as held:  # memory holds it now: nothing written
                return held

        v = self._guard(attempt)
        if isinstance(v, chatedits.AlreadyRemembered):
            self.chat.edit_bar.already(v.fact)
            return
        if isinstance(v, Version):
            self.chat.edit_bar.close_offer()
            done = "remembered" if proposal.kind == "add" else "forgot"
            what = proposal.text if proposal.kind == "add" else proposal.candidates[0].text
            self.chat.transcript.add_quiet(
                f"memory: {done} by you — {what} (version {v.id}; Ctrl+Z undoes it)")
        else:
            self.chat.edit_bar.close_offer()

    def _on_chat_edit_dismissed(self) -> None:
        self._pending_edit = None

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

        def read(ctx: JobContext) -> tuple[list[Conversation], int | None]:
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

        def read(ctx: JobContext) -> tuple[list[Turn], int, str]:
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
        the status bar and nothing is written."""
        a = tuple(args) if isinstance(args, tuple | list) else ()
        kw = dict(kwargs) if isinstance(kwargs, dict) else {}
        v = self._guard(lambda: self.session.hand(op, *a, **kw))
        if isinstance(v, Version):
            self.statusBar().showMessage(f"{v.label} — a new version {v.id} (Ctrl+Z undoes it)", 8000)

    def undo_change(self) -> None:
        v = self._guard(self.session.hand, "undo")
        if isinstance(v, Version):
            self.statusBar().showMessage(f"{v.label} — a new version (Ctrl+Shift+Z redoes it)", 8000)

    def redo_change(self) -> None:
        v = self._guard(self.session.hand, "redo")
        if isinstance(v, Version):
            self.statusBar().showMessage(f"{v.label} — a new version", 8000)

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
        bar, as when it ran on the GUI thread; the store is as it was (one transaction)."""
        self.statusBar().showMessage(describe_error(exc), 8000)

    @Slot(object)
    def _on_version_created(self, v: Version) -> None:
        """An undo or a restore made a new version: the timeline marks it, and the Memory tab
        lands on live (it used to open the new version read-only, so facts from chat did not
        appear until "Back to live")."""
        self._landing = True
        try:
            self.timeline.select_version(v.seq)
        finally:
            self._landing = False
        self.back_to_live()
        self.statusBar().showMessage(
            f"{version_label(v.label)} → new version {v.id} ({v.active_count} active); "
            "memory is live", 8000)

    @Slot(object)
    def _on_version_selected(self, v: Version | None) -> None:
        """Show a past version read-only. Its state is rebuilt off the GUI thread (O(store));
        selecting another version, or going back to live, drops a result still coming."""
        if v is None or self._landing:
            return
        self.viewing = v
        # The read starts on the next turn of the event loop: a layout or paint already queued
        # (a filter just cleared, the timeline's selection) runs first, not while the read's
        # Python holds the GIL (each of a paint's ~2,000 calls into the model would wait).
        self._version_timer.start()

    def _read_version(self) -> None:
        v = self.viewing
        if v is None:
            return

        def read(ctx: JobContext) -> tuple[StatePager, Version | None]:
            # the tree's structure is built here too: the GUI thread only swaps it in; the
            # state's 100,000 new objects would set off a full collection on this thread,
            # holding the GIL from the window for 20-40 ms (ui/gcdefer.py)
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

    def search_memory(self, query: str) -> None:
        """Search every fact off the GUI thread; a newer query drops this one's result."""
        if not query.strip():
            self.session.cancel_read("search")
            return

        def read(ctx: JobContext) -> list[FoundFact]:
            return ctx.store.search_all(query, limit=50)

        self.session.read("search", read,
                          lambda hits: self.memory.search.set_results(query, hits),
                          lambda exc: self.memory.search.set_failed(describe_error(exc)))

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
        try:
            self.session.apply_settings(settings, key)
        except (OSError, NocturneError) as exc:
            QMessageBox.warning(self, "Nocturne", f"The settings could not be saved: {exc}")

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

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._sleep_before_quit():
            event.ignore()
            return
        if self.session.busy == "sleep" and not self.confirm_close_during_sleep():
            event.ignore()
            return
        self.save_geometry()
        self.session.shutdown()
        builtin_engine.remove_exit_listener(self.engine_exits.report)
        builtin_engine.stop()  # the built-in engine, if this process started one
        event.accept()
