"""Sleep: Dedupe → Merge → Reconcile → Promote → Forget, as a generator of events.

Each pass builds a payload holding only the facts it may act on, asks the model for a JSON
proposal (per chunk of the context budget), gates every entry, adds the rules' backstops,
and applies everything accepted in ONE transaction that also writes every mutation row and the
after-snapshot. A crash or a cancel therefore leaves the store at a pass boundary.

Failure policy (also in the README):
- a reply that cannot be parsed or validated is logged (a ``reply`` mutation row holding the raw
  text) and its pass applies none of the model's proposals; the rules' backstops still run
  and the sleep CONTINUES, because the next pass has its own payload and a garbled reply says
  nothing about it;
- a reply cut off at max_tokens keeps only its complete entries, each still gated, and says so
  in the audit log (``refs.salvaged``);
- a transport error (endpoint down, timeout, HTTP error) ends the pass with nothing applied and
  STOPS the sleep: the next pass would hit the same wall, and the store stays at the last
  completed pass;
- cancel is checked between model calls and aborts the current model call; the pass in
  flight applies nothing;
- whatever a reply holds (S-ROB-1), the audit log keeps a bounded, sanitised excerpt of it, so
  logging it cannot fail; should the store still refuse a pass's writes, the model's proposals
  of that pass become refusals saying so and the engine's rules are applied alone;
- a store error (disk full, …) or a bug is recorded in the sleep's record and raised; a
  ``finally`` records how any sleep ended, so its record is never left ``running`` (a caller
  that stops reading the events early leaves it ``cancelled``).

``model=None`` runs the deterministic rules only (no model call), every mutation
labelled by its rule. A dry run goes through the same passes and payloads on an in-memory copy
and writes nothing at all: no mutation, no snapshot, no sleep record.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

from nocturne_desktop.core import limits
from nocturne_desktop.core.applying import apply_all
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.mutations import Kind, Refusal, from_row, to_row
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelCancelled, ModelClient, ModelError
from nocturne_desktop.core.sleep import gates, rules
from nocturne_desktop.core.sleep.passes import PASS_SPECS, PassSpec
from nocturne_desktop.core.types import PASSES, Fact, Mutation, StoreChanges, Strength, Version

DEFAULT_BUDGET_TOKENS = 1500
"""Payload tokens per request; keeps a pass inside a small local model's context."""


class SleepStore(Protocol):
    """The part of the store Sleep uses."""

    last_changes: StoreChanges

    def all_facts(self) -> list[Fact]: ...
    def snapshot(self, label: str, *, sleep_id: int | None = None) -> Version: ...
    def commit_pass(
        self, mutations: Sequence[Mutation], *, label: str, sleep_id: int | None
    ) -> Version: ...
    def begin_sleep(self, policy: dict[str, Any], *, dry_run: bool = False) -> int: ...
    def finish_sleep(self, sleep_id: int, status: str, summary: dict[str, Any]) -> None: ...


@dataclass
class PassFigures:
    """The live figures of one pass (S-APP-2)."""

    pass_name: str
    input: int = 0
    """Active facts when the pass started."""
    candidates: int = 0
    """Facts the payload offered the model."""
    proposed: int = 0
    """Changes the model proposed."""
    accepted: int = 0
    """Every change the pass applied: model proposals accepted plus mutations enforced by the
    rules (``enforced``)."""
    rejected: int = 0
    enforced: int = 0
    """Changes the rules made of their own (decided by a rule, not the model)."""
    active_after: int = 0
    snapshot_before: str | None = None
    snapshot_after: str | None = None
    elapsed_s: float = 0.0
    model_s: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    errors: list[str] = field(default_factory=list)
    salvaged: bool = False

    def count(self, rows: Sequence[Mutation]) -> None:
        """``accepted``, ``enforced`` and ``rejected`` from the rows the pass committed (a
        reply row - a reply that could not be used - is no rejected proposal)."""
        accepted = [m for m in rows if m.accepted]
        self.accepted = len(accepted)
        self.enforced = sum(m.enforced for m in accepted)
        self.rejected = sum(1 for m in rows if not m.accepted and m.kind != Kind.REPLY)

    def add_to(self, totals: dict[str, int]) -> None:
        """Add this pass's figures to a sleep's ``totals`` (:func:`new_totals`)."""
        for k in totals:
            totals[k] += getattr(self, k)

    @property
    def accepted_proposals(self) -> int:
        """The model's proposals the gates accepted: what came of ``proposed``, with
        ``rejected`` (``accepted`` also counts the rules' own changes)."""
        return self.accepted - self.enforced

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


