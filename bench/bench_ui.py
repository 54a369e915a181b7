"""GUI-thread responsiveness: the longest gap between 5 ms QTimer ticks while work runs.

A QTimer fires every 5 ms on the GUI thread; every gap between two ticks longer than that is
time the event loop could not run (a frozen window). Scenarios, each against the scripted
OpenAI-compatible server on a real socket, through the real window:

- a fast token stream (thousands of tokens, no delay between them) into the chat pane;
- a sleep against a deliberately slow model (each pass waits before answering);
- a rules-only sleep over a large store (the GUI re-reads the store after every pass).

At scale (``--scale``): stores of 2k, 20k and 100k facts with 1,000 past sleeps (written
straight through ``Store.load``, not through the window): first paint of the window (from
``MainWindow`` construction to the first paint of the memory tree), the longest gap during a
rules-only sleep, a sleep on a slow model, scrolling the tree and the timeline, filtering,
opening a version and a diff with kept facts, restoring the first version, and the window
process's RSS growth; then Sleep with review, rules only (open it until the plan shows, untick
and tick a pass's group, select a change, apply the plan).

Target: the longest gap ≤ 50 ms, first paint ≤ 1 s. Run:
``QT_QPA_PLATFORM=offscreen python -m bench.bench_ui [--scale [--sizes 2000,20000] [--cap 120]
[--no-sleeps] [--only review]]``.
"""

from __future__ import annotations

import os
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
    """``n`` facts of the small corpus (one in twenty the shorter "said" form), appended."""
    from bench.corpus import append_facts, small_texts
    from nocturne_desktop.core.store import Store

    with Store(path) as store, store.transaction():
        append_facts(store, (text for _, text in small_texts(n)), time.time())


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
    # the views' work per commit: every view's handler, through the session's change hub
    hub = win.session.changes
    publish = hub.publish

    def timed(rows: Any, **kw: Any) -> None:
        t = time.perf_counter()
        publish(rows, **kw)
        reloads.append((time.perf_counter() - t) * 1000)

    hub.publish = timed  # type: ignore[method-assign]
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
            "note": f"GUI work per change: median {statistics.median(reloads):.0f} ms, "
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


# --- at scale ------------------------------------------------------------------------------------

PASS_LABELS = ("consolidation:start", *(
    f"pass:{p}:{side}" for p in ("dedupe", "reconcile", "promote", "forget")
    for side in ("before", "after")))


def scale_store(path: Path, n: int, sleeps: int) -> float:
    """``n`` facts (the seed's small vocabulary) and ``sleeps`` finished sleeps of nine versions
    each, written in one ``Store.load``; then 1 % of the facts forgotten by the store and one
    more snapshot (so a diff has something to show). Returns the seconds it took."""
    from bench.corpus import DAY, placement, small_texts
    from nocturne_desktop.core.store import Store

    t0 = time.perf_counter()
    now = time.time()
    items = []
    for i, (_, text) in enumerate(small_texts(n, said_every=None), start=1):
        block, cat = placement(i)
        created = now - (i % 90) * DAY - 1000
        items.append((i, block, text, cat, None, created, created, 1, None, None, 0, 1))
    start = now - sleeps * 60.0 - 600
    sleep_rows, snapshots = [], []
    seq = 0
    for sid in range(1, sleeps + 1):
        t = start + sid * 60.0
        sleep_rows.append((sid, t, t + 5, 0, "done", "{}", "{}"))
        for label in PASS_LABELS:
            seq += 1
            snapshots.append((seq, label, t + seq % 9 * 0.5, n, sid))
    with Store(path) as store:
        store.load({"items": items, "sleeps": sleep_rows, "snapshots": snapshots,
                    "next_item": [(n + 1,)]})
        with store.transaction():
            for i in range(1, n + 1, 100):
                store.forget(f"m_{i}")
        store.snapshot("after forgetting 1 %")
    return time.perf_counter() - t0


