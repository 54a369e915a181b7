"""Finding the JSON inside a model's text, and salvaging what precedes a cut.

Small local models wrap their JSON in all sorts of things: a ``<think>…</think>`` preamble
(sometimes with the opening tag eaten by the chat template), a Markdown fence, a sentence of
prose before and after. These helpers peel that away without ever inventing content: they only
return text the model actually wrote, parsed by :func:`json.loads`.

Any text is safe to hand them: JSON nested deeper than :data:`MAX_JSON_DEPTH` is never given to
the parser (which recurses once per level and would raise RecursionError), and
the search for an object does a bounded amount of scanning per character of the reply, so a
10 MB run of ``{`` is refused in linear time rather than rescanned from every brace.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from nocturne_desktop.core.limits import MAX_JSON_DEPTH

SCAN_WORK_PER_CHAR = 64
"""The search for the first object may scan this many characters per character of the text
(plus one object's worth); past that budget it gives up and finds nothing."""

MAX_PARSE_ATTEMPTS = 256
"""Balanced candidates the search hands to the parser before it gives up: prose holds a few
braces, not thousands (3 million ``{a}`` took 8 s of parsing without this bound)."""

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)


def strip_think(text: str) -> str:
    """Remove reasoning blocks.

    Handles complete ``<think>…</think>`` blocks, a closing tag without its opening one (the
    template put ``<think>`` in the prompt, so the reply starts mid-thought), and an opening tag
    that never closes (the reply is still thinking when it stops) — the last is dropped to the end.
    """
    out = _remove_think_blocks(text)
    close = _THINK_CLOSE.search(out)
    if close is not None:
        out = out[close.end() :]
    opened = _THINK_OPEN.search(out)
    if opened is not None:
        out = out[: opened.start()]
    return out


def _remove_think_blocks(text: str) -> str:
    """``text`` without its complete ``<think>…</think>`` blocks, each opening tag paired with
    the first closing tag after it. One pass over the tags: the lazy pattern that did this
    retried from every unclosed ``<think>`` and took a minute on 40,000 of them."""
    kept: list[str] = []
    start = 0
    open_at: int | None = None
    for tag in _THINK_TAG.finditer(text):
        if open_at is None:
            if not tag.group(1):
                open_at = tag.start()
        elif tag.group(1):
            kept.append(text[start:open_at])
            start, open_at = tag.end(), None
    kept.append(text[start:])
    return "".join(kept)


def strip_fences(text: str) -> str:
    """The content of the first Markdown code fence, or the text unchanged if there is none.

    An unterminated fence (the reply was cut off inside it) yields everything after the opener.
    """
    m = _FENCE.search(text)
    if m is None:
        return text
    return m.group(1)


class TooDeep(ValueError):
    """The JSON at hand nests deeper than :data:`MAX_JSON_DEPTH`."""


