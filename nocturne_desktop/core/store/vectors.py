"""Meaning vectors: each fact's embedding, made when its text is written, kept beside it.

Every write of a fact's text (``_insert``, ``_flush``, an import's ``load``) notes the fact in
the transaction's delta; just before the COMMIT, :meth:`VectorStore._before_commit` embeds all
of them in one batch and stores the vectors (float16, ``vectors``), so the meaning of a fact is
on disk whenever its text is. A write that changes only a fact's block or whether it is active
bumps its row's ``rev``, so every connection's in-memory matrix sees the change.

The store works without an embedder (the package missing, ``NOCTURNE_EMBEDDER=off``, a failure):
the facts commit, their vectors are marked missing (``vectors_complete`` = 0), and the ranking
uses the words alone. A store with an embedder fills what is missing in bounded batches
(:meth:`VectorStore.sync_vectors`); vectors of another model (``vector_model``) are all made
again. The matrix (:class:`_Matrix`) is one float32 array per connection, read from the table
once and then only the rows whose ``rev`` moved: scoring every fact is one matrix-vector
product, never a Python loop over rows (100k facts: 102 MB, ~7-8 ms a question once other
work has been through the cache; the same vectors as int8 codes, scored exactly through a
bound, were measured no faster then: ``bench.bench_product``). Which rows a query may return
(active or not, outside some blocks) is worked out once per change of the matrix, not per
query; when they are a small part of it (the active facts of a memory that has slept), a
compact copy of those rows is scored instead of the whole matrix. Equal scores go to the older
fact, at the cut too.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from nocturne_desktop.core.store.base import _IN_CHUNK
from nocturne_desktop.core.store.facts import FactStore
from nocturne_desktop.core.types import BLOCKS

if TYPE_CHECKING:
    from nocturne_desktop.core.ports import Embedder

log = logging.getLogger(__name__)

SYNC_BATCH = 2000
"""Facts embedded per transaction when missing vectors are filled (about 0.15 s of work)."""

EMBED_CHUNK = 512
"""Texts per call to the embedder (bounds the gathered token rows' memory)."""

_BLOCK_CODE = {b: i for i, b in enumerate(BLOCKS)}

COMPACT_SHARE = 0.25
"""A query's rows are copied into a compact matrix when they are at most this share of all
rows (the copy is made once per change of the matrix; scoring it reads that much less)."""


class _Eligible(NamedTuple):
    """The rows one kind of query may return: their positions in the matrix (None: all of the
    first ``size``) and, when they are few, a compact copy of their vectors."""

    pos: NDArray[np.int64] | None
    rows: NDArray[np.float32] | None


class _Default:
    """``Store(embedder=...)`` not given: the process's default embedder, loaded on first use."""


DEFAULT_EMBEDDER: Any = _Default()


class _Matrix:
    """One connection's copy of the vectors: ``nums``, ``rows`` (unit float32), whether each
    fact is active and its block, for the first ``size`` entries; ``rev`` is the last write
    read, ``model`` the embedder they belong to."""

    __slots__ = ("_eligible", "active", "block", "has", "model", "nums", "pos", "rev", "rows",
                 "size")

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.rev = -1
        self.size = 0
        self.nums: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.rows: NDArray[np.float32] = np.zeros((0, dim), dtype=np.float32)
        self.active: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.has: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        """Whether the row holds a vector (a text not embedded yet scores nothing)."""
        self.block: NDArray[np.int8] = np.zeros(0, dtype=np.int8)
        self.pos: dict[int, int] = {}
        self._eligible: dict[tuple[bool, tuple[int, ...]], _Eligible] = {}
        """Per (active, excluded block codes): the rows such a query may return (cleared by
        every :meth:`update`)."""

    def eligible(self, active: bool, codes: tuple[int, ...]) -> _Eligible:
        """The rows with a vector that are active (``active=False``: not), outside the blocks
        ``codes``; worked out once until the matrix changes."""
        key = (active, codes)
        found = self._eligible.get(key)
        if found is None:
            n = self.size
            keep = self.has[:n] & (self.active[:n] if active else ~self.active[:n])
            if codes:
                keep &= ~np.isin(self.block[:n], codes)
            if keep.all():
                found = _Eligible(None, None)
            else:
                pos = np.flatnonzero(keep)
                compact = len(pos) <= COMPACT_SHARE * n
                found = _Eligible(pos, self.rows[pos] if compact else None)
            self._eligible[key] = found
        return found

    def _grow(self, need: int) -> None:
        cap = len(self.nums)
        if need <= cap:
            return
        new = max(need, 2 * cap, 1024)
        self.nums = np.resize(self.nums, new)
        self.rows = np.concatenate([self.rows, np.zeros((new - cap, self.rows.shape[1]),
                                                        dtype=np.float32)])
        self.active = np.resize(self.active, new)
        self.has = np.resize(self.has, new)
        self.block = np.resize(self.block, new)

    def update(self, rows: Sequence[tuple[int, bytes | None, int, str]]) -> None:
        """Take ``(num, vec, active, block)`` rows (vec None: no vector, scored as nothing)."""
        if not rows:
            return
        self._eligible.clear()
        self._grow(self.size + len(rows))
        width = 2 * self.rows.shape[1]
        at = np.empty(len(rows), dtype=np.int64)
        for i, (num, *_rest) in enumerate(rows):
            j = self.pos.get(num)
            if j is None:
                j = self.pos[num] = self.size
                self.size += 1
                self.nums[j] = num
            at[i] = j
        good = np.fromiter((v is not None and len(v) == width for _, v, _, _ in rows),
                           dtype=bool, count=len(rows))
        self.has[at] = good
        self.rows[at[~good]] = 0.0
        if good.any():
            blob = b"".join(v for (_, v, _, _), g in zip(rows, good, strict=True) if g and v)
            self.rows[at[good]] = np.frombuffer(blob, dtype=np.float16).reshape(-1, width // 2)
        self.active[at] = np.fromiter((bool(a) for _, _, a, _ in rows), dtype=bool,
                                      count=len(rows))
        self.block[at] = np.fromiter((_BLOCK_CODE.get(b, -1) for _, _, _, b in rows),
                                     dtype=np.int8, count=len(rows))


class VectorStore(FactStore):
    """The meaning vectors of the facts (see the module doc)."""

    _embedder_given: Any = DEFAULT_EMBEDDER
    _matrix: _Matrix | None = None

    def embedder(self) -> Embedder | None:
        """The embedder this store writes and ranks with (None: words alone)."""
        given = self._embedder_given
        if isinstance(given, _Default):
            from nocturne_desktop.core.embedder import default_embedder

            return default_embedder()
        return given  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ writes

    def _before_commit(self) -> None:
        d = self._delta
        moved = (set(d.touched) | d.inserted) - d.texts
        if not d.texts and not moved:
            return
        c = self._conn
        try:
            c.execute("SAVEPOINT nocturne_vectors")
            try:
                rev = self._next_vector_rev()
                self._bump(moved, rev)
                if d.texts:
                    self._write_vectors(sorted(d.texts), rev)
            except BaseException:
                c.execute("ROLLBACK TO nocturne_vectors")
                raise
            finally:
                c.execute("RELEASE nocturne_vectors")
        except Exception as exc:  # the facts commit; their vectors are filled in later
            log.warning("meaning vectors not written (%s: %s); they will be made later",
                        type(exc).__name__, exc)
            try:
                rev = self._next_vector_rev()
                self._bump(moved | d.texts, rev, clear=d.texts)
                self._set_complete(False)
            except sqlite3.Error:
                pass  # the COMMIT that follows reports the store's own trouble

    def _next_vector_rev(self) -> int:
        c = self._conn
        (rev,) = c.execute("SELECT value FROM counters WHERE name = 'vectors_rev'").fetchone()
        c.execute("UPDATE counters SET value = ? WHERE name = 'vectors_rev'", (int(rev) + 1,))
        return int(rev) + 1

    def _set_complete(self, complete: bool) -> None:
        self._conn.execute("UPDATE counters SET value = ? WHERE name = 'vectors_complete'",
                           (int(complete),))

    def _bump(self, nums: Iterable[int], rev: int, *, clear: Iterable[int] = ()) -> None:
        """Move ``nums``' rows to ``rev`` (their block or activity changed); ``clear``: drop
        their vectors too (their text changed and was not embedded)."""
        c = self._conn
        cleared = set(clear)
        for wanted, sql in (
            (sorted(set(nums) - cleared), "UPDATE vectors SET rev = ? WHERE num IN ({})"),
            (sorted(cleared), "UPDATE vectors SET rev = ?, vec = NULL WHERE num IN ({})"),
        ):
            for start in range(0, len(wanted), _IN_CHUNK):
                chunk = wanted[start : start + _IN_CHUNK]
                c.execute(sql.format(",".join("?" * len(chunk))), (rev, *chunk))

    def _model_row(self, embedder: Embedder) -> bool:
        """Make ``vector_model`` name ``embedder``; True when the vectors were another model's
        (they are then all dropped, to be made again)."""
        c = self._conn
        row = c.execute("SELECT name, dim FROM vector_model WHERE id = 1").fetchone()
        if row is not None and (row[0], int(row[1])) == (embedder.name, embedder.dim):
            return False
        c.execute("DELETE FROM vectors")
        c.execute("INSERT OR REPLACE INTO vector_model(id, name, dim) VALUES (1, ?, ?)",
                  (embedder.name, embedder.dim))
        return True

    def _write_vectors(self, nums: Sequence[int], rev: int) -> int:
        """Embed the texts of ``nums`` and store their vectors at ``rev``; how many were made.
        Without an embedder their old vectors are dropped and the store marked incomplete."""
        embedder = self.embedder()
        if embedder is None:
            self._bump((), rev, clear=nums)
            self._set_complete(False)
            return 0
        changed = self._model_row(embedder)
        c = self._conn
        done = 0
        for start in range(0, len(nums), EMBED_CHUNK):
            chunk = list(nums[start : start + EMBED_CHUNK])
            rows = c.execute(
                f"SELECT num, text FROM items WHERE num IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
            vecs = np.asarray(embedder.embed([r[1] for r in rows]), dtype=np.float16)
            c.executemany(
                "INSERT OR REPLACE INTO vectors(num, rev, vec) VALUES (?, ?, ?)",
                [(r[0], rev, vecs[i].tobytes()) for i, r in enumerate(rows)],
            )
            done += len(rows)
        if changed:  # the first vectors of this model: complete if they were all there was
            (missing,) = c.execute(
                "SELECT EXISTS (SELECT 1 FROM items i LEFT JOIN vectors v ON v.num = i.num "
                "WHERE v.vec IS NULL)").fetchone()
            self._set_complete(not missing)
        return done

    def vectors_complete(self) -> bool:
        """Whether every fact has a vector of the current embedder (as far as the store knows)."""
        embedder = self.embedder()
        with self._read() as c:
            (complete,) = c.execute(
                "SELECT value FROM counters WHERE name = 'vectors_complete'").fetchone()
            row = c.execute("SELECT name, dim FROM vector_model WHERE id = 1").fetchone()
        return (embedder is not None and bool(complete) and row is not None
                and (row[0], int(row[1])) == (embedder.name, embedder.dim))

    def sync_vectors(self, *, limit: int | None = None) -> int:
        """Make the missing vectors (facts written without an embedder, or by another model's),
        :data:`SYNC_BATCH` facts a transaction, at most ``limit`` of them (None: all); how many
        were made. The store is marked complete when none is left."""
        embedder = self.embedder()
        if embedder is None or self._depth:
            return 0
        made = 0
        while limit is None or made < limit:
            batch = SYNC_BATCH if limit is None else min(SYNC_BATCH, limit - made)
            with self.transaction():
                self._model_row(embedder)
                nums = [r[0] for r in self._conn.execute(
                    "SELECT i.num FROM items i LEFT JOIN vectors v ON v.num = i.num "
                    "WHERE v.vec IS NULL ORDER BY i.num LIMIT ?", (batch,))]
                if nums:
                    made += self._write_vectors(nums, self._next_vector_rev())
                if len(nums) < batch:
                    self._set_complete(True)
                    return made
        return made

    # ------------------------------------------------------------------ reads

    def _vectors(self) -> _Matrix | None:
        """This connection's matrix, brought up to date (None: no embedder)."""
        embedder = self.embedder()
        if embedder is None:
            return None
        with self._read() as c:
            rev, model = c.execute(
                "SELECT (SELECT value FROM counters WHERE name = 'vectors_rev'), "
                "(SELECT name FROM vector_model WHERE id = 1)").fetchone()
            m = self._matrix
            if m is None or m.model != model:
                m = self._matrix = _Matrix(model or "", embedder.dim)
            if model == embedder.name and int(rev) > m.rev:
                m.update(c.execute(
                    "SELECT v.num, v.vec, i.active, i.block FROM vectors v "
                    "JOIN items i ON i.num = v.num WHERE v.rev > ?", (m.rev,)).fetchall())
                m.rev = int(rev)
        return m if m.model == embedder.name else None

    def similar(
        self,
        query: str,
        *,
        limit: int,
        active: bool = True,
        exclude_blocks: Sequence[str] = (),
        fill: int = SYNC_BATCH,
    ) -> list[tuple[int, float]]:
        """The ``limit`` facts nearest in meaning to ``query`` (cosine of the vectors), best
        first, as ``(num, similarity)``: active ones (``active=False``: forgotten and
        superseded ones), outside ``exclude_blocks``. Up to ``fill`` missing vectors are made
        first. Empty without an embedder or when ``query`` has no token."""
        found = self._query_vector(query, limit, fill)
        if found is None:
            return []
        m, q = found
        codes = tuple(sorted({_BLOCK_CODE[b] for b in exclude_blocks if b in _BLOCK_CODE}))
        return _nearest(m, q, m.eligible(active, codes), limit)

    def similar_both(
        self, query: str, *, limit: int, fill: int = SYNC_BATCH
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """:meth:`similar` of the active facts and of the others, from one product with the
        whole matrix (the search panel lists both)."""
        found = self._query_vector(query, limit, fill)
        if found is None:
            return [], []
        m, q = found
        scores = m.rows[: m.size] @ q
        return (_nearest(m, q, m.eligible(True, ()), limit, scores),
                _nearest(m, q, m.eligible(False, ()), limit, scores))

    def _query_vector(
        self, query: str, limit: int, fill: int
    ) -> tuple[_Matrix, NDArray[np.float32]] | None:
        """The matrix, up to date (``fill`` missing vectors made first), and the query's unit
        vector; None when there is nothing to score."""
        embedder = self.embedder()
        if embedder is None or limit <= 0:
            return None
        if fill > 0 and not self._depth and not self.vectors_complete():
            try:
                self.sync_vectors(limit=fill)
            except Exception as exc:  # a busy or read-only store: rank what has vectors
                log.info("missing meaning vectors not made now (%s)", exc)
        m = self._vectors()
        if m is None or m.size == 0:
            return None
        q = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
        if not q.any():
            return None
        return m, q


def _nearest(
    m: _Matrix,
    q: NDArray[np.float32],
    rows: _Eligible,
    limit: int,
    whole: NDArray[np.float32] | None = None,
) -> list[tuple[int, float]]:
    """The ``limit`` rows of ``rows`` with the highest score against ``q``, best first (ties:
    the older fact), as ``(num, score)``; ``whole``: the scores of every row, if made already."""
    if rows.rows is not None:
        scores = rows.rows @ q
    else:
        scores = whole if whole is not None else m.rows[: m.size] @ q
        if rows.pos is not None:
            scores = scores[rows.pos]
    return _best(scores, m.nums, limit, rows.pos)


def _best(
    scores: NDArray[np.float32], nums: NDArray[np.int64], limit: int,
    pos: NDArray[np.int64] | None,
) -> list[tuple[int, float]]:
    """The ``limit`` highest ``scores``, best first, as ``(num, score)``; score ``i`` is the
    fact ``nums[pos[i]]`` (None: ``nums[i]``). Ties go to the older fact at the cut too: every
    score equal to the ``limit``-th is kept until the fact numbers order them (a partial sort
    alone would keep any of a run of equal scores, e.g. of one text stored many times)."""
    n = len(scores)
    k = min(int(limit), n)
    if k <= 0:
        return []
    own = nums[:n] if pos is None else nums[pos]
    keep = np.flatnonzero(scores >= np.partition(scores, n - k)[n - k]) if k < n else np.arange(n)
    order = keep[np.lexsort((own[keep], -scores[keep]))[:k]]
    return [(int(a), float(b)) for a, b in zip(own[order], scores[order], strict=True)]
