"""The window's side of the Letta link: the controller that keeps a linked memory in step with
its agent, its status-bar mark and its banner.

:class:`LettaLink` makes every store-writing job of the session sync before its body and after
each of its commits (``Session.wrap_body``, :func:`~nocturne_desktop.ui.jobs.bodies.letta.linked`),
syncs after the window's own commits (a change by hand), at start-up and on a timer while
something is pending or the last sync failed. All of it runs in jobs, each on its own store; the
window's own Letta jobs run one at a time, and only while no store-writing job runs (a link or
an unlink never races a chat turn's sync). A sync that fails never stops the person: the mark
and a one-sentence banner say so, and the next sync writes what is pending.
"""

from __future__ import annotations

import contextlib
import functools
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QToolButton,
    QWidget,
)

from nocturne_desktop import paths
from nocturne_desktop.core import files
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.letta.client import LettaAuthError, LettaError, LettaUnreachable, normalise_url
from nocturne_desktop.letta.state import load, save
from nocturne_desktop.letta.sync import ChooseSide, LettaOverLimit, LinkStatus, unlink
from nocturne_desktop.settings import ApiKey
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.changes import WINDOW, Commit
from nocturne_desktop.ui.jobs import AnyJob, Job, describe_error
from nocturne_desktop.ui.jobs.bodies import letta as bodies
from nocturne_desktop.ui.jobs.bodies.letta import SyncOutcome
from nocturne_desktop.ui.plaintext import set_tip

if TYPE_CHECKING:
    from nocturne_desktop.ui.lettadialogs import OverLimitDialog
    from nocturne_desktop.ui.session import Session

RETRY_MS = 30_000
"""How often a sync is tried again while something is pending or the last one failed."""
AFTER_COMMIT_MS = 150
"""A change by hand is synced this long after its commit (a burst of them syncs once)."""
KEY_FILENAME = "letta_api_key"
"""The Letta server's key, in its own 0600 file in the config folder (the link keeps its path)."""
SOURCE = "letta"
""":attr:`Commit.source` of the commits of the window's own Letta jobs (a pull, keep salient)."""

Side = Literal["pull", "push"]


def sentence(exc: BaseException) -> str:
    """One sentence for a person about a failed sync (the banner's words)."""
    if isinstance(exc, LettaAuthError) and "refused" in str(exc):
        return ("The Letta server refused the key: give it again in File → Settings → Memory "
                "lives in; nothing was lost, memory is synced once it is accepted.")
    text = describe_error(exc).strip().rstrip(".")
    if isinstance(exc, LettaAuthError):  # the key file cannot be read
        text += "; give the key again in File → Settings → Memory lives in"
    return text[:1].upper() + text[1:] + "."


def banner_sentence(exc: BaseException) -> str:
    """The banner's words: :func:`sentence` without the request and the socket's words of a
    server that does not answer (those are the banner's tooltip), so it reads in one line."""
    text = sentence(exc)
    if isinstance(exc, LettaUnreachable):
        text = re.sub(r" \([^()]*\)", "", text, count=1)
    return text


def when(t: float | None) -> str:
    if not t:
        return "never"
    fmt = "%H:%M" if time.localtime(t)[:3] == time.localtime()[:3] else "%Y-%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(t))


class LettaBanner(QFrame):
    """A strip above the panes while the last sync failed: one sentence, Retry now, Dismiss.

    Signal ``retryRequested()``."""

    retryRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lettaBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.ToolTipBase)
        self.setForegroundRole(QPalette.ColorRole.ToolTipText)
        self.text = QLabel(self)
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # a server's words are never markup
        self.text.setWordWrap(True)
        self.retry = QPushButton("Retry now", self)
        self.retry.setToolTip("Sync with the Letta agent now (it is also tried every "
                              f"{RETRY_MS // 1000} seconds)")
        self.retry.clicked.connect(self.retryRequested)
        self.dismiss = QPushButton("Dismiss", self)
        self.dismiss.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.text, 1)
        row.addWidget(self.retry)
        row.addWidget(self.dismiss)
        self.hide()

    def show_error(self, exc: BaseException) -> None:
        """The error in one sentence; its whole text (the request, the socket's words) on
        hover."""
        self.text.setText(banner_sentence(exc))
        set_tip(self.text, sentence(exc))
        self.show()


