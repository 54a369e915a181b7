"""The window's "Why do you remember this?": from the tree's context menu or Ctrl+I, the
selected fact's lineage drawn as a tree, computed off the GUI thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact
from nocturne_desktop.ui.models.roles import ROLE_OBJECT
from tests.core.test_lineage import build


def _texts(tree: Any) -> list[str]:
    out: list[str] = []

    def walk(item: Any) -> None:
        out.append(item.text(0))
        for i in range(item.childCount()):
            walk(item.child(i))

    for i in range(tree.topLevelItemCount()):
        walk(tree.topLevelItem(i))
    return out


def select(win: Any, item_id: str) -> None:
    view, proxy = win.memory.view, win.memory.proxy

    def find(parent: Any) -> Any:
        for r in range(proxy.rowCount(parent)):
            idx = proxy.index(r, 0, parent)
            obj = idx.data(ROLE_OBJECT)
            if isinstance(obj, Fact) and obj.id == item_id:
                return idx
            hit = find(idx)
            if hit is not None:
                return hit
        return None

    idx = find(view.rootIndex())
    assert idx is not None, item_id
    view.setCurrentIndex(idx)


def test_why_do_you_remember_this_draws_the_lineage(qtbot: Any, make_window: Any,
                                                     db_path: Path) -> None:
    with Store(db_path) as s:
        build(s)
    win = make_window()
    win.memory.show_forgotten.setChecked(True)
    select(win, "m_3")
    fact = win.memory.current_fact()
    assert fact is not None
    menu = win.memory.menu_for(fact, fact.block)  # the tree's one context menu (hand edits too)
    (why,) = [a for a in menu.actions() if a.text() == "Why do you remember this?"]
    with qtbot.waitSignal(win.memory.whyRequested, timeout=5_000) as got:
        why.trigger()
    assert got.args == ["m_3"]
    dialog = win.lineage_dialog
    if dialog.lineage is None and dialog.error is None:
        qtbot.waitSignal(dialog.ready, timeout=15_000).wait()
    assert dialog.error is None
    texts = _texts(dialog.tree)
    assert texts[0] == "m_3 [superseded] User lives in Lisbon by the river"
    assert any(t.startswith("merged into m_3: m_1 [forgotten]") for t in texts)
    assert any(t.startswith("merged into m_1: m_2 [forgotten]") for t in texts)  # depth 3
    assert any(t.startswith("turn 2 (user): turn 2:") for t in texts)
    assert any("· reconcile · superseded by m_5 · decided by model — moved to Porto" in t
               for t in texts)
    assert any(t.startswith("m_3 superseded by m_5 → m_5 [active]") for t in texts)
    assert "depth 3" in dialog.status.text()
    dialog.close()
    # the shortcut: Ctrl+I on the selected fact
    select(win, "m_5")
    assert win.menus.why.shortcut().toString() == "Ctrl+I"
    win.menus.why.trigger()
    second = win.lineage_dialog
    assert second.item_id == "m_5"
    if second.lineage is None and second.error is None:
        qtbot.waitSignal(second.ready, timeout=15_000).wait()
    assert second.lineage is not None and second.lineage.root.fact_id == "m_5"
    second.close()


def test_the_diff_panel_counts_superseded_facts(qtbot: Any, tmp_path: Path) -> None:
    from nocturne_desktop.ui.tabs.diff import DiffPanel

    with Store(tmp_path / "n.db") as s:
        build(s)
        versions = s.versions()
        diff = s.diff(versions[-2].seq, versions[-1].seq)
    panel = DiffPanel()
    qtbot.addWidget(panel)
    panel.set_diff(diff)
    assert "1 superseded · 0 forgotten" in panel.summary.text()
    assert panel.model.rowCount() == 1
    assert "superseded" in panel.legend.labels
