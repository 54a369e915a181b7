"""The loose test the model-path bound is measured with (bench.bench_loose): it lets through
what shares a topic with the older fact and is of the same party, and nothing else."""

from __future__ import annotations

import pytest

from bench.bench_loose import loose


@pytest.mark.parametrize(("old", "new"), [
    ("User's favourite editor is VS Code.", "switched to neovim, the editor is so fast"),
    ("I keep four hens.", "fox got two of the hens last night"),
    ("The user's bank is Barclays.", "moved my bank to Monzo"),
])
def test_a_same_party_statement_on_the_same_topic_is_a_loose_candidate(old: str, new: str) -> None:
    assert loose(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I keep four hens.", "my sister keeps six hens now"),  # another person's
    ("I live in Leeds.", "thinking of moving out of Leeds next year"),  # a plan
    ("I live in Leeds.", "I used to live in York"),  # history, no shared topic
    ("I keep four hens.", "the weather was awful today"),  # nothing shared
])
def test_other_parties_plans_and_other_topics_are_not(old: str, new: str) -> None:
    assert not loose(old, new)
