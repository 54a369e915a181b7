"""Links in replies: hovering one shows where it goes; a link whose text shows one address
and goes to another asks before it opens (S-DOOR-4).

A model's reply is Markdown, and ``[https://paypal.com](https://evil.example/login)`` renders
as the text ``https://paypal.com``: a page the model read, or a person who wrote into memory,
can make a reply point somewhere its words do not say. So a link's target is shown on hover
(fully encoded: a look-alike letter shows as ``xn--…``), and a click on a link whose text shows
an address (a URL, a domain, a mail address) of another host first asks, naming both. A link
whose text is words ("the docs") shows its target on hover and opens on click as before.

:func:`misleading` and :func:`shown_address` are plain functions of the text and the target;
:class:`LinkGuard` attaches them to a text browser (the chat transcript).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, QUrl
from PySide6.QtGui import QHelpEvent, QMouseEvent, QTextDocument
from PySide6.QtWidgets import QMessageBox, QTextBrowser, QToolTip

from nocturne_desktop.ui.plaintext import message_box, plain_tooltip

__all__ = ["LinkGuard", "anchor_text", "hover_text", "misleading", "question", "shown_address",
           "target_address", "where"]

_LABEL = r"[^\W_](?:[\w-]*[^\W_])?"
_MAIL = re.compile(rf"(?:mailto:)?([\w.+-]+@(?:{_LABEL}\.)+[^\W\d_]{{2,}})", re.IGNORECASE)
_WITH_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://[^\s<>\"'()\[\]]+", re.IGNORECASE)
_DOMAIN = re.compile(rf"(?<![\w@.-])((?:{_LABEL}\.)+([^\W\d_]{{2,}}))\.?(?::\d{{1,5}})?"
                     r"(?=$|[\s/?#:,;!)\]'\"]|\.(?:\s|$))", re.IGNORECASE)
_FILE_ENDINGS = frozenset({
    "py", "md", "txt", "json", "js", "ts", "html", "htm", "css", "pdf", "png", "jpg", "jpeg",
    "gif", "svg", "zip", "gz", "tar", "csv", "yaml", "yml", "toml", "ini", "cfg", "log", "sh",
    "rs", "go", "java", "kt", "rb", "php", "exe", "dll", "so", "dmg", "doc", "docx", "xls",
    "xlsx", "ppt", "pptx", "mp3", "mp4", "wav", "mov", "db", "sql", "xml", "lock", "whl",
})
"""Endings that make ``name.ending`` read as a file's name, not a host."""
_ENCODED = QUrl.ComponentFormattingOption.FullyEncoded


def _host(text: str) -> str:
    """``text``'s host as sent (IDN letters as ``xn--``), lower case, no ``www.``."""
    url = QUrl.fromUserInput(text) if "://" not in text else QUrl(text)
    return _bare(url.host(_ENCODED))


def _bare(host: str) -> str:
    host = host.lower().rstrip(".")
    return host.removeprefix("www.")


def shown_address(text: str) -> str | None:
    """The address ``text`` shows (a host, or a mail address), as sent; None when the text
    shows none ("the docs", "README.md")."""
    mail = _MAIL.search(text)
    if mail is not None:
        local, _, domain = mail.group(1).partition("@")
        return f"{local.lower()}@{_host(domain)}"
    full = _WITH_SCHEME.search(text)
    if full is not None:
        host = _host(full.group())
        if host:
            return host
    for m in _DOMAIN.finditer(text):
        if m.group(2).lower() not in _FILE_ENDINGS:
            host = _host(m.group(1))
            if host:
                return host
    return None


def target_address(url: QUrl) -> str:
    """Where ``url`` goes, in the form :func:`shown_address` gives (a host or a mail address)."""
    if url.scheme().lower() == "mailto":
        local, _, domain = url.path(_ENCODED).partition("@")
        return f"{local.lower()}@{_host(domain)}"
    return _bare(url.host(_ENCODED))


