"""The window's side of the Letta link against the real Letta server: Settings links, asks which
side wins and unlinks; a chat turn, a sleep and a change by hand sync before and after, off the
GUI thread; the server going away shows one sentence while the window stays usable and retries;
a block over its limit is the person's choice."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.letta.client import Agent, LettaClient
from nocturne_desktop.letta.state import load
from nocturne_desktop.letta.sync import PULL_LABEL, ChooseSide, link_status
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.letta import KEY_FILENAME, LettaLink
from nocturne_desktop.ui.lettadialogs import OverLimitDialog
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.fakeserver import FakeLLM, Reply, Request
from tests.letta.conftest import values
from tests.letta.gate import Gate
from tests.letta.test_link import MAYA, live_blocks
from tests.lettaserver import LettaServer
from tests.ui.conftest import seed_store

pytestmark = [pytest.mark.letta, pytest.mark.slow, pytest.mark.timeout(300)]


def synced(qtbot: Any, link: LettaLink, act: Callable[[], object], timeout: int = 60_000) -> Any:
    """``act()``, then the outcome of the window's next sync (or link)."""
    with qtbot.waitSignal(link.synced, timeout=timeout) as blocker:
        act()
    qtbot.waitUntil(lambda: not link.running, timeout=timeout)
    return blocker.args[0]


def settings_dialog(win: Any) -> SettingsDialog:
    dlg = SettingsDialog(win.session.settings, win.session.api_key, {}, win)
    assert dlg.memory_home is not None
    return dlg


def choose_agent(qtbot: Any, dlg: SettingsDialog, server: LettaServer, agent: Agent, *,
                 listed: bool = True) -> None:
    """Settings → Memory lives in → A Letta agent: its dialog opens; the URL and key typed, the
    agent chosen from the listed ones (or its id typed), OK."""
    home = dlg.memory_home
    assert home is not None and home.here.isChecked()
    home.letta.click()
    chooser = home.agent_dialog
    assert chooser is not None and chooser.isVisible()
    chooser.url.setText(server.url)
    chooser.key.setText(server.key)
    if listed:
        chooser.list_agents()  # GET /v1/agents in a job
        qtbot.waitUntil(lambda: chooser.agent.findData(agent.id) >= 0, timeout=60_000)
        assert chooser.select_agent(agent.id)
    else:
        chooser.agent.setEditText(agent.id)
    assert chooser.chosen_agent() == agent.id
    chooser.accept()
    assert home.letta.isChecked() and home.choice == (server.url, agent.id, server.key)
    assert "when you press OK" in home.message.text()


def link_from_settings(qtbot: Any, win: Any, server: LettaServer, agent: Agent) -> Any:
    """The agent chosen in Settings, Settings' OK; the outcome of the link's first sync."""
    dlg = settings_dialog(win)
    choose_agent(qtbot, dlg, server, agent)
    outcome = synced(qtbot, win.letta, dlg.accept)
    dlg.deleteLater()
    return outcome


