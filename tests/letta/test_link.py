"""The link against the real Letta server: link, pull, push, both sides changed, a secret typed
into a block, and undo reaching the agent's blocks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.lineage import lineage, render
from nocturne_desktop.core.mutations import DecidedBy
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import SleepEventKind, run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.exchange import import_into_scratch, read_export, write_export
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.letta.client import Agent, LettaAuthError, LettaClient, LettaNotFound
from nocturne_desktop.letta.sync import (
    LABELS,
    PULL_LABEL,
    ChooseSide,
    LettaSync,
    link,
    link_status,
    rendered,
)
from tests.core.sleepkit import NOW, SEED
from tests.letta.conftest import values
from tests.lettaserver import LettaServer

pytestmark = [pytest.mark.letta, pytest.mark.slow]

MAYA = {"persona": "I am a patient assistant who keeps notes.",
        "human": "The user's name is Maya.\nThe user lives in Lisbon.\nShe keeps a bearded "
                 "dragon called Saffron."}


def live_blocks(store: Store) -> dict[str, str]:
    """What the agent's blocks must hold: the live facts, one per line."""
    return {label: "\n".join(t for _, t in lines)
            for label, lines in rendered(store.active_facts()).items()}


def linked(store: Store, server: LettaServer, agent: Agent, **kw: object) -> LettaSync:
    sync, _ = link(store, server.url, agent.id, api_key_file=server.key_file, **kw)
    return sync


