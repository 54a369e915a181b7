"""The retention policy travels with a memory through File → Export and Import (issue 25): the
imported memory's window runs under the policy it was exported with and the person is told;
a change to the retention there stays with that memory, never in the person's settings."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from nocturne_desktop import paths
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.memorypolicy import keep_policy, memory_policy
from nocturne_desktop.settings import Settings, SettingsFiles
from nocturne_desktop.ui import windows
from tests.ui.conftest import seed_store
from tests.ui.test_exchange_ui import export_said, pick_import, save_as, wait_notice

LAPTOP = RetentionPolicy(stale_after_days=90, max_active_facts=300, forget_below=5,
                         protected_categories=("identity", "commitments"))


@pytest.mark.parametrize("suffix", [".json", ".md"])
def test_an_imported_memory_runs_under_the_policy_it_was_exported_with(
        qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path, tmp_folders: dict[str, Path],
        monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    seed_store(db_path)
    win = make_window(Settings(retention=LAPTOP))
    file = tmp_path / f"laptop{suffix}"
    save_as(monkeypatch, file)
    (win.menus.export_md if suffix == ".md" else win.menus.export_json).trigger()
    assert str(file) in export_said(qtbot, win)

    win.session.apply_settings(Settings(), save=True)  # the person's own policy is the default now
    folder = tmp_path / "moved"
    folder.mkdir()
    pick_import(monkeypatch, file, folder)
    win.menus.import_json.trigger()
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Information
    assert "retention policy came with it" in box.text() and "stale after 90 days" in box.text()
    with Store(paths.db_path(folder)) as imported:
        assert memory_policy(imported) == LAPTOP

    box.button(QMessageBox.StandardButton.Open).click()
    (other,) = [w for w in windows.open_windows() if w is not win]
    try:
        assert other.session.settings.retention == LAPTOP
        assert other.session.settings_retention == RetentionPolicy()
        assert win.session.settings.retention == RetentionPolicy()  # the origin keeps its own
        changed = LAPTOP.model_copy(update={"stale_after_days": 45.0})
        other.session.apply_settings(
            other.session.settings.model_copy(update={"retention": changed}))
        assert memory_policy(other.session.store) == changed
        assert SettingsFiles(tmp_folders["config"]).load().retention == RetentionPolicy()
    finally:
        other.close()
        other.session.wait_threads()


def test_a_policy_changed_while_a_job_writes_is_kept_when_it_ends_without_waiting(
        make_window: Any, db_path: Path) -> None:
    """The GUI thread never waits on another writer's lock: the retention changed during a
    sleep (here: another connection holding the write lock, the session busy) is applied at
    once and written to the memory when the job ends."""
    seed_store(db_path)
    with Store(db_path) as s:
        keep_policy(s, LAPTOP)
    win = make_window()
    session = win.session
    assert session.settings.retention == LAPTOP
    changed = LAPTOP.model_copy(update={"max_active_facts": 120})
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # what a sleep's transaction holds
        session._work_kind = "sleep"  # as _begin marks the one store-writing job
        session._refresh_busy()
        t0 = time.monotonic()
        session.apply_settings(session.settings.model_copy(update={"retention": changed}))
        assert time.monotonic() - t0 < 1.0 and session.settings.retention == changed
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert memory_policy(session.store) == LAPTOP  # not yet: the job still runs
    session._work_kind = ""
    session._refresh_busy()
    assert memory_policy(session.store) == changed
