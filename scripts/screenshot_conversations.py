"""Render the conversation list and the chat pane's "remember that …" / "forget that …"
confirmations (light and dark palettes).

The demo memory's conversation plus a second, newer one; File → Conversations… is opened over
the window (a dialog is its own window, painted over the window's grab), and the chat pane
offers what it offers after "remember that I like green tea in the morning", after
"forget that I had toast for breakfast", and after "remember that I drink green tea, never
coffee" (which memory already holds: nothing is written). Offscreen, no model. Writes
``docs/screenshots/{conversations,chat-remember,chat-forget,chat-already}-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_conversations.py [out_dir]``.
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
from PySide6.QtGui import QPainter  # noqa: E402

from nocturne_desktop.core.chat import edits as chatedits  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402


def offer(win: object, out: Path, name: str, message: str, said: str) -> None:
    """The chat pane as it is after ``message`` was sent and answered."""
    store = win.session.store  # type: ignore[attr-defined]
    proposal = chatedits.propose(store, message)
    assert proposal is not None, message
    win.chat.transcript.add_user(message)  # type: ignore[attr-defined]
    win.chat.transcript.add_reply(said)  # type: ignore[attr-defined]
    win.chat.edit_bar.offer(proposal)  # type: ignore[attr-defined]
    shots.shoot(win, out, name)


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    with Store(db) as store:
        store.new_conversation()
        store.add_turn("user", "Can you suggest a slow Sunday breakfast?")
        store.add_turn("assistant", "Shakshuka with crusty bread, and green tea.")
        store.new_conversation()
        store.add_turn("user", "Help me plan the Airflow migration review for Friday.")
        store.add_turn("assistant", "Start with the DAGs that touch Postgres.")
        store.open_conversation(1)
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.chat.input.clear()
    dlg = win.open_conversations()
    shots.spin(lambda: dlg.loaded)
    dlg.resize(620, 260)
    shots.pause()
    canvas = win.grab()
    painter = QPainter(canvas)
    painter.drawPixmap(QPoint(330, 200), dlg.grab())
    painter.end()
    shots.save(canvas, out, f"conversations-{theme}")
    dlg.close()
    offer(win, out, f"chat-remember-{theme}", "remember that I like green tea in the morning",
          "I'll keep that in mind.")
    offer(win, out, f"chat-forget-{theme}", "forget that I had toast for breakfast",
          "Understood — confirm below and it is forgotten now.")
    offer(win, out, f"chat-already-{theme}", "remember that I drink green tea, never coffee",
          "I already know that one.")
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
