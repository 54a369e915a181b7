"""Benchmark of the text measures: the duplicate join at 1k / 10k / 100k facts, and the cost of
one similarity and one coverage call.

Run from the repository root: ``python -m bench.bench_textmath`` (``--quick`` stops at 10k).
Facts are synthetic but shaped like the memory: 5-15 word sentences drawn from a Zipf-like
vocabulary of 20k words (3-10
content words per fact) plus English function words, with about 5% exact or near duplicates
(a word dropped, added, swapped or inflected) injected. Everything is seeded, so figures are
comparable between runs.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import random
import sys
import time
import timeit
from bisect import bisect_left

from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges import textmath as tm

VOCAB_SIZE = 20_000
FUNCTION_WORDS = ["the", "a", "user", "is", "in", "on", "and", "to", "of", "with", "at", "my"]
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["an", "el", "or", "ix"]


def make_vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCAB_SIZE:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in tm.STOPWORDS and not word.endswith("s"):
            words.add(word)
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


class Zipf:
    """Draw ranks 0..n-1 with probability proportional to 1 / (rank + q) ** s (Zipf-Mandelbrot:
    the flattened head stands for content words; function words are drawn separately)."""

    def __init__(self, n: int, s: float, q: float, rng: random.Random) -> None:
        self.cum = list(itertools.accumulate(1.0 / (r + q) ** s for r in range(n)))
        self.total = self.cum[-1]
        self.rng = rng

    def draw(self) -> int:
        return bisect_left(self.cum, self.rng.random() * self.total)


def make_facts(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    vocab = make_vocabulary(rng)
    zipf = Zipf(len(vocab), 1.0, 10.0, rng)
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < 0.05:
            texts.append(_near_duplicate(rng.choice(texts), vocab, zipf, rng))
            continue
        length = rng.randint(5, 15)
        content = max(3, round(length * rng.uniform(0.55, 0.8)))
        words = [vocab[zipf.draw()] for _ in range(content)]
        for _ in range(length - content):
            words.insert(rng.randrange(len(words) + 1), rng.choice(FUNCTION_WORDS))
        words[0] = words[0].capitalize()
        texts.append(" ".join(words) + ".")
    return [(f"m{i}", t) for i, t in enumerate(texts)]


def _near_duplicate(text: str, vocab: list[str], zipf: Zipf, rng: random.Random) -> str:
    words = text.rstrip(".").split()
    kind = rng.randrange(5)
    if kind == 1 and len(words) > 5:
        del words[rng.randrange(len(words))]
    elif kind == 2:
        words.insert(rng.randrange(len(words) + 1), vocab[zipf.draw()])
    elif kind == 3:
        words[rng.randrange(len(words))] = vocab[zipf.draw()]
    elif kind == 4:
        i = rng.randrange(len(words))
        words[i] = words[i] + "s"
    return " ".join(words) + "."  # kind 0: exact copy


def brute_force_pairs(items: list[tuple[str, str]], threshold: float) -> int:
    sets = [tm.content_tokens(t) for _, t in items]
    count = 0
    for a, b in itertools.combinations(sets, 2):
        if a and b and len(a & b) / min(len(a), len(b)) >= threshold:
            count += 1
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="stop at 10k facts")
    args = parser.parse_args(argv)
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    threshold = 0.9

    print(f"# textmath benchmark (Python {platform.python_version()}, {platform.machine()})\n")
    print(f"candidate_pairs, threshold {threshold}, best of 3 (1 run at 100k)\n")
    print("| facts | seconds | pairs found | facts/s |")
    print("| ---: | ---: | ---: | ---: |")
    timings: dict[int, float] = {}
    for n in sizes:
        facts = make_facts(n)
        runs = 1 if n >= 100_000 else 3
        best = float("inf")
        pairs: list[tuple[str, str, float]] = []
        for _ in range(runs):
            started = time.perf_counter()
            pairs = duplicates.candidate_pairs(facts, threshold)
            best = min(best, time.perf_counter() - started)
        timings[n] = best
        print(f"| {n:,} | {best:.3f} | {len(pairs):,} | {n / best:,.0f} |")
        sys.stdout.flush()

    print("\nOther thresholds (one run each; 0.5 at 100k is output-bound, ~1.5M pairs, skipped)\n")
    print("| facts | threshold | seconds | pairs found |")
    print("| ---: | ---: | ---: | ---: |")
    for n in sizes:
        facts = make_facts(n)
        for other in (0.75, 0.5):
            if other == 0.5 and n >= 100_000:
                continue
            started = time.perf_counter()
            count = len(duplicates.candidate_pairs(facts, other))
            print(f"| {n:,} | {other} | {time.perf_counter() - started:.3f} | {count:,} |")
            sys.stdout.flush()

    facts = make_facts(1_000)
    started = time.perf_counter()
    brute = brute_force_pairs(facts, threshold)
    brute_s = time.perf_counter() - started
    found = len(duplicates.candidate_pairs(facts, threshold))
    print(
        f"\nBrute force at 1,000 facts (499,500 comparisons, tokenising included): "
        f"{brute_s:.3f} s, {brute:,} pairs (join found {found:,})."
    )
    if 100_000 in timings:
        ratio = timings[100_000] / timings[10_000]
        print(f"10k → 100k time ratio: {ratio:.1f}× for 10× the facts (quadratic would be 100×).")
    elif 10_000 in timings:
        print(f"1k → 10k time ratio: {timings[10_000] / timings[1_000]:.1f}×.")

    rng = random.Random(11)
    sample = make_facts(2_000, seed=11)
    texts = [t for _, t in sample]
    pairs_sample = [(rng.choice(texts), rng.choice(texts)) for _ in range(2_000)]
    sources = [" ".join(rng.sample(texts, 2)) for _ in range(2_000)]
    claims = [rng.choice(texts) for _ in range(2_000)]
    it_sim = itertools.cycle(pairs_sample)
    it_cov = itertools.cycle(zip(claims, sources, strict=True))
    calls = 20_000
    sim_s = timeit.timeit(lambda: tm.similarity(*next(it_sim)), number=calls)
    cov_s = timeit.timeit(lambda: tm.coverage(*next(it_cov)), number=calls)
    print("\n| call | µs per call |")
    print("| --- | ---: |")
    print(f"| similarity(a, b), two 5-15 word facts | {sim_s / calls * 1e6:.1f} |")
    print(f"| coverage(claim, 2 sources) | {cov_s / calls * 1e6:.1f} |")


if __name__ == "__main__":
    main()
