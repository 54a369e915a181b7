"""Replies in Markdown, safely (S-MD-1): what renders, what never does, what is never fetched."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QImage, QPainter, QTextCursor, QTextDocument

from nocturne_desktop.core.types import Fact
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui import markdown
from nocturne_desktop.ui.chat import Transcript
from nocturne_desktop.ui.models.tree import BlockTreeModel
from tests.fakeserver import FakeLLM, Reply
from tests.ui.test_flows import chat_responder, send

pytestmark = pytest.mark.timeout(60)

REPLY = (
    "Here is *one* way, with **care**:\n\n"
    "- first item\n"
    "- second item\n\n"
    "1. step one\n"
    "2. step two\n\n"
    "```python\n"
    "if a < b and c > d:\n"
    "    print('<b>not bold</b> &amp;')\n"
    "```\n\n"
    "Run `make test` after."
)


def blocks(doc: QTextDocument) -> list[Any]:
    out, b = [], doc.begin()
    while b.isValid():
        out.append(b)
        b = b.next()
    return out


def fragments(doc: QTextDocument) -> list[Any]:
    out = []
    for b in blocks(doc):
        it = b.begin()
        while not it.atEnd():
            out.append(it.fragment())
            it += 1
    return out


def block_with(doc: QTextDocument, text: str) -> Any:
    return next(b for b in blocks(doc) if b.text() == text)


def fragment_with(doc: QTextDocument, text: str) -> Any:
    return next(f for f in fragments(doc) if f.text() == text)


def reply_in(qtbot: Any, text: str) -> Transcript:
    t = Transcript()
    qtbot.addWidget(t)
    t.resize(520, 480)
    t.show()
    t.add_user("show me")
    t.begin_reply()
    for i in range(0, len(text), 7):  # streamed in pieces, as the model sends it
        t.add_tokens(text[i:i + 7])
    t.end_reply(False)
    return t


def paint(doc: QTextDocument) -> None:
    """Lay the document out and paint it: when images are drawn, resources are asked for."""
    doc.setTextWidth(400)
    img = QImage(420, max(50, int(doc.size().height()) + 10), QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    doc.drawContents(painter)
    painter.end()


def test_a_reply_from_the_model_renders_code_blocks_lists_and_emphasis(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_with(chat_responder(Reply.text(REPLY), []))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    with qtbot.waitSignal(win.session.chatEncoded, timeout=15_000):
        send(qtbot, win, "how do I compare two numbers?")
    win.session.wait_threads()
    doc = win.chat.transcript.document()
    assert fragment_with(doc, "one").charFormat().fontItalic()
    assert fragment_with(doc, "care").charFormat().fontWeight() >= 700
    items = [block_with(doc, t) for t in ("first item", "second item", "step one", "step two")]
    assert all(b.textList() is not None for b in items)
    assert items[0].textList() is items[1].textList() is not items[2].textList()
    code = block_with(doc, "if a < b and c > d:")
    assert code.blockFormat().hasProperty(markdown.QTextFormat.Property.BlockCodeFence)
    # inside code, nothing is interpreted: the HTML and the entity are the characters sent
    assert block_with(doc, "    print('<b>not bold</b> &amp;')").isValid()
    assert fragment_with(doc, "make test").charFormat().fontFixedPitch()
    # the markers are gone from what is shown; the message keeps them (copy gives them back)
    shown = win.chat.text()
    assert "*one*" not in shown and "```" not in shown
    assert win.chat.transcript.messages[-1].text == REPLY


HOSTILE = (
    "<b>bold?</b> <script>alert(1)</script> <img src=\"{url}/html.png\"> "
    "<a href=\"javascript:alert(2)\">click</a> <iframe src=\"{url}/frame\"></iframe> &amp; &#60;\n\n"
    "![a picture]({url}/md.png)\n\n"
    "<div style=\"background:url({url}/bg.png)\">block html</div>\n\n"
    "[a link](javascript:alert(3))"
)


def test_hostile_html_in_a_reply_is_shown_as_text_never_interpreted(qtbot: Any, fake_llm: FakeLLM) -> None:
    text = HOSTILE.format(url=fake_llm.root_url)
    t = reply_in(qtbot, text)
    shown = t.toPlainText()
    for literal in ("<b>bold?</b>", "<script>alert(1)</script>", f'<img src="{fake_llm.root_url}/html.png">',
                    '<a href="javascript:alert(2)">click</a>', "&amp; &#60;", "block html</div>"):
        assert literal in shown, literal
    doc = t.document()
    assert not any(f.charFormat().fontWeight() >= 700 for f in fragments(doc) if "bold?" in f.text())
    assert not any(f.charFormat().isImageFormat() for f in fragments(doc))
    hrefs = {f.charFormat().anchorHref() for f in fragments(doc) if f.charFormat().isAnchor()}
    # the only anchors are the Markdown link and the image turned into a link; no HTML made one
    assert hrefs == {"javascript:alert(3)", f"{fake_llm.root_url}/md.png"}
    assert "[image: a picture]" in shown


def test_no_remote_resource_is_ever_requested(qtbot: Any, fake_llm: FakeLLM) -> None:
    text = HOSTILE.format(url=fake_llm.root_url)

    class Recording(QTextDocument):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list[str] = []

        def loadResource(self, kind: int, name: QUrl) -> Any:
            self.asked.append(name.toString())
            return super().loadResource(kind, name)

    # the trap works: Qt's reader on its own would ask for the Markdown image
    bare = Recording()
    bare.setMarkdown(text, markdown.FEATURES)
    paint(bare)
    assert any(u.startswith("http") for u in bare.asked)

    # the rendering the transcript uses asks for nothing, laid out and painted
    doc = Recording()
    QTextCursor(doc).insertFragment(markdown.render(text))
    paint(doc)
    assert doc.asked == []
    # the window's transcript, shown and painted, asks for nothing, and the server saw nothing
    t = reply_in(qtbot, text)
    t.grab()
    paint(t.document())
    assert t.refused_resources == []
    assert fake_llm.requests == []


def _link_point(t: Transcript, text: str) -> QPoint:
    doc = t.document()
    frag = fragment_with(doc, text)
    cur = QTextCursor(doc)
    cur.setPosition(frag.position() + 1)
    return t.cursorRect(cur).center()


def test_links_open_only_on_click_and_only_for_web_and_mail(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    t = reply_in(qtbot, "See [the docs](https://example.org/docs) or [this](javascript:alert(1)).")
    qtbot.mouseMove(t.viewport(), _link_point(t, "the docs"))
    qtbot.wait(50)
    assert opened == [], "nothing opens by rendering or hovering"
    with qtbot.waitSignal(t.linkOpened, timeout=2_000):
        qtbot.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=_link_point(t, "the docs"))
    assert opened == ["https://example.org/docs"]
    with qtbot.waitSignal(t.linkRefused, timeout=2_000) as refused:
        qtbot.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=_link_point(t, "this"))
    assert refused.args[0].toString() == "javascript:alert(1)"
    assert opened == ["https://example.org/docs"]
    assert t.source().isEmpty(), "the transcript never navigates"


def test_copy_a_message_gives_its_markdown_source(qtbot: Any) -> None:
    t = reply_in(qtbot, REPLY)
    menu = t.message_menu(_link_point(t, "care"))
    act = next(a for a in menu.actions() if a.objectName() == "copyMessage")
    assert act.text() == "Copy this reply"
    act.trigger()
    assert QGuiApplication.clipboard().text() == REPLY
    menu = t.message_menu(_link_point(t, "show me"))
    act = next(a for a in menu.actions() if a.objectName() == "copyMessage")
    assert act.text() == "Copy your message"
    act.trigger()
    assert QGuiApplication.clipboard().text() == "show me"


def test_entities_outside_code_stay_literal_inside_code_too() -> None:
    assert markdown.protect_entities("a &amp; b `&amp;` &x") == "a \\&amp; b `&amp;` &x"
    fenced = "```\n&amp;\n```\n&lt;"
    assert markdown.protect_entities(fenced) == "```\n&amp;\n```\n\\&lt;"
    doc = QTextDocument()
    QTextCursor(doc).insertFragment(markdown.render("x &amp; `y &amp;`\n\n```\nz &lt;\n```"))
    assert doc.toPlainText() == "x &amp; y &amp;\nz &lt;"


def test_memory_views_stay_plain_text() -> None:
    f = Fact(id="m_1", block="human", text="**bold** <b>x</b> `code`", category="identity",
             source_turn=None, created_at=0.0, updated_at=0.0)
    model = BlockTreeModel()
    model.set_facts([f])
    idx = model.index(0, 0, model.index(1, 0))
    assert model.data(idx) == "**bold** <b>x</b> `code`"
