"""The rules (S-SLP-7): what the data alone decides, done where the model left it undone.

Pure functions over the facts, like the gates: each returns mutations labelled by its rule
(``identical-rule``, ``duplicate-rule``, ``reconcile-rule``, ``promotion-rule``,
``retention-rule``) and never invents text. A pinned fact is left alone (a pinned copy is always
the keeper). They run after each pass's model proposals are gated (:mod:`.run`), and without a
model they are the whole sleep.
"""


from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from nocturne_desktop.core.applying import apply_all
from nocturne_desktop.core.judges import conflicts, duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.conflicts import changes
from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.mutations import (
    DecidedBy,
    Drop,
    Forget,
    Kind,
    Promote,
    from_row,
    to_row,
)
from nocturne_desktop.core.policy import RetentionPolicy, id_num
from nocturne_desktop.core.sleep.gates import (
    PROMOTE_FIRST,
    PROMOTION_CATEGORIES,
    HasFacts,
    _facts_of,
    _lost_by_supersede,
    _supersede,
)
from nocturne_desktop.core.types import Fact, Mutation, Strength


def _active_after(facts: Iterable[Fact], applied: Sequence[Mutation]) -> list[Fact]:
    """Active facts once ``applied`` (accepted mutations of this pass) took effect, each as it
    stands then (the same :func:`~nocturne_desktop.core.applying.apply` the store runs)."""
    after = apply_all(list(facts), [from_row(m) for m in applied if m.accepted])
    return [f for f in after if f.active]


