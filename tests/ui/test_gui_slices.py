"""The GUI-thread work of a past version, the filter and a replaced result, kept small
(S-SCALE: the window's longest gap ≤ 50 ms at 100,000 facts; ``bench.bench_ui --scale``).

Each test names what it pins; all but the paging one fail on the code before (which had no
``release_later``, held a past version's state as Fact objects, fetched pages while a filter's
search ran and re-read the first pages to trim them)."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.store import reads
from nocturne_desktop.core.types import BLOCKS, Fact
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models import release
from nocturne_desktop.ui.models.pagers import StatePager, StorePager
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from nocturne_desktop.ui.models.tree import BlockTreeModel
from tests.ui.modelkit import PAGE, block_index, seed_many


def _facts(n: int) -> list[Fact]:
    now = time.time()
    out = []
    for i in range(1, n + 1):
        block = BLOCKS[i % len(BLOCKS)]
        active = i % 7 != 0
        out.append(Fact(f"m_{i}", block, f"Fact {i} about item{i}.", "context", i, now - i, now,
                        active, i % 11 == 0, None if active or i % 2 else now,
                        None if active or i % 2 else f"m_{i + 1}"))
    return out


def test_a_past_versions_state_pages_through_every_fact_as_it_was() -> None:
    facts = _facts(3_000)
    pager = StatePager(list(facts))
    for inactive in (False, True):
        for b in BLOCKS:
            want = sorted((f for f in facts if f.block == b and (inactive or f.active)),
                          key=lambda f: int(f.id[2:]))
            got: list[Fact] = []
            after, more = 0, True
            while more:
                page, more = pager.page(b, after, 100, inactive)
                got += page
                after = int(page[-1].id[2:]) if page else after
            assert got == want
            if want:  # and backwards from the end
                back, less = pager.page_before(b, int(want[-1].id[2:]) + 1, 50, inactive)
                assert back == want[-50:] and less == (len(want) > 50)
                assert pager.page(b, 0, 10, inactive, upto=int(want[20].id[2:]))[0] == want[:21]
    assert pager.locate("m_77") == facts[76] and pager.locate("m_99999") is None
    counts = pager.counts()
    assert sum(c[0] for c in counts.values()) == sum(f.active for f in facts)
    assert sum(c[1] + c[2] for c in counts.values()) == sum(not f.active for f in facts)


def _facts_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Fact)


def test_a_past_versions_state_keeps_no_fact_objects_for_the_collector() -> None:
    before = _facts_alive()  # other tests' windows may still hold some
    facts = _facts(6_000)
    pager = StatePager(facts)
    del facts
    alive = _facts_alive() - before
    # the first page per block made on the job's thread, not one object per fact
    assert alive <= 2 * len(BLOCKS) * StatePager.PREBUILT < 6_000
    assert pager.page("scratch", 0, 10, True)[0]  # still every fact, made when read


def test_release_later_frees_a_slice_per_turn(qtbot: Any) -> None:
    big = list(range(3 * release.RELEASE_SLICE + 5))
    table = {i: str(i) for i in range(release.RELEASE_SLICE + 1)}
    release.release_later(big, table)
    left = release.release_some()  # one turn
    assert left == len(big) + len(table) and len(big) == 2 * release.RELEASE_SLICE + 5
    qtbot.waitUntil(lambda: not big and not table, timeout=5_000)  # the rest, turn by turn


def test_a_state_the_tree_let_go_is_freed_in_slices(qtbot: Any) -> None:
    model = BlockTreeModel()
    pager = StatePager(_facts(3 * release.RELEASE_SLICE))
    model.attach(pager)
    model.attach(StatePager(_facts(10)))
    assert pager.empty and pager.page("scratch", 0, 10**6, True)[0]  # not freed in the slot
    qtbot.waitUntil(lambda: not pager.page("scratch", 0, 10**6, True)[0], timeout=5_000)


def test_no_page_is_fetched_while_a_filters_search_runs(
        qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_many(db_path, 1_300)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    release = []
    original = reads.matching_ids

    def slow(*a: Any, **kw: Any) -> Any:  # the search waits until the test lets it finish
        qtbot_deadline = time.monotonic() + 10
        while not release and time.monotonic() < qtbot_deadline:
            time.sleep(0.01)
        return original(*a, **kw)

    monkeypatch.setattr(reads, "matching_ids", slow)
    panel.filter.setText("item12")  # 11 matches in the first page: the rows end on screen
    try:
        assert panel.filter_pending
        fetched = model.fetches
        panel.fetch_visible()
        qtbot.wait(50)
        assert model.fetches == fetched  # fails before: pages fetched, then replaced
    finally:
        release.append(True)
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=10_000)
    model.fetch_all("scratch")
    proxy = panel.proxy
    scratch = next(proxy.index(r, 0) for r in range(proxy.rowCount())
                   if proxy.index(r, 0).data(ROLE_OBJECT) == "scratch")
    hits = {panel.proxy.index(r, 0, scratch).data(ROLE_OBJECT).id
            for r in range(panel.proxy.rowCount(scratch))}
    want = {f"m_{n + 1}" for n in (12, *range(120, 130), *range(1200, 1300))}
    assert hits == want  # every match, also those beyond the first page


def test_the_filter_trims_a_deep_tree_without_reading_it_again(
        qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_many(db_path, 2_600)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    for _ in range(3):
        model.fetch_page("scratch")
    gui_pages: list[str] = []
    original = StorePager.page

    def page(self: StorePager, block: str, *a: Any, **kw: Any) -> Any:
        gui_pages.append(block)
        return original(self, block, *a, **kw)

    monkeypatch.setattr(StorePager, "page", page)
    first = [f.id for f in model.facts("scratch")[:PAGE]]
    panel.filter.setText("item2555.")
    assert gui_pages == []  # fails before: the first page of every block read again
    assert [f.id for f in model.facts("scratch")] == first and model.canFetchMore(
        block_index(model, "scratch"))
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=5_000)
    panel.filter.clear()  # the first pages shown again, not read again
    assert gui_pages == [] and [f.id for f in model.facts("scratch")] == first
    assert type(model.pager) is StorePager
    monkeypatch.setattr(StorePager, "page", original)
    model.fetch_all("scratch")  # and the live tree still reaches every fact
    assert len(model.facts("scratch")) == 2_600
    # a change while the filter shows: clearing it reads the pages (nothing stale is shown)
    panel.filter.setText("item2555.")
    qtbot.waitUntil(lambda: not panel.filter_pending, timeout=5_000)
    win.session.hand("edit", "m_2", text="Edited while filtered.")
    panel.filter.clear()
    assert model.facts("scratch")[1].text == "Edited while filtered."


def test_the_tree_answers_the_roles_a_paint_asks(qtbot: Any, make_window: Any,
                                                  db_path: Path) -> None:
    seed_many(db_path, 5)
    win = make_window(Settings())
    model = win.memory.model
    win.session.hand("forget_now", "m_2")
    model.set_show_forgotten(True)
    scratch = block_index(model, "scratch")
    active, gone = model.index(0, 0, scratch), model.index(1, 0, scratch)
    R = Qt.ItemDataRole
    for idx in (active, gone, scratch):
        for role in (R.DecorationRole, R.CheckStateRole, R.BackgroundRole, R.SizeHintRole):
            assert model.data(idx, role) is None
    assert model.data(active, R.FontRole) is None and model.data(active, R.ForegroundRole) is None
    font = model.data(gone, R.FontRole)
    assert font.strikeOut() and font.italic() and model.data(gone, R.ForegroundRole) is not None
    assert model.data(scratch, R.FontRole).bold()
    assert model.data(model.index(0, 2, scratch), R.TextAlignmentRole) == int(
        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    assert model.data(active, R.TextAlignmentRole) is None


def test_back_to_live_shows_the_live_rows_again_without_a_read(
        qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.ui.test_tree_counts import snapshot

    seed_many(db_path, 1_300)
    snapshot(db_path)
    win = make_window(Settings())
    panel, model = win.memory, win.memory.model
    model.fetch_page("scratch")
    live = [f.id for f in model.facts("scratch")]
    assert len(live) == 2 * PAGE
    win.timeline.select_version(win.session.store.versions()[0].seq)
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    gui_pages: list[str] = []
    original = StorePager.page

    def page(self: StorePager, block: str, *a: Any, **kw: Any) -> Any:
        gui_pages.append(block)
        return original(self, block, *a, **kw)

    monkeypatch.setattr(StorePager, "page", page)
    win.back_to_live()
    assert gui_pages == []  # fails before: the first page of every block read (and made) again
    assert panel.viewing is None and [f.id for f in model.facts("scratch")] == live
    assert isinstance(model.pager, StorePager) and model.canFetchMore(block_index(model, "scratch"))
    model.fetch_all("scratch")
    assert len(model.facts("scratch")) == 1_300
    # a change while a version shows: the way back reads the pages (nothing stale is shown)
    win._on_version_selected(win.timeline.current_version())  # the same version, read again
    qtbot.waitUntil(lambda: panel.viewing is not None, timeout=10_000)
    win.session.hand("edit", "m_3", text="Edited while a version showed.")
    win.back_to_live()
    assert gui_pages and model.facts("scratch")[2].text == "Edited while a version showed."
