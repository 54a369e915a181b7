"""Independent re-audit of what a sleep did, read back from the database.

Nothing here calls the gates or the sleep code: each accepted mutation row is re-checked from
the versions the store materialises (the state before its pass and after it) with the text
measures, and the version after must be what the recorded change makes of the version before.
"The model said it merged" is never evidence; the rows and versions are.

The person's own changes (:func:`reaudit_hand`) are re-checked the same way, from the value each
row recorded just before it; and the traceability sweep accepts a fact the person wrote as
"written by you on <date>" (:func:`hand_written`).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from nocturne_desktop.core.applying import apply
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import conflicts, meaning
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.mutations import (
    HAND_PASS,
    LETTA_PASS,
    Add,
    BringBack,
    Change,
    DecidedBy,
    Drop,
    Edit,
    Forget,
    Kind,
    Merge,
    Pin,
    Promote,
    Supersede,
    Undo,
    from_row,
)
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.types import (
    BLOCKS,
    CATEGORIES,
    PROMOTE_TARGETS,
    Fact,
    MutationRow,
    SleepRecord,
    Strength,
    Turn,
)


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



class _States:
    """The store's state at each version as ``{id: fact}``, each version read once (a pass's
    rows share its before and after versions)."""

    def __init__(self, store: AuditStore) -> None:
        self._store = store
        self._at: dict[int, dict[str, Fact]] = {}

    def __call__(self, seq: int) -> dict[str, Fact]:
        if seq not in self._at:
            self._at[seq] = {f.id: f for f in self._store.state_at(seq)}
        return self._at[seq]


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
    state = _States(store)
    # drops recorded in the same pass (one version): the duplicate rule may drop a keeper of an
    # earlier round into a larger survivor, so a keeper is followed along that chain
    drops_in: dict[int, dict[str, str]] = {}
    for r in rows:
        if r.seq is not None and r.mutation.kind == Kind.DROP:
            keeper = r.mutation.refs.get("duplicateOf")
            if isinstance(keeper, str):
                drops_in.setdefault(r.seq, {})[r.mutation.item_id] = keeper

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
        whys = (_check_row(change, before, after, policy, at, strengths,
                           drops_in.get(row.seq, {}))
                + _explains(change, before, after))
        for why in whys:
            problems.append(Finding(row.id, m.kind, m.item_id, why))
    return len(rows), problems


def _explains(change: Change, before: dict[str, Fact], after: dict[str, Fact]) -> list[str]:
    """The version after the pass must hold what the recorded change makes of the version
    before it (:func:`~nocturne_desktop.core.applying.apply`, the store's own definition):
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
    pass_drops: Mapping[str, str] | None = None,
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
        score = meaning.canonical_similarity(was.text, keeper.text)
        if score < policy.similarity_threshold:
            out.append(f"similarity {score:.3f} < {policy.similarity_threshold:g}")
        why = (meaning.duplicate_conflict((item_id, was.text), (keeper.id, keeper.text))
               or meaning.keeper_problem((item_id, was.text), (keeper.id, keeper.text)))
        if why:
            out.append(why)
        if now_.active:
            out.append("dropped fact is still active")
        survivor, seen = keeper.id, {item_id}
        while survivor in (pass_drops or {}) and survivor not in seen:  # dropped on in this pass
            seen.add(survivor)
            survivor = (pass_drops or {})[survivor]
        kept = after.get(survivor)
        if kept is None or not kept.active:
            out.append(f"keeper {keeper.id} did not survive the pass"
                       + (f" (nor did {survivor}, where it was dropped)" if survivor != keeper.id else ""))
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
        cov, missing = meaning.canonical_coverage(now_.text, texts)
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
        if was.pinned:
            out.append("forgot a pinned fact")
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


_HAND_CHECKED = (Kind.EDIT, Kind.PIN, Kind.FORGET, Kind.BRING_BACK, Kind.ADD)


_HAND_SOURCES: dict[str, str] = {HAND_PASS: DecidedBy.YOU, LETTA_PASS: DecidedBy.LETTA}
"""The passes of hand-kind changes and who must have decided each: the person's own, and those
read back from a linked Letta agent's blocks (same kinds, same rows, checked alike)."""


def _hand_rows(store: AuditStore) -> list[MutationRow]:
    rows = [r for p in _HAND_SOURCES for r in store.mutations(pass_name=p, accepted=True)]
    return sorted(rows, key=lambda r: r.id)


def reaudit_hand(store: AuditStore) -> tuple[int, list[Finding]]:
    """Re-check every change the person made by hand (pass ``hand``, decided by ``you``): the
    version after it must hold what the recorded change makes of the value its row recorded
    just before it, the text must obey the store's rules, and no pinned fact was forgotten.
    Returns (checked, problems). Undo and redo rows are checked for their versions."""
    rows = _hand_rows(store)
    problems: list[Finding] = []
    state = _States(store)

    for row in rows:
        m = row.mutation
        if m.decided_by != _HAND_SOURCES[m.pass_name]:
            problems.append(Finding(row.id, m.kind, m.item_id,
                                    f"a {m.pass_name} change decided by {m.decided_by!r}"))
            continue
        if row.seq is None:
            problems.append(Finding(row.id, m.kind, m.item_id, "hand change has no version"))
            continue
        try:
            change = from_row(m)
        except InvalidInput as exc:
            problems.append(Finding(row.id, m.kind, m.item_id, str(exc)))
            continue
        for why in _check_hand(change, m.refs, state(row.seq)):
            problems.append(Finding(row.id, m.kind, m.item_id, why))
    return len(rows), problems


def _check_hand(change: Change, refs: Mapping[str, object], after: dict[str, Fact]) -> list[str]:
    if isinstance(change, Undo):  # its changedIds were written at its version; nothing more
        missing = [i for i in change.changed_ids if i not in after]
        return [f"undo/redo names {', '.join(missing)}, absent at its version"] if missing else []
    item_id = change.item_id
    now_ = after.get(item_id)
    if now_ is None:
        return [f"{item_id} is missing after the change"]
    if isinstance(change, Add):
        out = []
        if (now_.text, now_.block, now_.category, now_.active) != (
                change.text, change.block, change.category, True):
            out.append(f"{item_id} at its version is not the fact the row says was written")
        if change.category not in CATEGORIES or change.block not in BLOCKS:
            out.append(f"written into {change.block}/{change.category}, not a known block/category")
        return out + _text_problems(now_.text)
    before = refs.get("before")
    if not isinstance(before, dict):
        return ["the row does not record the fact's value before the change"]
    try:
        was = replace(now_, block=str(before["block"]), text=str(before["text"]),
                      category=str(before["category"]), active=bool(before["active"]),
                      pinned=bool(before.get("pinned", False)))
        if "validUntil" in before or "supersededBy" in before:
            until, by = before.get("validUntil"), before.get("supersededBy")
            was = replace(was, valid_until=float(until) if isinstance(until, int | float) else None,
                          superseded_by=by if isinstance(by, str) else None)
    except KeyError as exc:
        return [f"the recorded value before the change lacks {exc}"]
    if isinstance(change, Forget) and was.pinned:
        return ["forgot a pinned fact"]
    if not isinstance(change, Edit | Pin | Forget | BringBack):
        return [f"unknown hand change {change.row_kind!r}"]
    try:
        want = apply(change, {item_id: was}.get)[0]
    except InvalidInput as exc:
        return [f"the recorded change cannot be applied to the value before it: {exc}"]
    got = (now_.text, now_.block, now_.category, now_.active, now_.pinned, now_.valid_until,
           now_.superseded_by)
    if got != (want.text, want.block, want.category, want.active, want.pinned, want.valid_until,
               want.superseded_by):
        return [f"{item_id} at its version is not what the recorded {change.row_kind} makes of it"]
    return _text_problems(now_.text) if isinstance(change, Edit) else []


def _text_problems(text: str) -> list[str]:
    from nocturne_desktop.core.store import MAX_TEXT_CHARS  # the store's own rule

    if not text.strip() or "\x00" in text or len(text) > MAX_TEXT_CHARS:
        return ["the text breaks the store's rules (empty, NUL or too long)"]
    return []


@dataclass(frozen=True)
class HandText:
    """A text the person wrote into ``fact_id`` (an edit or an added fact), and when."""

    fact_id: str
    text: str
    at: float
    imported_from: str | None = None
    """The export file the text came from, when the person imported it into scratch."""
    by: str = DecidedBy.YOU
    """Who wrote it: the person (``you``) or, in a linked agent's blocks, ``letta``."""

    @property
    def source(self) -> str:
        day = datetime.datetime.fromtimestamp(self.at, datetime.UTC).strftime("%Y-%m-%d")
        if self.by == DecidedBy.LETTA:
            return f"changed in Letta on {day}"
        if self.imported_from is not None:
            return f"imported from {self.imported_from} on {day}"
        return f"written by you on {day}"


def hand_written(store: AuditStore) -> list[HandText]:
    """Every text the person wrote by hand (edits of the text, added facts, facts imported
    into scratch), and every text changed in a linked Letta agent's blocks, oldest first."""
    out = []
    for row in _hand_rows(store):
        m = row.mutation
        if m.kind in (Kind.EDIT, Kind.ADD) and m.decided_by == _HAND_SOURCES[m.pass_name]:
            refs = m.refs if isinstance(m.refs, dict) else {}
            text, origin = refs.get("text"), refs.get("importedFrom")
            if isinstance(text, str):
                out.append(HandText(m.item_id, text, row.created_at,
                                    origin if m.kind == Kind.ADD and isinstance(origin, str)
                                    else None, by=m.decided_by))
    return out


@dataclass(frozen=True)
class TraceResult:
    total: int
    traceable: int
    problems: tuple[tuple[str, str], ...]
    by_you: tuple[tuple[str, str], ...] = field(default=())
    """Facts traced to the person's own edit: (id, "written by you on <date>")."""


def traceability(
    facts: Sequence[Fact], transcript: Sequence[str], hand: Iterable[HandText] = ()
) -> TraceResult:
    """Every fact's content tokens must occur in the transcript (faithful forms equal:
    ``doesn't`` is traced to ``do not``), and it may name nobody new.

    A fact whose text is one the person wrote into it (``hand``, from :func:`hand_written`) is
    traced to that edit instead; text the person wrote counts as a source for the others too
    (a fact merged from a hand-written one is traceable to it)."""
    written = list(hand)
    latest: dict[tuple[str, str], HandText] = {(h.fact_id, h.text): h for h in written}
    corpus = [*transcript, *(h.text for h in written)]
    names = tm.names_written(corpus)
    problems = []
    by_you = []
    for f in facts:
        mine = latest.get((f.id, f.text))
        if mine is not None:
            by_you.append((f.id, mine.source))
            continue
        cov, missing = meaning.canonical_coverage(f.text, corpus)
        new = sorted(tm.proper_nouns(f.text) - names)
        if cov < 1.0:
            problems.append((f.id, f"not traceable: {', '.join(missing)}"))
        elif new:
            problems.append((f.id, f"names absent from the transcript: {new}"))
    return TraceResult(len(facts), len(facts) - len(problems), tuple(problems), tuple(by_you))


def meaning_sweep(
    facts: Sequence[Fact], turns: Sequence[Turn], hand: Iterable[HandText] = ()
) -> TraceResult:
    """No meaning flip survives: every fact, read against the transcript's evidence (what the
    user said, and the assistant's questions as the user answered them), states nothing with
    another polarity, number binding, role or modality (S-MEAN-1..3, 6). A fact whose text the
    person wrote into it (``hand``) is their own word, not read against the transcript."""
    mine = {(h.fact_id, h.text): h for h in hand}
    items = meaning.evidence_items([(t.n, t.role, t.text) for t in turns])
    sources = [(label, text) for label, text, _ in items]
    speakers = [who for _, _, who in items]
    problems = []
    by_you = []
    for f in facts:
        if (f.id, f.text) in mine:
            by_you.append((f.id, mine[(f.id, f.text)].source))
            continue
        why = meaning.check_claim(f.text, sources, what=f"fact {f.id}", speakers=speakers)
        if why:
            problems.append((f.id, why))
    return TraceResult(len(facts), len(facts) - len(problems), tuple(problems), tuple(by_you))
