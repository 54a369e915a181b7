"""Memory and model text is shown as plain text wherever it is not Markdown (S-DOOR-4): a fact,
a turn, a model's reason, a conversation's title or a server's message that looks like HTML is
shown as its characters, never rendered (a heading, a local ``file://`` image read from disk, a
link). The lineage dialog's and the conversation list's tooltips rendered them before this
change (the first two tests fail on that code)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from nocturne_desktop.core.store import Store
from tests.ui.hostilerows import record
from tests.ui.markupcheck import Walk, hostile_texts, make_image, problems, seed_hostile, shown

pytestmark = pytest.mark.timeout(120)


def item_tips(tree: QTreeWidget) -> list[str]:
    """Every tooltip of every item of ``tree``, in every column."""
    out: list[str] = []

    def walk(item: QTreeWidgetItem) -> None:
        out.extend(item.toolTip(c) for c in range(tree.columnCount()) if item.toolTip(c))
        for i in range(item.childCount()):
            child = item.child(i)
            if child is not None:
                walk(child)

    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        if top is not None:
            walk(top)
    return out


@pytest.fixture
def hostile(db_path: Path, tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    texts = hostile_texts(make_image(tmp_path / "pixel.png"))
    with Store(db_path) as s:
        ids = seed_hostile(s, texts)
    return texts, ids


def test_the_lineage_tooltips_show_facts_turns_and_reasons_literally(
        qtbot: Any, make_window: Any, hostile: tuple[dict[str, str], dict[str, str]]) -> None:
    texts, ids = hostile
    win = make_window()
    dialog = win.open_lineage(ids["heading"])
    if dialog.lineage is None and dialog.error is None:
        qtbot.waitSignal(dialog.ready, timeout=15_000).wait()
    assert dialog.error is None
    tips = item_tips(dialog.tree)
    rendered = {t[:60]: problems(t) for t in tips if problems(t)}
    record("lineage dialog: fact, turn, reason tooltips", tried=len(tips),
           refused=len(tips) - len(rendered), leaked=len(rendered))
    assert not rendered, rendered
    seen = "\n".join(shown(t) for t in tips)
    # the fact, its turn, the encoder's reason, the merge's reason, the merged-in fact
    for text in (texts["heading"], texts["image"], texts["link"]):
        assert text in seen, text


def test_the_conversation_list_tooltips_show_titles_literally(
        qtbot: Any, make_window: Any, hostile: tuple[dict[str, str], dict[str, str]]) -> None:
    texts, _ids = hostile
    win = make_window()
    dlg = win.open_conversations()
    qtbot.waitUntil(lambda: dlg.loaded and len(dlg.rows()) == 2, timeout=5_000)
    tips = item_tips(dlg.tree)
    rendered = {t[:60]: problems(t) for t in tips if problems(t)}
    record("conversation list: title tooltips", tried=len(tips),
           refused=len(tips) - len(rendered), leaked=len(rendered))
    assert not rendered, rendered
    seen = "\n".join(shown(t) for t in tips)
    assert texts["heading"][:40] in seen and texts["image"][:40] in seen


def _respond(texts: dict[str, str], image: str) -> Any:
    """The scripted model: a hostile reply (raw HTML, a Markdown image and a misleading link),
    the encoder's facts (one kept, one refused), the quiz's question and answer."""
    from tests.fakeserver import Reply, Request

    reply = (f"{texts['heading']}\n\n{texts['image']}\n\n![a photo]({image}) and "
             "[https://paypal.com](https://evil.example/login)")

    def respond(req: Request) -> Reply:
        last = req.last_user
        if "NEW TURNS:" in last:
            return Reply.json({"facts": [
                {"text": texts["link"], "category": "context", "turn": 1},
                {"text": "<h1>x</h1> The user's password is hunter2-Blue!", "category": "context",
                 "turn": 1}]})
        if last.startswith("Fact: "):
            return Reply.json({"question": texts["heading"]})
        return Reply.text(reply)

    return respond


def _export_of(tmp: Path, texts: dict[str, str]) -> Path:
    """A JSON export whose facts are the hostile texts (for Import into scratch)."""
    from nocturne_desktop.core.store import exchange
    from nocturne_desktop.core.types import FactDraft

    with Store(tmp / "other.db") as s:
        for text in texts.values():
            s.append("human", FactDraft(text, "context"))
        path = tmp / "hostile.json"
        path.write_text(exchange.export_json(s), "utf-8")
    return path


def _bench(tmp: Path, texts: dict[str, str]) -> Path:
    import json

    path = tmp / "bench.json"
    path.write_text(json.dumps({"format": "nocturne-memory-bench/1", "conversations": [
        {"id": texts["heading"][:20], "questions": [
            {"q": texts["link"], "answer": "garden photo"}, {"q": texts["heading"],
                                                              "answer": "zebra xylophone"}]},
        {"id": "two", "questions": [{"q": "What?", "answer": "diary of headings"}]}]}), "utf-8")
    return path


def walk_window(qtbot: Any, win: Any, fake_llm: Any, texts: dict[str, str], ids: dict[str, str],
                tmp: Path) -> Walk:
    """Open every tab, dialog and panel of ``win`` over the hostile memory, then walk them."""
    from nocturne_desktop.ui.firstrun import FirstRunDialog
    from nocturne_desktop.ui.review import ReviewDialog
    from nocturne_desktop.ui.settings_dialog import SettingsDialog
    from tests.fakeserver import Reply
    from tests.ui.test_flows import send

    s = win.session
    idle = lambda: qtbot.waitUntil(lambda: not s.busy, timeout=30_000)  # noqa: E731
    # the banner and the status bar: the server's own (hostile) message
    s.check_endpoint()
    qtbot.waitUntil(lambda: win.banner.isVisible(), timeout=10_000)
    fake_llm.models_reply = None
    fake_llm.models = [texts["heading"], texts["image"]]
    # chat: a hostile message, a hostile reply, the encoder's facts (one refused)
    with qtbot.waitSignal(s.chatEncoded, timeout=20_000):
        send(qtbot, win, texts["link"])
    idle()
    send(qtbot, win, "remember that " + texts["heading"])
    qtbot.waitUntil(lambda: win.chat.edit_bar.isVisible(), timeout=10_000)
    idle()
    # memory: forgotten facts shown, a search with hits
    win.memory.show_forgotten.setChecked(True)
    win.memory.search.field.setText("user")
    win.memory.search.flush()
    qtbot.waitUntil(lambda: bool(win.memory.search.hits), timeout=10_000)
    # a rules-only sleep: the Sleep tab's table, the timeline's versions
    win.start_rules_sleep()
    idle()
    s.wait_threads()
    # a past version (its hostile label in the banner), then back to live
    versions = s.store.versions()
    labelled = next(v for v in versions if v.label.startswith("<h1>"))
    win.tabs.setCurrentWidget(win.memory)
    win.timeline.select_version(labelled.seq)
    qtbot.waitUntil(lambda: win.memory.banner.isVisible(), timeout=10_000)
    win.back_to_live()
    # the diff: the merge's reason in its detail
    merge = next(v for v in versions if v.label == "merge")
    win._compare(merge.seq - 1, merge.seq)
    qtbot.waitUntil(lambda: win.diff.diff is not None and win.diff.model.rowCount() > 0,
                    timeout=10_000)
    win.diff.table.setCurrentIndex(win.diff.model.index(0, 0))
    # wake: the quiz (hostile question and answers), then "How much would I still know?"
    with qtbot.waitSignal(s.quizDone, timeout=30_000):
        win.start_quiz()
    idle()
    box = win.wake.still_know
    box.run_file(_bench(tmp, texts))
    qtbot.waitUntil(lambda: box.report is not None or box.error is not None, timeout=10_000)
    # the dialogs: why, conversations, review (rules only), settings, about, shortcuts, first run
    lineage = win.open_lineage(ids["heading"])
    if lineage.lineage is None and lineage.error is None:
        qtbot.waitSignal(lineage.ready, timeout=15_000).wait()
    convs = win.open_conversations()
    qtbot.waitUntil(lambda: convs.loaded, timeout=5_000)
    review = win.review_dialog = ReviewDialog(s, win)
    review.rules_only.blockSignals(True)
    review.rules_only.setChecked(True)
    review.rules_only.blockSignals(False)
    win.open_review()
    qtbot.waitUntil(lambda: review.plan is not None and not s.busy, timeout=30_000)
    review.tree.setCurrentIndex(review.model.index(1, 0))
    settings = SettingsDialog(s.settings, s.api_key, dict(s.capabilities), win)
    settings.show()
    settings.refresh_models()
    qtbot.waitUntil(lambda: settings.model.count() == 2, timeout=10_000)
    win.show_about()
    win.show_shortcuts()
    first = FirstRunDialog(fake_llm.base_url, texts["image"], parent=win, host="127.0.0.1",
                           servers=(("hostile", fake_llm.port),), engine_cache=tmp)
    first.show()
    first.detect()
    qtbot.waitUntil(lambda: first.server_list.count() > 0 and not first.busy(), timeout=10_000)
    first.url_edit.setText(fake_llm.base_url)
    first.url_model_edit.setText("missing-model")
    first.use_url()
    qtbot.waitUntil(lambda: not first.busy(), timeout=10_000)
    # an import into scratch of hostile facts: its message lists them
    win.exchange.import_into_scratch(str(_export_of(tmp, texts)))
    qtbot.waitUntil(lambda: win.exchange.notice is not None, timeout=10_000)
    idle()
    fake_llm.models_reply = Reply.error(503, texts["image"])
    walk = Walk()
    walk.widgets([win])
    settings.close()
    first.close()
    return walk


def test_every_tab_dialog_and_panel_shows_hostile_text_literally(
        qtbot: Any, make_window: Any, fake_llm: Any, db_path: Path, tmp_path: Path) -> None:
    from nocturne_desktop.settings import Settings
    from tests.fakeserver import Reply

    image = make_image(tmp_path / "pixel.png")
    texts = hostile_texts(image)
    with Store(db_path) as s:
        ids = seed_hostile(s, texts)
    fake_llm.respond_with(_respond(texts, image.as_uri()))
    fake_llm.models_reply = Reply.error(503, texts["heading"])  # the banner quotes the server
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    walk = walk_window(qtbot, win, fake_llm, texts, ids, tmp_path)
    record("every tab, dialog, panel: labels, tips, cells", tried=walk.tried,
           refused=walk.hostile, leaked=len(walk.bad),
           note=f"{len(walk.classes)} widget classes; refused = hostile texts shown literally")
    assert not walk.bad, "\n".join(walk.bad)
    assert walk.hostile >= 100, walk.hostile  # the walk did see memory's and the model's words
    for cls in ("LineageDialog", "ConversationsDialog", "ReviewDialog", "SettingsDialog",
                "FirstRunDialog", "AboutDialog", "ShortcutsDialog", "QMessageBox", "Transcript",
                "ChatEditBar", "SearchPanel", "EndpointBanner", "SleepNotice"):
        assert cls in walk.classes, cls


def test_the_helpers_show_their_text_literally(qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMessageBox, QPushButton

    from nocturne_desktop.ui.plaintext import message_box, plain_label, plain_tooltip, set_tip

    texts = hostile_texts(make_image(tmp_path / "pixel.png"))
    button = QPushButton("x")
    qtbot.addWidget(button)
    action = QAction("y", button)
    item = QTreeWidgetItem(["z"])
    for text in texts.values():
        set_tip(button, text)
        set_tip(action, text)
        set_tip(item, text)
        for tip in (button.toolTip(), action.toolTip(), item.toolTip(0)):
            assert problems(tip) == [] and shown(tip) == text
        label = plain_label(text)
        assert label.textFormat() == Qt.TextFormat.PlainText and label.text() == text
        box = message_box(None, QMessageBox.Icon.Warning, f"{text}\nmore")
        assert box.textFormat() == Qt.TextFormat.PlainText
        box.deleteLater()
    assert plain_tooltip("") == ""  # no empty tooltip box
    two = plain_tooltip("first line\n<h1>second</h1>")
    assert shown(two) == "first line\n<h1>second</h1>"
