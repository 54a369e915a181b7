"""The quiz reports where it is (the Wake panel showed a static "Asking…" for a minute)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.checks.quiz import QuizProgress, iter_quiz, run_quiz
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import FakeModel
from tests.core.test_quiz import full_script, seeded


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        yield s


def test_the_quiz_yields_a_step_before_each_question_and_probe_then_its_report(store: Store) -> None:
    facts, gone = seeded(store)
    gen = iter_quiz(store, FakeModel(responder=full_script(facts)), seed=1)
    steps: list[QuizProgress] = []
    while True:
        try:
            steps.append(next(gen))
        except StopIteration as done:
            report = done.value
            break
    total = len(report.questions) + (report.probe is not None) + (report.correction is not None)
    assert [s.step for s in steps] == list(range(1, total + 1))
    assert {s.total for s in steps} == {total}
    assert steps[0].doing.startswith(f"question 1 of {len(report.questions)}: asking about m_")
    assert steps[len(report.questions)].doing == f"the forgotten probe: asking about {gone.id}"
    # the same report as the plain call
    again = run_quiz(store, FakeModel(responder=full_script(facts)), seed=1)
    assert [q.answer for q in again.questions] == [q.answer for q in report.questions]
