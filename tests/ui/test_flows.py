"""End-to-end flows through the window against the scripted model server on a real socket."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY, turn_stopped
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES, Mutation
from nocturne_desktop.settings import Settings
from tests.core.sleepkit import cooperative, pass_responder, task_of
from tests.fakeserver import FakeLLM, Reply, Request, closed_port_url
from tests.ui.conftest import seed_store, snapshot_of

pytestmark = pytest.mark.timeout(120)


FAIR_QUESTIONS = (
    "What do you remember about the user?", "What do you know about the user?",
    "What can you tell me about the user?", "What do you recall about the user?",
    "What have you learnt about the user?", "What has the user told you?",
    "What else do you remember about the user?",
)
"""Distinct quiz questions a scripted model writes (the gate refuses "Question number 1")."""


def chat_responder(reply: Reply | str, facts: list[dict[str, Any]]) -> Any:
    """Chat requests get ``reply``; encoder requests (they carry NEW TURNS) get ``facts``."""

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": facts})
        return reply if isinstance(reply, Reply) else Reply.text(reply)

    return respond


def chat_requests(server: FakeLLM) -> list[Request]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def send(qtbot: Any, win: Any, text: str) -> None:
    win.chat.input.setPlainText(text)
    qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)


# --- chat ---------------------------------------------------------------------------------------


def test_chat_streams_then_encodes_and_the_tree_updates(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(chat_responder(
        Reply.text("Noted — you live in Lisbon and like green tea."),
        [{"text": "The user lives in Lisbon.", "category": "identity", "turn": 1},
         {"text": "The user lives in Paris with Marie.", "category": "identity", "turn": 1}],
    ))
    win = make_window(server_settings)
    s = win.session
    tokens: list[str] = []
    s.chatTokens.connect(tokens.append)
    inserted: list[int] = []
    win.memory.model.rowsInserted.connect(lambda p, a, b: inserted.append(b - a + 1))
    resets: list[int] = []
    win.memory.model.modelReset.connect(lambda: resets.append(1))
    with qtbot.waitSignals([s.chatStarted, s.chatReplied, s.chatEncoded], order="strict", timeout=15_000):
        send(qtbot, win, "I live in Lisbon and I like green tea.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()

    assert tokens, "the reply arrived as a stream of token batches"
    assert "".join(tokens) == "Noted — you live in Lisbon and like green tea."
    text = win.chat.text()
    assert "I live in Lisbon and I like green tea." in text
    assert "Noted — you live in Lisbon and like green tea." in text
    quiet = [line for line in text.splitlines() if line.startswith("memory:")]
    assert quiet == ["memory: remembered 1: The user lives in Lisbon. · refused 1 (hover for why)"]
    note = win.chat.transcript._notes[-1]
    assert "Paris" in note and "refused:" in note
    # the tree got the new fact as a row insert, not a reset
    assert [f.text for f in win.memory.model.facts("scratch")] == ["The user lives in Lisbon."]
    assert inserted and not resets
    assert win.status.active.text() == "1 active facts"
    reqs = chat_requests(fake_llm)
    assert reqs[0].stream and "NEW TURNS:" in reqs[1].last_user
    assert [t.role for t in s.store.turns()] == ["user", "assistant"]


def test_model_text_is_never_rendered_as_markup(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    evil = "<b>bold?</b> <img src=x> &amp;"
    fake_llm.respond_with(chat_responder(evil, []))
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "say something odd")
    win.session.wait_threads()
    assert evil in win.chat.text()  # the literal characters, as sent
    assert "<b>" not in win.chat.transcript.document().toHtml().split("<body", 1)[1].replace(
        "&lt;b&gt;", "")


def test_shift_enter_adds_a_line_and_enter_sends(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(chat_responder("ok", []))
    win = make_window(server_settings)
    box = win.chat.input
    box.setFocus()
    qtbot.keyClicks(box, "first line")
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box, "second line")
    assert box.toPlainText() == "first line\nsecond line"
    assert not win.session.busy
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        qtbot.keyClick(box, Qt.Key.Key_Return)
    win.session.wait_threads()
    assert box.toPlainText() == ""
    assert win.session.store.turns()[0].text == "first line\nsecond line"


def test_stop_mid_stream_keeps_the_partial_reply_marked_stopped(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    words = " ".join(f"word{i}" for i in range(400))
    fake_llm.respond_with(chat_responder(Reply.text(words, token_delay=0.02), []))
    win = make_window(server_settings)
    s = win.session
    send(qtbot, win, "tell me a long story")
    qtbot.waitUntil(lambda: "word5" in win.chat.text(), timeout=10_000)
    assert win.chat.stop_button.isEnabled()
    with qtbot.waitSignal(s.chatReplied, timeout=10_000) as blocker:
        win.menus.stop.trigger()  # Esc
    partial, stopped = blocker.args
    assert stopped
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    assert "[stopped — partial reply kept]" in win.chat.text()
    assert 0 < len(partial) < len(words)
    assert partial in win.chat.text()
    turns = s.store.turns()
    assert turns[-1].role == "assistant" and turns[-1].text == partial
    assert turn_stopped(s.store, turns[-1].n)
    # the request was closed, so the server does not keep generating for nobody
    qtbot.waitUntil(lambda: chat_requests(fake_llm)[0].disconnected_at is not None, timeout=5_000)
    # A stop ends the reply, not the memory: the encoder still reads what the person said
    # (it used to skip a stopped turn, so the person's own message was lost to memory).
    reqs = chat_requests(fake_llm)
    assert len(reqs) == 2 and "NEW TURNS:" in reqs[1].last_user
    assert "user: tell me a long story" in reqs[1].last_user
    assert "memory: nothing new to remember" in win.chat.text()
    assert win.chat.send_button.isEnabled() and not win.chat.stop_button.isEnabled()


def test_a_second_stop_while_it_remembers_cancels_the_encoder_too(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    words = " ".join(f"word{i}" for i in range(400))

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:  # the encoder is slow: there is time for a second Esc
            return Reply.json({"facts": []}, delay=10)
        return Reply.text(words, token_delay=0.02)

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    s = win.session
    encoded: list[object] = []
    s.chatEncoded.connect(encoded.append)
    send(qtbot, win, "tell me a long story")
    qtbot.waitUntil(lambda: "word5" in win.chat.text(), timeout=10_000)
    with qtbot.waitSignal(s.chatReplied, timeout=10_000) as blocker:
        win.menus.stop.trigger()  # Esc: the reply only
    assert blocker.args[1]  # stopped
    qtbot.waitUntil(lambda: len(chat_requests(fake_llm)) == 2, timeout=10_000)
    assert s.busy == "remembering"  # the encoder reads the turn
    assert "memory: remembering…" in win.chat.text()
    t0 = time.monotonic()
    win.menus.stop.trigger()  # Esc again: the encoder
    qtbot.waitUntil(lambda: not s.busy, timeout=5_000)
    s.wait_threads()
    assert time.monotonic() - t0 < 5  # did not wait for the encoder's reply
    qtbot.waitUntil(lambda: chat_requests(fake_llm)[1].disconnected_at is not None, timeout=5_000)
    assert [e.stopped for e in encoded] == [True]  # type: ignore[attr-defined]
    assert "memory: remembering…" not in win.chat.text()
    assert "memory: not remembered yet — stopped" in win.chat.text()
    assert s.store.active_count() == 0
    turns = s.store.turns()
    assert [t.role for t in turns] == ["user", "assistant"] and turn_stopped(s.store, turns[-1].n)
    assert win.chat.send_button.isEnabled() and not win.chat.stop_button.isEnabled()


def test_endpoint_down_shows_a_message_in_the_chat_pane(
    qtbot: Any, make_window: Any
) -> None:
    url = closed_port_url()
    win = make_window(Settings(base_url=url, model="m"))
    s = win.session
    with qtbot.waitSignal(s.chatFailed, timeout=15_000) as blocker:
        send(qtbot, win, "are you there?")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    qtbot.waitUntil(lambda: s.endpoint_ok is False, timeout=15_000)
    s.wait_threads()
    message = blocker.args[0]
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert port in message
    assert f"⚠ {message}" in win.chat.text()
    assert win.status.endpoint.text() == "● endpoint unreachable"
    # nothing lost: the user's message is in the transcript store, and the UI is usable again
    assert [t.text for t in s.store.turns()] == ["are you there?"]
    assert win.chat.send_button.isEnabled()


def test_garbage_from_the_encoder_is_reported_quietly(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.text("this is { not json at all")
        return Reply.text("fine")

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "hello")
    win.session.wait_threads()
    last = win.chat.text().splitlines()[-1]
    assert last.startswith("memory: the encoder could not run")
    assert win.session.store.active_count() == 0


# --- sleep, timeline, diff, undo ----------------------------------------------------------------


SLEEP_ORDER = ["sleep started"] + ["pass started", "pass done"] * len(PASSES) + ["sleep done"]
SLEEP_ENDS = ("sleep done", "sleep cancelled", "sleep failed")


def sleep_end(qtbot: Any, session: Any, timeout: int) -> Any:
    """Wait for the end of the session's sleep stream; ``blocker.args[0]`` is the end event."""
    return qtbot.waitSignal(session.sleepEvent, timeout=timeout,
                            check_params_cb=lambda ev: ev.kind in SLEEP_ENDS)


