"""Search: the live facts by the words of a query (BM25 over folded words, with boosts), and
all of memory (active, forgotten, superseded) with the matched words marked.

The indexes are kept by :mod:`.facts` on every write; this module only reads them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.policy import DEFAULT_IMPORTANCE, decayed
from nocturne_desktop.core.store.base import (
    _FACT_COLS,
    _IN_CHUNK,
    _N_FACT_COLS,
    _check_block,
    _check_unicode,
    _fact,
    _num,
)
from nocturne_desktop.core.store.vectors import VectorStore
from nocturne_desktop.core.types import Fact

SEARCH_BLOCK_BOOST: dict[str, float] = {"persona": 0.2, "human": 0.2, "episodes": 0.1, "scratch": 0.0}
"""Search boost by block: consolidated facts win a near-tie with scratch notes."""


SEARCH_RECENCY_BOOST = 0.2
"""Search boost for a fact updated just now, falling linearly to 0 at :data:`SEARCH_RECENCY_DAYS`."""


SEARCH_RECENCY_DAYS = 90.0


SEARCH_SALIENCE_BOOST = 0.05
"""Search boost per point of importance off the category's usual one and per recall (decayed)."""


SEARCH_COMMON_MIN = 1000
"""A query word found in more facts than this and than a tenth of all facts is left out of the
search when rarer words remain (see ``Store._selective``)."""


_SEARCH_POOL = 2
"""BM25 candidates per result re-ranked with the boosts (and filtered by block; the pool widens
when the filter leaves fewer than ``limit``)."""


class FoundFact(NamedTuple):
    """One hit of :meth:`Store.search_all`: the fact as it is now, whether it is ``active``,
    ``forgotten`` or ``superseded``, the last version (seq) at which it was active (None for an
    active fact, or an inactive one no version ever showed active), the folded words of its text
    that matched (as :func:`textmath.stem_token` folds them; for highlighting) and its relevance
    (BM25, higher is better; search_scored's score for an active fact)."""

    fact: Fact
    status: str
    last_active_seq: int | None
    matched: frozenset[str]
    score: float
    exact: bool = True
    """It shares a folded word with the query (``matched``); False: found by meaning alone
    (:meth:`RankStore.search_all_ranked`, ``score`` is then the similarity)."""


class SearchHit(NamedTuple):
    """One search result and why it ranks where it does: ``score = bm25 * (1 + boost)`` with
    ``boost = block + recency + salience`` (``bm25`` is FTS5's relevance, sign flipped so higher
    is better)."""

    fact: Fact
    score: float
    bm25: float
    block: float
    recency: float
    salience: float = 0.0
    """:data:`SEARCH_SALIENCE_BOOST` per point of importance above (below: minus) the category's
    usual one, plus the same per recall as it weighs now (at most 4)."""


_WORD = re.compile(r"\w+")

_HIT_COLS = (
    "i.num, i.block, i.text, i.category, i.source_turn, i.created_at, i.updated_at, i.active, "
    "i.valid_until, i.superseded_by, i.pinned, s.importance, s.strength, s.last_used_at"
)
"""A hit's fact columns (as ``_fact`` reads them) and its strengths row's."""


_MAX_QUERY_TERMS = 32


def _marked(highlighted: str) -> frozenset[str]:
    """The folded words FTS5's ``highlight(..., char(1), char(2))`` marked in a stems column."""
    words: set[str] = set()
    inside = False
    for word in highlighted.split(" "):
        if inside or "\x01" in word:
            words.add(word.replace("\x01", "").replace("\x02", ""))
        if "\x01" in word or "\x02" in word:
            inside = word.rfind("\x01") > word.rfind("\x02")
    words.discard("")
    return frozenset(words)


