"""Replies rendered as Markdown, safely (S-MD-1).

Qt's own Markdown reader (md4c, CommonMark with the GitHub extensions) parses the reply with
``MarkdownNoHTML``: raw HTML is then *kept as literal text* (``<b>`` shows as ``<b>``), never
interpreted — checked by ``tests/ui/test_markdown.py`` against hostile input. Two things the
reader would still do are undone here:

- **entities** (``&amp;``, ``&#60;``) would be decoded: an ``&`` that starts one is
  backslash-escaped before parsing (outside code, where Markdown decodes them), so the reply's
  characters are shown as sent;
- **images** (``![alt](http://…)``) would become image resources that the document asks for
  when it lays them out: each is replaced by the text ``[image: alt]`` linked to its address,
  before the document is ever laid out. :class:`SafeDocument` refuses every resource anyway.

Links keep their address as an anchor; the transcript opens one only when it is clicked, and
only for ``http``, ``https`` and ``mailto`` (``javascript:`` and the rest are never opened).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QObject, QUrl
from PySide6.QtGui import (
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
)

from nocturne_desktop.ui import palette

FEATURES = QTextDocument.MarkdownFeature(
    int(QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value)
    | int(QTextDocument.MarkdownFeature.MarkdownNoHTML.value))
"""GitHub's dialect (tables, strikethrough, task lists, autolinks) with raw HTML as text."""

OPENABLE_SCHEMES = frozenset({"http", "https", "mailto"})

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ENTITY_AMP = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
_TICKS = re.compile(r"(`+)")


class SafeDocument(QTextDocument):
    """A document that loads no resource at all (no file, no network): ``refused`` lists what
    was asked for, so a test can prove that nothing reached further than this method."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.refused: list[str] = []

    def loadResource(self, _type: int, name: QUrl | str) -> object:
        self.refused.append(name.toString() if isinstance(name, QUrl) else name)
        return None


def _escape_entities_outside_code(line: str) -> str:
    """Backslash-escape entity-starting ``&`` outside inline code spans of one line."""
    parts = _TICKS.split(line)
    out: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if part.startswith("`"):
            # a run of N backticks opens a code span closed by the next run of exactly N
            close = next((j for j in range(i + 2, len(parts), 2) if parts[j] == part), None)
            if close is not None:
                out.append("".join(parts[i:close + 1]))
                i = close + 1
                continue
            out.append(part)
        else:
            out.append(_ENTITY_AMP.sub(r"\\&", part))
        i += 1
    return "".join(out)


def protect_entities(text: str) -> str:
    """The reply with every entity-like ``&…;`` outside code made literal for the reader."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            out.append(line)
        elif m:
            fence = m.group(1)
            out.append(line)
        else:
            out.append(_escape_entities_outside_code(line))
    return "\n".join(out)


def _replace_images(doc: QTextDocument) -> int:
    """Turn every image into the text ``[image: alt]`` linked to its address."""
    spots: list[tuple[int, int, str, str]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            fmt = frag.charFormat()
            if fmt.isImageFormat():
                img = fmt.toImageFormat()
                alt = img.property(QTextFormat.Property.ImageAltText)
                spots.append((frag.position(), frag.length(), img.name(), str(alt or "")))
            it += 1
        block = block.next()
    for pos, length, url, alt in reversed(spots):
        cur = QTextCursor(doc)
        cur.setPosition(pos)
        cur.setPosition(pos + length, QTextCursor.MoveMode.KeepAnchor)
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(url)
        link.setForeground(palette.current().link())
        link.setFontUnderline(True)
        cur.insertText(f"[image: {alt or url}]", link)
    return len(spots)


def _style_code(doc: QTextDocument) -> None:
    """Code blocks on a quiet background, so they read as code."""
    shade = palette.current().alternateBase()
    block = doc.begin()
    while block.isValid():
        bf = block.blockFormat()
        if bf.hasProperty(QTextFormat.Property.BlockCodeFence) or bf.nonBreakableLines():
            cur = QTextCursor(block)
            bf.setBackground(shade)
            cur.setBlockFormat(bf)
        block = block.next()


def render(text: str) -> QTextDocumentFragment:
    """The reply as a rich-text fragment: Markdown rendered, HTML literal, no images."""
    doc = SafeDocument()
    doc.setMarkdown(protect_entities(text), FEATURES)
    _replace_images(doc)
    _style_code(doc)
    return QTextDocumentFragment(doc)


def is_openable(url: QUrl) -> bool:
    """Whether a clicked link may be handed to the system (a browser or a mail program)."""
    return url.isValid() and url.scheme().lower() in OPENABLE_SCHEMES
