"""Links in replies (S-DOOR-4): hovering a link shows its target (fully encoded), and a click on
a link whose text shows one address and goes to another asks before it opens. Before this
change the target was never shown and ``[https://paypal.com](https://evil.example/login)``
opened at once (the window tests here fail on that code)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QHelpEvent, QTextCursor
from PySide6.QtWidgets import QApplication, QMessageBox, QToolTip

from nocturne_desktop.ui import links
from nocturne_desktop.ui.chat import Transcript
from tests.ui.hostilerows import record
from tests.ui.markupcheck import shown
from tests.ui.test_markdown import fragment_with, reply_in

pytestmark = pytest.mark.timeout(60)

REPLY = ("Log in at [https://paypal.com](https://evil.example/login), read "
         "[the docs](https://example.org/docs) or write to [bob@example.com](mailto:bob@example.com)"
         " or [**p\u0430ypal**.com](https://paypal.com/x).")


@pytest.mark.parametrize(("text", "target", "asks"), [
    ("https://paypal.com", "https://evil.example/login", True),
    ("paypal.com", "https://paypal.com.evil.example/", True),  # not a subdomain of it
    ("p\u0430ypal.com", "https://paypal.com/", True),  # a Cyrillic а in the text
    ("paypal.com", "https://xn--pypal-4ve.com/", True),  # and in the target
    ("bob@example.com", "mailto:eve@evil.example", True),
    ("https://example.org/docs", "https://example.org/docs", False),
    ("www.example.org", "https://example.org/", False),
    ("example.org", "https://docs.example.org/a", False),  # the same owner's subdomain
    ("the docs", "https://example.org/docs", False),  # words, not an address
    ("README.md", "https://github.com/x/y", False),  # a file's name, not a host
    ("version 1.2", "https://example.org/", False),
])
def test_a_link_is_misleading_when_its_text_shows_another_address(
        text: str, target: str, asks: bool) -> None:
    assert links.misleading(text, QUrl(target)) is asks


def _point(t: Transcript, text: str) -> QPoint:
    frag = fragment_with(t.document(), text)
    cur = QTextCursor(t.document())
    cur.setPosition(frag.position() + 1)
    return t.cursorRect(cur).center()


def _hover(t: Transcript, pos: QPoint) -> str:
    QToolTip.hideText()
    event = QHelpEvent(QEvent.Type.ToolTip, pos, t.viewport().mapToGlobal(pos))
    QApplication.sendEvent(t.viewport(), event)
    return QToolTip.text()


@pytest.mark.qt_log_ignore("does not support raise")  # the offscreen platform, for the tooltip
def test_hovering_a_link_shows_where_it_goes(qtbot: Any) -> None:
    t = reply_in(qtbot, REPLY)
    tip = _hover(t, _point(t, "the docs"))
    record("a link hovered: its target shown", refused=int("example.org/docs" in shown(tip)))
    assert shown(tip) == "https://example.org/docs"
    tip = shown(_hover(t, _point(t, "https://paypal.com")))
    assert tip.splitlines() == ["https://evil.example/login",
                                "The text shows paypal.com, but this link goes to evil.example."]
    # a link with a bold look-alike part: the whole text is read, the target shown encoded
    assert "xn--pypal-4ve.com" in shown(_hover(t, _point(t, "p\u0430ypal")))
    assert t.links.link_at(_point(t, ", read ")) is None  # no link there: no link tooltip


def test_a_misleading_link_asks_before_it_opens(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    t = reply_in(qtbot, REPLY)
    qtbot.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=_point(t, "https://paypal.com"))
    box = t.links.question_box
    record("a link showing another address, clicked", refused=int(box is not None),
           leaked=len(opened), note="asks \"Open this link?\" first")
    assert box is not None and box.isVisible() and opened == []
    assert box.windowTitle() == "Open this link?"
    assert box.textFormat() == Qt.TextFormat.PlainText
    assert box.text() == ("This link's text shows paypal.com, but it opens evil.example:\n"
                          "https://evil.example/login\n\nOpen it anyway?")
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert opened == []  # Cancel (the default): nothing opens
    qtbot.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=_point(t, "https://paypal.com"))
    again = t.links.question_box
    assert again is not None and again is not box
    with qtbot.waitSignal(t.linkOpened, timeout=2_000):
        next(b for b in again.buttons() if b.text() == "Open link").click()
    assert opened == ["https://evil.example/login"]


def test_a_faithful_link_opens_without_a_question(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    t = reply_in(qtbot, REPLY)
    for text, url in (("the docs", "https://example.org/docs"),
                      ("bob@example.com", "mailto:bob@example.com")):
        t.links.question_box = None
        with qtbot.waitSignal(t.linkOpened, timeout=2_000):
            qtbot.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=_point(t, text))
        assert t.links.question_box is None and opened[-1] == url
