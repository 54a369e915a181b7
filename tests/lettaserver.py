"""The real Letta server (``make letta``) of the tests, one per test session.

It runs in Letta's secure mode with a key in a 0600 file, so every test goes through the key
path the CLI's ``--api-key-file`` takes. Not installed: the tests fail when
``NOCTURNE_REQUIRE_LETTA=1`` (``make test`` sets it, since it installs the server first) and are
skipped otherwise, saying how to install it. The session fixture ``letta_server`` (in
``tests/conftest.py``, so the verify against the built-in engine in ``tests/core`` shares it
with the tests of the link in ``tests/letta``) starts it with :func:`running_letta`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop.letta.client import LettaClient
from nocturne_desktop.letta.localserver import LocalLettaServer, find_letta
from tests.opponents import unavailable


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
        unavailable("the Letta server is not installed: run `make letta`",
                    "NOCTURNE_REQUIRE_LETTA")
    return exe


def key_file(folder: Path, key: str) -> Path:
    path = folder / "letta.key"
    path.write_text(key + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


@contextmanager
def running_letta(home: Path) -> Iterator[LettaServer]:
    """``letta server`` on a free loopback port with ``home`` as its HOME; stopped (SIGTERM)
    on leaving."""
    exe = require_letta()
    key = secrets.token_urlsafe(24)
    server = LocalLettaServer(home, letta=exe, password=key)
    server.start()
    try:
        yield LettaServer(server.url, key, key_file(home, key), server)
    finally:
        server.stop()
