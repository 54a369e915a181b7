"""Render the chat that never waits on memory (light and dark): an exchange still being
remembered ("memory: remembering…") while the next message is answered, and a third message
sent during that reply waiting above the box; then every mark rewritten by what the encoder
remembered. Also the fact dialog (Edit fact…) and Sleep with review planned by the rules alone
when no model answers.

The seeded store of ``screenshots.py``; a scripted model whose encoder and one reply are held
on events, so the moment shown is one the script holds. Offscreen, no model server. Writes
``docs/screenshots/{queued-turns,queued-turns-remembered,fact-dialog,review-no-model}-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_queued.py [out_dir]``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)
from PySide6.QtCore import QPoint  # noqa: E402

from nocturne_desktop.core.ports import Message, ModelUnreachable, StructuredResult, Usage  # noqa: E402

SAID = [  # (the person's message, the reply, the fact the encoder proposes)
    ("My bearded dragon is called Saffron.",
     "Saffron — a lovely name for a bearded dragon. I'll remember her.",
     {"text": "The user's bearded dragon is called Saffron.", "category": "preferences"}),
    ("I review the Airflow migration on Friday.",
     "Good luck with the review. Friday is close, so a short list helps: check the DAGs that "
     "still run on the old scheduler, the Postgres connection settings, and who signs off.",
     {"text": "The user reviews the Airflow migration on Friday.", "category": "commitments"}),
    ("I moved to Lisbon last spring.",
     "Noted: Lisbon since last spring. That makes the earlier Porto fact out of date.",
     {"text": "The user moved to Lisbon last spring.", "category": "identity"}),
]


class HeldModel(shots.ScriptedModel):
    """The scripted model, with the encoder held on :attr:`remember` and the second reply held
    half-way on :attr:`finish`."""

    def __init__(self) -> None:
        super().__init__()
        self.remember = threading.Event()
        self.finish = threading.Event()
        self.held_at = 0
        self.down = False

    def stream(self, messages: Sequence[Message], **_: Any) -> Iterator[str]:
        said = str(messages[-1]["content"])
        reply = next((r for m, r, _f in SAID if m in said), "Noted.")
        words = reply.split(" ")
        for i, word in enumerate(words):
            if reply == SAID[1][1] and i == len(words) // 2:
                self.held_at = i
                self.finish.wait(60)
            time.sleep(0.02)  # a token at a time, as a server streams
            yield word if i == len(words) - 1 else word + " "

    def structured(self, messages: Sequence[Message], contract: Any, **kw: Any) -> Any:
        user = str(messages[-1]["content"])
        if self.down:
            raise ModelUnreachable("nothing is listening at http://localhost:1234/v1 — is LM "
                                   "Studio's server running?")
        if "NEW TURNS:" not in user:
            return super().structured(messages, contract, **kw)
        self.remember.wait(60)
        new = user.split("NEW TURNS:", 1)[1]
        facts = [dict(f, turn=0) for m, _r, f in SAID if f"user: {m}" in new]
        raw = shots.json.dumps({"facts": facts})
        return StructuredResult(contract.model_validate_json(raw), raw, "json_schema", "stop",
                                Usage(200, len(raw) // 4))


def say(win: Any, text: str) -> None:
    win.chat.input.setPlainText(text)
    win.chat.send_button.click()


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    model = HeldModel()
    win = shots.build_window(db, work, model)
    try:
        return shoot_all(win, model, out, theme)
    finally:
        model.remember.set()
        model.finish.set()


def shoot_all(win: Any, model: HeldModel, out: Path, theme: str) -> Any:
    s = win.session
    win.chat.input.clear()
    s.new_conversation()
    win.tabs.setCurrentWidget(win.memory)
    (first, _r1, _f1), (second, _r2, _f2), (third, _r3, _f3) = SAID
    say(win, first)
    shots.spin(lambda: s.busy == "remembering")  # replied; memory reads it
    say(win, second)  # sent at once: memory reading the first does not hold it
    shots.spin(lambda: model.held_at > 0 and "Friday is close" in win.chat.text())
    say(win, third)  # sent while the reply streams: it waits above the box
    shots.spin(lambda: win.chat.queued_bar.isVisible())
    win.chat.input.setPlainText("And remind me on Thursday")
    shots.shoot(win, out, f"queued-turns-{theme}")
    model.finish.set()  # the reply ends, the third goes out and is answered
    shots.spin(lambda: win.chat.text().count("memory: remembering…") == 3)
    model.remember.set()
    shots.spin(lambda: not s.busy)
    s.wait_threads()
    win.chat.input.clear()
    shots.shoot(win, out, f"queued-turns-remembered-{theme}")
    # Edit fact… (F2): the text wraps, the category beside it
    from nocturne_desktop.ui.factdialog import FactDialog

    fact = next(f for f in s.store.active_facts() if "Airflow migration on Friday" in f.text)
    dialog = FactDialog("Edit fact", f"{fact.id} in {fact.block} — your edit is a new version "
                        "(Ctrl+Z undoes it)", fact.text + " Ana from the data team signs it "
                        "off before the release.", fact.category, win)
    dialog.show()
    dialog.move(win.mapToGlobal(QPoint(470, 240)))
    shots.shoot_over(win, out, f"fact-dialog-{theme}", dialog)
    dialog.close()
    # Sleep with review with no model answering: the rules alone plan it, and it says so
    model.down = True
    win.open_review()
    dlg: Any = win.review_dialog
    shots.spin(lambda: dlg.plan is not None and dlg.plan.rules_only and not s.busy)
    dlg.resize(1180, 760)
    dlg.splitter.setSizes([430, 240])
    shots.pause(200)
    shots.save(dlg.grab(), out, f"review-no-model-{theme}")
    dlg.close()
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
