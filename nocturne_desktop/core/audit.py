"""Independent re-audit of what a sleep did, read back from the database.

Nothing here calls the gates or the sleep code: each accepted mutation row is re-checked from
the versions the store materialises (the state before its pass and after it) with the text
measures, and the version after must be what the recorded change makes of the version before.
"The model said it merged" is never evidence; the rows and versions are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nocturne_desktop.core import conflicts, meaning
from nocturne_desktop.core import textmath as tm
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.mutations import (
    Change,
    Drop,
    Forget,
    Kind,
    Merge,
    Promote,
    Supersede,
    apply,
    from_row,
)
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.types import PROMOTE_TARGETS, Fact, MutationRow, SleepRecord, Strength, Turn


class AuditStore(Protocol):
    def mutations(
        self, *, sleep_id: int | None = None, pass_name: str | None = None,
        accepted: bool | None = None, seq_range: tuple[int, int] | None = None,
        item_id: str | None = None,
    ) -> list[MutationRow]: ...
    def state_at(self, version: int | str) -> list[Fact]: ...
    def sleeps(self) -> list[SleepRecord]: ...
    def active_facts(self) -> list[Fact]: ...
    def turns(self, *, after: int = 0) -> list[Turn]: ...


@dataclass(frozen=True)
class Finding:
    mutation_id: int
    kind: str
    item_id: str
    problem: str



def reaudit(store: AuditStore, sleep_id: int) -> tuple[int, list[Finding]]:
    """Re-check every accepted mutation of one sleep. Returns (checked, problems)."""
    record = next((s for s in store.sleeps() if s.id == sleep_id), None)
    if record is None:
        return 0, [Finding(0, "-", "-", f"sleep {sleep_id} is not recorded")]
    policy = RetentionPolicy.model_validate(
        {k: v for k, v in record.policy.items() if k in RetentionPolicy.model_fields})
    at = float(record.policy.get("evaluatedAt", record.started_at))
    read_strengths = getattr(store, "strengths", None)
    strengths = {  # importance as stored; a recall made after the sleep did not count then
        i: st if st.last_used_at is None or st.last_used_at <= at else Strength(st.importance)
        for i, st in (read_strengths() if callable(read_strengths) else {}).items()
    }
    rows = [r for r in store.mutations(sleep_id=sleep_id, accepted=True) if r.mutation.kind != Kind.REPLY]
    problems: list[Finding] = []
    states: dict[int, dict[str, Fact]] = {}

    def state(seq: int) -> dict[str, Fact]:
        if seq not in states:
            states[seq] = {f.id: f for f in store.state_at(seq)}
        return states[seq]

    for row in rows:
        m = row.mutation
        if row.seq is None:
            problems.append(Finding(row.id, m.kind, m.item_id, "accepted mutation has no version"))
            continue
        before, after = state(row.seq - 1), state(row.seq)
        try:
            change = from_row(m)
        except InvalidInput as exc:
            problems.append(Finding(row.id, m.kind, m.item_id, str(exc)))
            continue
        # Every finding is reported: a stored text the row does not explain is usually also one
        # the gate's rules refuse, and a reader needs both to see what happened.
        whys = (_check_row(change, before, after, policy, at, strengths)
                + _explains(change, before, after))
        for why in whys:
            problems.append(Finding(row.id, m.kind, m.item_id, why))
    return len(rows), problems


def _explains(change: Change, before: dict[str, Fact], after: dict[str, Fact]) -> list[str]:
    """The version after the pass must hold what the recorded change makes of the version
    before it (:func:`~nocturne_desktop.core.mutations.apply`, the store's own definition):
    a row whose lineage does not explain the stored facts is not evidence of anything."""
    try:
        expected = apply(change, before.get)
    except InvalidInput as exc:
        return [f"the recorded change cannot be applied to the version before it: {exc}"]
    out = []
    for want in expected:
        got = after.get(want.id)
        if got is None or (got.text, got.block, got.active) != (want.text, want.block, want.active):
            out.append(f"{want.id} after its pass is not what the recorded {change.row_kind} makes of it")
    return out


def _check_row(
    change: Change, before: dict[str, Fact], after: dict[str, Fact], policy: RetentionPolicy,
    started: float, strengths: Mapping[str, Strength] | None = None,
) -> list[str]:
    item_id = change.item_id
    was, now_ = before.get(item_id), after.get(item_id)
    if was is None or not was.active:
        return [f"{item_id} was not active before its pass"]
    if now_ is None:
        return [f"{item_id} is missing after its pass"]
    if isinstance(change, Drop):
        keeper = before.get(str(change.duplicate_of))
        if keeper is None or not keeper.active or keeper.id == item_id:
            return [f"keeper {change.duplicate_of} was not a different active fact"]
        out = []
        score = meaning.similarity(was.text, keeper.text)
        if score < policy.similarity_threshold:
            out.append(f"similarity {score:.3f} < {policy.similarity_threshold:g}")
        why = (meaning.duplicate_conflict((item_id, was.text), (keeper.id, keeper.text))
               or meaning.keeper_problem((item_id, was.text), (keeper.id, keeper.text)))
        if why:
            out.append(why)
        if now_.active:
            out.append("dropped fact is still active")
        kept = after.get(keeper.id)
        if kept is None or not kept.active:
            out.append(f"keeper {keeper.id} did not survive the pass")
        return out
    if isinstance(change, Merge):
        ids = [item_id, *change.from_ids]
        srcs = [before.get(i) for i in ids]
        if any(s is None or not s.active for s in srcs) or len(set(ids)) < 2:
            return ["a merge source was missing or inactive"]
        texts = [s.text for s in srcs if s is not None]
        out = []
        if len({s.block for s in srcs if s is not None}) != 1:
            out.append("merge sources span blocks")
        cov, missing = meaning.coverage(now_.text, texts)
        if cov < 1.0:
            out.append(f"merged text not traceable (missing {', '.join(missing)})")
        new = tm.new_names(now_.text, texts)
        if new:
            out.append(f"merged text names {new} absent from its sources")
        labelled = list(zip(ids, texts, strict=True))
        why = (meaning.check_claim(now_.text, labelled, what="merged text")
               or meaning.completeness(now_.text, labelled))
        if why:
            out.append(why)
        if not now_.active:
            out.append("merge target is not active after the pass")
        for other in ids[1:]:
            o = after.get(other)
            if o is None or o.active:
                out.append(f"merged source {other} is still active")
        return out
    if isinstance(change, Promote):
        out = []
        if now_.block not in PROMOTE_TARGETS:
            out.append(f"promoted into {now_.block}")
        if now_.block == was.block:
            out.append("block did not change")
        if change.to_block != now_.block:
            out.append(f"recorded toBlock {change.to_block} but fact is in {now_.block}")
        return out
    if isinstance(change, Forget):
        verified = change.policy
        out = []
        if was.category in policy.protected_categories:
            out.append(f"forgot a protected {was.category} fact")
        stale = was.age_days(started) > policy.stale_after_days
        if verified == "stale" and not stale:
            out.append(f"recorded stale but only {was.age_days(started):.1f} days old")
        if verified == "capacity":
            active = [f for f in before.values() if f.active]
            overflow = {f.id for f in policy.overflow(active, started, strengths)}
            if item_id not in overflow:
                out.append("recorded capacity but not in the overflow set")
        if verified not in ("stale", "capacity"):
            out.append(f"no verified policy recorded ({verified!r})")
        if now_.active:
            out.append("forgotten fact is still active")
        return out
    if isinstance(change, Supersede):
        out = []
        by = before.get(change.by)
        if by is None or not by.active or by.id == item_id:
            return [f"successor {change.by} was not a different active fact"]
        conflict = conflicts.pair_conflict(was, by)
        if conflict is None:
            out.append(f"{item_id} and {by.id} are not a conflict by the code's own test")
        elif conflict.newer != by.id:
            out.append(f"successor {by.id} is the older source")
        if now_.active or now_.superseded_by != by.id or now_.valid_until != by.created_at:
            out.append(f"{item_id} after its pass is not history superseded by {by.id}")
        return out
    return [f"unknown mutation kind {change.row_kind!r}"]


@dataclass(frozen=True)
class TraceResult:
    total: int
    traceable: int
    problems: tuple[tuple[str, str], ...]


def traceability(facts: Sequence[Fact], transcript: Sequence[str]) -> TraceResult:
    """Every fact's content tokens must occur in the transcript (faithful forms equal:
    ``doesn't`` is traced to ``do not``), and it may name nobody new."""
    names = tm.names_written(transcript)
    problems = []
    for f in facts:
        cov, missing = meaning.coverage(f.text, transcript)
        new = sorted(tm.proper_nouns(f.text) - names)
        if cov < 1.0:
            problems.append((f.id, f"not traceable: {', '.join(missing)}"))
        elif new:
            problems.append((f.id, f"names absent from the transcript: {new}"))
    return TraceResult(len(facts), len(facts) - len(problems), tuple(problems))


def meaning_sweep(facts: Sequence[Fact], turns: Sequence[Turn]) -> TraceResult:
    """No meaning flip survives: every fact, read against the transcript's evidence (what the
    user said, and the assistant's questions as the user answered them), states nothing with
    another polarity, number binding, role or modality (S-MEAN-1..3, 6)."""
    items = meaning.evidence_items([(t.n, t.role, t.text) for t in turns])
    sources = [(label, text) for label, text, _ in items]
    speakers = [who for _, _, who in items]
    problems = []
    for f in facts:
        why = meaning.check_claim(f.text, sources, what=f"fact {f.id}", speakers=speakers)
        if why:
            problems.append((f.id, why))
    return TraceResult(len(facts), len(facts) - len(problems), tuple(problems))
