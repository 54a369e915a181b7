"""The gates: pure functions that decide which of a model's proposals may touch memory.

``check(pass_name, store, proposal, policy)`` takes the model's raw JSON (any value: a dict in
the good case, anything at all in the bad one), evaluates every entry against the store's state
*before the pass*, and returns the accepted mutations and the refused ones, each refusal with a
reason a person can read and verify. It writes nothing. Rules (SPEC S-SLP-2..6):

- dedupe ``{"drop":[{itemId, duplicateOf, reason}]}``: both ids exist and are active, not the same
  id, no chains (a dropped id is never a keeper, a keeper is never dropped), similarity ≥ the
  policy threshold, no meaning guard separates them (polarity, number, roles, modality) and the
  dropped fact is not the fuller one (S-MEAN-5), a reason.
- merge ``{"merge":[{intoId, fromIds, mergedText, reason}]}``: at least two distinct facts, all
  active and unconsumed, one block; every content token of ``mergedText`` occurs in the sources
  (coverage 1.0), it names nobody the sources do not, it carries every source's content words
  (S-MEAN-4) and states nothing with another polarity, number binding, role or modality than
  its sources (S-MEAN-1..3); a reason.
- promote ``{"promote":[{itemId, toBlock, reason}]}``: ``toBlock`` is persona, human or episodes,
  the fact is active and lives elsewhere; a reason. Identity, preference and commitment facts are
  applied first.
- reconcile ``{"supersede":[{oldId, newId, reason}]}``: both ids exist, are active and unconsumed
  and were shown to the pass; ``oldId`` is not pinned; the pair is a conflict by the code's own test
  (:func:`conflicts.pair_conflict`); ``newId`` is the newer source (turn order, then
  ``created_at``, then id); superseding retires no other clause of a compound old fact that
  the new fact does not restate and no other current fact carries
  (:func:`conflicts.left_over`); a reason. Protected categories may be superseded: a correction
  is not a forgetting, and the old fact stays as history with its validity interval.
- forget ``{"forget":[{itemId, reason, policy}]}``: active, not pinned, category not protected, and a rule
  authorises it: stale (older than stale-after days) or in the overflow set (over the cap). The
  policy recorded is the one verified here, not the one the model claimed.

Before any rule, an entry is checked against the limits the store itself enforces
(:mod:`core.limits`, S-ROB-2/3): ids are bounded before they are looked up or quoted, a merged
text must be storable, a reason must say something visible within a bound, and every value a
refusal records or quotes is a bounded, sanitised excerpt. ``check`` is total: any JSON value in,
verdicts out.

An id that never existed is reported differently from one forgotten before the pass and from one
consumed earlier in the same pass (the article's bug 7). ``candidates`` optionally restricts a
pass to the ids it was shown.

A fact the person pinned is never dropped, merged, superseded or forgotten: each gate refuses it with
:func:`pinned_refusal`, and the rules leave it alone (a pinned copy is always the keeper).

The rules that act where the model left work undone (S-SLP-7) are in :mod:`.rules`.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nocturne_desktop.core import limits
from nocturne_desktop.core.applying import touched
from nocturne_desktop.core.judges import admission, conflicts, meaning
from nocturne_desktop.core.judges.textmath import new_names
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
from nocturne_desktop.core.types import PASSES, PROMOTE_TARGETS, Fact, Mutation, Strength

LIST_KEY: dict[str, str] = {"dedupe": "drop", "merge": "merge", "reconcile": "supersede",
                            "promote": "promote", "forget": "forget"}
KIND: dict[str, Kind] = {"dedupe": Kind.DROP, "merge": Kind.MERGE, "reconcile": Kind.SUPERSEDE,
                         "promote": Kind.PROMOTE, "forget": Kind.FORGET}
PROMOTION_CATEGORIES: dict[str, str] = {
    "identity": "human",
    "preferences": "human",
    "commitments": "human",
    "event": "episodes",
}
"""What the promotion rule moves out of scratch, and where to."""
PROMOTE_FIRST = ("identity", "preferences", "commitments")



class HasFacts(Protocol):
    def all_facts(self) -> list[Fact]: ...


@dataclass(frozen=True, slots=True)
class GateResult:
    """What one pass's proposal came to. ``proposed`` counts the entries the model sent."""

    pass_name: str
    proposed: int
    accepted: tuple[Mutation, ...]
    rejected: tuple[Mutation, ...]
    in_order: tuple[Mutation, ...] = ()
    """Every mutation in the order the entries were judged (promotes: protected categories first)."""


