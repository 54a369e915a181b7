"""Sleep with review at scale: a plan of many thousand changes is shown without a widget per
change (the view asks for the rows on screen only), a tick follows only what it reaches, and
the list's model passes Qt's model tester."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from PySide6.QtCore import QObject, Qt, Signal

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep.review import Plan, PlanItem
from nocturne_desktop.core.types import Fact, Mutation
from nocturne_desktop.ui.changes import ChangeHub
from nocturne_desktop.ui.models.plan import PlanIndex, PlanModel
from nocturne_desktop.ui.models.planpages import PlanPages, paged, whole
from nocturne_desktop.ui.review import ReviewDialog

pytestmark = pytest.mark.timeout(120)

NOW = 1_700_000_000.0


def fact(i: int, block: str = "scratch") -> Fact:
    return Fact(id=f"m_{i}", block=block, text=f"The user said thing number {i}.",
                category="context", source_turn=None, created_at=NOW - 1000, updated_at=NOW - 1000)


def synthetic_plan(promotes: int, *, refused_every: int = 0) -> Plan:
    """``promotes`` promotions of m_1…, then one forgetting of each promoted fact (relying on
    its promotion), then a refused merge."""
    items: list[PlanItem] = []
    for i in range(1, promotes + 1):
        accepted = not (refused_every and i % refused_every == 0)
        f = fact(i)
        m = Mutation("promote", "promote", f.id, accepted, reason="durable",
                     rejection_reason=None if accepted else "already in human",
                     decided_by="promotion-rule", refs={"fromBlock": "scratch", "toBlock": "human"})
        after = (dataclasses.replace(f, block="human"),) if accepted else ()
        items.append(PlanItem(n=len(items) + 1, pass_name="promote", mutation=m, before=(f,),
                              after=after, reads=(f.id,), writes=(f.id,) if accepted else ()))
    for i in range(1, promotes + 1):
        src = items[i - 1]
        f = fact(i, "human")
        m = Mutation("forget", "forget", f.id, True, reason="over the cap", policy="cap",
                     decided_by="retention-rule")
        items.append(PlanItem(n=len(items) + 1, pass_name="forget", mutation=m, before=(f,),
                              after=(dataclasses.replace(f, active=False),), reads=(f.id,),
                              writes=(f.id,), depends_on=(src.n,) if src.tickable else ()))
    m = Mutation("merge", "merge", "m_1", False, reason="alike",
                 rejection_reason="the merged text adds a claim", refs={})
    items.append(PlanItem(n=len(items) + 1, pass_name="merge", mutation=m, before=(fact(1),),
                          after=(), reads=("m_1",), writes=()))
    return Plan(items=tuple(items), mark="x", latest=None, policy=RetentionPolicy(), now=NOW,
                rules_only=True, passes=("promote", "forget", "merge"),
                active_before=promotes, active_after=0)


class FakeSession(QObject):
    """What the dialog asks of a session, without a store (the plan is given)."""

    busyChanged = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.changes = ChangeHub(self)
        self.busy = ""
        self.reads: list[str] = []

    def read(self, kind: str, *_args: Any) -> None:
        self.reads.append(kind)


@pytest.mark.parametrize("in_pages", [False, True], ids=["plan", "pages"])
def test_a_plan_of_many_thousand_changes_shows_only_the_rows_on_screen(
        qtbot: Any, in_pages: bool) -> None:
    whole_plan = synthetic_plan(15_000)
    plan: Plan | PlanPages = paged(whole_plan) if in_pages else whole_plan
    if isinstance(plan, PlanPages):
        plan = pickle.loads(pickle.dumps(plan))  # as it crosses from the worker process
    dlg = ReviewDialog(FakeSession())  # type: ignore[arg-type]
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.set_plan(plan)
    qtbot.waitUntil(dlg.plan_shown, timeout=20_000)
    qtbot.wait(50)  # paints
    model = dlg.model
    assert model.rowCount() == len(plan.items) + 3  # a header row per pass
    assert 0 < model.rows_made < 200  # only the rows the view showed were made
    assert model.text(1, 0) == "1  promote m_1"
    assert dlg.approved() == list(plan.tickable)
    # the last change is reachable, and made when it is shown
    dlg.select(len(plan.items))
    qtbot.wait(50)
    assert "the merged text adds a claim" in dlg.detail.meta.text()
    assert model.rows_made < 400
    if isinstance(plan, PlanPages):  # only the pages of the rows shown were read
        assert plan.unpickled <= 3 and len(plan.pages) == 121


def test_a_plan_in_pages_reads_as_the_plan() -> None:
    plan = synthetic_plan(2500, refused_every=7)
    pages = pickle.loads(pickle.dumps(paged(plan)))
    assert whole(pages) == plan and whole(plan) is plan
    assert len(pages.items) == len(plan.items) and list(pages.items) == list(plan.items)
    assert pages.items[-1] == plan.items[-1] and pages.items[10:13] == plan.items[10:13]
    assert pages.tickable == plan.tickable and pages.mark == plan.mark
    assert pages.of_pass("forget") == plan.of_pass("forget")
    for n in (1, 7, 2501, 2507, len(plan.items)):
        assert pages.item(n) == plan.item(n)
        assert pages.dependents(n) == plan.dependents(n)
        assert pages.requirements(n) == plan.requirements(n)
    assert len(pickle.dumps(pages)) < len(pickle.dumps(plan)) * 2


def test_a_plan_in_pages_pickles_its_pages_out_of_band_where_the_pickler_takes_buffers() -> None:
    """A worker's start sends the pages beside the request's pickle (ui/jobs/process.py); any other
    pickle still holds them. Fails on the code before (the pages were always in band)."""
    plan = synthetic_plan(2500, refused_every=7)
    pages = paged(plan)
    buffers: list[pickle.PickleBuffer] = []
    small = pickle.dumps(pages, protocol=5, buffer_callback=buffers.append)
    assert len(small) < 4_000 and len(buffers) == len(pages.pages) + 5
    back = pickle.loads(small, buffers=[bytes(b.raw()) for b in buffers])
    assert back.pages == pages.pages and all(type(p) is bytes for p in back.pages)
    assert whole(back) == plan and back.tickable == plan.tickable
    assert back.dependents(1) == plan.dependents(1)
    for protocol in (4, 5):  # in band: as before
        again = pickle.loads(pickle.dumps(pages, protocol=protocol))
        assert again.pages == pages.pages and whole(again) == plan
        assert len(pickle.dumps(pages, protocol=protocol)) > sum(map(len, pages.pages))


@pytest.mark.parametrize("in_pages", [False, True], ids=["plan", "pages"])
def test_unticking_a_pass_walks_each_change_and_edge_once(qtbot: Any, in_pages: bool) -> None:
    n = 6000
    whole_plan = synthetic_plan(n, refused_every=10)
    plan: Plan | PlanPages = paged(whole_plan) if in_pages else whole_plan
    dlg = ReviewDialog(FakeSession())  # type: ignore[arg-type]
    qtbot.addWidget(dlg)
    dlg.set_plan(plan)
    qtbot.waitUntil(dlg.plan_shown, timeout=20_000)
    index = dlg.model.index_
    assert index is not None
    promote = [i.n for i in plan.of_pass("promote") if i.tickable]
    edges = sum(len(i.depends_on) for i in plan.items)
    index.steps = 0
    dlg.set_group_ticked("promote", False)
    # each seed, each change reached and each edge once: O(N), not O(N × plan)
    assert index.steps <= 2 * (len(promote) + edges) + 10
    forget = [i.n for i in plan.of_pass("forget") if i.depends_on]
    assert set(dlg.approved()) == {i.n for i in plan.of_pass("forget") if not i.depends_on}
    assert dlg.status.text().startswith(
        f"Unticking the Promote pass ({len(promote)} changes) also unticked change {forget[0]} "
        f"(forget m_1), ")
    assert f"and {len(forget) - 10} more, which relies on it." in dlg.status.text()
    assert "Promote — 0 of" in dlg.model.group_text(0)
    index.steps = 0
    dlg.set_group_ticked("forget", True)  # ticks what the forgettings rely on: the promotions
    assert index.steps <= 2 * (n + edges) + 10
    assert dlg.approved() == list(plan.tickable)
    # one change: only its own closure is walked
    index.steps = 0
    dlg.set_ticked(promote[0], False)
    assert index.steps <= 4
    assert dlg.status.text() == (f"Unticking change {promote[0]} (promote m_1) also unticked "
                                 f"change {forget[0]} (forget m_1), which relies on it.")


def test_a_click_on_a_pass_box_ticks_the_pass(qtbot: Any) -> None:
    plan = synthetic_plan(50, refused_every=5)
    dlg = ReviewDialog(FakeSession())  # type: ignore[arg-type]
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.set_plan(plan)
    assert dlg.plan_shown()
    model = dlg.model
    header = model.index(model.group_row(0), 0)
    assert model.data(header, Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked
    assert model.flags(header) & Qt.ItemFlag.ItemIsUserCheckable
    dlg.set_ticked(1, False)
    assert model.data(header, Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.PartiallyChecked
    assert model.data(model.index_of(1), Qt.ItemDataRole.DisplayRole) == "1  promote m_1"
    assert model.text(1, 1) == "✗ unticked"
    refused = model.index(model.group_row(2), 0)  # the merge pass: refusals only
    assert model.data(refused, Qt.ItemDataRole.CheckStateRole) is None
    assert model.group_text(2) == "Merge — 1 refused, nothing to tick"
    rect = dlg.tree.visualRect(header)
    from PySide6.QtCore import QPoint
    from PySide6.QtTest import QTest

    # the box sits at the start of the header row; a click there ticks the whole pass
    point = QPoint(rect.left() + 10, rect.center().y())
    QTest.mouseClick(dlg.tree.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert model.data(header, Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked
    forget_1 = plan.items[50].n  # unticked with change 1, which it relies on; it stays so
    assert dlg.approved() == [n for n in plan.tickable if n != forget_1]
    assert dlg.status.text() == f"{len(plan.tickable) - 1} of {len(plan.tickable)} changes ticked."
    # Space on a change's row, whichever cell is current, ticks and unticks it
    dlg.tree.setFocus()
    dlg.tree.setCurrentIndex(model.index_of(forget_1, 3))
    QTest.keyClick(dlg.tree, Qt.Key.Key_Space)
    assert forget_1 in dlg.approved()
    QTest.keyClick(dlg.tree, Qt.Key.Key_Space)
    assert forget_1 not in dlg.approved()


def test_the_plan_model_passes_the_model_tester(qtbot: Any, qtmodeltester: Any) -> None:
    model = PlanModel()
    qtmodeltester.check(model)  # empty
    plan = synthetic_plan(40, refused_every=3)
    model.set_index(PlanIndex(plan).build_now())
    qtmodeltester.check(model)
    model.set_group_ticked(0, False)
    model.set_ticked(len(plan.items) - 2, True)
    qtmodeltester.check(model)
    model.set_collapsed(0, True)
    qtmodeltester.check(model)
    model.set_collapsed(1, True)
    model.set_collapsed(0, False)
    qtmodeltester.check(model)


def test_a_pass_folds_away_and_unfolds_to_show_a_change(qtbot: Any) -> None:
    plan = synthetic_plan(30)
    dlg = ReviewDialog(FakeSession())  # type: ignore[arg-type]
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.set_plan(plan)
    model = dlg.model
    rows = model.rowCount()
    header = model.index(model.group_row(0), 0)
    assert str(model.data(header, Qt.ItemDataRole.DisplayRole)).startswith("▾ Promote — 30 of 30")
    dlg.tree.doubleClicked.emit(header)  # as a double-click on the pass's row
    assert model.rowCount() == rows - 30 and model.collapsed(0)
    assert str(model.data(header, Qt.ItemDataRole.DisplayRole)).startswith("▸ Promote")
    forget = model.index(model.group_row(1), 0)
    assert str(model.data(forget, Qt.ItemDataRole.DisplayRole)).startswith("▾ Forget")
    dlg.set_ticked(1, False)  # a folded change still ticks (its dependents follow)
    assert 1 not in dlg.approved() and 31 not in dlg.approved()
    assert "Promote — 29 of 30 ticked" in model.group_text(0)
    dlg.select(2)  # unfolds its pass
    assert not model.collapsed(0) and model.rowCount() == rows
    assert dlg.tree.currentIndex().row() == model.row_of(2)
    assert "change 2" in dlg.detail.meta.text()
