"""File → Export memory / Import an export (JSON or Markdown), in the window (S-EXP-1): the
file dialogs, the folder an import goes to (typed, new, or picked: :class:`ImportFolderDialog`),
the messages that say where, how many facts and what became of the retention policy (an
export's in the status line), and a second window on an imported memory (a window of this
process: :mod:`~nocturne_desktop.ui.windows`), which runs under the policy it came with. The
work runs in read jobs (:mod:`nocturne_desktop.ui.jobs.bodies.exchange`); an import into this
memory's scratch is the session's one store-writing job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.store.exchange import ScratchImport
from nocturne_desktop.ui import refusals, windows
from nocturne_desktop.ui.jobs import describe_error
from nocturne_desktop.ui.jobs.bodies.exchange import (
    Exported,
    Imported,
    check_import_folder,
    export_body,
    import_body,
)

if TYPE_CHECKING:
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session


def new_folder_beside(file: Path) -> Path:
    """A folder that does not exist yet, beside ``file``, named after it (``backup memory``,
    ``backup memory 2``, …; ``laptop-memory`` for ``laptop-memory.json``): where an import of
    ``file`` goes unless the person says else."""
    base = file.parent / (file.stem if "memory" in file.stem.lower() else f"{file.stem} memory")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name} {n}")
    return candidate


class ImportFolderDialog(QDialog):
    """Where an imported memory goes: a folder typed (a new one is made by the import, a name
    alone goes beside the export) or picked with Browse…; refused folders (this window's, one
    with other files) are said here, and the dialog stays open."""

    def __init__(self, suggestion: Path, live_db: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import into a new memory folder")
        self.base = suggestion.parent
        self.live_db = live_db
        intro = QLabel("The imported memory goes into a folder of its own. Type a new folder's "
                       "name or path (it is made for you), or pick an empty folder.", self)
        intro.setWordWrap(True)
        self.path = QLineEdit(str(suggestion), self)
        self.path.setMinimumWidth(self.fontMetrics().horizontalAdvance("x" * 60))
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self._browse)
        self.where = QLabel("", self)
        self.where.setWordWrap(True)
        self.problem = QLabel("", self)
        self.problem.setWordWrap(True)
        self.problem.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.ok = buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addLayout(row)
        lay.addWidget(self.where)
        lay.addWidget(self.problem)
        lay.addWidget(buttons)
        for lab in (intro, self.where, self.problem):
            lab.setTextFormat(Qt.TextFormat.PlainText)
        self.path.textChanged.connect(self._show_where)
        self._show_where()

    def folder(self) -> Path | None:
        """The folder the text names (a bare name: beside the export), or None if empty."""
        text = self.path.text().strip()
        if not text:
            return None
        folder = Path(text).expanduser()
        return folder if folder.is_absolute() else self.base / folder

    def _show_where(self) -> None:
        folder = self.folder()
        self.ok.setEnabled(folder is not None)
        self.problem.hide()
        if folder is None:
            self.where.setText("")
        elif folder.exists():
            self.where.setText(f"Into the existing folder {folder}")
        else:
            self.where.setText(f"Into a new folder: {folder}")

    def _browse(self) -> None:
        start = self.folder()
        picked = QFileDialog.getExistingDirectory(
            self, "An empty folder for the imported memory",
            str(start.parent if start is not None else self.base))
        if picked:
            self.path.setText(picked)

    def accept(self) -> None:
        folder = self.folder()
        if folder is None:
            return
        try:
            check_import_folder(folder, self.live_db)
        except NocturneError as exc:
            self.problem.setText(str(exc))
            self.problem.show()
            return
        super().accept()

    @classmethod
    def ask(cls, suggestion: Path, live_db: Path, parent: QWidget | None = None) -> Path | None:
        """The folder the person chose, or None when they cancelled."""
        dialog = cls(suggestion, live_db, parent)
        return dialog.folder() if dialog.exec() == QDialog.DialogCode.Accepted else None


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
        """Export the live memory, with the retention policy it runs under, to ``path`` off the
        GUI thread; say where and how many facts."""
        self.bar.showMessage(f"Exporting memory to {path}…")
        self._running(True)

        def done(result: Exported) -> None:  # said in the status line, not a box over it
            self._running(False)
            self.bar.showMessage(result.message(), 30_000)

        def failed(exc: BaseException) -> None:
            self._running(False)
            self.bar.clearMessage()
            self._notice(QMessageBox.Icon.Warning,
                         f"The memory was not exported: {describe_error(exc)}")

        body = export_body(Path(path), markdown=markdown, policy=self.session.settings.retention)
        self.session.read("export", body, done, failed)

    def _pick_export(self, title: str) -> str:
        file, _ = QFileDialog.getOpenFileName(
            self.window, title, str(Path.home()),
            "Nocturne export (*.json *.md *.markdown);;All files (*)")
        return file

    def import_memory(self) -> None:
        file = self._pick_export("Import an export (JSON or Markdown)")
        if not file:
            return
        folder = ImportFolderDialog.ask(new_folder_beside(Path(file)), self.session.db_path,
                                        self.window)
        if folder is not None:
            self.import_into(file, str(folder))

    def _offer_scratch(self, file: str, text: str) -> QMessageBox:
        """Ask before importing ``file``'s facts into this memory's scratch (non-modal)."""
        box = self._notice(QMessageBox.Icon.Question, text, QMessageBox.StandardButton.Cancel)
        into = box.addButton("Import facts into scratch", QMessageBox.ButtonRole.AcceptRole)
        into.clicked.connect(lambda: self.import_into_scratch(file))
        box.setDefaultButton(into)
        self.import_choice = box
        return box

    def import_scratch_memory(self) -> None:
        file = self._pick_export("Import facts into scratch from an export")
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
                f"{result.message()}.\n\n{result.policy_message()}.\n\n"
                "Open the imported memory in a new window?",
                QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Close)
            box.button(QMessageBox.StandardButton.Open).clicked.connect(
                lambda: self.open_memory_folder(result.folder))

        def failed(exc: BaseException) -> None:
            self._running(False)
            self.bar.clearMessage()
            self._notice(QMessageBox.Icon.Warning, not_imported(exc))

        self.session.read("import", import_body(Path(file), target), done, failed)

    def open_memory_folder(self, folder: Path) -> MainWindow | None:
        """A new window of this process on another data folder (this one stays on its
        memory; Quit closes both)."""
        try:
            opened = windows.open_memory(cast("MainWindow", self.window), folder)
        except (OSError, NocturneError) as exc:
            self._notice(QMessageBox.Icon.Warning, f"The imported memory could not be opened: {exc}")
            return None
        own = ("; it runs under its own retention policy, imported with it"
               if opened.session.own_policy is not None else "")
        self.bar.showMessage(f"Imported memory opened in a new window ({folder}){own}", 8000)
        return opened


def not_imported(exc: BaseException) -> str:
    """One sentence for a refused import: the core's reason (which names the rule a refused
    text broke, e.g. ``sensitive: looks like a password``), said once that nothing came in."""
    why = describe_error(exc).removesuffix("; nothing was imported").removesuffix(
        " (nothing was written)")
    rule = getattr(exc, "rule", "")
    if rule:  # a fact's text in the file was refused at the admission check
        return (f"Nothing was imported: {refusals.rule_name(rule)} refused a fact in it "
                f"({refusals.without_label(why)}).")
    return f"Nothing was imported: {why}."
