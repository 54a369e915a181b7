"""The bodies of File → Export memory and Import a JSON export (S-EXP-1), and the sentences
the window shows for them. The work is the core's (:mod:`nocturne_desktop.core.store.exchange`);
export reads the live store through the job's own connection, import writes only into the new
folder's store, never into the one the window has open. No Qt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop import paths
from nocturne_desktop.core.store import exchange
from nocturne_desktop.core.store.exchange import ImportRefused
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
        return (f"Exported {self.facts} facts ({self.active} active) to {self.target} "
                f"({kind}, {self.size:,} bytes)")


@dataclass(frozen=True)
class Imported:
    folder: Path
    facts: int
    versions: int
    mutations: int
    conversations: int

    def message(self) -> str:
        return (f"Imported {self.facts} facts, {self.versions} versions, {self.mutations} audit "
                f"rows and {self.conversations} conversations into {self.folder}")


def export_body(target: Path, *, markdown: bool) -> Callable[[BodyContext], Exported]:
    """The job body of one export: the core writes the file atomically (never half a file)."""

    def run(ctx: BodyContext) -> Exported:
        try:
            size = exchange.write_export(ctx.store, target, markdown=markdown)
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
    """The job body of one import (it never touches ``ctx.store``, the window's memory)."""

    def run(_ctx: BodyContext) -> Imported:
        try:
            e = exchange.import_file(file, paths.db_path(folder))
        except OSError as exc:
            raise ImportRefused(f"{folder} could not be written: {exc.strerror or exc}") from None
        return Imported(folder, len(e.facts), len(e.versions), len(e.mutations),
                        len(e.conversations))

    return run
