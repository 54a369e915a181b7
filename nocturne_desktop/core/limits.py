"""What the store can hold, and how a model's values are quoted back (SPEC S-ROB-1..3).

One definition, used by the store (which refuses what breaks it), by the gates (which check the
same rules before accepting, so that what they accept is writable) and by everything that logs a
model's reply (the sleep, the encoder): a refusal quotes a bounded, sanitised excerpt, never the
raw value, so no reply — a lone surrogate, a NUL, a 10 MB string, JSON nested 10,000 deep,
NaN — can make the audit write itself fail.

Every function here is total: any value in, a string or a JSON value out, never an exception,
and the work is bounded by the limit asked for (a huge value is sliced before it is examined).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

MAX_TEXT_CHARS = 4000
"""Longest fact text the store accepts, in characters (code points)."""

MAX_TURN_CHARS = 200_000
"""Longest transcript turn the store accepts, in characters."""

MAX_REASON_CHARS = 1000
"""Longest reason a gate accepts. The pass contracts ask for 160 characters; a server that does not
enforce the schema may send more, which is still judged, up to this bound."""

MAX_ID_CHARS = 64
"""Longest id a gate looks up or quotes. Real ids are ``m_<n>``; anything longer is refused
before it is echoed, so a 1 MB "id" costs a short refusal, not a 1 MB one."""

MAX_ENTRIES = 1000
"""Most entries one reply may propose; a reply with more is refused as a whole (a pass's
contract allows a few dozen at most)."""

MAX_JSON_DEPTH = 64
"""Deepest JSON nesting a reply may use (a real proposal is four levels deep). Deeper text is
not handed to the JSON parser, which would recurse once per level."""

SHOWN_CHARS = 80
"""How much of a model's value a refusal quotes."""

EXCERPT_CHARS = 2000
"""How much of a refused proposal the audit log keeps."""

RAW_EXCERPT_CHARS = 20_000
"""How much of an unusable raw reply the audit log keeps."""

REPLACEMENT = "\ufffd"

_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Characters a logged excerpt never carries: control characters (tab and line breaks aside),
bidirectional overrides (they reorder the text around them on screen) and lone surrogates
(not encodable, so SQLite refuses the row)."""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def surrogate_at(text: str) -> int | None:
    """Position of the first lone surrogate in ``text`` (which cannot be stored), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def text_problem(text: object, *, what: str = "text", limit: int = MAX_TEXT_CHARS) -> str | None:
    """Why the store would refuse ``text`` as a fact's text, or None. The store raises this
    message; a gate refuses with it."""
    if not isinstance(text, str):
        return f"{what} must be a string, not {type(text).__name__}"
    if not text.strip():
        return f"{what} is empty"
    if "\x00" in text:
        return f"{what} contains a NUL byte"
    if len(text) > limit:
        return f"{what} is {len(text)} characters; the limit is {limit}"
    at = surrogate_at(text)
    if at is not None:
        return f"{what} is not valid Unicode (a lone surrogate at position {at})"
    return None


def has_visible(text: str) -> bool:
    """True when ``text`` holds a character a reader can see: not a space, a separator, a
    control or format character (a zero-width space, a NUL) or a lone surrogate."""
    return any(unicodedata.category(ch)[0] not in "CZ" for ch in text)


def reason_problem(reason: object) -> str | None:
    """Why a proposal's ``reason`` is not acceptable, or None: it must say something visible,
    within :data:`MAX_REASON_CHARS`, in storable text."""
    if isinstance(reason, str) and len(reason) > MAX_REASON_CHARS:
        return f"reason is {len(reason):,} characters; a reason has at most {MAX_REASON_CHARS}"
    if not isinstance(reason, str) or not has_visible(reason):
        return "reason is empty: every proposal must say why"
    bad = _CONTROL.search(reason)
    if bad is not None:
        return f"reason contains a control character (U+{ord(bad.group()):04X})"
    at = surrogate_at(reason)
    if at is not None:
        return f"reason is not valid Unicode (a lone surrogate at position {at})"
    return None


def id_problem(value: object, what: str) -> str | None:
    """Why ``value`` cannot be an id to look up, when it is a string too long to be one."""
    if isinstance(value, str) and len(value) > MAX_ID_CHARS:
        return f"{what} is {len(value):,} characters long; an id has at most {MAX_ID_CHARS}"
    return None


