"""Sleep with review (S-EDIT-2): the plan of a dry run, approved change by change, applied as one.

:func:`iter_plan` runs the sleep's passes as a dry run (:func:`~.sleep.run_sleep` with
``dry_run=True``: the same payloads, model calls, gates and rules, on an in-memory copy, writing
nothing) and keeps every mutation it produced as a :class:`PlanItem`: the gate's verdict, the
model's (or the rule's) reason, the facts it reads as the plan saw them and what it would make of
them. Refused proposals are items too, shown but never tickable.

:func:`iter_apply` applies the approved subset as ONE sleep (its own sleep record, versions and
audit rows, so the one-click undo takes it back whole), pass by pass like a normal sleep, and
**re-gates every approved change against the live store** at that moment:

1. the facts it reads must be as the plan showed them, unless memory changed outside the plan
   (then the gate below judges the live fact); when a change of the plan that is not being
   applied made them so, the reason names it ("it relies on change 3, merge m_2 (merge pass),
   which you left unticked");
2. a change the model proposed goes through its pass's gate again
   (:func:`~.gates.check`, against the live facts before the pass and the changes of the same
   pass accepted so far); a change a rule made must still be made by that rule with only the
   approved changes applied;
3. :func:`~.applying.apply` must accept it (pinned, forgotten, unknown).

A change that fails is logged as refused with that reason, prefixed ``re-gated at apply``. A
change the person left unticked is logged as refused, decided by ``you``; it is never in the log
as accepted. The plan's own refusals (and unusable replies) are logged as a sleep logs them, so
applying every tickable change gives exactly the result and the log of a normal sleep.

**Dependencies.** Change B depends on an earlier change A when B reads a fact A writes (a promote
of the fact a merge rewrote, a supersede by a merged fact). :meth:`Plan.dependents` and
:meth:`Plan.requirements` give them; the review window unticks B when A is unticked and ticks A
when B is ticked, and says so. The core does not rely on the window for that: a B applied
without its A fails check 1 with the exact reason.

**A stale plan.** The plan records a mark of memory when it was made (every fact's value and the
latest version). :func:`iter_apply` compares it with the live store first and raises
:class:`PlanStale` (saying what changed) instead of applying a plan made for another memory;
``allow_stale=True`` applies anyway, each change re-gated as above.

Should the store still refuse a pass's writes, the model's changes of that pass become refusals
saying so and the rules' changes are applied alone, as in a normal sleep.

The plan's ``now`` is the evaluation time of the apply too (ages and salience are those the
person reviewed).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nocturne_desktop.core import limits
from nocturne_desktop.core.applying import apply, touched
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.errors import InvalidInput, NocturneError
from nocturne_desktop.core.mutations import (
    DecidedBy,
    Drop,
    Forget,
    Kind,
    Merge,
    Promote,
    Refusal,
    Supersede,
    from_row,
    to_row,
)
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.sleep import (
    DEFAULT_BUDGET_TOKENS,
    PassFigures,
    SleepEvent,
    SleepEventKind,
    SleepStore,
    gates,
    new_totals,
    read_strengths,
    rules,
    run_sleep,
    simulate,
)
from nocturne_desktop.core.stepwise import result_of
from nocturne_desktop.core.types import PASSES, Fact, Mutation, Strength, Version

__all__ = [
    "UNTICKED",
    "ApplyResult",
    "Plan",
    "PlanItem",
    "PlanStale",
    "apply_plan",
    "iter_apply",
    "iter_plan",
    "memory_mark",
    "plan",
    "stale_reason",
]

UNTICKED = "left unticked by you in the review of this sleep's plan"
"""The refusal reason of a planned change the person did not approve."""
REGATED = "re-gated at apply"
"""The prefix of the reason of an approved change that the live store no longer allowed."""


class PlanStale(NocturneError):
    """Memory changed since the plan was made: re-plan (or apply with ``allow_stale``)."""


# ------------------------------------------------------------------------------------- plan


def _fact_key(f: Fact) -> tuple[Any, ...]:
    """What of a fact a change reads or writes (not its timestamps)."""
    return (f.block, f.text, f.category, f.active, f.pinned, f.superseded_by)


def memory_mark(facts: Iterable[Fact], latest: Version | None) -> str:
    """A fingerprint of memory: every fact's value and the latest version."""
    h = hashlib.sha256()
    h.update(repr(latest.id if latest is not None else None).encode())
    for f in sorted(facts, key=lambda x: x.id):
        h.update(repr((f.id, *_fact_key(f), f.valid_until)).encode())
    return h.hexdigest()


