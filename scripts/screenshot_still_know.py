"""Render the Wake tab's "How much would I still know?" box at 1280×800 (light and dark
palettes).

A memory holding the first conversation of ``bench/data/memory_conversations.json`` is asked the
questions of its first two conversations, through the window's own read job. Offscreen, no model.
Writes ``docs/screenshots/wake-still-know-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_still_know.py [out_dir]``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)

from bench import bench_memory as bm  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402
from nocturne_desktop.core.types import FactDraft  # noqa: E402


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    raw = json.loads(bm.DATA.read_text(encoding="utf-8"))
    raw["conversations"] = raw["conversations"][:2]
    bench_file = work / "memory_conversations-2.json"
    bench_file.write_text(json.dumps(raw), encoding="utf-8")
    with Store(db) as store:
        for s in bm.load_bench(bench_file)[0].sessions:
            for t in s.turns:
                for text, cat in t.facts:
                    store.append("scratch", FactDraft(text, cat))
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.tabs.setCurrentWidget(win.wake)
    box = win.wake.still_know
    box.run_file(bench_file)
    shots.spin(lambda: not box.running)
    win.session.wait_threads()
    shots.shoot(win, out, f"wake-still-know-{theme}")
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
