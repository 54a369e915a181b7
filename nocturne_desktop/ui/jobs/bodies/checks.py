"""The bodies of the Wake tab's two checks: the quiz (a model answers from memory) and "How
much would I still know?" (a benchmark file's questions put to the prompt assembly, no model).
No Qt."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from nocturne_desktop.core.checks.quiz import QuizProgress, QuizReport, iter_quiz
from nocturne_desktop.core.checks.recall import KnowItem, KnowReport, load_questions, still_know
from nocturne_desktop.ui.jobs.body import BodyContext

CHUNK = 64
"""Questions per step of :func:`still_know_body` between two cancel checks (a superseded or
closed run ends soon)."""


def quiz(ctx: BodyContext, n_questions: int = 5) -> Generator[QuizProgress, None, QuizReport]:
    """The Wake quiz: a :class:`QuizProgress` before each model step, then the report."""
    report = yield from iter_quiz(ctx.store, ctx.model, n_questions=n_questions, cancel=ctx.cancel)
    ctx.check()  # a stopped quiz reports nothing
    return report


def still_know_body(path: str | Path, ctx: BodyContext, *, budget_chars: int = 6000
                    ) -> KnowReport:
    """Load the benchmark file, then ask in steps of :data:`CHUNK` on the job's own store."""
    questions = load_questions(Path(path))
    items: list[KnowItem] = []
    for start in range(0, len(questions), CHUNK):
        ctx.check()
        part = still_know(ctx.store, questions[start:start + CHUNK], budget_chars=budget_chars)
        items.extend(part.items)
    return KnowReport(tuple(items))
