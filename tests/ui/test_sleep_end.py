"""The end of a sleep, and every big commit a view takes, costs the GUI thread no read of the
store: the tree follows a worker process's commits as they land, reads its first pages again
on a job's thread after a change too big to apply row by row (a newer reload, or a commit
meanwhile, supersedes one still reading), and the status bar counts from the commits."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import BLOCKS
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.tabs import memory as memory_module
from tests.ui.modelkit import PAGE, seed_many

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def gui_sql(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every read of a store on the GUI thread, by what asked for it (the function two frames
    up from ``Store._read``), from the moment the test clears the list."""
    import sys

    seen: list[str] = []
    gui = threading.get_ident()
    original = Store._read

    def spy(self: Store, *a: Any, **kw: Any) -> Any:
        if threading.get_ident() == gui:
            f = sys._getframe(1)
            seen.append("<-".join(g.f_code.co_name for g in _up(f, 6)))
        return original(self, *a, **kw)

    monkeypatch.setattr(Store, "_read", spy)
    yield seen


def _up(frame: Any, n: int) -> Iterator[Any]:
    while frame is not None and n > 0:
        yield frame
        frame, n = frame.f_back, n - 1


def store_first_pages(path: Path) -> dict[str, list[str]]:
    with Store(path) as store:
        return {b: [f.id for f in reads.block_page(store, b, limit=PAGE)[0]] for b in BLOCKS}


def store_counts(path: Path) -> dict[str, tuple[int, int, int]]:
    with Store(path) as store:
        return reads.block_counts(store)


def sleep_in_window(qtbot: Any, win: Any, **kw: Any) -> None:
    """A rules-only sleep, to its end and to the tree's last reload."""
    with qtbot.waitSignal(win.session.busyChanged, timeout=90_000,
                          check_params_cb=lambda kind: kind == ""):
        win.session.start_sleep(engine_only=True, **kw)
    qtbot.waitUntil(lambda: not getattr(win.memory, "reload_pending", False), timeout=10_000)


# --- a sleep that forgets more than BIG_CHANGE facts, in a worker process ---------------------


def test_a_sleep_that_forgets_half_reads_nothing_on_the_gui_thread(
        qtbot: Any, make_window: Any, db_path: Path, gui_sql: list[str]) -> None:
    """12,000 facts, a cap of 6,000: the Forget pass deactivates 6,000 (> BIG_CHANGE), so the
    tree reloads its first pages. Fails before: the held commits were merged when the sleep
    ended and the first pages read by SQL on the GUI thread (and the status bar counted the
    store there)."""
    seed_many(db_path, 12_000, every=3)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=6_000)))
    model = win.memory.model
    big: list[tuple[str, bool]] = []  # (busy, reloading) right after the window took a commit
    win.session.changes.subscribe(lambda commit: big.append(
        (win.session.busy, getattr(win.memory, "reload_pending", False)))
        if commit.rows.reload else None)
    gui_sql.clear()
    sleep_in_window(qtbot, win)
    on_gui = list(gui_sql)
    assert win.session.store.sleeps()[-1].status == "done"
    assert on_gui == []  # no page, no count, no version read on the GUI thread
    assert big == [("sleep", True)]  # the Forget pass's commit, taken as it landed
    pages, counts = store_first_pages(db_path), store_counts(db_path)
    assert sum(c[0] for c in counts.values()) == 6_000
    for b in BLOCKS:
        assert [f.id for f in model.facts(b)] == pages[b], b
    assert model.counts() == counts
    assert model.data(model.index(BLOCKS.index("scratch"), 0)).startswith(
        f"scratch  ({counts['scratch'][0]} active")
    assert win.status.active.text() == "6000 active facts"
    assert not win.memory.updating.isVisibleTo(win.memory)


def test_a_sleep_in_a_worker_process_reaches_the_tree_pass_by_pass(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    """The tree applies each commit of a worker process as it lands (before: held until the
    sleep ended, then all at once)."""
    seed_many(db_path, 120)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=60)))
    removed_while: list[str] = []
    win.memory.model.rowsRemoved.connect(lambda *_a: removed_while.append(win.session.busy))
    sleep_in_window(qtbot, win)
    assert removed_while and set(removed_while) == {"sleep"}  # fails before: all after the end
    assert win.status.active.text() == "60 active facts"