@dataclass
class _PassState:
    """The pre-pass store plus what this pass has consumed so far."""

    facts: dict[str, Fact]
    candidates: frozenset[str] | None
    consumed: dict[str, str] = field(default_factory=dict)
    """id → what consumed it ("dropped as a duplicate of m_3", "merged into m_2", …)."""
    keepers: dict[str, str] = field(default_factory=dict)
    """keeper id → the id dropped in its favour (dedupe chains)."""

    def absorb(self, m: Mutation) -> None:
        """Mark what an accepted mutation of an earlier chunk of this pass consumed."""
        if not m.accepted:
            return
        change = from_row(m)
        self.consumed.update(touched(change))
        if isinstance(change, Drop):
            self.keepers[change.duplicate_of or ""] = change.target

    def lookup(self, item_id: Any, field_name: str) -> tuple[Fact | None, str | None]:
        """The active pre-pass fact, or the exact reason it cannot be used."""
        if not isinstance(item_id, str) or not item_id.strip():
            return None, f"{field_name} is missing or not a string"
        fact = self.facts.get(item_id)
        if fact is None:
            return None, f"{field_name} {item_id!r} does not exist in the pre-pass store"
        if item_id in self.consumed:
            return None, (
                f"{field_name} {item_id} was already {self.consumed[item_id]} "
                "by an earlier mutation in this pass"
            )
        if not fact.active:
            return None, f"{field_name} {item_id} was forgotten before this pass (it is inactive)"
        if self.candidates is not None and item_id not in self.candidates:
            return None, f"{field_name} {item_id} was not among the facts given to this pass"
        return fact, None


def _facts_of(store: HasFacts | Iterable[Fact]) -> list[Fact]:
    if hasattr(store, "all_facts"):
        return list(store.all_facts())
    return list(store)


def _reason(entry: dict[str, Any]) -> tuple[str, str | None]:
    """The proposal's reason (stripped) and why it is not acceptable, if it is not: it needs a
    visible character (a zero-width space or a NUL says nothing) and a bounded length."""
    reason = entry.get("reason")
    problem = limits.reason_problem(reason)
    return (reason.strip() if isinstance(reason, str) else ""), problem


def _entry_id(entry: Any, key: str) -> str:
    """The id an entry claims, as a refusal may record it (bounded, sanitised), or ``?``."""
    if isinstance(entry, dict) and isinstance(entry.get(key), str) and entry[key].strip():
        return limits.clean(str(entry[key]), limits.MAX_ID_CHARS)
    return "?"


def pinned_refusal(fact: Fact, what: str) -> str:
    """Why a sleep may not touch a pinned fact, in one sentence."""
    return f"{fact.id} is pinned by you: a pinned fact is never {what} by a rule or the model"


_ID_FIELDS: dict[str, tuple[str, ...]] = {
    "dedupe": ("itemId", "duplicateOf"), "merge": ("intoId",), "reconcile": ("oldId", "newId"),
    "promote": ("itemId",), "forget": ("itemId",),
}


