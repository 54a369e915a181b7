"""The small-vocabulary corpus of the scale benchmarks: one vocabulary and one way to place its
facts, shared by ``bench.bench_scale`` and ``bench.bench_ui`` (and ``bench.gil_gaps`` through
it), so that their figures are about the same kind of store.

Short facts (at most 9 words) over ~100 content words: "The user <seven of the words>.", and
(unless ``said_every`` is None) one in twenty "The user said <five words>." - a near duplicate
of nothing in particular, but the shape Dedupe looks at. Every token is frequent, so a prefix
filter that probes one-token prefixes meets thousands of candidates per fact: the hard case for
the duplicate join. Seeded, so figures compare between runs.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nocturne_desktop.core.store import Store

DAY = 86400.0
_WORDS = """
apple river garden morning coffee bicycle mountain library teacher violin harbour autumn
lantern market painter castle forest engine window candle meadow pocket ladder orchard
marble kettle saddle tunnel beacon compass feather glacier hammer island jacket kitten
lemon mirror needle ocean pepper quartz rocket silver thunder umbrella velvet walnut yogurt
zebra anchor basket cellar dolphin falcon granite helmet ivory jasmine kayak lobster maple
nectar olive parrot quilt raven spruce tulip utensil vessel willow yarn cedar dragon ember
fossil goblet hazel igloo juniper kernel lilac mango nutmeg opal pebble quiver rhubarb
saffron thistle timber sketch poetry chess rowing baking hiking jazz uplift vapor wren
"""
SMALL_VOCAB: tuple[str, ...] = tuple(_WORDS.split())
CATEGORIES: tuple[str, ...] = ("context", "preferences", "event", "identity", "commitments")


def small_texts(n: int, seed: int = 7, *, said_every: int | None = 20) -> list[tuple[str, str]]:
    """``n`` facts as ``(id, text)`` pairs (the shape of ``bench.bench_textmath.make_facts``),
    ids ``m0``, ``m1``, ...; every ``said_every``-th one (the last of each run) is the shorter
    "said" form, none when ``said_every`` is None."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if said_every is not None and i % said_every == said_every - 1:
            text = f"The user said {' '.join(rng.sample(SMALL_VOCAB, 5))}."
        else:
            text = f"The user {' '.join(rng.sample(SMALL_VOCAB, 7))}."
        out.append((f"m{i}", text))
    return out


def placement(i: int) -> tuple[str, str]:
    """The block and category of the ``i``-th fact: two in three in scratch, the rest split
    between episodes (always an event) and human, categories in turn."""
    block = "scratch" if i % 3 else ("episodes" if i % 2 else "human")
    category = "event" if block == "episodes" else CATEGORIES[i % len(CATEGORIES)]
    return block, category


def append_facts(store: Store, texts: Iterable[str], now: float) -> None:
    """Append ``texts`` through the store's own ``append`` (the caller holds the transaction),
    placed by :func:`placement` and created over the last 90 days."""
    from nocturne_desktop.core.types import FactDraft

    for i, text in enumerate(texts):
        block, category = placement(i)
        store.append(block, FactDraft(text, category, None, now - (i % 90) * DAY))
