"""What the window says about its storage (issue 13, items 3 and 4): a killed sleep reads
``interrupted`` on the timeline, a second window names the process holding the memory, and a
folder that cannot hold the lock is not called "already open"."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex

from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.app import InstanceLock, cannot_lock_message
from tests.core.storeholder import Holder


def test_a_sleep_killed_mid_way_reads_interrupted_on_the_timeline(
        make_window: Any, db_path: Path) -> None:
    """Fails on the old code: the reopened window showed "Sleep #1 · running"."""
    holder = Holder()
    try:
        holder.send(f"open {db_path}")
        sid = holder.send("sleep")
        holder.proc.send_signal(signal.SIGKILL)
        holder.proc.wait(10)
    finally:
        holder.close()
    win = make_window(Settings())
    assert win.session.interrupted_sleeps == [sid]
    model = win.timeline.model
    titles = [model.data(model.index(r, 0, QModelIndex())) for r in range(model.rowCount())]
    # the killed sleep had not snapshotted yet; a sleep that had shows its group title
    assert [s.status for s in win.session.store.sleeps()] == ["interrupted"]
    assert not any("running" in str(t) for t in titles), titles


def test_a_killed_sleep_with_snapshots_shows_interrupted_in_its_title(
        make_window: Any, db_path: Path) -> None:
    from nocturne_desktop.core.store import Store

    with Store(db_path) as store:  # a sleep that snapshotted, then its process "died"
        sid = store.begin_sleep({})
        store.snapshot("consolidation:start", sleep_id=sid)
    win = make_window(Settings())
    model = win.timeline.model
    titles = [str(model.data(model.index(r, 0, QModelIndex()))) for r in range(model.rowCount())]
    assert any(t.startswith(f"Sleep #{sid} · interrupted") for t in titles), titles


def test_a_second_window_names_the_holder_in_plain_words(tmp_folders: dict[str, Path]) -> None:
    first, second = InstanceLock(tmp_folders["data"]), InstanceLock(tmp_folders["data"])
    try:
        assert first.acquire() and not second.acquire()
        assert second.held_elsewhere
        msg = second.failure_message()
        assert f"Another Nocturne window (process {os.getpid()}" in msg
        assert "on this computer has this memory open" in msg
        assert "already open on this data folder" in msg
        assert " vm " not in msg.replace("\n", " ")  # the host name is not called a process
    finally:
        first.release()


def test_a_folder_that_cannot_hold_the_lock_is_not_called_already_open(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions; the read-only mount is in the fault matrix")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        lock = InstanceLock(folder)
        assert not lock.acquire() and not lock.held_elsewhere
        msg = lock.failure_message()
        assert "already open" not in msg and "permissions" in msg
    finally:
        folder.chmod(0o755)


def test_cannot_lock_message_says_full(tmp_path: Path) -> None:
    msg = cannot_lock_message(tmp_path, OSError(28, "No space left on device"))
    assert "full" in msg and "already open" not in msg


def test_the_window_refuses_a_sleep_while_another_process_sleeps(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    """Fails on the old code: the window's sleep ran interleaved with the other process's."""
    from tests.ui.conftest import seed_store

    seed_store(db_path)
    holder = Holder()
    try:
        holder.send(f"open {db_path}")
        sid = holder.send("sleep")
        win = make_window(Settings())
        assert win.session.interrupted_sleeps == []  # alive: not "interrupted"
        with qtbot.waitSignal(win.session.sleepEvent, timeout=60_000,
                              check_params_cb=lambda ev: ev.kind.final) as blocker:
            win.session.start_sleep(engine_only=True)
        qtbot.waitUntil(lambda: not win.session.busy, timeout=60_000)
        win.session.wait_threads()
        kind, message = blocker.args[0].kind, blocker.args[0].message
        assert kind == "sleep failed"
        assert f"a sleep is already running on this memory (pid {holder.pid}, since " in message
        assert [(s.id, s.status) for s in win.session.store.sleeps()] == [(sid, "running")]
        holder.send(f"finish {sid}")
    finally:
        holder.close()
