"""Render the automatic-sleep notice at 1280×800 (light and dark palettes).

"Sleep after 3 new facts" is on; the counter is at the trigger, and the window's own watcher
starts a real sleep through the worker (the scripted model of ``screenshots.py``); the bar with
its summary and Undo is then captured. Offscreen, no model server.
Writes ``docs/screenshots/autosleep-notice-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_autosleep.py [out_dir]``.
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

from nocturne_desktop.settings import AutoSleep  # noqa: E402


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    win = shots.build_window(db, work, shots.ScriptedModel())
    s = win.session
    s.settings = s.settings.model_copy(update={"auto_sleep": AutoSleep(after_facts=3)})
    win.tabs.setCurrentWidget(win.memory)
    win.autosleep.new_facts = 3  # as after three remembered facts
    if not win.autosleep.check():
        raise SystemExit("the automatic sleep did not start")
    shots.spin(lambda: not s.busy)
    s.wait_threads()
    win.tabs.setCurrentWidget(win.memory)
    shots.shoot(win, out, f"autosleep-notice-{theme}")
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