TOTALS = ("proposed", "accepted", "rejected", "enforced")
"""The figures a sleep sums over its passes (its summary's and final event's ``totals``)."""


def new_totals() -> dict[str, int]:
    return dict.fromkeys(TOTALS, 0)


def read_strengths(store: Any) -> dict[str, Strength]:
    """The store's importance and recall figures, if it keeps them (a stand-in may not)."""
    read = getattr(store, "strengths", None)
    return read() if callable(read) else {}


class SleepEventKind(StrEnum):
    """What a :class:`SleepEvent` reports. A ``StrEnum``: each compares equal to its text,
    which is also what the command line prints."""

    STARTED = "sleep started"
    PASS_STARTED = "pass started"
    PASS_DONE = "pass done"
    PASS_ERROR = "pass error"
    DONE = "sleep done"
    CANCELLED = "sleep cancelled"
    FAILED = "sleep failed"

    @property
    def final(self) -> bool:
        """Whether this is the last event of a sleep (done, cancelled or failed)."""
        return self in (SleepEventKind.DONE, SleepEventKind.CANCELLED, SleepEventKind.FAILED)

    @property
    def after_pass(self) -> bool:
        """Whether the event closes a pass (its figures are final)."""
        return self in (SleepEventKind.PASS_DONE, SleepEventKind.PASS_ERROR)


@dataclass(frozen=True)
class SleepEvent:
    """One step of a sleep: started, a pass started / done / in error, and how it ended."""

    kind: SleepEventKind
    pass_name: str | None = None
    figures: PassFigures | None = None
    message: str = ""
    sleep_id: int | None = None
    dry_run: bool = False
    rules_only: bool = False
    """No model: the deterministic rules alone decided."""
    totals: dict[str, int] | None = None
    mutations: tuple[Mutation, ...] = ()
    changes: StoreChanges | None = None
    """On ``pass done`` / ``pass error`` of a real run: what the pass's transaction changed
    (its before-snapshot is ``figures.snapshot_before``). None in a dry run."""


def simulate(facts: Sequence[Fact], mutations: Sequence[Mutation]) -> list[Fact]:
    """The facts after accepted mutations, in memory (dry runs): the store's own
    :func:`~nocturne_desktop.core.applying.apply`, kept in a dict instead of written."""
    return apply_all(facts, [from_row(m) for m in mutations if m.accepted])


def _backstops(
    pass_name: str, facts: Sequence[Fact], policy: RetentionPolicy, now: float,
    accepted: Sequence[Mutation], strengths: Mapping[str, Strength] | None = None,
    join: JoinMemo | None = None,
) -> list[Mutation]:
    if pass_name == "dedupe":
        return rules.duplicate_rule(facts, policy, accepted, join=join)
    if pass_name == "reconcile":
        return rules.reconcile_rule(facts, accepted, join=join)
    if pass_name == "promote":
        return rules.promotion_rule(facts, accepted)
    if pass_name == "forget":
        return rules.retention_rule(facts, policy, now=now, applied=accepted, strengths=strengths)
    return []


NOTE_CHARS = 1000
"""Longest error note a pass records (a client's message may quote the reply)."""


def _note(text: str) -> str:
    return limits.clean(text, NOTE_CHARS)


def _reply_row(pass_name: str, why: str, raw: str, **extra: Any) -> Mutation:
    return to_row(Refusal(pass_name=pass_name, of=Kind.REPLY, target="-", why=_note(why),
                          raw=limits.clean(raw, limits.RAW_EXCERPT_CHARS),
                          extra={k: limits.storable(v, limits.SHOWN_CHARS) for k, v in extra.items()}))


def _without_model(muts: Sequence[Mutation], why: str) -> list[Mutation]:
    """The pass with the model's accepted proposals turned into refusals saying ``why``; the
    engine's rules stay (each holds on its own without the model's changes)."""
    return [replace(m, accepted=False, rejection_reason=why) if m.accepted and not m.enforced else m
            for m in muts]


