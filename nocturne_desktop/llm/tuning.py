"""Chat tuning for models that need it: today the built-in engine's SmolLM2-135M-Instruct.

A 135M-parameter model asked an open question in a long system prompt loops on a phrase (or
drifts into another language) until the reply cap, and each long reply swells the next prompt.
The tuning: a brief-reply hint next to each message, DRY plus a light repetition penalty
(llama.cpp's own samplers), stop sequences from its chat template and a blank line, a small
reply cap, a short history, memory at most 6,000 characters (the size its reply times were
measured at, whatever room its 4,096-token window leaves), and memory after the history so
the server's prompt cache keeps the instructions and the history when memory changes.
Figures: docs/benchmarks.md (chat on the built-in engine).

:func:`tuning_for` picks the tuning by model name; :class:`~nocturne_desktop.llm.client.
OpenAIClient` applies it when none is given explicitly.
"""

from __future__ import annotations

import re

from nocturne_desktop.core.ports import ChatTuning

PARAGRAPH_BREAK = "\n\n"
"""A stop for the tiny model: its one or two sentences come as one paragraph; where it goes on
after a blank line it has begun to ramble (a list, a second answer, another language)."""

BUILTIN = ChatTuning(
    name="built-in SmolLM2-135M",
    max_tokens=120,
    history_tokens=240,
    memory_chars=6000,
    reply_hint="(Reply in one or two short sentences.)",
    sampling={"dry_multiplier": 0.8, "repeat_penalty": 1.1, "repeat_last_n": 64},
    stop=("<|im_start|>", "<|im_end|>", PARAGRAPH_BREAK),
    stops_from_template=True,
    memory_after_history=True,
)

_BY_MODEL: tuple[tuple[re.Pattern[str], ChatTuning], ...] = (
    (re.compile(r"smollm2?[-_ ]?135m", re.I), BUILTIN),
)

_TEMPLATE_MARKER = re.compile(
    r"<\|(?:im_start|im_end|eot_id|end_of_text|endoftext|start_header_id|end|user|assistant"
    r"|system|eom_id)\|>|<(?:start|end)_of_turn>"
)


def tuning_for(model: str) -> ChatTuning | None:
    """The tuning for ``model`` (a server's model id), or None for a model that needs none."""
    for pattern, tuning in _BY_MODEL:
        if pattern.search(model or ""):
            return tuning
    return None


def template_stops(chat_template: str) -> tuple[str, ...]:
    """The turn markers a chat template writes (``<|im_start|>``, ``<|eot_id|>``,
    ``<end_of_turn>``, …): a reply that reaches one has begun to write the next turn."""
    found: list[str] = []
    for marker in _TEMPLATE_MARKER.findall(chat_template or ""):
        if marker not in found:
            found.append(marker)
    return tuple(found)