def _reads(m: Mutation) -> tuple[str, ...]:
    """The facts a change reads (and must find as the plan saw them)."""
    try:
        c = from_row(m) if m.accepted else None
    except InvalidInput:
        return ()
    if isinstance(c, Drop):
        return tuple(dict.fromkeys(x for x in (c.target, c.duplicate_of) if x))
    if isinstance(c, Merge):
        return tuple(dict.fromkeys((c.into, *c.from_ids)))
    if isinstance(c, Supersede):
        return (c.target, c.by)
    if isinstance(c, Promote | Forget):
        return (c.target,)
    if not m.accepted:
        return _proposal_ids(m)
    return (m.item_id,)


def _proposal_ids(m: Mutation) -> tuple[str, ...]:
    """The ids a refused proposal named (for showing them)."""
    prop = m.refs.get("proposal") if isinstance(m.refs, dict) else None
    ids: list[str] = []
    if isinstance(prop, dict):
        for key in ("itemId", "duplicateOf", "intoId", "oldId", "newId"):
            v = prop.get(key)
            if isinstance(v, str):
                ids.append(v)
        more = prop.get("fromIds")
        if isinstance(more, list):
            ids += [x for x in more if isinstance(x, str)]
    elif m.item_id not in ("?", "-"):
        ids.append(m.item_id)
    return tuple(dict.fromkeys(i for i in ids if len(i) <= limits.MAX_ID_CHARS))


def _writes(m: Mutation) -> tuple[str, ...]:
    if not m.accepted:
        return ()
    try:
        return tuple(touched(from_row(m)))
    except InvalidInput:
        return ()


@dataclass(frozen=True)
class PlanItem:
    """One change of the plan, accepted or refused by its gate in the dry run."""

    n: int
    """Its number in the plan (1, 2, …), what the review window and the reasons call it."""
    pass_name: str
    mutation: Mutation
    before: tuple[Fact, ...]
    """The facts it reads, as the plan saw them before its pass."""
    after: tuple[Fact, ...]
    """What it would make of the facts it writes (empty for a refusal)."""
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    depends_on: tuple[int, ...] = ()
    """Earlier tickable items that write a fact this one reads."""

    @property
    def tickable(self) -> bool:
        """A change the gate accepted (a refusal is shown, never applied)."""
        return self.mutation.accepted

    @property
    def verdict(self) -> str:
        m = self.mutation
        if not m.accepted:
            return "refused"
        return "enforced by a rule" if m.enforced else "accepted by the gate"

    @property
    def why(self) -> str:
        """The refusal reason (refused) or the proposal's reason."""
        m = self.mutation
        return (m.rejection_reason or "") if not m.accepted else m.reason

    def describe(self) -> str:
        """``merge m_2`` / ``drop m_5`` … in a few words."""
        m = self.mutation
        return f"{m.kind} {m.item_id}"


@dataclass(frozen=True)
class Plan:
    """The gated mutations of a dry run, pass by pass, and the memory they were planned on."""

    items: tuple[PlanItem, ...]
    mark: str
    latest: str | None
    """The latest version id when the plan was made."""
    policy: RetentionPolicy
    now: float
    rules_only: bool
    passes: tuple[str, ...]
    """The passes the dry run completed (a failed or cancelled run plans fewer)."""
    ended: SleepEventKind = SleepEventKind.DONE
    message: str = ""
    active_before: int = 0
    active_after: int = 0
    planned_at: float = field(default_factory=time.time)

    def item(self, n: int) -> PlanItem:
        return self.items[n - 1]

    @property
    def tickable(self) -> tuple[int, ...]:
        return tuple(i.n for i in self.items if i.tickable)

    def of_pass(self, pass_name: str) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if i.pass_name == pass_name)

    def dependents(self, n: int) -> set[int]:
        """Every later item that relies on item ``n`` (directly or through another)."""
        out: set[int] = set()
        todo = [n]
        while todo:
            k = todo.pop()
            for it in self.items[k:]:
                if k in it.depends_on and it.n not in out:
                    out.add(it.n)
                    todo.append(it.n)
        return out

    def requirements(self, n: int) -> set[int]:
        """Every earlier item that item ``n`` relies on (directly or through another)."""
        out: set[int] = set()
        todo = [n]
        while todo:
            for k in self.item(todo.pop()).depends_on:
                if k not in out:
                    out.add(k)
                    todo.append(k)
        return out