def _entry_problem(pass_name: str, entry: dict[str, Any]) -> str | None:
    """What makes an entry unjudgeable before any rule looks at it: an id field that is not
    an id (a list or an object where a string belongs, or a string too long to be one), or a
    merged text the store would refuse (the admission check of a merge: a NUL, a lone
    surrogate, a control character, over its length limit, a secret)."""
    for key in _ID_FIELDS[pass_name]:
        value = entry.get(key)
        if key == "intoId" and value is not None and not isinstance(value, str):
            return "intoId is missing or not a string"
        why = limits.id_problem(value, key)
        if why is not None:
            return why
    if pass_name == "merge":
        from_ids = entry.get("fromIds")
        for raw in from_ids if isinstance(from_ids, list) else ():
            why = limits.id_problem(raw, "a fromIds entry")
            if why is not None:
                return why
        merged = entry.get("mergedText")
        if isinstance(merged, str) and merged.strip():
            refused = admission.problem(merged.strip(), admission.Door.MERGE, what="mergedText")
            if refused is not None:
                return f"{refused.message}, so the store could not write it"
    return None


def _refuse(pass_name: str, item_id: str, entry: Any, why: str, reason: str = "") -> Mutation:
    return to_row(Refusal(pass_name=pass_name, of=KIND[pass_name], target=item_id, why=why,
                          reason=limits.clean(reason, limits.MAX_REASON_CHARS),
                          proposal=limits.storable(entry)))


def check(
    pass_name: str,
    store: HasFacts | Iterable[Fact],
    proposal: Any,
    policy: RetentionPolicy,
    *,
    now: float | None = None,
    candidates: Collection[str] | None = None,
    prior: Sequence[Mutation] = (),
    strengths: Mapping[str, Strength] | None = None,
) -> GateResult:
    """Gate one pass's raw proposal against the pre-pass state. Pure: writes nothing.

    ``prior`` holds mutations already accepted earlier in the same pass (an earlier chunk, or
    a salvaged part), so that what they consumed is reported as such. ``strengths`` (the
    store's importance and recalls) rank the overflow set by the full salience."""
    if pass_name not in PASSES:
        raise ValueError(f"unknown pass {pass_name!r}; expected one of {', '.join(PASSES)}")
    now = time.time() if now is None else now
    state = _PassState(
        facts={f.id: f for f in _facts_of(store)},
        candidates=frozenset(candidates) if candidates is not None else None,
    )
    for m in prior:
        state.absorb(m)
    key = LIST_KEY[pass_name]
    if not isinstance(proposal, dict):
        why = f"the reply is not a JSON object with a {key!r} list"
        only = _refuse(pass_name, "?", proposal, why)
        return GateResult(pass_name, 1, (), (only,), (only,))
    entries = proposal.get(key, [])
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        only = _refuse(pass_name, "?", proposal, f"{key!r} is not a list")
        return GateResult(pass_name, 1, (), (only,), (only,))
    if len(entries) > limits.MAX_ENTRIES:
        why = f"{key!r} holds {len(entries):,} entries; one reply may propose at most {limits.MAX_ENTRIES}"
        only = _refuse(pass_name, "?", proposal, why)
        return GateResult(pass_name, len(entries), (), (only,), (only,))

    judged: list[Mutation] = []
    gate = {"dedupe": _gate_drop, "merge": _gate_merge, "reconcile": _gate_supersede,
            "promote": _gate_promote, "forget": _gate_forget}
    overflow: set[str] = set()
    if pass_name == "forget":
        overflow = {f.id for f in policy.overflow(state.facts.values(), now, strengths)}
    ordered = _promote_order(entries, state) if pass_name == "promote" else entries
    for entry in ordered:
        if not isinstance(entry, dict):
            judged.append(_refuse(pass_name, "?", entry, "entry is not a JSON object"))
        elif (problem := _entry_problem(pass_name, entry)) is not None:
            item_id = _entry_id(entry, _ID_FIELDS[pass_name][0])
            judged.append(_refuse(pass_name, item_id, entry, problem, _reason(entry)[0]))
        else:
            verdict = gate[pass_name](entry, state, policy, now, overflow)
            state.absorb(verdict)
            judged.append(verdict)
    return GateResult(
        pass_name,
        len(entries),
        tuple(m for m in judged if m.accepted),
        tuple(m for m in judged if not m.accepted),
        tuple(judged),
    )


