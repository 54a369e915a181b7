"""The Sleep tab: the totals in words that add up, and a failed pass's row showing what memory
still holds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.core.types import PASSES
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.tabs.sleep import SleepPanel, describe_totals
from tests.fakeserver import closed_port_url
from tests.ui.conftest import seed_store, sleep_from_the_menu

pytestmark = pytest.mark.timeout(120)


def test_the_sleep_totals_say_what_the_numbers_mean(qtbot: Any) -> None:
    """Fails on the old code: "Totals: 6 proposed · 6 accepted · 6 rejected · 6 enforced"."""
    panel = SleepPanel()
    qtbot.addWidget(panel)
    panel.on_sleep_started(SimpleNamespace(dry_run=False, rules_only=False, sleep_id=4, message=""))
    panel.on_sleep_finished(SleepEventKind.DONE, "", {"proposed": 6, "accepted": 6, "rejected": 6,
                                                      "enforced": 6})
    assert panel.totals.text() == ("The model proposed 6 changes: 0 applied, 6 refused by the gates. "
                                   "The rules made 6 changes of their own. 6 changes applied in all.")
    assert describe_totals({"proposed": 6, "accepted": 8, "rejected": 1, "enforced": 3}, dry_run=True) == (
        "The model proposed 6 changes: 5 would apply, 1 refused by the gates. "
        "The rules made 3 changes of their own. 8 changes would apply in all.")
    assert describe_totals({"proposed": 0, "accepted": 1, "rejected": 0, "enforced": 1}) == (
        "The model proposed no change. The rules made 1 change of their own. 1 change applied in all.")


def test_a_failed_pass_shows_the_active_count_memory_still_holds(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: the failed pass read "Active after 0" while memory held 9."""
    seed_store(db_path)
    win = make_window(Settings(base_url=closed_port_url(), model="m"))
    sleep_from_the_menu(qtbot, win)
    table = win.sleep.model
    assert table.data(table.index(0, 1)) == "error"
    held = win.session.store.active_count()
    assert held > 0
    assert table.data(table.index(0, 7)) == str(held)
    assert [table.data(table.index(r, 7)) for r in range(1, len(PASSES))] == [""] * (len(PASSES) - 1)
