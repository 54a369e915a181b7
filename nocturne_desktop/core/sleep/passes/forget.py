"""Forget: only facts a retention rule already authorises (stale, or over the cap) are shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep.passes.base import PassPlan, PassSpec, Reason, pack
from nocturne_desktop.core.stepwise import sorted_yielding
from nocturne_desktop.core.types import Fact, Strength


class ForgetEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    itemId: str
    reason: Reason
    policy: str


def eligible(
    facts: Sequence[Fact], policy: RetentionPolicy, now: float,
    strengths: Mapping[str, Strength] | None = None,
) -> list[tuple[Fact, str]]:
    """Unprotected, unpinned active facts that are stale or in the overflow set, with the rule that
    applies, least salient first (ties: older id first)."""
    overflow = {f.id for f in policy.overflow(facts, now, strengths)}
    out = []
    for f in facts:
        if not f.active or f.pinned or policy.is_protected(f):
            continue
        if policy.is_stale(f, now):
            out.append((f, "stale"))
        elif f.id in overflow:
            out.append((f, "capacity"))
    get = (strengths or {}).get
    return sorted_yielding(out, key=lambda it: policy.salience(it[0], now, get(it[0].id)))


class ForgetPass(PassSpec):
    name = "forget"
    entry = ForgetEntry
    list_key = "forget"
    tokens_per_entry = 40
    instructions = (
        "You prune an assistant's memory under a retention policy. Every fact below is allowed "
        "to be forgotten (its rule is given: stale = older than the policy allows, capacity = "
        "memory is over its cap and this fact is among the least important). Propose forgetting "
        "the ones that no longer matter; keep anything the user is likely to need. Answer as "
        '{"forget":[{"itemId":...,"reason":...,"policy":"stale"|"capacity"}]}; an empty list is '
        "a fine answer."
    )

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        items = eligible(facts, policy, now, strengths)
        get = (strengths or {}).get

        def render(item: tuple[Fact, str]) -> dict[str, Any]:
            f, rule = item
            return {"itemId": f.id, "text": f.text, "block": f.block, "category": f.category,
                    "ageDays": round(f.age_days(now), 1), "rule": rule,
                    "salience": round(policy.salience(f, now, get(f.id)), 1)}

        chunks = () if not chunked else pack(items, render, lambda it: (it[0].id,),
                      lambda rs: {"task": "forget", "policy": policy.describe(), "eligible": rs},
                      budget_tokens)
        return PassPlan(self.name, chunks, len(items))