def _promote_order(entries: list[Any], state: _PassState) -> list[Any]:
    """Identity, preference and commitment facts first (stable otherwise)."""

    def rank(entry: Any) -> int:
        if isinstance(entry, dict):
            raw = entry.get("itemId")
            fact = state.facts.get(raw) if isinstance(raw, str) else None
            if fact is not None and fact.category in PROMOTE_FIRST:
                return 0
        return 1

    return sorted(entries, key=rank)


def _gate_drop(
    entry: dict[str, Any], state: _PassState, policy: RetentionPolicy, now: float, overflow: set[str]
) -> Mutation:
    item_id = _entry_id(entry, "itemId")
    reason, bad_reason = _reason(entry)
    drop, why = state.lookup(entry.get("itemId"), "itemId")
    if drop is None:
        return _refuse("dedupe", item_id, entry, why or "", reason)
    if drop.pinned:
        return _refuse("dedupe", item_id, entry, pinned_refusal(drop, "dropped"), reason)
    keeper_id = entry.get("duplicateOf")
    if keeper_id == drop.id:
        why = f"itemId and duplicateOf are both {drop.id}: a fact cannot duplicate itself"
        return _refuse("dedupe", item_id, entry, why, reason)
    if drop.id in state.keepers:
        why = (
            f"{drop.id} is the survivor of an earlier drop in this pass "
            f"({state.keepers[drop.id]} → {drop.id}); dropping it too would chain duplicates"
        )
        return _refuse("dedupe", item_id, entry, why, reason)
    keeper, why = state.lookup(keeper_id, "duplicateOf")
    if keeper is None:
        return _refuse("dedupe", item_id, entry, why or "", reason)
    score = meaning.canonical_similarity(drop.text, keeper.text)
    if score + 1e-9 < policy.similarity_threshold:
        why = (
            f"similarity({drop.id}, {keeper.id}) = {score:.3f} is below the threshold "
            f"{policy.similarity_threshold:g}: these are different facts"
        )
        return _refuse("dedupe", item_id, entry, why, reason)
    why = (meaning.duplicate_conflict((drop.id, drop.text), (keeper.id, keeper.text))
           or meaning.keeper_problem((drop.id, drop.text), (keeper.id, keeper.text)))
    if why:
        return _refuse("dedupe", item_id, entry, f"{why}: not a duplicate to drop", reason)
    conflict = conflicts.pair_conflict(drop, keeper)
    if conflict is not None:
        why = (f"{drop.id} and {keeper.id} conflict ({conflict.why}): a correction is reconciled "
               "(superseded, kept as history), never dropped as a duplicate")
        return _refuse("dedupe", item_id, entry, why, reason)
    if bad_reason:
        return _refuse("dedupe", item_id, entry, bad_reason, reason)
    return to_row(Drop(
        pass_name="dedupe", target=drop.id, reason=reason, duplicate_of=keeper.id,
        similarity=round(score, 4), dropped_text=drop.text, keeper_text=keeper.text,
    ))


