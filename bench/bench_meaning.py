"""Benchmark of the meaning guards: their cost per call, the duplicate join with them, and the
verdicts on generated rewrites (S-MEAN-7).

Run from the repository root: ``python -m bench.bench_meaning`` (``--quick``: 10k facts at most,
300 rewrite cases). "Before" is the same run with the guards switched off (the article's token
measures alone), so both columns come from one process on one machine state.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import platform
import sys
import time
import timeit
from collections import Counter
from collections.abc import Iterator
from unittest import mock

from hypothesis import HealthCheck, given, seed, settings

from bench.bench_textmath import make_facts
from nocturne_desktop.core.chat import encoder
from nocturne_desktop.core.judges import duplicates, meaning
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.meaning import clauses as meaning_clauses
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import gates
from nocturne_desktop.core.types import Fact

meaning_canonical = importlib.import_module("nocturne_desktop.core.judges.meaning.canonical")
"""The module (the package re-exports a function of the same name)."""
NOW = 1_800_000_000.0
A = "I don't eat meat, only fish, and I run 48 km every week with Jonas."
B = "The user eats fish and runs 48 km every week."
SOURCES = ["I don't eat meat, only fish.", "I run 48 km every week with Jonas."]


@contextlib.contextmanager
def guards_off() -> Iterator[None]:
    """The judges as they were: token measures only (canonical forms and guards disabled)."""
    with contextlib.ExitStack() as stack:
        for target, value in (
            ("check_claim", lambda *a, **k: None),
            ("completeness", lambda *a, **k: None),
            ("duplicate_conflict", lambda *a, **k: None),
            ("keeper_problem", lambda *a, **k: None),
            ("statement_problem", lambda *a, **k: None),
            ("canonical", lambda text, speaker="user": text),
        ):
            stack.enter_context(mock.patch.object(meaning, target, value))
        yield


def per_call(n: int = 2000) -> None:
    def us(fn: object) -> float:
        timer = timeit.Timer(fn)  # type: ignore[arg-type]
        return min(timer.repeat(5, n)) / n * 1e6

    facts = [Fact("m_1", "scratch", SOURCES[0], "context", 1, NOW, NOW, True),
             Fact("m_2", "scratch", SOURCES[1], "context", 2, NOW, NOW, True)]
    merge = {"merge": [{"intoId": "m_1", "fromIds": ["m_2"], "reason": "x",
                        "mergedText": "The user doesn't eat meat, only fish; the user runs 48 km "
                                      "every week with Jonas."}]}
    policy = RetentionPolicy()
    rows = [
        ("similarity", lambda: tm.similarity(A, B), lambda: meaning.canonical_similarity(A, B)),
        ("coverage (2 sources)", lambda: tm.coverage(B, SOURCES),
         lambda: meaning.canonical_coverage(B, SOURCES)),
        ("check_claim (2 sources)", None, lambda: meaning.check_claim(B, list(zip("ab", SOURCES,
                                                                                  strict=True)))),
        ("duplicate_conflict", None, lambda: meaning.duplicate_conflict(("a", A), ("b", B))),
        ("Merge gate, one entry", "gate", lambda: gates.check("merge", facts, merge, policy, now=NOW)),
        ("encoder gate, one fact", "enc", lambda: encoder.check_fact(B, SOURCES)),
    ]
    print("| call | before (µs) | after (µs) |")
    print("| --- | ---: | ---: |")
    for name, before, after in rows:
        # caches off for a fair per-call figure: every call re-reads its texts
        meaning_canonical._scan.cache_clear()
        meaning_clauses._analyse.cache_clear()
        def cold(after: object = after) -> object:
            meaning_canonical._scan.cache_clear()
            meaning_clauses._analyse.cache_clear()
            return after()  # type: ignore[operator]

        cold_after = us(cold)
        if before == "gate":
            with guards_off():
                b = us(lambda: gates.check("merge", facts, merge, policy, now=NOW))
        elif before == "enc":
            with guards_off():
                b = us(lambda: encoder.check_fact(B, SOURCES))
        elif before is None:
            b = float("nan")
        else:
            b = us(before)
        print(f"| {name} | {b:.1f} | {cold_after:.1f} |")
        sys.stdout.flush()


def duplicate_join(sizes: list[int]) -> None:
    print("\n| facts | candidate_pairs (s) | duplicate_pairs (s) | pairs | vetoed |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in sizes:
        facts = make_facts(n)
        t0 = time.perf_counter()
        plain = duplicates.candidate_pairs(facts, 0.9)
        t1 = time.perf_counter()
        pairs, vetoed = duplicates.duplicate_pairs(facts, 0.9)
        t2 = time.perf_counter()
        print(f"| {n:,} | {t1 - t0:.2f} | {t2 - t1:.2f} | {len(pairs):,} (of {len(plain):,}) | "
              f"{len(vetoed):,} |")
        sys.stdout.flush()


def rewrites(examples: int) -> None:
    from tests.core.meaning_rewrites import Case, cases
    from tests.core.test_meaning_properties import (
        dedupe_refuses,
        dedupe_separates,
        encoder_refuses,
        merge_refuses,
    )

    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()

    def judge(case: Case) -> None:
        for _, claim in case.altering:
            counts["altering tried"] += 1
            refused = (bool(encoder_refuses(claim, case)), bool(merge_refuses(claim, case)),
                       dedupe_separates(claim, case))
            counts["altering refused by all three"] += all(refused)
            if not all(refused):
                kinds[f"altering let through: {case.kind}"] += 1
            with guards_off():
                old = (bool(encoder_refuses(claim, case)), bool(merge_refuses(claim, case)),
                       dedupe_separates(claim, case))
            counts["altering refused by all three, guards off"] += all(old)
        for claim in case.preserving:
            counts["preserving tried"] += 1
            accepted = (encoder_refuses(claim, case) is None and merge_refuses(claim, case) is None
                        and dedupe_refuses(claim, case) is None)
            counts["preserving accepted by all three"] += accepted
            if not accepted:
                kinds[f"preserving refused: {case.kind}"] += 1

    run = seed(20261201)(settings(max_examples=examples, database=None, deadline=None,
                                  suppress_health_check=list(HealthCheck))(given(cases())(judge)))
    run()
    tried, ok = counts["preserving tried"], counts["preserving accepted by all three"]
    print(f"\nrewrites ({examples} generated cases, seeded):")
    for k, v in counts.items():
        print(f"- {k}: {v}")
    print(f"- preserving acceptance rate: {ok / tried:.1%}")
    bad = counts["altering tried"] - counts["altering refused by all three"]
    print(f"- altering refusal rate: {1 - bad / max(1, counts['altering tried']):.1%}")
    for k, v in sorted(kinds.items()):
        print(f"  - {k}: {v}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rewrites", action="store_true", help="only the rewrite verdicts")
    args = parser.parse_args(argv)
    print(f"# meaning guards benchmark (Python {platform.python_version()}, {platform.machine()})\n")
    if args.rewrites:
        rewrites(300 if args.quick else 1000)
        return
    per_call()
    duplicate_join([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    rewrites(300 if args.quick else 1000)


if __name__ == "__main__":
    main()
