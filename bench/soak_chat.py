"""Soak: a long scripted chat through the real window, watched minute by minute.

The real :class:`MainWindow` (offscreen) on a fresh data folder, talking to the scripted
OpenAI-compatible server (``tests/fakeserver.py``: a real socket, real HTTP and SSE). A script
types into the chat pane's input box and presses Enter as a person would (``QTest`` key events,
Shift+Enter for a second line), for ``--minutes N`` (default 30):

- varied messages (facts, small talk, questions, a line with a secret, accents and combining
  marks, two-line messages), streamed replies of varied length (a few words to a few hundred,
  now and then one over the reply-size cap, cut by the client);
- the encoder's structured replies: facts the gate accepts, invented ones and secrets it refuses;
- a rules-only sleep every few minutes (Memory ▸ Sleep with rules only);
- a Stop (Esc) now and then, mid-stream;
- a version view (a click on a timeline row) and a diff (Diff with live) now and then.

Every minute it prints: turns sent, replies, facts remembered, sleeps, RSS,
``sys.getrefcount(None/True/False)`` drift from the start, the longest GUI-thread stall in that
minute (a 10 ms QTimer heartbeat), Python exceptions seen (``sys.excepthook`` and
``threading.excepthook``; errors logged and Qt warnings too). At the end, with the window
closed: ``PRAGMA integrity_check``, the independent re-audit of every sleep
(:func:`nocturne_desktop.core.checks.audit.reaudit`), and the turns in the store against the turns
sent. Any failure makes the exit status non-zero; so does a frozen GUI thread (no event for
two minutes: every thread's stack is printed) and, of course, an interpreter abort.

The script drives the window only through its public behaviour (widgets, key presses, menu
actions, the Session's signals), so it does not depend on how the jobs run underneath.

Run: ``QT_QPA_PLATFORM=offscreen python -m bench.soak_chat [--minutes 30] [--json out.json]``
(``--minutes 1`` is the short check ``tests/bench/test_soak_chat.py`` runs).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import unicodedata
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pydantic.fields  # noqa: F401  (see tests/conftest.py: import before Qt's hook)
from PySide6.QtCore import (
    QElapsedTimer,
    QEvent,
    QEventLoop,
    QSettings,
    Qt,
    QTimer,
    QtMsgType,
    qInstallMessageHandler,
)
from PySide6.QtGui import QKeyEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

HEARTBEAT_MS = 10
PUMP_MS = 5
MAX_SINGLETON_DROP = 2000
"""A singleton's reference count may not fall further than this below its start: the broken
binding (PySide6 6.12.0 on Python 3.11) drops one per void Qt call, thousands a minute."""
MAX_STALL_MS = 3000.0
"""A GUI-thread gap this long is a frozen window (the target for one event is 50 ms, see
bench/bench_ui.py; on a loaded machine the OS alone causes gaps of a few hundred ms)."""
FROZEN_S = 120.0
"""No event processed on the GUI thread for this long: the window is frozen (a deadlock or an
endless loop). Every thread's Python stack is printed and the soak exits with status 1."""
QT_NOISE = ("propagateSizeHints",)

