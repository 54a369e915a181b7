"""File → Export memory / Import a JSON export, in the window (S-EXP-1)."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QProcess


def window_command(folder: Path) -> tuple[str, list[str]]:
    """The program and arguments that open a window on the memory in ``folder``."""
    if getattr(sys, "frozen", False):
        return sys.executable, ["--data-dir", str(folder)]
    return sys.executable, ["-m", "nocturne_desktop", "--data-dir", str(folder)]


def launch_window(folder: Path) -> None:
    """Start a second Nocturne process on ``folder`` (its own data folder and lock)."""
    program, args = window_command(folder)
    ok, _pid = QProcess.startDetached(program, args)
    if not ok:
        raise OSError(f"could not start {program}")
