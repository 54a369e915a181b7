"""Duplicates: which facts say the same thing, found without comparing every pair.

Three layers, each used by every judge that asks (Dedupe's candidates, the duplicate backstop,
Merge's clusters, the import into scratch, "remember that" in chat, verify):

- :func:`candidate_pairs`: the set-similarity join over content tokens (prefix filtering, as in
  AllPairs / PPJoin): every pair whose containment similarity reaches the threshold;
- :func:`duplicate_pairs`: those pairs over the canonical forms, minus the ones a meaning guard
  separates (a negation, another modality, a number bound differently, swapped parties:
  S-MEAN-1..3), optionally through a pass's :class:`JoinMemo`;
- :func:`held_by` / :func:`already_held`: is a new text already in memory by the dedupe gate's
  rule (keeper guard and corrections included), asked before a fact is written.
"""

from __future__ import annotations

import itertools
import math
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import conflicts, meaning
from nocturne_desktop.core.judges.textmath import _EPS, HasIdText, _folded
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.stepwise import release, sorted_yielding
from nocturne_desktop.core.types import Fact

__all__ = [
    "DEFAULT_THRESHOLD",
    "JoinMemo",
    "already_held",
    "candidate_pairs",
    "duplicate_pairs",
    "held_by",
]

# --------------------------------------------------------------------------- the join


def _overlap_needed(threshold: float, size: int) -> int:
    """Smallest shared-token count that can reach ``threshold`` against a set of ``size``.

    The epsilon keeps ``0.7 * 10 == 7.000000000000001`` from demanding 8; erring low only makes
    the prefix longer (more candidates), never misses a pair, because every candidate is
    verified exactly afterwards.
    """
    return max(1, math.ceil(threshold * size - _EPS))


_SUBSET_LEVELS = (4, 3, 2)
"""Token-subset sizes a frequent-token fact may probe with, largest first: four frequent tokens
together are held by a handful of facts in 100k even over a vocabulary of 100 words. The
largest whose index stays within :data:`_SUBSET_BUDGET` entries a fact is used."""
_SUBSET_BUDGET = 48
_FREQUENT_MIN = 16


def _frequent_rank(frequency: list[int], order: list[int], facts: int) -> int:
    """The first rank (rarest first) of a *frequent* token: one held by at least ``2·√facts``
    facts (and :data:`_FREQUENT_MIN`), where a one-token probe starts to cost more than the
    subset index does. ``len(order)`` when no token is frequent."""
    floor = max(_FREQUENT_MIN, math.ceil(2 * math.sqrt(facts)))
    lo, hi = 0, len(order)
    while lo < hi:  # ranks are in ascending frequency
        mid = (lo + hi) // 2
        if frequency[order[mid]] >= floor:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _subset_keys(toks: list[int], level: int, base: int) -> list[int]:
    """Each ``level``-subset (2 to 4) of the ascending ranks ``toks``, as one integer."""
    if level == 2:
        return [a * base + b for a, b in itertools.combinations(toks, 2)]
    if level == 3:
        return [(a * base + b) * base + c for a, b, c in itertools.combinations(toks, 3)]
    return [((a * base + b) * base + c) * base + d
            for a, b, c, d in itertools.combinations(toks, 4)]


def _subset_level(ranked: list[list[int]], frequent_from: int, facts: int) -> int:
    """The largest of :data:`_SUBSET_LEVELS` whose index (every fact under each subset of its
    frequent tokens) holds at most :data:`_SUBSET_BUDGET` entries a fact; 1 (one-token
    prefixes only) when even pairs would not."""
    tails = [len(toks) - bisect_right(toks, frequent_from - 1) for toks in ranked]
    for level in _SUBSET_LEVELS:
        if sum(math.comb(t, level) for t in tails if t >= level) <= _SUBSET_BUDGET * facts:
            return level
    return 1