_WORDS = """
apple river garden morning coffee bicycle mountain library teacher violin harbour autumn
lantern market painter castle forest engine window candle meadow pocket ladder orchard
marble kettle saddle tunnel beacon compass feather glacier hammer island jacket kitten lemon
mirror needle ocean pepper quartz rocket silver thunder umbrella velvet walnut yogurt zebra
anchor basket cellar dolphin falcon granite helmet ivory jasmine kayak lobster maple
"""
WORDS = _WORDS.split()
CITIES = ["Lisbon", "Porto", "Tallinn", "Kraków", "Oaxaca", "Kyoto", "Bergen", "Tbilisi", "Lyon"]
NAMES = ["Saffron", "Biscuit", "Marlow", "Juniper", "Zoé", "Zoe\u0301", "Nicolás", "Pepper", "Otto"]
ANIMALS = ["bearded dragon", "cat", "tortoise", "parrot", "greyhound", "hamster", "goldfish"]
FOODS = ["green tea", "ramen", "sourdough", "pierogi", "tamales", "miso soup", "oat porridge"]
HOBBIES = ["rowing", "chess", "baking", "hiking", "jazz piano", "pottery", "birdwatching"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
PROJECTS = ["Airflow", "Postgres", "billing", "search", "Kafka", "payroll"]
SMALL_TALK = ["Hi again!", "Thanks, that helps.", "Good morning.", "Haha, fair enough.",
              "Hmm, let me think about that.", "Okay 👍", "Sounds good — talk later.",
              "Can you say that again, shorter?", "What do you remember about me?",
              "Why is the sky blue?", "Tell me something about lighthouses."]


# -- the conversation ----------------------------------------------------------------------------


@dataclass
class Plan:
    """One turn: what the person types, what the model answers, what the encoder proposes."""

    text: str
    facts: list[dict[str, str]] = field(default_factory=list)
    """The encoder's proposals (text, category) for this turn."""
    reply: str = ""
    kind: str = "short"
    """short | medium | long | slow (for a Stop) | over-cap (cut by the client)."""
    stop: bool = False


class Conversation:
    """Deterministic (seeded) turns of a person who tells, chats, repeats and overshares."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0
        self.said: list[Plan] = []

    def words(self, lo: int, hi: int) -> str:
        n = self.rng.randint(lo, hi)
        out = " ".join(self.rng.choice(WORDS) for _ in range(n))
        return out[:1].upper() + out[1:] + "."

    def _fact_turn(self) -> Plan:
        r, c = self.rng, self.rng.choice
        k = r.randrange(9)
        if k == 0:
            city = c(CITIES)
            return Plan(f"I live in {city} and I work best in the morning.",
                        [{"text": f"The user lives in {city}.", "category": "identity"},
                         {"text": "The user works best in the morning.", "category": "preferences"}])
        if k == 1:
            animal, name = c(ANIMALS), c(NAMES)
            return Plan(f"I keep a {animal} called {name}.",
                        [{"text": f"The user keeps a {animal} called {name}.", "category": "preferences"}])
        if k == 2:
            food = c(FOODS)
            return Plan(f"I really like {food}, I have it most days.",
                        [{"text": f"The user likes {food}.", "category": "preferences"}])
        if k == 3:
            project, day = c(PROJECTS), c(DAYS)
            return Plan(f"I promised to review the {project} migration on {day}.",
                        [{"text": f"The user promised to review the {project} migration on {day}.",
                          "category": "commitments"}])
        if k == 4:
            city = c(CITIES)
            # the second proposal invents a companion: the gate refuses it
            return Plan(f"Last month I went to a conference in {city}.",
                        [{"text": f"The user went to a conference in {city}.", "category": "event"},
                         {"text": f"The user went to {city} with Marie.", "category": "event"}])
        if k == 5:
            hobby = c(HOBBIES)
            return Plan(f"On weekends I do {hobby}.\nUsually on Saturday mornings.",
                        [{"text": f"The user does {hobby} on weekends.", "category": "preferences"}])
        if k == 6:
            secret = f"hunter{r.randrange(10, 99)}"
            # the secret rule refuses it: the transcript keeps it, memory does not
            return Plan(f"store: my password is {secret}",
                        [{"text": f"The user's password is {secret}.", "category": "context"}])
        if k == 7 and self.said:
            # said again, nearly the same: duplicates for the rules' Dedupe
            old = r.choice([p for p in self.said if p.facts] or self.said)
            return Plan(old.text, [dict(f) for f in old.facts])
        thing = c(WORDS)
        return Plan(f"Today I fixed the {thing} in the garden.",
                    [{"text": f"The user fixed the {thing} in the garden.", "category": "event"}])

    def next(self) -> Plan:
        self.n += 1
        r = self.rng
        plan = Plan(r.choice(SMALL_TALK)) if r.random() < 0.3 else self._fact_turn()
        if self.n % 7 == 3:
            plan.kind, plan.stop = "slow", True
            plan.reply = self.words(350, 450)
        elif self.n % 23 == 11:
            plan.kind = "over-cap"
        else:
            plan.kind = r.choices(["short", "medium", "long"], [5, 4, 1])[0]
            lo, hi = {"short": (2, 12), "medium": (25, 110), "long": (150, 260)}[plan.kind]
            plan.reply = self.words(lo, hi)
        self.said.append(plan)
        return plan


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


class Script:
    """The server side: answers chat requests from the plans, and encoder requests with each
    new user turn's proposals (the turn numbers read from the request, as a model would)."""

    TURN = re.compile(r"^\[turn (\d+)\] (user|assistant \(asked\)): ", re.M)

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.plans: dict[str, Plan] = {}
        self.chat_requests = 0
        self.encoder_requests = 0
        self.unknown: list[str] = []

    def register(self, plan: Plan) -> None:
        with self.lock:
            self.plans[nfc(plan.text)] = plan

    def plan_for(self, text: str) -> Plan | None:
        with self.lock:
            return self.plans.get(nfc(text))

    def respond(self, req: Any) -> Any:
        from tests.fakeserver import Reply

        last = req.last_user
        if "NEW TURNS:" in last:
            with self.lock:
                self.encoder_requests += 1
            return Reply.json({"facts": self.proposals(last.split("NEW TURNS:", 1)[1])})
        with self.lock:
            self.chat_requests += 1
        plan = self.plan_for(last)
        if plan is None:
            with self.lock:
                self.unknown.append(last[:80])
            return Reply.text("I am not sure what you mean.")
        if plan.kind == "over-cap":
            return Reply.huge(200_000)
        if plan.kind == "slow":
            return Reply.text(plan.reply, token_delay=0.012)
        return Reply.text(plan.reply)

    def proposals(self, new_turns: str) -> list[dict[str, Any]]:
        marks = list(self.TURN.finditer(new_turns))
        out: list[dict[str, Any]] = []
        for i, m in enumerate(marks):
            if m.group(2) != "user":
                continue
            end = marks[i + 1].start() if i + 1 < len(marks) else len(new_turns)
            plan = self.plan_for(new_turns[m.end():end])
            for f in plan.facts if plan is not None else ():
                out.append({**f, "turn": int(m.group(1))})
        return out[:12]


# -- watching ------------------------------------------------------------------------------------


class Heartbeat:
    """A QTimer on the GUI thread; every gap between ticks beyond its interval is a stall."""

    def __init__(self, interval_ms: int = HEARTBEAT_MS) -> None:
        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.tick)
        self.last = 0
        self.minute_max = 0.0
        self.worst = 0.0
        self.over_100 = 0
        self.over_1000 = 0

    def start(self) -> None:
        self.clock.start()
        self.last = self.clock.elapsed()
        self.timer.start()

    def tick(self) -> None:
        now = self.clock.elapsed()
        gap = float(now - self.last)
        self.last = now
        self.minute_max = max(self.minute_max, gap)
        self.worst = max(self.worst, gap)
        self.over_100 += gap > 100
        self.over_1000 += gap > 1000

    def take_minute(self) -> float:
        m, self.minute_max = self.minute_max, 0.0
        return m


