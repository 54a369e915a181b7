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
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtGui import Qt as GuiQt

from nocturne_desktop.core.store import Store

MARKERS = ("<h1>", "<img src=", "<a href=")
"""What each hostile text holds; a rendering that hides one of them interpreted it."""


RAW_LINK = "https://evil.example/"
"""The target of the hostile texts' raw ``<a href>`` (a Markdown link elsewhere goes further)."""


def hostile_texts(image: Path) -> dict[str, str]:
    """Memory and model texts a hostile person (or an injected page) could write: a heading, a
    local ``file://`` image (a real file, so a rendering that reads it is seen to), a link.
    Each starts with its markup, so Qt's first-line test takes it for rich text."""
    url = QUrl.fromLocalFile(str(image)).toString()
    return {
        "heading": "<h1>Heading</h1> the user keeps a diary of headings.",
        "image": f'<img src="{url}"> the user keeps a photo of the garden.',
        "link": f'<a href="{RAW_LINK}">click here</a> the user follows links.',
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


# -- the walk over every widget ----------------------------------------------------------------


class Walk:
    """Every text a set of widgets shows that can carry markup: labels (with their format),
    widget, action, tab and item tooltips, item views' cells (each role a delegate may render),
    header tooltips, and text documents. ``tried`` counts the texts looked at; ``bad`` lists
    each that would render as markup, with where it is and what it would show."""

    ROW_LIMIT = 400
    """Rows read per level of an item model (enough for every hostile row of the test store)."""

    def __init__(self) -> None:
        self.tried = 0
        self.hostile = 0
        """Texts looked at that hold one of the hostile markers (the walk saw memory's words)."""
        self.bad: list[str] = []
        self.classes: set[str] = set()

    def check(self, where: str, text: object, fmt: Qt.TextFormat = Qt.TextFormat.AutoText,
              *, strict: bool = False) -> None:
        """One text; ``strict``: a label, which must be plain whenever it shows hostile words
        (its next text may put them on the first line)."""
        if not isinstance(text, str) or not text:
            return
        self.tried += 1
        marked = any(m in text or m.replace("<", "&lt;") in text for m in MARKERS)
        self.hostile += marked
        found = problems(text, fmt)
        if strict and marked and fmt != Qt.TextFormat.PlainText and not found:
            found = ["memory's words in a label that is not plain text"]
        if found:
            self.bad.append(f"{where}: {text[:80]!r} → {', '.join(found)}")

    def widgets(self, roots: list[Any]) -> None:
        from PySide6.QtGui import QAction
        from PySide6.QtWidgets import QAbstractItemView, QLabel, QTabBar, QTextEdit, QWidget

        seen: set[int] = set()
        for root in roots:
            for w in [root, *root.findChildren(QWidget)]:
                if id(w) in seen:
                    continue
                seen.add(id(w))
                name = f"{type(w).__name__}({w.objectName() or ''})"
                self.classes.add(type(w).__name__)
                self.check(f"{name} tooltip", w.toolTip())
                self.check(f"{name} what's this", w.whatsThis())
                if isinstance(w, QLabel):
                    self.check(f"{name} text", w.text(), w.textFormat(), strict=True)
                if isinstance(w, QTabBar):
                    for i in range(w.count()):
                        self.check(f"{name} tab {i} tooltip", w.tabToolTip(i))
                if isinstance(w, QAbstractItemView) and w.model() is not None:
                    self.model(name, w.model(), w)
                if isinstance(w, QTextEdit):
                    self.document(name, w)
                for a in w.actions():
                    self.check(f"{name} action {a.text()!r} tooltip", a.toolTip())
            for a in root.findChildren(QAction):
                self.check(f"action {a.text()!r} tooltip", a.toolTip())

    def model(self, name: str, model: Any, view: Any) -> None:
        from PySide6.QtCore import QModelIndex

        from nocturne_desktop.ui import search

        tip = Qt.ItemDataRole.ToolTipRole

        def columns(parent: QModelIndex) -> int:
            try:
                return max(1, int(model.columnCount(parent)))
            except TypeError:  # a list model's columnCount is private to Python
                return 1
        # a delegate that draws HTML (the search's hits) draws that role as rich text
        html = isinstance(view.itemDelegate(), search._HitDelegate)
        for orient in (Qt.Orientation.Horizontal, Qt.Orientation.Vertical):
            n = columns(QModelIndex()) if orient == Qt.Orientation.Horizontal else min(
                model.rowCount(QModelIndex()), self.ROW_LIMIT)
            for s in range(n):
                self.check(f"{name} header {s} tooltip", model.headerData(s, orient, tip))

        from PySide6.QtCore import QAbstractListModel, QAbstractTableModel

        flat = model if isinstance(model, QAbstractTableModel | QAbstractListModel) else None

        def rows(parent: QModelIndex, depth: int) -> None:
            for r in range(min(model.rowCount(parent), self.ROW_LIMIT)):
                for c in range(columns(parent)):
                    idx = model.index(r, c, parent)
                    self.check(f"{name} cell {r},{c} tooltip", model.data(idx, tip))
                    if html:
                        self.check(f"{name} cell {r},{c} html", model.data(idx, search.ROLE_HTML),
                                   Qt.TextFormat.RichText)
                    self.check(f"{name} cell {r},{c} text", model.data(idx),
                               Qt.TextFormat.PlainText)  # the standard delegate: plain
                first = model.index(r, 0, parent)
                if depth < 6 and flat is None and model.rowCount(first) > 0:
                    rows(first, depth + 1)

        rows(QModelIndex(), 0)

    def document(self, name: str, edit: Any) -> None:
        """A text document (the transcript): nothing in it is an image, and raw HTML that a
        message holds is there as its characters."""
        doc = edit.document()
        self.tried += 1
        block = doc.begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                cf = it.fragment().charFormat()
                if cf.isImageFormat():
                    self.bad.append(f"{name}: an image {cf.toImageFormat().name()!r}")
                if cf.isAnchor() and cf.anchorHref() == RAW_LINK:
                    self.bad.append(f"{name}: raw HTML made a link to {cf.anchorHref()!r}")
                it += 1
            block = block.next()
