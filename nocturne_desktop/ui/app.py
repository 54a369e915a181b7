"""Composition root of the window: settings → data folder (single-instance lock) → store →
session → main window. ``run(args)`` is what ``nocturne`` (no sub-command) calls."""

from __future__ import annotations

import argparse
import gc
import socket
import sys
from pathlib import Path

from PySide6.QtCore import QLockFile, QSysInfo
from PySide6.QtWidgets import QApplication, QMessageBox

from nocturne_desktop import paths
from nocturne_desktop.boot import startup
from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.settings import Settings, SettingsError, SettingsFiles
from nocturne_desktop.ui.plaintext import warn

LOCK_FILENAME = "nocturne.lock"


class InstanceLock:
    """One Nocturne window per data folder (a ``QLockFile`` inside it).

    :meth:`acquire` says whether the lock was taken; when it was not, :attr:`held_elsewhere`
    tells a lock held by another live process from a lock file that could not be written at all
    (read-only or full folder), and :meth:`failure_message` says which, in plain words.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_FILENAME
        self.setup_error: OSError | None = None
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only parent, a full disk: said by failure_message()
            self.setup_error = exc
        self._lock = QLockFile(str(self.path))
        self._lock.setStaleLockTime(0)  # only a dead owner makes the lock stale, never its age

    def acquire(self) -> bool:
        if self.setup_error is not None:
            return False
        return bool(self._lock.tryLock(200))

    @property
    def held_elsewhere(self) -> bool:
        """The lock exists and its owner is alive (as opposed to: it could not be written)."""
        return self.setup_error is None and self._lock.error() == QLockFile.LockError.LockFailedError

    def owner(self) -> str:
        """Who holds the lock, in plain words."""
        info = self._lock.getLockInfo()
        # PySide6 returns (pid, hostname, appname); some versions prefix an ok flag
        if isinstance(info, tuple) and len(info) == 4:
            info = info[1:] if info[0] else ()
        if not (isinstance(info, tuple) and len(info) == 3 and isinstance(info[0], int)):
            return "another Nocturne process"
        pid, host, app = info
        here = host in ("", socket.gethostname(), QSysInfo.machineHostName())
        where = "on this computer" if here else f"on the computer {host!r}"
        program = f", {app}" if app else ""
        return f"another Nocturne window (process {pid}{program}) {where}"

    def failure_message(self) -> str:
        if self.held_elsewhere:
            return already_running_message(self.data_dir, self.owner())
        return cannot_lock_message(self.data_dir, self.setup_error)

    def release(self) -> None:
        if self._lock.isLocked():
            self._lock.unlock()


def already_running_message(data_dir: Path, owner: str) -> str:
    return (f"Nocturne is already open on this data folder:\n{data_dir}\n\n"
            f"{owner[:1].upper()}{owner[1:]} has this memory open. Close that window first, "
            f"or start this one with --data-dir pointing at another folder.")


def cannot_lock_message(data_dir: Path, error: OSError | None = None) -> str:
    """The data folder cannot hold the lock file: say why (read-only, full, no permission)."""
    from nocturne_desktop.core.store.sqlerrors import folder_state

    why = folder_state(data_dir, error)
    return (f"Nocturne cannot use this data folder:\n{data_dir}\n\n{why} Nothing was changed. "
            "Fix that, or start Nocturne with --data-dir pointing at another folder.")


def tune_interpreter() -> None:
    """Keep the GUI thread responsive while workers run Python: a shorter GIL switch interval
    (every Qt call releases the GIL and must win it back), and one HTTP client built before the
    window shows (the first loads the TLS stack holding the GIL). Figures: ``docs/window.md``."""
    sys.setswitchinterval(0.001)
    from nocturne_desktop.llm import OpenAIClient

    OpenAIClient("http://127.0.0.1:9/v1").close()  # no request is made


def freeze_startup_objects() -> None:
    """Move everything alive after start-up out of the cyclic GC's reach (``gc.freeze``), so a
    full collection triggered by a worker scans only new objects."""
    gc.collect()
    gc.freeze()


def _app() -> QApplication:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    app = QApplication(sys.argv[:1])
    app.setApplicationName("Nocturne")
    app.setOrganizationName("Nocturne")
    return app


def run(args: argparse.Namespace) -> int:
    from nocturne_desktop.ui import windows
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    logfile.install(paths.log_dir())  # the CLI has done it already; idempotent
    app = _app()
    startup.prepare_app(app)  # window icon; first-paint probe when NOCTURNE_STARTUP_PROBE is set
    tune_interpreter()
    files = SettingsFiles()
    try:
        settings = files.load()
    except SettingsError as exc:
        warn(None, f"{exc}\n\nUsing the defaults for now; the file is "
                                              "left as it is until you save the settings.")
        settings = Settings()
    try:
        key = files.load_key()  # an ApiKey: registered with the log's redaction as it is made
    except SettingsError as exc:
        warn(None, str(exc))
        from nocturne_desktop.settings import ApiKey

        key = ApiKey()
    data_dir = settings.resolved_data_dir(getattr(args, "data_dir", None))
    demo = bool(getattr(args, "demo", False))
    retention = settings.retention  # the settings' own, whatever the demo runs under
    if demo:
        # the demo memory: its own folder, the demo's retention policy, nothing saved to the
        # person's settings (files=None below)
        from nocturne_desktop import demo as demo_data

        if not getattr(args, "data_dir", None):  # beside the memory in use (the settings')
            data_dir = demo_data.default_demo_dir(data_dir)
        settings = settings.model_copy(update={"retention": demo_data.demo_policy()})
    lock = InstanceLock(data_dir)
    if not lock.acquire():
        QMessageBox.critical(None, "Nocturne", lock.failure_message())
        return 1
    try:
        try:
            db = data_dir / paths.DB_FILENAME
            if demo and not db.exists():
                from nocturne_desktop.demo import open_demo_store

                db = open_demo_store(data_dir)
            session = Session(db, settings, key, files=None if demo else files)
            session.settings_retention = retention
        except NocturneError as exc:
            warn(None, f"The memory database cannot be opened:\n{exc}", QMessageBox.Icon.Critical)
            return 1
        window = MainWindow(session)
        windows.register(window, lock)
        window.show()
        window.keys.at_start()  # before anything is sent with the key
        freeze_startup_objects()
        session.check_endpoint()
        return int(app.exec())
    finally:
        lock.release()