class SearchStore(VectorStore):
    """Reads of the FTS5 indexes that :class:`.FactStore` keeps."""

    @staticmethod
    def _selective(c: sqlite3.Connection, quoted: list[str]) -> list[str]:
        """The query terms without those in more than a tenth of the facts (at least
        :data:`SEARCH_COMMON_MIN`), unless every term is that common.

        BM25 gives such a word little weight, but ranking every fact it matches is most of a
        search's cost on a large store (the user's name in every fact); counting stops at the
        threshold, so the check costs at most that many index entries per term.
        """
        if len(quoted) < 2:
            return quoted
        (next_item,) = c.execute("SELECT value FROM counters WHERE name = 'next_item'").fetchone()
        common = max(SEARCH_COMMON_MIN, (int(next_item) - 1) // 10)
        keep = [
            q for q in quoted
            if c.execute(
                "SELECT count(*) FROM (SELECT 1 FROM items_fts WHERE items_fts MATCH ? LIMIT ?)",
                (q, common + 1),
            ).fetchone()[0] <= common
        ]
        return keep or quoted

    def search(
        self, query: str, *, limit: int = 20, exclude_blocks: Sequence[str] = ()
    ) -> list[Fact]:
        """Active facts matching any word of ``query``, best first: :meth:`search_scored`'s facts."""
        return [h.fact for h in self.search_scored(query, limit=limit, exclude_blocks=exclude_blocks)]

    def search_scored(
        self,
        query: str,
        *,
        limit: int = 20,
        exclude_blocks: Sequence[str] = (),
        now: float | None = None,
    ) -> list[SearchHit]:
        """Active facts matching any word of ``query`` (inflections folded), best first.

        ``query`` is free text: it is cut into words, folded as the index is, each quoted, and
        OR-ed, so FTS syntax in it (quotes, ``NEAR``, ``*``, ``-``, parentheses) is matched
        literally and never errors. The score is ``bm25 * (1 + block + recency + salience)``
        (the boost never below -0.5): ``bm25`` is
        FTS5's BM25 (sign flipped), ``block`` is :data:`SEARCH_BLOCK_BOOST` of the fact's block,
        ``recency`` is :data:`SEARCH_RECENCY_BOOST` for a fact updated at ``now`` (the store's
        clock by default) falling linearly to 0 at :data:`SEARCH_RECENCY_DAYS`, ``salience`` is
        :attr:`SearchHit.salience` (importance and recalls). Ties go to the
        older id. Without FTS5 the relevance is the number of query words found (LIKE on the
        folded words).
        """
        if not isinstance(query, str):
            raise InvalidInput(f"search query must be a string, not {type(query).__name__}")
        excluded = [_check_block(b) for b in exclude_blocks]
        query = query.replace("\x00", " ")
        for word in _WORD.findall(query):
            _check_unicode(word, "search query")
        terms = list(dict.fromkeys(tm.tokens(query)))
        if not terms or limit <= 0:
            return []
        terms = terms[:_MAX_QUERY_TERMS]
        not_in = ""
        if excluded:
            not_in = f" AND i.block NOT IN ({','.join('?' * len(excluded))})"
        pool = int(limit) * _SEARCH_POOL
        with self._read() as c:
            if self.fts_enabled:
                quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
                match = " OR ".join(self._selective(c, quoted))
                sql = (  # the BM25 best `pool` and their rows, in one statement
                    f"SELECT {_HIT_COLS}, f.score, (i.active = 1{not_in}) FROM "
                    "(SELECT rowid AS num, -bm25(items_fts) AS score FROM items_fts "
                    "WHERE items_fts MATCH ? ORDER BY bm25(items_fts) LIMIT ?) f "
                    "LEFT JOIN items i ON i.num = f.num LEFT JOIN strengths s ON s.num = f.num")
                while True:  # then the block filter; widen if it took many
                    ranked = c.execute(sql, (*excluded, match, pool)).fetchall()
                    rows = [r for r in ranked if r[15]]
                    if len(rows) >= limit or len(ranked) < pool:
                        break
                    pool *= 4
            else:
                likes = [
                    "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for t in terms
                ]
                score = " + ".join("(i.text LIKE ? ESCAPE '\\')" for _ in likes)
                rows = c.execute(
                    f"SELECT {_HIT_COLS}, ({score}) AS score "
                    f"FROM items i LEFT JOIN strengths s ON s.num = i.num "
                    f"WHERE i.active = 1{not_in} AND score > 0 "
                    f"ORDER BY score DESC, i.num LIMIT ?",
                    (*likes, *excluded, pool),
                ).fetchall()
        at = self._clock() if now is None else now
        scored = []
        for r in rows:  # the fact's columns, its strengths row's (NULL if none), the relevance
            relevance = float(r[14])
            block = SEARCH_BLOCK_BOOST.get(r[1], 0.0)
            age = max(0.0, (at - r[6]) / 86400.0)  # updated_at
            recency = SEARCH_RECENCY_BOOST * max(0.0, 1.0 - age / SEARCH_RECENCY_DAYS)
            importance, strength, last_used = r[11], r[12], r[13]
            off = 0 if importance is None else importance - DEFAULT_IMPORTANCE.get(r[3], 3)
            used = 0.0 if strength is None else min(4.0, decayed(strength, last_used, at))
            salience = SEARCH_SALIENCE_BOOST * (off + used)
            boost = max(-0.5, block + recency + salience)
            scored.append((-relevance * (1.0 + boost), r[0], relevance, block, recency,
                           salience, r))
        scored.sort(key=lambda t: (t[0], t[1]))  # best first, ties: the older id
        return [SearchHit(_fact(r), -neg, relevance, block, recency, salience)
                for neg, _, relevance, block, recency, salience, r in scored[: int(limit)]]

    def search_all(self, query: str, *, limit: int = 50) -> list[FoundFact]:
        """Facts matching any word of ``query`` (folded as :meth:`search_scored` folds it; its
        stopwords are left out unless it has no other word), active
        or not: up to ``limit`` active ones (search_scored's order), then up to ``limit``
        forgotten or superseded ones (best BM25 first), each with the last version at which it
        was active and the words that matched.

        Both parts read an FTS5 index (``items_fts``, ``past_fts``); the last active version is
        one indexed look-up per inactive hit in ``item_history`` - nothing here scans the store
        or its history. Without FTS5 the inactive part uses the LIKE count as search_scored does.
        """
        active = self.search_scored(query, limit=limit)  # checks the query
        query = query.replace("\x00", " ")
        terms = list(dict.fromkeys(tm.tokens(query)))
        content = tm.content_tokens(query)
        if content and len(content) < len(terms):  # "in", "the": only when nothing else is asked
            terms = [t for t in terms if t in content]
            active = self.search_scored(" ".join(terms), limit=limit)
        terms = terms[:_MAX_QUERY_TERMS]
        if not terms or limit <= 0:
            return []
        quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        cols = ", ".join(f"i.{col.strip()}" for col in _FACT_COLS.split(","))
        found: list[FoundFact] = []
        with self._read() as c:
            if self.fts_enabled:
                (next_item,) = c.execute(
                    "SELECT value FROM counters WHERE name = 'next_item'").fetchone()
                common = max(SEARCH_COMMON_MIN, (int(next_item) - 1) // 10)
                rare = [q for q in quoted.split(" OR ") if c.execute(  # as _selective does
                    "SELECT count(*) FROM (SELECT 1 FROM past_fts WHERE past_fts MATCH ? LIMIT ?)",
                    (q, common + 1)).fetchone()[0] <= common]
                rows = c.execute(
                    f"SELECT {cols}, -bm25(past_fts) FROM past_fts "
                    "JOIN items i ON i.num = past_fts.rowid "
                    "WHERE past_fts MATCH ? AND i.active = 0 ORDER BY bm25(past_fts), i.num LIMIT ?",
                    (" OR ".join(rare) if rare and len(terms) > 1 else quoted, int(limit)),
                ).fetchall()
                marked = self._marked_words(c, "items_fts", quoted,
                                            [_num(h.fact.id) for h in active])
                marked.update(self._marked_words(c, "past_fts", quoted, [r[0] for r in rows]))
                past = [(r[:_N_FACT_COLS], float(r[_N_FACT_COLS]), marked.get(r[0], frozenset()))
                        for r in rows]
            else:
                wanted = set(terms)
                marked = {_num(h.fact.id): frozenset(wanted & set(tm.tokens(h.fact.text)))
                          for h in active}
                likes = [
                    "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for t in terms
                ]
                score = " + ".join("(i.text LIKE ? ESCAPE '\\')" for _ in likes)
                rows = c.execute(
                    f"SELECT {cols}, ({score}) AS score FROM items i "
                    "WHERE i.active = 0 AND score > 0 ORDER BY score DESC, i.num LIMIT ?",
                    (*likes, int(limit)),
                ).fetchall()
                past = [(r[:_N_FACT_COLS], float(r[_N_FACT_COLS]),
                         frozenset(wanted & set(tm.tokens(r[2])))) for r in rows]
            for h in active:
                found.append(FoundFact(h.fact, "active", None,
                                       marked.get(_num(h.fact.id), frozenset()), h.score))
            for row, relevance, words in past:
                fact = _fact(row)
                (last,) = c.execute(
                    "SELECT max(to_seq) - 1 FROM item_history WHERE num = ? AND active = 1",
                    (row[0],),
                ).fetchone()
                status = "superseded" if fact.superseded else "forgotten"
                found.append(FoundFact(fact, status, last, words, relevance))
        return found

    @staticmethod
    def _marked_words(
        c: sqlite3.Connection, table: str, match: str, nums: list[int]
    ) -> dict[int, frozenset[str]]:
        """For each of ``nums`` in the FTS ``table``, the folded words ``match`` matched in it."""
        marked: dict[int, frozenset[str]] = {}
        for start in range(0, len(nums), _IN_CHUNK):
            chunk = nums[start : start + _IN_CHUNK]
            marked.update((num, _marked(text)) for num, text in c.execute(
                f"SELECT rowid, highlight({table}, 0, char(1), char(2)) FROM {table} "
                f"WHERE {table} MATCH ? AND rowid IN ({','.join('?' * len(chunk))})",
                (match, *chunk),
            ))
        return marked
