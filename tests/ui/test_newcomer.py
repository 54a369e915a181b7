"""What confused a new user in the window, fixed (issue 11, item 8): each test fails on the
code before its fix."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES, FactDraft
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.models.text import version_label
from nocturne_desktop.ui.models.timeline import TimelineModel
from nocturne_desktop.ui.panels import SleepPanel, describe_totals
from tests.core.sleepkit import cooperative, pass_responder
from tests.fakeserver import FakeLLM, closed_port_url
from tests.ui.conftest import SEED, seed_store

pytestmark = pytest.mark.timeout(120)


def test_a_restore_lands_on_live_and_new_facts_appear(qtbot: Any, make_window: Any, db_path: Path) -> None:
    """Fails on the old code: the Memory tab showed the new version read-only, so a fact from
    chat did not appear until "Back to live"."""
    seed_store(db_path)
    with Store(db_path) as store:
        v1 = store.snapshot("manual")
        store.forget("m_2")
        store.snapshot("after forget")
    win = make_window(Settings())
    win.timeline.select_version(v1.seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)  # looking at v1, read-only
    with qtbot.waitSignal(win.session.versionCreated, timeout=5_000) as blocker:
        win.timeline.restore_button.click()
    assert win.timeline.current_version().seq == blocker.args[0].seq  # the timeline marks it
    assert win.viewing is None and not win.memory.banner.isVisible()
    assert "m_2" in [f.id for f in win.memory.model.facts("human")]
    qtbot.wait(200)  # a read of the new version still running would land here: none may
    assert win.viewing is None and not win.memory.banner.isVisible()
    # a fact the encoder writes now shows at once
    new = win.session.store.append("scratch", FactDraft("The user is learning the cello.", "context",
                                                        None, time.time()))
    win.session.storeChanged.emit()
    assert new.id in [f.id for f in win.memory.model.facts("scratch")]
    assert "memory is live" in win.statusBar().currentMessage()


def _sleep(qtbot: Any, win: Any) -> None:
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.act_sleep.trigger()
    win.session.wait_threads()


def test_the_timeline_says_what_each_version_is_and_that_a_sleep_was_undone(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: rows read "pass:dedupe:before", and the undone sleep's header
    still read "Sleep #1 · done · …"."""
    seed_store(db_path)
    fake_llm.respond_with(pass_responder(cooperative()))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    _sleep(qtbot, win)
    tl = win.timeline.model
    group = tl.index(0, 0)
    labels = [tl.data(tl.index(r, 1, group)) for r in range(tl.rowCount(group))]
    assert labels[:3] == ["sleep started", "before Dedupe", "after Dedupe"]
    assert labels[-1] == "after Forget" and not any(":" in lab for lab in labels)
    assert "undone" not in tl.data(group)
    with qtbot.waitSignal(win.session.versionCreated, timeout=5_000) as blocker:
        win.act_undo.trigger()
    undo = blocker.args[0]
    assert tl.data(tl.index(0, 0)).startswith("Sleep #1 · done")
    assert f"undone ({undo.id}" in tl.data(tl.index(0, 0))
    last = tl.index(tl.rowCount() - 1, 0)
    first = win.session.store.versions()[0]
    assert tl.data(tl.index(tl.rowCount(last) - 1, 1, last)) == f"restored {first.id}"
    # the diff's pickers and the read-only banner speak the same words
    assert win.diff.pick_a.itemText(1).endswith("before Dedupe")
    win.tabs.setCurrentWidget(win.memory)
    win.timeline.select_version(win.session.store.versions()[1].seq)
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    assert "(before Dedupe, " in win.memory.banner.label.text()


def test_version_labels_in_words() -> None:
    assert version_label("pass:merge:after") == "after Merge"
    assert version_label("consolidation:start") == "sleep started"
    assert version_label("restore:s0003") == "restored s0003"
    assert version_label("undo:sleep 3") == "undid sleep #3"
    assert version_label("redo:sleep 3") == "redid sleep #3"
    assert version_label("edit:m_4") == "edited m_4"
    assert version_label("demo:loaded") == "demo loaded"
    assert version_label("manual") == "manual"


