"""The one change hub: every commit reaches the views through the session's hub, with its rows,
what made it and who asked for it; no coarse "the store was written" signal beside it.

Each test fails on the code before the hub (no ``Session.changes``; the search, the diff and the
status bar followed a second, coarse signal the window fanned out by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.changes import WINDOW, ChangeHub, Commit
from nocturne_desktop.ui.session import Session
from tests.ui.conftest import seed_store

pytestmark = pytest.mark.timeout(120)


def recorder(hub: ChangeHub) -> list[Commit]:
    got: list[Commit] = []
    hub.subscribe(got.append)
    return got


def test_subscribers_get_each_commit_in_the_order_they_subscribed(qapp: Any) -> None:
    from nocturne_desktop.core.store.reads import ChangedRows
    from nocturne_desktop.core.types import StoreChanges

    hub = ChangeHub()
    order: list[tuple[str, str]] = []
    hub.subscribe(lambda c: order.append(("first", c.source)))
    hub.subscribe(lambda c: order.append(("second", c.source)))
    me = object()
    hub.publisher("sleep", me)(ChangedRows(StoreChanges(added=("m_1",))))
    hub.publish(ChangedRows(StoreChanges()), source=WINDOW)
    assert order == [("first", "sleep"), ("second", "sleep"), ("first", WINDOW),
                     ("second", WINDOW)]
    got = recorder(hub)
    hub.publisher("sleep", me)(ChangedRows(StoreChanges(added=("m_1",))))
    assert got[0].initiator is me and got[0].facts == ("m_1",)


def test_the_coarse_signals_are_gone() -> None:
    assert not hasattr(Session, "storeChanged") and not hasattr(Session, "storeChanges")


def test_a_change_by_hand_reaches_every_view_through_the_hub(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    win.tabs.setCurrentWidget(win.diff)
    got = recorder(win.session.changes)
    dragon = next(f for f in facts if "dragon" in f.text)
    win.memory.search.field.setText("dragon")
    win.memory.search.flush()
    qtbot.waitUntil(lambda: [h.status for h in win.memory.search.hits] == ["active"],
                    timeout=5_000)
    active = win.status.active_count
    assert active is not None
    v = win.session.hand("forget_now", dragon.id)
    window_commits = [c for c in got if c.source == WINDOW]
    assert window_commits and dragon.id in window_commits[0].facts
    assert all(c.initiator is None for c in got)
    # the tree, the status bar, the timeline and the diff followed it
    assert dragon.id not in [f.id for f in win.memory.model.facts("scratch")]
    assert win.status.active.text() == f"{active - 1} active facts"
    assert win.timeline.model.all_versions()[-1].seq == v.seq
    assert win.diff.pick_b.findData(v.seq) >= 0
    # and the search ran again by itself: its hit is forgotten now
    qtbot.waitUntil(lambda: [h.status for h in win.memory.search.hits] == ["forgotten"],
                    timeout=5_000)


def test_a_sleeps_commits_name_the_sleep_and_a_plan_writes_none(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_store(db_path)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=4)))
    got = recorder(win.session.changes)
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.session.start_sleep(engine_only=True)
    win.session.wait_threads()
    assert got and {c.source for c in got} == {"sleep"}
    assert any(c.facts for c in got) and any(c.rows.versions for c in got)
    assert win.timeline.model.all_versions() == win.session.store.versions()
    got.clear()
    dialog = object()
    plans: list[Any] = []
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.session.start_review_plan(engine_only=True, initiator=dialog, on_plan=plans.append)
    win.session.wait_threads()
    assert plans
    assert got == []  # a dry run writes nothing: the review dialog sees no change of its own
