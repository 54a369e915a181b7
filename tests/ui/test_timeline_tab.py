"""The Timeline tab in words: each version says what it is, an undone sleep says so until it
is redone, and the diff's pickers and the read-only banner use the same words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models.text import version_label
from nocturne_desktop.ui.models.timeline import TimelineModel
from tests.core.sleepkit import cooperative, pass_responder
from tests.fakeserver import FakeLLM
from tests.ui.conftest import seed_store, sleep_from_the_menu

pytestmark = pytest.mark.timeout(120)


def test_the_timeline_says_what_each_version_is_and_that_a_sleep_was_undone(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: rows read "pass:dedupe:before", and the undone sleep's header
    still read "Sleep #1 · done · …"."""
    seed_store(db_path)
    fake_llm.respond_with(pass_responder(cooperative()))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    sleep_from_the_menu(qtbot, win)
    tl = win.timeline.model
    group = tl.index(0, 0)
    labels = [tl.data(tl.index(r, 1, group)) for r in range(tl.rowCount(group))]
    assert labels[:3] == ["sleep started", "before Dedupe", "after Dedupe"]
    assert labels[-1] == "after Forget" and not any(":" in lab for lab in labels)
    assert "undone" not in tl.data(group)
    with qtbot.waitSignal(win.session.versionCreated, timeout=5_000) as blocker:
        win.menus.undo.trigger()
    undo = blocker.args[0]
    assert tl.data(tl.index(0, 0)).startswith("Sleep #1 · done")
    assert f"undone ({undo.id}" in tl.data(tl.index(0, 0))
    last = tl.index(tl.rowCount() - 1, 0)
    first = win.session.store.versions()[0]
    assert tl.data(tl.index(tl.rowCount(last) - 1, 1, last)) == f"restored {first.id}"
    # the diff's pickers and the read-only banner speak the same words
    assert win.diff.pick_a.itemText(1).endswith("before Dedupe")
    win.tabs.setCurrentWidget(win.memory)
    win.timeline.select_version(win.session.store.versions()[1].seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    assert "(before Dedupe, " in win.memory.banner.label.text()


def test_version_labels_in_words() -> None:
    assert version_label("pass:merge:after") == "after Merge"
    assert version_label("consolidation:start") == "sleep started"
    assert version_label("restore:s0003") == "restored s0003"
    assert version_label("undo:sleep 3") == "undid sleep #3"
    assert version_label("redo:sleep 3") == "redid sleep #3"
    assert version_label("edit:m_4") == "edited m_4"
    assert version_label("demo:loaded") == "demo loaded"
    assert version_label("manual") == "manual"


def test_an_undo_by_name_marks_the_sleep_until_it_is_redone(qtmodeltester: Any) -> None:
    from nocturne_desktop.core.types import SleepRecord, Version

    t0 = 1_700_000_000.0
    vs = [Version(1, "consolidation:start", t0, 9, 1), Version(2, "pass:forget:after", t0 + 1, 7, 1),
          Version(3, "undo:sleep 1", t0 + 2, 9, None)]
    rec = SleepRecord(1, t0, t0 + 1, False, "done", {}, {})
    model = TimelineModel()
    model.set_versions(vs, [rec])
    qtmodeltester.check(model)
    assert "undone (s0003" in model.data(model.index(0, 0))
    changed: list[int] = []
    model.dataChanged.connect(lambda a, _b: changed.append(a.row()))
    model.set_versions([*vs, Version(4, "redo:sleep 1", t0 + 3, 7, None)], [rec])
    assert "undone" not in model.data(model.index(0, 0))
    assert 0 in changed  # the header was redrawn