class LettaMark(QToolButton):
    """The status bar's Letta mark: linked, last sync, pending, error; its menu syncs now or
    shows the over-limit choice again."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lettaMark")
        self.setAutoRaise(True)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu_ = QMenu(self)
        self.sync_now = QAction("Sync with Letta now", self)
        self.over_limit = QAction("Over the limit: what to do…", self)
        self.menu_.addAction(self.sync_now)
        self.menu_.addAction(self.over_limit)
        self.setMenu(self.menu_)
        self.tone = "kept"
        self.hide()

    def show_state(self, text: str, tone: str, tip: str, *, over: bool) -> None:
        self.setText(f"● Letta: {text}")
        self.tone = tone
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.ButtonText, palette.accent(tone))
        self.setPalette(pal)
        set_tip(self, tip)  # the last error is a server's words
        self.over_limit.setVisible(over)
        self.show()


def describe(status: LinkStatus | None, *, syncing: bool, error: BaseException | None,
             last_ok: float | None) -> tuple[str, str, str]:
    """The mark's (text, tone, tooltip) for a link's status."""
    if status is None:
        return ("not linked", "kept", "This memory lives on this computer only")
    last = max(t for t in (status.last_sync, status.last_push, status.last_pull, last_ok, 0.0)
               if t is not None)
    tip = "\n".join([*status.lines(), f"last sync: {when(last)}"])
    if syncing:
        return ("syncing…", "running", tip)
    if status.last_error or error is not None:
        unreachable = isinstance(error, LettaUnreachable) or (
            error is None and "cannot be reached" in (status.last_error or ""))
        return ("unreachable" if unreachable else "sync failed", "error", tip)
    if status.over_limit:
        return (f"{', '.join(status.over_limit)} over the limit", "changed", tip)
    if status.pending:
        n = len(status.pending)
        return (f"{n} block{'s' if n != 1 else ''} to write", "changed", tip)
    return (f"in sync · {when(last)}", "ok", tip)


class LettaLink(QObject):
    """Keeps the session's memory in step with its Letta agent (see the module).

    Signals: ``statusChanged(LinkStatus | None)`` after every status read or sync;
    ``synced(SyncOutcome)`` after each of the window's own syncs (and a link's first)."""

    statusChanged = Signal(object)
    synced = Signal(object)

    def __init__(self, window: QMainWindow, session: Session) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.status: LinkStatus | None = None
        self.linked = False
        self.error: BaseException | None = None
        """The last failure of the window's own Letta jobs (typed), None after one went through."""
        self.last_ok: float | None = None
        self._seen_error_at: float | None = None
        self._job: AnyJob | None = None
        self._queue: dict[str, Callable[[], AnyJob | None]] = {}
        self._closed = False
        self._over_shown: frozenset[str] = frozenset()
        """The blocks the over-limit dialog was last offered for (offered again only when
        another block goes over: a chat turn adding a line must not bring it back each time)."""
        self.over_dialog: OverLimitDialog | None = None
        self.notice: QMessageBox | None = None
        """The last message about a link that could not be made (non-modal)."""
        self.banner = LettaBanner(window)
        self.banner.retryRequested.connect(self.sync_now)
        self.mark = LettaMark(window)
        self.mark.sync_now.triggered.connect(self.sync_now)
        self.mark.over_limit.triggered.connect(lambda: self.show_over_limit(force=True))
        window.statusBar().addPermanentWidget(self.mark)
        self.retry = QTimer(self)
        self.retry.setInterval(RETRY_MS)
        self.retry.timeout.connect(self.sync_now)
        self._after_commit = QTimer(self)
        self._after_commit.setSingleShot(True)
        self._after_commit.setInterval(AFTER_COMMIT_MS)
        self._after_commit.timeout.connect(self.sync_now)
        session.changes.subscribe(self.on_commit)
        session.busyChanged.connect(self._on_busy)
        self._start_up()

    # -- state -------------------------------------------------------------------------------
    def _start_up(self) -> None:
        """A linked memory: jobs sync from now on, and one sync at once (what the agent changed
        while the window was closed). One small read of the store here."""
        try:
            state = load(self.session.store)
        except NocturneError as exc:
            self.error = exc
            self.mark.show_state("link unreadable", "error", str(exc), over=False)
            return
        if state is not None:
            self._set_linked(True)
            self.sync_now()

    def _set_linked(self, on: bool) -> None:
        self.linked = on
        self.session.wrap_body = (
            (lambda body: functools.partial(bodies.linked, body=body)) if on else None)
        if not on:
            self.status = None
            self.error = None
            self.retry.stop()
            self.banner.hide()
            self.mark.hide()
            self._close_over_dialog()
        self._show()

    def _show(self) -> None:
        if not self.linked:
            self.mark.hide()
            return
        text, tone, tip = describe(self.status, syncing=self._job is not None,
                                   error=self.error, last_ok=self.last_ok)
        self.mark.show_state(text, tone, tip, over=bool(self.status and self.status.over_limit))

    def close(self) -> None:
        """The window closes: no more jobs; the running one is cancelled and waited for."""
        self._closed = True
        self._queue.clear()
        self.retry.stop()
        self._after_commit.stop()
        self._close_over_dialog()
        job = self._job
        if job is not None:
            job.cancel()
            job.wait(30_000)
        bodies.CLIENTS.close()

    # -- the queue of the window's own Letta jobs ----------------------------------------------
    def _enqueue(self, kind: str, make: Callable[[], AnyJob | None]) -> None:
        """Run ``make`` (it starts nothing itself: it returns the job, or None when it did its
        work on the GUI thread) once no Letta job and no store-writing job runs; a newer request
        of the same kind replaces one still waiting."""
        if self._closed:
            return
        self._queue.pop(kind, None)
        self._queue[kind] = make
        self._pump()

    def _pump(self) -> None:
        while (self._queue and self._job is None and not self.session.busy
               and not self.session.closed and not self._closed):
            kind = next(iter(self._queue))
            job = self._queue.pop(kind)()
            if job is None:
                continue
            self._job = job
            job.ended(functools.partial(self._on_job_ended, job))
            job.start()
            self._show()

    def _on_job_ended(self, job: AnyJob) -> None:
        if self._job is job:
            self._job = None
            self._show()
            self._pump()

    def _job_of(self, name: str, body: Callable[[Any], SyncOutcome],
                done: Callable[[SyncOutcome], None] | None = None,
                failed: Callable[[BaseException], None] | None = None) -> Job[Any, SyncOutcome]:
        job: Job[Any, SyncOutcome] = Job(body, name=name, db_path=self.session.db_path)
        job.on_changes(self.session.changes.publisher(SOURCE))
        return job.success(done or self._on_outcome).failure(failed or self._on_failed)

    @property
    def running(self) -> bool:
        """Whether one of the window's Letta jobs runs or waits."""
        return self._job is not None or bool(self._queue)

    # -- syncing -----------------------------------------------------------------------------
    def sync_now(self) -> None:
        """Sync in a job (after the store-writing job, if one runs)."""
        if not self.linked:
            return
        self._enqueue("sync", lambda: self._job_of("letta-sync", bodies.sync_body)
                      if self.linked else None)

    def on_commit(self, commit: Commit) -> None:
        """A change by hand (the window's own store) is synced a moment later; a job's commits
        were synced inside the job, and the Letta jobs' own need nothing more."""
        if self.linked and commit.source == WINDOW and commit.facts:
            self._after_commit.start()

    def _on_busy(self, kind: str) -> None:
        if kind or not self.linked or self._closed:
            return
        # the job synced itself: read how the link stands now (no request), then what waited
        self.session.read("letta-status", bodies.status_body, self._on_status,
                          self._on_failed)
        self._pump()

    def _on_status(self, status: LinkStatus | None) -> None:
        if status is None:
            self._set_linked(False)
            return
        fresh = status.last_error is not None and status.error_at != self._seen_error_at
        self._take(status)
        if fresh:  # a job's sync failed: try once more now, which also says why in full
            self.sync_now()

    def _take(self, status: LinkStatus | None) -> None:
        self.status = status
        if status is not None:
            self._seen_error_at = status.error_at
            wants = bool(status.last_error) or bool(set(status.pending) - set(status.over_limit))
            if wants and not self.retry.isActive():
                self.retry.start()
            elif not wants:
                self.retry.stop()
            if not status.last_error:
                self.error = None
                self.banner.hide()
            self._offer_over_limit(status)
        self._show()
        self.statusChanged.emit(status)

    def _on_outcome(self, outcome: SyncOutcome) -> None:
        if outcome.status is None:
            self._set_linked(False)
            self.synced.emit(outcome)
            return
        error = outcome.error
        if error is None or isinstance(error, LettaOverLimit):
            self.error = None
            self.last_ok = time.time()
        else:
            self.error = error
            self.banner.show_error(error)
        self._say(outcome)
        self._take(outcome.status)
        self.synced.emit(outcome)

    def _on_failed(self, exc: BaseException) -> None:
        """A Letta job that failed for a reason of its own (an unreadable link, a full disk)."""
        self.error = exc
        self.banner.show_error(exc)
        self._show()

    def _say(self, outcome: SyncOutcome) -> None:
        """What a sync did, in the status bar (the timeline shows the version itself)."""
        report = outcome.report
        if report is None:
            return
        parts = []
        pull = report.pull
        if pull.version is not None:
            parts.append(f"changed in Letta: {len(pull.added)} added, {len(pull.edited)} "
                         f"edited, {len(pull.removed)} removed (version {pull.version.id})")
        if pull.refused:
            parts.append("refused: " + "; ".join(pull.refused))
        if outcome.version is not None:
            parts.append(f"kept the most salient lines (version {outcome.version.id}; undo "
                         "brings the others back)")
        if parts:
            self.window.statusBar().showMessage("Letta — " + " · ".join(parts), 12_000)

    # -- over the limit ----------------------------------------------------------------------
    def over_blocks(self) -> list[tuple[str, int, int]]:
        """(label, characters needed, Letta's limit) of each block over its limit."""
        s = self.status
        if s is None:
            return []
        return [(label, s.blocks[label][1], s.blocks[label][2]) for label in s.over_limit
                if label in s.blocks]

    def _offer_over_limit(self, status: LinkStatus) -> None:
        over = frozenset(status.over_limit)
        if not over:
            self._over_shown = frozenset()
            self._close_over_dialog()
        elif over != self._over_shown:
            self._over_shown = over
            self.show_over_limit()
        elif (self.over_dialog is not None and self.over_dialog.isVisible()
              and self.over_dialog.blocks != self.over_blocks()):
            self.show_over_limit()  # the figures on screen moved

    def show_over_limit(self, *, force: bool = False) -> OverLimitDialog | None:
        """The dialog that says which block is over by how much, with the two ways out."""
        from nocturne_desktop.ui.lettadialogs import OverLimitDialog

        blocks = self.over_blocks()
        if not blocks or self._closed:
            return None
        self._close_over_dialog()
        dialog = OverLimitDialog(blocks, self.window)
        dialog.raiseLimit.connect(self.raise_limit)
        dialog.keepSalient.connect(self.keep_salient)
        self.over_dialog = dialog
        dialog.show()
        if force:
            dialog.activateWindow()
        return dialog

    def _close_over_dialog(self) -> None:
        dialog, self.over_dialog = self.over_dialog, None
        if dialog is not None:
            dialog.close()
            dialog.deleteLater()

    def raise_limit(self, label: str, limit: int) -> None:
        """Raise the block's limit in Letta to ``limit``, then sync."""
        self._enqueue("raise-limit", lambda: self._job_of(
            "letta-raise-limit", functools.partial(bodies.raise_limit_body, label=label,
                                                   limit=limit)))

    def keep_salient(self, label: str) -> None:
        """Forget the block's least salient facts until it fits (one version), then sync."""
        self._enqueue("keep-salient", lambda: self._job_of(
            "letta-keep-salient", functools.partial(bodies.keep_salient_body, label=label)))

    # -- linking -----------------------------------------------------------------------------
    def key_folder(self) -> Path:
        files_ = self.session.files
        return files_.folder if files_ is not None else paths.config_dir()

    def write_key(self, key: ApiKey) -> str | None:
        """The key in its 0600 file in the config folder (its path), or None without a key
        (an earlier file is removed)."""
        path = self.key_folder() / KEY_FILENAME
        if not key:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        files.ensure_private_dir(path.parent)
        files.write_private(path, (key.reveal() + "\n").encode("utf-8"))
        return str(path)

    def link(self, url: str, agent: str, key: ApiKey, prefer: Side | None = None) -> None:
        """Link this memory to ``agent`` on ``url`` (in a job, once nothing writes); when both
        hold something, :meth:`ask_side` asks which side wins. The same agent again only takes
        the new key."""
        def make() -> AnyJob | None:
            try:
                key_file = self.write_key(key)
                state = load(self.session.store)
                if (state is not None and state.agent == agent
                        and state.url == normalise_url(url)):
                    state.key_file = key_file
                    save(self.session.store, state)
                    bodies.CLIENTS.close()
                    self.sync_now()
                    return None
            except (OSError, NocturneError) as exc:
                self._link_failed(exc)
                return None
            body = functools.partial(bodies.link_body, url=url, agent=agent, key_file=key_file,
                                     prefer=prefer)
            return self._job_of("letta-link", body, self._on_linked,
                                lambda exc: self._on_link_refused(exc, url, agent, key))

        self._enqueue("link", make)

    def _on_linked(self, outcome: SyncOutcome) -> None:
        self._set_linked(True)
        if outcome.status is not None:
            self.window.statusBar().showMessage(
                f"Memory now lives in Letta agent {outcome.status.agent} on "
                f"{outcome.status.url}", 10_000)
        self._on_outcome(outcome)

    def _on_link_refused(self, exc: BaseException, url: str, agent: str, key: ApiKey) -> None:
        if isinstance(exc, ChooseSide):
            side = self.ask_side(exc, agent)
            if side is not None:
                self.link(url, agent, key, side)
            else:
                self.window.statusBar().showMessage(
                    "Not linked: memory still lives on this computer only", 8000)
            return
        self._link_failed(exc)

    def ask_side(self, exc: ChooseSide, agent: str) -> Side | None:
        """Which side wins when both hold something (tests monkeypatch this)."""
        from nocturne_desktop.ui.lettadialogs import ask_side

        return ask_side(self.window, exc, agent)

    def _link_failed(self, exc: BaseException) -> None:
        text = (f"The memory was not linked to Letta: {describe_error(exc)}" if
                isinstance(exc, LettaError | OSError | NocturneError) else describe_error(exc))
        box = QMessageBox(QMessageBox.Icon.Warning, "Nocturne — Letta", text,
                          QMessageBox.StandardButton.Ok, self.window)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.notice = box
        box.show()

    def unlink(self) -> None:
        """Forget the link (once nothing writes); the agent's blocks and this memory stay as
        they are, the key file goes."""
        def make() -> None:
            try:
                state = load(self.session.store)
                unlink(self.session.store)
            except NocturneError as exc:
                self._link_failed(exc)
                return
            if state is not None and state.key_file == str(self.key_folder() / KEY_FILENAME):
                with contextlib.suppress(OSError):
                    Path(state.key_file).unlink()
            bodies.CLIENTS.close()
            self._set_linked(False)
            self.statusChanged.emit(None)
            self.window.statusBar().showMessage(
                "Unlinked: memory lives on this computer; the agent's blocks stay as they are",
                10_000)

        self._enqueue("unlink", make)
