"""Export/import round trip benchmark: a generated memory exported as JSON and as Markdown,
each imported into a new folder, timed, and checked equal (facts, blocks, categories, pins,
days and the retention policy).

Run: ``PYTHONPATH=. python -m bench.bench_exchange_roundtrip`` (``--sizes 1000,10000``).
Prints a markdown table. Every store lives in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from bench.bench_store import sentence
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.mdexchange import one_line
from nocturne_desktop.core.store.memorypolicy import memory_policy
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact, FactDraft

DAY = 86_400.0
POLICY = RetentionPolicy(stale_after_days=90, max_active_facts=50_000,
                         protected_categories=("identity", "commitments"))


def _seen(facts: list[Fact], *, days: bool) -> list[tuple[object, ...]]:
    def t(x: float) -> object:
        return time.strftime("%Y-%m-%d", time.gmtime(x)) if days else x
    return sorted((f.block, one_line(f.text) if days else f.text, f.category, f.active,
                   f.pinned and f.active, t(f.created_at), t(f.updated_at)) for f in facts)


def build(db: Path, n: int, rng: random.Random) -> None:
    now = time.time()
    with Store(db) as s:
        with s.transaction():
            made = [s.append(rng.choice(BLOCKS), FactDraft(
                f"{sentence(rng)[:-1]} number {k}.", rng.choice(CATEGORIES),
                created_at=now - rng.randint(0, 400) * DAY)) for k in range(n)]
        s.snapshot("built")
        chosen = rng.sample(made, n // 20 + n // 10)
        for f in chosen[:n // 20]:
            s.pin(f.id)
        for f in chosen[n // 20:]:
            s.forget_now(f.id)


def run(n: int) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="nocturne-bench-x-"))
    try:
        build(folder / "a" / "n.db", n, random.Random(n))
        row: dict[str, object] = {"facts": n}
        with Store(folder / "a" / "n.db") as a:
            before = a.all_facts()
            for kind in ("json", "md"):
                t0 = time.perf_counter()
                size = exchange.write_export(a, folder / f"m.{kind}", markdown=kind == "md",
                                             policy=POLICY)
                row[f"{kind} export s"] = f"{time.perf_counter() - t0:.2f}"
                row[f"{kind} MB"] = f"{size / 2**20:.1f}"
        for kind in ("json", "md"):
            t0 = time.perf_counter()
            exchange.import_file(folder / f"m.{kind}", folder / kind / "n.db")
            row[f"{kind} import s"] = f"{time.perf_counter() - t0:.2f}"
            with Store(folder / kind / "n.db") as b:
                same = (_seen(b.all_facts(), days=kind == "md") ==
                        _seen(before, days=kind == "md") and memory_policy(b) == POLICY)
            row[f"{kind} equal"] = "yes" if same else "NO"
        return row
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000,10000")
    rows = [run(int(n)) for n in ap.parse_args().sizes.split(",")]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + " ---: |" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
