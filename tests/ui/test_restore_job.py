"""A restore (the timeline's "Restore this version", and the undo of a sleep) runs as the one
store-writing job: off the GUI thread, the window busy meanwhile, errors said as before.

Every test here fails on the old code, where ``Session.restore`` wrote through the GUI
thread's store and returned the new version."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.errors import ReadOnlyStore
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft, StoreChanges
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.jobs import Job
from tests.ui.conftest import seed_store, snapshot_of


def _two_versions(db_path: Path) -> tuple[Any, Any]:
    seed_store(db_path)
    with Store(db_path) as store:
        v1 = store.snapshot("manual")
        store.forget("m_2")
        v2 = store.snapshot("after forget")
    return v1, v2


def _gui_writes(win: Any) -> list[StoreChanges]:
    """Every commit on the GUI thread's own store from now on."""
    seen: list[StoreChanges] = []
    win.session.store.subscribe(seen.append)
    return seen


def test_restore_runs_in_a_job_and_the_window_is_busy_meanwhile(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    v1, _ = _two_versions(db_path)
    win = make_window(Settings())
    gui_writes = _gui_writes(win)
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    with qtbot.waitSignal(win.session.versionCreated, timeout=10_000) as blocker:
        win.timeline.restore_button.click()
        job = win.session.job
        assert isinstance(job, Job) and job.name == "restore"
        assert win.session.busy == "restore"
        # a second write is refused while it runs, and the window says it is busy
        assert not win.timeline.restore_button.isEnabled() and not win.menus.undo.isEnabled()
        assert not win.menus.undo_change.isEnabled() and not win.menus.sleep.isEnabled()
        assert win.statusBar().currentMessage() == "restoring…"
        with pytest.raises(RuntimeError, match="wait until"):
            win.session.restore(v1.seq)
        with pytest.raises(RuntimeError, match="wait until restoring ends"):
            win.session.hand("forget_now", "m_1")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    new = blocker.args[0]
    assert new.label == f"restore:{v1.id}"
    # written by the job's own store on its own thread, none on the GUI thread's
    assert job.context.store_thread is not None
    assert job.context.store_thread != threading.get_ident()
    assert gui_writes == []
    # the views followed: live again, the timeline on the new version, m_2 back in the tree
    assert win.viewing is None and not win.memory.banner.isVisible()
    assert win.timeline.current_version().seq == new.seq
    assert "m_2" in [f.id for f in win.memory.model.facts("human")]
    assert win.session.store.get("m_2").active
    assert "memory is live" in win.statusBar().currentMessage()  # not cleared by the end
    assert win.timeline.restore_button.isEnabled() and win.menus.undo_change.isEnabled()


def test_ctrl_z_undoes_a_restore_and_redo_makes_it_again(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    v1, _ = _two_versions(db_path)
    win = make_window(Settings())
    win.timeline.select_version(v1.seq)
    with qtbot.waitSignal(win.session.versionCreated, timeout=10_000):
        win.timeline.restore_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert win.session.store.get("m_2").active
    win.menus.undo_change.trigger()  # Ctrl+Z
    assert not win.session.store.get("m_2").active
    assert "m_2" not in [f.id for f in win.memory.model.facts("human")]
    win.menus.redo.trigger()  # Ctrl+Shift+Z
    assert win.session.store.get("m_2").active
    assert "m_2" in [f.id for f in win.memory.model.facts("human")]


def test_a_read_only_store_says_so_and_loses_nothing(
        qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v1, _ = _two_versions(db_path)
    win = make_window(Settings())
    versions_before = len(win.session.store.versions())
    facts_before = snapshot_of(win.session.store.all_facts())
    raised: list[BaseException] = []
    original = Store.restore

    def read_only_restore(self: Store, version: int | str) -> Any:
        # the store turns read-only under the restore (a real SQLite SQLITE_READONLY, through
        # the store's own classification; root ignores file permissions)
        self._conn.execute("PRAGMA query_only = ON")
        try:
            return original(self, version)
        except BaseException as exc:
            raised.append(exc)
            raise

    monkeypatch.setattr(Store, "restore", read_only_restore)
    created: list[Any] = []
    win.session.versionCreated.connect(created.append)
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    win.timeline.restore_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert len(raised) == 1 and isinstance(raised[0], ReadOnlyStore)
    # the same sentence the status bar showed when the GUI thread wrote (str of the error)
    assert win.statusBar().currentMessage() == str(raised[0])
    assert "read-only" in win.statusBar().currentMessage()
    assert created == []
    monkeypatch.setattr(Store, "restore", original)
    assert len(win.session.store.versions()) == versions_before
    assert snapshot_of(win.session.store.all_facts()) == facts_before
    assert win.timeline.restore_button.isEnabled()  # and the window can try again
    with qtbot.waitSignal(win.session.versionCreated, timeout=10_000):
        win.timeline.restore_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert win.session.store.get("m_2").active


def test_undo_of_a_sleep_is_a_restore_job_too(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    seed_store(db_path)
    with Store(db_path) as store:
        sid = store.begin_sleep({})
        start = store.snapshot("consolidation:start", sleep_id=sid)
        store.forget("m_2")
        store.snapshot("pass:forget:after", sleep_id=sid)
        store.finish_sleep(sid, "done", {})
    win = make_window(Settings())
    gui_writes = _gui_writes(win)
    with qtbot.waitSignal(win.session.versionCreated, timeout=10_000) as blocker:
        win.menus.undo.trigger()
        assert win.session.busy == "restore"
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    assert blocker.args[0].label == f"restore:{start.id}"
    assert gui_writes == []
    assert win.session.store.get("m_2").active


def test_a_restore_lands_on_live_and_new_facts_appear(qtbot: Any, make_window: Any, db_path: Path) -> None:
    """Fails on the old code: the Memory tab showed the new version read-only, so a fact from
    chat did not appear until "Back to live"."""
    seed_store(db_path)
    with Store(db_path) as store:
        v1 = store.snapshot("manual")
        store.forget("m_2")
        store.snapshot("after forget")
    win = make_window(Settings())
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)  # looking at v1, read-only
    with qtbot.waitSignal(win.session.versionCreated, timeout=5_000) as blocker:
        win.timeline.restore_button.click()
    assert win.timeline.current_version().seq == blocker.args[0].seq  # the timeline marks it
    assert win.viewing is None and not win.memory.banner.isVisible()
    assert "m_2" in [f.id for f in win.memory.model.facts("human")]
    qtbot.wait(200)  # a read of the new version still running would land here: none may
    assert win.viewing is None and not win.memory.banner.isVisible()
    # a fact the encoder writes now shows at once
    new = win.session.store.append("scratch", FactDraft("The user is learning the cello.", "context",
                                                        None, time.time()))
    assert new.id in [f.id for f in win.memory.model.facts("scratch")]
    assert "memory is live" in win.statusBar().currentMessage()
