"""Merge: clusters of related (but not duplicate) facts within one block, rewritten as one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nocturne_desktop.core.judges import conflicts, duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy, id_num
from nocturne_desktop.core.sleep.passes.base import PassPlan, PassSpec, Reason, pack
from nocturne_desktop.core.stepwise import sorted_yielding
from nocturne_desktop.core.types import Fact, Strength

RELATED_THRESHOLD = 2 / 3
"""Facts this similar (two in three content words shared, under the duplicate threshold) are
offered together to Merge. At 0.5, short facts related through one common word offered 90 % of a
2,000-fact store to the model; at 2/3, 41 % (``bench.bench_sleep``)."""
MAX_CLUSTER = 5


class MergeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    intoId: str
    fromIds: list[str]
    mergedText: str = Field(json_schema_extra={"maxLength": 400})
    reason: Reason


def clusters(facts: Sequence[Fact], threshold: float = RELATED_THRESHOLD) -> list[list[Fact]]:
    """Groups of related active facts, one block each, at most MAX_CLUSTER facts.

    Star-shaped, not connected components: a fact joins a group only if it is related to the
    group's first fact, so "lives in Lisbon" and "lives with a cat" do not chain a whole block
    together through one shared word. Strongest pairs are grouped first; a fact is in at most
    one group. Two facts that conflict (:mod:`.conflicts`) are never grouped: one sentence
    would claim both, and Reconcile decides which is current."""
    by_block: dict[str, list[Fact]] = {}
    for f in facts:
        if f.active:
            by_block.setdefault(f.block, []).append(f)
    out: list[list[Fact]] = []
    token_sets: dict[str, frozenset[str]] = {}

    def tokens(f: Fact) -> frozenset[str]:  # each text tokenised once, not once per comparison
        found = token_sets.get(f.text)
        if found is None:
            found = token_sets[f.text] = tm.content_tokens(f.text)
        return found

    def related(x: Fact, y: Fact) -> bool:  # tm.similarity(x.text, y.text) >= threshold
        sx, sy = tokens(x), tokens(y)
        return bool(sx and sy) and len(sx & sy) / min(len(sx), len(sy)) >= threshold

    for block_facts in by_block.values():
        by_id = {f.id: f for f in block_facts}
        group_of: dict[str, list[Fact]] = {}
        pairs = duplicates.candidate_pairs([(f.id, f.text) for f in block_facts], threshold)
        for a, b, _ in sorted_yielding(pairs, key=lambda p: -p[2]):  # up to millions of pairs
            ga, gb = group_of.get(a), group_of.get(b)
            if ga is not None and gb is not None:
                continue  # both grouped: the pair changes nothing
            if conflicts.pair_conflict(by_id[a], by_id[b]) is not None:
                continue  # a conflict is never grouped (rules.not_conflicts, pair by pair)
            if ga is None and gb is None:
                group = [by_id[b], by_id[a]]  # the keeper-like (fuller) fact first
                group_of[a] = group_of[b] = group
                out.append(group)
            elif ga is None or gb is None:
                joined = ga if ga is not None else gb
                newcomer = b if ga is not None else a
                if joined is not None and len(joined) < MAX_CLUSTER and (
                        related(joined[0], by_id[newcomer])) and all(
                        conflicts.pair_conflict(f, by_id[newcomer]) is None for f in joined):
                    joined.append(by_id[newcomer])
                    group_of[newcomer] = joined
    for g in out:
        g.sort(key=lambda f: id_num(f.id))
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
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        groups = clusters(facts)

        def render(g: list[Fact]) -> dict[str, Any]:
            return {"block": g[0].block, "facts": [{"itemId": f.id, "text": f.text} for f in g]}

        chunks = () if not chunked else pack(groups, render, lambda g: [f.id for f in g],
                      lambda rs: {"task": "merge", "clusters": rs}, budget_tokens)
        return PassPlan(self.name, chunks, sum(len(g) for g in groups))
