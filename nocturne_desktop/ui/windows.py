"""Every main window of this process, and how one more is opened on another memory.

Nocturne opens the demo memory and an imported memory as windows of the same process, as a
desktop app opens a second document: one built-in engine serves them all, *Quit* (Ctrl+Q) asks
once and closes every window, and closing one window (its title bar) closes only that one.
Each window holds the single-instance lock of its own data folder (:class:`InstanceLock`), so
a memory is never open twice, in this process or another; a memory already open here is
brought to the front instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError

if TYPE_CHECKING:
    from nocturne_desktop.ui.app import InstanceLock
    from nocturne_desktop.ui.mainwindow import MainWindow

_open: list[MainWindow] = []
_locks: dict[int, InstanceLock] = {}


class CannotOpen(NocturneError):
    """The memory cannot be opened in a new window (its folder is locked, its store refused)."""


def memory_name(folder: Path, *, demo: bool, usual: Path) -> str:
    """What a window calls its memory: ``demo``, ``your memory`` for the usual data folder
    (its folder's name, "Nocturne", would only repeat the app's), else the folder's name."""
    if demo:
        return "demo"
    if folder.resolve() == usual.resolve():
        return "your memory"
    return folder.name or str(folder)


def register(window: MainWindow, lock: InstanceLock | None = None) -> None:
    """``window`` is open (``lock``, if given, is released when it closes)."""
    if window not in _open:
        _open.append(window)
    if lock is not None:
        _locks[id(window)] = lock


def unregister(window: MainWindow) -> None:
    """``window`` closed: it leaves the list and its folder's lock is released."""
    if window in _open:
        _open.remove(window)
    lock = _locks.pop(id(window), None)
    if lock is not None:
        lock.release()


def open_windows() -> list[MainWindow]:
    """The open windows, in the order they were opened."""
    return list(_open)


def window_on(folder: Path) -> MainWindow | None:
    """The open window whose memory lives in ``folder``, if any."""
    want = paths.db_path(folder).resolve()
    for w in _open:
        if w.session.db_path.resolve() == want:
            return w
    return None


def bring_to_front(window: MainWindow) -> None:
    window.show()
    window.raise_()
    window.activateWindow()


def open_memory(origin: MainWindow, folder: Path, *, demo: bool = False) -> MainWindow:
    """A window on the memory in ``folder`` (the demo memory, made there if it is missing, with
    the demo's policy and no settings saved), with ``origin``'s settings and model; the window
    already open on it, brought to the front. :class:`CannotOpen` says why it cannot be.

    Its retention policy: the demo's for the demo; the one the memory carries (an imported
    memory's, restored from its export: the session reads it from the store); else the
    person's settings' (never the policy the origin runs under, which may be the demo's or its
    own memory's)."""
    from nocturne_desktop.ui.app import InstanceLock
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    shown = window_on(folder)
    if shown is not None:
        bring_to_front(shown)
        return shown
    lock = InstanceLock(folder)
    if not lock.acquire():
        raise CannotOpen(lock.failure_message())
    try:
        db = paths.db_path(folder)
        source = origin.session
        settings = source.settings.model_copy(update={"retention": source.settings_retention})
        if demo:
            from nocturne_desktop import demo as demo_data

            if not db.exists():
                db = demo_data.open_demo_store(folder)
            settings = settings.model_copy(update={"retention": demo_data.demo_policy()})
        session = Session(db, settings, source.api_key, files=None if demo else source.files,
                          model_factory=source.model_factory_override,
                          child_process=source.child_process)
        session.settings_retention = source.settings_retention
        window = MainWindow(session, qsettings=origin.qsettings, saves_geometry=False)
    except NocturneError as exc:
        lock.release()
        raise CannotOpen(f"The memory in {folder} cannot be opened: {exc}") from exc
    except BaseException:
        lock.release()
        raise
    register(window, lock)
    window.move(origin.pos() + QPoint(48, 48))  # cascaded from the window it came from
    bring_to_front(window)
    session.check_endpoint()
    return window


def quit_question(windows: list[MainWindow]) -> str | None:
    """What quitting would interrupt or close, in words; None when it may quit at once (one
    window, and nothing it would lose)."""
    lines: list[str] = []
    if len(windows) > 1:
        names = ", ".join(f"“{w.memory_name}”" for w in windows)
        lines.append(f"This closes all {len(windows)} windows: {names}.")
    many = len(windows) > 1
    for w in windows:
        where = f" in “{w.memory_name}”" if many else ""
        busy = w.session.busy
        if busy in ("sleep", "dry-run"):
            what = "A sleep" if busy == "sleep" else "A dry run"
            lines.append(f"{what} is running{where}: it is cancelled, and memory stays at the "
                         "last completed pass.")
        queued = w.session.queued
        if queued:
            n = len(queued)
            lines.append(f"{n} message{'s' if n != 1 else ''} you sent{where} "
                         f"{'have' if n != 1 else 'has'} not gone out yet and "
                         f"{'are' if n != 1 else 'is'} dropped.")
    return "\n\n".join(lines) if lines else None


def quit_all(asker: MainWindow) -> bool:
    """Quit: one question for every window when there is something to say
    (:func:`quit_question`, asked by ``asker``), then every window closes. Whether it quits."""
    windows = open_windows()
    if asker not in windows:
        windows.append(asker)
    question = quit_question(windows)
    if question is not None and not asker.confirm_quit(question):
        return False
    for w in windows:
        w.quitting = True
    for w in windows:
        w.close()
    return True
