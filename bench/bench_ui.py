"""GUI-thread responsiveness: the longest gap between 5 ms QTimer ticks while work runs.

A QTimer fires every 5 ms on the GUI thread; every gap between two ticks longer than that is
time the event loop could not run (a frozen window). Scenarios, each against the scripted
OpenAI-compatible server on a real socket, through the real window:

- a fast token stream (thousands of tokens, no delay between them) into the chat pane;
- a sleep against a deliberately slow model (each pass waits before answering);
- a rules-only sleep over a large store (the GUI re-reads the store after every pass).

Target: the longest gap ≤ 50 ms. Run: ``QT_QPA_PLATFORM=offscreen python -m bench.bench_ui``.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pydantic.fields  # noqa: F401  (see tests/conftest.py: import before Qt's hook)
from PySide6.QtCore import QElapsedTimer, QEventLoop, QObject, QSettings, QTimer
from PySide6.QtWidgets import QApplication

DAY = 86400.0
VOCAB = """
apple river garden morning coffee bicycle mountain library teacher violin harbour autumn
lantern market painter castle forest engine window candle meadow pocket ladder orchard
marble kettle saddle tunnel beacon compass feather glacier hammer island jacket kitten
lemon mirror needle ocean pepper quartz rocket silver thunder umbrella velvet walnut yogurt
zebra anchor basket cellar dolphin falcon granite helmet ivory jasmine kayak lobster maple
nectar olive parrot quilt raven spruce tulip utensil vessel willow yarn cedar dragon ember
fossil goblet hazel igloo juniper kernel lilac mango nutmeg opal pebble quiver rhubarb
saffron thistle uplift vapor wren timber sketch poetry chess rowing baking hiking jazz
""".strip()
FREEZE = True


class StallMeter(QObject):
    """Ticks every ``interval_ms`` on the GUI thread and records the gaps between ticks."""

    def __init__(self, interval_ms: int = 5) -> None:
        super().__init__()
        self.interval_ms = interval_ms
        self.gaps: list[float] = []
        self._clock = QElapsedTimer()
        self._last = 0
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.gaps.clear()
        self._clock.start()
        self._last = self._clock.elapsed()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._tick()

    def _tick(self) -> None:
        now = self._clock.elapsed()
        self.gaps.append(float(now - self._last))
        self._last = now

    @property
    def longest_ms(self) -> float:
        return max(self.gaps, default=0.0)

    def percentile(self, p: float) -> float:
        if not self.gaps:
            return 0.0
        ordered = sorted(self.gaps)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def run_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Spin the event loop (not processEvents in a hot loop: a real QEventLoop with a timer)."""
    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(2)
    poll.timeout.connect(lambda: loop.quit() if predicate() else None)
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    poll.start()
    deadline.start(int(timeout_s * 1000))
    if not predicate():
        loop.exec()
    poll.stop()
    return predicate()


def seed(path: Path, n: int) -> None:
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.core.types import FactDraft

    now = time.time()
    rng = random.Random(7)
    words = [w for w in VOCAB.split() if len(w) > 2]
    cats = ["context", "preferences", "event", "identity", "commitments"]
    with Store(path) as store, store.transaction():
        for i in range(n):
            block = "scratch" if i % 3 else ("episodes" if i % 2 else "human")
            cat = "event" if block == "episodes" else cats[i % len(cats)]
            # mostly distinct facts, with one near-duplicate in twenty (what Dedupe is for)
            if i % 20 == 19:
                text = f"The user said {' '.join(rng.sample(words, 5))}."
            else:
                text = f"The user {' '.join(rng.sample(words, 7))}."
            store.append(block, FactDraft(text, cat, None, now - (i % 90) * DAY))


def make_window(db: Path, settings: Any) -> Any:
    from nocturne_desktop.settings import ApiKey
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    session = Session(db, settings, ApiKey())
    win = MainWindow(session, qsettings=QSettings(str(db.parent / "w.ini"), QSettings.Format.IniFormat))
    win.resize(1280, 800)
    win.show()
    if FREEZE:
        from nocturne_desktop.ui.app import freeze_startup_objects

        freeze_startup_objects()  # as run() does once the window is up
    run_until(lambda: False, 0.3)  # the first layout and paint are start-up, not a stall
    return win