def _subset_index(
    by_size: list[int], ranked: list[list[int]], frequent_from: int, level: int, base: int,
    wanted: set[int],
) -> dict[int, list[int]]:
    """Every fact's place under each ``level``-subset of its frequent tokens (the tail of its
    rank list) that some fact probes (``wanted``), places ascending."""
    index: dict[int, list[int]] = {}
    for p, i in enumerate(by_size):
        toks = ranked[i]
        start = bisect_right(toks, frequent_from - 1)
        if len(toks) - start < level:
            continue
        for key in wanted.intersection(_subset_keys(toks[start:], level, base)):
            bucket = index.get(key)
            if bucket is None:
                index[key] = [p]
            else:
                bucket.append(p)
    return index


def candidate_pairs(
    items: Iterable[tuple[str, str]] | Iterable[HasIdText], threshold: float = 0.9
) -> list[tuple[str, str, float]]:
    """Every pair of facts whose token similarity (:func:`.textmath.similarity`) is at least
    ``threshold``; no meaning guard is asked (that is :func:`duplicate_pairs`).

    ``items`` are ``(id, text)`` pairs or objects with ``.id`` and ``.text``. Returns
    ``(drop_id, keeper_id, score)`` once per unordered pair. The keeper carries more information:
    the fact with more content tokens, or on a tie the older one (earlier in ``items``). Sorted by
    the input position of the dropped fact, then of the keeper. Facts with no content tokens are
    never paired. ``threshold`` must be in (0, 1]; ids must be unique.

    How it avoids comparing every pair: with ``|A| <= |B|`` the pair qualifies iff
    ``|A∩B| >= k(A) = ceil(t·|A|)``. Order every set's tokens by global rarity; then at most
    ``|A| - k(A)`` of A's tokens lie outside B, so the first ``|A| - k(A) + 1`` tokens of A (its
    prefix, its rarest tokens) contain a shared token. Each fact therefore probes a full inverted
    index with its prefix only and is paired with facts at least as large; rare tokens have
    short posting lists, so the candidates are few. A fact whose rarest token is frequent (a
    small vocabulary) probes token subsets instead (see the comment in the body). Each
    candidate is verified exactly.
    """
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 < threshold <= 1.0
    ):
        raise InvalidInput(f"similarity threshold must be a number in (0, 1], got {threshold!r}")

    ids: list[str] = []
    position: dict[str, int] = {}
    memo: dict[str, tuple[str, bool]] = {}
    token_id: dict[str, int] = {}
    raw_sets: list[list[int]] = []
    for item in items:
        if isinstance(item, tuple):
            item_id, text = item
        else:
            item_id, text = item.id, item.text
        if item_id in position:
            raise InvalidInput(f"duplicate fact id {item_id!r} in the duplicate search")
        position[item_id] = len(ids)
        ids.append(item_id)
        toks: set[int] = set()
        for stem, content in _folded(text, memo):
            if content:
                tid = token_id.get(stem)
                if tid is None:
                    tid = token_id[stem] = len(token_id)
                toks.add(tid)
        raw_sets.append(list(toks))

    # Global rarity order: rank 0 = rarest token (ties broken by first appearance).
    frequency = [0] * len(token_id)
    for toks_list in raw_sets:
        for tid in toks_list:
            frequency[tid] += 1
    order = sorted(range(len(frequency)), key=frequency.__getitem__)
    rank = [0] * len(order)
    for r, tid in enumerate(order):
        rank[tid] = r

    ranked: list[list[int]] = [sorted(rank[t] for t in toks) for toks in raw_sets]

    # Facts in (size, input position) order; a fact's ``place`` is its rank in that order. A
    # fact pairs only with facts placed after it, so each unordered pair is met once and the
    # partner is never smaller. The full inverted index maps a token to the places holding it:
    # ascending lists (a probe bisects straight past the smaller facts) and sets (membership).
    by_size = sorted_yielding((i for i in range(len(ids)) if ranked[i]),
                              key=lambda i: (len(ranked[i]), i))
    postings: dict[int, list[int]] = {}
    for p, i in enumerate(by_size):
        for r in ranked[i]:
            bucket = postings.get(r)
            if bucket is None:
                postings[r] = [p]
            else:
                bucket.append(p)
    members = {r: set(bucket) for r, bucket in postings.items()}

    # A fact whose rarest token is frequent (a small vocabulary: every token is) would meet
    # thousands of candidates through a one-token prefix. It probes token *subsets* instead:
    # at most ``m`` of A's tokens miss a partner, so among A's ``m + l`` rarest tokens at least
    # ``l`` are shared, and the partner holds one of the ``l``-subsets of those. Every fact's
    # subsets of its frequent tokens are indexed (few for ordinary text: its frequent tokens are
    # the head of the vocabulary), and a subset's postings are far shorter than a token's.
    frequent_from = _frequent_rank(frequency, order, len(by_size))
    top_level = _subset_level(ranked, frequent_from, len(by_size)) if frequent_from < len(
        order) else 1
    probes: dict[int, int] = {}  # place -> subset size l (2 to 4) it probes with
    for my_place, i in enumerate(by_size):
        fact_toks = ranked[i]
        if fact_toks[0] >= frequent_from:
            level = min(top_level, _overlap_needed(threshold, len(fact_toks)))
            if level >= 2:
                probes[my_place] = level
    probe_keys: dict[int, list[int]] = {}  # place -> the subsets it probes
    wanted: dict[int, set[int]] = {}
    for my_place, level in probes.items():
        fact_toks = ranked[by_size[my_place]]
        misses = len(fact_toks) - _overlap_needed(threshold, len(fact_toks))
        keys = probe_keys[my_place] = _subset_keys(fact_toks[: misses + level], level, len(order))
        wanted.setdefault(level, set()).update(keys)
    subset_postings: dict[int, dict[int, list[int]]] = {
        level: _subset_index(by_size, ranked, frequent_from, level, len(order), keys)
        for level, keys in wanted.items()
    }

    found: list[tuple[int, int, float]] = []
    for my_place, i in enumerate(by_size):
        fact_toks = ranked[i]
        size_a = len(fact_toks)
        misses_allowed = size_a - _overlap_needed(threshold, size_a)
        candidates: set[int] = set()
        level = probes.get(my_place, 1)
        if level == 1:
            # Candidates: later facts holding a prefix token (at most ``misses_allowed`` of A's
            # tokens can be absent from a partner, so one of the first ``misses_allowed + 1``
            # is present).
            for r in fact_toks[: misses_allowed + 1]:
                bucket = postings[r]
                cut = bisect_right(bucket, my_place)
                if cut < len(bucket):
                    candidates.update(bucket[cut:])
        else:
            index = subset_postings[level]
            for key in probe_keys[my_place]:
                bucket = index[key]  # A itself is indexed under every key it probes
                cut = bisect_right(bucket, my_place)
                if cut < len(bucket):
                    candidates.update(bucket[cut:])
        if not candidates:
            continue
        # Exact verification with set algebra (C speed): walk A's tokens rarest first and keep
        # the candidates bucketed by how many of them they have missed so far, dropping any
        # that miss more than allowed.
        by_misses: list[set[int]] = [candidates]
        for r in fact_toks:
            holders = members[r]
            nxt = [by_misses[0] & holders]
            for d in range(1, len(by_misses)):
                nxt.append((by_misses[d] & holders) | (by_misses[d - 1] - holders))
            if len(by_misses) <= misses_allowed:
                nxt.append(by_misses[-1] - holders)
            by_misses = nxt
            if not any(by_misses):
                break
        for misses, survivors in enumerate(by_misses):
            score = (size_a - misses) / size_a  # A is never larger than its partner
            if not survivors or score < threshold:
                continue
            for p in survivors:
                j = by_size[p]
                # j is placed after i: larger, or the same size and later in the input (the
                # earlier, older fact keeps on a tie).
                if len(ranked[j]) > size_a:
                    found.append((i, j, score))
                else:
                    found.append((j, i, score))
    found = sorted_yielding(found, key=lambda f: (f[0], f[1]))  # a sort of 100k+ pairs in runs
    pairs = [(ids[d], ids[k], score) for d, k, score in found]
    # Freed step by step, not in one C call on return (over 100 ms at 100k facts).
    release(found, subset_postings, probe_keys, wanted, probes, members, postings, by_size,
            ranked, raw_sets, position, token_id, memo)
    return pairs