def test_a_sleep_on_a_thread_still_holds_its_commits_until_it_ends(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    """With an in-code model the sleep runs on a thread of the window's process: each layout
    of the tree would wait for the GIL behind the passes, so its commits wait for the end."""
    seed_many(db_path, 120)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=60)))
    win.session.child_process = False  # as a session made with an in-code model
    removed_while: list[str] = []
    win.memory.model.rowsRemoved.connect(lambda *_a: removed_while.append(win.session.busy))
    sleep_in_window(qtbot, win)
    assert removed_while and set(removed_while) == {""}
    pages = store_first_pages(db_path)
    assert [f.id for f in win.memory.model.facts("scratch")] == pages["scratch"]
    assert win.status.active.text() == "60 active facts"


# --- the reload itself ---------------------------------------------------------------------------


class Gate:
    """Holds the first ``read_first_pages`` of the tree's reload until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        """The first read is inside the gate (its job's body runs)."""
        self.calls = 0
        self.read: list[Any] = []
        self.shown: list[Any] = []


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    g = Gate()
    original = memory_module.read_first_pages

    def held(*a: Any, **kw: Any) -> Any:
        g.calls += 1
        first = g.calls == 1
        if first:
            g.entered.set()
            assert g.release.wait(30)
        pages = original(*a, **kw)
        g.read.append(pages)
        return pages

    monkeypatch.setattr(memory_module, "read_first_pages", held)
    monkeypatch.setattr(reads, "BIG_CHANGE", 50)
    return g


def emit_commit(win: Any, path: Path, write: Any) -> reads.ChangedRows:
    """A commit made outside the window (as a job's store would), its rows read right after
    it, handed to the window as a job's commit reaches it."""
    got: list[reads.ChangedRows] = []

    def run() -> None:
        with Store(path) as store:
            write(store)
            got.append(reads.read_changed(store, store.last_changes))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    win.session.changes.publish(got[0], source="test")
    return got[0]


def forget(first: int, last: int) -> Any:
    def write(store: Store) -> None:
        with store.transaction():
            for i in range(first, last + 1):
                store.forget(f"m_{i}")
    return write


def test_a_big_commit_reloads_off_the_gui_thread_and_a_superseded_reload_never_lands(
        qtbot: Any, make_window: Any, db_path: Path, gate: Gate, gui_sql: list[str]) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    original_show = model.show_pages

    def show(pager: Any, pages: Any) -> bool:
        gate.shown.append(pages)
        return original_show(pager, pages)

    model.show_pages = show  # type: ignore[method-assign]
    before = model.facts("scratch")
    gui_sql.clear()
    big = emit_commit(win, db_path, forget(1, 100))
    assert big.reload and big.counts is not None
    # the read runs on a job's thread; meanwhile the rows from before stay, the counts are new
    assert panel.reload_pending and panel.updating.isVisibleTo(panel)
    assert model.facts("scratch") == before
    assert model.counts() == big.counts
    assert win.status.active.text() == "1200 active facts"
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    # a small commit while it reads: a read that may have missed it is superseded
    emit_commit(win, db_path, forget(101, 101))
    qtbot.waitUntil(lambda: len(gate.read) == 1, timeout=10_000)  # the second read, not held
    qtbot.waitUntil(lambda: not panel.reload_pending, timeout=10_000)
    assert gate.shown == gate.read  # the second one landed
    gate.release.set()
    qtbot.waitUntil(lambda: len(gate.read) == 2, timeout=10_000)  # the first read ends now
    qtbot.wait(100)  # and its result would reach the GUI thread
    assert len(gate.shown) == 1 and gate.shown[0] is gate.read[0]  # ... it never landed
    assert gui_sql == []
    assert [f.id for f in model.facts("scratch")] == store_first_pages(db_path)["scratch"]
    assert "m_101" not in {f.id for f in model.facts("scratch")}
    assert model.counts() == store_counts(db_path)
    assert win.status.active.text() == "1199 active facts"
    assert not panel.updating.isVisibleTo(panel)


def test_a_reload_does_not_land_on_a_past_version_or_after_show_forgotten(
        qtbot: Any, make_window: Any, db_path: Path, gate: Gate) -> None:
    seed_many(db_path, 300)
    with Store(db_path) as store:
        store.snapshot("seeded")
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    emit_commit(win, db_path, forget(1, 60))
    assert panel.reload_pending
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    first = win.session.store.versions()[0]
    win.timeline.select_version(first.seq)
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    assert not panel.reload_pending
    gate.release.set()
    qtbot.waitUntil(lambda: len(gate.read) == 1, timeout=10_000)
    qtbot.wait(100)
    assert model.counts()["scratch"] == (300, 0, 0)  # still the version's
    assert "m_1" in {f.id for f in model.facts("scratch")}
    win.back_to_live()
    assert "m_1" not in {f.id for f in model.facts("scratch")}
    assert model.counts() == store_counts(db_path)


def test_show_forgotten_while_a_reload_reads(qtbot: Any, make_window: Any, db_path: Path,
                                             gate: Gate) -> None:
    seed_many(db_path, 300)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    emit_commit(win, db_path, forget(1, 60))
    assert panel.reload_pending
    qtbot.waitUntil(gate.entered.is_set, timeout=10_000)
    panel.show_forgotten.setChecked(True)  # read again here, with the forgotten facts
    assert not panel.reload_pending
    gate.release.set()
    qtbot.waitUntil(lambda: len(gate.read) == 1, timeout=10_000)
    qtbot.wait(100)
    ids = [f.id for f in model.facts("scratch")]
    assert ids[:2] == ["m_1", "m_2"] and len(ids) == 300


# --- the status bar and "Undo last sleep" -------------------------------------------------------


def test_the_status_count_and_undo_last_sleep_read_nothing_on_the_gui_thread(
        qtbot: Any, make_window: Any, db_path: Path, gui_sql: list[str]) -> None:
    seed_many(db_path, 200)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=120)))
    gui_sql.clear()
    sleep_in_window(qtbot, win)
    assert win.status.active.text() == "120 active facts"
    assert gui_sql == []  # fails before: _update_status counted the store (active_count)
    with qtbot.waitSignal(win.session.versionCreated, timeout=30_000):
        win.undo_last_sleep()  # fails before: the versions were read here, twice
    assert [s for s in gui_sql if "versions" in s] == []
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    with contextlib.suppress(Exception):
        qtbot.waitUntil(lambda: not win.memory.reload_pending, timeout=5_000)
    assert win.status.active.text() == "200 active facts"
    with Store(db_path) as store:
        assert store.active_count() == 200
        assert store.latest_version().label.startswith("restore")