def _gate_merge(
    entry: dict[str, Any], state: _PassState, policy: RetentionPolicy, now: float, overflow: set[str]
) -> Mutation:
    item_id = _entry_id(entry, "intoId")
    reason, bad_reason = _reason(entry)
    from_ids = entry.get("fromIds")
    if not isinstance(from_ids, list) or not all(isinstance(i, str) for i in from_ids):
        return _refuse("merge", item_id, entry, "fromIds is missing or not a list of ids", reason)
    merged = entry.get("mergedText")
    if not isinstance(merged, str) or not merged.strip():
        return _refuse("merge", item_id, entry, "mergedText is empty", reason)
    ids = list(dict.fromkeys([entry.get("intoId"), *from_ids]))
    if len(ids) < 2:
        return _refuse("merge", item_id, entry, "a merge needs at least two distinct facts", reason)
    sources: list[Fact] = []
    for i, raw_id in enumerate(ids):
        fact, why = state.lookup(raw_id, "intoId" if i == 0 else "fromIds entry")
        if fact is None:
            return _refuse("merge", item_id, entry, why or "", reason)
        if fact.pinned:
            return _refuse("merge", item_id, entry, pinned_refusal(fact, "merged"), reason)
        sources.append(fact)
    for i, x in enumerate(sources):
        for y in sources[i + 1:]:
            conflict = conflicts.pair_conflict(x, y)
            if conflict is not None:
                why = (f"{x.id} and {y.id} conflict ({conflict.why}): one sentence would claim "
                       "both; Reconcile decides which is current")
                return _refuse("merge", item_id, entry, why, reason)
    blocks = sorted({f.block for f in sources})
    if len(blocks) > 1:
        spread = ", ".join(f"{f.id} in {f.block}" for f in sources)
        why = f"sources span blocks ({spread}): a merge stays within one block"
        return _refuse("merge", item_id, entry, why, reason)
    texts = [f.text for f in sources]
    cov, missing = meaning.canonical_coverage(merged, texts)
    if cov < 1.0:
        why = (
            f"mergedText is not traceable to its sources: {len(missing)} content token(s) appear "
            f"in none of them ({', '.join(missing[:8])})"
        )
        return _refuse("merge", item_id, entry, why, reason)
    names = new_names(merged, texts)
    if names:
        why = f"mergedText introduces proper nouns absent from every source: {names}"
        return _refuse("merge", item_id, entry, why, reason)
    labelled = [(f.id, f.text) for f in sources]
    why = (meaning.statement_problem(merged)
           or meaning.check_claim(merged, labelled, what="merged text")
           or meaning.completeness(merged, labelled))
    if why:
        return _refuse("merge", item_id, entry, why, reason)
    if bad_reason:
        return _refuse("merge", item_id, entry, bad_reason, reason)
    into = sources[0]
    return to_row(Merge(
        pass_name="merge", into=into.id, reason=reason,
        from_ids=tuple(f.id for f in sources[1:]), merged_text=merged.strip(),
        sources={f.id: f.text for f in sources}, block=into.block,
    ))


def _gate_supersede(
    entry: dict[str, Any], state: _PassState, policy: RetentionPolicy, now: float, overflow: set[str]
) -> Mutation:
    item_id = _entry_id(entry, "oldId")
    reason, bad_reason = _reason(entry)
    old, why = state.lookup(entry.get("oldId"), "oldId")
    if old is None:
        return _refuse("reconcile", item_id, entry, why or "", reason)
    new, why = state.lookup(entry.get("newId"), "newId")
    if new is None:
        return _refuse("reconcile", item_id, entry, why or "", reason)
    if new.id == old.id:
        why = f"oldId and newId are both {old.id}: a fact cannot supersede itself"
        return _refuse("reconcile", item_id, entry, why, reason)
    if old.pinned:
        return _refuse("reconcile", item_id, entry, pinned_refusal(old, "superseded"), reason)
    conflict = conflicts.pair_conflict(old, new)
    if conflict is None:
        why = (f"{old.id} and {new.id} are not a conflict the code found (no shared frame with a "
               "different value, no opposite polarity, no different number, no change "
               "statement): both can be true")
        return _refuse("reconcile", item_id, entry, why, reason)
    if conflict.newer != new.id:
        def src(f: Fact) -> str:
            return f"turn {f.source_turn}" if f.source_turn is not None else "no turn"
        why = (f"{new.id} ({src(new)}) is the older source and {old.id} ({src(old)}) the newer: "
               "only the newer source may supersede the older")
        return _refuse("reconcile", item_id, entry, why, reason)
    lost = _lost_by_supersede(old, new, conflict, state)
    if lost:
        why = (f"{old.id} also says {lost!r}, which {new.id} does not replace (and no other "
               "current fact says it): superseding would retire it with the old value")
        return _refuse("reconcile", item_id, entry, why, reason)
    if bad_reason:
        return _refuse("reconcile", item_id, entry, bad_reason, reason)
    return to_row(_supersede(old, new, conflict, reason, DecidedBy.MODEL))


