"""The seed's swap: "the consolidation, diff, restore and quiz code never learns which backend is
live". The same sleep on the same facts gives the same versions, audit rows and states whether
the live state is local or in a Letta agent's blocks, and the agent ends holding exactly what
the local memory holds; the same holds for an undo of that sleep."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.letta.client import Agent, LettaClient
from nocturne_desktop.letta.sync import PULL_LABEL, link
from tests.core.fakemodel import FakeCall, FakeModel
from tests.core.sleepkit import DAY, NOW, SEED, cooperative
from tests.letta.conftest import values
from tests.letta.test_link import live_blocks
from tests.lettaserver import LettaServer

pytestmark = [pytest.mark.letta, pytest.mark.slow]


def seeded(path: Path) -> Store:
    store = Store(path, clock=lambda: NOW)
    for i, (block, cat, text, age) in enumerate(SEED):
        store.append(block, FactDraft(text, cat, i + 1, NOW - age * DAY))
    return store


def cooperative_model() -> FakeModel:
    answers = cooperative()

    def respond(call: FakeCall) -> Any:
        payload = json.loads(call.last_user)
        answer = answers.get(payload.get("task"), {})
        return answer(payload) if callable(answer) else answer

    return FakeModel(responder=respond)


def ledger(store: Store) -> dict[str, Any]:
    """Everything a sleep records, without what a clock or a process id may vary."""
    versions = store.versions()
    return {
        "versions": [(v.seq, v.label, v.active_count, v.sleep_id, v.created_at) for v in versions],
        "rows": [(r.seq, r.sleep_id, r.mutation.pass_name, r.mutation.kind, r.mutation.item_id,
                  r.mutation.accepted, r.mutation.reason, r.mutation.rejection_reason,
                  r.mutation.policy, r.mutation.decided_by,
                  json.dumps(r.mutation.refs, sort_keys=True)) for r in store.mutations()],
        "states": [store.state_at(v.seq) for v in versions],
        "sleeps": [(s.id, s.status, s.dry_run) for s in store.sleeps()],
        "facts": store.all_facts(),
    }


@pytest.mark.parametrize("with_model", [False, True], ids=["rules-only", "cooperative-model"])
def test_the_same_sleep_gives_the_same_ledger_with_the_live_state_local_or_in_letta(
    with_model: bool, tmp_path: Path, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent],
) -> None:
    local = seeded(tmp_path / "local" / "nocturne.db")
    remote = seeded(tmp_path / "remote" / "nocturne.db")
    agent = new_agent(persona="I am a patient assistant.", human="The user's name is Maya.")
    try:
        sync, _ = link(remote, letta_server.url, agent.id, api_key_file=letta_server.key_file,
                       prefer="push")
        with sync:
            sync.attach()
            assert values(letta, agent.id) == live_blocks(remote)
            policy = RetentionPolicy()
            for store in (local, remote):
                model = cooperative_model() if with_model else None
                events = list(run_sleep(store, model, policy, now=NOW))
                assert events[-1].kind is SleepEventKind.DONE, events[-1].message
            assert not isinstance(sync.last, Exception), sync.last
            assert ledger(remote) == ledger(local)
            assert len(local.versions()) >= 4 and any(
                r.mutation.accepted for r in local.mutations(accepted=True))
            assert values(letta, agent.id) == live_blocks(local)

            for store in (local, remote):
                store.undo()
            assert ledger(remote) == ledger(local)
            assert values(letta, agent.id) == live_blocks(local)
            assert all(v.label != PULL_LABEL for v in remote.versions())
    finally:
        local.close()
        remote.close()
