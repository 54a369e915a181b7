"""Recall on both splits of the memory benchmark, per ranker and budget; the fusion sweep.

    python -m bench.bench_recall [--splits] [--sweep] [--cost] [--conversations N] [--json]

The data is ``bench/data/memory_conversations.json`` (see :mod:`bench.bench_memory`): the
word-sharing questions (``words``: they reuse the facts' words, maybe in another inflection) and
the paraphrase split, which shares no content word with its evidence (``paraphrase-dev``, the
two thirds the fusion weights were chosen on, and ``paraphrase-heldout``, never used to choose).
The stores are built as bench_memory's are, under the new default policy: *before* holds every
session's facts with no sleep; *after* had a rules-only sleep after each session, then weekly
until each fact had 10. A question is recalled when a fact of each evidence turn (or what it was
merged into) is in the memory prompt (:func:`render_memory`).

``--splits``: recall per split, ranker (:data:`RANKERS`: words alone, meaning alone, fused) and
budget (the default 6,000 characters, and the budget the agent fits to a 32k-token window).
``--sweep``: recall of each fusion of :func:`sweep_grid` on the tuning splits (words and
paraphrase-dev), best first by its worst figure. ``--cost``: milliseconds per chat turn (the
memory prompt for one question, the fused ranking) at 1k, 10k and 100k facts, and the ranking's
parts at 100k.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bench_memory import (
    DATA,
    DAY,
    DEFAULT_BUDGET,
    POLICIES,
    SLEEP_MARKS,
    BenchPolicy,
    Conversation,
    Loaded,
    Question,
    RecallFigures,
    _append_session,
    _bench_policy,
    _open,
    _sleep,
    load_bench,
    recall,
    retrieval_cost,
    table,
)
from nocturne_desktop.core.chat.agent import DEFAULT_HISTORY_TOKENS, DEFAULT_REPLY_TOKENS
from nocturne_desktop.core.chat.budget import memory_budget
from nocturne_desktop.core.store.ranking import FUSION, MEANING_ONLY, WORDS_ONLY, Fusion

RANKERS: dict[str, Fusion] = {"bm25": WORDS_ONLY, "embeddings": MEANING_ONLY, "fused": FUSION}
"""The rankings compared: words alone (what a store without the embedding model uses), meaning
alone, and the two fused (the default); each with recency as the default weighs it."""

FITTED_CONTEXT = 32_768
"""The context window of the fitted budget's model (a 32k-token LM Studio model)."""


SMALL_CONTEXT = 4096
"""A small model's window (the built-in engine's; its tuning caps memory at the default)."""


def fitted_budget(context_tokens: int = FITTED_CONTEXT) -> int:
    """The memory budget the agent gives a model with that window and the default caps."""
    return memory_budget(context_tokens, reply_tokens=DEFAULT_REPLY_TOKENS,
                         history_tokens=DEFAULT_HISTORY_TOKENS)


def split_questions(conv: Conversation) -> dict[str, list[Question]]:
    """The questions by split: ``words``, ``paraphrase-dev``, ``paraphrase-heldout``."""
    out: dict[str, list[Question]] = {"words": conv.answerable()}
    facts = conv.turn_facts()
    for q in conv.paraphrases:
        if any(facts.get(e, 0) for e in q.evidence):
            out.setdefault(f"paraphrase-{q.split}", []).append(q)
    return out


def build_stores(conv: Conversation, bp: BenchPolicy, workdir: Path) -> tuple[Loaded, Loaded]:
    """The conversation's *before* store (every session appended, no sleep) and its *after*
    store (a rules-only sleep after each session, then weekly until each fact had 10), open."""
    sess = conv.sessions
    evidence_turns = {e for q in conv.answerable() for e in q.evidence}
    before = _open(workdir / f"{conv.id}-split-before.db", sess[0].at, bp.mode, conv.id)
    for s in sess:
        _append_session(before, s, evidence_turns)
    after = _open(workdir / f"{conv.id}-split-after.db", sess[0].at, bp.mode, conv.id)
    seen: dict[str, int] = {}
    for n, s in enumerate(sess):
        for i in _append_session(after, s, evidence_turns):
            seen[i] = 0
        nxt = sess[n + 1].at if n + 1 < len(sess) else s.at + 7 * DAY
        _sleep(after, bp.policy, min(s.at + 0.3 * DAY, (s.at + nxt) / 2), None)
        for i in seen:
            seen[i] += 1
    at = after.clock[0]
    while min(seen.values(), default=max(SLEEP_MARKS)) < max(SLEEP_MARKS):
        at += 7 * DAY
        _sleep(after, bp.policy, at, None)
        for i in seen:
            seen[i] += 1
    return before, after


