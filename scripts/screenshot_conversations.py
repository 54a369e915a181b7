"""Render the conversation list and the chat pane's "remember that …" confirmation (light).

The demo memory's conversation plus a second, newer one; File → Conversations… is opened over
the window (a dialog is its own window, painted over the window's grab), and the chat pane
offers "remember that I like green tea in the morning" as it does after that message.
Offscreen, no model. Writes ``docs/screenshots/conversations-light.png`` and
``docs/screenshots/chat-remember-light.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_conversations.py [out_dir]``.
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
from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtGui import QPainter  # noqa: E402

from nocturne_desktop.core import chatedits  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402


def main(argv: Sequence[str]) -> int:
    with shots.light_session(argv) as (_app, out, work, db):
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
        canvas.save(str(out / "conversations-light.png"))
        print("wrote", out / "conversations-light.png")
        dlg.close()
        proposal = chatedits.propose(win.session.store, "remember that I like green tea in the morning")
        assert proposal is not None
        win.chat.edit_bar.offer(proposal)
        shots.shoot(win, out, "chat-remember-light")
        win.close()
        win.session.wait_threads()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
