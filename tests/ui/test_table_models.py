"""The flat tables on their own: the diff side by side, the refused mutations, the passes and
the quiz; model text in a tooltip is escaped, never rendered."""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Qt

from nocturne_desktop.core.checks.quiz import QuizItem
from nocturne_desktop.core.sleep import PassFigures
from nocturne_desktop.core.types import Diff, DiffEntry, Mutation, MutationRow
from nocturne_desktop.ui.models.tables import (
    DiffTableModel,
    PassTableModel,
    QuizTableModel,
    RejectedTableModel,
)
from nocturne_desktop.ui.models.text import plain_tooltip
from tests.ui.modelkit import T0, fact


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