def non_chaining(pairs: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """A set of drops with no chains, highest similarity first: each fact is dropped at most
    once, never after it was chosen as a keeper, and never kept once dropped. A group of k
    copies becomes k-1 pairs to one keeper instead of k(k-1)/2. Input order breaks ties."""
    chosen: list[tuple[str, str, float]] = []
    dropped: set[str] = set()
    keepers: set[str] = set()
    for drop_id, keeper_id, score in sorted(pairs, key=lambda p: -p[2]):
        if drop_id in dropped or drop_id in keepers or keeper_id in dropped:
            continue
        chosen.append((drop_id, keeper_id, score))
        dropped.add(drop_id)
        keepers.add(keeper_id)
    return chosen


def not_conflicts(
    pairs: Sequence[tuple[str, str, float]], by_id: dict[str, Fact]
) -> list[tuple[str, str, float]]:
    """Duplicate candidates without the pairs that are conflicts (:mod:`.conflicts`): "eats
    meat" / "no longer eats meat" share every word but one is a correction of the other, which
    Reconcile supersedes instead of Dedupe dropping."""
    return [p for p in pairs if conflicts.pair_conflict(by_id[p[0]], by_id[p[1]]) is None]


_BLOCK_RANK = {"persona": 0, "human": 1, "episodes": 2, "scratch": 3}


def identical_rule(store: HasFacts | Iterable[Fact]) -> list[Mutation]:
    """Drops for facts whose text is identical to another's (same words, case and punctuation
    aside). There is nothing for a model to adjudicate there, so Dedupe does not spend a request
    on them: the copy in the most durable block (then the oldest id) is kept."""
    groups: dict[str, list[Fact]] = {}
    for f in _facts_of(store):
        if f.active:
            key = tm.normalize(f.text).strip()
            if key:
                groups.setdefault(key, []).append(f)
    out: list[Mutation] = []
    for copies in groups.values():
        if len(copies) < 2:
            continue
        copies.sort(key=lambda f: (not f.pinned, _BLOCK_RANK.get(f.block, 9), id_num(f.id)))
        keeper = copies[0]
        for f in copies[1:]:
            if f.pinned:
                continue  # never dropped, even beside an identical pinned copy
            out.append(to_row(Drop(
                pass_name="dedupe", target=f.id, reason=f"identical text to {keeper.id}",
                decided_by=DecidedBy.DUPLICATE_RULE, duplicate_of=keeper.id, similarity=1.0,
                dropped_text=f.text, keeper_text=keeper.text, identical=True,
            )))
    out.sort(key=lambda m: id_num(m.item_id))
    return out


def duplicate_rule(
    store: HasFacts | Iterable[Fact],
    policy: RetentionPolicy,
    applied: Sequence[Mutation] = (),
    *,
    join: JoinMemo | None = None,
) -> list[Mutation]:
    """Drops for every pair at or above the threshold that is still standing once the model's
    accepted drops are applied, keeper chosen as in :func:`duplicates.candidate_pairs`.
    With the pass's ``join`` every round is answered from the pass's one duplicate join."""
    active = _active_after(_facts_of(store), applied)
    by_id = {f.id: f for f in active}
    out: list[Mutation] = []
    dropped: set[str] = set()
    while True:
        remaining = [f for f in active if f.id not in dropped]
        # pairs a meaning guard separates (opposite polarity, another number, swapped roles)
        # are not duplicates, whatever their words (S-MEAN-1..3); nor are conflicts (S-REC-1)
        found, _ = duplicates.duplicate_pairs([(f.id, f.text) for f in remaining],
                                            policy.similarity_threshold, join)
        pairs = [(k, d, x) if by_id[d].pinned else (d, k, x)
                 for d, k, x in not_conflicts(found, by_id)
                 if not (by_id[d].pinned and by_id[k].pinned)]  # a pinned fact is only a keeper
        chosen = non_chaining(pairs)
        for drop_id, keeper_id, score in chosen:
            dropped.add(drop_id)
            out.append(to_row(Drop(
                pass_name="dedupe", target=drop_id,
                reason=(
                    f"similarity {score:.3f} ≥ {policy.similarity_threshold:g} with "
                    f"{keeper_id}, left unadjudicated by the model"
                ),
                decided_by=DecidedBy.DUPLICATE_RULE, duplicate_of=keeper_id,
                similarity=round(score, 4), dropped_text=by_id[drop_id].text,
                keeper_text=by_id[keeper_id].text,
            )))
        if not chosen:
            return out
        # a later round may drop a keeper of this round into a larger survivor


CHANGE_MARKERS = frozenset({
    "moved", "relocated", "now", "anymore", "longer", "changed", "switched", "new", "since",
    "became", "become", "instead", "nowadays", "currently",
})
"""Words that say a statement replaces an earlier one ("has moved to Porto", "now works at")."""


def _atomic_change(old: Fact, new: Fact, c: conflicts.Conflict) -> bool:
    """For a change statement: besides the changed value, at most two of ``old``'s words are
    missing from ``new`` ("drinks coffee every morning" / "gave up coffee"); words of time
    ("on weekends") do not count. A compound ``old`` is caught by :func:`_lost_by_supersede`."""
    lost = (changes.read(old.text).words - changes.read(new.text).words
            - changes.read(c.older_value).words)
    return len(lost) <= 2


def _atomic(old: Fact, new: Fact, c: conflicts.Conflict) -> bool:
    """Whether ``old`` says nothing but the value ``new`` replaces: at most its value's words and
    one relation word are missing from ``new`` ("lives in Lisbon" / "has moved to Porto"), so
    superseding it hides nothing else that is still true ("lives in Lisbon and works best in the
    morning" is left to the model)."""
    lost = tm.content_tokens(old.text) - tm.content_tokens(new.text)
    return len(lost) <= len(c.older_value.split()) + 1


def _says_change(fact: Fact) -> str:
    """The word by which ``fact`` says it is a change ("now", "these days", "moved"), or ""."""
    said = sorted(set(tm.normalize(fact.text).split()) & CHANGE_MARKERS)
    if said:
        return said[0]
    return "these days" if changes.read(fact.text).marked else ""


def reconcile_rule(
    store: HasFacts | Iterable[Fact], applied: Sequence[Mutation] = (), *,
    join: JoinMemo | None = None,
) -> list[Mutation]:
    """Supersedes the data alone decides, for conflicts still standing after ``applied``:

    * **polarity** between two facts from the transcript (both have a source turn): the same
      statement with its polarity flipped - the newer statement wins;
    * **value** where the newer fact says it is a change ("moved to", "now", "no longer",
      "new", :data:`CHANGE_MARKERS`) and the older says nothing else (:func:`_atomic`): the
      newer value wins;
    * **change**: the newer fact is a change statement about what the older says ("moved from
      X to Y", "not X any more", "sold X", "turned N": :mod:`.conflicts.changes`, which only
      finds a pair whose newer fact says it is a change) and the older says nothing else.

    Anything else (two values without a change word, a different number) is left to the model.
    Chains resolve in source order: each older fact is superseded at most once."""
    active = _active_after(_facts_of(store), applied)
    by_id = {f.id: f for f in active}
    gone: set[str] = set()
    out: list[Mutation] = []
    found = join.find_conflicts(active) if join is not None else conflicts.find_conflicts(active)
    for c in found:
        if c.older in gone or c.newer in gone:
            continue
        old, new = by_id[c.older], by_id[c.newer]
        if old.pinned:
            continue  # a pinned fact stays current until the person says otherwise
        if c.rule == "polarity" and old.source_turn is not None and new.source_turn is not None:
            why = (f"the same statement with its polarity flipped ({c.frame}: "
                   f"{c.older_value} in turn {old.source_turn}, {c.newer_value} in turn "
                   f"{new.source_turn}); the newer statement wins")
        elif (c.rule in ("change", "quantity") and _atomic_change(old, new, c)
              and (c.rule == "change" or changes.read(new.text).marked)
              and not _lost_by_supersede(old, new, c, others=(
                  f for f in active if f.id not in gone))):
            why = (f"the newer fact says it is a change ({c.frame}: {c.newer_value!r}) of what "
                   f"the older says ({c.older_value!r}), and the older says nothing else; the "
                   "newer fact wins")
        elif (c.rule == "value" and _says_change(new) and _atomic(old, new, c)
              and not _lost_by_supersede(old, new, c, others=(
                  f for f in active if f.id not in gone))):
            marker = _says_change(new)
            why = (f"{c.frame}: {c.older_value!r} then {c.newer_value!r}, and the newer fact says "
                   f"it is a change ({marker!r}); the newer value wins")
        else:
            continue
        gone.add(old.id)
        out.append(to_row(_supersede(old, new, c, why, DecidedBy.RECONCILE_RULE)))
    return out


def promotion_rule(
    store: HasFacts | Iterable[Fact], applied: Sequence[Mutation] = ()
) -> list[Mutation]:
    """Identity, preference and commitment facts still in scratch go to human; events to episodes."""
    moved = {m.item_id for m in applied if m.accepted and m.kind == Kind.PROMOTE}
    out: list[Promote] = []
    for f in _active_after(_facts_of(store), applied):
        target = PROMOTION_CATEGORIES.get(f.category)
        if f.block != "scratch" or target is None or f.id in moved:
            continue
        out.append(Promote(
            pass_name="promote", target=f.id,
            reason=f"{f.category} facts belong in {target}, not scratch",
            decided_by=DecidedBy.PROMOTION_RULE, from_block="scratch", to_block=target,
            category=f.category,
        ))
    out.sort(key=lambda p: (p.category not in PROMOTE_FIRST, id_num(p.target)))
    return [to_row(p) for p in out]


def retention_rule(
    store: HasFacts | Iterable[Fact],
    policy: RetentionPolicy,
    *,
    now: float | None = None,
    applied: Sequence[Mutation] = (),
    strengths: Mapping[str, Strength] | None = None,
) -> list[Mutation]:
    """Forgettings the data alone decides: first every stale unprotected fact whose salience is
    below the policy's floor (``forget_below``), then, if the rest still exceed the cap, the
    lowest-salience unprotected facts down to it."""
    now = time.time() if now is None else now
    get = (strengths or {}).get
    active = _active_after(_facts_of(store), applied)
    out = []
    floored: set[str] = set()
    for f in active:
        if policy.below_floor(f, now, get(f.id)):
            floored.add(f.id)
            sal = policy.salience(f, now, get(f.id))
            out.append(to_row(Forget(
                pass_name="forget", target=f.id,
                reason=(
                    f"stale ({f.age_days(now):.0f} days old, stale after "
                    f"{policy.stale_after_days:g}) and salience {sal:.1f} is below the floor "
                    f"{policy.forget_below:g}"
                ),
                policy="stale", decided_by=DecidedBy.RETENTION_RULE,
                age_days=round(f.age_days(now), 2), salience=round(sal, 2), text=f.text,
            )))
    rest = [f for f in active if f.id not in floored]
    out += [
        to_row(Forget(
            pass_name="forget", target=f.id,
            reason=(
                f"{len(rest)} active facts exceed the cap of {policy.max_active_facts}; "
                f"salience {policy.salience(f, now, get(f.id)):.1f} is among the lowest unprotected"
            ),
            policy="capacity", decided_by=DecidedBy.RETENTION_RULE,
            salience=round(policy.salience(f, now, get(f.id)), 2), text=f.text,
        ))
        for f in policy.overflow(rest, now, strengths)
    ]
    return out
