"""One duplicate join per pass, shared by every reader of that pass (and the conflict
candidates, shared the same way).

A Dedupe pass asks for the same duplicate pairs several times: its plan (the candidates it
would offer a model, counted even with no model), then each round of the duplicate backstop
(:func:`.gates.duplicate_rule`) over the facts still standing. Those later questions are about a
*subset* of the facts the first one was about - a Dedupe pass only deactivates facts, never
rewrites one - and whether two facts are duplicates depends on the two facts alone (their
containment similarity, the meaning guards of :func:`.meaning.duplicate_conflict`, the keeper
chosen by size and then input order). So the pairs among a subset are exactly the first
answer's pairs whose both facts are in the subset, in the same order. :class:`JoinMemo` keeps
the first answer and filters it; it computes again only when a question is not such a subset
(a text changed, a fact is new, another threshold, another order): invalidated by what the pass
changed and by nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nocturne_desktop.core.judges import conflicts, meaning
from nocturne_desktop.core.types import Fact

Pair = tuple[str, str, float]
Veto = tuple[str, str, str]


@dataclass
class _Answer:
    threshold: float
    position: dict[str, int]
    texts: dict[str, str]
    pairs: list[Pair]
    vetoed: list[Veto]


class JoinMemo:
    """:func:`.meaning.duplicate_pairs`, computed once and answered again by filtering; and
    :func:`.conflicts.find_conflicts`, computed once for the same facts."""

    def __init__(self) -> None:
        self.computed = 0
        """How many joins this memo ran (the rest were answered from the last one)."""
        self._last: _Answer | None = None
        self._conflicts: tuple[list[Fact], list[conflicts.Conflict]] | None = None

    def duplicate_pairs(
        self, items: Iterable[tuple[str, str]], threshold: float = 0.9
    ) -> tuple[list[Pair], list[Veto]]:
        """The same ``(pairs, vetoed)`` as :func:`.meaning.duplicate_pairs` on ``items``."""
        items = list(items)
        last = self._last
        if last is not None and last.threshold == threshold and _subset_in_order(items, last):
            if len(items) == len(last.texts):
                return list(last.pairs), list(last.vetoed)
            keep = {i for i, _ in items}
            return ([p for p in last.pairs if p[0] in keep and p[1] in keep],
                    [v for v in last.vetoed if v[0] in keep and v[1] in keep])
        pairs, vetoed = meaning.duplicate_pairs(items, threshold)
        self.computed += 1
        texts = dict(items)
        if len(texts) == len(items):  # ids unique (the join refuses them otherwise)
            self._last = _Answer(threshold, {i: n for n, (i, _) in enumerate(items)}, texts,
                                 pairs, vetoed)
        return list(pairs), list(vetoed)

    def find_conflicts(self, facts: list[Fact]) -> list[conflicts.Conflict]:
        """:func:`.conflicts.find_conflicts` of ``facts``, computed again only when the facts
        differ from the last question's (Reconcile's plan and its rule read the same ones
        when no model changed anything in between)."""
        last = self._conflicts
        if last is not None and last[0] == facts:
            return list(last[1])
        found = conflicts.find_conflicts(facts)
        self.computed += 1
        self._conflicts = (list(facts), found)
        return list(found)


def _subset_in_order(items: list[tuple[str, str]], last: _Answer) -> bool:
    """Whether every item was in the last question with the same text, in the same order."""
    previous = -1
    position, texts = last.position, last.texts
    for item_id, text in items:
        at = position.get(item_id)
        if at is None or at <= previous or texts[item_id] != text:
            return False
        previous = at
    return True


def duplicate_pairs(
    items: Iterable[tuple[str, str]], threshold: float, memo: JoinMemo | None
) -> tuple[list[Pair], list[Veto]]:
    """Through ``memo`` when there is one, else :func:`.meaning.duplicate_pairs` directly."""
    if memo is None:
        return meaning.duplicate_pairs(items, threshold)
    return memo.duplicate_pairs(items, threshold)
