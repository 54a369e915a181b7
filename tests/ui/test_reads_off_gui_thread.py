"""The window's O(store) reads (a past version's state, a diff) run off the GUI thread, and a
read that no longer applies never reaches the window."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.store import Store
from nocturne_desktop.settings import Settings
from tests.ui.conftest import seed_store


def _versions(db_path: Path) -> list[Any]:
    seed_store(db_path)
    with Store(db_path) as store:
        v1 = store.snapshot("manual")
        store.forget("m_2")
        v2 = store.snapshot("after forget")
    return [v1, v2]


def _record_threads(monkeypatch: pytest.MonkeyPatch, name: str, gate: dict[int, threading.Event]
                    ) -> list[int]:
    """Wrap ``Store.<name>``: record the calling thread; a call whose first argument is in
    ``gate`` waits for that event (a slow read)."""
    seen: list[int] = []
    original = getattr(Store, name)

    def wrapped(self: Store, *args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        event = gate.get(args[0]) if args else None
        if event is not None:
            event.wait(5)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, name, wrapped)
    return seen


def window_over_versions(make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch,
                         read: str, slow: Any = None) -> tuple[Any, Any, Any, list[int]]:
    """A window over a store with two versions (m_2 forgotten between them); ``Store.<read>``
    records its threads and, for the first version, waits for the event ``slow``."""
    v1, v2 = _versions(db_path)
    seen = _record_threads(monkeypatch, read, {v1.seq: slow} if slow is not None else {})
    return make_window(Settings()), v1, v2, seen


def open_diff(qtbot: Any, win: Any) -> None:
    """Show the Diff tab and wait for its diff (computed in a job)."""
    win.tabs.setCurrentWidget(win.diff)
    qtbot.waitUntil(lambda: win.diff.diff is not None, timeout=5_000)


def test_a_version_is_read_off_the_gui_thread(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, v1, _, seen = window_over_versions(make_window, db_path, monkeypatch, "state_at")
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    assert seen and threading.get_ident() not in seen
    assert "m_2" in [f.id for f in win.memory.model.facts("human")]


def test_a_diff_is_computed_off_the_gui_thread(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, v1, v2, seen = window_over_versions(make_window, db_path, monkeypatch, "diff")
    open_diff(qtbot, win)
    assert win.diff.pair() == (v1.seq, v2.seq)
    assert seen and threading.get_ident() not in seen
    assert [e.item_id for e in win.diff.diff.forgotten] == ["m_2"]


def test_a_superseded_version_view_never_reaches_the_window(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = threading.Event()
    win, v1, v2, _ = window_over_versions(make_window, db_path, monkeypatch, "state_at", slow)
    win.timeline.select_version(v1.seq)  # slow: still reading when the next one is picked
    win.timeline.select_version(v2.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    assert win.memory.viewing == v2
    slow.set()
    win.session.wait_threads()
    qtbot.wait(50)  # let anything still queued arrive
    assert win.memory.viewing == v2
    assert "m_2" not in [f.id for f in win.memory.model.facts("human")]


def test_back_to_live_drops_a_version_still_being_read(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = threading.Event()
    win, v1, _, _ = window_over_versions(make_window, db_path, monkeypatch, "state_at", slow)
    win.timeline.select_version(v1.seq)
    win.menus.live.trigger()
    slow.set()
    win.session.wait_threads()
    qtbot.wait(50)
    assert win.viewing is None and not win.memory.banner.isVisible()
    assert "m_2" not in [f.id for f in win.memory.model.facts("human")]


def test_show_kept_computes_the_kept_facts_off_the_gui_thread(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, _, _, seen = window_over_versions(make_window, db_path, monkeypatch, "diff")
    open_diff(qtbot, win)
    assert win.diff.model.rowCount() == 1  # the forgotten m_2 only
    assert "kept" not in win.diff.summary.text()  # not read, so not counted as "0 kept"
    win.diff.show_kept.setChecked(True)
    # every other fact was kept between the two versions: they must be listed now
    qtbot.waitUntil(lambda: win.diff.model.rowCount() == 9, timeout=5_000)
    assert "8 kept" in win.diff.summary.text()
    assert len(win.diff.diff.kept) == 8
    assert threading.get_ident() not in seen


def test_a_superseded_endpoint_probe_never_reaches_the_window(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    release = threading.Event()
    made: list[int] = []

    class Client:
        def __init__(self) -> None:
            made.append(len(made))
            self.n = made[-1]

        def list_models(self) -> list[str]:
            if self.n == 0:  # the first probe: slow, answers late
                release.wait(5)
                return ["old-model"]
            return [f"model-{self.n}"]

        def close(self) -> None:
            pass

    win = make_window(Settings(), model_factory=Client)
    seen: list[list[str]] = []
    win.session.endpointChecked.connect(lambda ok, msg, models, caps: seen.append(models))
    win.session.check_endpoint()  # the slow one
    qtbot.waitUntil(lambda: len(made) == 1, timeout=5_000)
    win.session.check_endpoint()  # supersedes it
    qtbot.waitUntil(lambda: seen == [["model-1"]], timeout=5_000)
    release.set()
    win.session.wait_threads()
    qtbot.wait(50)
    assert seen == [["model-1"]]  # the late answer of the first never arrived
