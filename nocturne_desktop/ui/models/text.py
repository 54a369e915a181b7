"""How the models write a fact, a time, a label or a decider in a cell: plain strings, no Qt.

Tooltips go through :func:`plain_tooltip`, because Qt renders tooltip text that looks like
HTML as rich text and model output must never be interpreted.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any

from nocturne_desktop.core.mutations import decided_by_label, is_rule
from nocturne_desktop.core.types import Fact

PIN_MARK = "⚑ "
"""Shown before a pinned fact's text (a pinned fact is never forgotten by a rule or the model)."""


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` literally: Qt would render tooltip text that *looks* like
    HTML as rich text, and model output must never be interpreted. Empty stays empty (no
    tooltip at all)."""
    if not text:
        return ""
    body = html.escape(text).replace("\n", "<br>")
    return f"<qt><p style='white-space:pre-wrap'>{body}</p></qt>"


def fit_columns(header: Any, samples: dict[int, str], *, stretch: int | None = None,
                padding: int = 24) -> None:
    """Fixed, font-derived column widths on a ``QHeaderView``. ``ResizeToContents`` would ask
    the model for every row's size hint on every change - O(rows) on the GUI thread."""
    fm = header.fontMetrics()
    for col, sample in samples.items():
        header.setSectionResizeMode(col, header.ResizeMode.Interactive)
        header.resizeSection(col, fm.horizontalAdvance(sample) + padding)
    if stretch is not None:
        header.setSectionResizeMode(stretch, header.ResizeMode.Stretch)


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (line breaks shown as ⏎), cut to ``limit`` characters with …."""
    flat = " ⏎ ".join(part.strip() for part in text.splitlines() if part.strip()) or text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def age_text(seconds: float) -> str:
    """An age in the largest unit that fits: ``just now``, ``5 min``, ``3 h``, ``2 d``, ``1.5 y``."""
    s = max(0.0, seconds)
    if s < 60:
        return "just now"
    if s < 3600:
        return f"{int(s // 60)} min"
    if s < 86400:
        return f"{int(s // 3600)} h"
    days = s / 86400
    return f"{int(days)} d" if days < 365 else f"{days / 365:.1f} y"


def clock_text(ts: float) -> str:
    """The time of day for today, else the day and time."""
    dt = datetime.fromtimestamp(ts)
    today = datetime.now().date()
    return dt.strftime("%H:%M:%S") if dt.date() == today else dt.strftime("%d %b %H:%M")


def superseded_note(fact: Fact, *, short: bool = True) -> str:
    """``  — until 12 Mar, superseded by m_41`` for a superseded fact, else ``""``."""
    if not fact.superseded:
        return ""
    when = "?" if fact.valid_until is None else datetime.fromtimestamp(fact.valid_until).strftime(
        "%d %b" if short else "%d %b %Y %H:%M")
    text = f"until {when}, superseded by {fact.superseded_by}"
    return f"  — {text}" if short else f" ({text})"


_VERBS = {"restore": "restored", "undo": "undid", "redo": "redid", "edit": "edited", "add": "added",
          "pin": "pinned", "unpin": "unpinned", "forget": "forgot", "bring-back": "brought back",
          "recall": "brought back", "import": "imported",
          "keep-salient": "kept the most salient lines of"}


def version_label(label: str) -> str:
    """A version's label in words: the store's own labels (``pass:dedupe:before``,
    ``consolidation:start``, ``restore:s0003``, ``undo:sleep 3``) are internal names."""
    parts = label.split(":")
    if parts[0] == "pass" and len(parts) == 3 and parts[2] in ("before", "after"):
        return f"{parts[2]} {parts[1].capitalize()}"
    if label == "consolidation:start":
        return "sleep started"
    if len(parts) == 2 and parts[0] in _VERBS:
        what = parts[1].strip()
        if what.startswith("sleep "):
            what = "sleep #" + what.removeprefix("sleep ").strip()
        return f"{_VERBS[parts[0]]} {what}"
    return label.replace(":", " ")


_DONE = {"edit": "Edited", "add": "Added", "pin": "Pinned", "unpin": "Unpinned",
         "forget": "Forgot", "bring-back": "Brought back", "recall": "Brought back"}
"""A hand change's label verb, as the sentence that says it was done."""


def change_sentence(label: str, text_of: Callable[[str], str | None], *,
                    category: str | None = None, block: str | None = None) -> str:
    """A version's label as a sentence a person reads in the status line: ``edit:m_3`` →
    ``Edited “The user lives in Porto.”`` (``text_of(id)`` gives a fact's text; an id it does
    not know is shown as it is). ``category`` or ``block``: what an edit changed."""
    verb, _, what = label.partition(":")
    if verb in ("undo", "redo"):
        done = "Undid" if verb == "undo" else "Redid"
        if what.startswith("sleep "):
            return f"{done} sleep #{what.removeprefix('sleep ').strip()}"
        inner = change_sentence(what.replace(" ", ":", 1), text_of)
        return f"{done}: {inner[:1].lower()}{inner[1:]}"
    if verb in _DONE and what.startswith("m_"):
        text = text_of(what)
        shown = f"“{one_line(text, 80)}”" if text else what
        if verb == "edit" and block:
            return f"Moved {shown} to {block}"
        if verb == "edit" and category:
            return f"Filed {shown} under {category}"
        return f"{_DONE[verb]} {shown}"
    if verb == "restore":
        return f"Restored version {what}"
    words = version_label(label)
    return words[:1].upper() + words[1:]


def decided_text(decided_by: str | None, *, short: bool = False) -> str:
    """Who decided; the rules are marked with ⚙ so they stand apart from the model. A label an
    older version stored (``policy-engine``) is shown by its current name."""
    if not decided_by:
        return ""
    if not is_rule(decided_by):
        return decided_by
    name = decided_by_label(decided_by)
    return f"⚙ {name}" if short else f"⚙ the {name.replace('-', ' ')}"


def is_enforced(decided_by: str | None) -> bool:
    """Whether a rule (not the model, the person or the encoder) decided."""
    return is_rule(decided_by)