class _Frozen:
    """The store as one read: the dry run and the plan's mark see the same facts."""

    def __init__(self, facts: list[Fact], strengths: dict[str, Strength]) -> None:
        self._facts = facts
        self._strengths = strengths

    def all_facts(self) -> list[Fact]:
        return list(self._facts)

    def strengths(self) -> dict[str, Strength]:
        return dict(self._strengths)

    def __getattr__(self, name: str) -> Any:  # a dry run writes nothing
        raise AttributeError(f"a dry run does not call {name}")


def _latest(store: Any) -> Version | None:
    read = getattr(store, "latest_version", None)
    return read() if callable(read) else None


def iter_plan(
    store: SleepStore,
    model: ModelClient | None,
    policy: RetentionPolicy,
    *,
    cancel: CancelToken | None = None,
    now: float | None = None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    temperature: float = 0.0,
    passes: Sequence[str] = PASSES,
) -> Generator[SleepEvent, None, Plan]:
    """The dry run's events (a Sleep panel can show its progress); returns the :class:`Plan`.
    Writes nothing."""
    now = time.time() if now is None else now
    latest = _latest(store)
    facts = store.all_facts()
    frozen = _Frozen(facts, read_strengths(store))
    mark = memory_mark(facts, latest)
    sim = list(facts)
    items: list[PlanItem] = []
    done: list[str] = []
    ended, message = SleepEventKind.DONE, ""
    writer_of: dict[str, int] = {}
    for ev in run_sleep(frozen, model, policy, dry_run=True, cancel=cancel, now=now,
                        budget_tokens=budget_tokens, temperature=temperature, passes=passes):
        if ev.kind.after_pass and ev.pass_name is not None and (
                ev.mutations or ev.kind == SleepEventKind.PASS_DONE):
            pre = {f.id: f for f in sim}
            running = dict(pre)
            pass_writes: dict[str, int] = {}
            for m in ev.mutations:
                n = len(items) + 1
                reads = _reads(m)
                writes = _writes(m)
                after: tuple[Fact, ...] = ()
                if m.accepted:
                    with contextlib.suppress(InvalidInput):
                        after = tuple(apply(from_row(m), running.get))
                        for f in after:
                            running[f.id] = f
                deps = tuple(sorted({writer_of[i] for i in reads if i in writer_of}))
                items.append(PlanItem(
                    n=n, pass_name=ev.pass_name, mutation=m,
                    before=tuple(pre[i] for i in reads if i in pre), after=after,
                    reads=reads, writes=writes, depends_on=deps if m.accepted else ()))
                for i in writes:
                    pass_writes[i] = n
            writer_of.update(pass_writes)
            sim = simulate(sim, [m for m in ev.mutations if m.accepted])
            if ev.kind == SleepEventKind.PASS_DONE or ev.mutations:
                done.append(ev.pass_name)
        if ev.kind.final:
            ended, message = ev.kind, ev.message
        yield ev
    return Plan(
        items=tuple(items), mark=mark, latest=latest.id if latest is not None else None,
        policy=policy, now=now, rules_only=model is None, passes=tuple(done), ended=ended,
        message=message, active_before=sum(f.active for f in facts),
        active_after=sum(f.active for f in sim))


def plan(store: SleepStore, model: ModelClient | None, policy: RetentionPolicy,
         **kw: Any) -> Plan:
    """:func:`iter_plan` without its events."""
    return result_of(iter_plan(store, model, policy, **kw))


# ------------------------------------------------------------------------------------ apply


