"""Payload planning of the sleep passes (what each pass offers the model)."""

from __future__ import annotations

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.sleep.passes.merge import RELATED_THRESHOLD, clusters
from nocturne_desktop.core.types import Fact


def _facts(*texts: str) -> list[Fact]:
    return [Fact(f"m_{i}", "human", t, "context", None, 0.0, 0.0) for i, t in enumerate(texts, 1)]


def test_merge_cluster_joins_the_group_of_its_partner_not_the_newest_group() -> None:
    """A fact related to the head of an older group joins that group, even when another group
    was created after it (the check used to compare with the newest group's head)."""
    facts = _facts(
        "The user plays chess with Ana on Sunday evenings",
        "The user plays chess with Ana on Sunday evenings at home",
        "The user grows tomatoes and basil on the balcony",
        "The user grows tomatoes and basil on the balcony in summer",
        "The user plays chess with Ana at the club",
    )
    # the chess group forms first, then the balcony group, then m_5 meets the chess group
    assert tm.similarity(facts[4].text, facts[1].text) >= RELATED_THRESHOLD
    assert tm.similarity(facts[4].text, facts[2].text) < RELATED_THRESHOLD
    groups = [[f.id for f in g] for g in clusters(facts)]
    assert groups == [["m_1", "m_2", "m_5"], ["m_3", "m_4"]]


def test_merge_cluster_still_refuses_a_fact_unrelated_to_the_head() -> None:
    """Star-shaped: related to a member but not to the head is not enough."""
    facts = _facts(
        "The user plays chess with Ana on Sunday evenings",
        "The user plays chess with Ana on Sundays",
        "The user plays chess with Ana at the club downtown",
    )
    groups = [[f.id for f in g] for g in clusters(facts)]
    assert groups == [["m_1", "m_2"]]
