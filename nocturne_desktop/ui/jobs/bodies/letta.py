"""The Letta link's job bodies (no Qt): a store-writing job kept in step with the agent, a sync,
a link, the server's agents, and the two ways out of a block over its limit.

:func:`linked` runs a job's own body inside a sync: one before it (the chat turn or the sleep
reads what the agent changed) and one after each of its commits (``LettaSync.attach``), all on
the job's own store, on the job's thread or in its worker process. A failed sync never fails
the body: it is logged and kept in the link state (the window says so and retries); after a
failure, the job's other syncs are skipped for :data:`QUIET_AFTER_ERROR_S`, so a server that is
gone costs one timeout, not one per commit.

Building an HTTP client loads the TLS stack holding the GIL (~0.1 s), which the window's GUI
thread would feel at every chat turn: idle Letta clients are kept per process (:data:`CLIENTS`)
and handed to one job at a time. The HTTP stack is imported only once a memory is linked: a
worker process running a sleep of a memory that is not linked never loads it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Version
from nocturne_desktop.letta.state import LinkState, load
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.pool import close_quietly

if TYPE_CHECKING:
    from nocturne_desktop.letta.client import Agent, LettaClient, LettaError
    from nocturne_desktop.letta.sync import LettaSync, LinkStatus, SyncReport

log = logging.getLogger("nocturne.letta")

IN_JOB_TIMEOUT = 10.0
"""Seconds one request of a sync inside a chat turn or a sleep may take (the turn waits)."""
SYNC_TIMEOUT = 30.0
"""Seconds one request of the window's own syncs may take (nobody waits for them)."""
QUIET_AFTER_ERROR_S = 30.0
"""After a failed sync, a job's own syncs are skipped this long (the window retries)."""


