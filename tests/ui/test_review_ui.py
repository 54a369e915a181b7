"""Sleep with review in the window (S-EDIT-2), as a person does it: Memory → Sleep with review…,
untick a change, Apply selected; the tree and the timeline show exactly the rest applied, and
Ctrl+Z undoes the whole sleep. A plan made for another memory says so and offers Re-plan."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from nocturne_desktop.core.ports import ModelUnreachable
from nocturne_desktop.core.sleep import simulate
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.review import ReviewDialog
from tests.core.fakemodel import FakeModel
from tests.core.sleepkit import cooperative, pass_responder
from tests.core.sleepkit import seed as core_seed
from tests.core.test_review import greedy, scripted
from tests.fakeserver import FakeLLM
from tests.ui.conftest import seed_store

pytestmark = pytest.mark.timeout(120)


def tree_state(win: Any) -> dict[str, tuple[str, str]]:
    return {f.id: (f.block, f.text) for block in ("persona", "human", "episodes", "scratch")
            for f in win.memory.model.facts(block) if f.active}


def open_review(qtbot: Any, win: Any) -> ReviewDialog:
    win.menus.review.trigger()
    dlg = win.review_dialog
    assert isinstance(dlg, ReviewDialog) and dlg.isVisible()
    qtbot.waitUntil(lambda: dlg.plan is not None and not win.session.busy, timeout=30_000)
    return dlg


def test_review_untick_one_apply_then_undo(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(pass_responder(cooperative()))
    win = make_window(server_settings)
    start = win.session.store.all_facts()
    before_tree = tree_state(win)
    dump = win.session.store.dump()
    dlg = open_review(qtbot, win)
    plan = dlg.plan
    assert plan is not None and not plan.rules_only
    assert win.session.store.dump() == dump  # the plan wrote nothing
    text = dlg.text()
    for title in ("Dedupe —", "Promote —", "Forget —"):
        assert title in text
    assert dlg.approved() == list(plan.tickable)  # everything the gates passed starts ticked
    skip = next(it for it in plan.items if it.tickable and it.mutation.kind == "forget")
    dlg.set_ticked(skip.n, False)
    assert dlg.approved() == [n for n in plan.tickable if n != skip.n]
    assert f"{len(plan.tickable) - 1} of {len(plan.tickable)} changes ticked" in dlg.status.text()

    qtbot.mouseClick(dlg.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dlg.outcome is not None and not win.session.busy, timeout=30_000)
    result = dlg.outcome
    assert result is not None and result.unticked == (skip.n,) and result.refused == {}
    rest = [it.mutation for it in plan.items if it.tickable and it.n != skip.n]
    expected = {f.id: (f.block, f.text) for f in simulate(start, rest) if f.active}
    assert tree_state(win) == expected != before_tree
    assert skip.mutation.item_id in tree_state(win)  # the unticked forgetting did not happen
    assert "Applied" in dlg.status.text() and "Ctrl+Z" in dlg.status.text()
    latest = win.timeline.model.all_versions()[-1]
    assert latest.sleep_id == result.sleep_id and latest.label == "pass:forget:after"
    assert not dlg.apply_button.isEnabled()  # a plan is applied once

    dlg.close()
    win.activateWindow()  # the window's shortcuts answer once it is active again
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5_000)
    win.tabs.setCurrentWidget(win.memory)
    win.memory.view.setFocus()
    qtbot.keyClick(win.memory.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: tree_state(win) == before_tree, timeout=5_000)
    assert win.session.store.latest_version().label.startswith("undo:")


def test_a_plan_made_for_another_memory_says_so_and_replans(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    win.menus.review.trigger()
    dlg = win.review_dialog
    assert dlg is not None
    dlg.rules_only.setChecked(True)  # plans again, with the rules alone (no model)
    qtbot.waitUntil(lambda: dlg.plan is not None and dlg.plan.rules_only
                    and not win.session.busy, timeout=30_000)
    assert dlg.apply_button.isEnabled() and dlg.stale is None
    win.session.hand("edit", facts[3].id, text="The user keeps a bearded dragon called Basil.")
    qtbot.waitUntil(lambda: dlg.stale is not None, timeout=5_000)
    assert dlg.banner.isVisible()
    assert "Memory changed since the plan was made" in dlg.banner.text()
    assert not dlg.apply_button.isEnabled()
    dump = win.session.store.dump()
    dlg.apply_selected()  # refused before anything runs
    assert win.session.store.dump() == dump and not win.session.busy
    qtbot.mouseClick(dlg.replan_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dlg.plan is not None and not win.session.busy, timeout=30_000)
    assert dlg.stale is None and not dlg.banner.isVisible() and dlg.apply_button.isEnabled()


def test_unticking_a_change_unticks_what_relies_on_it_and_says_so(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    core_seed(db_path)  # m_5 and m_6 merge; the model also promotes the merged m_5
    win = make_window(Settings(), model_factory=lambda: scripted(greedy))
    dlg = open_review(qtbot, win)
    plan = dlg.plan
    assert plan is not None
    merge = next(i for i in plan.items if i.mutation.kind == "merge")
    promote = next(i for i in plan.items
                   if i.mutation.kind == "promote" and i.mutation.item_id == merge.mutation.item_id)
    refused = next(i for i in plan.items if not i.tickable)
    row = dlg.model.index_of(refused.n)
    assert not dlg.model.flags(row) & Qt.ItemFlag.ItemIsUserCheckable  # shown, not tickable
    assert "refused" in dlg.model.text(refused.n, 1) and dlg.model.text(refused.n, 4) == refused.why
    dlg.tree.setCurrentIndex(dlg.model.index_of(merge.n))
    left, right = dlg.detail.left.toPlainText(), dlg.detail.right.toPlainText()
    assert "m_5 · scratch" in left and "m_6 · scratch" in left  # both sources, as planned
    assert "Postgres. The user's stack runs Airflow jobs nightly." in right  # the merged text
    dlg.tree.setCurrentIndex(dlg.model.index_of(promote.n))
    assert dlg.detail.marked("right") == ["human"]  # a promotion moves a fact, word for word

    dlg.set_ticked(merge.n, False)
    assert promote.n not in dlg.approved()
    assert dlg.status.text() == (
        f"Unticking change {merge.n} (merge m_5) also unticked change {promote.n} (promote m_5), "
        "which relies on it.")
    dlg.set_ticked(promote.n, True)
    assert merge.n in dlg.approved()
    assert dlg.status.text() == (
        f"Ticking change {promote.n} (promote m_5) also ticked change {merge.n} (merge m_5), "
        "which it relies on.")
    qtbot.mouseClick(dlg.untick_all, Qt.MouseButton.LeftButton)
    assert dlg.approved() == [] and not dlg.apply_button.isEnabled()
    assert dlg.status.text() == f"0 of {len(plan.tickable)} changes ticked."


def test_esc_while_planning_says_the_plan_was_cancelled(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    core_seed(db_path)
    asked, go = threading.Event(), threading.Event()
    model = scripted()

    def slow(call: Any) -> Any:
        asked.set()
        go.wait(10)
        return {"drop": []}

    model.queue(slow)
    win = make_window(Settings(), model_factory=lambda: model)
    dump = win.session.store.dump()
    win.menus.review.trigger()
    dlg = win.review_dialog
    assert dlg is not None and asked.wait(10)
    win.menus.stop.trigger()  # Esc
    go.set()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert dlg.plan is None and dlg.title.text().startswith("The plan was cancelled")
    assert not dlg.apply_button.isEnabled() and dlg.replan_button.isEnabled()
    assert win.session.store.dump() == dump


def test_a_model_that_cannot_be_reached_says_so_and_points_to_rules_only(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    core_seed(db_path)
    model = FakeModel(responder=lambda _call: ModelUnreachable("connection refused"))
    win = make_window(Settings(), model_factory=lambda: model)
    dlg = open_review(qtbot, win)
    assert dlg.plan is not None and dlg.plan.passes == ()
    assert "The dry run ended early (dedupe: connection refused)" in dlg.title.text()
    assert "tick Rules only to plan without the model" in dlg.title.text()
    dlg.rules_only.setChecked(True)
    qtbot.waitUntil(lambda: dlg.plan is not None and dlg.plan.rules_only
                    and not win.session.busy, timeout=30_000)
    assert dlg.plan.tickable and dlg.apply_button.isEnabled()