def _lost_by_supersede(old: Fact, new: Fact, conflict: conflicts.Conflict,
                       state: _PassState | None = None,
                       others: Iterable[Fact] | None = None) -> str:
    """The first clause of a compound ``old`` that superseding it by ``new`` would take out of
    the current facts (:func:`conflicts.left_over`), or ``""``. A clause some other active fact
    (not consumed in this pass) carries in full is not lost."""
    rest = conflicts.left_over(old, new, conflict)
    if not rest:
        return ""
    if others is None:
        others = state.facts.values() if state is not None else ()
    pool = [f for f in others if f.active and f.id not in (old.id, new.id)
            and (state is None or f.id not in state.consumed)]
    for clause, words in rest:
        if not any(conflicts.carries(f.text, words) for f in pool):
            return limits.clean(clause)
    return ""


def _supersede(old: Fact, new: Fact, conflict: conflicts.Conflict, reason: str,
               decided_by: str) -> Supersede:
    return Supersede(
        pass_name="reconcile", target=old.id, by=new.id, reason=reason, decided_by=decided_by,
        rule=conflict.rule, frame=conflict.frame, old_text=old.text, new_text=new.text,
        valid_until=new.created_at,
    )


def _gate_promote(
    entry: dict[str, Any], state: _PassState, policy: RetentionPolicy, now: float, overflow: set[str]
) -> Mutation:
    item_id = _entry_id(entry, "itemId")
    reason, bad_reason = _reason(entry)
    to_block = entry.get("toBlock")
    if to_block not in PROMOTE_TARGETS:
        why = f"toBlock {limits.show(to_block)} is not one of {PROMOTE_TARGETS}"
        return _refuse("promote", item_id, entry, why, reason)
    fact, lookup_why = state.lookup(entry.get("itemId"), "itemId")
    if fact is None:
        return _refuse("promote", item_id, entry, lookup_why or "", reason)
    if fact.block == to_block:
        return _refuse("promote", item_id, entry, f"{fact.id} is already in {to_block}", reason)
    if bad_reason:
        return _refuse("promote", item_id, entry, bad_reason, reason)
    return to_row(Promote(
        pass_name="promote", target=fact.id, reason=reason, from_block=fact.block,
        to_block=to_block, category=fact.category,
    ))


def _gate_forget(
    entry: dict[str, Any], state: _PassState, policy: RetentionPolicy, now: float, overflow: set[str]
) -> Mutation:
    item_id = _entry_id(entry, "itemId")
    reason, bad_reason = _reason(entry)
    fact, why = state.lookup(entry.get("itemId"), "itemId")
    if fact is None:
        return _refuse("forget", item_id, entry, why or "", reason)
    if fact.pinned:
        return _refuse("forget", item_id, entry, pinned_refusal(fact, "forgotten"), reason)
    if policy.is_protected(fact):
        why = (
            f"category {fact.category!r} is protected by the retention policy "
            f"({', '.join(policy.protected_categories)})"
        )
        return _refuse("forget", item_id, entry, why, reason)
    age = fact.age_days(now)
    stale = age > policy.stale_after_days
    capacity = fact.id in overflow
    if not stale and not capacity:
        why = (
            f"{fact.id} is {age:.1f} days old (stale after {policy.stale_after_days:g}) and not "
            "over capacity, so no retention rule authorises forgetting it"
        )
        return _refuse("forget", item_id, entry, why, reason)
    if bad_reason:
        return _refuse("forget", item_id, entry, bad_reason, reason)
    verified = "stale" if stale else "capacity"
    claimed = entry.get("policy")
    return to_row(Forget(
        pass_name="forget", target=fact.id, reason=reason, policy=verified,
        claimed_policy=limits.clean(claimed, limits.SHOWN_CHARS) if isinstance(claimed, str) else None,
        age_days=round(age, 2), text=fact.text,
    ))
