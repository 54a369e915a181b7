"""Render the search found by meaning and Settings' memory budget at 1280×800 (light and dark
palettes).

The window's seeded memory (``screenshots.FACTS``, its "lives in Porto now" fact replaced by
"I moved to Porto.") is searched for "where do I live": the facts sharing a word first, their
words marked, then the one related by meaning alone. Settings is opened on a scripted server
that says its model's window the way LM Studio does (8,192 tokens loaded, 32,768 trained), and
shot once the window was read off the GUI thread. Offscreen, no model. Writes
``docs/screenshots/search-related-{light,dark}.png`` and ``settings-budget-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_recall.py [out_dir]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)

from nocturne_desktop.core.store import Store  # noqa: E402
from nocturne_desktop.core.types import FactDraft  # noqa: E402
from tests.fakeserver import FakeLLM  # noqa: E402

QUERY = "where do I live"
MOVED = "I moved to Porto."


def seed(db: Path) -> None:
    now = time.time()
    with Store(db) as store:
        for user, reply in shots.CHAT:
            store.add_turn("user", user)
            store.add_turn("assistant", reply)
        for i, (block, cat, text, age) in enumerate(shots.FACTS):
            if "lives in Porto" in text:
                text = MOVED  # shares no word with the question
            store.append(block, FactDraft(text, cat, 1 + i % 4, now - age * shots.DAY))


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    from nocturne_desktop.settings import ApiKey, Settings
    from nocturne_desktop.ui.settings_dialog import SettingsDialog

    db = work / "recall.db"  # not the seeded one: its Porto fact shares the word "lives"
    seed(db)
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.focus_search()
    panel = win.memory.search
    panel.field.setText(QUERY)
    shots.spin(lambda: panel.query == QUERY)  # searched off the GUI thread
    if not any(not h.exact and h.fact.text == MOVED for h in panel.hits):
        raise SystemExit(f"the search for {QUERY!r} did not list {MOVED!r} as related")
    shots.shoot(win, out, f"search-related-{theme}")
    panel.field.clear()

    server = FakeLLM(models=("qwen2.5-7b-instruct",)).start()
    try:
        server.describe_window("lmstudio", tokens=8192, maximum=32768)
        dlg = SettingsDialog(Settings(base_url=server.base_url, model="qwen2.5-7b-instruct"),
                             ApiKey(), {"json_schema": "supported"}, win)
        dlg.show()
        shots.spin(lambda: dlg.budget_for is not None)  # the window was read off the GUI thread
        shots.pause()
        shots.save(dlg.grab(), out, f"settings-budget-{theme}")
        dlg.close()
    finally:
        server.close()
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
