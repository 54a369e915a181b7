"""Automatic sleep (S-AUTO-1): when to sleep by itself, and the notice a finished sleep leaves.

:class:`AutoSleeper` watches the :class:`~nocturne_desktop.ui.session.Session`: it counts the
facts the encoder remembers and the time since the last activity, and starts a normal sleep
(``Session.start_sleep``) once a trigger from the settings is met, never while any job runs
(``session.busy``): a trigger met during a reply fires once the reply's job has ended. The clock
is injectable (``clock``) and :meth:`AutoSleeper.check` can be called directly, so tests need
not wait minutes.

:class:`SleepNotice` is a bar in the window (not a dialog) with the sleep's summary and Undo.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.settings import AutoSleep
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.session import Session

PASS_WORDS = {"dedupe": "dropped {n} repeat{s}", "merge": "merged {n}",
              "reconcile": "reconciled {n}", "promote": "promoted {n}", "forget": "forgot {n}"}


def sleep_summary(per_pass: dict[str, int]) -> str:
    """``dropped 3 repeats, promoted 5, forgot 2`` from each pass's accepted figure."""
    parts = [PASS_WORDS.get(name, name + " {n}").format(n=n, s="" if n == 1 else "s")
             for name, n in per_pass.items() if n]
    return ", ".join(parts) if parts else "nothing to change"


class AutoSleeper(QObject):
    """Signals: ``started()`` when it starts a sleep; ``finished(int sleep_id, str summary)``
    when a sleep it started is done (not when cancelled or failed)."""

    started = Signal()
    finished = Signal(int, str)

    def __init__(self, session: Session, parent: QObject | None = None, *,
                 clock: Callable[[], float] = time.monotonic, tick_ms: int = 15_000) -> None:
        super().__init__(parent)
        self.session = session
        self.clock = clock
        self.new_facts = 0
        """Facts the encoder remembered since the last sleep ended (in this window)."""
        self.held = 0
        """After a sleep was cancelled or failed: the count it had, so the same trigger does
        not fire again at once (it waits for new facts, or a fresh idle period)."""
        self.last_activity = clock()
        self.running = False
        """True from the moment it starts a sleep until that sleep's end event."""
        self._per_pass: dict[str, int] = {}
        self.timer = QTimer(self)
        self.timer.setInterval(tick_ms)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        s = session
        s.chatEncoded.connect(self._on_encoded)
        s.chatStarted.connect(self._touch)
        s.versionCreated.connect(self._touch)
        s.busyChanged.connect(self._on_busy)
        s.sleepEvent.connect(self._on_sleep_event)

    @property
    def policy(self) -> AutoSleep:
        return self.session.settings.auto_sleep

    # -- inputs ----------------------------------------------------------------------------------
    def _touch(self, *_: object) -> None:
        self.last_activity = self.clock()

    @Slot(object)
    def _on_encoded(self, summary: object) -> None:
        self._touch()
        self.new_facts += len(getattr(summary, "remembered", ()) or ())

    @Slot(str)
    def _on_busy(self, kind: str) -> None:
        self._touch()
        if not kind:
            # deferred: never start a job inside another listener's busyChanged("")
            QTimer.singleShot(0, self.check)

    @Slot(object)
    def _on_sleep_event(self, ev: SleepEvent) -> None:
        if ev.dry_run:
            return
        if ev.kind == SleepEventKind.STARTED:
            self._per_pass = {}
        elif ev.kind.after_pass and ev.pass_name and ev.figures is not None:
            self._per_pass[ev.pass_name] = self._per_pass.get(ev.pass_name, 0) + ev.figures.accepted
        elif ev.kind.final:
            mine, self.running = self.running, False
            if ev.kind == SleepEventKind.DONE:
                self.new_facts = self.held = 0  # any sleep (by hand too) consolidated what was new
                if mine and ev.sleep_id is not None:
                    self.finished.emit(ev.sleep_id, sleep_summary(self._per_pass))
            else:  # cancelled (by you) or failed: never start again straight away
                self.held = self.new_facts
            self._touch()

    # -- the decision ----------------------------------------------------------------------------
    def due(self) -> str | None:
        """Which trigger is met now (``"facts"`` / ``"idle"``), or None."""
        p = self.policy
        fresh = self.new_facts - self.held
        if p.after_facts and fresh >= p.after_facts:
            return "facts"
        if (p.idle_minutes and fresh > 0
                and self.clock() - self.last_activity >= p.idle_minutes * 60):
            return "idle"
        return None

    @Slot()
    def check(self) -> bool:
        """Start a sleep if a trigger is met and nothing runs; whether one started."""
        s = self.session
        if s.closed or s.busy or self.running or self.due() is None:
            return False
        return self.start()

    def start(self) -> bool:
        try:
            self.session.start_sleep()
        except RuntimeError:  # something started meanwhile; the next check tries again
            return False
        self.running = True
        self.started.emit()
        return True


class SleepNotice(QFrame):
    """A bar under the menu: ``Sleep done: dropped 3 repeats, promoted 5`` [Undo] [×]; while
    quitting, ``Sleeping before quitting…`` [Quit now]."""

    undoRequested = Signal(int)
    quitNowRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        pal = self.palette()
        # the palette's own base, tinted: readable on a light and on a dark theme (a fixed light
        # colour left the dark theme's light text on near-white)
        pal.setColor(self.backgroundRole(), palette.tint("kept", pal))
        self.setPalette(pal)
        self.sleep_id: int | None = None
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.undo = QPushButton("Undo", self)
        self.undo.setToolTip("Restore memory as it was before this sleep, as a new version")
        self.quit_now = QPushButton("Quit now", self)
        self.quit_now.setToolTip("Cancel the sleep and close; memory stays at the last completed pass")
        self.dismiss = QPushButton("×", self)
        self.dismiss.setFlat(True)
        self.dismiss.setToolTip("Hide this notice")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.undo)
        lay.addWidget(self.quit_now)
        lay.addWidget(self.dismiss)
        self.undo.clicked.connect(self._undo)
        self.quit_now.clicked.connect(self.quitNowRequested.emit)
        self.dismiss.clicked.connect(self.hide)
        self.hide()

    def show_done(self, sleep_id: int, summary: str) -> None:
        self.sleep_id = sleep_id
        self.label.setText(f"Slept by itself: {summary}.")
        self.undo.setVisible(True)
        self.quit_now.setVisible(False)
        self.dismiss.setVisible(True)
        self.show()

    def show_quitting(self) -> None:
        self.sleep_id = None
        self.label.setText("Sleeping before quitting… the window closes when it is done.")
        self.undo.setVisible(False)
        self.quit_now.setVisible(True)
        self.dismiss.setVisible(False)
        self.show()

    def show_undone(self, text: str) -> None:
        self.sleep_id = None
        self.label.setText(text)
        self.undo.setVisible(False)
        self.quit_now.setVisible(False)
        self.dismiss.setVisible(True)
        self.show()

    def _undo(self) -> None:
        if self.sleep_id is not None:
            self.undoRequested.emit(self.sleep_id)
