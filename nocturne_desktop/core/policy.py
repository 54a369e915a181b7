"""The retention policy: what Sleep may forget, and how facts rank when memory is over its cap.

The policy is data (a pydantic model), validated on construction and stored with every sleep,
so the audit log always says which rules a forgetting was checked against.

Salience is one line of arithmetic (S-SLP-8, extended by S-RET-2)::

    block + protected + recency + importance + use

* block: persona 60, human 50, episodes 30, scratch 10;
* protected: 40 if the category is protected;
* recency: 30, falling linearly to 0 at stale-after days of age;
* importance: 15 per point the fact's importance (1–5, as the encoder proposed it) lies above
  or below its category's usual one (:data:`DEFAULT_IMPORTANCE`: identity 5, preferences 4,
  commitments 4, event 3, context 3). A fact with no importance of its own scores 0 here, so
  facts written before importance existed keep the article's salience exactly; a passing remark
  (1) filed as an event scores −30;
* use: 10 per recall (a reply that carried the fact, a Wake quiz answer), each halving every
  30 days since (MemoryBank's reinforcement: what is used stays), at most 40.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nocturne_desktop.core.stepwise import sorted_yielding
from nocturne_desktop.core.types import CATEGORIES, IMPORTANCE_RANGE, Fact, Strength

BLOCK_WEIGHT: dict[str, float] = {"persona": 60.0, "human": 50.0, "episodes": 30.0, "scratch": 10.0}
PROTECTED_BONUS = 40.0
RECENCY_MAX = 30.0
IMPORTANCE_WEIGHT = 15.0
"""Salience per point of importance above (or below) the category's usual importance."""
DEFAULT_IMPORTANCE: dict[str, int] = {
    "identity": 5, "preferences": 4, "commitments": 4, "event": 3, "context": 3,
}
"""The usual importance of a category: a fact's importance when the encoder gave none (older
facts, older replies), and the zero of the importance term."""
USE_WEIGHT = 10.0
"""Salience per recall, at the moment of the recall."""
USE_HALF_LIFE_DAYS = 30.0
"""A recall's weight halves every this many days."""
USE_MAX = 40.0
"""The use term never exceeds this (a much-used trivium does not outrank an identity fact)."""

DAY = 86400.0


def decayed(strength: float, since: float | None, now: float) -> float:
    """``strength`` recalls, as they weigh ``now``: halved per :data:`USE_HALF_LIFE_DAYS`."""
    if since is None or strength <= 0:
        return 0.0
    return float(strength * 0.5 ** (max(0.0, now - since) / DAY / USE_HALF_LIFE_DAYS))


def reinforce(old: Strength | None, at: float) -> Strength:
    """The strength after one more recall at ``at``: the old recalls decayed to ``at``, plus 1."""
    old = old or Strength()
    return Strength(old.importance, old.uses + 1, decayed(old.strength, old.last_used_at, at) + 1.0,
                    at)


def check_importance(value: object) -> int | None:
    """``value`` as an importance (None stays None), or ValueError saying the range."""
    if value is None:
        return None
    lo, hi = IMPORTANCE_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"importance must be a whole number from {lo} to {hi}, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class SalienceParts:
    """The terms of one fact's salience, and what they came from."""

    block_name: str
    block: float
    protected: float
    recency: float
    importance: float
    use: float
    importance_level: int
    importance_given: bool
    """False: the category's default stood in for the encoder's proposal."""
    uses: int
    last_used_days: float | None

    @property
    def total(self) -> float:
        return self.block + self.protected + self.recency + self.importance + self.use

    def explain(self) -> str:
        """``salience 42.0 = scratch 10 + recency 12.0 + importance 4 → +15 + use 5.0 (…)``."""
        src = "" if self.importance_given else " (the category's usual)"
        parts = [f"{self.block_name} {self.block:g}"]
        if self.protected:
            parts.append(f"protected {self.protected:g}")
        parts.append(f"recency {self.recency:.1f}")
        parts.append(f"importance {self.importance_level}{src} → {self.importance:+g}")
        if self.uses:
            ago = f", last {self.last_used_days:.0f} d ago" if self.last_used_days is not None else ""
            parts.append(f"use {self.use:.1f} ({self.uses} recall{'s' if self.uses != 1 else ''}{ago})")
        else:
            parts.append("use 0 (never recalled)")
        return f"salience {self.total:.1f} = " + " + ".join(parts)


