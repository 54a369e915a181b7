"""How the models write a fact, a time, a label or a decider in a cell: plain strings, no Qt.

Tooltips go through :func:`plain_tooltip`, because Qt renders tooltip text that looks like
HTML as rich text and model output must never be interpreted.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any

from nocturne_desktop.core.mutations import decided_by_label, is_rule
from nocturne_desktop.core.types import Fact

PIN_MARK = "⚑ "
"""Shown before a pinned fact's text (a pinned fact is never forgotten by a rule or the model)."""


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` literally: Qt would render tooltip text that *looks* like
    HTML as rich text, and model output must never be interpreted."""
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
