"""The Wake tab while the quiz runs: which question it is on, and how many are done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.settings import Settings
from tests.fakeserver import FakeLLM
from tests.ui.conftest import seed_store

pytestmark = pytest.mark.timeout(120)

FAIR_QUESTIONS = (
    "What do you remember about the user?", "What do you know about the user?",
    "What can you tell me about the user?", "What do you recall about the user?",
    "What have you learnt about the user?", "What has the user told you?",
    "What else do you remember about the user?",
)
"""Distinct quiz questions a scripted model writes (the gate refuses "Question number 1")."""


def test_the_wake_quiz_shows_which_question_it_is_on(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the panel said a static "Asking…" until the whole quiz ended."""
    from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY
    from tests.fakeserver import Reply, Request

    seed_store(db_path)
    asked: dict[str, str] = {}

    def respond(req: Request) -> Reply:
        first = req.last_user.split("\n")[0]
        if first.startswith("Fact: "):
            q = FAIR_QUESTIONS[len(asked) % len(FAIR_QUESTIONS)]  # each passes the gate
            asked[q] = first.removeprefix("Fact: ")
            return Reply.json({"question": q})
        return Reply.text(asked.get(req.last_user.split("\n\n")[0], NOT_IN_MEMORY), delay=0.05)

    fake_llm.respond_with(respond)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    seen: list[tuple[str, int, int, bool]] = []
    win.session.quizProgress.connect(lambda p: seen.append(
        (win.wake.message.text(), win.wake.progress.value(), win.wake.progress.maximum(),
         win.wake.progress.isVisible())))
    with qtbot.waitSignal(win.session.quizDone, timeout=30_000) as blocker:
        win.wake.run_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    n = len(blocker.args[0].questions)
    assert n > 1 and len(seen) >= n
    assert seen[0][0].startswith(f"Question 1 of {n}: asking about m_")
    assert seen[1][0].startswith(f"Question 2 of {n}: asking about m_")
    firsts = [s for s in seen if s[0].startswith("Question") and ": asking about" in s[0]]
    assert [s[1] for s in firsts] == list(range(n))  # questions done before each one is asked
    assert all(s[3] for s in seen)
    assert not win.wake.progress.isVisible() and not win.wake.message.isVisible()
