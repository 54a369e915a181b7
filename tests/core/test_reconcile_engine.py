"""Reconcile against the real local engine: a scripted conversation with corrections, one
sleep, and at least one fact superseded - by the model's proposal passed by the gate, or, where
the tiny model proposes nothing usable, by the reconcile rule. The model's raw replies to the
Reconcile pass are printed (and recorded as a junit property) for the closing note."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine

pytestmark = [pytest.mark.engine, pytest.mark.timeout(900)]

CONVERSATION = [
    ("I live in Lisbon.", "User lives in Lisbon", "identity"),
    ("I eat meat.", "User eats meat", "preferences"),
    ("I work at Acme.", "User works at Acme", "identity"),
    ("I've moved to Porto, I live in Porto now.", "User lives in Porto now", "identity"),
    ("I no longer eat meat.", "User no longer eats meat", "preferences"),
    ("I work at Globex now.", "User works at Globex now", "identity"),
]


def test_a_real_sleep_supersedes_a_correction(
    real_engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None],
) -> None:
    from nocturne_desktop.llm.client import OpenAIClient

    db = tmp_path / "n.db"
    with Store(db) as store:
        for n, (said, fact, cat) in enumerate(CONVERSATION, start=1):
            turn = store.add_turn("user", said)
            store.append("human", FactDraft(fact, cat, turn.n, time.time() - 600 + n))
        client = OpenAIClient(real_engine.base_url, real_engine.model_name)
        try:
            events = list(run_sleep(store, client, RetentionPolicy()))
        finally:
            client.close()
        assert events[-1].kind is SleepEventKind.DONE, events[-1].message
        sleep_id = events[0].sleep_id
        rows = store.mutations(sleep_id=sleep_id, pass_name="reconcile")
        lines = [f"{'ok ' if r.mutation.accepted else 'NO '}{r.mutation.decided_by}: "
                 f"{r.mutation.item_id} -> {r.mutation.refs.get('supersededBy', '')} "
                 f"{r.mutation.rejection_reason or r.mutation.reason}"
                 + (f" raw={r.mutation.refs.get('raw', '')[:300]!r}" if "raw" in r.mutation.refs
                    else "")
                 for r in rows]
        record_property("reconcile", "\n".join(lines))
        with capsys.disabled():
            print("\nReconcile on the real engine:\n" + "\n".join(lines))
        superseded = store.superseded_facts()
        assert superseded, "\n".join(lines)
        for f in superseded:
            succ = store.get(f.superseded_by or "")
            assert succ is not None and succ.active
        _, problems = audit.reaudit(store, sleep_id or 0)
        assert problems == []
