"""The person's hands in the window (S-EDIT-1): the memory tree's context menu edits, pins,
forgets, brings back and adds; Ctrl+Z undoes the last change whoever made it, Ctrl+Shift+Z
redoes; each is a version the diff shows, decided by you."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.core.types import Fact
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models.text import PIN_MARK
from tests.ui.conftest import seed_store

pytestmark = pytest.mark.timeout(120)


def action(menu: QMenu, text: str) -> QAction:
    for a in menu.actions():
        if a.text() == text:
            return a
        sub = a.menu()
        if isinstance(sub, QMenu):
            for b in sub.actions():
                if f"{a.text()}/{b.text()}" == text:
                    return b
    raise AssertionError(f"no {text!r} in {[a.text() for a in menu.actions()]}")


def tree_fact(win: Any, item_id: str) -> Fact:
    for block in ("persona", "human", "episodes", "scratch"):
        for f in win.memory.model.facts(block):
            if f.id == item_id:
                return f  # type: ignore[no-any-return]
    raise AssertionError(f"{item_id} is not in the tree")


def diff_rows(win: Any) -> list[list[str]]:
    m = win.diff.model
    return [[str(m.data(m.index(r, c))) for c in range(m.columnCount())] for r in range(m.rowCount())]


def test_edit_undo_redo_and_the_diff_shows_it(qtbot: Any, make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    win.session.hand("pin", facts[0].id)  # an earlier version to compare with
    target = facts[1]
    win.memory.ask_fact = lambda _p, _t, _h, _text, cat, **_k: (
        "The user lives in Porto and works best at night.", cat)
    action(win.memory.menu_for(tree_fact(win, target.id), target.block), "Edit text…").trigger()
    edited = tree_fact(win, target.id)
    assert edited.text == "The user lives in Porto and works best at night."
    v = win.session.store.latest_version()
    assert v is not None and v.label == f"edit:{target.id}"
    assert win.timeline.current_version() == v
    win._compare(v.seq - 1, v.seq)
    qtbot.waitUntil(lambda: win.diff.diff is not None  # computed off the GUI thread
                    and (win.diff.diff.a, win.diff.diff.b) == (v.seq - 1, v.seq), timeout=5_000)
    rows = diff_rows(win)
    (mine,) = [r for r in rows if r[0].startswith("changed")]
    assert "Porto" in " ".join(mine) and "you" in mine[4]
    win.menus.undo_change.trigger()
    assert tree_fact(win, target.id).text == target.text
    assert win.statusBar().currentMessage().startswith(
        f"Undid: edited “{target.text}” — Ctrl+Shift+Z redoes it")
    win.menus.redo.trigger()
    assert tree_fact(win, target.id).text == edited.text
    labels = [x.label for x in win.session.store.versions()][-3:]
    assert labels == [f"edit:{target.id}", f"undo:edit {target.id}", f"redo:edit {target.id}"]


def test_bad_text_says_why_and_writes_nothing(make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    before = win.session.store.dump()
    for text in ("   ", "x" * 100_000, "nul\x00"):
        win.memory.ask_fact = lambda _p, _t, _h, _x, cat, t=text, **_k: (t, cat)
        action(win.memory.menu_for(tree_fact(win, facts[0].id), "persona"), "Edit text…").trigger()
        assert win.statusBar().currentMessage()  # "text is empty", "... the limit is 4000", "NUL"
    assert win.session.store.dump() == before


def test_pin_survives_a_rules_only_sleep_whose_cap_would_forget_it(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    toast = facts[8]  # scratch context, 45 days old: the least salient, the cap's first choice
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=4)))
    action(win.memory.menu_for(tree_fact(win, toast.id), "scratch"), "Pin (never forgotten)").trigger()
    pinned = tree_fact(win, toast.id)
    assert pinned.pinned
    idx = win.memory.model.index(0, 0)  # the tree shows the pin
    texts = [win.memory.model.data(win.memory.model.index(r, 0, win.memory.model.index(3, 0)))
             for r in range(win.memory.model.rowCount(win.memory.model.index(3, 0)))]
    assert idx.isValid() and any(t.startswith(PIN_MARK) for t in texts)
    menu = win.memory.menu_for(pinned, "scratch")
    assert not action(menu, "Forget now (unpin it first)").isEnabled()
    assert action(menu, "Unpin")
    with qtbot.waitSignal(win.session.sleepEvent, timeout=30_000,  # the sleep stream's end
                          check_params_cb=lambda ev: ev.kind in (SleepEventKind.DONE,
                                                                 SleepEventKind.FAILED)) as end:
        win.start_rules_sleep()
    assert end.args is not None and end.args[0].kind == SleepEventKind.DONE
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    store = win.session.store
    f = store.get(toast.id)
    assert f is not None and f.active and f.pinned
    assert store.active_count() < len(facts)  # the cap did forget others


def test_forget_now_bring_back_add_and_category(make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    fence = facts[7]
    action(win.memory.menu_for(tree_fact(win, fence.id), "episodes"), "Forget now").trigger()
    store = win.session.store
    f = store.get(fence.id)
    assert f is not None and not f.active
    win.memory.show_forgotten.setChecked(True)
    action(win.memory.menu_for(tree_fact(win, fence.id), "episodes"), "Bring back").trigger()
    g = store.get(fence.id)
    assert g is not None and g.active
    win.memory.ask_fact = lambda *_a, **_k: ("The user's sister is called Ana.", "context")
    action(win.memory.menu_for(None, "human"), "Add a fact to human…").trigger()
    added = store.active_facts()[-1]
    assert (added.text, added.block, added.source_turn) == ("The user's sister is called Ana.",
                                                            "human", None)
    action(win.memory.menu_for(tree_fact(win, added.id), "human"), "Category/identity").trigger()
    h = store.get(added.id)
    assert h is not None and h.category == "identity"
    assert [r.mutation.decided_by for r in store.mutations(pass_name="hand")] == ["you"] * 4


def test_a_past_version_is_read_only(make_window: Any, db_path: Path) -> None:
    facts = seed_store(db_path)
    win = make_window(Settings())
    v = win.session.hand("pin", facts[0].id)
    win.memory.set_facts(win.session.store.state_at(v.seq), viewing=v)
    menu = win.memory.menu_for(tree_fact(win, facts[1].id), "human")
    (only,) = menu.actions()
    assert "read-only" in only.text() and not only.isEnabled()