class LettaClients:
    """Idle Letta clients of this process, by server, key and timeout; each leased to one job
    at a time (never shared between threads)."""

    def __init__(self, keep: int = 2) -> None:
        self._idle: dict[tuple[str, str | None, float], list[LettaClient]] = {}
        self._keep = keep
        self._lock = threading.Lock()

    def lease(self, url: str, key: str | None, timeout: float) -> tuple[LettaClient, Callable[[], None]]:
        """A client and the function that gives it back."""
        spot = (url, key, timeout)
        with self._lock:
            idle = self._idle.get(spot)
            client = idle.pop() if idle else None
        if client is None:
            from nocturne_desktop.letta.client import LettaClient

            client = LettaClient(url, api_key=key, timeout=timeout)

        def give_back() -> None:
            with self._lock:
                idle = self._idle.setdefault(spot, [])
                if len(idle) < self._keep:
                    idle.append(client)
                    return
            close_quietly(client)

        return client, give_back

    def close(self) -> None:
        """Drop every idle client (the link was changed or removed)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for clients in idle.values():
            for c in clients:
                close_quietly(c)


CLIENTS = LettaClients()


def _client_for(state: LinkState, timeout: float) -> tuple[LettaClient, Callable[[], None]]:
    from nocturne_desktop.letta.client import read_key_file

    return CLIENTS.lease(state.url, read_key_file(state.key_file), timeout)


def _quiet(state: LinkState, quiet_s: float) -> bool:
    """Whether the last sync failed less than ``quiet_s`` ago (skip this job's syncs)."""
    return (state.last_error is not None and state.error_at is not None
            and time.time() - state.error_at < quiet_s)


def _sync_softly(sync: LettaSync) -> None:
    """One sync whose failure is logged, never raised (the body goes on)."""
    try:
        sync.sync_quietly()
    except Exception:  # a bug in a sync must not fail the person's chat turn or sleep
        log.exception("the Letta sync failed unexpectedly")


def _run(body: Callable[[BodyContext], Any], ctx: BodyContext) -> Generator[Any, None, Any]:
    result = body(ctx)
    if isinstance(result, Generator):
        result = yield from result
    return result


def linked(ctx: BodyContext, *, body: Callable[[BodyContext], Any],
           timeout: float = IN_JOB_TIMEOUT,
           quiet_s: float = QUIET_AFTER_ERROR_S) -> Generator[Any, None, Any]:
    """``body(ctx)`` with ``ctx.store`` kept in step with its Letta agent: a sync before it and
    after each of its commits that changed a fact. Yields what the body yields and returns what
    it returns (a plain body too). A memory that is not linked (any more) runs the body alone."""
    store = ctx.store
    try:
        state = load(store)
    except NocturneError as exc:  # an unreadable link state: the window's own sync says so
        log.warning("Letta sync skipped: %s", exc)
        state = None
    if state is None or _quiet(state, quiet_s):
        return (yield from _run(body, ctx))
    from nocturne_desktop.letta.client import LettaError
    from nocturne_desktop.letta.sync import LettaSync

    try:
        client, give_back = _client_for(state, timeout)
    except LettaError as exc:  # the key file is gone
        log.warning("Letta sync skipped: %s", exc)
        return (yield from _run(body, ctx))
    try:
        try:
            sync = LettaSync(store, client)
        except LettaError as exc:  # unlinked meanwhile
            log.warning("Letta sync skipped: %s", exc)
            return (yield from _run(body, ctx))
        _sync_softly(sync)

        def after_commit() -> None:
            if not _quiet(sync.state, quiet_s):
                _sync_softly(sync)

        detach = sync.attach(on_commit=after_commit)
        try:
            return (yield from _run(body, ctx))
        finally:
            detach()
    finally:
        give_back()


# ------------------------------------------------------------------------ the window's own jobs


@dataclass(frozen=True)
class SyncOutcome:
    """What one of the window's syncs made of it."""

    report: SyncReport | None
    """The report (also when a block was over its limit), or None when it failed."""
    error: LettaError | None
    """Why it failed (or the over-limit error, whose report is set too), or None."""
    status: LinkStatus | None
    """The link as it stands after it (None: not linked any more)."""
    version: Version | None = None
    """The version a way out of an over-limit block made (keep the most salient lines)."""


def _sync(store: Store, sync: LettaSync, version: Version | None = None) -> SyncOutcome:
    from nocturne_desktop.letta.client import LettaError
    from nocturne_desktop.letta.sync import SyncReport, link_status

    error: LettaError | None = None
    try:
        sync.sync()
    except LettaError as exc:
        error = exc
    report = sync.last if isinstance(sync.last, SyncReport) else None
    return SyncOutcome(report, error, link_status(store), version)


def _with_sync(store: Store, timeout: float,
               first: Callable[[LettaSync], Version | None] | None = None) -> SyncOutcome:
    """``first(sync)`` (a way out of an over-limit block), then a sync; a failure of either is
    the outcome's error."""
    from nocturne_desktop.letta.client import LettaError
    from nocturne_desktop.letta.sync import LettaSync, link_status

    state = load(store)
    if state is None:
        return SyncOutcome(None, None, None)
    try:
        client, give_back = _client_for(state, timeout)
    except LettaError as exc:  # the key file
        return SyncOutcome(None, exc, link_status(store))
    try:
        sync = LettaSync(store, client)
        version = first(sync) if first is not None else None
    except LettaError as exc:
        give_back()
        return SyncOutcome(None, exc, link_status(store))
    try:
        return _sync(store, sync, version)
    finally:
        give_back()


def sync_body(ctx: BodyContext, *, timeout: float = SYNC_TIMEOUT) -> SyncOutcome:
    """Pull, then push; the outcome whatever happened (a failure is an outcome, not raised)."""
    return _with_sync(ctx.store, timeout)


def status_body(ctx: BodyContext) -> LinkStatus | None:
    """The link's state without a request (O(live facts): off the GUI thread)."""
    from nocturne_desktop.letta.sync import link_status

    return link_status(ctx.store)


def raise_limit_body(ctx: BodyContext, *, label: str, limit: int | None = None,
                     timeout: float = SYNC_TIMEOUT) -> SyncOutcome:
    """Raise the block's limit in Letta (to ``limit``, or what it needs), then sync."""

    def raise_it(sync: LettaSync) -> None:
        sync.raise_limit(label, limit)

    return _with_sync(ctx.store, timeout, raise_it)


def keep_salient_body(ctx: BodyContext, *, label: str,
                      timeout: float = SYNC_TIMEOUT) -> SyncOutcome:
    """Forget the block's least salient facts until it fits (one version), then sync."""
    return _with_sync(ctx.store, timeout, lambda sync: sync.keep_salient(label))


def link_body(ctx: BodyContext, *, url: str, agent: str, key_file: str | None,
              prefer: Literal["pull", "push"] | None = None,
              timeout: float = SYNC_TIMEOUT) -> SyncOutcome:
    """Link this memory to ``agent`` and sync once. :class:`~nocturne_desktop.letta.sync.
    ChooseSide` (both hold something, ``prefer`` not given) and the other errors of the link
    itself are raised: nothing was linked. A first sync that fails keeps the link (outcome)."""
    from nocturne_desktop.letta.client import read_key_file
    from nocturne_desktop.letta.sync import connect

    key = read_key_file(key_file)
    CLIENTS.close()  # clients of an earlier link
    client, give_back = CLIENTS.lease(url, key, timeout)
    try:
        sync = connect(ctx.store, url, agent, api_key_file=key_file, prefer=prefer, client=client)
        return _sync(ctx.store, sync)
    finally:
        give_back()


def agents_body(_ctx: BodyContext, *, url: str, key: str | None,
                timeout: float = SYNC_TIMEOUT) -> list[Agent]:
    """The server's agents (``GET /v1/agents``), with their blocks."""
    from nocturne_desktop.letta.client import LettaClient

    with LettaClient(url, api_key=key, timeout=timeout) as client:
        return client.list_agents()