class RetentionPolicy(BaseModel):
    """Editable retention rules (S-SLP-9). The defaults are chosen for a year of use from the
    memory benchmark (see the README and ``docs/benchmarks.md``): the salience floor takes the
    stale trivia, the cap only bounds cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    similarity_threshold: float = Field(
        0.9, ge=0.5, le=1.0, description="Containment similarity at which two facts are duplicates."
    )
    stale_after_days: float = Field(
        30.0, gt=0, le=36500, description="An unprotected fact older than this may be forgotten."
    )
    max_active_facts: int = Field(
        2000, ge=1, le=1_000_000,
        description="Above this many active facts, Forget trims the least salient. A bound on "
        "cost (sleep time, the window), not on the prompt: retrieval picks what a reply sees.",
    )
    forget_below: float = Field(
        10.0, ge=0.0, le=1000.0,
        description="A stale unprotected fact whose salience is below this (a plain scratch "
        "note's 10) is forgotten by the retention rule; 0: only the cap forgets without a model.",
    )
    protected_categories: tuple[str, ...] = Field(
        ("identity", "preferences", "commitments"),
        description="Categories Forget may never touch.",
    )

    @field_validator("protected_categories")
    @classmethod
    def _known_categories(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [c for c in value if c not in CATEGORIES]
        if unknown:
            raise ValueError(
                f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                f"expected some of {', '.join(CATEGORIES)}"
            )
        return tuple(dict.fromkeys(value))

    def is_protected(self, fact: Fact) -> bool:
        return fact.category in self.protected_categories

    def is_stale(self, fact: Fact, now: float) -> bool:
        return fact.age_days(now) > self.stale_after_days

    def salience_parts(self, fact: Fact, now: float, strength: Strength | None = None) -> SalienceParts:
        """The terms of the module doc's line for ``fact`` at ``now``."""
        recency = max(0.0, RECENCY_MAX - RECENCY_MAX * fact.age_days(now) / self.stale_after_days)
        bonus = PROTECTED_BONUS if self.is_protected(fact) else 0.0
        usual = DEFAULT_IMPORTANCE.get(fact.category, 3)
        given = strength is not None and strength.importance is not None
        level = strength.importance if given and strength is not None else None
        if level is None:
            level = usual
        uses = strength.uses if strength is not None else 0
        last = strength.last_used_at if strength is not None else None
        use = min(USE_MAX, USE_WEIGHT * decayed(strength.strength, last, now)) if strength else 0.0
        return SalienceParts(
            fact.block, BLOCK_WEIGHT.get(fact.block, 0.0), bonus, recency,
            IMPORTANCE_WEIGHT * (level - usual), use, level, given, uses,
            None if last is None else max(0.0, (now - last) / DAY),
        )

    def salience(self, fact: Fact, now: float, strength: Strength | None = None) -> float:
        """S-SLP-8 with S-RET-2's terms: see the module doc."""
        return self.salience_parts(fact, now, strength).total

    def below_floor(self, fact: Fact, now: float, strength: Strength | None = None) -> bool:
        """Whether the salience floor forgets ``fact``: active, unpinned, unprotected, stale, and its
        salience below :attr:`forget_below`."""
        return (
            self.forget_below > 0 and fact.active and not fact.pinned and not self.is_protected(fact)
            and self.is_stale(fact, now) and self.salience(fact, now, strength) < self.forget_below
        )

    def overflow(
        self, facts: Iterable[Fact], now: float, strengths: Mapping[str, Strength] | None = None
    ) -> list[Fact]:
        """The facts the cap asks to drop: the lowest-salience *unprotected*, unpinned active facts,
        as many as the active set exceeds the cap (fewer if too few are unprotected). Lowest first; ties
        broken by age (older first), then by id, so the choice is deterministic."""
        active = [f for f in facts if f.active]
        excess = len(active) - self.max_active_facts
        if excess <= 0:
            return []
        get = (strengths or {}).get
        candidates = [f for f in active if not self.is_protected(f) and not f.pinned]
        candidates = sorted_yielding(  # tens of thousands at scale: never one long C sort
            candidates, key=lambda f: (self.salience(f, now, get(f.id)), f.created_at, id_num(f.id)))
        return candidates[:excess]

    def describe(self) -> str:
        floor = f", forget stale below salience {self.forget_below:g}" if self.forget_below else ""
        return (
            f"similarity ≥ {self.similarity_threshold:g}, stale after {self.stale_after_days:g} d, "
            f"cap {self.max_active_facts} active{floor}, "
            f"protected: {', '.join(self.protected_categories)}"
        )


def id_num(item_id: str) -> int:
    """The number in ``m_17`` (0 for anything else), for numeric ordering."""
    try:
        return int(item_id.split("_", 1)[1])
    except (IndexError, ValueError):
        return 0

