"""File → Export memory / Import a JSON export, in the window (S-EXP-1): the file dialogs,
the messages that say where and how many facts, and a second window on an imported memory.
The work runs in read jobs (:mod:`nocturne_desktop.ui.jobs.bodies.exchange`); an import into
this memory's scratch is the session's one store-writing job."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QProcess, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox, QStatusBar

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.store.exchange import ScratchImport
from nocturne_desktop.ui import refusals
from nocturne_desktop.ui.jobs import describe_error
from nocturne_desktop.ui.jobs.bodies.exchange import (
    Exported,
    Imported,
    check_import_folder,
    export_body,
    import_body,
)

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session


class ExportImport(QObject):
    """What File → Export… and Import… do. Signal ``runningChanged(bool)``: one export or
    import at a time (a second would supersede the first's message)."""

    runningChanged = Signal(bool)

    def __init__(self, window: QMainWindow, session: Session) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.notice: QMessageBox | None = None
        """The last export/import message box (non-modal; tests read and click it)."""
        self.import_choice: QMessageBox | None = None
        """The last "into scratch?" question (tests click its buttons)."""

    @property
    def bar(self) -> QStatusBar:
        return self.window.statusBar()

    def _running(self, running: bool) -> None:
        self.runningChanged.emit(running)

    def _notice(self, icon: QMessageBox.Icon, text: str,
                buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok) -> QMessageBox:
        box = QMessageBox(icon, "Nocturne", text, buttons, self.window)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.notice = box
        box.open()
        return box

    def export_memory(self, *, markdown: bool) -> None:
        kind, suffix = ("Markdown", "md") if markdown else ("JSON", "json")
        path, _ = QFileDialog.getSaveFileName(
            self.window, f"Export memory as {kind}", str(Path.home() / f"nocturne-memory.{suffix}"),
            f"{kind} (*.{suffix});;All files (*)")
        if path:
            self.export_to(path, markdown=markdown)

    def export_to(self, path: str, *, markdown: bool = False) -> None:
        """Export the live memory to ``path`` off the GUI thread; say where and how many facts."""
        self.bar.showMessage(f"Exporting memory to {path}…")
        self._running(True)

        def done(result: Exported) -> None:
            self._running(False)
            self.bar.showMessage(result.message(), 15000)
            self._notice(QMessageBox.Icon.Information, result.message())

        def failed(exc: BaseException) -> None:
            self._running(False)
            self.bar.clearMessage()
            self._notice(QMessageBox.Icon.Warning,
                         f"The memory was not exported: {describe_error(exc)}")

        self.session.read("export", export_body(Path(path), markdown=markdown), done, failed)

    def _pick_export(self, title: str) -> str:
        file, _ = QFileDialog.getOpenFileName(
            self.window, title, str(Path.home()), "Nocturne export (*.json);;All files (*)")
        return file

    def import_memory(self) -> None:
        file = self._pick_export("Import a JSON export")
        if not file:
            return
        folder = QFileDialog.getExistingDirectory(
            self.window, "A new, empty folder for the imported memory", str(Path(file).parent))
        if folder:
            self.import_into(file, folder)

    def _offer_scratch(self, file: str, text: str) -> QMessageBox:
        """Ask before importing ``file``'s facts into this memory's scratch (non-modal)."""
        box = self._notice(QMessageBox.Icon.Question, text, QMessageBox.StandardButton.Cancel)
        into = box.addButton("Import facts into scratch", QMessageBox.ButtonRole.AcceptRole)
        into.clicked.connect(lambda: self.import_into_scratch(file))
        box.setDefaultButton(into)
        self.import_choice = box
        return box

    def import_scratch_memory(self) -> None:
        file = self._pick_export("Import facts into scratch from a JSON export")
        if file:
            self.import_into_scratch(file)

    def import_into_scratch(self, file: str) -> None:
        """Add the active facts of the export ``file`` to this memory's scratch block off the
        GUI thread (one version, your edits, duplicates skipped and counted); a refused file
        shows the core's sentence and writes nothing."""
        self.bar.showMessage(f"Importing the facts of {file} into scratch…")
        self._running(True)

        def done(result: ScratchImport) -> None:
            self._running(False)
            self.bar.showMessage(result.message(), 15000)
            text = result.message() + "."
            if result.refused:
                text += "\n\nRefused, nothing of them was written:\n" + "\n".join(
                    f"• {r.id}: {refusals.verdict(r.rule, r.why)}" for r in result.refused[:8])
                if len(result.refused) > 8:
                    text += f"\n… and {len(result.refused) - 8} more"
            lines = result.skipped_lines()
            if lines:
                text += "\n\nAlready in memory:\n" + "\n".join(f"• {t}" for t in lines[:8])
                if len(lines) > 8:
                    text += f"\n… and {len(lines) - 8} more"
            self._notice(QMessageBox.Icon.Information, text)

        def failed(exc: BaseException) -> None:
            self._running(False)
            self.bar.clearMessage()
            self._notice(QMessageBox.Icon.Warning, not_imported(exc))

        try:
            self.session.import_into_scratch(Path(file), done, failed)
        except RuntimeError as exc:  # another job writes memory
            self._running(False)
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {exc}")

    def import_into(self, file: str, folder: str) -> None:
        """Import the export ``file`` into the new memory folder ``folder`` off the GUI thread; a
        refused file or folder shows the core's sentence and writes nothing. On success, offer
        to open the imported memory in a new window."""
        target = Path(folder)
        if (paths.db_path(target).resolve() == self.session.db_path.resolve()
                and not self.session.store.is_empty()):
            self._offer_scratch(
                file, f"{target} is the memory this window has open, and it is not empty: a whole "
                "export cannot replace it.\n\nImport the export's active facts into this memory's "
                "scratch block instead, as your own edits (facts memory already holds are "
                "skipped), in one version that Ctrl+Z undoes?")
            return
        try:
            check_import_folder(target, self.session.db_path)
        except NocturneError as exc:
            self._notice(QMessageBox.Icon.Warning, f"Nothing was imported: {exc}")
            return
        self.bar.showMessage(f"Importing {file}…")
        self._running(True)

        def done(result: Imported) -> None:
            self._running(False)
            self.bar.showMessage(result.message(), 15000)
            box = self._notice(
                QMessageBox.Icon.Information,
                f"{result.message()}.\n\nOpen the imported memory in a new window?",
                QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Close)
            box.button(QMessageBox.StandardButton.Open).clicked.connect(
                lambda: self.open_memory_folder(result.folder))

        def failed(exc: BaseException) -> None:
            self._running(False)
            self.bar.clearMessage()
            self._notice(QMessageBox.Icon.Warning, not_imported(exc))

        self.session.read("import", import_body(Path(file), target), done, failed)

    def open_memory_folder(self, folder: Path) -> None:
        """A new window on another data folder (this one stays on its memory)."""
        try:
            launch_window(folder)
        except OSError as exc:
            self._notice(QMessageBox.Icon.Warning, f"The imported memory could not be opened: {exc}")
            return
        self.bar.showMessage(f"Imported memory opened in a new window ({folder})", 8000)


def not_imported(exc: BaseException) -> str:
    """One sentence for a refused import: the core's reason (which names the rule a refused
    text broke, e.g. ``sensitive: looks like a password``), said once that nothing came in."""
    why = describe_error(exc).removesuffix("; nothing was imported").removesuffix(
        " (nothing was written)")
    return f"Nothing was imported: {why}."


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
