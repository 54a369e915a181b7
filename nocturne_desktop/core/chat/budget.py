"""How much memory a chat prompt may carry: sized from the model's context window.

The window (in tokens, as the server reports it; None when it does not) must hold the standing
instructions, the history the agent carries, memory, the user's message and the reply. Memory
gets what is left once the others are reserved and a tenth of the window is kept free, counted
at :data:`CHARS_PER_TOKEN` characters a token, between :data:`MIN_BUDGET_CHARS` and
:data:`MAX_BUDGET_CHARS` (and a model's :attr:`ChatTuning.memory_chars`, for a tiny model whose
speed was measured at today's size). Unknown window: :data:`DEFAULT_BUDGET_CHARS`, as before.
"""

from __future__ import annotations

DEFAULT_BUDGET_CHARS = 6000
"""Memory's size when the context window is not known."""

MIN_BUDGET_CHARS = 1000
"""The least memory a prompt carries, however small the window (the whole blocks first)."""

MAX_BUDGET_CHARS = 24_000
"""The most: four times the default. A larger window is not filled, since every character is
read anew on most turns (memory changes as facts are learnt) and a local model reads a few
hundred tokens a second."""

CHARS_PER_TOKEN = 3.5
"""Characters counted per token of memory: under the 4 of the prose estimate, since names,
numbers and punctuation cut into more tokens."""

INSTRUCTION_TOKENS = 400
"""The standing instructions and memory's notes (about 1,200 characters), the message's
template markers, and the user's message at a usual length."""

FREE_SHARE = 0.1
"""The share of the window kept free (tokenizers differ from the estimate)."""


def memory_budget(
    context_tokens: int | None,
    *,
    reply_tokens: int | None,
    history_tokens: int | None,
    instruction_tokens: int = INSTRUCTION_TOKENS,
    cap: int | None = None,
) -> int:
    """The memory budget (characters) for a model whose window is ``context_tokens``: the
    window less a free tenth, the reply cap, the history budget and the instructions, at
    :data:`CHARS_PER_TOKEN`; clamped to [:data:`MIN_BUDGET_CHARS`, :data:`MAX_BUDGET_CHARS`]
    and to ``cap``. A reply or history without a cap (None) is counted at a quarter of the
    window each. Unknown or nonsensical window: :data:`DEFAULT_BUDGET_CHARS` (capped)."""
    top = MAX_BUDGET_CHARS if cap is None else max(MIN_BUDGET_CHARS, min(cap, MAX_BUDGET_CHARS))
    if not isinstance(context_tokens, int) or isinstance(context_tokens, bool) or context_tokens <= 0:
        return min(DEFAULT_BUDGET_CHARS, top)
    quarter = context_tokens // 4
    reserved = (
        (quarter if reply_tokens is None else max(0, reply_tokens))
        + (quarter if history_tokens is None else max(0, history_tokens))
        + max(0, instruction_tokens)
    )
    free = context_tokens * (1.0 - FREE_SHARE) - reserved
    return int(max(MIN_BUDGET_CHARS, min(top, free * CHARS_PER_TOKEN)))
