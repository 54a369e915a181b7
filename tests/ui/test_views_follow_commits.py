"""The views follow the store's change descriptors by id: a commit's rows are read on the
writer's thread and applied as row inserts, ``dataChanged`` and removes, never by re-reading
the store; the block tree loads a page per block at a time and still reaches every fact."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, Fact, FactDraft
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.jobs import Job
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from nocturne_desktop.ui.models.tree import BlockTreeModel
from tests.fakeserver import FakeLLM
from tests.ui.modelkit import PAGE, block_index, seed_many
from tests.ui.test_flows import chat_responder, send

pytestmark = pytest.mark.timeout(120)

FULL_READS = ("all_facts", "active_facts", "versions", "sleeps", "state_at", "get_block")


@pytest.fixture
def full_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every whole-store read (``all_facts``, ``versions``, ``strengths()`` of everything, …) on
    the GUI thread, by name, from the moment the test clears the list. (A job's own reads, such
    as a sleep's, are its business.)"""
    seen: list[str] = []
    gui = threading.get_ident()
    for name in FULL_READS:
        original = getattr(Store, name)

        def spy(self: Store, *a: Any, _o: Any = original, _n: str = name, **kw: Any) -> Any:
            if threading.get_ident() == gui:
                seen.append(_n)
            return _o(self, *a, **kw)

        monkeypatch.setattr(Store, name, spy)
    original_strengths = Store.strengths

    def strengths(self: Store, item_ids: Any = None) -> Any:
        if item_ids is None and threading.get_ident() == gui:
            seen.append("strengths")
        return original_strengths(self, item_ids)

    monkeypatch.setattr(Store, "strengths", strengths)
    yield seen


class Events:
    """The structural signals of the block tree, with the ids of the rows inserted."""

    def __init__(self, model: BlockTreeModel) -> None:
        self.model = model
        self.inserted: list[str] = []
        self.removed: list[tuple[str, int, int]] = []
        self.changed: list[tuple[str | None, int, int]] = []
        self.resets = 0
        model.rowsInserted.connect(self._inserted)
        model.rowsAboutToBeRemoved.connect(
            lambda p, a, b: self.removed.append((str(p.data(ROLE_OBJECT)), a, b)))
        model.dataChanged.connect(self._changed)
        model.modelReset.connect(self._reset)

    def _inserted(self, parent: QModelIndex, first: int, last: int) -> None:
        for r in range(first, last + 1):
            fact = self.model.index(r, 0, parent).data(ROLE_OBJECT)
            self.inserted.append(fact.id if isinstance(fact, Fact) else str(fact))

    def _changed(self, a: QModelIndex, b: QModelIndex, _roles: Any = ()) -> None:
        block = a.parent().data(ROLE_OBJECT) if a.parent().isValid() else None
        self.changed.append((block, a.row(), b.row()))

    def _reset(self) -> None:
        self.resets += 1


# --- inserts, dataChanged, no re-read ------------------------------------------------------------


def test_a_write_of_one_fact_inserts_one_row_without_a_reread(
        qtbot: Any, make_window: Any, db_path: Path, full_reads: list[str]) -> None:
    seed_many(db_path, 40)
    win = make_window(Settings())
    ev = Events(win.memory.model)
    full_reads.clear()
    version = win.session.hand("add_fact", "scratch", "The user plays the oboe.")
    fact = win.session.store.get("m_41")
    assert fact is not None and fact.text == "The user plays the oboe."
    assert ev.inserted == [fact.id]
    assert ev.resets == 0 and not ev.removed
    assert full_reads == []  # the window read no whole list (no all_facts, versions, sleeps …)
    assert fact.id in [f.id for f in win.memory.model.facts("scratch")]
    assert win.timeline.current_version() == version  # the timeline got the version by id


def test_a_job_writing_one_fact_reaches_the_tree_by_id(
        qtbot: Any, make_window: Any, db_path: Path, full_reads: list[str]) -> None:
    seed_many(db_path, 40)
    win = make_window(Settings())
    ev = Events(win.memory.model)
    full_reads.clear()
    threads: list[int] = []

    def write(ctx: Any) -> Fact:
        threads.append(threading.get_ident())
        return ctx.store.append("human", FactDraft("The user's sister is called Ana.", "identity",
                                                    None, time.time()))

    got: list[Fact] = []
    job = Job(write, name="write", db_path=db_path).on_changes(win.session.changes.publisher("test"))
    job.success(got.append).start()
    qtbot.waitUntil(lambda: bool(got), timeout=5_000)
    assert ev.inserted == [got[0].id] and ev.resets == 0
    assert full_reads == []
    assert threading.get_ident() not in threads


