"""Render the Wake tab after a quiz at 1280×800 (light and dark palettes): the questions, the
quiz's notes (a model question refused, the template asked instead), the forgotten probe and
the correction probe.

The screenshot store (``screenshots.seed``) is slept once with the screenshots' scripted
passes: the newer "has moved to Porto ... now" supersedes "lives in Lisbon" and the stale small
talk is forgotten. Then the window's own quiz job runs against a scripted model that
writes fair questions, one that gives its answer away (refused twice, so the template is asked),
and answers from what it was asked about: the current value for the superseded fact.
Offscreen, no server. Writes ``docs/screenshots/wake-correction-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_wake.py [out_dir]``.
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

from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY  # noqa: E402
from nocturne_desktop.core.policy import RetentionPolicy  # noqa: E402
from nocturne_desktop.core.sleep import run_sleep  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402

OLD_HOME = "The user lives in Lisbon."
QUESTIONS = {
    OLD_HOME: "Where does the user live?",
    "The assistant is called Nocturne and shows its memory on request.": "What are you called?",
    "The user keeps a bearded dragon called Saffron.": "What pet does the user keep?",
    "The user drinks green tea, never coffee.": "What does the user drink?",
    "The user's stack is Airflow and Postgres.": "What is the user's stack?",
    "The user's stack runs Airflow jobs nightly.": "When do the user's jobs run?",
    "The user gave a talk about data pipelines in Porto.": "What did the user give a talk about?",
    "The user went to a conference in Porto in the spring.": "Where was the user's conference?",
    "The user fixed the garden fence after a storm.": "What did the user fix after the storm?",
    "The user promised to review the Airflow migration on Friday.":
        "What did the user promise to do on Friday?",
    "The user has moved to Porto and lives in Porto now.": "Where has the user moved to?",
    "The user was reading a long novel on the train.": "What was the user reading?",
    "The user had toast for breakfast.": "What did the user have for breakfast?",
    "The user works best in the morning.": "Does the user work best in the morning?",  # leaks
}
"""A fair question per seeded fact (the gate's: a question, naming the fact's subject or topic,
answerable from it, not giving it away), except one that gives its answer away."""
ANSWERS = {
    "Where does the user live?": "You live in Porto now; you used to live in Lisbon.",
}


class QuizModel(shots.ScriptedModel):
    """The screenshots' scripted model, with fair quiz questions (and one that leaks)."""

    def _propose(self, user: str) -> Any:
        if not user.startswith("Fact: "):
            return super()._propose(user)
        fact = user.split("\n")[0].removeprefix("Fact: ")
        q = QUESTIONS.get(fact, "What else do you remember about the user?")
        self.questions[q] = fact
        return {"question": q}

    def _answer(self, messages: Sequence[Any]) -> str:
        question = messages[-1]["content"].split("\n\n")[0]
        if question in ANSWERS:
            return ANSWERS[question]
        if question.startswith("What do you remember about the user"):  # the template
            return "You work best in the morning."
        return super()._answer(messages) if question in self.questions else NOT_IN_MEMORY


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    model = QuizModel()
    with Store(db) as store:  # the scripted passes: Reconcile supersedes, Forget forgets
        for _event in run_sleep(store, model, RetentionPolicy(stale_after_days=30)):
            pass
    win = shots.build_window(db, work, model)
    win.tabs.setCurrentWidget(win.wake)
    win.start_quiz()
    shots.spin(lambda: not win.session.busy)
    win.session.wait_threads()
    shots.shoot(win, out, f"wake-correction-{theme}")
    return win


def main(argv: Sequence[str]) -> int:
    return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