def clean(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` as a log may hold it: at most ``limit`` characters (then a note of how many
    more there were), unsafe characters replaced by U+FFFD."""
    more = len(text) - limit
    head = _UNSAFE.sub(REPLACEMENT, text[:limit] if more > 0 else text)
    return f"{head}… (+{more:,} characters)" if more > 0 else head


def show(value: object, limit: int = SHOWN_CHARS) -> str:
    """A model's value as a refusal quotes it: ``repr`` for a short string or a scalar (so
    NUL and surrogates appear escaped), a bounded excerpt otherwise."""
    if isinstance(value, str):
        more = len(value) - limit
        shown = repr(value[:limit] if more > 0 else value)
        return f"{shown}… ({len(value):,} characters)" if more > 0 else shown
    return excerpt(value, limit)[0]


def storable(value: Any, limit: int = EXCERPT_CHARS) -> Any:
    """``value`` itself when it is plain JSON the store can write (JSON types, finite numbers,
    clean strings, nesting and size within bounds), else its sanitised excerpt as a string."""
    text, plain = excerpt(value, limit)
    return value if plain else text


class _Close(str):
    """A closing bracket queued on the render stack."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """A compact JSON-like rendering of ``value`` cut at ``limit`` characters, and whether the
    value was plain (see :func:`storable`). Iterative: depth costs no recursion."""
    out: list[str] = []
    size = 0
    plain = True
    # each frame: a value to render, a closing bracket, or the members of an open container
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        if size > limit:
            plain = False
            break
        item, depth = stack.pop()
        piece: str
        if isinstance(item, _Close):
            piece = str(item)
        elif isinstance(item, _Members):
            nxt = item.next()
            if nxt is None:
                continue
            stack.append((item, depth))
            key, member, first = nxt
            prefix = "" if first else ","
            if item.is_dict:
                if not isinstance(key, str):
                    plain = False
                prefix += _string(str(key), limit) + ":"
                plain = plain and _is_clean(str(key))
            out.append(prefix)
            size += len(prefix)
            stack.append((member, depth))
            continue
        elif item is None:
            piece = "null"
        elif item is True:
            piece = "true"
        elif item is False:
            piece = "false"
        elif isinstance(item, int):
            if item.bit_length() > 64 * 4:
                plain = False
                piece = f"<an integer of {item.bit_length():,} bits>"
            else:
                piece = str(item)
        elif isinstance(item, float):
            if math.isfinite(item):
                piece = repr(item)
            else:
                plain = False
                piece = "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
        elif isinstance(item, str):
            plain = plain and len(item) <= limit and _is_clean(item)
            piece = _string(item, limit)
        elif isinstance(item, list | dict):
            if type(item) not in (list, dict):
                plain = False
            if depth >= MAX_JSON_DEPTH:
                plain = False
                piece = "[…]" if isinstance(item, list) else "{…}"
            else:
                is_dict = isinstance(item, dict)
                out.append("{" if is_dict else "[")
                size += 1
                stack.append((_Close("}" if is_dict else "]"), depth))
                stack.append((_Members(item), depth + 1))
                continue
        else:
            plain = False
            piece = f"<{type(item).__name__}>"
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    if size > limit or stack:
        plain = False
        text = text[:limit] + "…"
    return text, plain


class _Members:
    """Iterates a list's elements or a dict's items, remembering whether one came before."""

    def __init__(self, container: list[Any] | dict[Any, Any]) -> None:
        self.is_dict = isinstance(container, dict)
        self._it: Any = iter(container.items()) if isinstance(container, dict) else iter(container)
        self._first = True

    def next(self) -> tuple[Any, Any, bool] | None:
        try:
            got = next(self._it)
        except StopIteration:
            return None
        first, self._first = self._first, False
        if self.is_dict:
            return got[0], got[1], first
        return None, got, first


def _is_clean(text: str) -> bool:
    return _UNSAFE.search(text) is None


def _string(text: str, limit: int) -> str:
    """A JSON string literal of ``text``'s first ``limit`` characters, sanitised."""
    body = _UNSAFE.sub(REPLACEMENT, text[:limit])
    body = body.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    body = body.replace("\t", "\\t")
    return f'"{body}"' + ("…" if len(text) > limit else "")
