"""The block tree keeps a window of loaded rows per block: scrolling deep into a big block drops
the pages far above (QTreeView lays out every row it holds after each page, so a page's cost
would grow with the rows loaded), scrolling back reads them again, and a fact dropped is still
reached by ``select_fact``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models.pagers import StorePager
from nocturne_desktop.ui.models.tree import BlockTreeModel
from tests.ui.modelkit import block_index, seed_many

pytestmark = pytest.mark.timeout(120)

N = 5_000
WINDOW = BlockTreeModel.WINDOW


def test_scrolling_a_big_block_keeps_a_window_and_reaches_every_fact(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_many(db_path, N)
    win = make_window(Settings())
    win.resize(900, 700)
    panel, model = win.memory, win.memory.model
    win.tabs.setCurrentWidget(panel)
    qtbot.waitExposed(win)
    scratch = block_index(model, "scratch")
    most = [0]
    model.rowsInserted.connect(lambda p, _a, _b: most.__setitem__(
        0, max(most[0], model.rowCount(p))))
    bar = panel.view.verticalScrollBar()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a person paging down to the end
        if bar.value() >= bar.maximum() and not model.canFetchMore(scratch):
            break
        bar.setValue(bar.value() + bar.pageStep())
        qtbot.wait(1)
    assert not model.canFetchMore(scratch)
    assert model.facts("scratch")[-1].id == f"m_{N}"
    assert most[0] <= WINDOW  # fails before: every fact loaded (5,000 rows)
    assert model.rowCount(scratch) <= WINDOW and model.can_fetch_earlier("scratch")
    assert not model.index_of("m_1").isValid()  # dropped

    deadline = time.monotonic() + 60
    while model.can_fetch_earlier("scratch") and time.monotonic() < deadline:  # and back up
        bar.setValue(bar.value() - bar.pageStep())
        qtbot.wait(1)
    bar.setValue(0)
    qtbot.wait(10)
    assert not model.can_fetch_earlier("scratch") and most[0] <= WINDOW
    first = model.index_of("m_1")
    assert first.isValid() and first.row() == 0
    assert panel.view.visualRect(first).intersects(panel.view.viewport().rect())  # on screen
    assert [f.id for f in model.facts("scratch")] == [f"m_{n}" for n in range(1, model.rowCount(
        scratch) + 1)]  # no gap

    # a fact dropped at the end, then one dropped at the top, then one far below: each selected
    for item_id in (f"m_{N - 100}", "m_10", f"m_{N - 20}", "m_2500"):
        assert panel.select_fact(item_id)
        assert panel.current_fact() is not None and panel.current_fact().id == item_id
        assert model.rowCount(scratch) <= WINDOW
        nums = [int(f.id[2:]) for f in model.facts("scratch")]
        assert nums == list(range(nums[0], nums[0] + len(nums)))  # a contiguous run


def test_the_window_passes_the_model_tester_and_follows_changes(
        qtmodeltester: Any, db_path: Path) -> None:
    seed_many(db_path, N)
    with Store(db_path) as store:
        model = BlockTreeModel()
        model.attach(StorePager(store))
        qtmodeltester.check(model)  # keeps checking while rows change below
        scratch = block_index(model, "scratch")
        model.fetch_all("scratch")
        assert model.rowCount(scratch) == WINDOW and model.facts("scratch")[-1].id == f"m_{N}"
        assert model.facts("scratch")[0].id == f"m_{N - WINDOW + 1}"
        # a change to a dropped fact waits for its page; one to a loaded fact is applied
        store.edit("m_3", text="Dropped, then edited.")
        model.apply_changes(reads.read_changed(store, store.last_changes))
        store.edit(f"m_{N}", text="Loaded, edited.")
        model.apply_changes(reads.read_changed(store, store.last_changes))
        assert model.facts("scratch")[-1].text == "Loaded, edited."
        assert not model.index_of("m_3").isValid()
        while model.fetch_earlier("scratch"):
            assert model.rowCount(scratch) <= WINDOW
        assert not model.can_fetch_earlier("scratch") and model.canFetchMore(scratch)
        assert model.facts("scratch")[0].id == "m_1"
        assert model.facts("scratch")[2].text == "Dropped, then edited."
        assert model.data(scratch) == f"scratch  ({N} active)"
        assert model.reveal("m_4990").isValid() and model.rowCount(scratch) <= WINDOW
        assert model.reveal("m_7").isValid() and model.rowCount(scratch) <= WINDOW
        model.set_show_forgotten(True)
        qtmodeltester.check(model)


@pytest.mark.timeout(480)  # a hang guard: ~40 s alone, far more beside a real model's tests
def test_the_rows_of_all_blocks_are_bounded_too(qtmodeltester: Any, db_path: Path) -> None:
    seed_many(db_path, 8_000, every=2, other="human")  # 4,000 human above 4,000 scratch
    with Store(db_path) as store:
        model = BlockTreeModel()
        model.attach(StorePager(store))
        qtmodeltester.check(model)
        human, scratch = block_index(model, "human"), block_index(model, "scratch")
        model.fetch_all("human")
        model.fetch_all("scratch")  # deep into the block below: the one above keeps its end
        total = sum(model.rowCount(model.index(r, 0)) for r in range(model.rowCount()))
        assert total <= BlockTreeModel.TOTAL and model.rowCount(scratch) == WINDOW
        assert model.rowCount(human) < WINDOW and model.can_fetch_earlier("human")
        assert model.facts("human")[-1].id == "m_7999"  # the rows next to scratch
        while model.fetch_earlier("human"):  # back up into it: scratch keeps its start
            total = sum(model.rowCount(model.index(r, 0)) for r in range(model.rowCount()))
            assert total <= BlockTreeModel.TOTAL
        assert model.facts("human")[0].id == "m_1"
        nums = [int(f.id[2:]) for f in model.facts("scratch")]  # its start: still one even run
        assert nums == list(range(nums[0], nums[0] + 2 * len(nums), 2))
        assert model.rowCount(scratch) < WINDOW and model.canFetchMore(scratch)
        assert model.reveal("m_4000").isValid() and model.reveal("m_8000").isValid()
        total = sum(model.rowCount(model.index(r, 0)) for r in range(model.rowCount()))
        assert total <= BlockTreeModel.TOTAL
