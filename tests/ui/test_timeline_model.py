"""The timeline model on its own: versions grouped by sleep, new ones added as row inserts."""

from __future__ import annotations

from typing import Any

from nocturne_desktop.core.types import SleepRecord, Version
from nocturne_desktop.ui.models.timeline import TimelineModel
from tests.ui.modelkit import T0, Recorder


def versions(n: int, sleep_of: dict[int, int] | None = None) -> list[Version]:
    sleep_of = sleep_of or {}
    return [Version(s, f"label {s}", T0 + s, 10 - s // 3, sleep_of.get(s)) for s in range(1, n + 1)]


def test_timeline_groups_by_sleep_and_grows_by_inserts(qtmodeltester: Any) -> None:
    model = TimelineModel()
    qtmodeltester.check(model)
    sleeps = [SleepRecord(1, T0, T0 + 5, False, "done", {}, {})]
    vs = versions(5, {1: 1, 2: 1, 3: 1})
    model.set_versions(vs, sleeps)
    assert model.rowCount() == 2  # sleep #1, then the snapshots after it
    assert model.data(model.index(0, 0)).startswith("Sleep #1 · done")
    assert model.rowCount(model.index(0, 0)) == 3
    rec = Recorder(model)
    more = [*vs, Version(6, "restore:s0001", T0 + 6, 9, None),
            Version(7, "consolidation:start", T0 + 7, 9, 2)]
    model.set_versions(more, [*sleeps, SleepRecord(2, T0 + 7, None, False, "running", {}, {})])
    assert "reset" not in rec.events
    assert model.rowCount() == 3
    idx = model.index_of(7)
    assert model.version_at(idx).seq == 7
    assert model.sleep_of(idx) == 2
    assert model.sleep_of(model.index_of(6)) is None
