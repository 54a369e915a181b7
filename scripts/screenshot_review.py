"""Render Sleep with review (light and dark): the plan of a sleep as a tickable list by pass.

The seeded store of ``screenshots.py`` and its scripted model (which also proposes changes the
gates refuse: a drop of a fact into itself, a merge that adds "Since 2019."). Memory → Sleep
with review… plans in a job; one change is unticked (the forgetting of the toast) and a promotion
is selected, so the word-level before/after shows under the list. Offscreen, no model server.
Writes ``docs/screenshots/review-light.png`` and ``docs/screenshots/review-dark.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_review.py [out_dir]``.
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


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.open_review()
    dlg: Any = win.review_dialog
    shots.spin(lambda: dlg.plan is not None and not win.session.busy)
    plan = dlg.plan
    toast = next(i for i in plan.items if i.tickable and i.mutation.kind == "forget"
                 and "toast" in " ".join(f.text for f in i.before))
    dlg.set_ticked(toast.n, False)
    shown = next(i for i in plan.items if i.mutation.kind == "promote")
    dlg.select(shown.n)
    dlg.resize(1180, 760)
    dlg.splitter.setSizes([430, 240])
    shots.pause(200)
    shots.save(dlg.grab(), out, f"review-{theme}")
    dlg.close()
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
