"""Sleep with review in the window (S-EDIT-2), as a person does it: Memory → Sleep with review…,
untick a change, Apply selected; the tree and the timeline show exactly the rest applied, and
Ctrl+Z undoes the whole sleep. A plan made for another memory says so and offers Re-plan."""

from __future__ import annotations

import json
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


def test_a_model_that_cannot_be_reached_leaves_the_plan_to_the_rules_and_says_so(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: the plan with the unreachable model was empty ("the dry run
    ended early"), and the person had to find Rules only themselves."""
    core_seed(db_path)
    model = FakeModel(responder=lambda _call: ModelUnreachable("connection refused"))
    win = make_window(Settings(), model_factory=lambda: model)
    win.menus.review.trigger()
    dlg = win.review_dialog
    assert isinstance(dlg, ReviewDialog)
    qtbot.waitUntil(lambda: dlg.plan is not None and dlg.plan.rules_only
                    and not win.session.busy, timeout=30_000)
    assert dlg.rules_only.isChecked()
    assert "No model answered; the rules alone planned these changes (dedupe: connection " \
           "refused)" in dlg.status.text()
    assert dlg.plan.tickable and dlg.apply_button.isEnabled()
    asked = len(model.calls)
    dlg.rules_only.setChecked(False)  # ask the model again: it is asked, fails, rules again
    qtbot.waitUntil(lambda: len(model.calls) > asked and dlg.plan is not None
                    and dlg.plan.rules_only and not win.session.busy, timeout=30_000)
    assert dlg.rules_only.isChecked() and "No model answered" in dlg.status.text()


def test_a_model_that_stops_answering_midway_keeps_the_passes_it_planned(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    core_seed(db_path)
    answers = cooperative()

    def respond(call: Any) -> Any:
        task = json.loads(call.last_user)["task"]
        return ModelUnreachable("connection refused") if task == "merge" else \
            answers[task](json.loads(call.last_user))

    model = FakeModel(responder=respond)
    win = make_window(Settings(), model_factory=lambda: model)
    dlg = open_review(qtbot, win)
    assert dlg.plan is not None and not dlg.plan.rules_only and dlg.plan.passes
    assert "The dry run ended early" in dlg.title.text()
    assert "tick Rules only to plan without the model" in dlg.title.text()
    assert not dlg.rules_only.isChecked()


def test_the_demo_memory_with_no_model_answering_plans_its_eleven_rule_changes(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: "Nothing to do: the sleep would change nothing" (the plan asked
    the unreachable model and held no change) though the rules alone make 11."""
    from nocturne_desktop.core.sleep import SleepEventKind
    from nocturne_desktop.demo import demo_policy, open_demo_store
    from tests.fakeserver import closed_port_url

    open_demo_store(db_path.parent)
    win = make_window(Settings(base_url=closed_port_url(), model="m", retention=demo_policy()))
    s = win.session
    with qtbot.waitSignal(s.endpointChecked, timeout=15_000):
        s.check_endpoint()
    assert s.endpoint_ok is False
    started: list[object] = []
    s.sleepEvent.connect(lambda ev: started.append(ev) if ev.kind == SleepEventKind.STARTED
                         else None)
    dlg = open_review(qtbot, win)
    plan = dlg.plan
    assert plan is not None and plan.rules_only and dlg.rules_only.isChecked()
    assert len(started) == 1  # planned with the rules at once: the model's check had failed
    by_pass = [(g[0], g[2] - g[1]) for g in dlg.model.index_.groups]  # type: ignore[union-attr]
    assert len(plan.tickable) == 11 and dict(by_pass) == {"dedupe": 3, "promote": 5, "forget": 3}
    assert dlg.status.text().startswith("No model answered; the rules alone planned these changes")
    assert "Nothing to do" not in dlg.text()
    assert "(rules only: no model answered)" in dlg.title.text()
