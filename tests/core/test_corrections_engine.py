"""A natural correction on the real local engine (S-WORDS-1): a conversation through the chat
agent, each user turn encoded by the real encoder as the window does, then one sleep; the old
fact ends superseded, by the model's proposal passed by the gate or by the reconcile rule. Who
decided is printed (and recorded as a junit property) for the closing note."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nocturne_desktop.core.chat.agent import ChatAgent
from nocturne_desktop.core.chat.encoder import Encoder
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.store import Store

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine

pytestmark = [pytest.mark.engine, pytest.mark.timeout(900)]

CONVERSATION = [
    "My favourite colour is blue.",
    "I walk to work most days.",
    "My favourite colour is now green, no longer blue.",
]


def test_a_natural_correction_supersedes_the_old_fact_after_a_real_sleep(
    real_engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None],
) -> None:
    from nocturne_desktop.llm.client import OpenAIClient

    with Store(tmp_path / "n.db") as store:
        client = OpenAIClient(real_engine.base_url, real_engine.model_name)
        try:
            agent = ChatAgent(store, client)
            encoder = Encoder(store, client)
            for said in CONVERSATION:
                agent.reply(said, max_tokens=48)
                encoder.encode_new_turns()
            encoded = [f.text for f in store.active_facts()]
            events = list(run_sleep(store, client, RetentionPolicy()))
        finally:
            client.close()
        assert events[-1].kind is SleepEventKind.DONE, events[-1].message
        sleep_id = events[0].sleep_id
        rows = store.mutations(sleep_id=sleep_id, pass_name="reconcile")
        lines = [f"{'ok ' if r.mutation.accepted else 'NO '}{r.mutation.decided_by}: "
                 f"{r.mutation.item_id} -> {r.mutation.refs.get('supersededBy', '')} "
                 f"{r.mutation.rejection_reason or r.mutation.reason}" for r in rows]
        note = "encoded: " + " | ".join(encoded) + "\n" + "\n".join(lines)
        record_property("natural-correction", note)
        with capsys.disabled():
            print("\nNatural correction on the real engine:\n" + note)
        old = [f for f in store.superseded_facts() if "blue" in f.text.lower()
               and "green" not in f.text.lower()]
        assert old, note
        succ = store.get(old[0].superseded_by or "")
        assert succ is not None and succ.active and "green" in succ.text.lower()
        deciders = {r.mutation.decided_by for r in rows
                    if r.mutation.accepted and r.mutation.item_id == old[0].id}
        assert deciders <= {"model", "reconcile-rule"} and deciders, note
        _, problems = audit.reaudit(store, sleep_id or 0)
        assert problems == []
