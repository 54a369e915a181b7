"""How far a model could take natural corrections that the rules miss: the *loose* candidates.

The rules (:func:`conflicts.pair_conflict`) find a correction only when they can read it. The
design named for what they cannot read is to hand the model the pairs a looser test lets
through, and let the gate accept a supersede of such a pair only on the model's word. This
benchmark measures that looser test on the natural corrections (``bench/data/
correction_pairs.json``), without any model, so its figures bound what a model could reach:

* **pairwise**: of the corrections, how many the loose test lets through (the recall a perfect
  judge would reach), and of the controls, how many it lets through (what the judge would have
  to refuse);
* **among many**: each newer fact against *every* older fact of the corpus (1,885 of them, on
  every subject), how many older facts the loose test pairs it with (the model's load per new
  fact) and whether the one it corrects is among them;
* **by meaning**: whether the older fact is among the newer's *k* nearest older facts by the
  packaged embedder (WordLlama, the recall ranker's), and the union of rules, loose test and
  nearest *k*: the most any judge of those candidates could find.

The loose test: the newer fact is not history or a plan, one of its clauses is not news of
another person of the user's ("my sister ...", unless the older fact names her), and the two
share a content word that is neither a
common verb nor a time word (:func:`.swaps.topic` less :data:`.swaps.GENERIC`), or the rules
find the pair already. Run: ``python -m bench.bench_loose`` (counts only for the blind part).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

from nocturne_desktop.core.embedder import default_embedder
from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.judges.conflicts import changes, swaps
from nocturne_desktop.core.judges.conflicts.words import SOFT_FOLDED, other_party
from nocturne_desktop.core.types import Fact

CORRECTIONS = Path(__file__).parent / "data" / "correction_pairs.json"
_NOT_TOPIC = swaps.GENERIC | SOFT_FOLDED


def _party(a: changes.ChangeReading, b: changes.ChangeReading) -> bool:
    """Not news of another person of the user's ("my sister keeps six hens"), unless the older
    fact names them: anything else (the user, a thing, a fox in the hen run) may be the user's."""
    return not other_party(b.who.who) or set(b.who.who[1:]) <= a.words


def loose(old: str, new: str) -> bool:
    """Whether the loose test lets the pair (older ``old``, newer ``new``) through."""
    a, whole = changes.read(old), changes.read(new)
    if a.past or a.tentative or not a.words:
        return False
    clauses = whole.clauses or (whole,)
    shared = swaps.topic(a.toks) & swaps.topic(whole.toks) - _NOT_TOPIC
    return bool(shared) and any(not (b.past or b.tentative) and _party(a, b) for b in clauses)


def _fact(n: int, text: str, block: str) -> Fact:
    return Fact(f"m_{n}", block, text, "context", n, 1000.0 + n, 1000.0 + n)


def _nearest(olders: list[str], news: list[str], ks: tuple[int, ...]) -> dict[int, list[set[str]]]:
    """For each k, each newer fact's k nearest older texts by the packaged embedder."""
    embedder = default_embedder()
    if embedder is None:
        return {}
    older = np.asarray(embedder.embed(olders))
    scores = np.asarray(embedder.embed(news)) @ older.T
    order = np.argsort(-scores, axis=1)
    return {k: [{olders[j] for j in row[:k]} for row in order] for k in ks}


def main() -> int:
    pairs = json.loads(CORRECTIONS.read_text(encoding="utf-8"))["pairs"]
    olders = [str(p["a"]) for p in pairs]
    for part in ("tune", "held-out"):
        chosen = [p for p in pairs if p["part"] == part]
        corr = [p for p in chosen if p["conflict"]]
        ctrl = [p for p in chosen if not p["conflict"]]
        rules = sum(conflicts.pair_conflict(_fact(1, str(p["a"]), "human"),
                                            _fact(2, str(p["b"]), "scratch")) is not None
                    for p in corr)
        let = [loose(str(p["a"]), str(p["b"])) for p in corr]
        found = [x or conflicts.pair_conflict(_fact(1, str(p["a"]), "human"),
                                              _fact(2, str(p["b"]), "scratch")) is not None
                 for x, p in zip(let, corr, strict=True)]
        either = sum(found)
        ctrl_let = sum(loose(str(p["a"]), str(p["b"])) for p in ctrl)
        load: list[int] = []
        meant = 0
        for p in corr:
            hits = [k for k, old in enumerate(olders) if loose(old, str(p["b"]))]
            load.append(len(hits))
            meant += any(olders[k] == p["a"] for k in hits)
        print(f"{part}: {len(corr)} corrections, {len(ctrl)} controls")
        print(f"  rules find {rules / len(corr):.3f}; the loose test lets through "
              f"{sum(let) / len(corr):.3f}; rules or loose {either / len(corr):.3f} "
              f"(a perfect judge's recall)")
        print(f"  controls let through: {ctrl_let / len(ctrl):.3f} ({ctrl_let} of {len(ctrl)}: "
              f"the judge must refuse these)")
        print(f"  among all {len(olders)} older facts: the meant one is a loose candidate for "
              f"{meant / len(corr):.3f}; older facts paired per newer fact: median "
              f"{statistics.median(load):.0f}, mean {statistics.fmean(load):.1f}, max {max(load)}")
        near = _nearest(olders, [str(p["b"]) for p in corr], (5, 10, 20))
        for k, sets in near.items():
            hit = [str(p["a"]) in s for p, s in zip(corr, sets, strict=True)]
            union = sum(h or f for h, f in zip(hit, found, strict=True))
            print(f"  the meant one among the {k} nearest by meaning: {sum(hit) / len(corr):.3f}; "
                  f"rules, loose or nearest {k}: {union / len(corr):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