# --------------------------------------------------------------------------- guarded pairs


def _guarded_pairs(items: Iterable[tuple[str, str]], threshold: float) -> tuple[list[Pair], list[Veto]]:
    texts = dict(items)
    found = candidate_pairs([(i, meaning.canonical(t)) for i, t in texts.items()], threshold)
    keep: list[Pair] = []
    vetoed: list[Veto] = []
    for drop, keeper, score in found:
        why = meaning.duplicate_conflict((drop, texts[drop]), (keeper, texts[keeper]))
        if why is None:
            keep.append((drop, keeper, score))
        else:
            vetoed.append((drop, keeper, why))
    return keep, vetoed


def duplicate_pairs(
    items: Iterable[tuple[str, str]], threshold: float = 0.9, memo: JoinMemo | None = None
) -> tuple[list[Pair], list[Veto]]:
    """:func:`candidate_pairs` over canonical texts, minus the pairs a meaning guard separates.
    Returns ``(pairs, vetoed)``: ``(drop, keeper, score)`` and ``(drop, keeper, why)``. With a
    ``memo``, a question the pass already answered for a superset is answered by filtering."""
    if memo is None:
        return _guarded_pairs(items, threshold)
    return memo.pairs(items, threshold)


# --------------------------------------------------------------------------- a pass's memo


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
    """The duplicate pairs of one pass, computed once and answered again by filtering; and the
    conflict candidates (:func:`.conflicts.find_conflicts`), computed once for the same facts.

    A Dedupe pass asks for the same pairs several times: its plan, then each round of the
    duplicate backstop over the facts still standing. Those later questions are about a
    *subset* of the first one's facts (a Dedupe pass only deactivates facts), and whether two
    facts are duplicates depends on the two facts alone, so the pairs among a subset are the
    first answer's pairs whose both facts are in the subset, in the same order. The memo
    computes again only when a question is not such a subset (a text changed, a fact is new,
    another threshold, another order)."""

    def __init__(self) -> None:
        self.computed = 0
        """How many joins this memo ran (the rest were answered from the last one)."""
        self._last: _Answer | None = None
        self._conflicts: tuple[list[Fact], list[conflicts.Conflict]] | None = None

    def pairs(
        self, items: Iterable[tuple[str, str]], threshold: float = 0.9
    ) -> tuple[list[Pair], list[Veto]]:
        """The same ``(pairs, vetoed)`` as :func:`duplicate_pairs` on ``items`` without a memo."""
        items = list(items)
        last = self._last
        if last is not None and last.threshold == threshold and _subset_in_order(items, last):
            if len(items) == len(last.texts):
                return list(last.pairs), list(last.vetoed)
            keep = {i for i, _ in items}
            return ([p for p in last.pairs if p[0] in keep and p[1] in keep],
                    [v for v in last.vetoed if v[0] in keep and v[1] in keep])
        pairs, vetoed = _guarded_pairs(items, threshold)
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


# --------------------------------------------------------------------------- already held?

DEFAULT_THRESHOLD = RetentionPolicy().similarity_threshold
"""The policy's default similarity threshold (0.9)."""


_NEW = "\x00new:"
"""Ids of the new texts in the search (no fact id starts with a NUL)."""


def _why_not(new: Fact, keeper: Fact, threshold: float) -> str | None:
    """Why the dedupe gate would refuse dropping ``new`` for ``keeper`` (None: it would accept)."""
    if meaning.canonical_similarity(new.text, keeper.text) + 1e-9 < threshold:
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
    pairs, _vetoed = duplicate_pairs(items, threshold)
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
