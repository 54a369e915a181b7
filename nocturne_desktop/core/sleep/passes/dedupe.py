"""Dedupe: the code finds candidate pairs; the model adjudicates them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep.passes.base import PassPlan, PassSpec, Reason, pack
from nocturne_desktop.core.sleep.rules import non_chaining, not_conflicts
from nocturne_desktop.core.types import Fact, Strength


class Drop(BaseModel):
    model_config = ConfigDict(extra="forbid")
    itemId: str
    duplicateOf: str
    reason: Reason


class DedupePass(PassSpec):
    name = "dedupe"
    entry = Drop
    list_key = "drop"
    tokens_per_entry = 40
    instructions = (
        "You clean up an assistant's memory. Each candidate pair below was flagged by code as "
        "possibly saying the same thing. For each pair that really states the same fact, "
        "propose dropping dropId in favour of keeperId (keep the fuller wording). Skip pairs "
        'that differ in meaning. Answer as {"drop":[{"itemId":...,"duplicateOf":...,'
        '"reason":...}]}; an empty list is a fine answer.'
    )

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        active = [f for f in facts if f.active]
        by_id = {f.id: f for f in active}
        # one pair per fact to drop (to its best keeper), not every pair of a group of copies:
        # 34 copies of one sentence are 33 pairs, not 561
        # a pair a meaning guard separates is never offered (S-MEAN-1..3), nor a conflict,
        # which Reconcile supersedes instead (S-REC-1)
        found, _ = duplicates.duplicate_pairs([(f.id, f.text) for f in active],
                                            policy.similarity_threshold, join)
        pairs = non_chaining(not_conflicts(found, by_id))
        order = {f.id: i for i, f in enumerate(active)}
        pairs.sort(key=lambda p: (order[p[0]], order[p[1]]))

        def render(p: tuple[str, str, float]) -> dict[str, Any]:
            drop, keep, score = p
            return {"dropId": drop, "dropText": by_id[drop].text, "keeperId": keep,
                    "keeperText": by_id[keep].text, "similarity": round(score, 3)}

        chunks = () if not chunked else pack(pairs, render, lambda p: (p[0], p[1]),
                      lambda rs: {"task": "dedupe", "candidatePairs": rs}, budget_tokens)
        return PassPlan(self.name, chunks, len(pairs))
