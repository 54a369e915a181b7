"""A memory block as lines: one fact per line, and what changed between two readings of it.

The agent reads plain lines, never ids; which fact a line is comes from what the link last
wrote or read (a list of ``(fact id or None, line)`` per block, kept in the store's link state).
:func:`diff` compares that list with the block as it is now and says, line by line, what was
added, removed or edited there. Pure: no store, no network.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Synced = list[tuple[str | None, str]]
"""A block as the link last saw it: each line with the fact it is; a refused line has no fact
and is kept as its :func:`refused_key`, never as its text (it may hold a secret)."""

EDIT_SIMILARITY = 0.5
"""How alike (difflib's ratio over the lines' words) a replaced line must be to its new text to
count as an edit of the same fact; less alike, it is a removal and an addition."""

REFUSED = "#refused sha256:"
_WORD = re.compile(r"\w+")


def refused_key(line: str) -> str:
    """What the link keeps of a line it refused: enough to know the line again, not its text."""
    return REFUSED + hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()


def render_line(text: str) -> str:
    """A fact's text as one line of a block (its own line breaks become spaces)."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def render(lines: Sequence[str]) -> str:
    """A block's value."""
    return "\n".join(lines)


def parse(value: str) -> list[str]:
    """A block's lines, as the link reads them: each stripped, blank lines left out."""
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class LineOp:
    """One line that changed in a block since the link last saw it.

    ``add``: ``line`` is new (``at`` its index in the block now); ``remove``: the line of
    ``fact_id`` (``old``) is gone; ``edit``: the line of ``fact_id`` now reads ``line``.
    ``fact_id`` may be None for a line that was refused before (its edit is then an add)."""

    kind: Literal["add", "remove", "edit"]
    label: str
    fact_id: str | None
    line: str
    old: str | None
    at: int | None


def _similar(a: str, b: str) -> bool:
    words_a, words_b = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    return difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio() >= EDIT_SIMILARITY


def diff(label: str, synced: Synced, now: Sequence[str]) -> tuple[list[LineOp], dict[int, str | None]]:
    """The changes from ``synced`` to the block's lines ``now``, and for every line of ``now``
    that did not change, the fact it is (index → id). A replaced run of lines pairs its old and
    new lines in order while they are alike (:data:`EDIT_SIMILARITY`): each pair is an edit, the
    rest are removals and additions."""
    old = [line for _, line in synced]
    refused = {line for _, line in synced if line.startswith(REFUSED)}
    keys = [key if (key := refused_key(line)) in refused else line for line in now] if refused \
        else list(now)
    ops: list[LineOp] = []
    kept: dict[int, str | None] = {}
    matcher = difflib.SequenceMatcher(None, old, keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept.update((j1 + k, synced[i1 + k][0]) for k in range(i2 - i1))
            continue
        paired = 0
        if tag == "replace":
            while (paired < min(i2 - i1, j2 - j1)
                   and _similar(old[i1 + paired], now[j1 + paired])):
                fact_id, was = synced[i1 + paired]
                j = j1 + paired
                if fact_id is None:
                    ops.append(LineOp("add", label, None, now[j], was, j))
                else:
                    ops.append(LineOp("edit", label, fact_id, now[j], was, j))
                paired += 1
        for i in range(i1 + paired, i2):
            fact_id, was = synced[i]
            if fact_id is not None:
                ops.append(LineOp("remove", label, fact_id, was, was, None))
        ops.extend(LineOp("add", label, None, now[j], None, j) for j in range(j1 + paired, j2))
    return ops, kept