class _Stop(Exception):
    def __init__(self, kind: SleepEventKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def run_sleep(
    store: SleepStore,
    model: ModelClient | None,
    policy: RetentionPolicy,
    *,
    dry_run: bool = False,
    cancel: CancelToken | None = None,
    now: float | None = None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    temperature: float = 0.0,
    passes: Sequence[str] = PASSES,
) -> Iterator[SleepEvent]:
    """Run one sleep, yielding an event at every pass boundary. See the module docstring."""
    cancel = cancel or CancelToken()
    now = time.time() if now is None else now
    rules_only = model is None
    sleep_id = None if dry_run else store.begin_sleep(
        {**policy.model_dump(), "rulesOnly": rules_only, "evaluatedAt": now}, dry_run=False)
    totals = new_totals()
    summary: dict[str, Any] = {"passes": [], "rulesOnly": rules_only, "totals": totals}
    status, final_kind, message = "done", SleepEventKind.DONE, ""
    finished = False
    facts: list[Fact] = []
    try:
        try:
            facts = store.all_facts()
            strengths = read_strengths(store)
            yield SleepEvent(SleepEventKind.STARTED, sleep_id=sleep_id, dry_run=dry_run,
                             rules_only=rules_only, message=(
                                 f"{sum(f.active for f in facts)} active facts; "
                                 f"policy: {policy.describe()}"))
            if not dry_run:
                store.snapshot("consolidation:start", sleep_id=sleep_id)
            for pass_name in passes:
                spec = PASS_SPECS[pass_name]
                if cancel.cancelled:
                    raise _Stop(SleepEventKind.CANCELLED, f"cancelled before {pass_name}")
                fig = PassFigures(pass_name, input=sum(f.active for f in facts))
                yield SleepEvent(SleepEventKind.PASS_STARTED, pass_name, fig, sleep_id=sleep_id,
                                 dry_run=dry_run, rules_only=rules_only)
                t0 = time.perf_counter()
                if not dry_run:
                    fig.snapshot_before = store.snapshot(f"pass:{pass_name}:before",
                                                         sleep_id=sleep_id).id
                try:
                    muts = list(_run_pass(spec, facts, model, policy, now, budget_tokens,
                                          temperature, cancel, fig, strengths))
                except _Stop as stop:
                    fig.elapsed_s = time.perf_counter() - t0
                    fig.active_after = fig.input  # nothing of the failed pass was applied
                    fig.errors.append(_note(str(stop)))
                    yield SleepEvent(SleepEventKind.PASS_ERROR, pass_name, fig, message=_note(str(stop)),
                                     sleep_id=sleep_id, dry_run=dry_run, rules_only=rules_only)
                    raise
                changes = None
                if dry_run:
                    facts = simulate(facts, [m for m in muts if m.accepted])
                else:
                    label = f"pass:{pass_name}:after"
                    try:
                        after = store.commit_pass(muts, label=label, sleep_id=sleep_id)
                    except InvalidInput as exc:
                        why = _note(f"the store refused this pass's writes, so none of the model's "
                                    f"proposals were applied: {exc}")
                        fig.errors.append(f"{pass_name}: {why}")
                        muts = _without_model(muts, why)
                        after = store.commit_pass(muts, label=label, sleep_id=sleep_id)
                    fig.snapshot_after = after.id
                    changes = store.last_changes
                    if any(m.accepted for m in muts):  # else the pass changed no fact
                        after_pass = getattr(store, "facts_after", None)  # re-reads the changed
                        facts = after_pass(facts) if callable(after_pass) else store.all_facts()
                fig.count(muts)
                fig.active_after = sum(f.active for f in facts)
                fig.elapsed_s = time.perf_counter() - t0
                fig.add_to(totals)
                summary["passes"].append(fig.as_dict())
                kind = SleepEventKind.PASS_ERROR if fig.errors else SleepEventKind.PASS_DONE
                yield SleepEvent(kind, pass_name, fig, message="; ".join(fig.errors),
                                 sleep_id=sleep_id, dry_run=dry_run, rules_only=rules_only,
                                 mutations=tuple(muts), changes=changes)
        except _Stop as stop:
            status = "cancelled" if stop.kind is SleepEventKind.CANCELLED else "error"
            final_kind, message = stop.kind, _note(str(stop))
        except Exception as exc:  # a store error (disk full, ...) or a bug: record it, then raise
            status, message = "error", _note(f"{type(exc).__name__}: {exc}")
            if sleep_id is not None:
                summary["error"] = message
                with contextlib.suppress(Exception):  # the store may be unable to write at all
                    store.finish_sleep(sleep_id, "error", summary)
                    finished = True
            raise
        summary["activeAfter"] = sum(f.active for f in facts)
        if sleep_id is not None:
            store.finish_sleep(sleep_id, status, summary)
        finished = True
        yield SleepEvent(final_kind, message=message, sleep_id=sleep_id, dry_run=dry_run,
                         rules_only=rules_only, totals=dict(totals))
    finally:
        if sleep_id is not None and not finished:
            # the caller stopped reading (or finish_sleep itself failed): never leave `running`
            with contextlib.suppress(Exception):
                store.finish_sleep(sleep_id, "cancelled" if status == "done" else status, {
                    "totals": totals, "message": message or "the sleep stopped before it finished"})


def _run_pass(
    spec: PassSpec,
    facts: Sequence[Fact],
    model: ModelClient | None,
    policy: RetentionPolicy,
    now: float,
    budget_tokens: int,
    temperature: float,
    cancel: CancelToken,
    fig: PassFigures,
    strengths: Mapping[str, Strength] | None = None,
) -> Iterator[Mutation]:
    """Every mutation of one pass (model's, refused and accepted, then the rules')."""
    accepted: list[Mutation] = []
    # the pass's one duplicate join (and conflict search): its plan and its rules read it
    join = JoinMemo()
    if spec.name == "dedupe":
        # identical copies need no adjudication: dropped by rule before the model is asked
        accepted = rules.identical_rule(facts)
        yield from accepted
    plan = spec.plan(simulate(facts, accepted) if accepted else facts, policy, now, budget_tokens,
                     strengths, join=join, chunked=model is not None)
    fig.candidates = plan.candidate_count
    if model is not None:
        for chunk in plan.chunks:
            if cancel.cancelled:
                raise _Stop(SleepEventKind.CANCELLED, f"cancelled during {spec.name}")
            contract = spec.contract(chunk.entries)
            t0 = time.perf_counter()
            try:
                result = model.structured(spec.messages(chunk), contract, temperature=temperature,
                                          max_tokens=spec.max_tokens(chunk), cancel=cancel)
            except ModelCancelled as exc:
                raise _Stop(SleepEventKind.CANCELLED, f"cancelled during {spec.name}") from exc
            except ModelError as exc:
                raise _Stop(SleepEventKind.FAILED, f"{spec.name}: {exc}") from exc
            finally:
                fig.model_s += time.perf_counter() - t0
            fig.calls += 1
            fig.prompt_tokens += result.usage.prompt_tokens
            fig.completion_tokens += result.usage.completion_tokens
            fig.usage_estimated = fig.usage_estimated or result.usage.estimated
            if result.value is None:
                why = _note(result.error or "the reply could not be parsed")
                fig.errors.append(f"{spec.name}: {why}")
                yield _reply_row(spec.name, why, result.raw, mode=result.mode,
                                 finishReason=result.finish_reason)
                continue
            proposal = result.value.model_dump()
            gated = gates.check(spec.name, facts, proposal, policy, now=now,
                                candidates=chunk.candidates, prior=accepted, strengths=strengths)
            fig.proposed += gated.proposed
            if result.truncated:
                fig.salvaged = True
                note = (f"reply cut off at max_tokens; {gated.proposed} complete entr"
                        f"{'y' if gated.proposed == 1 else 'ies'} salvaged and gated")
                yield _reply_row(spec.name, note, result.raw, salvaged=True, mode=result.mode)
                gated = gates.GateResult(
                    gated.pass_name, gated.proposed,
                    tuple(replace(m, refs={**m.refs, "salvaged": True}) for m in gated.accepted),
                    gated.rejected,
                    tuple(replace(m, refs={**m.refs, "salvaged": True}) for m in gated.in_order),
                )
            for m in gated.in_order:
                if m.accepted:
                    accepted.append(m)
                yield m
    yield from _backstops(spec.name, facts, policy, now, accepted, strengths, join)