def split_recall(
    convs: Sequence[Conversation],
    *,
    policy: str = "new-default",
    budgets: dict[str, int] | None = None,
    rankers: dict[str, Fusion] | None = None,
) -> list[dict[str, Any]]:
    """Recall per split, ranker and budget, before and after sleep (one row each), under
    ``policy``. Model-free."""
    budgets = budgets or {"default": DEFAULT_BUDGET, "fitted": fitted_budget(),
                          "fitted-4k": fitted_budget(SMALL_CONTEXT)}
    rankers = rankers or RANKERS
    figs: dict[tuple[str, str, str], tuple[RecallFigures, RecallFigures]] = {}
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-splits-") as tmp:
        for conv in convs:
            before, after = build_stores(conv, _bench_policy(POLICIES[policy]), Path(tmp))
            try:
                for split, qs in split_questions(conv).items():
                    for rname, fusion in rankers.items():
                        for bname, budget in budgets.items():
                            b, a = figs.setdefault((split, rname, bname),
                                                   (RecallFigures(), RecallFigures()))
                            b.add(recall(before, conv, budget, questions=qs, fusion=fusion))
                            a.add(recall(after, conv, budget, questions=qs, fusion=fusion))
            finally:
                before.store.close()
                after.store.close()
    rows = []
    for (split, rname, bname), (b, a) in figs.items():
        rows.append({"split": split, "ranker": rname, "budget": f"{bname} ({budgets[bname]})",
                     "questions": b.questions,
                     "recallBefore": 100.0 * b.recalled / b.questions if b.questions else 0.0,
                     "recallAfter": 100.0 * a.recalled / a.questions if a.questions else 0.0,
                     "recallAfterKept": 100.0 * a.recalled_kept / a.kept if a.kept else 0.0})
    rows.sort(key=lambda r: (r["split"], r["budget"], r["ranker"]))
    return rows


def sweep_grid() -> list[Fusion]:
    """The fusions the sweep measures (words weigh 1): ``k``, recency's weight and the meaning
    list's similarity floor around the default, then meaning's weight."""
    grid = [Fusion(1.0, 1.0, r, k, floor)
            for k in (10.0, 20.0, 60.0) for r in (0.0, 0.2, 0.5) for floor in (0.0, 0.2)]
    return grid + [Fusion(1.0, m, 0.2, 20.0, 0.0) for m in (0.5, 2.0)]


def sweep(
    convs: Sequence[Conversation], grid: Sequence[Fusion] | None = None, *,
    policy: str = "new-default", budget: int = DEFAULT_BUDGET,
    splits: Sequence[str] = ("words", "paraphrase-dev"),
) -> list[dict[str, Any]]:
    """Recall before sleep of each fusion in ``grid`` on the tuning splits (never the held-out
    one), at ``budget``; best first by the lower of the two. (After sleep, under the default
    policy, memory fits the budget whole: every fusion recalls everything kept.)"""
    grid = list(grid or sweep_grid())
    figs: dict[tuple[int, str], RecallFigures] = {}
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-sweep-") as tmp:
        for conv in convs:
            before = _open(Path(tmp) / f"{conv.id}-sweep.db", conv.sessions[0].at,
                           _bench_policy(POLICIES[policy]).mode, conv.id)
            try:
                evidence_turns = {e for q in conv.answerable() for e in q.evidence}
                for s in conv.sessions:
                    _append_session(before, s, evidence_turns)
                qs = split_questions(conv)
                for i, fusion in enumerate(grid):
                    for split in splits:
                        figs.setdefault((i, split), RecallFigures()).add(recall(
                            before, conv, budget, questions=qs.get(split, []), fusion=fusion))
            finally:
                before.store.close()
    rows = []
    for i, fusion in enumerate(grid):
        row: dict[str, Any] = {"k": fusion.k, "meaning": fusion.meaning,
                               "recency": fusion.recency, "floor": fusion.floor}
        for split in splits:
            f = figs[(i, split)]
            row[split] = 100.0 * f.recalled / max(1, f.questions)
        row["worst"] = min(row[split] for split in splits)
        rows.append(row)
    rows.sort(key=lambda r: (-r["worst"], -sum(r[split] for split in splits)))
    return rows


