"""The bodies of the window's long passes: a sleep, a review's plan and its apply.

Each runs on a job's thread or in the job's worker process, so this module imports no Qt and
each body is a module-level function (the job pickles ``functools.partial(body, ...)`` for the
worker). A body yields one frozen event per pass boundary and returns its result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Generator
from typing import TypeVar

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import DEFAULT_BUDGET_TOKENS, SleepEvent, run_sleep
from nocturne_desktop.core.sleep import review as core_review
from nocturne_desktop.core.sleep.review import ApplyResult, Plan
from nocturne_desktop.core.stepwise import map_yields
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.deferred_gc import deferred_full_collections
from nocturne_desktop.ui.models import planpages
from nocturne_desktop.ui.models.planpages import PlanPages

R = TypeVar("R")


def frozen_event(ev: SleepEvent) -> SleepEvent:
    """Passes mutate their figures after yielding; the window gets a copy of them."""
    fig = ev.figures
    if fig is None:
        return ev
    return dataclasses.replace(ev, figures=dataclasses.replace(fig, errors=list(fig.errors)))


def _review_event(ev: SleepEvent) -> SleepEvent:
    """A review's event as the window gets it: frozen, without the pass's mutations (the
    window reads none of them: the plan holds them, the log has them; and tens of thousands
    would be unpickled in the window's process beside the GUI thread)."""
    return frozen_event(dataclasses.replace(ev, mutations=()) if ev.mutations else ev)


def _relay(gen: Generator[SleepEvent, None, R]) -> Generator[SleepEvent, None, R]:
    """``gen``'s events frozen and without their mutations, with full collections deferred
    (:mod:`~nocturne_desktop.ui.jobs.deferred_gc`), then its return value."""
    with deferred_full_collections():
        return (yield from map_yields(gen, _review_event))


def sleep(
    ctx: BodyContext,
    policy: RetentionPolicy,
    *,
    use_model: bool = True,
    dry_run: bool = False,
    temperature: float = 0.0,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
) -> Generator[SleepEvent, None, None]:
    """:func:`core.sleep.run_sleep`, one event per pass boundary (S-APP-2). Run it with
    ``finish_on_cancel=True``: on cancel the core ends at the next boundary and records the
    sleep as cancelled itself."""
    model = ctx.model if use_model else None
    with deferred_full_collections():  # as in _relay
        for ev in run_sleep(ctx.store, model, policy, dry_run=dry_run, cancel=ctx.cancel,
                            temperature=temperature, budget_tokens=budget_tokens):
            yield frozen_event(ev)


def plan_body(ctx: BodyContext, policy: RetentionPolicy, *, use_model: bool = True,
              budget_tokens: int = DEFAULT_BUDGET_TOKENS) -> Generator[SleepEvent, None, PlanPages]:
    """The plan of a sleep with review: a dry run's events (the Sleep tab shows them), then the
    :class:`~nocturne_desktop.core.sleep.review.Plan` in pages (:mod:`~nocturne_desktop.ui.models.planpages`:
    the window never pickles or unpickles the whole plan at once)."""
    plan = yield from _relay(core_review.iter_plan(
        ctx.store, ctx.model if use_model else None, policy, cancel=ctx.cancel,
        budget_tokens=budget_tokens))
    return planpages.paged(plan)


def apply_body(ctx: BodyContext, plan: Plan | PlanPages,
               approved: Collection[int]) -> Generator[SleepEvent, None, ApplyResult]:
    """The approved changes of ``plan`` applied as one sleep (events like a sleep's), then the
    :class:`~nocturne_desktop.core.sleep.review.ApplyResult`."""
    return (yield from _relay(core_review.iter_apply(ctx.store, planpages.whole(plan), approved,
                                                     cancel=ctx.cancel)))