def stale_reason(store: Any, p: Plan) -> str | None:
    """Why ``p`` was made for another memory than the store holds now (None: it was not)."""
    latest = _latest(store)
    facts = store.all_facts()
    if memory_mark(facts, latest) == p.mark:
        return None
    planned = {f.id: _fact_key(f) for it in p.items for f in it.before}
    now_id = latest.id if latest is not None else "none"
    parts = [f"memory changed since the plan was made (the latest version was "
             f"{p.latest or 'none'} then, it is {now_id} now"]
    changed = [f.id for f in facts if f.id in planned and _fact_key(f) != planned[f.id]]
    if changed:
        parts.append(f"; {len(changed)} fact{'s' if len(changed) != 1 else ''} the plan reads "
                     f"changed: {', '.join(changed[:5])}{' …' if len(changed) > 5 else ''}")
    return "".join(parts) + "): re-plan to review what the sleep would do now"


@dataclass(frozen=True)
class ApplyResult:
    """What an applied review came to."""

    sleep_id: int
    applied: tuple[int, ...]
    """The plan items applied, in order."""
    refused: Mapping[int, str]
    """Approved items the live store refused at apply, with the reason logged."""
    unticked: tuple[int, ...]
    totals: Mapping[str, int]


def _entry(c: Any) -> dict[str, Any]:
    """A planned change as its pass's gate reads a proposal entry."""
    if isinstance(c, Drop):
        return {"itemId": c.target, "duplicateOf": c.duplicate_of, "reason": c.reason}
    if isinstance(c, Merge):
        return {"intoId": c.into, "fromIds": list(c.from_ids), "mergedText": c.merged_text,
                "reason": c.reason}
    if isinstance(c, Promote):
        return {"itemId": c.target, "toBlock": c.to_block, "reason": c.reason}
    if isinstance(c, Supersede):
        return {"oldId": c.target, "newId": c.by, "reason": c.reason}
    if isinstance(c, Forget):
        return {"itemId": c.target, "reason": c.reason, "policy": c.claimed_policy or c.policy}
    raise InvalidInput(f"a {c.row_kind} is not a change a sleep plans")


def _rule_key(m: Mutation) -> tuple[Any, ...]:
    refs = m.refs if isinstance(m.refs, dict) else {}
    partner = {Kind.DROP: refs.get("duplicateOf"), Kind.PROMOTE: refs.get("toBlock"),
               Kind.SUPERSEDE: refs.get("supersededBy"), Kind.FORGET: m.policy}.get(Kind(m.kind))
    return (m.kind, m.item_id, partner, m.decided_by)


def _refusal(m: Mutation, why: str, *, decided_by: str | None = None) -> Mutation:
    return to_row(Refusal(pass_name=m.pass_name, of=m.kind, target=m.item_id,
                         why=limits.clean(why, 1000), reason=m.reason,
                         decided_by=decided_by or m.decided_by,
                         proposal=limits.storable({"kind": m.kind, **m.refs})))


def _backstop(pass_name: str, facts: Sequence[Fact], policy: RetentionPolicy, now: float,
              accepted: Sequence[Mutation], strengths: Mapping[str, Strength]) -> list[Mutation]:
    if pass_name == "dedupe":
        return rules.duplicate_rule(facts, policy, accepted)
    if pass_name == "reconcile":
        return rules.reconcile_rule(facts, accepted)
    if pass_name == "promote":
        return rules.promotion_rule(facts, accepted)
    if pass_name == "forget":
        return rules.retention_rule(facts, policy, now=now, applied=accepted, strengths=strengths)
    return []