def panel_floor(convs: Sequence[Conversation], floors: Sequence[float] = (
        0.05, 0.1, 0.15, 0.2, 0.3), tops: Sequence[int] = (5, 10, 20)) -> list[dict[str, Any]]:
    """For the search panel's meaning-only hits: at each similarity floor and each number of
    hits listed, the share of the paraphrase dev questions whose evidence is listed, and how
    many other facts are listed per question (on each person's *before* store: every fact, no
    sleep)."""
    keys = [(f, t) for f in floors for t in tops]
    found = dict.fromkeys(keys, 0)
    others = dict.fromkeys(keys, 0)
    n = 0
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-panel-") as tmp:
        for conv in convs:
            ld = _open(Path(tmp) / f"{conv.id}-panel.db", conv.sessions[0].at, ("none", 0.0),
                       conv.id)
            try:
                for s in conv.sessions:
                    _append_session(ld, s, set())
                for q in split_questions(conv).get("paraphrase-dev", []):
                    want = {int(i[2:]) for e in q.evidence for i in ld.turn_ids.get(e, [])}
                    hits = ld.store.similar(q.text, limit=1000)
                    n += 1
                    for floor, top in keys:
                        listed = {num for num, sim in hits[:top] if sim >= floor}
                        found[(floor, top)] += bool(listed & want)
                        others[(floor, top)] += len(listed - want)
            finally:
                ld.store.close()
    return [{"floor": f"{f:.2f}", "listed": t, "evidenceListed%": 100.0 * found[(f, t)] / max(1, n),
             "otherFactsPerQuestion": others[(f, t)] / max(1, n)} for f, t in keys]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="a nocturne-memory-bench/1 file")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N")
    ap.add_argument("--splits", action="store_true", help="recall per split, ranker, budget")
    ap.add_argument("--sweep", action="store_true", help="the fusion sweep (tuning splits)")
    ap.add_argument("--cost", action="store_true", help="ms per chat turn at 1k, 10k, 100k facts")
    ap.add_argument("--sizes", default="1000,10000,100000,100000:2000",
                    help="--cost: store sizes (N:A: N facts, all but A of them forgotten)")
    ap.add_argument("--store-dir", type=Path, default=None,
                    help="--cost: keep the stores in this folder and reuse them next time")
    ap.add_argument("--panel", action="store_true", help="the search panel's similarity floor")
    ap.add_argument("--embedder", default="wordllama", help="wordllama (the app's) or tokenlearn")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = ap.parse_args(argv)
    try:
        convs = load_bench(args.data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"bench_recall: cannot read the data: {exc}", file=sys.stderr)
        return 2
    convs = convs[: args.conversations] if args.conversations else convs
    if args.embedder != "wordllama":
        import bench.bench_memory as bm
        from bench.embedders import by_name

        bm.EMBEDDER = by_name(args.embedder)
    out: dict[str, Any] = {}
    if args.panel:
        out["panel"] = panel_floor(convs)
    if args.splits or not (args.sweep or args.cost or args.panel):
        out["splits"] = split_recall(convs)
    if args.sweep:
        out["sweep"] = sweep(convs)
    if args.cost:
        sizes = [(int(n), int(a)) if a else int(n)
                 for n, _, a in (size.partition(":") for size in args.sizes.split(","))]
        out["cost"] = retrieval_cost(convs, sizes,
                                     fusions={"fused": FUSION, "bm25": WORDS_ONLY},
                                     store_dir=args.store_dir,
                                     budgets=(DEFAULT_BUDGET, fitted_budget()))
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    if "cost" in out:
        print(table(out["cost"], list(out["cost"][0])))
    if "panel" in out:
        print(table(out["panel"], list(out["panel"][0])))
    if "splits" in out:
        print(f"budgets: default {DEFAULT_BUDGET} chars, fitted {fitted_budget()} chars "
              f"(a {FITTED_CONTEXT}-token window), fitted-4k {fitted_budget(SMALL_CONTEXT)} chars "
              "(a 4,096-token window, no tuning)\n")
        print(table(out["splits"], ["split", "ranker", "budget", "questions", "recallBefore",
                                    "recallAfter", "recallAfterKept"]))
    if "sweep" in out:
        print()
        print(table(out["sweep"][:30], list(out["sweep"][0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