def test_a_chat_turn_inserts_its_fact_and_rereads_nothing(
        qtbot: Any, make_window: Any, db_path: Path, fake_llm: FakeLLM,
        server_settings: Settings, full_reads: list[str]) -> None:
    seed_many(db_path, 40)
    fake_llm.respond_with(chat_responder(
        "Noted.", [{"text": "The user lives in Lisbon.", "category": "identity", "turn": 1}]))
    win = make_window(server_settings)
    ev = Events(win.memory.model)
    full_reads.clear()
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "I live in Lisbon.")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert full_reads == []
    (new,) = [f for f in win.session.store.active_facts() if "Lisbon" in f.text]
    assert ev.inserted == [new.id] and ev.resets == 0


def test_an_edit_changes_its_row_only(
        qtbot: Any, make_window: Any, db_path: Path, full_reads: list[str]) -> None:
    seed_many(db_path, 40)
    win = make_window(Settings())
    model = win.memory.model
    target = model.facts("scratch")[7]
    ev = Events(model)
    full_reads.clear()
    win.session.hand("edit", target.id, text="The user edited this one.")
    assert ev.changed == [("scratch", 7, 7)]  # that row, and not the block's label
    assert not ev.inserted and not ev.removed and ev.resets == 0
    assert model.facts("scratch")[7].text == "The user edited this one."
    assert full_reads == []
    # moved to another block: one remove there, one insert here, both labels recount
    ev.changed.clear()
    win.session.hand("edit", target.id, block="human")
    assert ev.removed == [("scratch", 7, 7)] and ev.inserted == [target.id]
    assert model.data(block_index(model, "human")).startswith("human  (1 active")
    assert model.data(block_index(model, "scratch")).startswith("scratch  (39 active")
    assert full_reads == []


def test_forgetting_removes_the_row_and_counts_it(
        qtbot: Any, make_window: Any, db_path: Path, full_reads: list[str]) -> None:
    seed_many(db_path, 40)
    win = make_window(Settings())
    model = win.memory.model
    target = model.facts("scratch")[3]
    ev = Events(model)
    full_reads.clear()
    win.session.hand("forget_now", target.id)
    assert ev.removed == [("scratch", 3, 3)] and ev.resets == 0
    assert model.data(block_index(model, "scratch")) == "scratch  (39 active, 1 forgotten)"
    assert full_reads == []
    win.memory.show_forgotten.setChecked(True)  # a page read, not the store
    win.session.hand("bring_back", target.id)
    assert model.data(block_index(model, "scratch")) == "scratch  (40 active)"


# --- lazy loading --------------------------------------------------------------------------------


