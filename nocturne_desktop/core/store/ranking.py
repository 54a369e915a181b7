"""Ranking by words, meaning and recency, fused: what the memory prompt and the search show.

Three ranked lists of active facts are asked of the store: the words (:meth:`search_scored`:
BM25 over folded words, with its block, recency and salience boosts), the meaning (the cosine
of the facts' vectors with the query's, :meth:`similar`) and recency (:meth:`recent`). They are
fused by weighted reciprocal rank, ``score = sum(w / (k + rank))`` (:class:`Fusion`): a fact
high on any list ranks well, one on several ranks best, and no list's raw scores need to be
comparable with another's. The weights and ``k`` are measured on the memory benchmark's tuning
questions (``bench/bench_memory.py --sweep``; docs/benchmarks.md), not guessed. Without an
embedder the meaning list is empty and the ranking is the words' and recency's.

Cost (``bench_recall --cost``, docs/benchmarks.md): at 100k facts, every one active, a turn's
memory prompt takes ~15 ms on the shared 2-core machine (load 2; ~8 ms under the default cap),
of which the meaning product ~8 (100,000 x 256 float32, memory-bound), the word list ~4 and
the recency list ~1.

:meth:`RankStore.search_all_ranked` is the search panel's form: every fact sharing a folded word
with the query first (``exact``, with the words to mark), then those that only mean something
near it (a similarity of at least :data:`MEANING_MIN`), active before forgotten or superseded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.store.base import _FACT_COLS, _IN_CHUNK, _fact, _num
from nocturne_desktop.core.store.search import FoundFact, SearchStore
from nocturne_desktop.core.types import Fact

_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class Fusion:
    """Weights of the three lists in the reciprocal-rank fusion, and its ``k`` (a larger ``k``
    flattens the advantage of the first places). A weight of 0 leaves its list out."""

    words: float = 1.0
    meaning: float = 1.0
    recency: float = 0.2
    k: float = 20.0
    floor: float = 0.0
    """The meaning list holds only facts at least this similar to the query (below it, a
    fact's nearness says little and recency is the better guess)."""


FUSION = Fusion()
"""The default (measured: docs/benchmarks.md, the fusion sweep)."""

WORDS_ONLY = Fusion(meaning=0.0)
"""The ranking a store without an embedder gets."""

MEANING_ONLY = Fusion(words=0.0)

LIST_CANDIDATES = 200
"""The word and meaning lists are each asked for at most this many facts, however many the
ranking returns (a fitted budget of 24,000 characters asks for ~1,150): a fact at rank 200 on
one weighs 1/220 (k 20), under half the newest fact's recency, while every candidate costs a
row read in Python. Chosen for the cost (``bench_recall --cost``) and checked on every split
(``--splits``): 100 on the words cost the words-only ranking one word-sharing question; 200
on both lowers no figure."""

MEANING_MIN = 0.10
"""The least similarity at which the search panel lists a fact that shares no word with the
query. A static model's cosines are low (a paraphrase and its fact: 0.1-0.35), so the panel
lists by rank (:data:`MEANING_HITS`) above this floor (measured: ``bench_recall --panel``)."""

MEANING_HITS = 10
"""At most this many active and this many inactive meaning-only facts follow the exact ones."""


class RankedHit(NamedTuple):
    """One fact of :meth:`RankStore.rank` and where it stood on each list (1 = first; None:
    not on it). ``exact``: it shares a folded word with the query."""

    fact: Fact
    score: float
    exact: bool
    similarity: float | None
    words_rank: int | None
    meaning_rank: int | None
    recency_rank: int | None


def query_words(query: str) -> str:
    """The words of ``query`` the word list searches for: its non-stopwords (all its words
    when it has no other)."""
    words = _WORDS.findall(query)
    return " ".join([w for w in words if w.lower() not in tm.STOPWORDS] or words)


class RankStore(SearchStore):
    """The fused ranking (see the module doc)."""

    def _facts_by_num(self, nums: Sequence[int]) -> dict[int, Fact]:
        out: dict[int, Fact] = {}
        with self._read() as c:
            for start in range(0, len(nums), _IN_CHUNK):
                chunk = list(nums[start : start + _IN_CHUNK])
                out.update((r[0], _fact(r)) for r in c.execute(
                    f"SELECT {_FACT_COLS} FROM items WHERE num IN ({','.join('?' * len(chunk))})",
                    chunk))
        return out

    def rank(
        self,
        query: str,
        *,
        limit: int = 20,
        exclude_blocks: Sequence[str] = (),
        fusion: Fusion = FUSION,
        now: float | None = None,
        newest: Sequence[Fact] | None = None,
    ) -> list[RankedHit]:
        """The ``limit`` active facts outside ``exclude_blocks`` that best answer ``query``,
        best first (ties: the older id). The recency list is asked for ``limit`` facts, the
        word and meaning lists for at most :data:`LIST_CANDIDATES` each. ``newest``: the
        recency list (``recent(limit=limit, exclude_blocks=...)``), when the caller has read it
        already."""
        if limit <= 0:
            return []
        pool = int(limit)
        words = query_words(query)
        by_words = (self.search_scored(words, limit=min(pool, LIST_CANDIDATES),
                                       exclude_blocks=exclude_blocks, now=now)
                    if fusion.words > 0 and words else [])
        by_meaning = [(n, sim) for n, sim in self.similar(
            query, limit=min(pool, LIST_CANDIDATES), exclude_blocks=exclude_blocks)
            if sim >= fusion.floor] if fusion.meaning > 0 else []
        by_time = ((self.recent(limit=pool, exclude_blocks=exclude_blocks) if newest is None
                    else list(newest)[:pool]) if fusion.recency > 0 else [])
        facts: dict[int, Fact] = {}
        score: dict[int, float] = {}
        ranks: dict[int, list[int | None]] = {}
        similarity: dict[int, float] = {}

        def add(num: int, at: int, weight: float, which: int) -> None:
            score[num] = score.get(num, 0.0) + weight / (fusion.k + at)
            ranks.setdefault(num, [None, None, None])[which] = at

        for at, hit in enumerate(by_words, 1):
            num = int(hit.fact.id[2:])  # the store's own "m_<num>"
            facts[num] = hit.fact
            add(num, at, fusion.words, 0)
        for at, (num, sim) in enumerate(by_meaning, 1):
            similarity[num] = sim
            add(num, at, fusion.meaning, 1)
        for at, fact in enumerate(by_time, 1):
            num = int(fact.id[2:])
            facts.setdefault(num, fact)
            add(num, at, fusion.recency, 2)
        best = sorted(score, key=lambda n: (-score[n], n))[:pool]
        missing = [n for n in best if n not in facts]
        if missing:
            facts.update(self._facts_by_num(missing))
        out = []
        for n in best:
            found = facts.get(n)
            if found is None or not found.active:  # changed since the matrix was read
                continue
            w, m, r = ranks[n]
            out.append(RankedHit(found, score[n], w is not None, similarity.get(n), w, m, r))
        return out

    def search_all_ranked(
        self, query: str, *, limit: int = 50, fusion: Fusion = FUSION
    ) -> list[FoundFact]:
        """:meth:`search_all`'s facts (each sharing a folded word with ``query``, active then
        inactive, ``exact``), the active ones in the fused order of words and meaning; then up
        to ``limit`` active and ``limit`` inactive facts that share no word but mean something
        near (:data:`MEANING_HITS` of each, similarity ≥ :data:`MEANING_MIN`, best first,
        ``exact`` False, nothing marked, ``score`` the similarity)."""
        exact = self.search_all(query, limit=limit)
        near_active, near_past = (self.similar_both(query, limit=max(limit, 1) * 2)
                                  if fusion.meaning > 0 else ([], []))
        sims = dict(near_active)
        active = [h for h in exact if h.status == "active"]
        if active and sims:
            order = {_num(h.fact.id): i for i, h in enumerate(active, 1)}
            meaning_rank = {n: i for i, (n, _) in enumerate(near_active, 1)}

            def fused(h: FoundFact) -> tuple[float, int]:
                n = _num(h.fact.id)
                s = fusion.words / (fusion.k + order[n])
                if n in meaning_rank:
                    s += fusion.meaning / (fusion.k + meaning_rank[n])
                return (-s, n)

            active.sort(key=fused)
        inactive = [h for h in exact if h.status != "active"]
        seen = {_num(h.fact.id) for h in exact}
        near: list[FoundFact] = []
        for hits in (near_active, near_past):
            wanted = [(n, s) for n, s in hits
                      if s >= MEANING_MIN and n not in seen][: min(limit, MEANING_HITS)]
            facts = self._facts_by_num([n for n, _ in wanted])
            for n, s in wanted:
                if n in facts:
                    near.append(self._found(facts[n], s))
        return [*active, *inactive, *near]

    def _found(self, fact: Fact, similarity: float) -> FoundFact:
        """A meaning-only hit, with its status and last active version as search_all gives."""
        if fact.active:
            return FoundFact(fact, "active", None, frozenset(), similarity, exact=False)
        with self._read() as c:
            (last,) = c.execute(
                "SELECT max(to_seq) - 1 FROM item_history WHERE num = ? AND active = 1",
                (_num(fact.id),)).fetchone()
        status = "superseded" if fact.superseded else "forgotten"
        return FoundFact(fact, status, last, frozenset(), similarity, exact=False)
