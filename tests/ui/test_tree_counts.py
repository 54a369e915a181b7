"""The Memory tab leaves a filter or a past version without counting the whole store on the GUI
thread (the live counts are kept), and a filter over a deep-scrolled lazy tree filters the first
pages only (the store's search brings the matches)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from tests.ui.modelkit import PAGE, block_index, seed_many

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def gui_counts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per ``block_counts`` read on the GUI thread (a scan of every fact)."""
    seen: list[int] = []
    gui = threading.get_ident()
    original = reads.block_counts

    def spy(store: Store) -> Any:
        if threading.get_ident() == gui:
            seen.append(1)
        return original(store)

    monkeypatch.setattr(reads, "block_counts", spy)
    return seen


def snapshot(path: Path) -> None:
    with Store(path) as store:
        store.snapshot("seeded")


def test_back_to_live_and_clearing_the_filter_count_nothing(
        qtbot: Any, make_window: Any, db_path: Path, gui_counts: list[int]) -> None:
    seed_many(db_path, 1_300)
    snapshot(db_path)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    live = model.counts()
    first = win.session.store.versions()[0]
    gui_counts.clear()
    win.timeline.select_version(first.seq)
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    win.back_to_live()
    assert gui_counts == []  # fails before: back to live counted the store again
    assert panel.viewing is None and model.counts() == live
    assert model.data(block_index(model, "scratch")) == "scratch  (1300 active)"
    panel.filter.setText("item1234.")
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=5_000)
    gui_counts.clear()
    panel.filter.clear()
    assert gui_counts == []  # fails before: clearing counted the store again
    assert model.counts() == live and model.rowCount(block_index(model, "scratch")) == PAGE


def test_a_change_while_a_version_shows_is_counted_on_the_way_back(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 600)
    snapshot(db_path)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    win.timeline.select_version(win.session.store.versions()[0].seq)
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    win.session.hand("forget_now", "m_3")
    win.back_to_live()
    assert model.counts()["scratch"] == (599, 0, 1)


def test_a_filter_over_a_deep_tree_filters_the_first_pages(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 2_600)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    for _ in range(3):
        model.fetch_page("scratch")
    assert model.rowCount(block_index(model, "scratch")) == 4 * PAGE
    panel.filter.setText("item2555.")
    assert model.rowCount(block_index(model, "scratch")) == PAGE  # fails before: 2,000 filtered
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=5_000)
    hits = [panel.proxy.index(r, 0, panel.proxy.index(0, 0)).data(ROLE_OBJECT)
            for r in range(panel.proxy.rowCount(panel.proxy.index(0, 0)))]
    assert [f.id for f in hits] == ["m_2556"]
    assert panel.select_fact("m_2000")  # still reaches every fact: the filter is cleared
    assert panel.current_fact() is not None and panel.current_fact().id == "m_2000"


def test_the_view_shows_the_tree_itself_unless_a_filter_is_set(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    assert panel.view.model() is model  # fails before: always through the filter proxy
    panel.filter.setText("item1234.")
    assert panel.view.model() is panel.filter_proxy
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=5_000)
    assert panel.select_fact("m_1235") and panel.current_fact().id == "m_1235"
    panel.filter.clear()
    assert panel.view.model() is model and panel.filter_proxy.sourceModel() is None
    assert all(panel.view.isExpanded(model.index(r, 0)) for r in range(model.rowCount()))
    assert panel.select_fact("m_1200") and panel.current_fact().id == "m_1200"
    panel.model.reload()  # a reset with no filter: the blocks open again
    assert all(panel.view.isExpanded(model.index(r, 0)) for r in range(model.rowCount()))


def test_revealing_an_old_version_is_one_insert(qtmodeltester: Any) -> None:
    from nocturne_desktop.core.types import SleepRecord, Version
    from nocturne_desktop.ui.models.timeline import TimelineModel

    t0 = 1_700_000_000.0
    versions = [Version(s, "pass:dedupe:before", t0 + s, 10, (s + 1) // 2) for s in range(1, 1001)]
    sleeps = [SleepRecord(i, t0 + i, t0 + i + 1, False, "done", {}, {}) for i in range(1, 501)]
    model = TimelineModel()
    qtmodeltester.check(model)
    model.set_versions(versions, sleeps)
    inserts: list[int] = []
    model.rowsInserted.connect(lambda _p, a, b: inserts.append(b - a + 1))
    idx = model.reveal(205)  # sleep #103: three steps of SHOWN back
    assert idx.isValid() and model.version_at(idx) == versions[204]
    assert inserts == [3 * TimelineModel.SHOWN]  # fails before: one insert per step
    assert model.older == 500 - 4 * TimelineModel.SHOWN
    assert model.reveal(1).isValid() and model.older == 0 and inserts[1:] == [TimelineModel.SHOWN]
