"""Find OpenAI-compatible model servers already running on this machine.

Each well-known local server listens on its own default port; :func:`detect_local_servers`
asks every one of them for ``GET /v1/models`` at once (one thread per port, short timeouts),
and returns those that answer like an OpenAI-compatible API, with their models. A port where
something else answers (a web page, an error) is not listed. The whole scan takes about one
timeout however many ports it tries.

    for server in detect_local_servers():
        print(server.name, server.base_url, server.models)

No Qt here: the window runs this in a worker thread (``ui/firstrun.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from nocturne_desktop.core.ports import ModelError
from nocturne_desktop.llm.client import OpenAIClient, Timeouts, normalise_base_url

KNOWN_SERVERS: tuple[tuple[str, int], ...] = (
    ("LM Studio", 1234),
    ("Ollama", 11434),
    ("llama.cpp server", 8080),
    ("Jan", 1337),
)
"""(name, default port) of the local servers Nocturne looks for."""

DEFAULT_TIMEOUT = 1.5
"""Seconds per probe (connect and read); a local server that is up answers in milliseconds."""


@dataclass(frozen=True)
class LocalServer:
    """A server that answered: its usual name (by port), base URL and the models it lists."""

    name: str
    base_url: str
    models: tuple[str, ...]

    def describe(self) -> str:
        n = len(self.models)
        return f"{self.name} at {self.base_url} ({n} model{'' if n == 1 else 's'})"


@dataclass(frozen=True)
class ProbeResult:
    """One probe: ``server`` when it answered, otherwise ``error`` says why not."""

    name: str
    base_url: str
    server: LocalServer | None
    error: str = ""


def probe(base_url: str, name: str = "", *, timeout: float = DEFAULT_TIMEOUT,
          api_key: str | None = None) -> ProbeResult:
    """Ask one base URL for its models. Never raises for network or protocol trouble."""
    try:
        url = normalise_base_url(base_url)
    except ValueError as exc:
        return ProbeResult(name, base_url, None, str(exc))
    name = name or url
    t = Timeouts(connect=timeout, first_token=timeout, idle=timeout)
    try:
        client = OpenAIClient(url, api_key=api_key, timeouts=t)
    except ValueError as exc:
        return ProbeResult(name, url, None, str(exc))
    try:
        models = client.list_models()
    except ModelError as exc:
        return ProbeResult(name, url, None, str(exc))
    finally:
        client.close()
    return ProbeResult(name, url, LocalServer(name, url, tuple(models)))


def probe_all(
    candidates: Sequence[tuple[str, str]], *, timeout: float = DEFAULT_TIMEOUT
) -> list[ProbeResult]:
    """Probe every (name, base_url) concurrently; results in the order given."""
    if not candidates:
        return []
    with ThreadPoolExecutor(max_workers=len(candidates), thread_name_prefix="nocturne-detect") as pool:
        futures = [pool.submit(probe, url, name, timeout=timeout) for name, url in candidates]
        return [f.result() for f in futures]


def candidate_urls(
    servers: Sequence[tuple[str, int]] = KNOWN_SERVERS, host: str = "localhost"
) -> list[tuple[str, str]]:
    return [(name, f"http://{host}:{port}/v1") for name, port in servers]


def detect_local_servers(
    servers: Sequence[tuple[str, int]] = KNOWN_SERVERS,
    *,
    host: str = "localhost",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[LocalServer]:
    """The servers among ``servers`` (name, port) on ``host`` that answer ``GET /v1/models``."""
    results = probe_all(candidate_urls(servers, host), timeout=timeout)
    return [r.server for r in results if r.server is not None]
