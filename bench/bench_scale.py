"""Scale (S-SCALE): a rules-only sleep over 100,000 facts and 1,000 past sleeps, pass by pass,
and the duplicate join alone at 10k and 100k, on two kinds of store.

    python -m bench.bench_scale [--facts 100000] [--sleeps 1000] [--join-only | --sleep-only]
                                [--corpus ordinary|small|both] [--keep DIR] [--timeout S]

Corpora (seeded, so figures compare between runs):

- ``ordinary``: the duplicate-join benchmark's facts (``bench.bench_textmath.make_facts``:
  5-15 words, a Zipf-like vocabulary of 20k words, ~5 % near or exact duplicates);
- ``small``: short facts (at most 9 words) over a vocabulary of ~100 content words
  (``bench.corpus``, as the window benchmark writes them too: "The user <seven of the words>.",
  one in twenty "The user said <five words>."). Every token is frequent, so a prefix filter
  that probes one-token prefixes meets thousands of candidates per fact.

The store is written with the store's own ``append`` in one transaction; then 1,000 past sleeps
are recorded the way a sleep records them (begin, a start snapshot, a before/after snapshot per
pass with a few mutation rows committed through ``commit_pass``, finish), a few facts forgotten
or promoted each time. Then ``run_sleep(store, None, policy)`` - what ``nocturne sleep
--rules-only`` and the window's "Sleep with rules only" run - is timed end to end and per pass.
The policy is the default one with the cap at half the store (as ``bench.bench_ui``), so the
retention rule writes tens of thousands of forgettings.

The join alone: ``duplicates.duplicate_pairs`` (what Dedupe and its backstop run) at the default
threshold 0.9 and ``duplicates.candidate_pairs`` at Merge's 2/3, 10k and 100k facts of each
corpus, with the 100k/10k time ratio (quadratic would be 100x).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_textmath import make_facts
from bench.corpus import append_facts, small_texts
from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.mutations import DecidedBy, Forget, Promote, to_row
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.sleep.passes.merge import RELATED_THRESHOLD
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES

DAY = 86400.0


def texts_of(corpus: str, n: int) -> list[tuple[str, str]]:
    return make_facts(n) if corpus == "ordinary" else small_texts(n)


def build_store(path: Path, corpus: str, n: int, sleeps: int, now: float) -> dict[str, float]:
    """Write ``n`` facts and ``sleeps`` past sleeps; return the seconds each took."""
    rng = random.Random(11)
    t0 = time.perf_counter()
    with Store(path) as store:
        with store.transaction():
            append_facts(store, (text for _, text in texts_of(corpus, n)), now)
        facts_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        with store.transaction():
            for k in range(sleeps):
                sid = store.begin_sleep({"rulesOnly": True, "past": k})
                store.snapshot("consolidation:start", sleep_id=sid)
                for pass_name in PASSES:
                    store.snapshot(f"pass:{pass_name}:before", sleep_id=sid)
                    muts = []
                    target = f"m_{rng.randrange(1, n + 1)}"
                    live = store.get(target)
                    if pass_name == "forget" and live is not None and live.active:
                        muts.append(to_row(Forget(
                            pass_name="forget", target=target, reason="past sleep",
                            policy="stale", decided_by=DecidedBy.RETENTION_RULE)))
                    elif (pass_name == "promote" and live is not None and live.active
                          and live.block == "scratch"):
                        muts.append(to_row(Promote(
                            pass_name="promote", target=target, reason="past sleep",
                            decided_by=DecidedBy.PROMOTION_RULE, from_block="scratch",
                            to_block="human", category=live.category)))
                    store.commit_pass(muts, label=f"pass:{pass_name}:after", sleep_id=sid)
                store.finish_sleep(sid, "done", {"passes": [], "rulesOnly": True})
        sleeps_s = time.perf_counter() - t1
    return {"facts_s": facts_s, "sleeps_s": sleeps_s}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of this process's CPU time ``fn`` took (the machine is shared: wall time also
    counts other processes), and its result."""
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def bench_join(corpus: str, sizes: list[int], timeout_note: float) -> None:
    print(f"\n### The join alone, {corpus} corpus\n")
    print("| facts | dedupe join, 0.9 (CPU s) | pairs | merge join, 2/3 (CPU s) | pairs |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    t_dedupe: dict[int, float] = {}
    t_merge: dict[int, float] = {}
    for n in sizes:
        items = texts_of(corpus, n)
        d_s, (pairs, _) = timed(lambda items=items: duplicates.duplicate_pairs(items, 0.9))
        m_s, related = timed(lambda items=items: duplicates.candidate_pairs(items, RELATED_THRESHOLD))
        t_dedupe[n], t_merge[n] = d_s, m_s
        print(f"| {n:,} | {d_s:.2f} | {len(pairs):,} | {m_s:.2f} | {len(related):,} |")
        sys.stdout.flush()
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        print(f"\n{a:,} → {b:,} ({b // a}× the facts): dedupe join {t_dedupe[b] / t_dedupe[a]:.1f}×, "
              f"merge join {t_merge[b] / t_merge[a]:.1f}×")


def bench_sleep(corpus: str, n: int, sleeps: int, keep: Path | None, timeout_s: float) -> None:
    folder = Path(tempfile.mkdtemp(prefix="nocturne-scale-"))
    try:
        db = folder / "scale.db"
        now = time.time()
        built = build_store(db, corpus, n, sleeps, now)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(db, keep / f"scale-{corpus}-{n}.db")
        print(f"\n### Rules-only sleep, {corpus} corpus: {n:,} facts, {sleeps:,} past sleeps\n")
        print(f"(store written in {built['facts_s']:.1f} s, past sleeps in "
              f"{built['sleeps_s']:.1f} s; load average {os.getloadavg()[0]:.2f})\n")
        policy = RetentionPolicy(max_active_facts=max(1, n // 2))
        print("| pass | wall s | CPU s | input | enforced | active after |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        t0, c0 = time.perf_counter(), time.process_time()
        last_c = c0
        ended = "?"
        with Store(db) as store:
            for ev in run_sleep(store, None, policy, now=now):
                if ev.kind is SleepEventKind.STARTED:
                    print(f"| (start: read, snapshot) | {time.perf_counter() - t0:.2f} "
                          f"| {time.process_time() - c0:.2f} | | | |")
                if ev.kind is SleepEventKind.PASS_STARTED:
                    last_c = time.process_time()
                if ev.kind.after_pass and ev.figures is not None:
                    f = ev.figures
                    print(f"| {f.pass_name} | {f.elapsed_s:.2f} | {time.process_time() - last_c:.2f} "
                          f"| {f.input:,} | {f.enforced:,} | {f.active_after:,} |")
                    sys.stdout.flush()
                if ev.kind.final:
                    ended = str(ev.kind)
                if time.perf_counter() - t0 > timeout_s:
                    print(f"| (stopped: over {timeout_s:.0f} s) | | | | | |")
                    ended = "stopped"
                    break
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"\nEnd to end: **{total:.1f} s** wall, {cpu:.1f} s CPU ({ended}); load average "
              f"after {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--facts", type=int, default=100_000)
    p.add_argument("--sleeps", type=int, default=1_000)
    p.add_argument("--corpus", choices=("ordinary", "small", "both"), default="both")
    p.add_argument("--join-only", action="store_true")
    p.add_argument("--sleep-only", action="store_true")
    p.add_argument("--keep", type=Path, default=None, help="copy the generated stores here")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="stop a sleep still running after this many seconds")
    args = p.parse_args(argv)
    corpora = ["ordinary", "small"] if args.corpus == "both" else [args.corpus]
    print(f"# Scale benchmark (Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f})")
    for corpus in corpora:
        if not args.sleep_only:
            bench_join(corpus, [args.facts // 10, args.facts], args.timeout)
        if not args.join_only:
            bench_sleep(corpus, args.facts, args.sleeps, args.keep, args.timeout)


if __name__ == "__main__":
    main()
