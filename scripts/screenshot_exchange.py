"""Render export and import (light and dark palettes): the File menu with its export and
import entries, the status line after File → Export memory as JSON, the folder an import goes
to (typed or picked), and the message after
File → Import facts from a JSON export into scratch (another memory's facts added to this
one's scratch block, the ones it already holds skipped), with the new facts in the tree.

Offscreen, no model; the export and the import are real (the window's own jobs). Writes
``docs/screenshots/{export-menu,export,import-folder,import-scratch}-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_exchange.py [out_dir]``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)
from PySide6.QtCore import QPoint  # noqa: E402

from nocturne_desktop.core.store import Store, exchange  # noqa: E402
from nocturne_desktop.core.types import FactDraft  # noqa: E402

THEIRS = [  # the memory of another machine: two facts this one holds, three it does not
    ("human", "identity", "The user lives in Lisbon."),
    ("human", "preferences", "The user drinks green tea, never coffee."),
    ("human", "identity", "The user's sister Ana lives in Porto."),
    ("human", "preferences", "The user plays the cello on Thursday evenings."),
    ("episodes", "event", "The user ran the Lisbon half marathon in March."),
]


def their_export(folder: Path) -> Path:
    with Store(folder / "laptop" / "nocturne.db") as store:
        for block, category, text in THEIRS:
            store.append(block, FactDraft(text, category))
        store.snapshot("encoded")
        file = folder / "laptop-memory.json"
        exchange.write_export(store, file)
    return file


def wait_notice(win: Any, not_this: Any = None) -> Any:
    shots.spin(lambda: not win.session.busy and win.exchange.notice is not None
               and win.exchange.notice is not not_this and win.exchange.notice.isVisible())
    return win.exchange.notice


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.chat.input.clear()
    win.tabs.setCurrentWidget(win.memory)
    # the File menu, open
    file_menu = win.menuBar().actions()[0].menu()
    bar_rect = win.menuBar().actionGeometry(win.menuBar().actions()[0])
    file_menu.popup(win.menuBar().mapToGlobal(QPoint(bar_rect.left(), bar_rect.bottom())))
    file_menu.setActiveAction(win.menus.export_json)
    shots.shoot_over(win, out, f"export-menu-{theme}", file_menu)
    file_menu.close()
    # a real export, and the status line that says where and how much
    backups = work / "Backups"
    backups.mkdir()
    win.exchange.export_to(str(backups / "nocturne-memory.json"))
    shots.spin(lambda: win.statusBar().currentMessage().startswith("Exported"))
    shots.shoot(win, out, f"export-{theme}")
    # the folder an import goes to: typed (a new one is made) or picked
    file = their_export(work)
    from nocturne_desktop.ui.exportimport import ImportFolderDialog, new_folder_beside

    ask = ImportFolderDialog(new_folder_beside(file), win.session.db_path, win)
    ask.show()
    ask.move(win.mapToGlobal(QPoint(380, 220)))
    shots.shoot_over(win, out, f"import-folder-{theme}", ask)
    ask.close()
    # another memory's facts into this one's scratch block
    win.exchange.import_into_scratch(str(file))
    box = wait_notice(win)
    shots.spin(lambda: any("cello" in f.text for f in win.memory.model.facts("scratch")))
    box.move(win.mapToGlobal(QPoint(560, 470)))  # below the tree's rows: the new facts show
    shots.shoot_over(win, out, f"import-scratch-{theme}", box)
    box.close()
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