def copy_store(src: Path, dst: Path) -> Path:
    """A copy through SQLite's backup API (never the file itself while it may be open)."""
    import sqlite3

    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()
    return dst


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class FirstPaint(QObject):
    """The time of the first paint of a widget (the memory tree's viewport)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: float | None = None

    def eventFilter(self, obj: QObject, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if self.at is None and event.type() == QEvent.Type.Paint:
            self.at = time.perf_counter()
        return False


def first_paint(db: Path, settings: Any) -> tuple[Any, float, float]:
    """Build and show the window; seconds from construction to the tree's first paint, and
    the constructor alone."""
    from nocturne_desktop.settings import ApiKey
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    watch = FirstPaint()
    app = QApplication.instance()
    assert app is not None

    t0 = time.perf_counter()
    session = Session(db, settings, ApiKey())
    win = MainWindow(session, qsettings=QSettings(str(db.parent / f"{db.stem}.ini"),
                                                 QSettings.Format.IniFormat))
    built = time.perf_counter() - t0
    win.memory.view.viewport().installEventFilter(watch)
    win.tabs.setCurrentWidget(win.memory)
    win.resize(1280, 800)
    win.show()
    run_until(lambda: watch.at is not None, 120)
    painted = (watch.at or time.perf_counter()) - t0
    win.memory.view.viewport().removeEventFilter(watch)
    if FREEZE:
        from nocturne_desktop.ui.app import freeze_startup_objects

        freeze_startup_objects()  # as run() does once the window is up
    run_until(lambda: False, 0.3)
    return win, painted, built


def measure(fn: Callable[[], Any], until: Callable[[], bool], timeout_s: float) -> dict[str, Any]:
    """Gaps while ``fn()`` starts work and the loop runs until ``until()`` (or the timeout)."""
    meter = StallMeter()
    meter.start()
    t0 = time.perf_counter()
    fn()
    ok = run_until(until, timeout_s)
    elapsed = time.perf_counter() - t0
    meter.stop()
    return {"longest_ms": meter.longest_ms, "p99_ms": meter.percentile(99), "ticks": len(meter.gaps),
            "elapsed_s": elapsed, "ok": ok}


def scroll(view: Any, steps: int, every_ms: int = 16) -> dict[str, Any]:
    """Page down ``steps`` times, one step every ``every_ms`` (a person holding Page Down),
    then to the end and back to the top."""
    bar = view.verticalScrollBar()
    state = {"left": steps}
    timer = QTimer()
    timer.setInterval(every_ms)

    def step() -> None:
        if state["left"] <= 0:
            timer.stop()
            return
        state["left"] -= 1
        bar.setValue(bar.value() + bar.pageStep())

    timer.timeout.connect(step)
    out = measure(timer.start, lambda: state["left"] <= 0, 120)
    end = measure(lambda: bar.setValue(bar.maximum()), lambda: False, 0.3)
    top = measure(lambda: bar.setValue(0), lambda: False, 0.3)
    out["longest_ms"] = max(out["longest_ms"], end["longest_ms"], top["longest_ms"])
    out["rows"] = view.model().rowCount(view.model().index(3, 0)) if view.model().rowCount() > 3 else 0
    return out


def scale_rows(server: Any, folder: Path, n: int, sleeps: int, cap_s: float) -> list[dict[str, Any]]:
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.settings import Settings
    from tests.core.sleepkit import cooperative, pass_responder
    from tests.fakeserver import Reply

    gen = folder / f"gen-{n}.db"
    t_gen = scale_store(gen, n, sleeps)
    rows: list[dict[str, Any]] = []
    label = f"{n:,} facts, {sleeps:,} sleeps"
    if ONLY_REVIEW:
        return review_rows(gen, folder, n, label, cap_s)

    def row(what: str, r: dict[str, Any], note: str = "") -> None:
        rows.append({"scenario": f"{what} ({label})", "longest_ms": r["longest_ms"],
                     "p99_ms": r["p99_ms"], "ticks": r["ticks"], "elapsed_s": r["elapsed_s"],
                     "note": note})

    # first paint, then scrolling, filtering, a version and a diff, in one window
    rss0 = rss_mb()
    db = copy_store(gen, folder / f"ui-{n}.db")
    win, painted, built = first_paint(db, Settings(retention=RetentionPolicy(
        max_active_facts=max(1, n // 2))))
    rss1 = rss_mb()
    rows.append({"scenario": f"first paint ({label})", "longest_ms": float("nan"), "p99_ms": float("nan"),
                 "ticks": 0, "elapsed_s": painted,
                 "note": f"MainWindow() {built:.2f} s; RSS +{rss1 - rss0:.0f} MB; store written "
                         f"in {t_gen:.1f} s"})
    r = scroll(win.memory.view, 300)
    row("scroll the tree, 300 pages", r, f"scratch rows loaded {r['rows']:,}")
    win.tabs.setCurrentWidget(win.timeline)
    run_until(lambda: False, 0.3)
    r = scroll(win.timeline.view, 300)
    row("scroll the timeline, 300 pages", r)
    win.tabs.setCurrentWidget(win.memory)
    run_until(lambda: False, 0.3)
    pending = lambda: bool(getattr(win.memory, "filter_pending", False))  # noqa: E731
    r = measure(lambda: win.memory.filter.setText("apple river"), lambda: not pending(), cap_s)
    shown = win.memory.proxy.rowCount(win.memory.proxy.index(0, 0)) if win.memory.proxy.rowCount() else 0
    r2 = measure(win.memory.filter.clear, lambda: not pending(), cap_s)
    r3 = measure(lambda: None, lambda: False, 0.3)  # the clear's layout and paints, still its own
    r["longest_ms"] = max(r["longest_ms"], r2["longest_ms"], r3["longest_ms"])
    row("filter 'apple river', then clear", r, f"first block shows {shown} match(es)")
    versions = win.session.store.versions()
    first = versions[0]
    win.diff.show_kept.setChecked(True)
    t0 = time.perf_counter()
    r = measure(lambda: win.timeline.select_version(first.seq),
                lambda: win.memory.viewing is not None and win.memory.viewing.seq == first.seq, cap_s)
    t_version = time.perf_counter() - t0
    r2 = measure(win.back_to_live, lambda: False, 0.2)
    t1 = time.perf_counter()
    r3 = measure(lambda: win.diff.select_pair(first.seq, versions[-1].seq),
                 lambda: win.diff.diff is not None and bool(win.diff.diff.kept), cap_s)
    t_diff = time.perf_counter() - t1
    r["longest_ms"] = max(r["longest_ms"], r2["longest_ms"], r3["longest_ms"])
    r["p99_ms"] = max(r["p99_ms"], r3["p99_ms"])
    r["elapsed_s"] = t_version + t_diff
    row("open a version, back to live, a diff with kept facts", r,
        f"version after {t_version:.2f} s, diff after {t_diff:.2f} s")
    # restore the first version, as the timeline's button does (then Ctrl+Z, unmeasured, so
    # the sleeps below start from the generated store)
    created: list[Any] = []
    win.session.versionCreated.connect(created.append)
    run_until(lambda: False, 0.3)
    r = measure(lambda: win.restore_version(first.seq),
                lambda: bool(created) and not win.session.busy, cap_s)
    win.session.versionCreated.disconnect(created.append)
    restored = created[0] if created else None
    row("restore the first version", r,
        f"{restored.label}, {restored.active_count:,} active" if restored is not None
        else "not finished")
    if restored is not None:
        win.session.hand("undo")
        run_until(lambda: False, 0.3)
    if NO_SLEEPS:
        win.close()
        win.session.wait_threads()
        return rows
    # a rules-only sleep (the cap forgets half), to its end and the tree's last reload landing
    reloading = lambda: bool(getattr(win.memory, "reload_pending", False))  # noqa: E731
    r = measure(lambda: win.session.start_sleep(engine_only=True),
                lambda: not win.session.busy and not reloading(), cap_s)
    finished = r["ok"]
    if not finished:
        win.session.cancel_sleep()
        run_until(lambda: not win.session.busy, 120)
    rss2 = rss_mb()
    row(f"rules-only sleep, cap {n // 2:,}", r,
        ("sleep done" if finished else f"sleep not finished in {cap_s:.0f} s (cancelled)")
        + f"; RSS after {rss2:.0f} MB (+{rss2 - rss0:.0f} MB from before the window)")
    win.close()
    win.session.wait_threads()
    # a sleep on a slow model (0.5 s per call)
    answers = cooperative()
    server.respond_with(pass_responder({t: (lambda f: (lambda p: Reply.json(f(p), delay=0.5)))(fn)
                                        for t, fn in answers.items()}))
    db = copy_store(gen, folder / f"slow-{n}.db")
    win, _, _ = first_paint(db, Settings(base_url=server.base_url, model="fake-model"))
    r = measure(win.session.start_sleep, lambda: not win.session.busy, cap_s)
    finished = r["ok"]
    if not finished:
        win.session.cancel_sleep()
        run_until(lambda: not win.session.busy, 120)
    row("sleep, slow model (0.5 s per call)", r,
        "sleep done" if finished else f"not finished in {cap_s:.0f} s (cancelled)")
    win.close()
    win.session.wait_threads()
    return rows + review_rows(gen, folder, n, label, cap_s)


def review_rows(gen: Path, folder: Path, n: int, label: str, cap_s: float) -> list[dict[str, Any]]:
    """Sleep with review, rules only, the cap at half: open it and wait for the plan to show,
    untick and tick one pass's group (the whole list on a dialog without group boxes: Untick
    all, Tick all), select a change, apply the plan."""
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.settings import Settings
    from nocturne_desktop.ui.review import ReviewDialog

    rows: list[dict[str, Any]] = []

    def row(what: str, r: dict[str, Any], note: str = "") -> None:
        rows.append({"scenario": f"review: {what} ({label})", "longest_ms": r["longest_ms"],
                     "p99_ms": r["p99_ms"], "ticks": r["ticks"], "elapsed_s": r["elapsed_s"],
                     "note": note})

    db = copy_store(gen, folder / f"review-{n}.db")
    win, _, _ = first_paint(db, Settings(retention=RetentionPolicy(max_active_facts=max(1, n // 2))))
    dlg = ReviewDialog(win.session, win)
    dlg.rules_only.blockSignals(True)
    dlg.rules_only.setChecked(True)
    dlg.rules_only.blockSignals(False)
    win.review_dialog = dlg

    def shown() -> bool:
        done = getattr(dlg, "plan_shown", None)
        return dlg.plan is not None and (done() if callable(done) else True)

    def open_it() -> None:
        dlg.show()
        dlg.replan()

    r = measure(open_it, lambda: shown() and not win.session.busy, cap_s)
    t_plan = r["elapsed_s"]
    idle = measure(lambda: None, lambda: False, 1.0)  # the stale check after the plan's job
    r["longest_ms"] = max(r["longest_ms"], idle["longest_ms"])
    r["p99_ms"] = max(r["p99_ms"], idle["p99_ms"])
    plan = dlg.plan
    if plan is None:
        row("open, plan shown", r, f"no plan within {cap_s:.0f} s")
        win.close()
        win.session.wait_threads()
        return rows
    size = len(plan.items)
    groups = getattr(plan, "groups", None)  # a plan in pages says it without reading them
    per_pass = ({p: b - a for p, a, b in groups} if groups is not None else
                {p: sum(i.pass_name == p for i in plan.items) for p in plan.passes})
    row("open (rules only), plan shown", r, f"plan shown after {t_plan:.2f} s; {size:,} changes "
        + ", ".join(f"{p} {k:,}" for p, k in per_pass.items() if k))
    group = max(per_pass, key=lambda p: per_pass[p])
    by_group = getattr(dlg, "set_group_ticked", None)
    if callable(by_group):
        r = measure(lambda: by_group(group, False), lambda: False, 0.3)
        r2 = measure(lambda: by_group(group, True), lambda: False, 0.3)
        what = f"untick, tick the {group} group"
    else:
        r = measure(dlg.untick_all.click, lambda: False, 0.3)
        r2 = measure(dlg.tick_all.click, lambda: False, 0.3)
        what = "untick all, tick all (no group boxes)"
    for k in ("longest_ms", "p99_ms"):
        r[k] = max(r[k], r2[k])
    r["elapsed_s"] += r2["elapsed_s"]
    r["ticks"] += r2["ticks"]
    row(what, r, f"{per_pass[group]:,} changes; {len(dlg.approved()):,} ticked after")
    last = size
    select = getattr(dlg, "select", None)
    r = measure(lambda: select(last) if callable(select) else
                dlg.tree.setCurrentItem(dlg._items[last]), lambda: False, 0.3)
    row("select a change (the last)", r)
    dlg.tick_all.click()  # (the group's untick unticked what relies on it in later passes)
    run_until(lambda: False, 0.3)
    r = measure(dlg.apply_selected, lambda: dlg.outcome is not None and not win.session.busy
                and not getattr(win.memory, "reload_pending", False), cap_s)  # the tree's too
    out = dlg.outcome
    row("apply the plan", r, f"applied {len(out.applied):,} in {r['elapsed_s']:.2f} s"
        if out is not None else f"not applied within {cap_s:.0f} s: {dlg.status.text()}")
    dlg.close()
    win.close()
    win.session.wait_threads()
    return rows


ONLY_REVIEW = "--only" in sys.argv and sys.argv[sys.argv.index("--only") + 1] == "review"
"""``--only review``: only the Sleep with review scenario at scale (store generation first)."""

NO_SLEEPS = "--no-sleeps" in sys.argv
"""``--no-sleeps``: only the window's own scenarios at scale (first paint, scrolling, the
filter, a version and a diff, a restore), not the two sleeps."""


def scale_main(sizes: list[int], cap_s: float) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from nocturne_desktop.ui.app import tune_interpreter
    from tests.fakeserver import FakeLLM

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tune_interpreter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as server:
        os.environ["NOCTURNE_CONFIG_DIR"] = str(Path(tmp) / "config")
        for n in sizes:
            got = scale_rows(server, Path(tempfile.mkdtemp(dir=tmp)), n, 1000, cap_s)
            rows += got
            print_rows(got, flush=True)
    del app
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    print("GUI-thread stalls at scale (gap between 5 ms QTimer ticks; targets: first paint ≤ 1 s, "
          "longest gap ≤ 50 ms)\n")
    print_rows(rows)
    return 0


def print_rows(rows: list[dict[str, Any]], *, flush: bool = False) -> None:
    print("| scenario | longest gap | p99 gap | ticks | elapsed | note |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        gap = "—" if r["longest_ms"] != r["longest_ms"] else f"{r['longest_ms']:.0f} ms"
        p99 = "—" if r["p99_ms"] != r["p99_ms"] else f"{r['p99_ms']:.0f} ms"
        print(f"| {r['scenario']} | {gap} | {p99} | {r['ticks']} | {r['elapsed_s']:.2f} s | "
              f"{r['note']} |", flush=flush)


def main() -> int:
    if "--scale" in sys.argv:
        sizes = [2_000, 20_000, 100_000]
        cap = 120.0
        if "--sizes" in sys.argv:
            sizes = [int(x) for x in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
        if "--cap" in sys.argv:
            cap = float(sys.argv[sys.argv.index("--cap") + 1])
        return scale_main(sizes, cap)
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
