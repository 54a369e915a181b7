"""Composition root of the window: settings → data folder (single-instance lock) → store →
session → main window. ``run(args)`` is what ``nocturne`` (no sub-command) calls."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QLockFile
from PySide6.QtWidgets import QApplication, QMessageBox

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.settings import Settings, SettingsError, SettingsFiles

LOCK_FILENAME = "nocturne.lock"


class InstanceLock:
    """One Nocturne window per data folder (a ``QLockFile`` inside it)."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / LOCK_FILENAME
        self._lock = QLockFile(str(self.path))
        self._lock.setStaleLockTime(0)  # only a dead owner makes the lock stale, never its age

    def acquire(self) -> bool:
        return bool(self._lock.tryLock(200))

    def owner(self) -> str:
        info = self._lock.getLockInfo()
        # PySide6 returns (ok, pid, hostname, appname)
        if isinstance(info, tuple) and len(info) >= 3 and info[0]:
            return f"process {info[1]} on {info[2] or 'this machine'}"
        return "another process"

    def release(self) -> None:
        if self._lock.isLocked():
            self._lock.unlock()


def already_running_message(data_dir: Path, owner: str) -> str:
    return (f"Nocturne is already open on this data folder:\n{data_dir}\n\n"
            f"({owner} holds it.) Close that window first, or start this one with "
            f"--data-dir pointing at another folder.")


def _app() -> QApplication:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    app = QApplication(sys.argv[:1])
    app.setApplicationName("Nocturne")
    app.setOrganizationName("Nocturne")
    return app


def run(args: Any) -> int:
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    app = _app()
    files = SettingsFiles()
    try:
        settings = files.load()
    except SettingsError as exc:
        QMessageBox.warning(None, "Nocturne", f"{exc}\n\nUsing the defaults for now; the file is "
                                              "left as it is until you save the settings.")
        settings = Settings()
    try:
        key = files.load_key()
    except SettingsError as exc:
        QMessageBox.warning(None, "Nocturne", str(exc))
        from nocturne_desktop.settings import ApiKey

        key = ApiKey()
    data_dir = settings.resolved_data_dir(getattr(args, "data_dir", None))
    lock = InstanceLock(data_dir)
    if not lock.acquire():
        QMessageBox.critical(None, "Nocturne", already_running_message(data_dir, lock.owner()))
        return 1
    try:
        try:
            session = Session(data_dir / paths.DB_FILENAME, settings, key, files=files)
        except NocturneError as exc:
            QMessageBox.critical(None, "Nocturne", f"The memory database cannot be opened:\n{exc}")
            return 1
        window = MainWindow(session)
        window.show()
        session.check_endpoint()
        return int(app.exec())
    finally:
        lock.release()
