"""Deadlines and caps: an overall deadline per request, and a reply-size cap enforced while
reading (SSE and a plain JSON body), against the scripted real-socket server."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from pydantic import BaseModel

from nocturne_desktop.core.ports import ModelTimeout, ModelTruncated
from nocturne_desktop.llm.client import (
    CHARS_PER_TOKEN_CAP,
    OpenAIClient,
    Timeouts,
    reply_cap,
    require_complete,
)
from nocturne_desktop.settings import Timeouts as SettingsTimeouts
from tests.fakeserver import FakeLLM, Reply
from tests.llm.conftest import ClientFactory

HI = [{"role": "user", "content": "Say hello."}]
FIFTY_MB = 50 * 1024 * 1024


class Note(BaseModel):
    text: str


# --- the overall deadline --------------------------------------------------------------------


def test_a_trickling_reply_ends_at_the_overall_deadline(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    # One token every 0.2 s: the idle timeout (5 s) never fires, only the deadline can.
    fake_llm.script(Reply.stream_of(["tick "] * 200, token_delay=0.2))
    client = make_client(timeouts=Timeouts(connect=2, first_token=5, idle=5, total=1.5))
    t0 = time.monotonic()
    with pytest.raises(ModelTimeout) as info:
        client.chat(HI)
    took = time.monotonic() - t0
    assert info.value.which == "deadline"
    assert "1.5 s (overall deadline)" in str(info.value)
    assert 1.4 <= took < 4.0
    assert fake_llm.wait_for_disconnect() is not None  # the server was told to stop


def test_a_trickling_json_body_ends_at_the_deadline(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.script(Reply.huge(40_000, unit="x" * 100, ignore_stream=True, token_delay=0.05))
    client = make_client(timeouts=Timeouts(connect=2, first_token=5, idle=5, total=1.0))
    with pytest.raises(ModelTimeout) as info:
        client.chat(HI)
    assert info.value.which == "deadline"


def test_the_deadline_is_a_setting_and_is_validated() -> None:
    assert SettingsTimeouts().total == Timeouts().total == 1200.0
    assert SettingsTimeouts(total=90).total == 90
    with pytest.raises(ValueError, match="total"):
        Timeouts(total=0)


# --- the reply-size cap ------------------------------------------------------------------------


def test_the_cap_follows_max_tokens() -> None:
    assert reply_cap(1_000_000, None) == 1_000_000
    assert reply_cap(1_000_000, 512) == 512 * CHARS_PER_TOKEN_CAP
    assert reply_cap(1_000_000, 10) == 4096
    assert reply_cap(5000, 512) == 5000


def _peak_during(fn):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak - before


@pytest.mark.parametrize("ignore_stream", [False, True], ids=["sse", "json-body"])
def test_a_50_mb_chat_reply_stops_at_the_cap_and_keeps_the_part_before(
    fake_llm: FakeLLM, make_client: ClientFactory, ignore_stream: bool
) -> None:
    fake_llm.script(Reply.huge(FIFTY_MB, ignore_stream=ignore_stream))
    client = make_client()
    t0 = time.monotonic()
    result, peak = _peak_during(lambda: client.chat(HI, max_tokens=512))
    took = time.monotonic() - t0
    cap = 512 * CHARS_PER_TOKEN_CAP
    assert result.cut and result.finish_reason == "length"
    assert len(result.text) == cap
    assert result.text.startswith("word word word")
    assert peak < 8 * 1024 * 1024, f"held {peak / 1e6:.1f} MB for a {cap}-character cap"
    assert took < 5.0
    assert fake_llm.wait_for_disconnect() is not None  # the server stops sending
    with pytest.raises(ModelTruncated, match="size cap"):
        require_complete(result)


def test_a_huge_reply_without_max_tokens_stops_at_the_client_cap(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.script(Reply.huge(FIFTY_MB))
    client = make_client(max_reply_chars=100_000)
    result, peak = _peak_during(lambda: client.chat(HI))
    assert result.cut and len(result.text) == 100_000
    assert peak < 16 * 1024 * 1024


def test_a_streamed_reply_is_yielded_up_to_the_cap_then_said_to_be_cut(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.script(Reply.huge(FIFTY_MB))
    client = make_client()
    parts: list[str] = []
    with pytest.raises(ModelTruncated) as info:
        for piece in client.stream(HI, max_tokens=200):
            parts.append(piece)
    assert len("".join(parts)) == 200 * CHARS_PER_TOKEN_CAP
    assert "6,400 characters" in str(info.value) and "max_tokens 200" in str(info.value)
    assert client.last_result is not None and client.last_result.cut


@pytest.mark.parametrize("ignore_stream", [False, True], ids=["sse", "json-body"])
def test_a_structured_reply_past_the_cap_is_refused(
    fake_llm: FakeLLM, make_client: ClientFactory, ignore_stream: bool
) -> None:
    fake_llm.behave_like("text-only")
    fake_llm.script(Reply.huge(FIFTY_MB, unit='{"text": "' + "a" * 500, ignore_stream=ignore_stream))
    client = make_client()
    result = client.structured(HI, Note, max_tokens=256)
    assert result.value is None and result.truncated
    assert result.error is not None and "size cap" in result.error and "refused" in result.error
    assert len(result.raw) <= 2000


def test_a_reply_exactly_at_the_cap_is_not_cut(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    text = "y" * 4096
    fake_llm.script(Reply.stream_of([text[:2000], text[2000:]]))
    result = make_client().chat(HI, max_tokens=10)
    assert result.text == text and not result.cut and result.finish_reason == "stop"


def test_one_endless_sse_line_is_not_held_whole(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    """A stream that never sends a newline must not grow the line buffer without bound."""
    endless = b"data: " + b"z" * (8 * 1024 * 1024)
    fake_llm.script(Reply(status=200, body=endless, content_type="text/event-stream"))
    client: OpenAIClient = make_client()
    result, peak = _peak_during(lambda: client.chat(HI, max_tokens=100))
    assert result.cut and result.text == ""
    assert peak < 4 * 1024 * 1024
