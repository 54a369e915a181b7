"""Reconcile: the code finds conflicting pairs; the model says which are corrections."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep.passes.base import PassPlan, PassSpec, Reason, pack
from nocturne_desktop.core.types import Fact, Strength


class SupersedeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    oldId: str
    newId: str
    reason: Reason


class ReconcilePass(PassSpec):
    name = "reconcile"
    entry = SupersedeEntry
    list_key = "supersede"
    tokens_per_entry = 40
    instructions = (
        "You keep an assistant's memory current. Each pair below was flagged by code as possibly "
        "conflicting: the same subject and frame with a different value, the same statement "
        "with opposite polarity, a different number for the same thing, or a newer statement "
        "that says the older changed (moved from, no longer, sold, quit, turned). newId is the more "
        "recent statement. Where the newer fact corrects or updates the older one (the older is "
        "no longer true), propose superseding oldId by newId; the older fact is kept as history. "
        "Skip pairs that can both be true. Answer as "
        '{"supersede":[{"oldId":...,"newId":...,"reason":...}]}; an empty list is a fine answer.'
    )

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        active = [f for f in facts if f.active]
        by_id = {f.id: f for f in active}
        found = join.find_conflicts(active) if join is not None else conflicts.find_conflicts(active)

        def render(c: conflicts.Conflict) -> dict[str, Any]:
            return {"oldId": c.older, "oldText": by_id[c.older].text, "newId": c.newer,
                    "newText": by_id[c.newer].text, "flagged": c.why}

        chunks = () if not chunked else pack(found, render, lambda c: (c.older, c.newer),
                      lambda rs: {"task": "reconcile", "candidatePairs": rs}, budget_tokens)
        return PassPlan(self.name, chunks, len({i for c in found for i in (c.older, c.newer)}))