def test_undo_last_sleep_says_why_it_cannot(qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 10)
    win = make_window(Settings())
    win.undo_last_sleep()
    assert win.statusBar().currentMessage() == "no sleep to undo yet"
    assert not win.session.busy


# --- the relay of a worker process --------------------------------------------------------------


def test_no_full_collection_in_the_window_while_a_worker_process_relays(qtbot: Any) -> None:
    """Each commit's rows are unpickled on the job's thread in the window's process (a Forget's
    ~50k mutations at once): a full collection set off meanwhile held the GIL from the GUI
    thread for 10-160 ms at 100k facts. Fails before: the thresholds stayed as they were."""
    import gc

    from nocturne_desktop.ui.jobs import ChildProcess, Job
    from nocturne_desktop.ui.jobs.deferred_gc import DEFERRED_THRESHOLD2
    from tests import childbodies

    usual = gc.get_threshold()
    seen: list[int] = []
    ended: list[bool] = []
    job = Job(childbodies.wait_for_the_cancel, name="test", process=ChildProcess())

    def started(item: object) -> None:
        if item == "started":
            seen.append(gc.get_threshold()[2])
            job.stop()

    job.on_yield(started).ended(lambda: ended.append(True)).start()
    qtbot.waitUntil(lambda: bool(ended), timeout=30_000)
    job.wait()
    assert job.in_child
    assert seen == [DEFERRED_THRESHOLD2]
    assert gc.get_threshold() == usual


def test_restoring_the_version_on_screen_goes_back_to_live_without_a_read_on_the_gui_thread(
        qtbot: Any, make_window: Any, db_path: Path, gui_sql: list[str]) -> None:
    """The timeline's "Restore this version" while that version shows: the restore's commit
    lands while the tree shows the past version, then the window goes back to live. Fails
    before: the change dropped the live rows and counts kept, so back to live read the first
    pages and counted every fact on the GUI thread."""
    seed_many(db_path, 1_300)
    with Store(db_path) as store:
        first = store.snapshot("seeded")
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    win.session.hand("forget_now", "m_3")
    win.timeline.select_version(first.seq)
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    assert "m_3" in {f.id for f in model.facts("scratch")}  # the version's rows
    gui_sql.clear()
    with qtbot.waitSignal(win.session.versionCreated, timeout=30_000):
        win.restore_version(first.seq)
    assert panel.viewing is None and not panel.banner.isVisibleTo(panel)
    assert model.counts()["scratch"] == (1_300, 0, 0)  # the restore's counts, at once
    qtbot.waitUntil(lambda: not win.session.busy and not getattr(panel, "reload_pending", False),
                    timeout=10_000)
    on_gui = list(gui_sql)
    assert on_gui == []
    assert [f.id for f in model.facts("scratch")] == store_first_pages(db_path)["scratch"]
    assert "m_3" in {f.id for f in model.facts("scratch")}
    assert model.counts() == store_counts(db_path)
    assert win.status.active.text() == "1300 active facts"