def scenario_stream(server: Any, folder: Path, tokens: int) -> dict[str, Any]:
    from nocturne_desktop.settings import Settings
    from tests.fakeserver import Reply

    text = " ".join(f"tok{i}" for i in range(tokens))

    def respond(req: Any) -> Any:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": []})
        return Reply.text(text)

    server.respond_with(respond)
    win = make_window(folder / "stream.db", Settings(base_url=server.base_url, model="fake-model"))
    batches: list[int] = []
    win.session.chatTokens.connect(lambda t: batches.append(len(t)))
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    win.session.send("go")
    ok = run_until(lambda: not win.session.busy, 120)
    elapsed = time.perf_counter() - t0
    meter.stop()
    assert ok and text in win.chat.text(), "the stream did not complete"
    win.close()
    return {"scenario": f"token stream ({tokens} tokens, no delay)", "longest_ms": meter.longest_ms,
            "p99_ms": meter.percentile(99), "ticks": len(meter.gaps), "elapsed_s": elapsed,
            "note": f"{len(batches)} batches to the GUI"}


def scenario_huge_reply(server: Any, folder: Path, megabytes: int) -> dict[str, Any]:
    """A server that ignores max_tokens and sends ``megabytes`` MB: the window keeps the cap."""
    from nocturne_desktop.settings import Settings
    from tests.fakeserver import Reply

    def respond(req: Any) -> Any:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": []})
        return Reply.huge(megabytes * 1024 * 1024)

    server.respond_with(respond)
    win = make_window(folder / "huge.db", Settings(base_url=server.base_url, model="fake-model"))
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    win.session.send("go")
    ok = run_until(lambda: not win.session.busy, 120)
    elapsed = time.perf_counter() - t0
    meter.stop()
    assert ok, "the huge reply did not end"
    held = len(win.chat.text())
    stored = win.session.store.turns()[-1]
    win.close()
    return {"scenario": f"{megabytes} MB reply, server ignores max_tokens", "longest_ms": meter.longest_ms,
            "p99_ms": meter.percentile(99), "ticks": len(meter.gaps), "elapsed_s": elapsed,
            "note": f"transcript holds {held:,} characters, stored turn {len(stored.text):,}"}


def scenario_enter_to_commit(server: Any, folder: Path, runs: int) -> dict[str, Any]:
    """Enter → the user's turn committed (the chatAccepted signal back on the GUI thread, an
    upper bound: the commit itself happened before the signal was sent)."""
    from nocturne_desktop.settings import Settings
    from tests.fakeserver import Reply

    server.respond_with(lambda req: Reply.json({"facts": []}) if "NEW TURNS:" in req.last_user
                        else Reply.text("ok"))
    win = make_window(folder / "commit.db", Settings(base_url=server.base_url, model="fake-model"))
    times: list[float] = []
    for i in range(runs):
        got: list[float] = []
        win.session.chatAccepted.connect(lambda _n, got=got: got.append(time.perf_counter()))
        t0 = time.perf_counter()
        win.session.send(f"message number {i}")
        assert run_until(lambda got=got: bool(got), 10), "the turn was never accepted"
        times.append((got[0] - t0) * 1000)
        assert run_until(lambda: not win.session.busy, 30)
        win.session.chatAccepted.disconnect()
    win.close()
    times.sort()
    return {"scenario": f"Enter → user turn committed ({runs} sends)", "longest_ms": times[-1],
            "p99_ms": times[-1], "ticks": runs, "elapsed_s": sum(times) / 1000,
            "note": f"median {statistics.median(times):.1f} ms, max {times[-1]:.1f} ms"}


def scenario_slow_sleep(server: Any, folder: Path, facts: int, delay: float) -> dict[str, Any]:
    from nocturne_desktop.settings import Settings
    from tests.core.sleepkit import cooperative, pass_responder
    from tests.fakeserver import Reply

    answers = cooperative()
    slow = {}
    for task, fn in answers.items():
        slow[task] = (lambda f: (lambda p: Reply.json(f(p), delay=delay)))(fn)
    server.respond_with(pass_responder(slow))
    db = folder / "sleep.db"
    seed(db, facts)
    win = make_window(db, Settings(base_url=server.base_url, model="fake-model"))
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    win.session.start_sleep()
    ok = run_until(lambda: not win.session.busy, 300)
    elapsed = time.perf_counter() - t0
    meter.stop()
    assert ok, "the sleep did not finish"
    status = win.session.store.sleeps()[-1].status
    win.close()
    return {"scenario": f"sleep, slow model ({facts} facts, {delay:g} s per call)",
            "longest_ms": meter.longest_ms, "p99_ms": meter.percentile(99), "ticks": len(meter.gaps),
            "elapsed_s": elapsed, "note": f"sleep {status}"}