def misleading(text: str, url: QUrl) -> bool:
    """Whether the link's ``text`` shows an address that ``url`` does not go to (a subdomain
    of the host shown is the same owner's, not another address)."""
    shown = shown_address(text)
    if shown is None:
        return False
    target = target_address(url)
    if "@" in shown or "@" in target:
        return shown != target
    return not (target == shown or target.endswith("." + shown))


def where(url: QUrl) -> str:
    """The target as a person should read it: fully encoded (no look-alike letters)."""
    return url.toString(_ENCODED)


def hover_text(text: str, url: QUrl) -> str:
    """The tooltip of a link: its target, and a warning when its text shows another address."""
    if misleading(text, url):
        return (f"{where(url)}\nThe text shows {shown_address(text)}, but this link goes to "
                f"{target_address(url) or where(url)}.")
    return where(url)


def question(text: str, url: QUrl) -> str:
    """What the confirmation says before a misleading link opens."""
    return (f"This link's text shows {shown_address(text)}, but it opens "
            f"{target_address(url) or where(url)}:\n{where(url)}\n\nOpen it anyway?")


def anchor_text(doc: QTextDocument, position: int, href: str) -> str:
    """The whole text of the link ``href`` around ``position`` in ``doc`` (its fragments of
    one block joined: a link with bold words is several fragments)."""
    block = doc.findBlock(position)
    parts: list[tuple[int, str, bool]] = []
    it = block.begin()
    while not it.atEnd():
        frag = it.fragment()
        cf = frag.charFormat()
        parts.append((frag.position(), frag.text(), cf.isAnchor() and cf.anchorHref() == href))
        it += 1
    at = next((i for i, (pos, text, _) in enumerate(parts)
               if pos <= position <= pos + len(text) and parts[i][2]), None)
    if at is None:
        return ""
    lo = hi = at
    while lo > 0 and parts[lo - 1][2]:
        lo -= 1
    while hi + 1 < len(parts) and parts[hi + 1][2]:
        hi += 1
    return "".join(t for _, t, _ in parts[lo:hi + 1])


class LinkGuard(QObject):
    """Watches a text browser's links: a tooltip with the target on hover, and
    :meth:`open` (called for a clicked link) asks first when the link is :func:`misleading`.
    ``question_box`` is the last confirmation shown (tests read and click it)."""

    def __init__(self, browser: QTextBrowser) -> None:
        super().__init__(browser)
        self.browser = browser
        self._pressed: QPoint | None = None
        self.question_box: QMessageBox | None = None
        browser.viewport().installEventFilter(self)

    def link_at(self, pos: QPoint) -> tuple[str, QUrl] | None:
        """The text and target of the link under ``pos`` of the viewport, or None."""
        href = self.browser.anchorAt(pos)
        if not href:
            return None
        position = self.browser.cursorForPosition(pos).position()
        doc = self.browser.document()
        text = anchor_text(doc, position, href) or anchor_text(doc, max(0, position - 1), href)
        return text, QUrl(href)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease) \
                and isinstance(event, QMouseEvent):
            self._pressed = event.position().toPoint()
        elif kind == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            link = self.link_at(event.pos())
            if link is not None:
                QToolTip.showText(event.globalPos(), plain_tooltip(hover_text(*link)),
                                  self.browser.viewport())
                return True
        return False

    def open(self, url: QUrl, hand_over: Callable[[QUrl], None]) -> None:
        """A clicked link: ``hand_over(url)`` at once, or once the person confirms when the
        link's text shows another address."""
        link = self.link_at(self._pressed) if self._pressed is not None else None
        text = link[0] if link is not None and link[1] == url else ""
        if not misleading(text, url):
            hand_over(url)
            return
        box = message_box(self.browser, QMessageBox.Icon.Warning, question(text, url),
                          QMessageBox.StandardButton.Cancel, title="Open this link?")
        go = box.addButton("Open link", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        go.clicked.connect(lambda: hand_over(url))
        self.question_box = box
        box.open()
