"""The window's messages about something that went wrong unexpectedly say where the log is."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from nocturne_desktop.core import logfile
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.jobs import describe_error
from tests.ui.conftest import seed_store


def test_an_unexpected_store_error_in_the_window_names_the_log_file(
        qtbot: Any, make_window: Any, db_path: Path, tmp_log_dir: Path) -> None:
    """Fails on the old code: the message said "logged with its details" and no more."""
    seed_store(db_path)
    path = logfile.install(tmp_log_dir)
    win = make_window(Settings())
    raw = sqlite3.connect(db_path)  # a table gone under the window: a bug, not a state
    try:
        raw.execute("DROP TABLE strengths")
        raw.commit()
    finally:
        raw.close()
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5_000)
    win.focus_search()
    panel = win.memory.search
    qtbot.keyClicks(panel.field, "Lisbon")
    qtbot.waitUntil(lambda: "Search failed" in panel.status.text(), timeout=5_000)
    text = panel.status.text()
    assert "unexpected" in text and f"Details are in {path}." in text
    assert path is not None and "no such table: strengths" in path.read_text(encoding="utf-8")


def test_a_bug_described_for_a_person_names_the_log_file(tmp_log_dir: Path) -> None:
    assert describe_error(KeyError("x")) == "unexpected error (KeyError: 'x')"  # no log yet
    path = logfile.install(tmp_log_dir)
    assert describe_error(KeyError("x")) == f"unexpected error (KeyError: 'x'). Details are in {path}."
    assert "Details" not in describe_error(ValueError("a sentence for a person"))