def test_an_undo_by_name_marks_the_sleep_until_it_is_redone(qtmodeltester: Any) -> None:
    from nocturne_desktop.core.types import SleepRecord, Version

    t0 = 1_700_000_000.0
    vs = [Version(1, "consolidation:start", t0, 9, 1), Version(2, "pass:forget:after", t0 + 1, 7, 1),
          Version(3, "undo:sleep 1", t0 + 2, 9, None)]
    rec = SleepRecord(1, t0, t0 + 1, False, "done", {}, {})
    model = TimelineModel()
    model.set_versions(vs, [rec])
    qtmodeltester.check(model)
    assert "undone (s0003" in model.data(model.index(0, 0))
    changed: list[int] = []
    model.dataChanged.connect(lambda a, _b: changed.append(a.row()))
    model.set_versions([*vs, Version(4, "redo:sleep 1", t0 + 3, 7, None)], [rec])
    assert "undone" not in model.data(model.index(0, 0))
    assert 0 in changed  # the header was redrawn


def test_the_sleep_totals_say_what_the_numbers_mean(qtbot: Any) -> None:
    """Fails on the old code: "Totals: 6 proposed · 6 accepted · 6 rejected · 6 enforced"."""
    panel = SleepPanel()
    qtbot.addWidget(panel)
    panel.on_sleep_started(SimpleNamespace(dry_run=False, rules_only=False, sleep_id=4, message=""))
    panel.on_sleep_finished(SleepEventKind.DONE, "", {"proposed": 6, "accepted": 6, "rejected": 6,
                                                      "enforced": 6})
    assert panel.totals.text() == ("The model proposed 6 changes: 0 applied, 6 refused by the gates. "
                                   "The rules made 6 changes of their own. 6 changes applied in all.")
    assert describe_totals({"proposed": 6, "accepted": 8, "rejected": 1, "enforced": 3}, dry_run=True) == (
        "The model proposed 6 changes: 5 would apply, 1 refused by the gates. "
        "The rules made 3 changes of their own. 8 changes would apply in all.")
    assert describe_totals({"proposed": 0, "accepted": 1, "rejected": 0, "enforced": 1}) == (
        "The model proposed no change. The rules made 1 change of their own. 1 change applied in all.")


