"""A small REST client for a Letta server (0.11.x), over the project's own httpx.

Only what the link needs: the agents (list, get; create and delete for ``verify`` and the
tests), an agent's core-memory blocks (list, get and patch by label), a block of its own
(create, attach to the agent, patch its ``limit``). Every failure becomes a :class:`LettaError`
whose message says what happened and what to do: :class:`LettaUnreachable` (nothing answers, or
too late: the caller keeps what it meant to write and tries again), :class:`LettaAuthError`
(the key), :class:`LettaNotFound` (an agent or label that is not there) and
:class:`LettaRefused` (the server said no, with its own words).

The key, when there is one, is sent as ``Authorization: Bearer`` (what a server started with
``--secure`` checks); it is never logged nor kept in an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from nocturne_desktop.core.errors import NocturneError

DEFAULT_TIMEOUT = 30.0
"""Seconds one request may take (an agent's first request can be slow on a loaded machine)."""


class LettaError(NocturneError):
    """Talking to the Letta server failed; ``str()`` says why and what to do."""


class LettaUnreachable(LettaError):
    """Nothing answered at the URL (refused, reset, timed out): try again later."""


class LettaAuthError(LettaError):
    """The server wants a key, or refused the one given."""


class LettaNotFound(LettaError):
    """The agent (or a block label) is not on the server."""


class LettaRefused(LettaError):
    """The server answered with an error of its own."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Block:
    """One memory block as the server holds it."""

    id: str
    label: str
    value: str
    limit: int

    @classmethod
    def of(cls, data: Any) -> Block:
        if not isinstance(data, dict):
            raise LettaRefused(f"the server sent a block that is not an object: {str(data)[:120]!r}")
        try:
            value = data.get("value") or ""
            limit = data.get("limit")
            return cls(str(data["id"]), str(data.get("label") or ""), str(value),
                       int(limit) if isinstance(limit, int) else 0)
        except (KeyError, TypeError, ValueError) as exc:
            raise LettaRefused(f"the server sent a block without {exc}") from None


@dataclass(frozen=True, slots=True)
class Agent:
    id: str
    name: str
    blocks: tuple[Block, ...] = ()

    @classmethod
    def of(cls, data: Any) -> Agent:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise LettaRefused(f"the server sent an agent without an id: {str(data)[:120]!r}")
        memory = data.get("memory")
        blocks = memory.get("blocks") if isinstance(memory, dict) else None
        return cls(data["id"], str(data.get("name") or ""),
                   tuple(Block.of(b) for b in blocks) if isinstance(blocks, list) else ())


def read_key_file(path: str | Path | None) -> str | None:
    """The key in ``path`` (its first line, stripped), or None without a path. A file that
    cannot be read or is empty is a :class:`LettaAuthError` naming the file, never its text."""
    if path is None:
        return None
    try:
        key = Path(path).read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LettaAuthError(f"cannot read the Letta key file {path}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    if not key or not key[0].strip():
        raise LettaAuthError(f"the Letta key file {path} is empty")
    return key[0].strip()


def normalise_url(url: str) -> str:
    """``http(s)://host:port`` without a trailing ``/`` or ``/v1`` (the API's prefix is ours)."""
    text = url.strip().rstrip("/") if isinstance(url, str) else ""
    if not text:
        raise LettaError("the Letta server URL is empty")
    if "://" not in text:
        text = "http://" + text
    if not text.startswith(("http://", "https://")):
        raise LettaError(f"the Letta server URL must start with http:// or https://, not {url!r}")
    return text.removesuffix("/v1")


NO_ENDPOINT = "http://127.0.0.1:9/v1"
"""An endpoint where nothing answers (the discard port): for an agent only the link talks to."""


def model_settings(base_url: str | None = None, model: str = "",
                   context_window: int = 4096) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``llm_config`` and ``embedding_config`` a new agent needs: an OpenAI-compatible
    endpoint (the one Nocturne chats with, or :data:`NO_ENDPOINT`). Letta checks their shape
    when the agent is made, not whether anything answers there."""
    endpoint = (base_url or NO_ENDPOINT).rstrip("/")
    llm = {"model": model or "local", "model_endpoint_type": "openai",
           "model_endpoint": endpoint, "context_window": int(context_window)}
    embedding = {"embedding_endpoint_type": "openai", "embedding_endpoint": endpoint,
                 "embedding_model": model or "local", "embedding_dim": 8}
    return llm, embedding


class LettaClient:
    """One server, one httpx connection pool; a context manager. Not shared across threads."""

    def __init__(self, url: str, *, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None) -> None:
        self.url = normalise_url(url)
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(base_url=self.url + "/v1", headers=headers,
                                  timeout=httpx.Timeout(timeout, connect=min(5.0, timeout)),
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LettaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _call(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        try:
            r = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise LettaUnreachable(f"the Letta server at {self.url} did not answer in time "
                                   f"({what}); nothing was lost, the sync is tried again") from None
        except httpx.TransportError as exc:
            raise LettaUnreachable(f"the Letta server at {self.url} cannot be reached ({what}: "
                                   f"{_transport_words(exc)}); nothing was lost, the sync is "
                                   "tried again when it answers") from None
        if r.status_code >= 400:
            raise _status_error(r, self.url, what)
        if not r.content:
            return None
        try:
            return r.json()
        except ValueError:
            raise LettaRefused(f"the Letta server at {self.url} sent something that is not JSON "
                               f"({what}): {r.text[:120]!r}", r.status_code) from None

    # ------------------------------------------------------------------ agents

    def health(self) -> bool:
        """Whether ``/v1/health/`` answers (never raises)."""
        try:
            return self._http.get("/health/").status_code == 200
        except httpx.HTTPError:
            return False

    def list_agents(self, *, limit: int = 100) -> list[Agent]:
        data = self._call("GET", "/agents/", "listing the agents",
                          params={"limit": limit, "include_relationships": "memory"})
        return [Agent.of(a) for a in (data if isinstance(data, list) else [])]

    def get_agent(self, agent_id: str) -> Agent:
        return Agent.of(self._call("GET", f"/agents/{agent_id}", f"reading agent {agent_id}"))

    def create_agent(self, name: str, *, blocks: dict[str, str] | None = None,
                     llm: dict[str, Any] | None = None,
                     embedding: dict[str, Any] | None = None) -> Agent:
        """A new agent with ``blocks`` (label → value) and no tools; its model settings
        (default :func:`model_settings`) may point at an endpoint that is not running: the
        link never asks the agent to think."""
        if llm is None or embedding is None:
            default_llm, default_embedding = model_settings()
            llm, embedding = llm or default_llm, embedding or default_embedding
        body = {"name": name, "llm_config": llm, "embedding_config": embedding,
                "include_base_tools": False,
                "memory_blocks": [{"label": k, "value": v} for k, v in (blocks or {}).items()]}
        return Agent.of(self._call("POST", "/agents/", f"creating agent {name!r}", json=body))

    def delete_agent(self, agent_id: str) -> None:
        self._call("DELETE", f"/agents/{agent_id}", f"deleting agent {agent_id}")

    # ------------------------------------------------------------------ blocks

    def blocks(self, agent_id: str) -> list[Block]:
        """The agent's core-memory blocks."""
        data = self._call("GET", f"/agents/{agent_id}/core-memory/blocks",
                          f"reading agent {agent_id}'s memory blocks")
        return [Block.of(b) for b in (data if isinstance(data, list) else [])]

    def block(self, agent_id: str, label: str) -> Block:
        return Block.of(self._call("GET", f"/agents/{agent_id}/core-memory/blocks/{label}",
                                   f"reading the {label} block"))

    def set_block(self, agent_id: str, label: str, value: str) -> Block:
        """Write the agent's ``label`` block (Letta refuses a value over the block's limit)."""
        return Block.of(self._call("PATCH", f"/agents/{agent_id}/core-memory/blocks/{label}",
                                   f"writing the {label} block", json={"value": value}))

    def create_block(self, label: str, value: str = "", *, limit: int | None = None) -> Block:
        body: dict[str, Any] = {"label": label, "value": value}
        if limit is not None:
            body["limit"] = limit
        return Block.of(self._call("POST", "/blocks/", f"creating a {label} block", json=body))

    def attach_block(self, agent_id: str, block_id: str) -> None:
        self._call("PATCH", f"/agents/{agent_id}/core-memory/blocks/attach/{block_id}",
                   f"attaching block {block_id} to agent {agent_id}")

    def set_limit(self, block_id: str, limit: int) -> Block:
        """Raise (or lower) a block's character limit."""
        return Block.of(self._call("PATCH", f"/blocks/{block_id}", f"setting block {block_id}'s "
                                   "limit", json={"limit": int(limit)}))


def _transport_words(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or no route"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection closed mid-answer"
    return type(exc).__name__


def _detail(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return r.text[:200].strip()
    detail = data.get("detail") if isinstance(data, dict) else data
    text = detail if isinstance(detail, str) else str(detail)
    return text[:300]


def _status_error(r: httpx.Response, url: str, what: str) -> LettaError:
    detail = _detail(r)
    if r.status_code in (401, 403):
        return LettaAuthError(f"the Letta server at {url} refused the request ({what}): "
                              f"HTTP {r.status_code}; give its key with --api-key-file "
                              "(a server started with --secure prints it)")
    if r.status_code == 404:
        return LettaNotFound(f"not found on the Letta server at {url} ({what}): {detail}")
    if r.status_code >= 500:
        return LettaRefused(f"the Letta server at {url} failed ({what}): HTTP {r.status_code} "
                            f"{detail}", r.status_code)
    return LettaRefused(f"the Letta server at {url} refused it ({what}): HTTP {r.status_code} "
                        f"{detail}", r.status_code)
