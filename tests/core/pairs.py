"""Two facts, older and newer, as the correction tests judge them: the pair test, the finder
among other facts, and the model-free sleep's supersede."""

from __future__ import annotations

from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.sleep import rules
from nocturne_desktop.core.types import Fact


def fact(n: int, text: str, block: str = "human", category: str = "context") -> Fact:
    return Fact(f"m_{n}", block, text, category, n, 1000.0 + n, 1000.0 + n)


def found(old: str, new: str) -> conflicts.Conflict | None:
    return conflicts.pair_conflict(fact(1, old), fact(2, new, "scratch"))


def finds(old: str, new: str) -> bool:
    """What the finder reaches among other facts (its posting lists), not only the pair test."""
    facts = [fact(1, old), fact(3, "I like long walks."), fact(5, "My sister is a nurse."),
             fact(7, "I have a garden."), fact(9, new, "scratch")]
    return any(c.older == "m_1" and c.newer == "m_9" for c in conflicts.find_conflicts(facts))


def superseded(old: str, new: str, blocks: tuple[str, str] = ("human", "scratch")) -> bool:
    """Whether a model-free sleep supersedes the older fact (and only it)."""
    a, b = fact(1, old, blocks[0]), fact(2, new, blocks[1])
    return [m.item_id for m in rules.reconcile_rule([a, b])] == ["m_1"]
