"""The block tree model on its own (a list, no pager): qtmodeltester, a new list applied as row
changes, not a reset, the text filter, superseded facts, the block labels and the salience."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from nocturne_desktop.core.types import BLOCKS, Fact
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from nocturne_desktop.ui.models.tree import BlockTreeModel, FactFilterProxy
from tests.ui.modelkit import T0, Recorder, fact


def test_block_tree_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = BlockTreeModel(clock=lambda: T0 + 86400 * 3 + 60)
    model.set_facts([fact(1, "human"), fact(2), fact(3, "episodes", category="event"),
                     fact(4, active=False)])
    qtmodeltester.check(model)
    model.set_show_forgotten(True)
    qtmodeltester.check(model)
    assert model.rowCount() == len(BLOCKS)
    scratch = model.index(BLOCKS.index("scratch"), 0)
    assert model.rowCount(scratch) == 2
    assert model.data(scratch) == "scratch  (1 active, 1 forgotten)"
    forgotten = model.index(1, 0, scratch)
    assert model.data(forgotten, ROLE_OBJECT).id == "m_4"
    assert model.data(forgotten, Qt.ItemDataRole.ForegroundRole) is not None  # greyed
    assert model.data(model.index(0, 2, scratch)) == "3 d"


def test_block_tree_applies_a_diff_not_a_reset(qtmodeltester: Any) -> None:
    model = BlockTreeModel()
    qtmodeltester.check(model)  # keeps checking while rows change below
    model.set_facts([fact(1), fact(2), fact(3)])
    rec = Recorder(model)
    # m_2 promoted to human, m_3 text merged, m_5 added, m_1 forgotten (hidden)
    model.set_facts([fact(1, active=False), fact(2, "human"), fact(3, text="merged text"), fact(5)])
    assert "reset" not in rec.events
    assert any(e.startswith("remove") for e in rec.events)
    assert any(e.startswith("insert") for e in rec.events)
    scratch = model.index(BLOCKS.index("scratch"), 0)
    assert [f.id for f in model.facts("scratch")] == ["m_3", "m_5"]
    assert model.data(model.index(0, 0, scratch)) == "merged text"
    assert [f.id for f in model.facts("human")] == ["m_2"]
    # same data again: nothing at all is emitted
    rec.events.clear()
    model.set_facts([fact(1, active=False), fact(2, "human"), fact(3, text="merged text"), fact(5)])
    assert rec.events == []


def test_filter_proxy_is_recursive_and_case_insensitive(qtmodeltester: Any) -> None:
    model = BlockTreeModel()
    model.set_facts([fact(1, "human", "Lives in LISBON"), fact(2, text="likes tea"),
                     fact(3, "episodes", "went to Porto", category="event")])
    proxy = FactFilterProxy()
    proxy.setSourceModel(model)
    proxy.setFilterFixedString("lisbon")
    qtmodeltester.check(proxy)
    assert proxy.rowCount() == 1
    block = proxy.index(0, 0)
    assert proxy.data(block).startswith("human")
    assert proxy.rowCount(block) == 1
    proxy.setFilterFixedString("event")  # the category column matches too
    assert proxy.rowCount() == 1 and proxy.data(proxy.index(0, 0)).startswith("episodes")
    proxy.setFilterFixedString("")
    assert proxy.rowCount() == len(BLOCKS)


def test_invalid_index_is_harmless() -> None:
    model = BlockTreeModel()
    assert model.data(QModelIndex()) is None
    assert model.fact_at(QModelIndex()) is None


def test_a_superseded_fact_is_struck_through_with_its_interval_and_successor(
        qtmodeltester: Any) -> None:
    from dataclasses import replace

    from nocturne_desktop.ui.models.text import superseded_note

    old = replace(fact(1, "human", "User lives in Lisbon", active=False),
                  valid_until=T0 + 86400, superseded_by="m_41")
    model = BlockTreeModel(clock=lambda: T0 + 86400 * 3)
    model.set_facts([old, fact(41, "human", "User lives in Porto")])
    model.set_show_forgotten(True)
    qtmodeltester.check(model)
    human = model.index(BLOCKS.index("human"), 0)
    row = next(model.index(r, 0, human) for r in range(model.rowCount(human))
               if model.data(model.index(r, 0, human), ROLE_OBJECT).id == "m_1")
    text = model.data(row)
    assert text.startswith("User lives in Lisbon  — until ") and text.endswith("superseded by m_41")
    assert model.data(row, Qt.ItemDataRole.FontRole).strikeOut()
    assert "superseded (until" in model.data(row, Qt.ItemDataRole.ToolTipRole)
    assert superseded_note(fact(2)) == ""


def test_the_block_label_counts_superseded_facts_apart_from_forgotten_ones(
        qtmodeltester: Any) -> None:
    """A correction is not a forgetting: the block label says "1 superseded", not "forgotten"."""
    from dataclasses import replace

    old = replace(fact(1, "human", "User lives in Lisbon", active=False),
                  valid_until=T0 + 86400, superseded_by="m_41")
    model = BlockTreeModel(clock=lambda: T0 + 86400 * 3)
    model.set_facts([old, fact(41, "human", "User lives in Porto"), fact(2, "human")])
    qtmodeltester.check(model)
    human = model.index(BLOCKS.index("human"), 0)
    assert model.data(human) == "human  (2 active, 1 superseded)"
    changed: list[int] = []
    model.dataChanged.connect(lambda a, b, roles=(): changed.append(a.row()))
    model.set_facts([old, fact(41, "human", "User lives in Porto"),
                     fact(2, "human", active=False)])  # m_2 forgotten: the label updates
    assert model.data(human) == "human  (1 active, 1 superseded, 1 forgotten)"
    assert BLOCKS.index("human") in changed


def test_block_tree_shows_each_facts_salience_and_its_terms(qtmodeltester: Any) -> None:
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.types import Strength

    now = 1_700_000_000.0
    model = BlockTreeModel(clock=lambda: now)
    a = Fact("m_1", "episodes", "Maya ran the Bristol 10k.", "event", None, now - 15 * 86400,
             now - 15 * 86400, True)
    b = Fact("m_2", "episodes", "Maya had soup on Saturday.", "event", None, now - 15 * 86400,
             now - 15 * 86400, True)
    model.set_facts([a, b], strengths={
        "m_1": Strength(importance=4, uses=1, strength=1.0, last_used_at=now - 30 * 86400),
        "m_2": Strength(importance=1)}, policy=RetentionPolicy(stale_after_days=30))
    qtmodeltester.check(model)
    col = BlockTreeModel.SALIENCE_COLUMN
    assert model.headerData(col, Qt.Orientation.Horizontal) == "Salience"
    parent = model.index(2, 0)  # episodes
    # 30 + 15 recency + 15 importance + 5 use; 30 + 15 - 30
    assert [model.data(model.index(r, col, parent)) for r in range(2)] == ["65.0", "15.0"]
    tip = html.unescape(model.data(model.index(0, 0, parent), Qt.ItemDataRole.ToolTipRole))
    assert ("salience 65.0 = episodes 30 + recency 15.0 + importance 4 → +15 + use 5.0 "
            "(1 recall, last 30 d ago)") in tip
    # without strengths the category's usual importance stands in, and says so
    rec = Recorder(model)
    model.set_facts([a], strengths={})
    assert rec.events  # the salience column is told it changed
    tip = html.unescape(model.data(model.index(0, 0, parent), Qt.ItemDataRole.ToolTipRole))
    assert "importance 3 (the category's usual) → +0 + use 0 (never recalled)" in tip