def test_the_tree_shows_a_page_first_and_fetch_more_reaches_every_fact(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    model = win.memory.model
    scratch = block_index(model, "scratch")
    assert model.rowCount(scratch) == PAGE
    assert model.canFetchMore(scratch)
    assert model.data(scratch) == "scratch  (1300 active)"  # the label counts the whole block
    model.fetch_all("scratch")
    with Store(db_path) as store:
        want = [f.id for f in store.get_block("scratch")]
    assert [f.id for f in model.facts("scratch")] == want
    assert not model.canFetchMore(scratch)


def test_scrolling_fetches_a_middle_block_too(qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 1_400, "scratch", every=2, other="human")  # 700 human above 700 scratch
    win = make_window(Settings())
    win.resize(900, 700)
    model = win.memory.model
    win.tabs.setCurrentWidget(win.memory)
    qtbot.waitExposed(win)
    human = block_index(model, "human")
    assert model.rowCount(human) == PAGE
    bar = win.memory.view.verticalScrollBar()
    for _ in range(2_000):  # a person paging down to the end
        if bar.value() >= bar.maximum() and not any(
                model.canFetchMore(block_index(model, b)) for b in BLOCKS):
            break
        bar.setValue(bar.value() + bar.pageStep())
        qtbot.wait(1)
    assert model.rowCount(human) == 700 and model.rowCount(block_index(model, "scratch")) == 700


def test_select_fact_fetches_a_fact_not_loaded_yet(qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    model = win.memory.model
    assert not model.index_of("m_1200").isValid()  # beyond the first page
    assert win.memory.select_fact("m_1200")
    assert win.memory.current_fact() is not None and win.memory.current_fact().id == "m_1200"
    # the rows before it are all there (no gap), and the block still fetches the rest
    ids = [f.id for f in model.facts("scratch")]
    assert ids == [f"m_{n}" for n in range(1, 1201)]
    assert model.canFetchMore(block_index(model, "scratch"))
    # a change beyond the loaded rows waits for its page; one inside them is applied
    win.session.hand("edit", "m_1250", text="Far away, edited.")
    assert "m_1250" not in [f.id for f in model.facts("scratch")]
    model.fetch_all("scratch")
    assert model.facts("scratch")[1249].text == "Far away, edited."


def test_the_filter_finds_facts_not_loaded_yet(qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    panel = win.memory
    panel.filter.setText("item1234.")
    qtbot.waitUntil(lambda: panel.proxy.rowCount() == 1 and panel.proxy.rowCount(
        panel.proxy.index(0, 0)) == 1, timeout=5_000)
    hit = panel.proxy.index(0, 0, panel.proxy.index(0, 0)).data(ROLE_OBJECT)
    assert hit.id == "m_1235"
    panel.filter.clear()  # back to the live pages
    assert panel.model.rowCount(block_index(panel.model, "scratch")) == PAGE


def test_the_lazy_tree_passes_the_model_tester(qtmodeltester: Any, db_path: Path) -> None:
    from nocturne_desktop.core.store import reads
    from nocturne_desktop.ui.models.pagers import StorePager

    seed_many(db_path, 1_100, every=3)
    with Store(db_path) as store:
        model = BlockTreeModel()
        model.attach(StorePager(store))
        qtmodeltester.check(model)  # keeps checking while rows change below
        model.fetchMore(block_index(model, "scratch"))
        new = store.append("scratch", FactDraft("A new one.", "context", None, time.time()))
        model.apply_changes(reads.read_changed(store, store.last_changes))
        store.forget("m_2")
        model.apply_changes(reads.read_changed(store, store.last_changes))
        store.edit("m_3", block="human")
        model.apply_changes(reads.read_changed(store, store.last_changes))
        model.set_show_forgotten(True)
        qtmodeltester.check(model)
        model.fetch_all("scratch")
        assert new.id in [f.id for f in model.facts("scratch")]
        assert "m_3" in [f.id for f in model.facts("human")]
        assert next(f for f in model.facts("scratch") if f.id == "m_2").active is False


def test_a_big_change_reloads_the_first_pages(db_path: Path) -> None:
    from nocturne_desktop.core.store import reads
    from nocturne_desktop.ui.models.pagers import StorePager

    seed_many(db_path, 30)
    with Store(db_path) as store:
        model = BlockTreeModel()
        model.attach(StorePager(store))
        ev = Events(model)
        store.forget("m_1")
        rows = reads.ChangedRows(store.last_changes, complete=False)  # e.g. a read that failed
        model.apply_changes(rows)
        assert ev.resets == 1
        assert "m_1" not in [f.id for f in model.facts("scratch")]


# --- the timeline --------------------------------------------------------------------------------


def test_a_sleep_appends_to_the_timeline_by_id(
        qtbot: Any, make_window: Any, db_path: Path, full_reads: list[str]) -> None:
    seed_many(db_path, 60)
    win = make_window(Settings())
    resets: list[int] = []
    win.timeline.model.modelReset.connect(lambda: resets.append(1))
    inserted: list[int] = []
    win.timeline.model.rowsInserted.connect(lambda p, a, b: inserted.append(b - a + 1))
    full_reads.clear()
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.session.start_sleep(engine_only=True)
    gui_reads = list(full_reads)
    with Store(db_path) as store:
        versions = store.versions()
        sleep = store.sleeps()[-1]
    assert sleep.status == "done"
    assert win.timeline.model.all_versions() == versions
    assert not resets and inserted
    title = win.timeline.model.data(win.timeline.model.index(0, 0))
    assert title.startswith(f"Sleep #{sleep.id} · done")
    assert gui_reads == []  # the window read no whole list on the GUI thread


def test_a_sleep_that_forgets_leaves_the_tree_as_the_store(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    from nocturne_desktop.core.policy import RetentionPolicy

    seed_many(db_path, 120)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=60)))
    model = win.memory.model
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.session.start_sleep(engine_only=True)
    with Store(db_path) as store:
        for b in BLOCKS:
            assert [f.id for f in model.facts(b)] == [f.id for f in store.get_block(b)], b
        counts = {i.name: i.active_count for i in store.list_blocks()}
    assert {b: model.counts()[b][0] for b in BLOCKS} == counts
    assert win.status.active.text() == f"{sum(counts.values())} active facts"


def test_the_timeline_shows_the_latest_groups_and_reaches_the_older_ones(
        qtmodeltester: Any) -> None:
    from nocturne_desktop.core.types import SleepRecord, Version
    from nocturne_desktop.ui.models.timeline import TimelineModel

    t0 = 1_700_000_000.0
    versions = [Version(s, "pass:dedupe:before", t0 + s, 10, (s + 1) // 2) for s in range(1, 501)]
    sleeps = [SleepRecord(i, t0 + i, t0 + i + 1, False, "done", {}, {}) for i in range(1, 251)]
    model = TimelineModel()
    qtmodeltester.check(model)
    model.set_versions(versions, sleeps)
    assert model.rowCount() == TimelineModel.SHOWN and model.older == 250 - TimelineModel.SHOWN
    assert model.data(model.index(0, 0)).startswith(f"Sleep #{251 - TimelineModel.SHOWN} ")
    assert model.all_versions() == versions
    idx = model.reveal(3)  # in sleep #2, not shown yet
    assert idx.isValid() and model.version_at(idx) == versions[2]
    assert model.older == 0 and model.rowCount() == 250
    model.append([Version(501, "consolidation:start", t0 + 501, 10, 251)],
                 [SleepRecord(251, t0 + 501, None, False, "running", {}, {})])
    assert model.rowCount() == 251 and model.latest() is not None and model.latest().seq == 501
