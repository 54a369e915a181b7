"""Wake's question gate on the built-in engine (S-WORDS-2): per Wake, how many of the model's
questions were refused and how many template questions were asked instead, with the reasons.

Starts llama-server with the built-in model from the user cache (as the window does), seeds a
store with everyday facts, and runs ``--wakes`` quizzes of five questions with different seeds
through the real client. Run from the repository root:
``python -m bench.bench_wake_questions`` (``--wakes 3`` by default; minutes on two cores).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from nocturne_desktop.core.checks.quiz import run_quiz
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

FACTS: tuple[tuple[str, str], ...] = (
    ("The user's daughter is 7.", "identity"),
    ("The user works as a nurse at Santa Maria hospital.", "identity"),
    ("The user's favourite colour is green.", "preferences"),
    ("The user lives in Porto.", "identity"),
    ("The user is allergic to penicillin.", "identity"),
    ("The user's husband is called Rui.", "identity"),
    ("The user ran the Berlin marathon in 3 hours 10 minutes.", "event"),
    ("The user has two cats called Miso and Tofu.", "identity"),
    ("The user does not eat pork.", "preferences"),
    ("The user promised to help their sister move on Saturday.", "commitments"),
)


def _reason_kind(reason: str) -> str:
    for key in ("not a question", "names neither", "not answerable", "leaks", "gives the answer",
                "unusable", "empty"):
        if key in reason:
            return key
    return "other"


def main(argv: list[str] | None = None) -> int:
    from nocturne_desktop.llm import builtin as builtin_engine
    from nocturne_desktop.llm.client import OpenAIClient
    from nocturne_desktop.llm.engine import LocalEngine, find_engine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wakes", type=int, default=3)
    args = ap.parse_args(argv)
    paths = find_engine()
    if paths is None:
        print("the built-in engine is not built: run `make engine`")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="nocturne-wake-"))
    engine = LocalEngine(paths, ctx_size=builtin_engine.SLOT_CTX * builtin_engine.SLOTS,
                         parallel=builtin_engine.SLOTS, log_path=tmp / "llama-server.log")
    engine.start(timeout=180.0)
    client = OpenAIClient(engine.base_url, engine.model_name)
    kinds: Counter[str] = Counter()
    rows: list[tuple[int, int, int, int, float, float]] = []
    try:
        with Store(tmp / "n.db") as store:
            for n, (text, category) in enumerate(FACTS, 1):
                store.append("human", FactDraft(text, category, None, time.time() - 3600 + n))
            for seed in range(args.wakes):
                t0 = time.perf_counter()
                report = run_quiz(store, client, n_questions=5, seed=seed)
                refused = len(report.refused_questions)
                kinds.update(_reason_kind(r.reason) for r in report.refused_questions)
                rows.append((seed, len(report.questions), refused, report.fallbacks,
                             report.recall, time.perf_counter() - t0))
                for note in report.notes:
                    if "template question" in note:
                        print(f"  wake {seed}: {note[:200]}")
    finally:
        client.close()
        engine.stop()
    print(f"\nWake's question gate on {engine.model_name} (5 questions per Wake):\n")
    print("| wake | questions | model questions refused | template fallbacks | recall | s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for seed, asked, refused, fallbacks, recall, secs in rows:
        print(f"| {seed} | {asked} | {refused} | {fallbacks} | {recall:.2f} | {secs:.0f} |")
    print("\nrefusal reasons: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
