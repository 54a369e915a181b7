"""What goes wrong between a memory and its Letta agent: a block over its limit, the server
gone in the middle of a sync, the server stopped and started again. Nothing is cut, nothing is
lost, and the next sync writes what was pending."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.mutations import DecidedBy
from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import Agent, LettaClient, LettaUnreachable
from nocturne_desktop.letta.lines import render_line
from nocturne_desktop.letta.sync import LettaOverLimit, link, link_status
from tests.letta.conftest import values
from tests.letta.gate import Gate
from tests.letta.test_link import linked, live_blocks
from tests.lettaserver import LettaServer

pytestmark = [pytest.mark.letta, pytest.mark.slow]

NEW_FACTS = [
    ("The user is allergic to peanuts.", "identity"),
    ("The user works as a nurse in Porto.", "identity"),
    ("The user had toast for breakfast today.", "context"),
    ("The user saw a heron by the river on Tuesday.", "context"),
    ("The user's train was late this morning.", "context"),
    ("The user prefers green tea to coffee.", "preferences"),
]


def test_a_block_over_its_limit_is_never_cut_and_both_ways_out_work(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(human="The user's name is Maya.")
    with linked(store, letta_server, agent) as sync:
        block_id = sync.state.block("human").id
        assert block_id is not None
        letta.set_limit(block_id, 200)
        added = [store.add_fact("human", text, cat)[0] for text, cat in NEW_FACTS]
        need = sync.needed("human")
        assert need > 200
        with pytest.raises(LettaOverLimit) as err:
            sync.sync()
        message = str(err.value)
        assert f"the human block would hold {need:,} characters" in message
        assert "limit of 200" in message and "nothing was cut" in message
        assert "--raise-limit human" in message and "--keep-salient human" in message
        assert values(letta, agent.id)["human"] == "The user's name is Maya."  # not truncated
        status = link_status(store)
        assert status is not None and status.pending == ("human",) and "human" in status.over_limit

        # way out 1: keep the most salient lines (a pinned fact always stays)
        store.pin(added[2].id)
        kept_version = sync.keep_salient("human")
        assert kept_version is not None and kept_version.label == "keep-salient:human"
        gone = [f for f in added if not store.get(f.id).active]  # type: ignore[union-attr]
        assert gone and all(f.category == "context" for f in gone) and added[2] not in gone
        rows = store.mutations(seq_range=(kept_version.seq - 1, kept_version.seq))
        assert {(r.mutation.kind, r.mutation.decided_by) for r in rows} == {("forget", DecidedBy.YOU)}
        assert "limit of 200 characters" in rows[0].mutation.reason
        assert audit.reaudit_hand(store)[1] == []
        sync.sync()
        human = values(letta, agent.id)["human"]
        assert len(human) <= 200 and human == live_blocks(store)["human"]
        assert render_line(added[2].text) in human.splitlines()

        # undo brings them back: over the limit again, and said again, still not cut
        store.undo()
        with pytest.raises(LettaOverLimit):
            sync.sync()
        assert values(letta, agent.id)["human"] == human

        # way out 2: raise the limit
        new_limit = sync.raise_limit("human")
        assert new_limit >= need and new_limit % 1000 == 0
        sync.sync()
        assert values(letta, agent.id) == live_blocks(store)
        assert letta.block(agent.id, "human").limit == new_limit
        assert link_status(store).ok  # type: ignore[union-attr]


def test_the_server_gone_mid_sync_loses_nothing_and_the_next_sync_writes_it(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent()
    with Gate(letta_server.url) as gate:
        sync, _ = link(store, gate.url, agent.id, api_key_file=letta_server.key_file)
        with sync:
            sync.attach()
            lisbon, _ = store.add_fact("human", "The user lives in Lisbon.", "identity")
            assert values(letta, agent.id) == live_blocks(store)
            before = values(letta, agent.id)

            # a commit that rewrites two blocks: the read and the first write go through, then
            # the server is gone before the second write
            gate.fail_after(2)
            moved = store.edit(lisbon.id, block="persona")
            assert moved.label == f"edit:{lisbon.id}"  # the writer's commit is untouched
            assert isinstance(sync.last, LettaUnreachable)
            assert "cannot be reached" in str(sync.last) and "nothing was lost" in str(sync.last)
            half = values(letta, agent.id)
            assert half["persona"] == "The user lives in Lisbon." and half["human"] == before["human"]
            status = link_status(store)
            assert status is not None and status.pending == ("human",)
            assert status.last_error is not None and "cannot be reached" in status.last_error

            # while it stays gone, every commit still lands in memory, each sync fails quietly
            gate.fail_after(0)
            store.add_fact("human", "The user keeps a bearded dragon called Saffron.", "preferences")
            store.add_fact("scratch", "The user went to PyData in Porto in August.", "event")
            assert [f.text for f in store.active_facts()][-2:] == [
                "The user keeps a bearded dragon called Saffron.",
                "The user went to PyData in Porto in August."]
            assert set(link_status(store).pending) == {"human", "scratch"}  # type: ignore[union-attr]

            # back: the next sync writes everything that was pending
            gate.open()
            report = sync.sync()
            assert set(report.push.written) == {"human", "scratch"}
            assert values(letta, agent.id) == live_blocks(store)
            assert link_status(store).ok and gate.dropped >= 3  # type: ignore[union-attr]


def test_a_server_stopped_and_started_again_gets_what_was_written_meanwhile(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    """The session's own server is stopped (SIGTERM) and started again on its port and HOME."""
    agent = new_agent()
    server = letta_server.server
    with linked(store, letta_server, agent) as sync:
        sync.attach()
        store.add_fact("human", "The user lives in Lisbon.", "identity")
        assert values(letta, agent.id) == live_blocks(store)
        server.stop()
        try:
            fact, _ = store.add_fact("human", "The user drinks green tea.", "preferences")
            store.edit(fact.id, text="The user drinks green tea every morning.")
            assert isinstance(sync.last, LettaUnreachable)
            assert link_status(store).pending == ("human",)  # type: ignore[union-attr]
        finally:
            server.start()  # the same port and HOME: the same server, back
        sync.sync()
        assert values(letta, agent.id) == live_blocks(store)
        assert values(letta, agent.id)["human"].endswith("green tea every morning.")
