"""Memory and model text is shown as plain text wherever it is not Markdown (S-DOOR-5): a fact,
a turn, a model's reason, a conversation's title or a server's message that looks like HTML is
shown as its characters, never rendered (a heading, a local ``file://`` image read from disk, a
link). The lineage dialog's and the conversation list's tooltips rendered them before this
change (the first two tests fail on that code)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from nocturne_desktop.core.store import Store
from tests.ui.markupcheck import hostile_texts, make_image, problems, seed_hostile, shown

pytestmark = pytest.mark.timeout(120)


def item_tips(tree: QTreeWidget) -> list[str]:
    """Every tooltip of every item of ``tree``, in every column."""
    out: list[str] = []

    def walk(item: QTreeWidgetItem) -> None:
        out.extend(item.toolTip(c) for c in range(tree.columnCount()) if item.toolTip(c))
        for i in range(item.childCount()):
            child = item.child(i)
            if child is not None:
                walk(child)

    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        if top is not None:
            walk(top)
    return out


@pytest.fixture
def hostile(db_path: Path, tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    texts = hostile_texts(make_image(tmp_path / "pixel.png"))
    with Store(db_path) as s:
        ids = seed_hostile(s, texts)
    return texts, ids


def test_the_lineage_tooltips_show_facts_turns_and_reasons_literally(
        qtbot: Any, make_window: Any, hostile: tuple[dict[str, str], dict[str, str]]) -> None:
    texts, ids = hostile
    win = make_window()
    dialog = win.open_lineage(ids["heading"])
    if dialog.lineage is None and dialog.error is None:
        qtbot.waitSignal(dialog.ready, timeout=15_000).wait()
    assert dialog.error is None
    tips = item_tips(dialog.tree)
    rendered = {t[:60]: problems(t) for t in tips if problems(t)}
    assert not rendered, rendered
    seen = "\n".join(shown(t) for t in tips)
    # the fact, its turn, the encoder's reason, the merge's reason, the merged-in fact
    for text in (texts["heading"], texts["image"], texts["link"]):
        assert text in seen, text


def test_the_conversation_list_tooltips_show_titles_literally(
        qtbot: Any, make_window: Any, hostile: tuple[dict[str, str], dict[str, str]]) -> None:
    texts, _ids = hostile
    win = make_window()
    dlg = win.open_conversations()
    qtbot.waitUntil(lambda: dlg.loaded and len(dlg.rows()) == 2, timeout=5_000)
    tips = item_tips(dlg.tree)
    rendered = {t[:60]: problems(t) for t in tips if problems(t)}
    assert not rendered, rendered
    seen = "\n".join(shown(t) for t in tips)
    assert texts["heading"][:40] in seen and texts["image"][:40] in seen
