"""``nocturne letta …`` and ``nocturne verify --letta URL`` against the real Letta server.

``nocturne verify --letta URL`` against the built-in engine is the built-in engine's run of
``tests/core/test_verify_real.py`` (one verify for both proofs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nocturne_desktop.cli import main
from nocturne_desktop.core.checks.verify import run_verify
from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import Agent, LettaClient, LettaNotFound
from nocturne_desktop.letta.mirror import LettaMirror
from tests.core.fakemodel import FakeModel
from tests.core.test_verify_correction import script
from tests.letta.conftest import values
from tests.letta.test_link import live_blocks
from tests.lettaserver import LettaServer

pytestmark = [pytest.mark.letta, pytest.mark.slow]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_link_status_and_sync_from_the_command_line(
    tmp_path: Path, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], capsys: pytest.CaptureFixture[str],
) -> None:
    agent = new_agent(human="The user's name is Maya.\nThe user lives in Lisbon.")
    folder = str(tmp_path / "memory")
    key = ("--api-key-file", str(letta_server.key_file))
    code, out, _ = run(capsys, "letta", "agents", "--url", letta_server.url, *key)
    assert code == 0 and agent.id in out

    code, out, err = run(capsys, "letta", "link", "--url", letta_server.url, "--agent", agent.id,
                         "--data-dir", folder, *key)
    assert code == 0, err
    assert f"to agent {agent.id}" in out and "changed in Letta (s0001): 2 added" in out
    code, out, _ = run(capsys, "letta", "status", "--data-dir", folder)
    assert code == 0 and "human: 2 lines" in out and out.rstrip().endswith("in sync")

    # a change in Letta, then a headless sleep: pulled before it, its commits pushed after
    letta.set_block(agent.id, "scratch", "The user went to PyData in Porto in August.")
    code, out, err = run(capsys, "sleep", "--rules-only", "--data-dir", folder)
    assert code == 0, err
    assert "letta: changed in Letta (s0002): 1 added" in out
    with Store(Path(folder) / "nocturne.db") as store:
        assert values(letta, agent.id) == live_blocks(store)

    code, out, _ = run(capsys, "letta", "sync", "--data-dir", folder)
    assert code == 0 and out.startswith("in sync, nothing to do")

    # linking a memory that holds facts to an agent that does: a side must be chosen
    other = str(tmp_path / "other")
    with Store(Path(other) / "nocturne.db") as store:
        store.add_fact("human", "The user drinks tea.", "preferences")
    code, _, err = run(capsys, "letta", "link", "--url", letta_server.url, "--agent", agent.id,
                       "--data-dir", other, *key)
    assert code == 1 and "--pull" in err and "--push" in err
    code, out, err = run(capsys, "letta", "link", "--url", letta_server.url, "--agent", agent.id,
                         "--data-dir", other, "--push", *key)
    assert code == 0, err
    assert values(letta, agent.id)["human"] == "The user drinks tea."


def test_over_the_limit_from_the_command_line_says_both_ways_out(
    tmp_path: Path, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], capsys: pytest.CaptureFixture[str],
) -> None:
    agent = new_agent()
    folder = tmp_path / "memory"
    with Store(folder / "nocturne.db") as store:
        for text, cat in (("The user is allergic to peanuts.", "identity"),
                          ("The user had toast for breakfast today.", "context"),
                          ("The user saw a heron by the river on Tuesday.", "context")):
            store.add_fact("human", text, cat)
    key = ("--api-key-file", str(letta_server.key_file))
    assert run(capsys, "letta", "link", "--url", letta_server.url, "--agent", agent.id,
               "--data-dir", str(folder), *key)[0] == 0
    human = letta.block(agent.id, "human")
    limit = len(human.value) + 5  # what it holds fits; one more fact will not
    letta.set_limit(human.id, limit)
    with Store(folder / "nocturne.db") as store:
        store.add_fact("human", "The user works as a nurse in Porto.", "identity")
    code, _, err = run(capsys, "letta", "sync", "--data-dir", str(folder))
    assert code == 1 and f"over the Letta agent's limit of {limit}" in err
    assert "--raise-limit human" in err and "--keep-salient human" in err
    assert letta.block(agent.id, "human").value == human.value  # never cut
    code, out, err = run(capsys, "letta", "sync", "--data-dir", str(folder), "--raise-limit", "human")
    assert code == 0, err
    assert "limit in Letta is now 1,000 characters" in out and "wrote human" in out
    code, out, _ = run(capsys, "letta", "status", "--data-dir", str(folder))
    assert code == 0 and "1,000 characters" in out


def test_verify_runs_the_whole_loop_with_the_live_state_in_letta(
    tmp_path: Path, letta_server: LettaServer, letta: LettaClient,
) -> None:
    mirror = LettaMirror(letta, base_url="http://127.0.0.1:9/v1", model="scripted")
    report = run_verify(FakeModel(responder=script), tmp_path / "v.db", say=lambda _: None,
                        mirror=mirror)
    checks = {c.name: c for c in report.checks}
    for when in ("after the sleep", "at the end"):
        check = checks[f"the Letta agent holds the live state {when}"]
        assert check.ok and check.kind == "integrity", check.detail
    assert report.integrity_ok, [c for c in report.checks if not c.ok]
    figures = report.figures["mirror"]
    assert figures["commitsSynced"] >= 10 and figures["failures"] == []
    assert any("the Letta agent before the sleep" in line for line in report.log)
    with pytest.raises(LettaNotFound):  # the agent made for the run is gone
        letta.get_agent(figures["agent"])