def test_sleep_signals_timeline_diff_and_undo(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    answers = cooperative()
    # a self-pair: the gate refuses it, and the duplicate rule drops the pair instead
    answers["dedupe"] = lambda p: {"drop": [
        {"itemId": c["dropId"], "duplicateOf": c["dropId"], "reason": "same fact"}
        for c in p["candidatePairs"]]}
    fake_llm.respond_with(pass_responder(answers))
    win = make_window(server_settings)
    s = win.session
    before = snapshot_of(s.store.all_facts())
    assert win.timeline.model.rowCount() == 0
    kinds: list[str] = []
    s.sleepEvent.connect(lambda ev: kinds.append(ev.kind))
    with sleep_end(qtbot, s, 30_000):
        win.sleep.sleep_button.click()
    assert kinds == SLEEP_ORDER  # one stream, in order
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()

    # the pass table: every pass done, with its snapshots
    table = win.sleep.model
    assert [table.data(table.index(r, 1)) for r in range(4)] == ["done"] * 4
    assert all(table.data(table.index(r, 8)) and table.data(table.index(r, 9)) for r in range(4))
    assert "done" in win.sleep.title.text()
    # the timeline grew: one group for the sleep, with consolidation:start + before/after per pass
    versions = s.store.versions()
    assert len(versions) == 1 + 2 * len(PASSES)
    assert win.timeline.model.rowCount() == 1
    assert win.timeline.model.rowCount(win.timeline.model.index(0, 0)) == len(versions)
    assert len(win.timeline.curve._versions) == len(versions)
    # the diff defaults to before/after this sleep and shows the changes (when its tab opens)
    win.tabs.setCurrentWidget(win.diff)
    assert win.diff.pair() == (versions[0].seq, versions[-1].seq)
    qtbot.waitUntil(lambda: win.diff.diff is not None, timeout=5_000)  # computed off the GUI thread
    diff = win.diff.diff
    assert diff is not None and (diff.forgotten or diff.changed)
    statuses = {win.diff.model.data(win.diff.model.index(r, 0)).split()[0]
                for r in range(win.diff.model.rowCount())}
    assert statuses & {"forgotten", "changed"}
    rejected = win.diff.rejected_model
    assert rejected.rowCount() == 1
    assert "self" in rejected.data(rejected.index(0, 5)).lower()
    # the rule's drop is marked apart from the model's decisions
    decided = [win.diff.model.data(win.diff.model.index(r, 4)) for r in range(win.diff.model.rowCount())]
    assert "⚙ duplicate-rule" in decided and "model" in decided
    after = snapshot_of(s.store.all_facts())
    assert after != before

    # undo: one action, a new version, exactly the earlier state
    with qtbot.waitSignal(s.versionCreated, timeout=5_000) as blocker:
        win.menus.undo.trigger()
    new = blocker.args[0]
    assert new.label == f"restore:{versions[0].id}"
    assert snapshot_of(s.store.all_facts()) == before
    assert snapshot_of(s.store.state_at(new.seq)) == snapshot_of(s.store.state_at(versions[0].seq))
    assert win.timeline.current_version() == new  # the timeline moved to it
    assert sorted(f.id for b in ("persona", "human", "episodes", "scratch")
                  for f in win.memory.model.facts(b)) == sorted(f[0] for f in before if f[4])


def test_viewing_a_version_is_read_only_and_marked(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    seed_store(db_path)
    with Store(db_path) as store:
        v1 = store.snapshot("manual")
        store.forget("m_2")
        store.snapshot("after forget")
    win = make_window(Settings())
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)  # state_at runs off the GUI thread
    assert win.memory.banner.label.text().startswith(f"Viewing version {v1.id} — read-only")
    human = [f.id for f in win.memory.model.facts("human")]
    assert "m_2" in human  # as it was at v1
    win.memory.banner.button.click()
    assert not win.memory.banner.isVisible()
    assert "m_2" not in [f.id for f in win.memory.model.facts("human")]
    # restore that version: one click, a new version, the timeline selects it
    win.timeline.select_version(v1.seq)
    with qtbot.waitSignal(win.session.versionCreated, timeout=5_000) as blocker:
        win.timeline.restore_button.click()
    assert blocker.args[0].label == f"restore:{v1.id}"
    assert win.timeline.current_version().seq == blocker.args[0].seq
    assert win.session.store.get("m_2").active


def slow_pass(task: str, delay: float) -> Any:
    answers = cooperative()
    inner = answers[task]

    def slow(payload: dict[str, Any]) -> Reply:
        return Reply.json(inner(payload), delay=delay)

    answers[task] = slow
    return pass_responder(answers)


def test_cancel_mid_sleep_leaves_the_store_at_a_pass_boundary(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("promote", 60))
    win = make_window(server_settings)
    s = win.session
    late: list[Any] = []
    win.sleep.sleep_button.click()
    promote_row = PASSES.index("promote")
    qtbot.waitUntil(lambda: win.sleep.model.data(win.sleep.model.index(promote_row, 1)) == "running",
                    timeout=15_000)
    # cancel while the model call is in flight (under load the pass may not have sent it yet)
    qtbot.waitUntil(lambda: any(task_of(r)[0] == "promote" for r in chat_requests(fake_llm)),
                    timeout=15_000)
    s.sleepEvent.connect(late.append)
    t0 = time.monotonic()
    with sleep_end(qtbot, s, 5_000) as blocker:
        win.sleep.cancel_button.click()
    assert blocker.args[0].kind == "sleep cancelled"
    late.remove(blocker.args[0])
    qtbot.waitUntil(lambda: not s.busy, timeout=15_000)
    s.wait_threads()
    assert time.monotonic() - t0 < 10
    assert late == []  # nothing from the cancelled run reached the UI
    assert "cancelled" in win.sleep.title.text()
    assert win.sleep.model.data(win.sleep.model.index(PASSES.index("promote"), 1)) == "cancelled"
    assert win.sleep.model.data(win.sleep.model.index(PASSES.index("forget"), 1)) == "skipped"
    assert win.sleep.sleep_button.isEnabled()
    labels = [v.label for v in s.store.versions()]
    assert labels[-1] == "pass:promote:before"
    merge_after = next(v for v in s.store.versions() if v.label == "pass:merge:after")
    assert snapshot_of(s.store.all_facts()) == snapshot_of(s.store.state_at(merge_after.seq))
    assert s.store.sleeps()[-1].status == "cancelled"
    # the model call was aborted, not left running
    merge_req = next(r for r in chat_requests(fake_llm) if task_of(r)[0] == "promote")
    qtbot.waitUntil(lambda: merge_req.disconnected_at is not None, timeout=5_000)


def test_sleep_error_is_shown_in_the_sleep_panel(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    seed_store(db_path)
    win = make_window(Settings(base_url=closed_port_url(), model="m"))
    with sleep_end(qtbot, win.session, 15_000) as blocker:
        win.menus.sleep.trigger()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    assert blocker.args[0].kind == "sleep failed"
    assert "failed" in win.sleep.title.text()
    assert re.search(r"127\.0\.0\.1:\d+", win.sleep.message.text())
    assert win.sleep.model.data(win.sleep.model.index(0, 1)) == "error"


def test_dry_run_writes_nothing(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(pass_responder(cooperative()))
    win = make_window(server_settings)
    before = snapshot_of(win.session.store.all_facts())
    with sleep_end(qtbot, win.session, 30_000):
        win.sleep.dry_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    assert "Dry run" in win.sleep.title.text()
    assert snapshot_of(win.session.store.all_facts()) == before
    assert win.session.store.versions() == []
    assert win.sleep.model.data(win.sleep.model.index(3, 1)) == "done"


def test_closing_during_a_sleep_asks_cancels_and_waits(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("forget", 60))
    win = make_window(server_settings)
    asked: list[bool] = []
    answer = [False]

    def confirm() -> bool:
        asked.append(True)
        return answer[0]

    monkeypatch.setattr(win, "confirm_close_during_sleep", confirm)
    win.sleep.sleep_button.click()
    forget_row = PASSES.index("forget")
    qtbot.waitUntil(lambda: win.sleep.model.data(win.sleep.model.index(forget_row, 1)) == "running",
                    timeout=15_000)
    assert not win.close()  # "No": the window stays, the sleep goes on
    assert asked == [True] and win.isVisible() and win.session.busy == "sleep"
    answer[0] = True
    t0 = time.monotonic()
    assert win.close()
    assert time.monotonic() - t0 < 10
    assert asked == [True, True]
    assert win.session.closed
    with Store(db_path) as store:
        labels = [v.label for v in store.versions()]
        assert labels[-1] == "pass:forget:before"
        promote_after = next(v for v in store.versions() if v.label == "pass:promote:after")
        assert snapshot_of(store.all_facts()) == snapshot_of(store.state_at(promote_after.seq))
        assert store.sleeps()[-1].status == "cancelled"


def test_conflicting_actions_are_disabled_while_a_job_runs(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("dedupe", 60))
    win = make_window(server_settings)
    win.sleep.sleep_button.click()
    qtbot.waitUntil(lambda: win.session.busy == "sleep", timeout=5_000)
    assert not win.chat.send_button.isEnabled()
    assert not win.sleep.sleep_button.isEnabled() and not win.sleep.dry_button.isEnabled()
    assert not win.wake.run_button.isEnabled()
    assert not win.menus.undo.isEnabled() and not win.timeline.restore_button.isEnabled()
    assert win.sleep.cancel_button.isEnabled()
    with pytest.raises(RuntimeError, match="already sleeping"):
        win.session.start_quiz()
    win.session.cancel_sleep()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=15_000)
    win.session.wait_threads()
    assert win.chat.send_button.isEnabled() and win.wake.run_button.isEnabled()


# --- wake ---------------------------------------------------------------------------------------


def test_quiz_runs_in_a_worker_and_shows_answers_and_the_probe(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    facts = seed_store(db_path)
    gone = facts[-1]  # the toast, forgotten by a sleep
    with Store(db_path) as store:
        sid = store.begin_sleep({"staleAfterDays": 30})
        store.commit_pass([Mutation("forget", "forget", gone.id, True, reason="stale",
                                    policy="stale-after-30d")], label="pass:forget:after", sleep_id=sid)
        store.finish_sleep(sid, "done", {})
    asked: dict[str, str] = {}

    def respond(req: Request) -> Reply:
        first = req.last_user.split("\n")[0]
        if first.startswith("Fact: "):
            q = FAIR_QUESTIONS[len(asked) % len(FAIR_QUESTIONS)]  # each passes the gate
            asked[q] = first.removeprefix("Fact: ")
            return Reply.json({"question": q})
        q = req.last_user.split("\n\n")[0]
        text = asked.get(q, "")
        return Reply.text(NOT_IN_MEMORY if text == gone.text or not text else text)

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    with qtbot.waitSignal(win.session.quizDone, timeout=30_000) as blocker:
        win.wake.run_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    report = blocker.args[0]
    assert win.wake.model.rowCount() == len(report.questions) > 0
    assert all(win.wake.model.data(win.wake.model.index(r, 4)) == "✓ correct"
               for r in range(win.wake.model.rowCount()))
    assert win.wake.recall.text().startswith("Recall 100%")
    assert report.probe is not None and report.probe.passed
    assert win.wake.probe_result.text() == "passed"
    assert [m.text() for m in win.wake.probe_checks.values()] == ["✓", "✓", "✓"]
