"""The small things a new user tripped over: where the focus goes after Remember, the chat
box's placeholder, the fact dialogs, Delete, the banner, and status lines in words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from nocturne_desktop.settings import Settings
from tests.fakeserver import FakeLLM
from tests.ui.test_flows import chat_responder, send

pytestmark = pytest.mark.timeout(120)


def test_after_remember_the_focus_stays_in_the_chat(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM
) -> None:
    """Fails on the old code: the bar hid with the focus on its button, and Qt handed the
    focus to the next widget in the window, the memory search box."""
    fake_llm.respond_with(chat_responder("I will keep that in mind.", []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5_000)
    bar = win.chat.edit_bar
    send(qtbot, win, "remember that I like green tea")
    qtbot.waitUntil(lambda: bar.isVisible() and not win.session.busy, timeout=10_000)
    win.session.wait_threads()
    bar.accept_button.setFocus()
    qtbot.waitUntil(lambda: bar.accept_button.hasFocus(), timeout=2_000)
    bar.accept_button.click()
    assert not bar.isVisible()
    assert any("green tea" in f.text for f in win.session.store.active_facts())
    focused = QApplication.focusWidget()
    assert focused is not win.memory.search.field
    assert focused is win.chat.input


def test_the_chat_placeholder_fits_the_box(qtbot: Any, make_window: Any) -> None:
    """Fails on the old code: "Message Nocturne…  (Enter sends, Shift+Enter adds a line)" was
    wider than the box at the window's default size, and cut off."""
    win = make_window()
    qtbot.waitExposed(win)
    box = win.chat.input
    room = box.viewport().width() - 2 * int(box.document().documentMargin())
    for private in (False, True):
        win.chat.remember.setChecked(not private)
        shown = box.placeholderText()
        assert box.fontMetrics().horizontalAdvance(shown) <= room, (shown, room)
    assert "Shift+Enter" in box.toolTip()  # the keys are still said, on hover


