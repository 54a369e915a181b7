"""Is a new text already in memory? The dedupe gate's rule, asked before a fact is written.

A text the person is about to add (a "remember that …" confirmed in chat, the facts of an
import into scratch) is *already held* by an active fact when the dedupe gate would accept
dropping the new text as a duplicate of that fact: their similarity (over the canonical forms)
reaches the policy's threshold, no meaning guard separates them (a negation, another modality,
a number bound differently, swapped parties: S-MEAN-1..3), the keeper guard holds (the fact
already says everything the new text says: S-MEAN-5), and they are not a correction of one
another (S-REC-1). Anything else is a new fact and is written.

The candidates come from one :func:`meaning.duplicate_pairs` call over memory and the new texts
together (the same search the Dedupe pass runs), so a batch costs one search, not one per text.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from nocturne_desktop.core.judges import conflicts, meaning
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.types import Fact

__all__ = ["DEFAULT_THRESHOLD", "already_held", "held_by"]

DEFAULT_THRESHOLD = RetentionPolicy().similarity_threshold
"""The policy's default similarity threshold (0.9)."""

_NEW = "\x00new:"
"""Ids of the new texts in the search (no fact id starts with a NUL)."""


def _why_not(new: Fact, keeper: Fact, threshold: float) -> str | None:
    """Why the dedupe gate would refuse dropping ``new`` for ``keeper`` (None: it would accept)."""
    if meaning.similarity(new.text, keeper.text) + 1e-9 < threshold:
        return "below the threshold"
    why = (meaning.duplicate_conflict((new.id, new.text), (keeper.id, keeper.text))
           or meaning.keeper_problem((new.id, new.text), (keeper.id, keeper.text)))
    if why:
        return why
    if conflicts.pair_conflict(new, keeper) is not None:
        return "a correction, not a duplicate"
    return None


def held_by(
    texts: Sequence[tuple[str, str]],
    facts: Sequence[Fact],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    now: float | None = None,
) -> list[Fact | int | None]:
    """For each new ``(text, category)`` in order: the active fact of ``facts`` that already
    holds it, or the index of an earlier new text it repeats (that one is written, this one
    not), or None (a new fact). Inactive facts are ignored: a forgotten fact holds nothing.
    ``now`` is when the new texts are written (default: the clock), so a correction of an
    older fact reads as the newer one."""
    now = time.time() if now is None else now
    active = [f for f in facts if f.active]
    by_id = {f.id: f for f in active}
    order = {f.id: i for i, f in enumerate(active)}
    news = [Fact(f"{_NEW}{i}", "scratch", text, category, None, now, now)
            for i, (text, category) in enumerate(texts)]
    items = [(f.id, f.text) for f in active] + [(f.id, f.text) for f in news]
    pairs, _vetoed = meaning.duplicate_pairs(items, threshold)
    partners: dict[int, set[str]] = {}
    for a, b, _score in pairs:
        for x, y in ((a, b), (b, a)):
            if x.startswith(_NEW):
                partners.setdefault(int(x[len(_NEW):]), set()).add(y)
    out: list[Fact | int | None] = []
    for i, new in enumerate(news):
        found: Fact | int | None = None
        # the facts already in memory first (in their order), then the earlier new texts kept
        olds = sorted((p for p in partners.get(i, ()) if p in by_id), key=order.__getitem__)
        for p in olds:
            if _why_not(new, by_id[p], threshold) is None:
                found = by_id[p]
                break
        if found is None:
            earlier = sorted(j for p in partners.get(i, ()) if p.startswith(_NEW)
                             and (j := int(p[len(_NEW):])) < i and out[j] is None)
            for j in earlier:
                # the earlier text is older than this one by a hair: a correction reads newer
                kept = replace(news[j], created_at=now - 1e-3, updated_at=now - 1e-3)
                if _why_not(new, kept, threshold) is None:
                    found = j
                    break
        out.append(found)
    return out


def already_held(
    text: str, facts: Sequence[Fact], *, category: str = "context",
    threshold: float = DEFAULT_THRESHOLD, now: float | None = None,
) -> Fact | None:
    """The active fact that already holds ``text`` by the dedupe gate's rule, or None."""
    found = held_by([(text, category)], facts, threshold=threshold, now=now)[0]
    return found if isinstance(found, Fact) else None
