"""Search over every fact (``Store.search_all``) against the active-only search, per query.

Run: ``PYTHONPATH=. python -m bench.bench_search_all`` (``--facts 10000`` by default).
Half the facts are forgotten over five sleeps; every fact shares the word "painting" (a word
common to all, which the search leaves out when rarer ones remain) and one of 300 topics.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


def per_call_ms(fn: object, repeat: int = 20) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - t0) / repeat * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=10_000)
    n = ap.parse_args().facts
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as s:
        with s.transaction():
            for i in range(n):
                s.append("scratch", FactDraft(f"Fact {i} about topic{i % 300} and painting {i}."))
        s.snapshot("all")
        for r in range(5):
            with s.transaction():
                for i in range(r, n, 10):
                    s.forget(f"m_{i + 1}")
            s.snapshot(f"forgot {r}")
        print(f"{n} facts, {n - s.active_count()} forgotten\n")
        print("| query | search_all ms | hits | search_scored (active only) ms |")
        print("| --- | ---: | ---: | ---: |")
        for q in ("topic7 topic8 painted", "painted", "zebra"):
            hits = s.search_all(q, limit=50)
            t_all = per_call_ms(lambda q=q: s.search_all(q, limit=50))
            t_act = per_call_ms(lambda q=q: s.search_scored(q, limit=50))
            print(f"| {q} | {t_all:.1f} | {len(hits)} | {t_act:.1f} |")


if __name__ == "__main__":
    main()
