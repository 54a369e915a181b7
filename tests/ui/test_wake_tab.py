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


OLD = "The user's favourite colour is blue."
NEW = "The user's favourite colour is now green, no longer blue."
ASK_OLD = "What is the user's favourite colour?"
SAYS_NOW = "Your favourite colour is green now; it used to be blue."


def _supersede_by_a_sleep(db_path: Path) -> None:
    """A memory where a correction replaced a fact: a sleep with rules only supersedes the
    favourite colour by the newer "now green, no longer blue"."""
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.sleep import run_sleep
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.core.types import FactDraft

    with Store(db_path) as store:
        store.append("human", FactDraft(OLD, "preferences", 20))
        store.append("scratch", FactDraft(NEW, "preferences", 21))
        for _event in run_sleep(store, None, RetentionPolicy(stale_after_days=365)):
            pass
        assert any(not f.active and f.superseded_by for f in store.all_facts())


def test_the_wake_tab_shows_the_correction_probe_and_the_quiz_notes(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the correction probe was asked but never shown in the window (only
    ``nocturne verify`` reported it), and the quiz's notes were not shown either."""
    from PySide6.QtCore import Qt

    from tests.fakeserver import Reply, Request

    seed_store(db_path)
    _supersede_by_a_sleep(db_path)
    asked: dict[str, str] = {}
    leaky: list[str] = []

    def respond(req: Request) -> Reply:
        first = req.last_user.split("\n")[0]
        if first.startswith("Fact: "):
            fact = first.removeprefix("Fact: ")
            if fact == OLD:
                return Reply.json({"question": ASK_OLD})
            if not leaky or leaky[0] == fact:  # the first fact asked: gives its answer away
                leaky[:1] = [fact]
                return Reply.json({"question": f"Is it true that {fact.rstrip('.')}?"})
            q = FAIR_QUESTIONS[len(asked) % len(FAIR_QUESTIONS)]
            asked[q] = fact
            return Reply.json({"question": q})
        q = req.last_user.split("\n\n")[0]
        if q == ASK_OLD:
            return Reply.text(SAYS_NOW)
        return Reply.text(asked.get(q, leaky[0] if leaky else ""))

    fake_llm.respond_with(respond)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    with qtbot.waitSignal(win.session.quizDone, timeout=30_000) as blocker:
        win.wake.run_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    report = blocker.args[0]
    probe = report.correction
    assert probe is not None and probe.passed
    box = win.wake.correction_box
    assert box.isVisible()
    assert box.fact.text() == f"Superseded: {probe.fact_id} — {OLD}"
    assert box.current.text() == f"Current: {probe.successor_id} — {NEW}"
    assert box.question.text() == f"Q: {ASK_OLD}"
    assert box.answer.text() == f"A: {SAYS_NOW}"
    assert box.result.text() == probe.verdict and probe.verdict.startswith("passed: ")
    # the quiz's notes: the question that gave its answer away, and the template asked instead
    notes = win.wake.notes
    assert notes.isVisible()
    assert "the model's question was refused: question leaks" in notes.text()
    assert "a template question was asked: 'What do you remember about" in notes.text()
    assert "1 asked from the template (see the notes)" in win.wake.recall.text()
    labels = (box.fact, box.current, box.question, box.answer, box.result, notes)
    assert all(lab.textFormat() == Qt.TextFormat.PlainText for lab in labels)
    # the templated row's tooltip names every refusal, whatever its reason
    model = win.wake.model
    row = next(r for r in range(model.rowCount()) if model.rows()[r].template_fallback)
    tip = model.data(model.index(row, 1), Qt.ItemDataRole.ToolTipRole)
    assert "2 question(s) the model wrote were refused:" in tip
    assert "question leaks" in tip and "so a template question was asked" in tip
    assert "refused for leaking the answer" not in tip


def test_a_failed_correction_probe_shows_why_and_model_text_stays_text(qtbot: Any) -> None:
    from nocturne_desktop.core.checks.quiz import CorrectionProbe, QuizReport
    from nocturne_desktop.ui import palette
    from nocturne_desktop.ui.tabs.wake import NO_CORRECTION, WakePanel

    panel = WakePanel()
    qtbot.addWidget(panel)
    panel.show()
    box = panel.correction_box
    assert box.fact.text() == NO_CORRECTION and not box.result.isVisible()
    probe = CorrectionProbe(
        "m_2", "The user lives in Lisbon.", "m_9", "The user lives in Porto.",
        "Where does <i>the user</i> live?", "You live in <b>Lisbon</b>.", True, False, True,
        False, ("porto",), ["question leaks 1 of its answer's 1 content words"], True)
    panel.show_report(QuizReport([], None, 0.0, [], 0, [], probe))
    assert box.answer.text() == "A: You live in <b>Lisbon</b>."  # shown as written, not bold
    assert box.question.text() == (
        "Q: Where does <i>the user</i> live? (a template question: the model's was refused)")
    assert box.result.text() == probe.verdict
    assert "does not carry the current value (porto)" in box.result.text()
    assert "presents the old value as current" in box.result.text()
    assert box.result.palette().color(box.result.foregroundRole()) == palette.accent("error")
    assert not panel.notes.isVisible()  # no notes, no empty heading
    panel.show_report(QuizReport([], None, 0.0, [], 0, ["no forgotten fact to probe"], None))
    assert box.fact.text() == NO_CORRECTION and not box.answer.isVisible()
    assert panel.notes.isVisible() and panel.notes.text() == "Notes:\n• no forgotten fact to probe"
