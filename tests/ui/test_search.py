"""Search memory as a person does: Ctrl+F, type, see the hits with the words marked, Enter."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument

from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.store import FoundFact, Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.search import (
    RELATED,
    ROLE_HTML,
    highlight_html,
    hit_html,
    match_spans,
    status_line,
)
from tests.ui.conftest import seed_store

HOSTILE = "Said <b>bold</b> things about <img src=http://127.0.0.1:9/x.png> paintings & 'quotes'"


@pytest.fixture
def store_ids(db_path: Path) -> dict[str, str]:
    """The seed, plus: a painting fact (active), a forgotten one, a superseded one, hostile text."""
    seed_store(db_path)
    with Store(db_path) as s:
        ids = {
            "paints": s.append("human", FactDraft("The user paints watercolours on Sundays.",
                                                  "preferences")).id,
            "forgotten": s.append("scratch", FactDraft("The user painted the shed green.")).id,
            "old_home": s.append("human", FactDraft("The user rents a flat in Braga.",
                                                    "identity")).id,
            "new_home": s.append("human", FactDraft("The user bought a house in Coimbra.",
                                                    "identity")).id,
            "hostile": s.append("scratch", FactDraft(HOSTILE)).id,
        }
        ids["v_before"] = str(s.snapshot("encoded").seq)
        s.forget(ids["forgotten"])
        s.commit_pass([mu.to_row(mu.Supersede(pass_name="reconcile", target=ids["old_home"],
                                              by=ids["new_home"], reason="moved"))],
                      label="reconcile", sleep_id=None)
    return ids


def search(qtbot: Any, win: Any, text: str) -> Any:
    """Ctrl+F, type ``text``, wait for its hits; returns the search panel."""
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5_000)
    qtbot.keyClick(win, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    panel = win.memory.search
    assert win.tabs.currentWidget() is win.memory
    assert panel.field.hasFocus()
    qtbot.keyClicks(panel.field, text)
    qtbot.waitUntil(lambda: panel.query == text, timeout=5_000)
    return panel


def hit_ids(panel: Any) -> list[tuple[str, str]]:
    """The hits that share a word with the query (the related ones follow them)."""
    return [(h.fact.id, h.status) for h in panel.hits if h.exact]


def test_typing_finds_active_forgotten_and_superseded_with_inflections(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "painting")
    assert hit_ids(panel)[0] == (store_ids["paints"], "active")
    assert (store_ids["forgotten"], "forgotten") in hit_ids(panel)
    assert panel.results.isVisible() and panel.results.count() == len(panel.hits)
    first = panel.results.item(0).data(ROLE_HTML)
    assert '">paints</span> watercolours' in first  # the matched word is marked, not the rest
    assert "forgotten" in panel.status.text()
    panel.field.clear()
    assert not panel.results.isVisible()
    qtbot.keyClicks(panel.field, "Braga")
    qtbot.waitUntil(lambda: panel.query == "Braga", timeout=5_000)
    assert hit_ids(panel) == [(store_ids["old_home"], "superseded")]
    assert f"superseded by {store_ids['new_home']}" in panel.results.item(0).data(ROLE_HTML)


def test_enter_selects_an_active_fact_in_the_tree(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "watercolour")
    qtbot.keyClick(panel.field, Qt.Key.Key_Return)
    assert win.memory.current_fact().id == store_ids["paints"]
    assert win.memory.view.hasFocus()


def test_enter_before_the_hits_arrive_jumps_when_they_do(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    qtbot.keyClick(win, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(win.memory.search.field, "watercolour")
    qtbot.keyClick(win.memory.search.field, Qt.Key.Key_Return)  # no pause
    qtbot.waitUntil(lambda: win.memory.current_fact() is not None, timeout=5_000)
    assert win.memory.current_fact().id == store_ids["paints"]


def test_a_forgotten_hit_turns_on_show_forgotten_and_is_selected(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    win.memory.filter.setText("Lisbon")  # a tree filter that would hide it is cleared
    panel = search(qtbot, win, "shed")
    assert not win.memory.show_forgotten.isChecked()
    qtbot.keyClick(panel.field, Qt.Key.Key_Down)  # into the list, then Enter there
    assert panel.results.hasFocus()
    qtbot.keyClick(panel.results, Qt.Key.Key_Return)
    assert win.memory.show_forgotten.isChecked()
    fact = win.memory.current_fact()
    assert fact is not None and fact.id == store_ids["forgotten"] and not fact.active
    assert win.viewing is None


def test_a_superseded_hit_opens_the_version_where_it_was_last_active(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "flats")
    assert panel.hits[0].last_active_seq == int(store_ids["v_before"])
    item = panel.results.item(0)
    rect = panel.results.visualItemRect(item)
    qtbot.waitUntil(lambda: panel.results.indexAt(rect.center()).row() == 0, timeout=5_000)  # laid out
    qtbot.mouseClick(panel.results.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(panel.results.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(win.memory.banner.isVisible, timeout=5_000)
    assert win.viewing is not None and win.viewing.seq == int(store_ids["v_before"])
    qtbot.waitUntil(lambda: win.memory.current_fact() is not None, timeout=5_000)
    fact = win.memory.current_fact()
    assert fact.id == store_ids["old_home"] and fact.active  # as it was then
    assert win.timeline.current_version().seq == win.viewing.seq
    # its menu also offers to show it in the live tree
    menu = panel.context_menu_for(panel.hits[0])
    assert "Show in the memory tree" in [a.text() for a in menu.actions()]
    assert any(a.text().startswith("Open version s") for a in menu.actions())


def test_hostile_text_stays_literal(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "img bold painting")
    [row] = [i for i in range(panel.results.count())
             if panel.hits[i].fact.id == store_ids["hostile"]]
    markup = panel.results.item(row).data(ROLE_HTML)
    assert "<img" not in markup and "<b>" not in markup
    assert "&lt;" in markup and "src=http://127.0.0.1:9/x.png&gt;" in markup
    doc = QTextDocument()
    doc.setHtml(markup)
    assert HOSTILE in doc.toPlainText()  # drawn as the characters it is
    panel.results.viewport().grab()  # the delegate paints it (no resource is fetched)
    tip = panel.results.item(row).toolTip()
    assert "<" not in tip


def test_highlight_escapes_first_then_marks() -> None:
    text = "<b>Paints</b> & painted <img src=x>"
    out = highlight_html(text, {"paint"}, mark="#fe0")  # the store's folded words: paints → paint
    assert out.count("<span") == 1 and '#fe0; font-weight:600">Paints</span>' in out
    out = highlight_html(text, {"paints", "painted", "b"})
    assert "<b>" not in out and "<img" not in out
    assert "&lt;" in out and "&amp;" in out
    assert [text[a:b] for a, b in match_spans(text, {"paint", "painted", "b"})] == [
        "b", "Paints", "b", "painted"]


def test_typing_runs_one_search_after_the_pause_off_the_gui_thread(
    qtbot: Any, make_window: Any, store_ids: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int]] = []
    original = Store.search_all

    def recorded(self: Store, query: str, **kw: Any) -> Any:
        calls.append((query, threading.get_ident()))
        return original(self, query, **kw)

    monkeypatch.setattr(Store, "search_all", recorded)
    win = make_window(Settings())
    search(qtbot, win, "sundays")
    assert [q for q, _ in calls] == ["sundays"]
    assert threading.get_ident() not in [t for _, t in calls]


def test_hits_follow_a_change_to_memory(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "watercolour")
    assert hit_ids(panel) == [(store_ids["paints"], "active")]
    panel.hits = []
    win.session.store.forget(store_ids["paints"])  # its commit reaches the search by itself
    qtbot.waitUntil(lambda: hit_ids(panel) == [(store_ids["paints"], "forgotten")], timeout=5_000)


# --- found by meaning: the same ranker as the chat's memory ---------------------------------


def test_a_question_sharing_no_word_finds_the_fact_by_meaning_marked_related(
    qtbot: Any, make_window: Any, store_ids: dict[str, str], db_path: Path
) -> None:
    """Fails on the word search alone: "where do I live" shares no word with "I moved to
    Porto" (the similarity is low, 0.10, just above the panel's floor: in a memory of a few
    hundred facts it ranks too far down to be listed)."""
    with Store(db_path) as s:
        porto = s.append("human", FactDraft("I moved to Porto.", "identity")).id
    win = make_window(Settings())
    panel = search(qtbot, win, "where do I live")
    lisbon = [h.fact.id for h in panel.hits if h.exact]
    assert lisbon and all("lives in Lisbon" in h.fact.text for h in panel.hits if h.exact)
    related = [h for h in panel.hits if not h.exact]
    assert [h.fact.id for h in related] == [porto]
    kinds = [h.exact for h in panel.hits]
    assert kinds == sorted(kinds, reverse=True)  # every word match before the first related
    row = [h.fact.id for h in panel.hits].index(porto)
    markup = panel.results.item(row).data(ROLE_HTML)
    assert f">{RELATED}</span> · active · human · identity · {porto}" in markup
    assert "font-weight:600\">I" not in markup  # nothing of its text is marked
    first = panel.results.item(0).data(ROLE_HTML)
    assert '">lives</span> in Lisbon' in first and RELATED not in first
    assert panel.status.text() == ("2 active · 0 forgotten or superseded · 1 related by "
                                   "meaning — Enter or double-click shows it")
    assert "found by meaning alone" in panel.results.item(row).toolTip()


def test_a_related_hit_is_shown_in_the_tree_like_any_other(
    qtbot: Any, make_window: Any, store_ids: dict[str, str]
) -> None:
    win = make_window(Settings())
    panel = search(qtbot, win, "what did I eat")
    toast = next(h for h in panel.hits if "toast for breakfast" in h.fact.text)
    assert not toast.exact and not any(h.exact for h in panel.hits)
    assert panel.status.text().startswith("No fact shares a word with “what did I eat” · ")
    panel.results.setFocus()
    panel.results.setCurrentRow(panel.hits.index(toast))
    qtbot.keyClick(panel.results, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: (f := win.memory.current_fact()) is not None
                    and f.id == toast.fact.id, timeout=5_000)


def test_without_the_embedding_model_the_search_finds_shared_words_only(
    qtbot: Any, make_window: Any, store_ids: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nocturne_desktop.core import embedder

    monkeypatch.setattr(embedder, "default_embedder", lambda: None)
    win = make_window(Settings())
    panel = search(qtbot, win, "what did I eat in the morning")
    assert panel.hits and all(h.exact for h in panel.hits)
    assert RELATED not in panel.status.text()


def test_a_related_hit_s_text_stays_literal() -> None:
    from nocturne_desktop.core.types import Fact

    fact = Fact("m_7", "scratch", HOSTILE, "context", None, 0.0, 0.0)
    hit = FoundFact(fact, "active", None, frozenset(), 0.3, exact=False)
    markup = hit_html(hit, mark="#fe0", related="#28f")
    assert "<img" not in markup and "<b>" not in markup and "&lt;b&gt;" in markup
    assert markup.count("<span") == 1 and f'#28f; font-weight:600">{RELATED}</span>' in markup
    doc = QTextDocument()
    doc.setHtml(markup)
    assert HOSTILE in doc.toPlainText() and status_line(hit).startswith(RELATED)
