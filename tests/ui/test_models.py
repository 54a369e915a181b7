"""The item models on their own: qtmodeltester, and updates applied as row changes, not resets."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from nocturne_desktop.core.checks.quiz import QuizItem
from nocturne_desktop.core.sleep import PassFigures
from nocturne_desktop.core.types import (
    BLOCKS,
    Diff,
    DiffEntry,
    Fact,
    Mutation,
    MutationRow,
    SleepRecord,
    Version,
)
from nocturne_desktop.ui.models import (
    ROLE_OBJECT,
    BlockTreeModel,
    DiffTableModel,
    FactFilterProxy,
    PassTableModel,
    QuizTableModel,
    RejectedTableModel,
    TimelineModel,
    plain_tooltip,
)

T0 = 1_700_000_000.0


def fact(n: int, block: str = "scratch", text: str | None = None, active: bool = True,
         category: str = "context") -> Fact:
    return Fact(f"m_{n}", block, text or f"fact number {n}", category, n, T0 + n, T0 + n, active)


class Recorder:
    """Counts the structural signals a model emits."""

    def __init__(self, model: Any) -> None:
        self.events: list[str] = []
        model.rowsInserted.connect(lambda p, a, b: self.events.append(f"insert {a}-{b}"))
        model.rowsRemoved.connect(lambda p, a, b: self.events.append(f"remove {a}-{b}"))
        model.modelReset.connect(lambda: self.events.append("reset"))
        model.dataChanged.connect(lambda a, b, roles=(): self.events.append(f"changed {a.row()}"))


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


def versions(n: int, sleep_of: dict[int, int] | None = None) -> list[Version]:
    sleep_of = sleep_of or {}
    return [Version(s, f"label {s}", T0 + s, 10 - s // 3, sleep_of.get(s)) for s in range(1, n + 1)]


def test_timeline_groups_by_sleep_and_grows_by_inserts(qtmodeltester: Any) -> None:
    model = TimelineModel()
    qtmodeltester.check(model)
    sleeps = [SleepRecord(1, T0, T0 + 5, False, "done", {}, {})]
    vs = versions(5, {1: 1, 2: 1, 3: 1})
    model.set_versions(vs, sleeps)
    assert model.rowCount() == 2  # sleep #1, then the snapshots after it
    assert model.data(model.index(0, 0)).startswith("Sleep #1 · done")
    assert model.rowCount(model.index(0, 0)) == 3
    rec = Recorder(model)
    more = [*vs, Version(6, "restore:s0001", T0 + 6, 9, None),
            Version(7, "consolidation:start", T0 + 7, 9, 2)]
    model.set_versions(more, [*sleeps, SleepRecord(2, T0 + 7, None, False, "running", {}, {})])
    assert "reset" not in rec.events
    assert model.rowCount() == 3
    idx = model.index_of(7)
    assert model.version_at(idx).seq == 7
    assert model.sleep_of(idx) == 2
    assert model.sleep_of(model.index_of(6)) is None


def diff_fixture() -> Diff:
    a, b = fact(1), fact(2)
    changed = DiffEntry("m_3", "changed", fact(3), fact(3, text="merged"), "merge", None, "related",
                        "model", (fact(4),))
    forgotten = DiffEntry("m_5", "forgotten", fact(5), fact(5, active=False), "forget",
                          "stale-after-30d", "old", "policy-engine")
    added = DiffEntry("m_6", "added", None, fact(6))
    kept = DiffEntry("m_1", "kept", a, a)
    rej = MutationRow(1, Mutation("dedupe", "drop", "m_9", False, rejection_reason="never existed"),
                      4, 1, T0)
    del b
    return Diff(1, 4, (kept,), (changed,), (forgotten,), (added,), (rej,))


def test_diff_and_rejected_tables(qtmodeltester: Any) -> None:
    model = DiffTableModel()
    model.set_diff(diff_fixture())
    qtmodeltester.check(model)
    assert [model.data(model.index(r, 0)) for r in range(model.rowCount())] == [
        "changed m_3", "forgotten m_5", "added m_6"]
    assert model.data(model.index(1, 4)) == "⚙ retention-rule"  # an older label, shown by its new name
    assert model.data(model.index(0, 4)) == "model"
    assert model.data(model.index(1, 5)) == "stale-after-30d: old"  # policy, then the reason
    assert model.data(model.index(1, 2)).startswith("(forgotten) [scratch]")
    tip = model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole)
    assert "sources:" in tip and "m_4" in tip
    colours = {model.data(model.index(r, 0), Qt.ItemDataRole.BackgroundRole).name()
               for r in range(model.rowCount())}
    assert len(colours) == 3  # distinct colour per status
    model.set_show_kept(True)
    assert model.rowCount() == 4
    rejected = RejectedTableModel()
    rejected.set_rows(diff_fixture().rejected)
    qtmodeltester.check(rejected)
    assert rejected.data(rejected.index(0, 5)) == "never existed"


def test_pass_table_runs_a_timer_and_reports_figures(qtmodeltester: Any) -> None:
    t = [100.0]
    model = PassTableModel(clock=lambda: t[0])
    qtmodeltester.check(model)
    fig = PassFigures("dedupe", input=9, candidates=2)
    model.update_pass("dedupe", "running", fig)
    t[0] += 2.5
    assert model.data(model.index(0, 10)) == "2.5 s…"
    done = dataclasses.replace(fig, proposed=2, accepted=2, rejected=1, enforced=1, active_after=7,
                               snapshot_before="s0002", snapshot_after="s0003", elapsed_s=2.51)
    model.update_pass("dedupe", "done", done)
    row = [model.data(model.index(0, c)) for c in range(model.columnCount())]
    # of 2 proposals 1 accepted and 1 rejected; the rules' 1 change is By rules, not Accepted
    assert row == ["Dedupe", "done", "9", "2", "1", "1", "1", "7", "s0002", "s0003", "2.51 s"]
    model.mark_unfinished("cancelled")
    assert model.data(model.index(1, 1)) == "skipped"


def test_pass_table_shows_the_models_proposals_apart_from_the_rules_changes() -> None:
    """Fails on the old code: "Accepted" counted the rules' own changes too, so two proposals
    could read "Proposed 2 · Accepted 4 · Enforced 2"."""
    model = PassTableModel()
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert headers[2:8] == ["Input", "Proposed", "Accepted", "Rejected", "By rules", "Active after"]
    # the model proposed 2, both accepted; the rules made 2 changes of their own
    fig = PassFigures("dedupe", input=9, proposed=2, accepted=4, rejected=0, enforced=2, active_after=5)
    model.update_pass("dedupe", "done", fig)
    assert [model.data(model.index(0, c)) for c in (3, 4, 5, 6)] == ["2", "2", "0", "2"]
    # the model proposed 2, the gates refused both; the rules made 3 changes
    fig = PassFigures("merge", input=5, proposed=2, accepted=3, rejected=2, enforced=3, active_after=2)
    model.update_pass("merge", "done", fig)
    assert [model.data(model.index(1, c)) for c in (3, 4, 5, 6)] == ["2", "0", "2", "3"]


def test_quiz_table(qtmodeltester: Any) -> None:
    model = QuizTableModel()
    model.set_rows([QuizItem("m_1", "The user lives in Lisbon.", "Where do I live?", "Lisbon.", 1.0, True, 1),
                    QuizItem("m_2", "x", "<b>q</b>", "<i>no</i>", 0.2, False, 2, ["leaky question"])])
    qtmodeltester.check(model)
    assert model.data(model.index(1, 4)) == "✗ wrong"
    assert model.data(model.index(1, 5)) == "2"
    tip = model.data(model.index(1, 1), Qt.ItemDataRole.ToolTipRole)
    assert "&lt;b&gt;q&lt;/b&gt;" in tip  # model text is escaped, never rendered


def test_plain_tooltip_never_renders_markup() -> None:
    tip = plain_tooltip("<img src=x onerror=alert(1)> & <b>bold</b>")
    assert "<img" not in tip and "<b>bold" not in tip
    assert "&lt;img" in tip


def test_invalid_index_is_harmless() -> None:
    model = BlockTreeModel()
    assert model.data(QModelIndex()) is None
    assert model.fact_at(QModelIndex()) is None


def test_a_meaning_guard_refusal_is_shown_as_it_is(qtmodeltester: Any) -> None:
    """The diff's rejected list shows the guard's sentence verbatim (no rewording, no HTML)."""
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.sleep import gates
    from nocturne_desktop.core.types import Fact

    facts = [Fact("m_3", "scratch", "I don't eat meat, only fish.", "context", 1, T0, T0, True),
             Fact("m_4", "scratch", "The user eats fish.", "context", 2, T0, T0, True)]
    result = gates.check("merge", facts, {"merge": [{
        "intoId": "m_3", "fromIds": ["m_4"], "mergedText": "The user eats meat and fish.",
        "reason": "diet"}]}, RetentionPolicy(), now=T0)
    (refused,) = result.rejected
    rejected = RejectedTableModel()
    rejected.set_rows((MutationRow(1, refused, 4, 1, T0),))
    qtmodeltester.check(rejected)
    assert rejected.data(rejected.index(0, 5)) == (
        "polarity guard: m_3 negates 'eat meat' (don't); the merged text states it")


def test_a_superseded_fact_is_struck_through_with_its_interval_and_successor(
        qtmodeltester: Any) -> None:
    from dataclasses import replace

    from nocturne_desktop.ui.models import superseded_note

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


def test_the_diff_lists_superseded_facts() -> None:
    from dataclasses import replace

    before = fact(1, "human", "User lives in Lisbon")
    after = replace(before, active=False, valid_until=T0 + 9, superseded_by="m_2")
    entry = DiffEntry("m_1", "superseded", before, after, pass_name="reconcile",
                      reason="moved", decided_by="model")
    model = DiffTableModel()
    model.set_diff(Diff(1, 2, (), (), (), (), (), (entry,)))
    assert model.rowCount() == 1
    assert model.data(model.index(0, 0)) == "superseded m_1"
    assert model.data(model.index(0, 2)).startswith("(superseded) [human]")
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
