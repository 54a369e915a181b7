"""What this process has learnt about each model server, per base URL.

Servers differ in what they accept (``response_format`` rungs, ``stream_options``) and in what
they say about themselves (their chat template's turn markers, the model's context window).
The client probes once and remembers here, so every client of the same base URL — on any
thread — skips what the server refused and asks nothing twice. :func:`forget_capabilities`
drops it all (for one base URL or every one), and the next call probes again.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from nocturne_desktop.llm.endpoint import normalise_base_url

if TYPE_CHECKING:
    from nocturne_desktop.llm.serverinfo import ContextWindow

MODES = ("json_schema", "json_object_schema", "json_object", "text")
"""The structured-output ladder, strongest first. ``json_object_schema`` is
``response_format: {"type": "json_object", "schema": <the contract's schema>}``."""

SCHEMA_MODES = ("json_schema", "json_object_schema")
"""The rungs on which the server receives the contract's schema."""

MODE_TEXT = {
    "json_schema": "response_format json_schema (the schema enforced by the server)",
    "json_object_schema": "response_format json_object with the schema inside (enforced by "
                          "the server, llama-cpp-python style)",
    "json_object": "response_format json_object without a schema (JSON, shape checked "
                   "locally only)",
    "text": "plain text, JSON extracted and checked locally",
}
"""What each rung means, for people (Settings)."""

_LOCK = threading.Lock()
_CAPS: dict[str, dict[str, str]] = {}
"""base URL → feature (a rung, ``stream_options``) → supported / unsupported."""
_TEMPLATE_STOPS: dict[str, tuple[str, ...]] = {}
"""base URL → the turn markers of its chat template."""
_WINDOWS: dict[tuple[str, str], tuple[ContextWindow | None, float]] = {}
"""(base URL, model) → what the server said of the model's context window, and until when
(monotonic seconds) that answer holds."""


def capability(base_url: str, key: str) -> str:
    """``supported``, ``unsupported`` or ``untested``: what ``base_url`` did with ``key``."""
    with _LOCK:
        return _CAPS.get(base_url, {}).get(key, "untested")


def set_capability(base_url: str, key: str, value: str, *, only_if_untested: bool = False) -> None:
    """Remember what ``base_url`` did with ``key``; ``only_if_untested`` keeps an earlier
    answer (a refusal learnt on another thread is not overwritten by a later success)."""
    with _LOCK:
        entry = _CAPS.setdefault(base_url, {})
        if only_if_untested and entry.get(key, "untested") != "untested":
            return
        entry[key] = value


def capabilities_for(base_url: str) -> dict[str, str]:
    """What is known about a base URL's ``response_format`` support in this process.

    Each of ``json_schema``, ``json_object_schema`` and ``json_object`` is ``supported``,
    ``unsupported`` or ``untested``; :func:`structured_mode` says which rung is in use.
    """
    base = normalise_base_url(base_url)
    return {key: capability(base, key) for key in MODES if key != "text"}


def structured_mode(caps: dict[str, str]) -> str | None:
    """The rung structured calls use given ``caps`` (from :func:`capabilities_for`): the
    strongest one found ``supported`` with every stronger one ``unsupported``; ``text`` when
    all were refused; None while the ladder has not been probed that far."""
    for mode in MODES:
        if mode == "text":
            return "text"
        state = caps.get(mode, "untested")
        if state == "supported":
            return mode
        if state != "unsupported":
            return None
    return None  # pragma: no cover


def forget_capabilities(base_url: str | None = None) -> None:
    """Drop what was learnt about one base URL (or all): the next call probes again."""
    with _LOCK:
        if base_url is None:
            _CAPS.clear()
            _TEMPLATE_STOPS.clear()
            _WINDOWS.clear()
            return
        base = normalise_base_url(base_url)
        _CAPS.pop(base, None)
        _TEMPLATE_STOPS.pop(base, None)
        for key in [k for k in _WINDOWS if k[0] == base]:
            del _WINDOWS[key]


def template_stops(base_url: str) -> tuple[str, ...] | None:
    """The remembered turn markers of ``base_url``'s chat template; None when not asked yet."""
    with _LOCK:
        return _TEMPLATE_STOPS.get(base_url)


def remember_template_stops(base_url: str, stops: tuple[str, ...]) -> None:
    with _LOCK:
        _TEMPLATE_STOPS[base_url] = stops


def context_window(base_url: str, model: str) -> tuple[bool, ContextWindow | None]:
    """(known, window): ``known`` is False when the server was not asked yet, or its answer
    has expired (an answer that may change once the model is loaded holds only briefly)."""
    with _LOCK:
        entry = _WINDOWS.get((base_url, model))
    if entry is None or entry[1] < time.monotonic():
        return False, None
    return True, entry[0]


def remember_context_window(
    base_url: str, model: str, window: ContextWindow | None, *, seconds: float | None
) -> None:
    """Remember what the server said of ``model``'s window, for ``seconds`` (None: for the
    life of the process, or until :func:`forget_capabilities`)."""
    until = float("inf") if seconds is None else time.monotonic() + seconds
    with _LOCK:
        _WINDOWS[(base_url, model)] = (window, until)