class _Pass:
    """Re-gating one pass's approved items against the live facts before it."""

    def __init__(self, name: str, facts: list[Fact], policy: RetentionPolicy, now: float,
                 strengths: Mapping[str, Strength]) -> None:
        self.name = name
        self.facts = facts
        self.by_id = {f.id: f for f in facts}
        self.sim = dict(self.by_id)
        self.policy = policy
        self.now = now
        self.strengths = strengths
        self.accepted: list[Mutation] = []
        self._rules: set[tuple[Any, ...]] | None = None
        self._identical: set[tuple[Any, ...]] | None = None

    def premise(self, it: PlanItem, p: Plan, applied: set[int], unticked: set[int],
                refused: Mapping[int, str]) -> str | None:
        """Why the facts ``it`` reads are not as the plan showed them (None: they are)."""
        for f in it.before:
            live = self.by_id.get(f.id)
            if live is not None and _fact_key(live) == _fact_key(f):
                continue
            cause = next((q for q in reversed(p.items[:it.n - 1])  # earlier passes wrote it
                          if q.pass_name != it.pass_name and f.id in q.writes
                          and q.n not in applied), None)
            if cause is not None:
                how = ("which you left unticked" if cause.n in unticked else
                       "which was refused at apply" if cause.n in refused else "which was not applied")
                return (f"it relies on change {cause.n}, {cause.describe()} ({cause.pass_name} "
                        f"pass), {how}: without it {f.id} is not what the plan showed")
            # changed outside the plan (applied to a stale plan): the gate judges the live fact
        return None

    def gate(self, m: Mutation) -> str | None:
        """Why the live store refuses ``m`` now (None: it still passes)."""
        if m.enforced:
            key = _rule_key(m)
            if m.kind == Kind.DROP and m.refs.get("identical") is True:
                if self._identical is None:
                    self._identical = {_rule_key(r) for r in rules.identical_rule(self.facts)}
                ok = key in self._identical
            else:
                if self._rules is None:  # the rules run once the pass's other changes are in
                    self._rules = {_rule_key(r) for r in _backstop(
                        self.name, self.facts, self.policy, self.now, self.accepted,
                        self.strengths)}
                ok = key in self._rules
            if not ok:
                return (f"the {m.decided_by} no longer makes this change once only the approved "
                        "changes are applied")
        else:
            entry = _entry(from_row(m))
            got = gates.check(self.name, self.facts, {gates.LIST_KEY[self.name]: [entry]},
                              self.policy, now=self.now, prior=self.accepted,
                              strengths=self.strengths)
            verdict = got.in_order[0] if got.in_order else None
            if verdict is None or not verdict.accepted:
                return verdict.rejection_reason if verdict is not None else "the gate refused it"
        try:
            for f in apply(from_row(m), self.sim.get):
                self.sim[f.id] = f
        except InvalidInput as exc:
            return str(exc)
        self.accepted.append(m)
        return None