def test_link_of_an_empty_folder_pulls_the_agents_blocks_as_changes_in_letta(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    sync, report = link(store, letta_server.url, agent.id, api_key_file=letta_server.key_file)
    with sync:
        facts = store.active_facts()
        assert [(f.block, f.text) for f in facts] == [
            ("persona", "I am a patient assistant who keeps notes."),
            ("human", "The user's name is Maya."), ("human", "The user lives in Lisbon."),
            ("human", "She keeps a bearded dragon called Saffron.")]
        assert report.pull.version is not None and report.pull.version.label == PULL_LABEL
        rows = [r.mutation for r in store.mutations()]
        assert {(m.pass_name, m.kind, m.decided_by, m.accepted) for m in rows} == {
            ("letta", "add", DecidedBy.LETTA, True)}
        # the two labels the agent lacked were made and attached, and no id is in any block
        blocks = values(letta, agent.id)
        assert set(blocks) == set(LABELS) and blocks["episodes"] == blocks["scratch"] == ""
        assert blocks == live_blocks(store) and "m_" not in "".join(blocks.values())
        # the facts are audited and traced like the person's own, to the change in Letta
        checked, problems = audit.reaudit_hand(store)
        assert checked == 4 and problems == []
        trace = audit.traceability(facts, [], audit.hand_written(store))
        assert trace.traceable == 4 and all("changed in Letta on" in s for _, s in trace.by_you)
        assert "letta" in render(lineage(store, facts[1].id))
        assert link_status(store) is not None and link_status(store).ok


def test_a_memory_and_an_agent_that_both_hold_facts_need_a_side_chosen(
    tmp_path: Path, store: Store, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    store.add_fact("human", "The user works best in the morning.", "preferences")
    with pytest.raises(ChooseSide, match=r"say which side wins, --pull .* or --push") as err:
        linked(store, letta_server, agent)
    assert (err.value.facts, err.value.lines) == (1, 4)
    assert link_status(store) is None and len(store.versions()) == 1
    assert values(letta, agent.id)["human"] == MAYA["human"]

    # --push: this memory wins, the agent's blocks are overwritten, no version is made
    with linked(store, letta_server, agent, prefer="push"):
        assert values(letta, agent.id) == live_blocks(store)
        assert len(store.versions()) == 1

    # --pull into another memory: the agent wins, what differs is one version changed in Letta
    with Store(tmp_path / "other" / "nocturne.db") as other:
        other.add_fact("human", "The user lives in Lisbon.", "identity")
        other.add_fact("human", "The user has a cat.", "context")
        letta.set_block(agent.id, "human", "The user lives in Lisbon.\nThe user drinks tea.")
        with linked(other, letta_server, agent, prefer="pull"):
            last = other.versions()[-1]
            assert last.label == PULL_LABEL
            rows = other.mutations(seq_range=(last.seq - 1, last.seq))
            assert rows and {r.mutation.decided_by for r in rows} == {"letta"}
            assert {(r.mutation.kind, r.mutation.item_id) for r in rows} == {
                ("forget", "m_2"), ("add", "m_3")}
            assert [f.text for f in other.active_facts() if f.block == "human"] == [
                "The user lives in Lisbon.", "The user drinks tea."]


def test_every_kind_of_commit_reaches_the_agents_blocks(
    tmp_path: Path, store: Store, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent()
    with linked(store, letta_server, agent) as sync:
        sync.attach()

        def in_step(what: str) -> None:
            assert values(letta, agent.id) == live_blocks(store), what
            assert not isinstance(sync.last, Exception), (what, sync.last)

        fact, _ = store.add_fact("human", "I'm vegetarian.", "preferences")
        in_step("a hand-written fact")
        store.edit(fact.id, text="The user has been vegetarian since 2019.")
        in_step("an edit")
        store.append("scratch", FactDraft("The user went to PyData in Porto in August.", "event"))
        in_step("the encoder's append")
        store.forget_now(fact.id)
        in_step("forget now")
        store.undo()
        in_step("undo")
        store.restore(store.versions()[1].seq)
        in_step("a restore")
        with Store(tmp_path / "export-src" / "nocturne.db") as src:
            src.add_fact("human", "The user plays the cello on Sundays.", "preferences")
            write_export(src, tmp_path / "export.json")
        import_into_scratch(store, read_export(tmp_path / "export.json"), name="export.json")
        in_step("an import into scratch")
        events = list(run_sleep(store, None, RetentionPolicy(), now=store.now()))
        assert events[-1].kind is SleepEventKind.DONE
        in_step("a sleep")
        assert all(v.label != PULL_LABEL for v in store.versions())  # nothing came from Letta


def test_a_change_made_in_letta_is_one_audited_version_that_undo_takes_back(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    with linked(store, letta_server, agent) as sync:
        sync.attach()
        before = values(letta, agent.id)
        # the agent rewrites its human block: a correction in passing, a new fact, a removal
        letta.set_block(agent.id, "human", "The user's name is Maya.\nThe user lives in Porto "
                        "now.\nThe user doesn't drink coffee.")
        report = sync.sync()
        version = report.pull.version
        assert version is not None and version.label == PULL_LABEL
        assert (report.pull.edited, report.pull.added, report.pull.removed) == (
            ["m_3"], ["m_5"], ["m_4"])
        rows = store.mutations(seq_range=(version.seq - 1, version.seq))
        assert {(r.mutation.kind, r.mutation.decided_by) for r in rows} == {
            ("edit", "letta"), ("add", "letta"), ("forget", "letta")}
        assert store.get("m_3").text == "The user lives in Porto now."
        assert not store.get("m_4").active
        assert audit.reaudit_hand(store)[1] == []
        assert store.diff(version.seq - 1, version.seq).changed  # the diff shows it
        # one undo takes Letta's change back, in memory and in the agent's blocks
        store.undo()
        assert values(letta, agent.id) == before == live_blocks(store)
        assert store.get("m_4").active and store.get("m_3").text == "The user lives in Lisbon."


def test_both_sides_changed_pull_first_as_its_own_version_then_push(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    with linked(store, letta_server, agent) as sync:
        mine = store.edit("m_2", text="The user's name is Maya Costa.")  # not attached: pending
        assert link_status(store).pending == ("human",)
        letta.set_block(agent.id, "persona", "I am a patient assistant who keeps short notes.")
        report = sync.sync()
        theirs = report.pull.version
        assert theirs is not None and theirs.seq == mine.seq + 1
        rows = store.mutations(seq_range=(theirs.seq - 1, theirs.seq))
        assert [r.mutation.item_id for r in rows] == ["m_1"]
        assert report.push.written == ["human"]
        assert values(letta, agent.id) == live_blocks(store)
        assert values(letta, agent.id)["persona"] == "I am a patient assistant who keeps short notes."
        assert values(letta, agent.id)["human"].startswith("The user's name is Maya Costa.")
        # either state is one click away: undo Letta's, then mine
        store.undo()
        sync.sync()
        assert values(letta, agent.id)["persona"] == MAYA["persona"]
        assert values(letta, agent.id)["human"].startswith("The user's name is Maya Costa.")
        store.undo()
        sync.sync()
        assert values(letta, agent.id) == {**values(letta, agent.id), **MAYA}


def test_two_syncs_of_one_memory_record_a_change_in_letta_once(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    """The window's worker and a command in a terminal, each with its own connection."""
    agent = new_agent(**MAYA)
    with linked(store, letta_server, agent) as first, Store(store.path) as other, \
            letta_server.client() as client, LettaSync(other, client) as second:
        letta.set_block(agent.id, "human", MAYA["human"] + "\nThe user drinks tea.")
        assert first.sync().pull.added == ["m_5"]
        assert second.sync().pull.version is None  # it reads what the first recorded
        assert [f.text for f in other.active_facts()].count("The user drinks tea.") == 1
        store.add_fact("scratch", "The user went to PyData in Porto in August.", "event")
        assert second.sync().push.written == ["scratch"]
        assert first.sync().push.written == []


def test_a_secret_typed_into_a_block_is_refused_at_pull_and_taken_out_of_the_block(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    with linked(store, letta_server, agent) as sync:
        n_rows = len(store.mutations())
        typed = MAYA["human"] + "\nMy bank password is Tr0ub4dor&3 so remember it."
        letta.set_block(agent.id, "human", typed)
        # and an edit that puts an API key into an existing line
        letta.set_block(agent.id, "persona", "I am a patient assistant who keeps notes; key "
                        "sk-proj-4f9XyQ2mN8vB7cD1eF6gH3jK5lP0")
        report = sync.sync()
        assert report.pull.version is None  # nothing was accepted: no version
        assert len(report.pull.refused) == 2
        assert any("looks like a password" in r and "taken out of the human block" in r
                   for r in report.pull.refused)
        assert any("looks like an API key" in r and "m_1's text back" in r for r in report.pull.refused)
        rows = store.mutations()[n_rows:]
        assert [(r.mutation.kind, r.mutation.accepted, r.mutation.decided_by) for r in rows] == [
            ("edit", False, "letta"), ("add", False, "letta")]
        dumped = repr(store.dump())
        assert "Tr0ub4dor" not in dumped and "sk-proj" not in dumped  # not even in the refusal
        assert "Tr0ub4dor" not in (store.get_link_state("letta") or "")  # nor in the link's notes
        assert all(r.mutation.refs.get("proposal", {}).get("chars") for r in rows)
        # the agent no longer reads them: the block is written back to memory's facts
        assert values(letta, agent.id) == live_blocks(store)
        assert "Tr0ub4dor" not in values(letta, agent.id)["human"]
        assert sync.sync().pull.refused == []  # refused once, not at every sync
    for name in ("nocturne.db", "nocturne.db-wal"):
        raw = (store.path.parent / name).read_bytes() if (store.path.parent / name).exists() else b""
        assert b"Tr0ub4dor" not in raw and b"sk-proj" not in raw  # no byte of them on disk


def test_a_heading_is_refused_with_its_text_kept_in_the_refusal(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(human="About the user:\nThe user's name is Maya.")
    with linked(store, letta_server, agent):
        refusal = next(r for r in store.mutations() if not r.mutation.accepted)
        assert "statement guard" in (refusal.mutation.rejection_reason or "")
        assert refusal.mutation.refs["proposal"]["text"] == "About the user:"
        assert values(letta, agent.id)["human"] == "The user's name is Maya."


def test_undo_of_a_sleep_reaches_the_agents_blocks(
    store: Store, letta_server: LettaServer, letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    for i, (block, cat, text, age) in enumerate(SEED):
        store.append(block, FactDraft(text, cat, i + 1, NOW - age * 86400.0))
    agent = new_agent()
    with linked(store, letta_server, agent) as sync:
        sync.attach()
        before = values(letta, agent.id)
        assert before == live_blocks(store)
        events = list(run_sleep(store, None, RetentionPolicy(), now=NOW))
        assert events[-1].kind is SleepEventKind.DONE
        slept = values(letta, agent.id)
        assert slept != before and slept == live_blocks(store)
        store.undo()
        assert values(letta, agent.id) == before


def test_a_wrong_key_or_an_unknown_agent_is_said_and_nothing_is_written(
    tmp_path: Path, store: Store, letta_server: LettaServer, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    wrong = tmp_path / "wrong.key"
    wrong.write_text("not-the-key\n")
    with pytest.raises(LettaAuthError, match="--api-key-file"):
        link(store, letta_server.url, agent.id, api_key_file=wrong)
    with pytest.raises(LettaAuthError, match="--api-key-file"):
        link(store, letta_server.url, agent.id)
    with pytest.raises(LettaNotFound, match="not found"):
        link(store, letta_server.url, "agent-00000000-0000-4000-8000-000000000000",
             api_key_file=letta_server.key_file)
    with pytest.raises(LettaAuthError, match="cannot read the Letta key file"):
        link(store, letta_server.url, agent.id, api_key_file=tmp_path / "missing.key")
    assert link_status(store) is None and store.is_empty()