class Problems:
    """Exceptions (sys/threading excepthook), errors logged, Qt warnings: all kept, all failures."""

    def __init__(self) -> None:
        self.exceptions: list[str] = []
        self.logged: list[str] = []
        self.qt: list[str] = []
        self.failures: list[str] = []
        self._sys_hook = sys.excepthook
        self._thread_hook = threading.excepthook

    def install(self) -> None:
        def sys_hook(tp: type[BaseException], exc: BaseException, tb: Any) -> None:
            self.exceptions.append("".join(traceback.format_exception(tp, exc, tb)).strip())
            self._sys_hook(tp, exc, tb)

        def thread_hook(args: Any) -> None:
            where = args.thread.name if args.thread is not None else "?"
            text = "".join(traceback.format_exception(args.exc_type, args.exc_value,
                                                      args.exc_traceback)).strip()
            self.exceptions.append(f"in thread {where}: {text}")
            self._thread_hook(args)

        sys.excepthook = sys_hook
        threading.excepthook = thread_hook
        problems = self

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                problems.logged.append(f"{record.name}: {record.getMessage()}"
                                       + (" (with a traceback)" if record.exc_info else ""))

        logging.getLogger().addHandler(Keep(logging.ERROR))

        def qt_messages(kind: QtMsgType, _ctx: Any, message: str) -> None:
            if kind != QtMsgType.QtDebugMsg and kind != QtMsgType.QtInfoMsg \
                    and not any(n in message for n in QT_NOISE):
                self.qt.append(f"{kind.name}: {message}")

        qInstallMessageHandler(qt_messages)

    def uninstall(self) -> None:
        sys.excepthook = self._sys_hook
        threading.excepthook = self._thread_hook
        qInstallMessageHandler(None)

    def count(self) -> int:
        return len(self.exceptions) + len(self.logged) + len(self.qt)


def type_into(widget: Any, text: str) -> None:
    """Key presses for ``text``: ASCII through QTest; other characters (accents, combining
    marks, emoji) as the key events a keyboard layout sends for them (QTest's key table is
    ASCII only)."""
    run = ""
    for ch in text + "\x00":
        if ch.isascii() and ch != "\x00":
            run += ch
            continue
        if run:
            QTest.keyClicks(widget, run)
            run = ""
        if ch != "\x00":
            for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
                QApplication.sendEvent(widget, QKeyEvent(kind, Qt.Key.Key_unknown,
                                                         Qt.KeyboardModifier.NoModifier, ch))


def rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def singletons() -> dict[str, int]:
    return {"None": sys.getrefcount(None), "True": sys.getrefcount(True),
            "False": sys.getrefcount(False)}


def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


# -- the soak ------------------------------------------------------------------------------------


@dataclass
class Minute:
    minute: int
    turns: int
    replies: int
    facts: int
    refused: int
    sleeps: int
    stops: int
    views: int
    rss_mb: float
    none_drift: int
    true_drift: int
    false_drift: int
    stall_ms: float
    problems: int
    load: str


