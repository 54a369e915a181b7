"""The retention policy: what Sleep may forget, and how facts rank when memory is over its cap.

The policy is data (a pydantic model), validated on construction and stored with every sleep,
so the audit log always says which rules a forgetting was checked against.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nocturne_desktop.core.types import CATEGORIES, Fact

BLOCK_WEIGHT: dict[str, float] = {"persona": 60.0, "human": 50.0, "episodes": 30.0, "scratch": 10.0}
PROTECTED_BONUS = 40.0
RECENCY_MAX = 30.0


class RetentionPolicy(BaseModel):
    """Editable retention rules (S-SLP-9). Defaults follow the reference design."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    similarity_threshold: float = Field(
        0.9, ge=0.5, le=1.0, description="Containment similarity at which two facts are duplicates."
    )
    stale_after_days: float = Field(
        30.0, gt=0, le=36500, description="An unprotected fact older than this may be forgotten."
    )
    max_active_facts: int = Field(
        120, ge=1, le=1_000_000, description="Above this many active facts, Forget trims the least salient."
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

    def salience(self, fact: Fact, now: float) -> float:
        """S-SLP-8: block weight + 40 if protected + recency decaying linearly to 0 at stale-after."""
        recency = max(0.0, RECENCY_MAX - RECENCY_MAX * fact.age_days(now) / self.stale_after_days)
        bonus = PROTECTED_BONUS if self.is_protected(fact) else 0.0
        return BLOCK_WEIGHT.get(fact.block, 0.0) + bonus + recency

    def overflow(self, facts: Iterable[Fact], now: float) -> list[Fact]:
        """The facts the cap asks to drop: the lowest-salience *unprotected*, unpinned active facts,
        as many as the active set exceeds the cap (fewer if too few are unprotected). Lowest first; ties
        broken by age (older first), then by id, so the choice is deterministic."""
        active = [f for f in facts if f.active]
        excess = len(active) - self.max_active_facts
        if excess <= 0:
            return []
        candidates = [f for f in active if not self.is_protected(f) and not f.pinned]
        candidates.sort(key=lambda f: (self.salience(f, now), f.created_at, id_num(f.id)))
        return candidates[:excess]

    def describe(self) -> str:
        return (
            f"similarity ≥ {self.similarity_threshold:g}, stale after {self.stale_after_days:g} d, "
            f"cap {self.max_active_facts} active, protected: {', '.join(self.protected_categories)}"
        )


def id_num(item_id: str) -> int:
    """The number in ``m_17`` (0 for anything else), for numeric ordering."""
    try:
        return int(item_id.split("_", 1)[1])
    except (IndexError, ValueError):
        return 0

