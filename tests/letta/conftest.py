"""The real Letta server (``make letta``) for the tests of the link, started once per session.

It runs in Letta's secure mode with a key in a 0600 file, so every test goes through the key
path the CLI's ``--api-key-file`` takes. Not installed: the tests fail when
``NOCTURNE_REQUIRE_LETTA=1`` (``make test`` sets it, since it installs the server first) and are
skipped otherwise, saying how to install it.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import Agent, LettaClient
from nocturne_desktop.letta.localserver import LocalLettaServer, find_letta


@dataclass(frozen=True)
class LettaServer:
    """The running server: its URL, the key and the file that holds it."""

    url: str
    key: str
    key_file: Path
    server: LocalLettaServer

    def client(self) -> LettaClient:
        return LettaClient(self.url, api_key=self.key)


def require_letta() -> Path:
    exe = find_letta()
    if exe is None:
        message = "the Letta server is not installed: run `make letta`"
        if os.environ.get("NOCTURNE_REQUIRE_LETTA") == "1":
            pytest.fail(message + " (NOCTURNE_REQUIRE_LETTA=1 makes this a failure)")
        pytest.skip(message)
    return exe


def key_file(folder: Path, key: str) -> Path:
    path = folder / "letta.key"
    path.write_text(key + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="session")
def letta_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LettaServer]:
    """``letta server`` on a free loopback port with a temporary HOME; stopped (SIGTERM) at the
    end of the session."""
    exe = require_letta()
    home = tmp_path_factory.mktemp("letta-home")
    key = secrets.token_urlsafe(24)
    server = LocalLettaServer(home, letta=exe, password=key)
    server.start()
    try:
        yield LettaServer(server.url, key, key_file(home, key), server)
    finally:
        server.stop()


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
