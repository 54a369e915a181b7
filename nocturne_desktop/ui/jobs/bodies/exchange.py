"""The bodies of File → Export memory and Import an export (S-EXP-1), and the sentences the
window shows for them. The work is the core's (:mod:`nocturne_desktop.core.store.exchange`);
export reads the live store through the job's own connection, import writes only into the new
folder's store, never into the one the window has open. No Qt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop import paths
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import exchange
from nocturne_desktop.core.store.exchange import ExportFile, ImportRefused
from nocturne_desktop.ui.jobs.body import BodyContext


@dataclass(frozen=True)
class Exported:
    target: Path
    markdown: bool
    facts: int
    active: int
    size: int

    def message(self) -> str:
        kind = "Markdown" if self.markdown else "JSON"
        return (f"Exported {self.facts} {'fact' if self.facts == 1 else 'facts'} ({self.active} "
                f"active) and the retention policy to {self.target} ({kind}, {self.size:,} bytes)")


@dataclass(frozen=True)
class Imported:
    """What an import brought (said in words in the worker: the export itself is not kept)."""

    folder: Path
    facts: int
    contents: str
    """:meth:`ExportFile.contents`."""
    policy: RetentionPolicy | None
    """The policy the imported memory carries (None: it runs under the settings')."""
    policy_said: str
    markdown: bool

    @classmethod
    def of(cls, folder: Path, read: ExportFile) -> Imported:
        return cls(folder, len(read.export.facts), read.contents(), read.policy,
                   read.policy_message(), read.markdown)

    def message(self) -> str:
        """What came in and where (the status line)."""
        return f"Imported {self.contents} into {self.folder}"

    def policy_message(self) -> str:
        """What became of the retention policy (the import's notice)."""
        return self.policy_said[0].upper() + self.policy_said[1:]


def export_body(target: Path, *, markdown: bool, policy: RetentionPolicy | None = None
                ) -> Callable[[BodyContext], Exported]:
    """The job body of one export: the core writes the file atomically (never half a file),
    with ``policy``, the one the window's memory runs under."""

    def run(ctx: BodyContext) -> Exported:
        try:
            size = exchange.write_export(ctx.store, target, markdown=markdown, policy=policy)
        except OSError as exc:
            raise ImportRefused(f"{target} could not be written: {exc.strerror or exc}") from None
        facts = ctx.store.all_facts()
        return Exported(target, markdown, len(facts), sum(1 for f in facts if f.active), size)

    return run


def check_import_folder(folder: Path, live_db: Path) -> None:
    """Refuse a target folder before anything is read: the window's own folder, or a folder
    with other files in it. A folder that already holds a memory is left to the core, which
    refuses it with its own message."""
    db = paths.db_path(folder)
    if db.resolve() == live_db.resolve():
        raise ImportRefused(f"{folder} is the memory this window has open; import into a new, "
                            "empty data folder (nothing was written)")
    if folder.is_dir() and not db.exists() and any(folder.iterdir()):
        raise ImportRefused(f"{folder} is not empty; import into a new, empty data folder "
                            "(nothing was written)")


def import_body(file: Path, folder: Path) -> Callable[[BodyContext], Imported]:
    """The job body of one import, JSON or Markdown (it never touches ``ctx.store``, the
    window's memory)."""

    def run(_ctx: BodyContext) -> Imported:
        try:
            read = exchange.import_file(file, paths.db_path(folder))
        except OSError as exc:
            raise ImportRefused(f"{folder} could not be written: {exc.strerror or exc}") from None
        return Imported.of(folder, read)

    return run