def _scan_value_end(text: str, start: int) -> int | None:
    """Index just past the balanced ``{…}``/``[…]`` that opens at ``start``, or None if cut.

    Strings are honoured (braces inside them do not count), including escaped quotes. Raises
    :class:`TooDeep` as soon as the nesting passes :data:`MAX_JSON_DEPTH`.
    """
    depth = 0
    in_string = False
    escaped = False
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise TooDeep(f"the JSON nests deeper than {MAX_JSON_DEPTH} levels")
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first balanced JSON object in ``text`` that parses, or None.

    Tries each ``{`` in turn, so prose such as "use {braces} like this" before the real object
    does not hide it. None, too, when the JSON nests too deep or the search runs out of its
    budget (see the module docstring).
    """
    budget = SCAN_WORK_PER_CHAR * len(text)
    attempts = MAX_PARSE_ATTEMPTS
    pos = text.find("{")
    while pos != -1:
        try:
            end = _scan_value_end(text, pos)
        except TooDeep:
            return None
        budget -= (end if end is not None else len(text)) - pos
        if budget < 0:
            return None
        if end is not None:
            attempts -= 1
            if attempts < 0:
                return None
            try:
                value = json.loads(text[pos:end])
            except ValueError:
                pass
            else:
                if isinstance(value, dict):
                    return value
        pos = text.find("{", pos + 1)
    return None


def candidate_text(text: str) -> str:
    """The part of a reply where its JSON should be: no reasoning, inside the fence if any."""
    body = strip_think(text)
    if not body.strip() and _THINK_OPEN.search(text):
        # Everything was inside an unterminated think block; look there rather than nowhere.
        body = _THINK_OPEN.sub("", text)
    return strip_fences(body)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The reply's JSON object after stripping reasoning and fences, or None."""
    body = candidate_text(text)
    found = first_json_object(body)
    if found is None and body is not text:
        found = first_json_object(text)
    return found


@dataclass
class Salvage:
    """What a tolerant scan of a cut-off object recovered.

    ``fields`` holds the top-level members that were complete before the cut (the list field
    included, holding only its complete elements); ``complete_items`` counts those elements.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    list_found: bool = False
    complete_items: int = 0


_WS = " \t\r\n"


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _scan_string_end(text: str, start: int) -> int | None:
    """Index just past the JSON string that opens at ``start`` (a quote), or None if cut."""
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        i += 1
    return None


def _scan_scalar_end(text: str, start: int) -> int | None:
    """Index just past a number/true/false/null at ``start``, or None if it runs to the cut."""
    i = start
    n = len(text)
    while i < n and text[i] not in ",}] \t\r\n":
        i += 1
    return i if i < n else None


def _scan_any_end(text: str, start: int) -> int | None:
    if start >= len(text):
        return None
    ch = text[start]
    if ch in "{[":
        return _scan_value_end(text, start)
    if ch == '"':
        return _scan_string_end(text, start)
    return _scan_scalar_end(text, start)


def salvage_object(text: str, list_field: str) -> Salvage:
    """Recover the complete members of a JSON object that was cut off mid-way.

    Walks the top-level object key by key; a member whose value is complete is kept. When the
    value of ``list_field`` is an array that was cut, its complete elements are kept (each
    parsed on its own) and the scan stops there — nothing after the cut is guessed. A value
    nested too deep ends the scan as a cut would.
    """
    result = Salvage()
    with contextlib.suppress(TooDeep):
        _salvage_into(result, text, list_field)
    return result


def _salvage_into(result: Salvage, text: str, list_field: str) -> Salvage:
    body = candidate_text(text)
    i = body.find("{")
    if i == -1:
        return result
    i += 1
    n = len(body)
    while True:
        i = _skip_ws(body, i)
        if i >= n or body[i] != '"':
            return result
        key_end = _scan_string_end(body, i)
        if key_end is None:
            return result
        try:
            key = json.loads(body[i:key_end])
        except ValueError:
            return result
        i = _skip_ws(body, key_end)
        if i >= n or body[i] != ":":
            return result
        i = _skip_ws(body, i + 1)
        if i >= n:
            return result
        if key == list_field and body[i] == "[":
            result.list_found = True
            items, whole = _salvage_array(body, i)
            result.fields[key] = items
            result.complete_items = len(items)
            if not whole:
                return result
            end = _scan_value_end(body, i)
            if end is None:  # pragma: no cover - whole implies a closing bracket
                return result
            i = end
        else:
            end = _scan_any_end(body, i)
            if end is None:
                return result
            try:
                result.fields[key] = json.loads(body[i:end])
            except ValueError:
                return result
            i = end
        i = _skip_ws(body, i)
        if i >= n or body[i] != ",":
            return result
        i += 1


def _salvage_array(text: str, start: int) -> tuple[list[Any], bool]:
    """The complete, parseable elements of the array at ``start``; True if the array closed."""
    items: list[Any] = []
    i = start + 1
    n = len(text)
    while True:
        i = _skip_ws(text, i)
        if i >= n:
            return items, False
        if text[i] == "]":
            return items, True
        try:
            end = _scan_any_end(text, i)
        except TooDeep:
            return items, False
        if end is None:
            return items, False
        j = _skip_ws(text, end)
        if j >= n:
            # The element looks complete but nothing follows it: a scalar may have been cut
            # ("12" of "123"), so only trust containers and strings, which are self-delimiting.
            if text[i] in '{["':
                with contextlib.suppress(ValueError):
                    items.append(json.loads(text[i:end]))
            return items, False
        try:
            items.append(json.loads(text[i:end]))
        except ValueError:
            return items, False
        if text[j] == ",":
            i = j + 1
            continue
        if text[j] == "]":
            return items, True
        return items, False


def outer_object_unclosed(text: str) -> bool:
    """True when the reply's JSON opens an object that never closes: a complete object found
    inside it is then a fragment (``{"facts": [{...}]`` without its last brace holds a whole
    fact object, which is not the reply)."""
    body = candidate_text(text)
    pos = body.find("{")
    return pos != -1 and _scan_value_end(body, pos) is None
