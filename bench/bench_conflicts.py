"""Benchmark of the conflict-candidate rules (core/conflicts.py).

Three parts:

* **precision / recall** on the hand-labelled pairs in ``bench/data/conflict_pairs.json``
  (each pair judged by :func:`conflicts.pair_conflict`; a missed or false pair is listed);
* **natural corrections** (S-WORDS-1) on ``bench/data/correction_pairs.json``: for each part
  (``tune``, the pairs the rules were tuned on, and ``held-out``, never used to tune them,
  with each of its blind batches on its own; and the tuned pairs that were an earlier
  held-out batch, "formerly held-out", "formerly held-out-2" and so on) the
  finder's precision and recall (:func:`conflicts.pair_conflict`) and the model-free sleep's
  (:func:`rules.reconcile_rule` superseding the older fact of a pair, each fact in its block:
  the newer often still in scratch); misses are listed for the tuned part only;
* **finding at scale**: :func:`conflicts.find_conflicts` over 1k / 10k / 100k synthetic facts
  shaped like the memory (frame sentences "User's <who> lives in <place>", habits, counts,
  negations, plus random filler facts), with a known share of planted conflicts; time and
  candidates per size (wall and CPU seconds: the CPU seconds are this process's own, which a
  shared machine inflates less), and the CPU time ratio per 10x (sub-quadratic means well
  under 100x).

Run from the repository root: ``python -m bench.bench_conflicts`` (``--quick`` stops at 10k).
Seeded: figures are comparable between runs.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.sleep import rules
from nocturne_desktop.core.types import Fact

DATA = Path(__file__).parent / "data" / "conflict_pairs.json"
CORRECTIONS = Path(__file__).parent / "data" / "correction_pairs.json"
PARTS = ("tune", "held-out")
FORMER = "formerly held-out"
"""The first held-out batch, moved into the tuned part once its misses were read (``was``)."""
FORMERS = {"held-out": FORMER, "held-out-2": "formerly held-out-2",
           "held-out-3": "formerly held-out-3", "held-out-4": "formerly held-out-4",
           "held-out-5": "formerly held-out-5", "held-out-6": "formerly held-out-6",
           "held-out-7": "formerly held-out-7", "held-out-8": "formerly held-out-8",
           "targeted": "written for the readings"}
"""Each earlier held-out batch (``was``) and the part it is reported as."""
BATCHES: tuple[str, ...] = ()
"""The blind batches of the held-out part, each also reported on its own when it holds more
than one (it holds one now, held-out-9)."""

PEOPLE = ["sister", "brother", "mother", "father", "friend", "boss", "cousin", "neighbour",
          "aunt", "uncle", "colleague", "partner"]
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]


def labelled_pairs() -> list[dict[str, object]]:
    return list(json.loads(DATA.read_text(encoding="utf-8"))["pairs"])


def _fact(i: int, text: str, turn: int, category: str = "context") -> Fact:
    return Fact(f"m_{i}", "human", text, category, turn, 1000.0 + turn, 1000.0 + turn)


def precision_recall() -> dict[str, object]:
    tp = fp = fn = tn = 0
    misses: list[str] = []
    false_alarms: list[str] = []
    for k, p in enumerate(labelled_pairs()):
        cat = str(p.get("category", "context"))
        a = _fact(2 * k + 1, str(p["a"]), 2 * k + 1, cat)
        b = _fact(2 * k + 2, str(p["b"]), 2 * k + 2, cat)
        found = conflicts.pair_conflict(a, b) is not None
        if p["conflict"] and found:
            tp += 1
        elif p["conflict"]:
            fn += 1
            misses.append(f"{a.text!r} / {b.text!r}")
        elif found:
            fp += 1
            false_alarms.append(f"{a.text!r} / {b.text!r}")
        else:
            tn += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"pairs": tp + fp + fn + tn, "conflicts": tp + fn, "tp": tp, "fp": fp, "fn": fn,
            "tn": tn, "precision": round(precision, 3), "recall": round(recall, 3),
            "misses": misses, "falseAlarms": false_alarms}


def correction_pairs() -> list[dict[str, object]]:
    return list(json.loads(CORRECTIONS.read_text(encoding="utf-8"))["pairs"])


def _rates(tp: int, fp: int, fn: int) -> tuple[float, float]:
    return (round(tp / (tp + fp), 3) if tp + fp else 1.0,
            round(tp / (tp + fn), 3) if tp + fn else 1.0)


def corrections() -> dict[str, dict[str, object]]:
    """Per part (and ``all``): the finder's and the model-free rule's precision and recall on
    the natural corrections, with the tuned part's misses and false alarms."""
    counts = {part: {"tp": 0, "fp": 0, "fn": 0, "rtp": 0, "rfp": 0, "rfn": 0, "pairs": 0,
                     "controls": 0} for part in (*PARTS, "all", *FORMERS.values(), *BATCHES)}
    listed: dict[str, list[str]] = {"misses": [], "ruleMisses": [], "falseAlarms": []}
    for k, p in enumerate(correction_pairs()):
        blocks = p.get("blocks") or ["human", "scratch"]
        a = Fact(f"m_{2 * k + 1}", str(blocks[0]), str(p["a"]), "context", 2 * k + 1,  # type: ignore[index]
                 1000.0 + 2 * k, 1000.0 + 2 * k)
        b = Fact(f"m_{2 * k + 2}", str(blocks[1]), str(p["b"]), "context", 2 * k + 2,  # type: ignore[index]
                 1001.0 + 2 * k, 1001.0 + 2 * k)
        found = conflicts.pair_conflict(a, b) is not None
        superseded = any(m.item_id == a.id for m in rules.reconcile_rule([a, b]))
        shown = f"{a.text!r} / {b.text!r}"
        was = FORMERS.get(str(p.get("was", "")))
        batch = str(p.get("batch", ""))
        for part in (str(p["part"]), "all", *([was] if was else []),
                     *([batch] if batch in BATCHES else [])):
            c = counts[part]
            c["pairs"] += 1
            if p["conflict"]:
                c["tp"] += found
                c["fn"] += not found
                c["rtp"] += superseded
                c["rfn"] += not superseded
            else:
                c["controls"] += 1
                c["fp"] += found
                c["rfp"] += superseded
        if p["part"] == "tune":
            if p["conflict"] and not found:
                listed["misses"].append(shown)
            elif p["conflict"] and not superseded:
                listed["ruleMisses"].append(shown)
            elif not p["conflict"] and (found or superseded):
                listed["falseAlarms"].append(shown)
    out: dict[str, dict[str, object]] = {}
    for part, c in counts.items():
        fp_, fr = _rates(c["tp"], c["fp"], c["fn"])
        rp, rr = _rates(c["rtp"], c["rfp"], c["rfn"])
        out[part] = {**c, "precision": fp_, "recall": fr, "rulePrecision": rp, "ruleRecall": rr}
    out["tune"].update(listed)
    return out


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def synthetic(n: int, seed: int = 7) -> list[Fact]:
    """``n`` facts: about 30 % exclusive-frame sentences over many subjects, 10 % habits (a
    quarter negated) and 10 % counts over n/100 things, the rest filler with random words."""
    rng = random.Random(seed)
    places = [_word(rng).capitalize() for _ in range(2000)]
    things = [_word(rng) for _ in range(5000)]
    habits = max(50, n // 100)
    subjects = [f"{p} {_word(rng).capitalize()}" for p in PEOPLE for _ in range(max(1, n // 200))]
    out: list[str] = []
    while len(out) < n:
        r = rng.random()
        if r < 0.3:
            who = rng.choice(subjects)
            verb = rng.choice(["lives in", "works at", "is from", "drives a"])
            out.append(f"User's {who} {verb} {rng.choice(places)}")
        elif r < 0.4:
            neg = "no longer " if rng.random() < 0.25 else ""
            out.append(f"User {neg}eats {rng.choice(things[:habits])}")
        elif r < 0.5:
            out.append(f"User has {rng.randint(1, 9)} {rng.choice(things[:habits])}")
        else:
            out.append("User " + " ".join(rng.choice(things) for _ in range(rng.randint(3, 8))))
    return [_fact(i + 1, t, i + 1) for i, t in enumerate(out)]


def scale(sizes: list[int]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n in sizes:
        facts = synthetic(n)
        conflicts.clear_caches()
        t0, c0 = time.perf_counter(), time.process_time()
        found = conflicts.find_conflicts(facts)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        by_rule: dict[str, int] = {}
        for c in found:
            by_rule[c.rule] = by_rule.get(c.rule, 0) + 1
        rows.append({"facts": n, "seconds": round(elapsed, 3), "cpuSeconds": round(cpu, 3),
                     "candidates": len(found),
                     "byRule": by_rule,
                     "factsInCandidates": len({i for c in found for i in (c.older, c.newer)})})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stop at 10k facts")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    pr = precision_recall()
    nat = corrections()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    rows = scale(sizes)
    if args.json:
        print(json.dumps({"labelled": pr, "corrections": nat, "scale": rows}, indent=2))
        return 0
    print(f"labelled pairs: {pr['pairs']} ({pr['conflicts']} conflicts)  "
          f"precision {pr['precision']}  recall {pr['recall']}  "
          f"(tp {pr['tp']}, fp {pr['fp']}, fn {pr['fn']}, tn {pr['tn']})")
    for m in pr["misses"]:  # type: ignore[attr-defined]
        print(f"  missed: {m}")
    for m in pr["falseAlarms"]:  # type: ignore[attr-defined]
        print(f"  false alarm: {m}")
    for part in (*PARTS, *BATCHES, "all", *FORMERS.values()):
        c = nat[part]
        print(f"natural corrections, {part}: {c['pairs']} pairs ({c['controls']} controls)  "
              f"finder precision {c['precision']} recall {c['recall']}  "
              f"model-free supersede precision {c['rulePrecision']} recall {c['ruleRecall']}")
    for key, label in (("misses", "missed"), ("ruleMisses", "found, not superseded"),
                       ("falseAlarms", "false alarm")):
        for m in nat["tune"][key]:  # type: ignore[attr-defined]
            print(f"  tune, {label}: {m}")
    prev = None
    for r in rows:
        ratio = "" if prev is None else f"  x{float(r['cpuSeconds']) / max(prev, 1e-9):.1f} per 10x"  # type: ignore[arg-type]
        print(f"{r['facts']:>7} facts: {r['seconds']:.3f} s ({r['cpuSeconds']:.3f} s CPU), "
              f"{r['candidates']} candidates "
              f"({r['factsInCandidates']} facts) {r['byRule']}{ratio}")
        prev = float(r["cpuSeconds"])  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