def scenario_rules_sleep(folder: Path, facts: int) -> dict[str, Any]:
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.settings import Settings

    db = folder / "big.db"
    seed(db, facts)
    settings = Settings(retention=RetentionPolicy(max_active_facts=max(1, facts // 2)))
    win = make_window(db, settings)
    reloads: list[float] = []
    original = win.reload

    def timed_reload() -> None:
        t = time.perf_counter()
        original()
        reloads.append((time.perf_counter() - t) * 1000)

    win.session.storeChanged.disconnect(win.reload)
    win.session.storeChanged.connect(timed_reload)
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    win.session.start_sleep(engine_only=True)
    ok = run_until(lambda: not win.session.busy, 300)
    elapsed = time.perf_counter() - t0
    meter.stop()
    assert ok, "the sleep did not finish"
    win.close()
    return {"scenario": f"rules-only sleep ({facts} facts, cap {facts // 2})",
            "longest_ms": meter.longest_ms, "p99_ms": meter.percentile(99), "ticks": len(meter.gaps),
            "elapsed_s": elapsed,
            "note": f"GUI re-read per change: median {statistics.median(reloads):.0f} ms, "
                    f"max {max(reloads):.0f} ms" if reloads else ""}


def scenario_reads(folder: Path, facts: int) -> dict[str, Any]:
    """Open a past version (its whole state) and a diff with kept facts, through the window."""
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.settings import Settings

    db = folder / "reads.db"
    seed(db, facts)
    with Store(db) as store:
        v1 = store.snapshot("manual")
        with store.transaction():
            for f in store.all_facts()[: max(1, facts // 100)]:
                store.forget(f.id)
        store.snapshot("after forgetting 1 %")
    win = make_window(db, Settings())
    win.diff.show_kept.setChecked(True)
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    win.timeline.select_version(v1.seq)
    ok = run_until(lambda: win.memory.viewing is not None and win.memory.viewing.seq == v1.seq, 120)
    t_version = time.perf_counter() - t0
    win.back_to_live()
    t1 = time.perf_counter()
    win.tabs.setCurrentWidget(win.diff)
    ok = ok and run_until(lambda: win.diff.diff is not None and bool(win.diff.diff.kept), 120)
    t_diff = time.perf_counter() - t1
    meter.stop()
    assert ok, "the version or the diff did not show"
    win.close()
    return {"scenario": f"open a version, then a diff with kept facts ({facts} facts)",
            "longest_ms": meter.longest_ms, "p99_ms": meter.percentile(99), "ticks": len(meter.gaps),
            "elapsed_s": t_version + t_diff,
            "note": f"version shown after {t_version:.2f} s, diff after {t_diff:.2f} s"}


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from nocturne_desktop.ui.app import tune_interpreter
    from tests.fakeserver import FakeLLM

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tune_interpreter()  # as nocturne_desktop.ui.app.run() does
    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as server:
        folder = Path(tmp)
        os.environ["NOCTURNE_CONFIG_DIR"] = str(folder / "config")
        rows.append(scenario_stream(server, folder, 1800))  # within the 512-token reply cap
        rows.append(scenario_huge_reply(server, folder, 50))
        rows.append(scenario_enter_to_commit(server, folder, 20))
        rows.append(scenario_slow_sleep(server, folder, 60, 0.5))
        rows.append(scenario_rules_sleep(folder, 300))
        rows.append(scenario_rules_sleep(Path(tempfile.mkdtemp(dir=tmp)), 2000))
        rows.append(scenario_reads(Path(tempfile.mkdtemp(dir=tmp)), 2000))
    del app
    print("GUI-thread stalls (gap between 5 ms QTimer ticks; target: longest ≤ 50 ms)\n")
    print("| scenario | longest gap | p99 gap | ticks | elapsed | note |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['scenario']} | {r['longest_ms']:.0f} ms | {r['p99_ms']:.0f} ms | {r['ticks']} | "
              f"{r['elapsed_s']:.2f} s | {r['note']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
