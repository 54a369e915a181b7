"""Store benchmark: appends, snapshots, state_at, diff, restore and growth per snapshot.

Run: ``PYTHONPATH=. python -m bench.bench_store`` (add ``--sizes 1000,10000`` for a quick run).
Prints a markdown table. Every store lives in a temporary folder that is removed afterwards.

What "O(changes)" should look like: snapshot and the changes-only diff stay flat as the store
grows from 1k to 100k facts; the bytes a snapshot adds follow the number of facts changed since
the previous one, not the size of the store.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, FactDraft

VOCABULARY = (
    "user lives works likes keeps visited prefers morning evening Lisbon Porto tea coffee "
    "dragon garden project deadline meeting python postgres airflow kubernetes cat dog bike "
    "train weekend holiday sister brother friend office remote standup review release"
)
WORDS = VOCABULARY.split(" ")


def sentence(rng: random.Random) -> str:
    return "The " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12))) + "."


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def db_bytes(store: Store) -> int:
    c = store._conn  # the benchmark measures the file's logical size (WAL included)
    pages = c.execute("PRAGMA page_count").fetchone()[0]
    size = c.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(size)


def change(store: Store, rng: random.Random, n_facts: int, k: int) -> None:
    """k changes in one transaction: mostly text edits, some moves, some forgettings."""
    with store.transaction():
        for _ in range(k):
            item_id = f"m_{rng.randint(1, n_facts)}"
            roll = rng.random()
            fact = store.get(item_id)
            assert fact is not None
            if roll < 0.7 or not fact.active:
                store.update(item_id, text=sentence(rng))
            elif roll < 0.85:
                store.update(item_id, block=rng.choice(BLOCKS))
            else:
                store.forget(item_id)


def growth(store: Store, rng: random.Random, n: int, k: int, rounds: int) -> float:
    """Average bytes added per snapshot taken after k changes."""
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    start = db_bytes(store)
    for i in range(rounds):
        change(store, rng, n, k)
        store.snapshot(f"growth:{k}:{i}")
    return (db_bytes(store) - start) / rounds


def run(n: int, seed: int = 7) -> dict[str, float]:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="nocturne-bench-"))
    out: dict[str, float] = {"n": n}
    try:
        store = Store(folder / "bench.db")
        drafts = [
            FactDraft(sentence(rng), rng.choice(CATEGORIES), created_at=1.7e9 + i) for i in range(n)
        ]

        def bulk() -> None:
            with store.transaction():
                for d in drafts:
                    store.append(rng.choice(BLOCKS), d)

        out["append_batched_per_s"] = n / (timed(bulk) / 1000.0)
        singles = 500
        ms = timed(
            lambda: [store.append("scratch", FactDraft(sentence(rng))) for _ in range(singles)]
        )
        out["append_single_per_s"] = singles / (ms / 1000.0)
        total = n + singles
        v_first = store.snapshot("bench:start")

        snaps, diffs, lean, restores, states = [], [], [], [], []
        prev = v_first
        for _ in range(3):
            change(store, rng, total, 1000)
            t0 = time.perf_counter()
            v = store.snapshot("bench:after-1000")
            snaps.append((time.perf_counter() - t0) * 1000.0)
            diffs.append(timed(lambda p=prev, v=v: store.diff(p.seq, v.seq)))
            lean.append(timed(lambda p=prev, v=v: store.diff(p.seq, v.seq, include_kept=False)))
            states.append(timed(lambda p=prev: store.state_at(p.seq)))
            prev = v
        d = store.diff(v_first.seq, v_first.seq + 1, include_kept=False)
        out["diff_changed_entries"] = len(d.changed) + len(d.forgotten) + len(d.added)
        for i in range(3):
            restores.append(timed(lambda i=i: store.restore(prev.seq - 1 - i % 2)))
        out["snapshot_ms"] = statistics.median(snaps)
        out["diff_changes_ms"] = statistics.median(lean)
        out["diff_full_ms"] = statistics.median(diffs)
        out["state_at_ms"] = statistics.median(states)
        out["restore_ms"] = statistics.median(restores)
        out["bytes_per_snap_10"] = growth(store, rng, total, 10, 20)
        out["bytes_per_snap_1000"] = growth(store, rng, total, 1000, 3)
        out["db_mb"] = db_bytes(store) / 1e6
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        rows.append(run(n))
        print(f"  (store of {n} facts measured in {time.perf_counter() - t0:.1f} s)", flush=True)
    print()
    print(
        "| facts | append batched (facts/s) | append single (facts/s) | snapshot after 1k changes"
        " (ms) | diff 1k changes, changes only (ms) | diff incl. kept (ms) | state_at (ms) "
        "| restore 1k changes back (ms) | bytes/snapshot after 10 changes "
        "| bytes/snapshot after 1k changes | DB size (MB) |"
    )
    print("|" + "---|" * 11)
    for r in rows:
        print(
            f"| {int(r['n']):,} | {r['append_batched_per_s']:,.0f}"
            f" | {r['append_single_per_s']:,.0f}"
            f" | {r['snapshot_ms']:.2f} | {r['diff_changes_ms']:.1f} | {r['diff_full_ms']:.1f}"
            f" | {r['state_at_ms']:.1f} | {r['restore_ms']:.1f}"
            f" | {r['bytes_per_snap_10']:,.0f} | {r['bytes_per_snap_1000']:,.0f}"
            f" | {r['db_mb']:.1f} |"
        )
    print()
    print(
        "diff entries classified per 1k-change diff (changed + forgotten + added): "
        + ", ".join(f"{int(r['n']):,} facts: {int(r['diff_changed_entries'])}" for r in rows)
    )


if __name__ == "__main__":
    main()
