"""Automatic sleep (S-AUTO-1): after N facts, after M idle minutes, on quit; a notice with Undo."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from nocturne_desktop.core.sleep import SleepEvent, SleepEventKind
from nocturne_desktop.settings import ApiKey, AutoSleep, Settings
from nocturne_desktop.ui.autosleep import sleep_summary
from nocturne_desktop.ui.settings_dialog import SettingsDialog
from tests.clock import Clock
from tests.core.sleepkit import cooperative, pass_responder
from tests.fakeserver import FakeLLM, Reply, Request
from tests.ui.conftest import seed_store, snapshot_of

pytestmark = pytest.mark.timeout(120)

SLEEP_ENDS = (SleepEventKind.DONE, SleepEventKind.CANCELLED, SleepEventKind.FAILED)


def responder(reply: Reply | str = "ok") -> Any:
    """Chat gets ``reply``; the encoder remembers each "I own a bicycle numbered K." the user
    said (traceable to its turn); the passes cooperate."""
    passes = pass_responder(cooperative())

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            new = req.last_user.split("NEW TURNS:", 1)[1]
            return Reply.json({"facts": [
                {"text": f"The user owns a bicycle numbered {k}.", "category": "preferences",
                 "turn": int(n)}
                for n, k in re.findall(r"\[turn (\d+)\] user: I own a bicycle numbered (\d+)", new)]})
        if req.last_user.lstrip().startswith("{") and '"task"' in req.last_user:
            return passes(req)
        return reply if isinstance(reply, Reply) else Reply.text(reply)

    return respond


def chat(qtbot: Any, win: Any, text: str) -> None:
    s = win.session
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        win.chat.input.setPlainText(text)
        qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)


def settle(qtbot: Any, win: Any) -> None:
    qtbot.waitUntil(lambda: not win.session.busy, timeout=30_000)
    qtbot.wait(20)  # the deferred check after the job ended
    qtbot.waitUntil(lambda: not win.session.busy, timeout=30_000)
    win.session.wait_threads()


def with_auto(settings: Settings, **kw: Any) -> Settings:
    return settings.model_copy(update={"auto_sleep": AutoSleep(**kw)})


def test_settings_are_off_by_default_and_round_trip_through_the_dialog(qtbot: Any) -> None:
    s = Settings()
    assert s.auto_sleep == AutoSleep(after_facts=0, idle_minutes=0, on_quit=False)
    assert not s.auto_sleep.enabled
    dlg = SettingsDialog(s, ApiKey())
    qtbot.addWidget(dlg)
    assert dlg.auto_facts.text() == "off" and dlg.auto_idle.text() == "off"
    dlg.auto_facts.setValue(5)
    dlg.auto_idle.setValue(20)
    dlg.auto_quit.setChecked(True)
    built = dlg.build()
    assert built.auto_sleep == AutoSleep(after_facts=5, idle_minutes=20, on_quit=True)
    again = Settings.model_validate(built.model_dump(mode="json"))
    assert again.auto_sleep == built.auto_sleep
    with pytest.raises(ValueError):
        AutoSleep(after_facts=-1)


def test_summary_words() -> None:
    assert sleep_summary({"dedupe": 3, "merge": 0, "promote": 5, "forget": 2}) == \
        "dropped 3 repeats, promoted 5, forgot 2"
    assert sleep_summary({"dedupe": 1}) == "dropped 1 repeat"
    assert sleep_summary({}) == "nothing to change"


def test_off_by_default_nothing_happens(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(responder())
    clock = Clock(1000.0, step=0)
    win = make_window(server_settings)
    win.autosleep.clock = clock
    starts: list[SleepEvent] = []
    win.session.sleepEvent.connect(lambda ev: starts.append(ev))
    for i in range(3):
        chat(qtbot, win, f"I own a bicycle numbered {i}.")
        settle(qtbot, win)
    assert win.autosleep.new_facts == 3  # counted, but no trigger is on
    clock.now += 10 * 24 * 3600
    assert win.autosleep.check() is False
    settle(qtbot, win)
    assert starts == [] and win.session.store.sleeps() == []
    assert win.notice.isHidden()


def test_after_n_facts_a_sleep_starts_exactly_once_and_the_notice_undoes_it(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(responder())
    win = make_window(with_auto(server_settings, after_facts=2))
    s = win.session
    ends: list[SleepEvent] = []
    s.sleepEvent.connect(lambda ev: ends.append(ev) if ev.kind in SLEEP_ENDS else None)
    chat(qtbot, win, "I own a bicycle numbered 1.")
    settle(qtbot, win)
    assert ends == [] and win.autosleep.new_facts == 1
    chat(qtbot, win, "I own a bicycle numbered 2.")
    qtbot.waitUntil(lambda: bool(ends), timeout=30_000)
    settle(qtbot, win)
    assert [e.kind for e in ends] == [SleepEventKind.DONE]
    assert len(s.store.sleeps()) == 1
    assert win.autosleep.new_facts == 0
    # nothing new since: no second sleep, however often it checks
    for _ in range(3):
        assert win.autosleep.check() is False
    settle(qtbot, win)
    assert len(s.store.sleeps()) == 1

    # the notice: a bar in the window (not a dialog) with the summary and Undo
    assert win.notice.isVisible() and win.notice.undo.isVisible()
    text = win.notice.label.text()
    assert text.startswith("Slept by itself: ")
    assert "dropped 1 repeat" in text  # the seeded Lisbon pair
    assert win.notice.sleep_id == ends[0].sleep_id
    start = s.sleep_start_version(ends[0].sleep_id)
    assert start is not None
    before = snapshot_of(s.store.state_at(start.seq))
    n_versions = len(s.store.versions())
    assert snapshot_of(s.store.all_facts()) != before
    with qtbot.waitSignal(s.versionCreated, timeout=5_000) as blocker:
        win.notice.undo.click()
    new = blocker.args[0]
    assert new.label == f"restore:{start.id}"
    assert len(s.store.versions()) == n_versions + 1  # a new version, nothing rewritten
    assert snapshot_of(s.store.all_facts()) == before
    assert "undone" in win.notice.label.text() and not win.notice.undo.isVisible()


def test_not_while_a_reply_streams_it_starts_after_the_reply_ends(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(responder(Reply.text("slow words " * 20, token_delay=0.01)))
    win = make_window(with_auto(server_settings, after_facts=1))
    s = win.session
    seen: list[tuple[str, str]] = []
    s.sleepEvent.connect(lambda ev: seen.append(("sleep", s.busy)) if ev.kind == SleepEventKind.STARTED
                         else None)
    s.chatReplied.connect(lambda *_: seen.append(("replied", s.busy)))
    # the trigger is met while the chat job still runs (the encoder's facts arrive inside it)
    win.autosleep.new_facts = 1
    win.chat.input.setPlainText("hello")
    qtbot.keyClick(win.chat.input, Qt.Key.Key_Return)
    assert s.busy == "chat"
    assert win.autosleep.check() is False  # refused while the reply streams
    qtbot.waitUntil(lambda: ("sleep", "sleep") in seen, timeout=30_000)
    settle(qtbot, win)
    assert seen == [("replied", "chat"), ("sleep", "sleep")]
    assert len(s.store.sleeps()) == 1
    assert [t.role for t in s.store.turns()] == ["user", "assistant"]  # the reply was whole


def test_idle_minutes_trigger_on_a_fake_clock(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    fake_llm.respond_with(responder())
    clock = Clock(1000.0, step=0)
    win = make_window(with_auto(server_settings, idle_minutes=30))
    win.autosleep.clock = clock
    s = win.session
    chat(qtbot, win, "I own a bicycle numbered 7.")
    settle(qtbot, win)
    assert win.autosleep.new_facts == 1
    clock.now += 29 * 60
    assert win.autosleep.check() is False
    clock.now += 61
    with qtbot.waitSignal(s.sleepEvent, timeout=30_000,
                          check_params_cb=lambda ev: ev.kind in SLEEP_ENDS) as blocker:
        assert win.autosleep.check() is True
    assert blocker.args[0].kind == SleepEventKind.DONE
    settle(qtbot, win)
    clock.now += 3600  # idle again, but nothing new: no sleep
    assert win.autosleep.check() is False
    assert len(s.store.sleeps()) == 1


def test_on_quit_the_window_sleeps_then_closes(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(responder())
    win = make_window(with_auto(server_settings, on_quit=True))
    s = win.session
    kinds: list[str] = []
    s.sleepEvent.connect(lambda ev: kinds.append(ev.kind))
    assert win.close() is False  # it stays open: sleeping first
    assert s.busy == "sleep" and win.isVisible()
    assert win.notice.isVisible() and win.notice.quit_now.isVisible()
    assert "Sleeping before quitting" in win.notice.label.text()
    qtbot.waitUntil(lambda: s.closed, timeout=30_000)
    assert not win.isVisible()
    assert kinds[0] == SleepEventKind.STARTED and kinds[-1] == SleepEventKind.DONE
    from nocturne_desktop.core.store import Store

    with Store(db_path) as store:
        assert [r.status for r in store.sleeps()] == ["done"]


def test_on_quit_quit_now_cancels_the_sleep_and_closes(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(responder())
    win = make_window(with_auto(server_settings, on_quit=True))
    s = win.session
    assert win.close() is False
    assert s.busy == "sleep"
    win.notice.quit_now.click()
    qtbot.waitUntil(lambda: s.closed, timeout=30_000)
    assert not win.isVisible()


def test_on_quit_off_closes_at_once(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    fake_llm.respond_with(responder())
    win = make_window(server_settings)
    assert win.close() is True
    assert win.session.closed and win.session.store is not None


def test_a_cancelled_automatic_sleep_does_not_start_again_at_once(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    seed_store(db_path)
    answers = cooperative()
    inner = answers["dedupe"]
    answers["dedupe"] = lambda p: Reply.json(inner(p), delay=5)
    fake_llm.respond_with(pass_responder(answers))
    win = make_window(with_auto(server_settings, after_facts=2))
    s = win.session
    win.autosleep.new_facts = 2
    with qtbot.waitSignal(s.sleepEvent, timeout=15_000,
                          check_params_cb=lambda ev: ev.kind == SleepEventKind.PASS_STARTED):
        assert win.autosleep.check() is True
    assert s.busy == "sleep"
    win.stop()  # Esc
    settle(qtbot, win)
    assert [r.status for r in s.store.sleeps()] == ["cancelled"]
    assert win.autosleep.check() is False  # held: it waits for 2 more facts
    assert win.notice.isHidden()
    win.autosleep.new_facts = 3
    assert win.autosleep.due() is None
    win.autosleep.new_facts = 4
    assert win.autosleep.due() == "facts"
