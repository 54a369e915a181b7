"""The measured alternative of the meaning product (int8 codes, exact bound): each approximate
score is within its bound, and the top k it answers is the exact product's, however crowded
the rows (so the figures in docs/benchmarks.md compare equal answers)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from bench import bench_product as bp

DIM = 256


def crowded(seed: int, n: int, centres: int, spread: float) -> NDArray[np.float16]:
    """Unit rows around a few centres (many scores closer than the bytes can tell apart)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, DIM))
    x = c[rng.integers(0, centres, n)] + spread * rng.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)


def test_every_approximate_score_is_within_its_bound() -> None:
    rows = np.concatenate([crowded(1, 2000, 5, 0.3), np.eye(DIM, dtype=np.float16)[:40],
                           np.zeros((3, DIM), dtype=np.float16)])
    codes = bp.quantize(rows)
    assert (codes.scale[-3:] == 0).all() and (codes.codes[-3:] == 0).all()
    for seed in range(10):
        q = crowded(100 + seed, 1, 1, 0.0)[0].astype(np.float32)
        exact = rows.astype(np.float32) @ q
        err = bp.bounds(codes, q)
        assert (np.abs(bp.approx(codes, q) - exact) <= err).all()
        assert err[:2000].max() < 0.05


@pytest.mark.parametrize(("seed", "spread", "k"), [(3, 0.15, 1), (4, 0.15, 200), (5, 0.02, 50),
                                                   (6, 3.0, 300), (7, 0.0, 10)])
def test_the_top_k_through_the_codes_is_the_exact_products(seed: int, spread: float, k: int) -> None:
    rows = crowded(seed, 3000, 8, spread)
    nums = np.random.default_rng(seed).permutation(3000).astype(np.int64) + 1
    q = crowded(seed + 50, 1, 1, 0.0)[0].astype(np.float32)
    got, scored = bp.int8_top(bp.quantize(rows), rows, nums, q, k)
    s = rows.astype(np.float64) @ q.astype(np.float64)
    kth = np.sort(s)[::-1][k - 1]
    assert len(got) == k and scored >= k
    by_num = dict(zip(nums.tolist(), s.tolist(), strict=True))
    assert min(by_num[n] for n in got) >= kth - 1e-5  # nothing better was left out
    if spread > 0:  # away from exact copies, the very list of the float32 product
        assert got == bp.float32_top(rows.astype(np.float32), nums, q, k)
