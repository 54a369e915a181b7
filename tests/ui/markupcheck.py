"""Would Qt render this text as markup? The check the plain-text tests share, and the hostile
texts they put in memory.

Qt shows a label in ``AutoText`` and every tooltip as rich text when ``Qt.mightBeRichText``
says the text looks like HTML (a tag before the first line break). :func:`problems` renders
such a text the way Qt would (a ``QTextDocument`` fed the HTML, laid out) and lists what a
person would see instead of the characters: a heading, an image read from disk, a link, tags
swallowed. Plain text (a ``PlainText`` label, a tooltip that does not look like HTML, or one
escaped by :func:`nocturne_desktop.ui.plaintext.plain_tooltip`) has none.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtGui import Qt as GuiQt

from nocturne_desktop.core.store import Store

MARKERS = ("<h1>", "<img src=", "<a href=")
"""What each hostile text holds; a rendering that hides one of them interpreted it."""


def hostile_texts(image: Path) -> dict[str, str]:
    """Memory and model texts a hostile person (or an injected page) could write: a heading, a
    local ``file://`` image (a real file, so a rendering that reads it is seen to), a link.
    Each starts with its markup, so Qt's first-line test takes it for rich text."""
    url = QUrl.fromLocalFile(str(image)).toString()
    return {
        "heading": "<h1>Heading</h1> the user keeps a diary of headings.",
        "image": f'<img src="{url}"> the user keeps a photo of the garden.',
        "link": '<a href="https://evil.example/">click here</a> the user follows links.',
    }


def make_image(path: Path) -> Path:
    """A small real PNG at ``path``: a rendering that loads it has read a local file."""
    img = QImage(4, 4, QImage.Format.Format_RGB32)
    img.fill(0xFF0000)
    assert img.save(str(path))
    return path


class Rendering(QTextDocument):
    """A document that records every resource its layout asks for, and loads it as Qt would."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def loadResource(self, kind: int, name: QUrl) -> object:
        self.asked.append(name.toString())
        return super().loadResource(kind, name)


def rich(text: str, fmt: Qt.TextFormat = Qt.TextFormat.AutoText) -> bool:
    """Whether Qt renders ``text`` as rich text in ``fmt`` (a tooltip is always ``AutoText``)."""
    if fmt == Qt.TextFormat.PlainText:
        return False
    if fmt == Qt.TextFormat.RichText:
        return True
    if fmt == Qt.TextFormat.MarkdownText:
        return True
    return bool(GuiQt.mightBeRichText(text))


def problems(text: str, fmt: Qt.TextFormat = Qt.TextFormat.AutoText) -> list[str]:
    """What rendering ``text`` in ``fmt`` would show other than its characters (empty: it
    shows literally, or as harmless formatting of escaped text)."""
    if not text or not rich(text, fmt):
        return []
    doc = Rendering()
    if fmt == Qt.TextFormat.MarkdownText:
        doc.setMarkdown(text)
    else:
        doc.setHtml(text)
    doc.size()  # lays it out: images are asked for now
    found: list[str] = []
    block = doc.begin()
    while block.isValid():
        if block.blockFormat().headingLevel():
            found.append(f"a heading ({block.text()!r})")
        it = block.begin()
        while not it.atEnd():
            cf = it.fragment().charFormat()
            if cf.isImageFormat():
                name = cf.toImageFormat().name()
                loaded = doc.resource(QTextDocument.ResourceType.ImageResource, QUrl(name))
                found.append(f"an image {name!r}" + (" read from disk" if loaded else ""))
            if cf.isAnchor() and cf.anchorHref():
                found.append(f"a link to {cf.anchorHref()!r}")
            it += 1
        block = block.next()
    shown = doc.toPlainText()
    found += [f"{m!r} swallowed" for m in MARKERS if m in text and m not in shown]
    return found


def seed_hostile(store: Store, texts: dict[str, str]) -> dict[str, str]:
    """Memory holding the hostile texts everywhere a view shows memory or model words: fact
    texts, the turns they came from, the encoder's and a sleep's reasons, a merged text, a
    version label, conversation titles. Returns ``{kind: fact id}`` (and ``merged``)."""
    from nocturne_desktop.core import mutations as mu
    from nocturne_desktop.core.types import FactDraft

    ids: dict[str, str] = {}
    for kind, text in texts.items():
        turn = store.add_turn("user", text)
        store.add_turn("assistant", text)
        fact = store.append("scratch", FactDraft(text, "context", turn.n))
        ids[kind] = fact.id
        store.record_mutations([mu.to_row(mu.Append(
            pass_name="encoder", target=fact.id, reason=text, decided_by=mu.DecidedBy.ENCODER,
            turn=turn.n))], seq=None, sleep_id=None)
    store.snapshot(texts["heading"][:60])
    extra = store.append("scratch", FactDraft(texts["link"] + " Again.", "context"))
    store.commit_pass([mu.to_row(mu.Merge(
        pass_name="merge", into=ids["heading"], from_ids=(extra.id,), reason=texts["image"],
        merged_text=texts["heading"] + " Merged."))], label="merge", sleep_id=None)
    ids["merged"] = extra.id
    store.new_conversation()
    store.add_turn("user", texts["image"])
    return ids


def shown(text: str, fmt: Qt.TextFormat = Qt.TextFormat.AutoText) -> str:
    """The characters a person reads when ``text`` is shown in ``fmt``."""
    if not rich(text, fmt):
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()
