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

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)

from nocturne_desktop.settings import AutoSleep  # noqa: E402


def main(argv: Sequence[str]) -> int:
    for theme in shots.THEMES:
        render(argv, theme)
    return 0


def render(argv: Sequence[str], theme: str) -> None:
    with shots.light_session(argv, theme) as (_app, out, work, db):
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
        win.close()
        s.wait_threads()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