def test_the_fact_dialog_is_big_enough_wraps_and_offers_the_category(
    qtbot: Any, make_window: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the old code: a tiny text box (QInputDialog) without wrapping and without the
    category, which took a second trip through the context menu."""
    from PySide6.QtWidgets import QPlainTextEdit

    from nocturne_desktop.core.types import CATEGORIES
    from nocturne_desktop.ui import factdialog
    from tests.ui.conftest import seed_store

    facts = seed_store(db_path)
    win = make_window()
    target = facts[4]  # "The user's stack is Airflow and Postgres." (scratch, context)
    seen: list[Any] = []

    def fill(dialog: factdialog.FactDialog) -> int:
        seen.append(dialog)
        assert dialog.text.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
        fm = dialog.fontMetrics()
        assert dialog.width() >= fm.horizontalAdvance("x" * 64)  # a long sentence's width
        assert dialog.text.height() >= 4 * dialog.text.fontMetrics().lineSpacing()
        assert [dialog.category.itemData(i) for i in range(dialog.category.count())] \
            == list(CATEGORIES)
        assert dialog.category.currentData() == "context"
        assert dialog.text.toPlainText() == target.text
        dialog.text.setPlainText("The user's stack is Airflow, Postgres and, since March, "
                                 "a small dbt project that the data team maintains.")
        dialog.category.setCurrentIndex(dialog.category.findData("commitments"))
        qtbot.keyClick(dialog.text, Qt.Key.Key_Return)  # Enter saves
        return dialog.result()

    monkeypatch.setattr(factdialog.FactDialog, "exec", fill)
    win.memory.edit_text(target)
    assert seen
    fact = win.session.store.get(target.id)
    assert fact is not None and fact.category == "commitments" and "dbt" in fact.text
    versions = win.session.store.versions()
    assert versions[-1].label == f"edit:{target.id}" and len(versions) == 1  # one edit, one undo
    assert win.statusBar().currentMessage().startswith("Edited “The user's stack is Airflow, ")
    assert "m_" not in win.statusBar().currentMessage()
    win.menus.undo_change.trigger()
    back = win.session.store.get(target.id)
    assert back is not None and (back.text, back.category) == (target.text, "context")


def test_delete_forgets_the_selected_fact_once_and_a_second_press_forgets_nothing(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: the selection moved on to the next row, so pressing Delete twice
    forgot two facts."""
    from tests.ui.conftest import seed_store

    facts = seed_store(db_path)
    win = make_window()
    win.activateWindow()
    target = facts[5]  # scratch: "The user promised to review the Airflow migration on Friday."
    assert win.memory.select_fact(target.id)
    view = win.memory.view
    view.setFocus()
    qtbot.waitUntil(view.hasFocus, timeout=2_000)
    before = win.session.store.active_count()
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    store = win.session.store
    assert store.active_count() == before - 1
    gone = store.get(target.id)
    assert gone is not None and not gone.active
    assert win.memory.selected_fact() is None
    said = win.statusBar().currentMessage()
    assert said == f"Forgot “{target.text}” — Ctrl+Z undoes it"
    win.menus.undo_change.trigger()  # one Ctrl+Z brings it back
    back = store.get(target.id)
    assert back is not None and back.active and store.active_count() == before


def test_the_banner_names_the_address_once(qtbot: Any, make_window: Any) -> None:
    """Fails on the old code: "No model answers at <url>: nothing is listening at <url> …"."""
    from tests.fakeserver import closed_port_url

    url = closed_port_url()
    win = make_window(Settings(base_url=url, model="m"))
    win.session.check_endpoint()
    qtbot.waitUntil(win.banner.isVisible, timeout=10_000)
    text = win.banner.text.text()
    assert text.count(url.rstrip("/")) == 1, text
    assert text.startswith("No model answers: ")


def test_status_lines_say_what_changed_in_words_not_ids(
    qtbot: Any, make_window: Any, db_path: Path
) -> None:
    """Fails on the old code: "edit:m_3 — a new version s0004 (Ctrl+Z undoes it)"."""
    from nocturne_desktop.ui.models.text import change_sentence
    from tests.ui.conftest import seed_store

    facts = seed_store(db_path)
    win = make_window()
    bar = win.statusBar()
    dragon = facts[3]
    win.hand("pin", (dragon.id, True), {})
    assert bar.currentMessage() == f"Pinned “{dragon.text}” — Ctrl+Z undoes it"
    win.hand("edit", (dragon.id,), {"block": "human"})
    assert bar.currentMessage() == f"Moved “{dragon.text}” to human — Ctrl+Z undoes it"
    win.undo_change()
    assert bar.currentMessage() == f"Undid: edited “{dragon.text}” — Ctrl+Shift+Z redoes it"
    win.redo_change()
    assert bar.currentMessage().startswith("Redid: edited “")
    win.memory.ask_fact = lambda *_a, **_k: ("The user's sister is called Ana.", "identity")
    win.memory.add_to("human")
    assert bar.currentMessage() == "Added “The user's sister is called Ana.” — Ctrl+Z undoes it"
    added = win.session.store.active_facts()[-1]
    assert (added.block, added.category) == ("human", "identity")

    texts = {"m_3": "The user lives in Porto."}
    assert change_sentence("edit:m_3", texts.get) == "Edited “The user lives in Porto.”"
    assert change_sentence("forget:m_3", texts.get) == "Forgot “The user lives in Porto.”"
    assert change_sentence("undo:sleep 4", texts.get) == "Undid sleep #4"
    assert change_sentence("restore:s0003", texts.get) == "Restored version s0003"
    assert change_sentence("undo:edit m_3", texts.get) == "Undid: edited “The user lives in Porto.”"
    assert change_sentence("edit:m_9", texts.get) == "Edited m_9"  # unknown: its id, not nothing


def test_the_chat_pane_keeps_its_width_while_a_reply_streams_and_a_message_waits(
    qtbot: Any, make_window: Any
) -> None:
    """The line under the transcript and the waiting message's bar wrap: a long one never
    widens the pane (the splitter would jump at every reply)."""
    win = make_window()
    qtbot.waitExposed(win)
    before = win.splitter.sizes()
    win.chat.set_streaming(True)
    win.chat.status.setText(win.chat.status.text() + " — and a longer note than the pane is "
                            "wide, as a translation would make it")
    win.chat.on_queued("I moved to Lisbon last spring, and the Airflow review moved to Friday "
                       "afternoon, after the team's planning meeting.")
    qtbot.wait(50)
    assert win.chat.queued_bar.isVisible()
    assert win.splitter.sizes() == before


def test_the_window_opens_with_the_focus_in_the_message_box(qtbot: Any, make_window: Any) -> None:
    win = make_window()
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5_000)
    assert QApplication.focusWidget() is win.chat.input
