"""The Markdown export read by a real Markdown reader (Qt's md4c, GitHub's dialect, as a
person's viewer reads it): a fact's line shows exactly its text, in no heading, emphasis,
code, strike-through, image, HTML or hidden link, whatever characters it holds; only the
metadata after it is in italics."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from PySide6.QtGui import QFont, QTextDocument

from nocturne_desktop.core.store.mdexchange import escape, one_line
from tests.core.test_markdown_exchange import HOSTILE

META = "context · since 2023-11-14"


def _formats(doc: QTextDocument) -> list[tuple[str, Any]]:
    block = doc.begin()
    out = []
    it = block.begin()
    while not it.atEnd():
        frag = it.fragment()
        out.append((frag.text(), frag.charFormat()))
        it += 1
    return out


def shown(text: str, qapp: Any) -> QTextDocument:
    doc = QTextDocument()
    doc.setMarkdown(f"- {escape(text)} — *{META}*\n",
                    QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    return doc


def _plain(fmt: Any) -> bool:
    return (fmt.fontWeight() <= QFont.Weight.Normal and not fmt.fontItalic()
            and not fmt.fontStrikeOut() and not fmt.fontFixedPitch() and not fmt.isImageFormat())


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=HOSTILE)
def test_a_fact_line_shows_its_text_and_nothing_else(text: str, qapp: Any) -> None:
    doc = shown(text, qapp)
    line = one_line(text)
    assert doc.blockCount() == 1, doc.toMarkdown()
    block = doc.begin()
    assert block.textList() is not None and block.blockFormat().headingLevel() == 0
    assert block.text() == f"{line} — {META}"
    at = 0
    for piece, fmt in _formats(doc):
        inside_text = at < len(line)
        if inside_text:
            assert _plain(fmt), (text, piece)
            if fmt.isAnchor():  # a bare address GitHub links: it shows its own target
                assert piece.rstrip(". ") in fmt.anchorHref(), (text, piece, fmt.anchorHref())
        at += len(piece)
    tail = [fmt for piece, fmt in _formats(doc) if META in piece]
    assert tail and tail[0].fontItalic()


def test_ordinary_punctuation_is_written_as_it_is(qapp: Any) -> None:
    for text in ("The user lives in Lisbon.", "Standup moved to 10:00 (Mondays)!",
                 "The user's snake_case_name is ok.", "5 < 6 & 7 > 2", "it`s ~5 km."):
        assert escape(text) == text
        assert shown(text, qapp).begin().text() == f"{text} — {META}"
