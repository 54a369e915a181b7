"""The memory budget fits the model's context window; unknown, it is today's default."""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop.core.chat import budget as b
from nocturne_desktop.core.chat.agent import DEFAULT_HISTORY_TOKENS, DEFAULT_REPLY_TOKENS, ChatAgent
from nocturne_desktop.core.store import Store
from nocturne_desktop.llm.tuning import BUILTIN
from tests.core.fakemodel import FakeModel


def fitted(context: int | None, **kw: int | None) -> int:
    args: dict[str, int | None] = {"reply_tokens": DEFAULT_REPLY_TOKENS,
                                   "history_tokens": DEFAULT_HISTORY_TOKENS}
    args.update(kw)
    return b.memory_budget(context, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize("unknown", [None, 0, -5, True])
def test_an_unknown_window_keeps_the_default(unknown: int | None) -> None:
    assert fitted(unknown) == b.DEFAULT_BUDGET_CHARS == 6000


def test_the_budget_grows_with_the_window_up_to_its_ceiling() -> None:
    small, mid, large = fitted(4096), fitted(8192), fitted(32_768)
    assert small < b.DEFAULT_BUDGET_CHARS < mid < large == b.MAX_BUDGET_CHARS
    # what is reserved is reserved: the reply, the history, the instructions, a free tenth
    want = int((8192 * 0.9 - DEFAULT_REPLY_TOKENS - DEFAULT_HISTORY_TOKENS
                - b.INSTRUCTION_TOKENS) * b.CHARS_PER_TOKEN)
    assert mid == want
    assert fitted(1024) == b.MIN_BUDGET_CHARS  # a tiny window: the floor, never negative


def test_a_4k_window_leaves_today_s_default_no_room_to_spare() -> None:
    """6,000 characters (about 1,700 tokens) plus a 1,500-token history and a 512-token reply
    would fill most of a 4,096-token window: the fitted budget is smaller."""
    assert fitted(4096) < 6000


def test_a_larger_history_or_reply_leaves_memory_less() -> None:
    assert fitted(8192, history_tokens=4000) < fitted(8192)
    assert fitted(8192, reply_tokens=None) < fitted(8192)  # uncapped: a quarter reserved


def test_a_model_cap_bounds_the_budget_whatever_the_window() -> None:
    assert fitted(32_768, cap=6000) == 6000
    assert fitted(None, cap=3000) == 3000


def test_the_agent_sizes_memory_from_the_window_and_keeps_the_tiny_models_caps(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "m.db") as store:
        assert ChatAgent(store, FakeModel()).budget_chars == 6000
        assert ChatAgent(store, FakeModel(), context_tokens=32_768).budget_chars == b.MAX_BUDGET_CHARS
        assert ChatAgent(store, FakeModel(), budget_chars=1234,
                         context_tokens=32_768).budget_chars == 1234
        tiny = FakeModel()
        tiny.tuning = BUILTIN  # type: ignore[attr-defined]
        agent = ChatAgent(store, tiny, context_tokens=32_768)
        assert agent.budget_chars == BUILTIN.memory_chars == 6000
        assert agent.max_tokens == BUILTIN.max_tokens and agent.history_tokens == BUILTIN.history_tokens
        assert ChatAgent(store, tiny, context_tokens=2048).budget_chars < 6000