def test_settings_links_an_empty_memory_to_an_agent_listed_from_the_server(
    qtbot: Any, make_window: Any, tmp_folders: dict[str, Path], letta_server: LettaServer,
    letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    win = make_window()
    assert not win.letta.mark.isVisible() and win.session.wrap_body is None
    outcome = link_from_settings(qtbot, win, letta_server, agent)
    assert outcome.error is None and outcome.report.pull.version.label == PULL_LABEL
    s = win.session
    assert [f.text for f in s.store.active_facts()] == [
        "I am a patient assistant who keeps notes.", "The user's name is Maya.",
        "The user lives in Lisbon.", "She keeps a bearded dragon called Saffron."]
    # the key is in its own 0600 file in the config folder; the link keeps only its path
    key_file = tmp_folders["config"] / KEY_FILENAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().strip() == letta_server.key
    state = load(s.store)
    assert state is not None and state.key_file == str(key_file)
    assert letta_server.key not in state.to_json()
    assert not (tmp_folders["config"] / "settings.json").exists() or letta_server.key not in (
        tmp_folders["config"] / "settings.json").read_text()
    # the mark says it is linked and in sync; every job syncs from now on
    assert win.letta.mark.isVisible() and win.letta.mark.text().startswith("● Letta: in sync")
    assert agent.id in win.letta.mark.toolTip()
    assert s.wrap_body is not None
    # the pull's version is on the timeline, labelled as changed in Letta
    qtbot.waitUntil(lambda: any(v.label == PULL_LABEL for v in win.timeline.model.all_versions()),
                    timeout=10_000)
    # Settings shows the link when opened again
    again = settings_dialog(win).memory_home
    assert again is not None and again.letta.isChecked() and again.choice is not None
    assert again.choice[1] == agent.id and agent.id[:14] in again.message.text()
    assert "in sync" in again.message.text()


def test_linking_a_memory_that_holds_facts_asks_which_side_wins(
    qtbot: Any, make_window: Any, db_path: Path, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed_store(db_path)
    agent = new_agent(**MAYA)
    win = make_window()
    asked: list[tuple[int, int]] = []
    answers = iter([None, "push"])

    def ask(exc: ChooseSide, agent_id: str) -> str | None:
        assert agent_id == agent.id
        asked.append((exc.facts, exc.lines))
        return next(answers)

    monkeypatch.setattr(win.letta, "ask_side", ask)
    # the person cancels: nothing is linked, nothing written on either side
    dlg = settings_dialog(win)
    choose_agent(qtbot, dlg, letta_server, agent, listed=False)  # an id typed, not listed
    dlg.accept()
    qtbot.waitUntil(lambda: asked != [] and not win.letta.running, timeout=60_000)
    assert asked == [(9, 4)] and load(win.session.store) is None
    assert values(letta, agent.id)["human"] == MAYA["human"] and not win.letta.linked
    # again, and this memory wins: the agent's blocks are overwritten with its facts
    dlg = settings_dialog(win)
    choose_agent(qtbot, dlg, letta_server, agent, listed=False)
    outcome = synced(qtbot, win.letta, dlg.accept)
    assert asked == [(9, 4), (9, 4)] and outcome.error is None
    assert values(letta, agent.id) == live_blocks(win.session.store)
    assert all(v.label != PULL_LABEL for v in win.session.store.versions())


def test_unlinking_from_settings_keeps_both_sides_as_they_are(
    qtbot: Any, make_window: Any, tmp_folders: dict[str, Path], letta_server: LettaServer,
    letta: LettaClient, new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    win = make_window()
    link_from_settings(qtbot, win, letta_server, agent)
    facts = [f.text for f in win.session.store.active_facts()]
    dlg = settings_dialog(win)
    home = dlg.memory_home
    assert home is not None
    home.here.setChecked(True)
    dlg.accept()
    qtbot.waitUntil(lambda: not win.letta.linked, timeout=10_000)
    assert load(win.session.store) is None and win.session.wrap_body is None
    assert not (tmp_folders["config"] / KEY_FILENAME).exists()
    assert not win.letta.mark.isVisible()
    assert [f.text for f in win.session.store.active_facts()] == facts
    assert values(letta, agent.id)["human"] == MAYA["human"]
    # a change by hand now stays here
    win.session.hand("add_fact", "human", "The user runs on Sundays.", "context")
    qtbot.wait(400)
    assert not win.letta.running and values(letta, agent.id)["human"] == MAYA["human"]


def encoder_and_reply(facts: list[dict[str, Any]], seen: list[str]) -> Any:
    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": facts})
        seen.append("\n".join(str(m.get("content", "")) for m in req.body.get("messages", [])))
        return Reply.text("Noted.")

    return respond


def test_a_chat_turn_reads_what_changed_in_letta_and_its_facts_reach_the_agent(
    qtbot: Any, make_window: Any, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], fake_llm: FakeLLM, server_settings: Settings,
) -> None:
    agent = new_agent(**MAYA)
    win = make_window(server_settings)
    link_from_settings(qtbot, win, letta_server, agent)
    s = win.session
    # the agent learns something in Letta while the window is open
    letta.set_block(agent.id, "human", MAYA["human"] + "\nThe user's sister Ana lives in Porto.")
    prompts: list[str] = []
    fake_llm.respond_with(encoder_and_reply(
        [{"text": "The user is learning the cello.", "category": "context", "turn": 1}], prompts))
    with qtbot.waitSignal(s.chatEncoded, timeout=60_000):
        win.chat.input.setPlainText("I started learning the cello last week.")
        qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not s.busy, timeout=60_000)
    s.wait_threads()
    # before the turn: the change in Letta became a version, and the model read it
    assert any("Ana lives in Porto" in p for p in prompts)
    labels = [v.label for v in s.store.versions()]
    assert labels.count(PULL_LABEL) == 2
    # after the turn's commit: the new fact is a line of the agent's scratch block
    assert "The user is learning the cello." in values(letta, agent.id)["scratch"]
    assert values(letta, agent.id) == live_blocks(s.store)
    qtbot.waitUntil(lambda: win.letta.mark.text().startswith("● Letta: in sync"), timeout=10_000)


def test_a_sleep_in_a_worker_process_syncs_first_and_its_result_reaches_the_agent(
    qtbot: Any, make_window: Any, db_path: Path, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed_store(db_path)
    agent = new_agent()
    win = make_window()
    monkeypatch.setattr(win.letta, "ask_side", lambda *_: "push")
    link_from_settings(qtbot, win, letta_server, agent)
    s = win.session
    assert s.child_process
    letta.set_block(agent.id, "persona", "I am Nocturne, and I keep a memory I can show.")
    with qtbot.waitSignal(s.busyChanged, timeout=120_000, check_params_cb=lambda k: k == ""):
        job = s.start_sleep(engine_only=True)
    s.wait_threads()
    assert job.in_child  # the wrapped body pickled: the sleep and its syncs ran in the worker
    versions = s.store.versions()
    pulled = [v for v in versions if v.label == PULL_LABEL]
    started = [v for v in versions if v.sleep_id is not None]
    assert pulled and started and pulled[-1].seq < started[0].seq  # synced before the sleep
    assert values(letta, agent.id) == live_blocks(s.store)  # and after its commits
    assert any(m.mutation.pass_name not in ("letta", "you") for m in s.store.mutations())


def test_a_change_by_hand_is_written_to_the_agent_after_its_commit(
    qtbot: Any, make_window: Any, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    win = make_window()
    link_from_settings(qtbot, win, letta_server, agent)
    outcome = synced(qtbot, win.letta, lambda: win.session.hand(
        "edit", "m_3", text="The user lives in Porto now."))
    assert outcome.error is None and outcome.report.push.written == ["human"]
    assert "The user lives in Porto now." in values(letta, agent.id)["human"]


def test_an_unreachable_server_is_one_sentence_the_window_stays_usable_and_retries(
    qtbot: Any, make_window: Any, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent], fake_llm: FakeLLM, server_settings: Settings,
) -> None:
    agent = new_agent(**MAYA)
    win = make_window(server_settings)
    s = win.session
    with Gate(letta_server.url) as gate:
        fake = LettaServer(gate.url, letta_server.key, letta_server.key_file, letta_server.server)
        link_from_settings(qtbot, win, fake, agent)
        gate.fail_after(0)  # the server goes away
        outcome = synced(qtbot, win.letta, lambda: s.hand(
            "add_fact", "human", "The user swims on Tuesdays.", "context"))
        assert outcome.error is not None and outcome.status.pending == ("human",)
        banner = win.letta.banner
        assert banner.isVisible()
        text = banner.text.text()
        assert text.startswith("The Letta server at ") and "cannot be reached" in text
        assert text.count(". ") == 0 and text.endswith(".")  # one sentence
        assert win.letta.mark.text() == "● Letta: unreachable"
        assert win.letta.retry.isActive()
        # the window stays usable: a chat turn goes through (its own syncs are skipped for a
        # while after a failure: tests/ui/test_letta_ui.py times that on a server that hangs)
        prompts: list[str] = []
        fake_llm.respond_with(encoder_and_reply(
            [{"text": "The user swims in the sea in summer.", "category": "context",
              "turn": 1}], prompts))
        with qtbot.waitSignal(s.chatEncoded, timeout=60_000):
            win.chat.input.setPlainText("In summer I swim in the sea.")
            qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not s.busy, timeout=60_000)
        assert prompts  # the model was asked
        assert link_status(s.store).pending == ("human", "scratch")  # kept for the retry
        # the server is back: the retry writes everything that was pending
        gate.open()
        outcome = synced(qtbot, win.letta, win.letta.retry.timeout.emit)
        assert outcome.error is None and not banner.isVisible()
        assert values(letta, agent.id) == live_blocks(s.store)
        assert "The user swims on Tuesdays." in values(letta, agent.id)["human"]
        assert not win.letta.retry.isActive()
        s.wait_threads()


def test_a_block_over_its_limit_is_the_persons_choice_and_nothing_is_cut(
    qtbot: Any, make_window: Any, letta_server: LettaServer, letta: LettaClient,
    new_agent: Callable[..., Agent],
) -> None:
    agent = new_agent(**MAYA)
    win = make_window()
    link_from_settings(qtbot, win, letta_server, agent)
    block = letta.block(agent.id, "human")
    letta.set_limit(block.id, len(block.value) + 40)
    s = win.session
    for text in ("The user's brother Rui is a nurse in Coimbra.",
                 "The user plays padel with friends on Saturday mornings."):
        s.hand("add_fact", "human", text, "context")
    outcome = synced(qtbot, win.letta, win.letta.sync_now)
    assert outcome.status.over_limit and "human" in outcome.status.over_limit
    # nothing was cut: Letta's block keeps what it held
    assert values(letta, agent.id)["human"] == MAYA["human"]
    dialog = win.letta.over_dialog
    assert isinstance(dialog, OverLimitDialog) and dialog.isVisible()
    chars, limit = outcome.status.blocks["human"][1], outcome.status.blocks["human"][2]
    words = dialog.findChildren(type(win.letta.banner.text))[0].text()
    assert f"{chars:,} characters: {chars - limit:,} over" in words and "Nothing was cut" in words
    assert win.letta.mark.text() == "● Letta: human over the limit"
    # keep the most salient lines: one version forgets what does not fit, the rest is written
    up, keep = dialog.buttons["human"]
    outcome = synced(qtbot, win.letta, keep.click)
    assert outcome.error is None and outcome.version is not None
    human = values(letta, agent.id)["human"]
    assert len(human) <= limit and human == live_blocks(s.store)["human"]
    assert outcome.version.label == "keep-salient:human"
    # undo brings them back: over the limit again, the dialog again; now raise Letta's limit
    s.hand("undo")
    qtbot.waitUntil(lambda: win.letta.over_dialog is not None
                    and win.letta.over_dialog.isVisible(), timeout=60_000)
    qtbot.waitUntil(lambda: not win.letta.running, timeout=60_000)
    up, _ = win.letta.over_dialog.buttons["human"]
    assert up.text().startswith("Raise Letta's limit to ")
    outcome = synced(qtbot, win.letta, up.click)
    assert outcome.error is None and not outcome.status.over_limit
    assert values(letta, agent.id) == live_blocks(s.store)
    assert letta.block(agent.id, "human").limit >= chars
    assert win.letta.over_dialog is None and win.letta.mark.text().startswith("● Letta: in sync")

