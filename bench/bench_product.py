"""The meaning product measured two ways: the float32 matrix the store scores (today's), and
the same vectors as int8 codes scored exactly (measured, not taken; docs/benchmarks.md).

    python -m bench.bench_product --store <a bench_recall --cost store> [--queries 60]

The int8 form keeps each vector's 256 values as bytes and one scale (``code = round(x /
scale)``, ``scale = max|x| / 127``) with the length of what the rounding lost. A question is
scored against the bytes (chunks of :data:`CHUNK` rows widened to float32 in cache, one BLAS
product each, the next chunk's cache lines read ahead); every approximate score is within a
bound of the float32 one (the lost part's length times the question's, by Cauchy-Schwarz, plus
both products' rounding), so keeping each row whose best possible score reaches the k-th best
worst possible one and scoring those again exactly gives the exact top k. ``warm``: the
questions one after another; ``cold``: 300 MB read between two (as a chat turn finds the
matrix after the model has written a reply). Both forms' lists are checked equal.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from bench.bench_memory import DATA, load_bench
from nocturne_desktop.core.store import Store

CHUNK = 512
"""Rows widened per BLAS call (512 x 256 float32 stay in a core's cache; 256-4096 measured)."""

_ROUNDING = 2.0**-14
"""Bounds the float32 rounding of both 256-term products (each within ``2**-16`` of the sum of
its terms' sizes), with a margin of two."""


class Codes(NamedTuple):
    codes: NDArray[np.int8]
    scale: NDArray[np.float32]
    resid: NDArray[np.float32]


def quantize(rows: NDArray[np.floating]) -> Codes:
    """``rows`` as codes, scales and the rounded-up length of what the codes lost."""
    n = len(rows)
    out = Codes(np.empty(rows.shape, np.int8), np.empty(n, np.float32), np.empty(n, np.float32))
    for start in range(0, n, 8 * CHUNK):
        stop = min(n, start + 8 * CHUNK)
        part = np.asarray(rows[start:stop], dtype=np.float32)
        amax = np.abs(part).max(axis=1, initial=0.0)
        scale = out.scale[start:stop]
        np.divide(amax, np.float32(127.0), out=scale)
        inv = np.divide(np.float32(1.0), scale, out=np.zeros_like(scale), where=scale > 0)
        wide = np.clip(np.rint(part * inv[:, None]), -127, 127)
        out.codes[start:stop] = wide
        part -= wide * scale[:, None]  # exact (Sterbenz) but for the product's one rounding
        out.resid[start:stop] = (np.linalg.norm(part, axis=1) * np.float32(1 + 2**-16)
                                 + amax * np.float32(2**-19))
    return out


def approx(rows: Codes, q: NDArray[np.float32]) -> NDArray[np.float32]:
    codes = rows.codes
    n, dim = codes.shape
    out = np.empty(n, dtype=np.float32)
    flat = codes.reshape(-1)
    buf = np.empty((min(n, CHUNK), dim), dtype=np.float32)
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        if stop * dim < len(flat):  # one byte per cache line of the next chunk, read ahead
            flat[stop * dim : (stop + CHUNK) * dim : 64].max()
        part = buf[: stop - start]
        np.copyto(part, codes[start:stop], casting="unsafe")
        np.matmul(part, q, out=out[start:stop])
    out *= rows.scale
    return out


def bounds(rows: Codes, q: NDArray[np.float32]) -> NDArray[np.float32]:
    err = rows.resid * np.float32(np.linalg.norm(q) * (1 + 1e-6))
    err += rows.scale * np.float32(127.0 * float(np.abs(q).sum()) * _ROUNDING)
    return err


def candidates(scores: NDArray[np.float32], err: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    n = len(scores)
    if k >= n:
        return np.arange(n)
    floor = np.partition(scores - err, n - k)[n - k]
    return np.flatnonzero(scores + err >= floor)


def best(sims: NDArray[np.float32], nums: NDArray[np.int64], k: int) -> list[int]:
    """The ``k`` highest, ties to the lower num (as the store's ``_best``)."""
    n = len(sims)
    k = min(k, n)
    keep = np.flatnonzero(sims >= np.partition(sims, n - k)[n - k]) if k < n else np.arange(n)
    return [int(x) for x in nums[keep[np.lexsort((nums[keep], -sims[keep]))[:k]]]]


def int8_top(rows: Codes, vectors: NDArray[np.float16], nums: NDArray[np.int64],
             q: NDArray[np.float32], k: int) -> tuple[list[int], int]:
    """The exact top ``k`` through the codes, and how many rows were scored again."""
    cand = candidates(approx(rows, q), bounds(rows, q), k)
    sims = np.einsum("ij,j->i", vectors[cand].astype(np.float32), q)  # one order per row
    return [int(nums[cand][i]) for i in np.lexsort((nums[cand], -sims))[:k]], len(cand)


def float32_top(matrix: NDArray[np.float32], nums: NDArray[np.int64], q: NDArray[np.float32],
                k: int) -> list[int]:
    return best(matrix @ q, nums, k)


def timed(run: Callable[[], object], flush: Callable[[], object] | None) -> tuple[float, float]:
    if flush is not None:
        flush()
    t0, c0 = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a store with vectors")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--k", type=int, default=200)
    args = ap.parse_args(argv)
    with Store(args.store) as store:
        m = store._vectors()
        embedder = store.embedder()
    if m is None or embedder is None:
        print("bench_product: no vectors (or no embedder)", file=sys.stderr)
        return 2
    vectors, nums = m.rows[: m.size].astype(np.float16), m.nums[: m.size].copy()
    t0 = time.process_time()
    rows = quantize(vectors)
    quantize_ms = (time.process_time() - t0) * 1000.0
    matrix = vectors.astype(np.float32)
    convs = load_bench(DATA)
    texts = [q.text for c in convs for q in (*c.questions, *c.paraphrases)]
    qs = [embedder.embed([t])[0] for t in random.Random(12).sample(texts, args.queries)]
    same = sum(int8_top(rows, vectors, nums, q, args.k)[0] == float32_top(matrix, nums, q, args.k)
               for q in qs)
    junk = np.ones(75_000_000, dtype=np.float32)
    print(f"{len(nums)} vectors; int8 codes made in {quantize_ms:.0f} ms CPU; memory: float32 "
          f"{matrix.nbytes / 1e6:.0f} MB, float16 + codes "
          f"{(vectors.nbytes + rows.codes.nbytes) / 1e6:.0f} MB; the same top {args.k} for "
          f"{same} of {len(qs)} questions (a difference: float32 rounding of near-equal "
          "scores, one product BLAS's and the other row by row)\n")
    print("| state | form | median ms | CPU ms | rows scored again |")
    print("|---|---|---|---|---|")
    for state, flush in (("warm", None), ("cold", junk.max)):
        for form in ("float32", "int8"):  # warm: each form's questions one after another
            ts: list[tuple[float, float]] = []
            again: list[int] = []
            for q in qs:
                if form == "float32":
                    ts.append(timed(lambda q=q: float32_top(matrix, nums, q, args.k), flush))
                else:
                    ts.append(timed(lambda q=q, again=again: again.append(
                        int8_top(rows, vectors, nums, q, args.k)[1]), flush))
            extra = f"{statistics.median(again):.0f}" if again else "-"
            print(f"| {state} | {form} | {statistics.median(t for t, _ in ts):.2f} | "
                  f"{statistics.median(c for _, c in ts):.2f} | {extra} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