def test_a_failed_pass_shows_the_active_count_memory_still_holds(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: the failed pass read "Active after 0" while memory held 9."""
    seed_store(db_path)
    win = make_window(Settings(base_url=closed_port_url(), model="m"))
    _sleep(qtbot, win)
    table = win.sleep.model
    assert table.data(table.index(0, 1)) == "error"
    held = win.session.store.active_count()
    assert held > 0
    assert table.data(table.index(0, 7)) == str(held)
    assert [table.data(table.index(r, 7)) for r in range(1, len(PASSES))] == [""] * (len(PASSES) - 1)


def test_word_diff_marks_only_the_words_that_differ() -> None:
    from nocturne_desktop.ui.diffview import word_diff

    left, right = word_diff("The user lives in Lisbon now.", "The user lives  in Porto now.")
    assert [t for t, marked in left if marked] == ["Lisbon "]
    assert [t for t, marked in right if marked] == ["Porto "]
    assert "".join(t for t, _ in left) == "The user lives in Lisbon now."
    assert "".join(t for t, _ in right) == "The user lives  in Porto now."


def test_the_diff_detail_shows_a_change_side_by_side_word_by_word_at_1024x700(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the detail pane was one plain text box under a table whose
    before/after columns were ~10 characters wide at this size."""
    seed_store(db_path, [*SEED, ("scratch", "context", "The user's stack runs Airflow jobs nightly.", 1)])
    answers = cooperative()
    answers["merge"] = lambda p: {"merge": [
        {"intoId": c["facts"][0]["itemId"], "fromIds": [f["itemId"] for f in c["facts"][1:]],
         "mergedText": "The user's stack is Airflow and Postgres; Airflow jobs run nightly.",
         "reason": "one stack"} for c in p["clusters"]]}
    fake_llm.respond_with(pass_responder(answers))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    win.resize(1024, 700)
    _sleep(qtbot, win)
    win.tabs.setCurrentWidget(win.diff)
    qtbot.waitUntil(lambda: win.diff.diff is not None, timeout=10_000)
    from nocturne_desktop.ui.models.roles import ROLE_OBJECT

    m = win.diff.model
    rows = [m.data(m.index(r, 0), ROLE_OBJECT) for r in range(m.rowCount())]
    # the first change is shown at once, without a click
    assert win.diff.detail.entry is rows[0]
    r, e = next((r, e) for r, e in enumerate(rows)
                if e.before is not None and e.after is not None and e.before.text != e.after.text)
    win.diff.table.setCurrentIndex(m.index(r, 0))
    view = win.diff.detail
    assert view.entry is e
    assert e.before.text in view.left.toPlainText()
    assert all(s.text in view.left.toPlainText() for s in e.sources)
    assert e.after.text in view.right.toPlainText()
    before_words = set(" ".join([e.before.text, *(s.text for s in e.sources)]).split())
    assert view.marked("right") and all(w not in before_words for w in view.marked("right"))
    assert all(w not in e.after.text.split() for w in view.marked("left"))
    # each side is wide enough to read (the old table columns held ~10 characters)
    chars = view.left.viewport().width() / view.left.fontMetrics().averageCharWidth()
    assert chars > 35, chars
    assert view.left.viewport().height() >= 3 * view.left.fontMetrics().lineSpacing()
    assert f"pass {e.pass_name}" in view.meta.text()


def test_help_lists_the_shortcuts_and_says_what_nocturne_is(qtbot: Any, make_window: Any) -> None:
    """Fails on the old code: there was no Help menu."""
    from nocturne_desktop import __version__

    win = make_window(Settings())
    menus = [a.text() for a in win.menuBar().actions()]
    assert menus[-1] == "&Help"
    dialog = win.show_shortcuts()
    qtbot.addWidget(dialog)
    rows = dict(dialog.rows())
    assert rows["Ctrl+Shift+S"].startswith("Sleep")
    assert rows["Ctrl+Z"].startswith("Undo")
    assert rows["Esc"].startswith("Stop")
    assert rows["F1"].startswith("Keyboard shortcuts")
    assert "Shift+Enter" in rows
    about = win.show_about()
    qtbot.addWidget(about)
    assert f"Nocturne Desktop {__version__}" in about.text.text()
    assert str(win.session.db_path.parent) in about.text.text()


def test_after_a_restart_the_pane_shows_the_turns_the_model_still_receives(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the pane said "No conversation yet" while the next prompt carried
    the earlier exchange."""
    from tests.ui.test_flows import chat_requests, chat_responder, send

    with Store(db_path) as store:
        store.add_turn("user", "My bearded dragon is called **Saffron**.")
        store.add_turn("assistant", "Noted — *Saffron* it is.\n\n- a bearded dragon")
    fake_llm.respond_with(chat_responder("Hello again.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    shown = win.chat.text()
    assert "the model still receives these 2 turns" in shown
    assert "My bearded dragon is called **Saffron**." in shown  # your words, as you typed them
    assert "Noted — Saffron it is." in shown and "a bearded dragon" in shown  # the reply rendered
    assert [m.role for m in win.chat.transcript.messages] == ["user", "assistant"]
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "Do you remember my pet?")
    win.session.wait_threads()
    sent = chat_requests(fake_llm)[0].body["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:-1]] == [
        ("user", "My bearded dragon is called **Saffron**."),
        ("assistant", "Noted — *Saffron* it is.\n\n- a bearded dragon")]


def test_the_wake_quiz_shows_which_question_it_is_on(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: the panel said a static "Asking…" until the whole quiz ended."""
    from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY
    from tests.fakeserver import Reply, Request

    seed_store(db_path)
    asked: dict[str, str] = {}

    def respond(req: Request) -> Reply:
        first = req.last_user.split("\n")[0]
        if first.startswith("Fact: "):
            q = f"Question number {len(asked) + 1}, please recall it."
            asked[q] = first.removeprefix("Fact: ")
            return Reply.json({"question": q})
        return Reply.text(asked.get(req.last_user.split("\n\n")[0], NOT_IN_MEMORY), delay=0.05)

    fake_llm.respond_with(respond)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    seen: list[tuple[str, int, int, bool]] = []
    win.session.quizProgress.connect(lambda p: seen.append(
        (win.wake.message.text(), win.wake.progress.value(), win.wake.progress.maximum(),
         win.wake.progress.isVisible())))
    with qtbot.waitSignal(win.session.quizDone, timeout=30_000) as blocker:
        win.wake.run_button.click()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    n = len(blocker.args[0].questions)
    assert n > 1 and len(seen) >= n
    assert seen[0][0].startswith(f"Question 1 of {n}: asking about m_")
    assert seen[1][0].startswith(f"Question 2 of {n}: asking about m_")
    firsts = [s for s in seen if s[0].startswith("Question") and ": asking about" in s[0]]
    assert [s[1] for s in firsts] == list(range(n))  # questions done before each one is asked
    assert all(s[3] for s in seen)
    assert not win.wake.progress.isVisible() and not win.wake.message.isVisible()


def test_memory_off_makes_a_private_chat_nothing_saved_or_remembered(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: there was no switch; every exchange was saved and encoded."""
    from tests.ui.test_flows import chat_requests, chat_responder, send

    with Store(db_path) as store:
        store.append("human", FactDraft("The user keeps a bearded dragon called Saffron.", "preferences",
                                        None, time.time()))
    fake_llm.respond_with(chat_responder(
        "Saffron, your bearded dragon.",
        [{"text": "The user has a secret plan for a surprise party.", "category": "context", "turn": 1}]))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    win.chat.remember.setChecked(False)
    assert "memory off — a private chat" in win.chat.text()
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Keep this between us: I am planning a surprise party. What pet do I have?")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    text = win.chat.text()
    assert "surprise party" in text and "Saffron, your bearded dragon." in text  # shown as usual
    assert "memory off: nothing of this exchange was saved or remembered" in text
    assert s.store.turns() == []  # nothing saved
    assert [f.text for f in s.store.all_facts()] == ["The user keeps a bearded dragon called Saffron."]
    reqs = chat_requests(fake_llm)
    assert len(reqs) == 1, "no encoder request"
    assert "Saffron" in reqs[0].body["messages"][0]["content"]  # memory was still read
    # memory back on: the next exchange is saved and encoded, without the private one
    win.chat.remember.setChecked(True)
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "What pet do I have?")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    assert [t.text for t in s.store.turns() if t.role == "user"] == ["What pet do I have?"]
    encoder = chat_requests(fake_llm)[-1].last_user
    assert "NEW TURNS:" in encoder and "surprise party" not in encoder


def test_regenerate_a_reply_from_its_menu_and_the_model_no_longer_receives_the_old_one(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path
) -> None:
    """Fails on the old code: a reply could not be asked for again."""
    from tests.fakeserver import Reply, Request
    from tests.ui.test_flows import chat_requests, send

    answers = iter(["A **first** answer.", "A better answer.", "Fine."])

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": []})
        return Reply.text(next(answers))

    fake_llm.respond_with(respond)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Say something about Porto.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    t = win.chat.transcript
    reply = t.messages[-1]
    cur = t.textCursor()
    cur.setPosition(reply.start + 2)
    menu = t.message_menu(t.cursorRect(cur).center())
    again = next(a for a in menu.actions() if a.objectName() == "regenerate")
    assert again.isEnabled()
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        again.trigger()
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    text = win.chat.text()
    assert "A first answer." in text and "A better answer." in text
    assert "↻ regenerated — the model no longer receives the reply above" in text
    regen = chat_requests(fake_llm)[2]  # chat, encoder, the regenerated chat
    assert [m["role"] for m in regen.body["messages"]] == ["system", "user"]
    assert regen.body["messages"][-1]["content"] == "Say something about Porto."
    turns = s.store.turns()
    assert [(x.role, x.text) for x in turns] == [
        ("user", "Say something about Porto."), ("assistant", "A **first** answer."),
        ("assistant", "A better answer.")]  # the old reply stays on record
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Thanks.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    nxt = [r for r in chat_requests(fake_llm) if "NEW TURNS:" not in r.last_user][-1]
    assert [(m["role"], m["content"]) for m in nxt.body["messages"][1:]] == [
        ("user", "Say something about Porto."), ("assistant", "A better answer."), ("user", "Thanks.")]
    # after a private reply there is nothing on record to answer again
    win.chat.remember.setChecked(False)
    fake_llm.respond_with(lambda req: Reply.text("Private."))
    with qtbot.waitSignal(s.chatEncoded, timeout=15_000):
        send(qtbot, win, "Between us.")
    qtbot.waitUntil(lambda: not s.busy, timeout=10_000)
    s.wait_threads()
    cur.setPosition(t.messages[-1].start + 1)
    menu = t.message_menu(t.cursorRect(cur).center())
    assert not next(a for a in menu.actions() if a.objectName() == "regenerate").isEnabled()