def iter_apply(
    store: SleepStore,
    p: Plan,
    approved: Collection[int],
    *,
    allow_stale: bool = False,
    cancel: CancelToken | None = None,
) -> Generator[SleepEvent, None, ApplyResult]:
    """Apply the approved items of ``p`` as one sleep, re-gated against the live store (see the
    module docstring), yielding a sleep's events; returns the :class:`ApplyResult`.

    :class:`PlanStale` before anything is written when memory changed since the plan (unless
    ``allow_stale``); :class:`InvalidInput` for an item number the plan does not hold or one
    that is not tickable."""
    cancel = cancel or CancelToken()
    wanted = set(approved)
    unknown = sorted(n for n in wanted if not 1 <= n <= len(p.items))
    if unknown:
        raise InvalidInput(f"the plan has no change {unknown[0]} (it holds {len(p.items)})")
    refused_in_plan = sorted(n for n in wanted if not p.item(n).tickable)
    if refused_in_plan:
        n = refused_in_plan[0]
        raise InvalidInput(f"change {n} was refused by its gate in the plan and cannot be applied: "
                           f"{p.item(n).why}")
    if not allow_stale:
        why = stale_reason(store, p)
        if why is not None:
            raise PlanStale(why)
    unticked = {it.n for it in p.items if it.tickable and it.n not in wanted}
    applied: set[int] = set()
    order: list[int] = []
    refused: dict[int, str] = {}
    sleep_id = store.begin_sleep({
        **p.policy.model_dump(), "rulesOnly": p.rules_only, "evaluatedAt": p.now,
        "review": {"planned": len(p.tickable), "approved": len(wanted), "planMark": p.mark,
                   "planLatest": p.latest, "allowStale": allow_stale}})
    totals = new_totals()
    summary: dict[str, Any] = {"passes": [], "rulesOnly": p.rules_only, "totals": totals,
                               "review": True}
    status, final, message = "done", SleepEventKind.DONE, ""
    finished = False
    facts: list[Fact] = []
    try:
        try:
            facts = store.all_facts()
            strengths = read_strengths(store)
            yield SleepEvent(SleepEventKind.STARTED, sleep_id=sleep_id, rules_only=p.rules_only,
                             message=(f"applying {len(wanted)} of {len(p.tickable)} planned "
                                      f"changes; {sum(f.active for f in facts)} active facts"))
            store.snapshot("consolidation:start", sleep_id=sleep_id)
            for pass_name in p.passes:
                if cancel.cancelled:
                    status, final, message = ("cancelled", SleepEventKind.CANCELLED,
                                              f"cancelled before {pass_name}")
                    break
                fig = PassFigures(pass_name, input=sum(f.active for f in facts))
                yield SleepEvent(SleepEventKind.PASS_STARTED, pass_name, fig, sleep_id=sleep_id,
                                 rules_only=p.rules_only)
                t0 = time.perf_counter()
                fig.snapshot_before = store.snapshot(f"pass:{pass_name}:before",
                                                     sleep_id=sleep_id).id
                state = _Pass(pass_name, facts, p.policy, p.now, strengths)
                rows: list[Mutation] = []
                for it in p.of_pass(pass_name):
                    m = it.mutation
                    if not m.accepted:
                        rows.append(m)  # the plan's refusal, logged as a sleep logs it
                        if m.kind != Kind.REPLY and not m.enforced:
                            fig.proposed += 1
                        continue
                    if not m.enforced:
                        fig.proposed += 1
                    if it.n in unticked:
                        rows.append(_refusal(m, UNTICKED, decided_by=DecidedBy.YOU))
                        continue
                    why = state.premise(it, p, applied, unticked, refused) or state.gate(m)
                    if why is not None:
                        refused[it.n] = f"{REGATED}: {why}"
                        rows.append(_refusal(m, refused[it.n]))
                        continue
                    rows.append(m)
                    applied.add(it.n)
                    order.append(it.n)
                label = f"pass:{pass_name}:after"
                try:
                    after = store.commit_pass(rows, label=label, sleep_id=sleep_id)
                except InvalidInput as exc:  # as a sleep does: the rules' changes alone
                    why = limits.clean(f"{REGATED}: the store refused this pass's writes, so none "
                                       f"of the model's proposals were applied: {exc}", 1000)
                    fig.errors.append(f"{pass_name}: {why}")
                    for it in p.of_pass(pass_name):
                        if it.n in applied and not it.mutation.enforced:
                            applied.discard(it.n)
                            order.remove(it.n)
                            refused[it.n] = why
                    rows = [_refusal(m, why) if m.accepted and not m.enforced else m for m in rows]
                    after = store.commit_pass(rows, label=label, sleep_id=sleep_id)
                fig.snapshot_after = after.id
                changes = getattr(store, "last_changes", None)
                facts = store.all_facts()
                fig.count(rows)
                fig.active_after = sum(f.active for f in facts)
                fig.elapsed_s = time.perf_counter() - t0
                fig.add_to(totals)
                summary["passes"].append(fig.as_dict())
                kind = SleepEventKind.PASS_ERROR if fig.errors else SleepEventKind.PASS_DONE
                yield SleepEvent(kind, pass_name, fig, message="; ".join(fig.errors),
                                 sleep_id=sleep_id, rules_only=p.rules_only,
                                 mutations=tuple(rows), changes=changes)
        except Exception as exc:
            status, message = "error", f"{type(exc).__name__}: {exc}"
            summary["error"] = message
            with contextlib.suppress(Exception):
                store.finish_sleep(sleep_id, "error", summary)
                finished = True
            raise
        summary["activeAfter"] = sum(f.active for f in facts)
        summary["applied"], summary["unticked"] = len(order), len(unticked)
        summary["refusedAtApply"] = len(refused)
        store.finish_sleep(sleep_id, status, summary)
        finished = True
        yield SleepEvent(final, message=message, sleep_id=sleep_id, rules_only=p.rules_only,
                         totals=dict(totals))
    finally:
        if not finished:
            with contextlib.suppress(Exception):
                store.finish_sleep(sleep_id, "cancelled", {
                    "totals": totals, "message": "the review's apply stopped before it finished"})
    return ApplyResult(sleep_id=sleep_id, applied=tuple(order), refused=dict(refused),
                       unticked=tuple(sorted(unticked)), totals=dict(totals))


def apply_plan(store: SleepStore, p: Plan, approved: Collection[int], **kw: Any) -> ApplyResult:
    """:func:`iter_apply` without its events."""
    return result_of(iter_apply(store, p, approved, **kw))

