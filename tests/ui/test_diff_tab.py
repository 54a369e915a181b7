"""The Diff tab's detail: a change drawn side by side, word by word, readable at 1024×700."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.settings import Settings
from tests.core.sleepkit import cooperative, pass_responder
from tests.fakeserver import FakeLLM
from tests.ui.conftest import SEED, seed_store, sleep_from_the_menu

pytestmark = pytest.mark.timeout(120)


def test_word_diff_marks_only_the_words_that_differ() -> None:
    from nocturne_desktop.ui.tabs.diff import word_diff

    left, right = word_diff("The user lives in Lisbon now.", "The user lives  in Porto now.")
    assert [t for t, marked in left if marked] == ["Lisbon "]
    assert [t for t, marked in right if marked] == ["Porto "]
    assert "".join(t for t, _ in left) == "The user lives in Lisbon now."
    assert "".join(t for t, _ in right) == "The user lives  in Porto now."


def test_the_diff_detail_shows_a_change_side_by_side_word_by_word_at_1024x700(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the detail pane was one plain text box under a table whose
    before/after columns were ~10 characters wide at this size."""
    seed_store(db_path, [*SEED, ("scratch", "context", "The user's stack runs Airflow jobs nightly.", 1)])
    answers = cooperative()
    answers["merge"] = lambda p: {"merge": [
        {"intoId": c["facts"][0]["itemId"], "fromIds": [f["itemId"] for f in c["facts"][1:]],
         "mergedText": "The user's stack is Airflow and Postgres; Airflow jobs run nightly.",
         "reason": "one stack"} for c in p["clusters"]]}
    fake_llm.respond_with(pass_responder(answers))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    win.resize(1024, 700)
    sleep_from_the_menu(qtbot, win)
    win.tabs.setCurrentWidget(win.diff)
    qtbot.waitUntil(lambda: win.diff.diff is not None, timeout=10_000)
    from nocturne_desktop.ui.models.roles import ROLE_OBJECT

    m = win.diff.model
    rows = [m.data(m.index(r, 0), ROLE_OBJECT) for r in range(m.rowCount())]
    # the first change is shown at once, without a click
    assert win.diff.detail.entry is rows[0]
    r, e = next((r, e) for r, e in enumerate(rows)
                if e.before is not None and e.after is not None and e.before.text != e.after.text)
    win.diff.table.setCurrentIndex(m.index(r, 0))
    view = win.diff.detail
    assert view.entry is e
    assert e.before.text in view.left.toPlainText()
    assert all(s.text in view.left.toPlainText() for s in e.sources)
    assert e.after.text in view.right.toPlainText()
    before_words = set(" ".join([e.before.text, *(s.text for s in e.sources)]).split())
    assert view.marked("right") and all(w not in before_words for w in view.marked("right"))
    assert all(w not in e.after.text.split() for w in view.marked("left"))
    # each side is wide enough to read (the old table columns held ~10 characters)
    chars = view.left.viewport().width() / view.left.fontMetrics().averageCharWidth()
    assert chars > 35, chars
    assert view.left.viewport().height() >= 3 * view.left.fontMetrics().lineSpacing()
    assert f"pass {e.pass_name}" in view.meta.text()
