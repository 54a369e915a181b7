"""Promote: scratch facts that are durable move to persona, human or episodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep.passes.base import PassPlan, PassSpec, Reason, pack
from nocturne_desktop.core.types import Fact, Strength


class PromoteEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    itemId: str
    toBlock: str
    reason: Reason


class PromotePass(PassSpec):
    name = "promote"
    entry = PromoteEntry
    list_key = "promote"
    tokens_per_entry = 40
    instructions = (
        "You organise an assistant's memory. The facts below sit in scratch (working memory). "
        "Propose moving the durable ones: facts about the assistant itself to persona; stable "
        "facts about the user (identity, preferences, commitments) to human; events anchored in "
        'time or place to episodes. Leave passing remarks in scratch. Answer as {"promote":'
        '[{"itemId":...,"toBlock":...,"reason":...}]}; an empty list is a fine answer.'
    )

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        scratch = [f for f in facts if f.active and f.block == "scratch"]

        def render(f: Fact) -> dict[str, Any]:
            return {"itemId": f.id, "text": f.text, "category": f.category}

        chunks = () if not chunked else pack(scratch, render, lambda f: (f.id,),
                      lambda rs: {"task": "promote", "scratch": rs}, budget_tokens)
        return PassPlan(self.name, chunks, len(scratch))
