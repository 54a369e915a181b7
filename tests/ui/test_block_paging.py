"""The block tree's paging without Qt: a page per block first, more in pages, a window of rows per
block and in all (the far rows dropped and read back), a fact far away revealed, a commit
applied by id, a list applied as its difference; every change told as events in the order a Qt
model needs. The last test runs this file again with PySide6 blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import BLOCKS, FactDraft, Strength
from nocturne_desktop.ui.models.pagers import StatePager, StorePager
from nocturne_desktop.ui.models.paging import BlockPaging, PagingEvents
from tests.ui.modelkit import fact


class Shadow(PagingEvents):
    """A view that keeps its own copy of the rows from the events alone (as a Qt view does) and
    checks each ``*ing`` is followed by its ``*ed`` before anything else; ``log`` lists them."""

    def __init__(self) -> None:
        self.paging: BlockPaging | None = None
        self.rows: dict[str, list[str]] = {b: [] for b in BLOCKS}
        self.log: list[tuple[object, ...]] = []
        self.open: tuple[str, str, int, int] | None = None
        self.asked_during: list[bool] = []
        """What ``can_fetch`` answered inside each ``*ed`` handler."""

    def _ids(self, block: str) -> list[str]:
        assert self.paging is not None
        return [f.id for f in self.paging.rows[block]]

    def _begin(self, kind: str, block: str, first: int, last: int) -> None:
        assert self.open is None, f"{kind} inside {self.open}"
        assert 0 <= first <= last
        self.open = (kind, block, first, last)
        self.log.append((kind, block, first, last))

    def _end(self, kind: str, block: str) -> tuple[int, int]:
        assert self.open is not None and self.open[:2] == (kind, block), (kind, self.open)
        _k, _b, first, last = self.open
        self.open = None
        assert self.paging is not None
        self.asked_during.append(self.paging.can_fetch(block))
        return first, last

    def resetting(self) -> None:
        assert self.open is None
        self.open = ("reset", "", 0, 0)
        self.log.append(("resetting",))

    def reset(self) -> None:
        assert self.open == ("reset", "", 0, 0)
        self.open = None
        self.log.append(("reset",))
        self.rows = {b: self._ids(b) for b in BLOCKS}

    def inserting(self, block: str, first: int, last: int) -> None:
        assert first <= len(self.rows[block])
        self._begin("insert", block, first, last)

    def inserted(self, block: str) -> None:
        first, last = self._end("insert", block)
        self.rows[block][first:first] = self._ids(block)[first : last + 1]
        assert len(self.rows[block]) == len(self._ids(block))

    def removing(self, block: str, first: int, last: int) -> None:
        assert last < len(self.rows[block])
        self._begin("remove", block, first, last)

    def removed(self, block: str) -> None:
        first, last = self._end("remove", block)
        del self.rows[block][first : last + 1]
        assert len(self.rows[block]) == len(self._ids(block))

    def changed(self, block: str, first: int, last: int) -> None:
        assert self.open is None and last < len(self.rows[block])
        self.log.append(("changed", block, first, last))

    def salience_changed(self, block: str, first: int, last: int) -> None:
        assert self.open is None and last < len(self.rows[block])
        self.log.append(("salience", block, first, last))

    def counted(self, block: str) -> None:
        assert self.open is None
        self.log.append(("counted", block))

    def same(self) -> bool:
        """Whether the copy made from the events is what the paging holds."""
        return self.open is None and self.rows == {b: self._ids(b) for b in BLOCKS}

    def take(self) -> list[tuple[object, ...]]:
        out, self.log = self.log, []
        return out


def make(page: int = 5, window: int | None = None, total: int | None = None) -> tuple[BlockPaging, Shadow]:
    shadow = Shadow()
    paging = BlockPaging(shadow, page=page, window=window, total=total)
    shadow.paging = paging
    return paging, shadow


def nums(paging: BlockPaging, block: str = "scratch") -> list[int]:
    return [reads.num_of(f.id) for f in paging.rows[block]]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        yield s


def seed(store: Store, n: int, block: str = "scratch") -> None:
    with store.transaction():
        for i in range(n):
            store.append(block, FactDraft(f"Fact number {i} about item{i}.", "context", None,
                                          time.time()))


def follow(paging: BlockPaging, store: Store) -> None:
    paging.apply_changes(reads.read_changed(store, store.last_changes))


# --- paging -------------------------------------------------------------------------------------


def test_a_block_shows_a_page_first_and_fetches_the_rest_a_page_at_a_time() -> None:
    paging, shadow = make(page=5)
    paging.attach(StatePager([fact(n) for n in range(1, 13)]))
    assert shadow.take() == [("resetting",), ("reset",)] and shadow.same()
    assert nums(paging) == [1, 2, 3, 4, 5] and paging.more["scratch"] and paging.cursor["scratch"] == 5
    assert paging.counts["scratch"] == (12, 0, 0) and paging.fetches == 0
    assert paging.fetch_page("scratch")
    assert shadow.take() == [("insert", "scratch", 5, 9)] and shadow.same()
    assert paging.fetch_page("scratch") and not paging.more["scratch"]
    assert not paging.fetch_page("scratch") and not paging.can_fetch("scratch")
    assert nums(paging) == list(range(1, 13)) and paging.fetches == 2
    assert not paging.has_children("human") and paging.has_children("scratch")


def test_nothing_is_fetched_inside_a_change_s_handlers() -> None:
    paging, shadow = make(page=5)
    paging.attach(StatePager([fact(n) for n in range(1, 20)]))
    paging.fetch_all("scratch")
    assert shadow.asked_during and not any(shadow.asked_during)  # a view asking mid-change
    assert not paging.hold_fetch


def test_past_the_window_the_far_rows_go_and_scrolling_back_reads_them_again() -> None:
    paging, shadow = make(page=5, window=15)
    paging.attach(StatePager([fact(n) for n in range(1, 61)]))
    for _ in range(2):
        paging.fetch_page("scratch")
    shadow.take()
    paging.fetch_page("scratch")  # the fourth page: the first one goes, in one remove first
    assert shadow.take() == [("remove", "scratch", 0, 4), ("insert", "scratch", 10, 14)]
    assert nums(paging) == list(range(6, 21)) and paging.floor["scratch"] == 5
    paging.fetch_all("scratch")
    assert nums(paging) == list(range(46, 61)) and paging.floor["scratch"] == 45
    assert shadow.same() and paging.can_fetch_earlier("scratch")
    shadow.take()
    assert paging.fetch_earlier("scratch") == 5  # the end goes, the page above comes back
    assert shadow.take() == [("remove", "scratch", 10, 14), ("insert", "scratch", 0, 4)]
    assert nums(paging) == list(range(41, 56))
    assert paging.floor["scratch"] == 40 and paging.cursor["scratch"] == 55 and paging.more["scratch"]
    while paging.fetch_earlier("scratch"):
        pass
    assert nums(paging) == list(range(1, 16)) and paging.floor["scratch"] == 0 and shadow.same()
    assert not paging.can_fetch_earlier("scratch")


def test_past_the_total_the_other_blocks_keep_a_page_next_to_the_one_fetched() -> None:
    facts = [fact(n, b) for i, b in enumerate(BLOCKS) for n in range(100 * i + 1, 100 * i + 31)]
    paging, shadow = make(page=5, window=15, total=25)
    paging.attach(StatePager(facts))

    def total() -> int:
        return sum(len(r) for r in paging.rows.values())

    paging.fetch_page("scratch")
    paging.fetch_page("scratch")  # past the total, but each other block holds one page only
    assert len(paging.rows["scratch"]) == 15 and total() == 30
    shadow.take()
    paging.fetch_page("human")  # the farthest block first; one below keeps its start
    assert shadow.take() == [("remove", "scratch", 5, 14), ("insert", "human", 5, 9)]
    assert nums(paging, "scratch") == list(range(301, 306)) and paging.more["scratch"]
    assert paging.cursor["scratch"] == 305 and total() == 25
    paging.fetch_page("scratch")  # a block above keeps its end (the rows next to scratch)
    assert shadow.take() == [("remove", "human", 0, 4), ("insert", "scratch", 5, 9)]
    assert nums(paging, "human") == list(range(106, 111)) and paging.floor["human"] == 105
    assert total() == 25 and shadow.same()


def test_reveal_reads_up_to_a_fact_or_the_pages_around_a_far_one() -> None:
    paging, shadow = make(page=5, window=15)
    paging.attach(StatePager([fact(n) for n in range(1, 101)]))
    assert paging.reveal("m_12") == ("scratch", 11)  # one read up to it
    assert nums(paging) == list(range(1, 13)) and paging.fetches == 1
    assert paging.reveal("m_90") == ("scratch", 5)  # far: the page before it and from it
    assert nums(paging) == list(range(85, 95)) and paging.floor["scratch"] == 84
    assert paging.more["scratch"] and shadow.same()
    assert paging.reveal("m_3") == ("scratch", 2)  # dropped by the window: read around it
    assert nums(paging) == list(range(1, 8)) and paging.floor["scratch"] == 0
    assert paging.reveal("m_1000") is None and paging.reveal("m_3") == ("scratch", 2)
    assert shadow.same()


def test_a_forgotten_fact_is_revealed_only_while_forgotten_ones_show() -> None:
    paging, _shadow = make(page=5)
    paging.attach(StatePager([*(fact(n) for n in range(1, 20)), fact(20, active=False)]))
    assert paging.reveal("m_20") is None
    paging.set_show_forgotten(True)
    assert paging.reveal("m_20") == ("scratch", 19)
    assert paging.counts["scratch"] == (19, 0, 1)


def test_held_rows_show_again_without_a_read() -> None:
    paging, shadow = make(page=5)
    live = StatePager([fact(n) for n in range(1, 30)])
    paging.attach(live)
    paging.fetch_page("scratch")
    held = paging.loaded()
    assert held is not None and held.pager is live
    paging.attach(StatePager([fact(n, "human") for n in range(1, 4)]))
    assert paging.show_loaded(held) and nums(paging) == list(range(1, 11)) and shadow.same()
    assert paging.pager is live and paging.fetches == 0
    paging.set_show_forgotten(True)
    assert not paging.show_loaded(held)  # read with the other setting: not shown


def test_the_first_pages_are_kept_without_a_read_unless_the_top_was_dropped() -> None:
    paging, shadow = make(page=5, window=15)
    paging.attach(StatePager([fact(n) for n in range(1, 40)]))
    paging.fetch_page("scratch")
    assert paging.keep_first_pages() and nums(paging) == [1, 2, 3, 4, 5]
    assert paging.cursor["scratch"] == 5 and paging.more["scratch"] and shadow.same()
    paging.fetch_all("scratch")
    assert not paging.keep_first_pages()  # its first page is gone
    paging.set_facts([fact(1)])
    assert not paging.keep_first_pages()  # a list, not pages


# --- following the store by id ------------------------------------------------------------------


def test_a_commit_becomes_row_inserts_changes_and_removes(store: Store) -> None:
    seed(store, 8)
    paging, shadow = make(page=5)
    paging.attach(StorePager(store))
    paging.fetch_all("scratch")
    shadow.take()
    store.append("scratch", FactDraft("The user plays the oboe.", "preferences", None, time.time()))
    follow(paging, store)
    assert shadow.take() == [("insert", "scratch", 8, 8), ("counted", "scratch")]
    store.edit("m_3", text="The user plays the cello.")
    follow(paging, store)
    assert shadow.take() == [("changed", "scratch", 2, 2)]
    assert paging.rows["scratch"][2].text == "The user plays the cello."
    store.forget("m_4")
    follow(paging, store)
    assert shadow.take() == [("remove", "scratch", 3, 3), ("counted", "scratch")]
    assert paging.counts["scratch"] == (8, 0, 1)
    store.edit("m_5", block="human")
    follow(paging, store)
    assert shadow.take() == [("remove", "scratch", 3, 3), ("insert", "human", 0, 0),
                             ("counted", "human"), ("counted", "scratch")]
    store.set_importance("m_6", 5)  # only its strength: the salience cell
    follow(paging, store)
    assert shadow.take() == [("salience", "scratch", 3, 3)]
    assert paging.strengths["m_6"].importance == 5
    assert shadow.same() and paging.position("m_5") == ("human", 0)
    assert paging.fetches == 1  # every change applied by id, no page read again


def test_a_fact_past_the_cursor_waits_for_its_page(store: Store) -> None:
    seed(store, 12)
    paging, shadow = make(page=5)
    paging.attach(StorePager(store))
    shadow.take()
    store.append("scratch", FactDraft("A new one.", "context", None, time.time()))
    follow(paging, store)
    assert shadow.take() == [("counted", "scratch")]  # counted, not loaded
    assert paging.position("m_13") is None and paging.counts["scratch"] == (13, 0, 0)
    paging.fetch_all("scratch")
    assert paging.position("m_13") == ("scratch", 12) and shadow.same()


def test_counts_are_read_from_the_pager_when_a_change_is_not_loaded(store: Store) -> None:
    seed(store, 12)
    paging, shadow = make(page=5)
    paging.attach(StorePager(store))
    store.forget("m_11")  # beyond the cursor: its old state is not loaded
    rows = reads.read_changed(store, store.last_changes, counts=False)
    paging.apply_changes(rows)
    assert paging.counts["scratch"] == (11, 0, 1) and shadow.same()


def test_a_change_too_big_for_rows_reads_the_first_pages_again(store: Store) -> None:
    seed(store, 12)
    paging, shadow = make(page=5)
    paging.attach(StorePager(store))
    paging.fetch_page("scratch")
    shadow.take()
    store.forget("m_1")
    paging.apply_changes(reads.ChangedRows(store.last_changes, complete=False))
    assert shadow.take() == [("resetting",), ("reset",)]
    assert nums(paging) == [2, 3, 4, 5, 6] and paging.counts["scratch"] == (11, 0, 1)


# --- from a list --------------------------------------------------------------------------------


def test_a_list_is_applied_as_its_difference_and_a_scattered_one_as_a_reset() -> None:
    paging, shadow = make(page=5)
    paging.set_facts([fact(n) for n in range(1, 8)])
    assert shadow.take() == [("insert", "scratch", 0, 6), ("counted", "scratch")]
    paging.set_facts([*(fact(n) for n in (1, 2, 4, 5, 6, 7, 8)), fact(9, "human")])
    # per block; within one, from the end, so the earlier row numbers stay right
    assert shadow.take() == [("insert", "human", 0, 0), ("counted", "human"),
                             ("insert", "scratch", 7, 7), ("remove", "scratch", 2, 2)]
    assert shadow.same()
    paging.set_facts([*(fact(n) for n in (1, 2, 4, 6, 7, 8)), fact(5, text="changed"),
                      fact(9, "human")])
    assert shadow.take() == [("changed", "scratch", 3, 3)]
    scattered = [fact(n) for n in range(1, 1000, 2)]
    paging.set_facts(scattered)
    paging.set_facts([fact(n) for n in range(1, 1000, 4)])  # 250 ranges removed
    log = shadow.take()
    assert log[-2:] == [("resetting",), ("reset",)] and shadow.same()
    assert paging.facts("scratch") == [fact(n) for n in range(1, 1000, 4)]


def test_new_strengths_in_a_list_change_the_salience_cells() -> None:
    paging, shadow = make(page=5)
    facts = [fact(n) for n in range(1, 4)]
    paging.set_facts(facts)
    shadow.take()
    paging.set_facts(facts, strengths={"m_2": Strength(5, 0, 0.0, None)})
    assert shadow.take() == [("salience", "scratch", 0, 2)]
    paging.set_facts(facts, salience_moved=True)  # the caller's policy changed
    assert shadow.take() == [("salience", "scratch", 0, 2)]
    paging.set_facts(facts)
    assert shadow.take() == []


# --- without Qt ---------------------------------------------------------------------------------

BLOCKED = r"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'PySide6', 'shiboken6'}:
            raise ImportError('blocked: ' + name)
        return None
sys.meta_path.insert(0, Block())
import pytest
code = pytest.main(sys.argv[1:])
assert not [m for m in sys.modules if m.split('.')[0] == 'PySide6']
sys.exit(code)
"""


def test_these_tests_pass_with_qt_blocked(tmp_path: Path) -> None:
    if os.environ.get("NOCTURNE_PAGING_QT_BLOCKED"):
        pytest.skip("already the run with Qt blocked")
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "NOCTURNE_PAGING_QT_BLOCKED": "1"}
    out = subprocess.run(
        [sys.executable, "-c", BLOCKED, "-q", "-p", "no:cacheprovider", "--noconftest",
         "-c", str(ini), "--rootdir", str(root), str(Path(__file__).resolve())],
        capture_output=True, text=True, check=False, cwd=root, env=env, timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " passed" in out.stdout and "1 skipped" in out.stdout