class Until:
    """Yielded by the script: resume when ``cond()`` holds; fail after ``timeout`` seconds."""

    def __init__(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        self.cond, self.what = cond, what
        self.deadline = time.monotonic() + timeout


class Soak:
    def __init__(self, minutes: float, seed: int, folder: Path) -> None:
        self.minutes = minutes
        self.total_s = minutes * 60.0
        self.rng = random.Random(seed)
        self.folder = folder
        self.conv = Conversation(random.Random(seed + 1))
        self.script = Script()
        self.problems = Problems()
        self.heart = Heartbeat()
        self.rows: list[Minute] = []
        # counters, from the Session's signals and the script's own actions
        self.sent = 0
        self.accepted = 0
        self.replies = 0
        self.replied_text: list[tuple[str, bool]] = []
        self.tokens_chars = 0
        self.encoded = 0
        self.facts = 0
        self.refused = 0
        self.remembered_ids: set[str] = set()
        self.encoder_errors: list[str] = []
        self.chat_failures: list[str] = []
        self.unexpected_failures: list[str] = []
        self.expected_failures = 0
        self.cuts = 0
        self.stops = 0
        self.stops_late = 0
        self.esc_fallbacks = 0
        self.sleeps = 0
        self.sleep_ids: list[int] = []
        self.views = 0
        self.diffs = 0
        self.mismatched: list[str] = []
        self.end_checks: dict[str, Any] = {}
        self._gen: Generator[Until | float, None, None] | None = None
        self._wait: Until | float | None = None
        self._resume_at = 0.0
        self._started = 0.0
        self._loop: QEventLoop | None = None

    # -- failures --------------------------------------------------------------------------------
    def fail(self, what: str) -> None:
        self.problems.failures.append(what)
        print(f"FAILURE: {what}", flush=True)

    # -- the window ------------------------------------------------------------------------------
    def build(self, base_url: str) -> Any:
        from nocturne_desktop.core.policy import RetentionPolicy
        from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles
        from nocturne_desktop.ui.app import freeze_startup_objects
        from nocturne_desktop.ui.mainwindow import MainWindow
        from nocturne_desktop.ui.session import Session

        config = self.folder / "config"
        config.mkdir(parents=True, exist_ok=True)
        settings = Settings(base_url=base_url, model="fake-model",
                            retention=RetentionPolicy(max_active_facts=40))
        session = Session(self.folder / "data" / "nocturne.db", settings, ApiKey(),
                          files=SettingsFiles(config))
        win = MainWindow(session, qsettings=QSettings(str(self.folder / "window.ini"),
                                                      QSettings.Format.IniFormat))
        win.confirm_close_during_sleep = lambda: True  # type: ignore[method-assign]
        win.resize(1280, 800)
        win.show()
        win.activateWindow()
        QTest.qWaitForWindowActive(win, 2000)
        freeze_startup_objects()  # as run() does once the window is up
        session.check_endpoint()  # as run() does
        s = session
        s.chatAccepted.connect(self._on_accepted)
        s.chatTokens.connect(self._on_tokens)
        s.chatReplied.connect(self._on_replied)
        s.chatEncoded.connect(self._on_encoded)
        s.chatFailed.connect(self._on_chat_failed)
        self.win = win
        return win

    def _on_accepted(self, _turn: int) -> None:
        self.accepted += 1

    def _on_tokens(self, text: str) -> None:
        self.tokens_chars += len(text)

    def _on_replied(self, text: str, stopped: bool) -> None:
        self.replies += 1
        self.replied_text.append((text, stopped))

    def _on_encoded(self, summary: Any) -> None:
        self.encoded += 1
        remembered = getattr(summary, "remembered", ())
        self.facts += len(remembered)
        self.refused += len(getattr(summary, "refused", ()))
        self.remembered_ids.update(str(r[0]) for r in remembered)
        if getattr(summary, "error", None):
            self.encoder_errors.append(str(summary.error))

    def _on_chat_failed(self, message: str) -> None:
        self.chat_failures.append(message)

    # -- the person ------------------------------------------------------------------------------
    def key(self, key: Qt.Key, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier,
            widget: Any = None) -> None:
        QTest.keyClick(widget if widget is not None else self.win.chat.input, key, mods)

    def shortcut(self, key: Qt.Key, mods: Qt.KeyboardModifier, action: Any) -> None:
        """Press a window shortcut; if the offscreen platform did not deliver it to the action
        (no active window), trigger the action as its menu entry would."""
        fired: list[bool] = []

        def seen(*_: object) -> None:
            fired.append(True)

        action.triggered.connect(seen)
        if not self.win.isActiveWindow():
            self.win.activateWindow()
        QTest.keyClick(self.win.chat.input, key, mods)
        action.triggered.disconnect(seen)
        if not fired:
            self.esc_fallbacks += 1
            action.trigger()

    def type_text(self, text: str) -> Iterator[float]:
        box = self.win.chat.input
        box.setFocus()
        for li, line in enumerate(text.split("\n")):
            if li:
                self.key(Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
            for wi, word in enumerate(line.split(" ")):
                type_into(box, (" " if wi else "") + word)
                yield self.rng.uniform(0.005, 0.04)

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def turn(self) -> Generator[Until | float, None, None]:
        s, chat = self.win.session, self.win.chat
        if s.busy:
            yield Until(lambda: not s.busy, 120, "the window to be idle before typing")
        plan = self.conv.next()
        self.script.register(plan)
        yield from self.type_text(plan.text)
        if chat.input.toPlainText() != plan.text:
            self.fail(f"the input box holds {chat.input.toPlainText()!r}, typed {plan.text!r}")
            chat.input.setPlainText(plan.text)
        accepted, replies, encoded = self.accepted, self.replies, self.encoded
        failures = len(self.chat_failures)
        self.key(Qt.Key.Key_Return)
        self.sent += 1
        yield Until(lambda: self.accepted > accepted or len(self.chat_failures) > failures, 30,
                    f"turn {self.sent} to be accepted by the store")
        if plan.stop:
            chars = self.tokens_chars
            yield Until(lambda: self.tokens_chars > chars + 40 or self.replies > replies, 60,
                        f"turn {self.sent}'s reply to start streaming")
            yield self.rng.uniform(0.05, 0.6)
            self.shortcut(Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier, self.win.menus.stop)
            self.stops += 1
            yield Until(lambda: self.replies > replies, 30, f"turn {self.sent}'s reply to stop")
        yield Until(lambda: self.encoded > encoded and not s.busy, 120,
                    f"turn {self.sent} to be replied to and remembered")
        if self.replies <= replies:
            self.fail(f"turn {self.sent} ended without a reply")
            return
        said = self.chat_failures[failures:]
        if plan.kind == "over-cap":
            self.expected_failures += len(said)  # the client's "cut at the cap" message
        else:
            self.unexpected_failures += [f"turn {self.sent}: {m}" for m in said]
        text, stopped = self.replied_text[-1]
        if plan.stop and not stopped:
            self.stops_late += 1  # the whole reply arrived before Esc landed
        if plan.kind == "over-cap":
            if not stopped:
                self.fail(f"turn {self.sent}: a reply over the cap was not cut")
            self.cuts += 1
        elif not stopped and nfc(text) != nfc(plan.reply):
            self.mismatched.append(f"turn {self.sent}: {text[:60]!r} != {plan.reply[:60]!r}")
        if chat.input.toPlainText():
            self.fail(f"turn {self.sent}: the input box still holds {chat.input.toPlainText()!r}")

    def rules_sleep(self) -> Generator[Until | float, None, None]:
        s = self.win.session
        yield Until(lambda: not s.busy, 120, "the window to be idle before a sleep")
        before = len(s.store.sleeps())
        self.win.menus.rules.trigger()  # Memory ▸ Sleep with rules only
        if s.busy not in ("sleep", ""):
            self.fail(f"a rules-only sleep did not start (busy: {s.busy!r})")
        yield Until(lambda: not s.busy and len(s.store.sleeps()) > before, 300,
                    "the rules-only sleep to end")
        record = s.store.sleeps()[-1]
        self.sleeps += 1
        self.sleep_ids.append(record.id)
        if record.status != "done":
            self.fail(f"sleep #{record.id} ended {record.status!r}: {record.summary}")

    def version_and_diff(self) -> Generator[Until | float, None, None]:
        win, s = self.win, self.win.session
        versions = s.store.versions()
        if len(versions) < 2:
            return
        C = Qt.KeyboardModifier.ControlModifier
        tl = win.timeline
        self.shortcut(Qt.Key.Key_2, C, self._tab_action(1))
        yield 0.2
        current = tl.current_version()
        choices = [v for v in versions[:-1] if current is None or v.seq != current.seq]
        if not choices:
            return
        v = self.rng.choice(choices)
        idx = tl.model.index_of(v.seq)
        tl.view.scrollTo(idx)
        rect = tl.view.visualRect(idx)
        QTest.mouseClick(tl.view.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier, rect.center())
        if tl.current_version() is None or tl.current_version().seq != v.seq:
            tl.select_version(v.seq)  # the row was not where the click landed
        yield Until(lambda: win.memory.viewing is not None and win.memory.viewing.seq == v.seq,
                    30, f"version {v.id} to be shown read-only")
        self.views += 1
        self.shortcut(Qt.Key.Key_1, C, self._tab_action(0))
        yield self.rng.uniform(0.2, 0.8)
        self.shortcut(Qt.Key.Key_2, C, self._tab_action(1))
        latest = s.store.versions()[-1]
        QTest.mouseClick(tl.compare_button, Qt.MouseButton.LeftButton)

        def diff_shown() -> bool:
            d = win.diff.diff
            return d is not None and (d.a, d.b) == (v.seq, latest.seq)

        yield Until(diff_shown, 60, f"the diff {v.id} → {latest.id}")
        self.diffs += 1
        yield self.rng.uniform(0.2, 0.8)
        self.shortcut(Qt.Key.Key_L, C, win.menus.live)
        yield Until(lambda: win.memory.viewing is None, 30, "back to live")
        self.shortcut(Qt.Key.Key_1, C, self._tab_action(0))

    def _tab_action(self, i: int) -> Any:
        name = f"{('Memory', 'Timeline', 'Diff', 'Sleep', 'Wake')[i]} tab"
        for a in self.win.actions():
            if a.text() == name:
                return a
        raise LookupError(name)

    def run_script(self) -> Generator[Until | float, None, None]:
        s = self.win.session
        yield Until(lambda: s.endpoint_ok is not None, 30, "the endpoint check")
        if not s.endpoint_ok:
            self.fail(f"the scripted server is unreachable: {s.endpoint_message}")
            return
        sleep_every = min(180.0, self.total_s / 3)
        view_every = min(240.0, self.total_s / 2.5)
        next_sleep, next_view = sleep_every, view_every * 0.6
        while self.elapsed() < self.total_s:
            if self.elapsed() >= next_sleep:
                next_sleep += sleep_every
                yield from self.rules_sleep()
            elif self.elapsed() >= next_view and len(s.store.versions()) >= 2:
                next_view += view_every
                yield from self.version_and_diff()
            else:
                yield from self.turn()
            del self.server.requests[:]  # the server's record of requests is not the window's
            yield self.rng.uniform(0.2, 1.2)  # reading the reply, thinking
        yield Until(lambda: not s.busy, 120, "the last job to end")

    # -- the pump --------------------------------------------------------------------------------
    def pump(self) -> None:
        try:
            while True:
                w = self._wait
                if isinstance(w, Until):
                    if not w.cond():
                        if time.monotonic() > w.deadline:
                            self.fail(f"timed out waiting for {w.what}")
                            self.finish()
                        return
                elif isinstance(w, float) and time.monotonic() < self._resume_at:
                    return
                assert self._gen is not None
                nxt = next(self._gen)
                self._wait = nxt
                if isinstance(nxt, float):
                    self._resume_at = time.monotonic() + nxt
                    return
        except StopIteration:
            self.finish()
        except Exception:
            self.fail("the soak script raised:\n" + traceback.format_exc())
            self.finish()

    def finish(self) -> None:
        self._pump.stop()
        if self._loop is not None:
            self._loop.quit()

    def sample(self) -> None:
        self._sampled = time.monotonic()
        del self.server.requests[:]  # the server keeps every request; not the window's memory
        now = singletons()
        drift = {k: now[k] - self.base[k] for k in now}
        row = Minute(len(self.rows) + 1, self.sent, self.replies, self.facts, self.refused,
                     self.sleeps, self.stops, self.views, round(rss_mb(), 1), drift["None"],
                     drift["True"], drift["False"], self.heart.take_minute(),
                     self.problems.count(), load_average())
        self.rows.append(row)
        print(f"min {row.minute:>3} | turns {row.turns:>4} | replies {row.replies:>4} | "
              f"facts {row.facts:>4} (refused {row.refused}) | sleeps {row.sleeps:>2} | "
              f"stops {row.stops:>3} | views {row.views:>2} | RSS {row.rss_mb:7.1f} MB | "
              f"refcount drift None {row.none_drift:+d} True {row.true_drift:+d} "
              f"False {row.false_drift:+d} | longest stall {row.stall_ms:.0f} ms | "
              f"problems {row.problems} | load {row.load}", flush=True)
        for name, d in drift.items():
            if d < -MAX_SINGLETON_DROP:
                self.fail(f"sys.getrefcount({name}) fell {d:+d} since the start: the Qt binding "
                          "is dropping references (the interpreter will free it and abort)")

    def run(self, server: Any) -> int:
        self.server = server
        server.respond_with(self.script.respond)
        self.problems.install()
        self.build(server.base_url)
        self.base = singletons()
        self._started = self._sampled = time.monotonic()
        self._gen = self.run_script()
        self._pump = QTimer()
        self._pump.setInterval(PUMP_MS)
        self._pump.timeout.connect(self.pump)
        minute = QTimer()
        minute.setInterval(60_000)
        minute.timeout.connect(self.sample)
        hard_stop = QTimer()
        hard_stop.setSingleShot(True)
        hard_stop.timeout.connect(lambda: (self.fail("the soak overran its time by 10 minutes"),
                                           self.finish()))
        watchdog = QTimer()  # a frozen GUI thread stops re-arming it: stacks dumped, exit 1
        watchdog.setInterval(1000)
        watchdog.timeout.connect(lambda: faulthandler.dump_traceback_later(FROZEN_S, exit=True))
        watchdog.start()
        faulthandler.dump_traceback_later(FROZEN_S, exit=True)
        self.heart.start()
        self._pump.start()
        minute.start()
        hard_stop.start(int((self.total_s + 600) * 1000))
        self._loop = QEventLoop()
        self._loop.exec()
        minute.stop()
        hard_stop.stop()
        watchdog.stop()
        faulthandler.dump_traceback_later(FROZEN_S + 60, exit=True)  # closing: jobs join in 30 s
        if time.monotonic() - self._sampled > 5 or not self.rows:
            self.sample()  # the last, partial minute
        self.heart.timer.stop()
        self.close_and_check()
        faulthandler.cancel_dump_traceback_later()
        self.problems.uninstall()
        return 1 if self.all_failures() else 0

    # -- the end ---------------------------------------------------------------------------------
    def close_and_check(self) -> None:
        from nocturne_desktop.core.checks.audit import reaudit
        from nocturne_desktop.core.store import Store

        win = self.win
        db = win.session.db_path
        win.close()
        win.session.wait_threads()
        leaked = running_threads()
        if leaked:
            self.fail(f"threads still running after the window closed: {leaked}")
        win.deleteLater()
        QApplication.processEvents()
        checks = self.end_checks
        with Store(db) as store:
            checks["integrity_check"] = store.integrity_check()
            if checks["integrity_check"] != "ok":
                self.fail(f"PRAGMA integrity_check: {checks['integrity_check']}")
            audited, findings = 0, []
            sleeps = store.sleeps()
            for rec in sleeps:
                n, found = reaudit(store, rec.id)
                audited += n
                findings += [f"sleep #{rec.id}: {f.kind} {f.item_id}: {f.problem}" for f in found]
                if rec.status != "done":
                    self.fail(f"sleep #{rec.id} is recorded {rec.status!r}")
            checks["sleeps_recorded"] = len(sleeps)
            checks["mutations_reaudited"] = audited
            checks["reaudit_findings"] = findings
            for f in findings:
                self.fail(f"re-audit: {f}")
            if len(sleeps) != self.sleeps:
                self.fail(f"{len(sleeps)} sleeps recorded, {self.sleeps} run")
            turns = store.turns()
            users = [t for t in turns if t.role == "user"]
            bots = [t for t in turns if t.role == "assistant"]
            checks["user_turns_stored"] = len(users)
            checks["assistant_turns_stored"] = len(bots)
            checks["turns_sent"] = self.sent
            if len(users) != self.sent or self.accepted != self.sent:
                self.fail(f"turns in the store: {len(users)}, accepted: {self.accepted}, "
                          f"sent: {self.sent}")
            with_text = sum(1 for text, _ in self.replied_text if text.strip())
            if len(bots) != with_text:
                self.fail(f"assistant turns in the store: {len(bots)}, replies with text: {with_text}")
            known = {f.id for f in store.all_facts()}
            missing = sorted(self.remembered_ids - known)
            checks["facts_stored"] = len(known)
            if missing:
                self.fail(f"facts the chat said it remembered are not in the store: {missing[:5]}")

    def all_failures(self) -> list[str]:
        out = list(self.problems.failures)
        out += [f"exception: {e}" for e in self.problems.exceptions]
        out += [f"logged error: {e}" for e in self.problems.logged]
        out += [f"Qt {e}" for e in self.problems.qt]
        out += [f"encoder error: {e}" for e in self.encoder_errors]
        out += [f"chat failure: {m}" for m in self.unexpected_failures]
        out += [f"reply differs from what the server sent: {m}" for m in self.mismatched]
        out += [f"the server answered an unplanned chat request: {u!r}" for u in self.script.unknown]
        if self.heart.worst > MAX_STALL_MS:
            out.append(f"the GUI thread stalled {self.heart.worst:.0f} ms (limit {MAX_STALL_MS:.0f})")
        return out

    def summary(self) -> dict[str, Any]:
        rows = self.rows
        return {
            "minutes": self.minutes,
            "turns_sent": self.sent, "accepted": self.accepted, "replies": self.replies,
            "facts_remembered": self.facts, "facts_refused": self.refused,
            "stops": self.stops, "stops_after_the_reply_ended": self.stops_late,
            "replies_cut_at_the_cap": self.cuts, "cut_messages": self.expected_failures,
            "sleeps": self.sleeps, "version_views": self.views,
            "diffs": self.diffs, "shortcut_fallbacks": self.esc_fallbacks,
            "chat_requests": self.script.chat_requests,
            "encoder_requests": self.script.encoder_requests,
            "rss_mb_first": rows[0].rss_mb if rows else None,
            "rss_mb_last": rows[-1].rss_mb if rows else None,
            "rss_mb_max": max((r.rss_mb for r in rows), default=None),
            "none_drift_min": min((r.none_drift for r in rows), default=0),
            "none_drift_last": rows[-1].none_drift if rows else 0,
            "true_drift_last": rows[-1].true_drift if rows else 0,
            "false_drift_last": rows[-1].false_drift if rows else 0,
            "longest_stall_ms": self.heart.worst, "stalls_over_100ms": self.heart.over_100,
            "stalls_over_1s": self.heart.over_1000,
            "exceptions": len(self.problems.exceptions), "errors_logged": len(self.problems.logged),
            "qt_warnings": len(self.problems.qt),
            **self.end_checks,
            "failures": self.all_failures(),
        }


def running_threads() -> list[str]:
    """Qt threads of the window's jobs still running (whichever module runs them)."""
    for name in ("nocturne_desktop.ui.jobs",):
        try:
            mod = __import__(name, fromlist=["running_threads"])
        except ImportError:
            continue
        fn = getattr(mod, "running_threads", None)
        if callable(fn):
            return [t.objectName() for t in fn()]
    return []


def markdown(soak: Soak) -> str:
    s = soak.summary()
    lines = ["| minute | turns | replies | facts | sleeps | stops | views | RSS MB | "
             "None / True / False drift | longest stall | problems | load |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for r in soak.rows:
        lines.append(f"| {r.minute} | {r.turns} | {r.replies} | {r.facts} | {r.sleeps} | {r.stops} "
                     f"| {r.views} | {r.rss_mb:.1f} | {r.none_drift:+d} / {r.true_drift:+d} / "
                     f"{r.false_drift:+d} | {r.stall_ms:.0f} ms | {r.problems} | {r.load} |")
    lines += [
        "",
        f"- {s['turns_sent']} turns sent, {s['accepted']} accepted by the store, "
        f"{s.get('user_turns_stored', '?')} user turns in the store; {s['replies']} replies "
        f"({s['stops']} stopped with Esc, {s['stops_after_the_reply_ended']} of them after the "
        f"reply had ended; {s['replies_cut_at_the_cap']} cut at the reply-size cap).",
        f"- {s['facts_remembered']} facts remembered, {s['facts_refused']} refused by the gate "
        f"(invented companions, secrets); {s['sleeps']} rules-only sleeps, "
        f"{s.get('mutations_reaudited', '?')} mutations re-audited, "
        f"{len(s.get('reaudit_findings', []))} findings; {s['version_views']} version views, "
        f"{s['diffs']} diffs.",
        f"- RSS {s['rss_mb_first']} → {s['rss_mb_last']} MB (max {s['rss_mb_max']}); refcount "
        f"drift at the end None {s['none_drift_last']:+d}, True {s['true_drift_last']:+d}, "
        f"False {s['false_drift_last']:+d} (lowest None {s['none_drift_min']:+d}).",
        f"- Longest GUI-thread stall {s['longest_stall_ms']:.0f} ms; {s['stalls_over_100ms']} "
        f"gaps over 100 ms, {s['stalls_over_1s']} over 1 s.",
        f"- integrity_check: {s.get('integrity_check', '?')}; exceptions {s['exceptions']}, "
        f"errors logged {s['errors_logged']}, Qt warnings {s['qt_warnings']}; "
        f"failures: {len(s['failures'])}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="how long to chat (default 30)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json", type=Path, help="write the per-minute rows and the summary here")
    ap.add_argument("--keep", type=Path, help="use (and keep) this data folder instead of a temporary one")
    args = ap.parse_args(argv)
    faulthandler.enable()
    import PySide6

    from nocturne_desktop.ui.app import tune_interpreter
    from tests.fakeserver import FakeLLM

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tune_interpreter()  # as nocturne_desktop.ui.app.run() does
    folder = args.keep or Path(tempfile.mkdtemp(prefix="nocturne-soak-"))
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("data", "config", "cache"):
        os.environ[f"NOCTURNE_{name.upper()}_DIR"] = str(folder / name)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder / "qsettings"))
    print(f"soak: {args.minutes:g} min, PySide6 {PySide6.__version__}, Python "
          f"{sys.version.split()[0]}, load {load_average()}, data folder {folder}", flush=True)
    soak = Soak(args.minutes, args.seed, folder)
    try:
        with FakeLLM() as server:
            code = soak.run(server)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    print()
    print(markdown(soak))
    failures = soak.all_failures()
    if args.json:
        args.json.write_text(json.dumps({"rows": [asdict(r) for r in soak.rows],
                                         "summary": soak.summary()}, indent=2, ensure_ascii=False),
                             encoding="utf-8")
    if failures:
        print(f"\nFAILED ({len(failures)}):", file=sys.stderr)
        for f in failures[:50]:
            print(f"- {f}", file=sys.stderr)
    else:
        print("\nOK: no crash, no exception, store intact, every sleep re-audited clean, "
              "every turn sent is in the store.")
    del app
    return code if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
