"""Merge: clusters of related (but not duplicate) facts within one block, rewritten as one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nocturne_desktop.core import textmath as tm
from nocturne_desktop.core.passes.base import PassPlan, PassSpec, pack
from nocturne_desktop.core.policy import RetentionPolicy, id_num
from nocturne_desktop.core.types import Fact

RELATED_THRESHOLD = 0.5
"""Facts this similar (but under the duplicate threshold) are offered together to Merge."""
MAX_CLUSTER = 5


class MergeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    intoId: str
    fromIds: list[str]
    mergedText: str = Field(json_schema_extra={"maxLength": 400})
    reason: str = Field(json_schema_extra={"maxLength": 160})


def _root(parent: dict[str, str], x: str) -> str:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def clusters(facts: Sequence[Fact], threshold: float = RELATED_THRESHOLD) -> list[list[Fact]]:
    """Connected groups of related active facts, one block each, at most MAX_CLUSTER facts."""
    out: list[list[Fact]] = []
    by_block: dict[str, list[Fact]] = {}
    for f in facts:
        if f.active:
            by_block.setdefault(f.block, []).append(f)
    for block_facts in by_block.values():
        parent = {f.id: f.id for f in block_facts}
        for a, b, _ in tm.find_duplicate_pairs([(f.id, f.text) for f in block_facts], threshold):
            ra, rb = _root(parent, a), _root(parent, b)
            if ra != rb:
                parent[max(ra, rb, key=id_num)] = min(ra, rb, key=id_num)
        groups: dict[str, list[Fact]] = {}
        for f in block_facts:
            groups.setdefault(_root(parent, f.id), []).append(f)
        for g in groups.values():
            if len(g) >= 2:
                g.sort(key=lambda f: id_num(f.id))
                out.extend(g[i:i + MAX_CLUSTER] for i in range(0, len(g), MAX_CLUSTER)
                           if len(g[i:i + MAX_CLUSTER]) >= 2)
    out.sort(key=lambda g: id_num(g[0].id))
    return out


class MergePass(PassSpec):
    name = "merge"
    entry = MergeEntry
    list_key = "merge"
    tokens_per_entry = 110
    instructions = (
        "You tidy an assistant's memory. Each cluster below holds related facts from one block. "
        "Where facts in a cluster can be said as one sentence WITHOUT adding any word, name or "
        "number that is not in them, propose a merge: intoId (one of the cluster's ids), "
        "fromIds (the other ids merged into it), mergedText (the combined sentence, reusing the "
        'sources\' words), reason. Answer as {"merge":[...]}; an empty list is a fine answer.'
    )

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int
    ) -> PassPlan:
        groups = clusters(facts)

        def render(g: list[Fact]) -> dict[str, Any]:
            return {"block": g[0].block, "facts": [{"itemId": f.id, "text": f.text} for f in g]}

        chunks = pack(groups, render, lambda g: [f.id for f in g],
                      lambda rs: {"task": "merge", "clusters": rs}, budget_tokens)
        return PassPlan(self.name, chunks, sum(len(g) for g in groups))
