"""The memory benchmark's conversations (``bench/data/memory_conversations.json``: people's
facts session after session, written for recall, not for the conflict rules) are controls the
rules never saw: none of their facts corrects another, so a model-free reconcile over every fact
of a conversation supersedes nothing. It caught what the corpus's controls did not: "Maya got
promoted to senior nurse" superseding "Maya works as a nurse at Southmead Hospital", "came back
from the trip to Lisbon and loved the food" superseding "dislikes coriander in food", "friends
since primary school" superseding "works as a primary school teacher"."""

from __future__ import annotations

from bench.bench_memory import DATA, load_bench
from nocturne_desktop.core.sleep import rules
from nocturne_desktop.core.types import Fact


def test_no_fact_of_a_conversation_supersedes_another() -> None:
    wrong: list[str] = []
    for conv in load_bench(DATA):
        facts: list[Fact] = []
        for s in conv.sessions:
            for k, turn in enumerate(s.turns):
                for text, category in turn.facts:
                    n = len(facts) + 1
                    at = s.at + 60.0 * k
                    facts.append(Fact(f"m_{n}", "human", text, category, n, at, at))
        by_id = {f.id: f for f in facts}
        for m in rules.reconcile_rule(facts):
            wrong.append(f"{conv.id}: {by_id[m.item_id].text!r} superseded ({m.reason})")
    assert not wrong, "\n".join(wrong)
