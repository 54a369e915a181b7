"""The tests of the Letta link: a client of the session's real Letta server
(``letta_server``, in ``tests/conftest.py``), agents made for a test, a store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import Agent, LettaClient
from tests.lettaserver import LettaServer


@pytest.fixture
def letta(letta_server: LettaServer) -> Iterator[LettaClient]:
    """A client of the session's server, with its key."""
    with letta_server.client() as client:
        yield client


@pytest.fixture
def new_agent(letta: LettaClient) -> Iterator[Callable[..., Agent]]:
    """Make agents with given blocks (``persona="..."``, ``human="..."``); deleted afterwards."""
    made: list[str] = []

    def make(**blocks: str) -> Agent:
        agent = letta.create_agent(f"nocturne-test-{uuid.uuid4().hex[:8]}", blocks=blocks)
        made.append(agent.id)
        return agent

    yield make
    for agent_id in made:
        letta.delete_agent(agent_id)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory" / "nocturne.db") as s:
        yield s


def values(client: LettaClient, agent_id: str) -> dict[str, str]:
    """The agent's blocks, label → value."""
    return {b.label: b.value for b in client.blocks(agent_id)}
