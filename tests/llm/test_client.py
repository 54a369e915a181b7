"""The model client against the scripted server: plain chat, streaming, usage, the model list
and the API key. Every failure's error is in test_failures.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nocturne_desktop.core.ports import (
    ModelClient,
    ModelError,
    ModelTruncated,
)
from nocturne_desktop.llm.client import OpenAIClient, Timeouts, normalise_base_url, require_complete
from tests.fakeserver import FakeLLM, Reply, closed_port_url, split_tokens
from tests.llm.conftest import ClientFactory

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]


# --- the happy paths -----------------------------------------------------------------------------


def test_satisfies_the_core_protocol(client: OpenAIClient) -> None:
    port: ModelClient = client  # mypy checks the structural fit; this checks it at runtime too
    assert callable(port.chat) and callable(port.stream) and callable(port.structured)


def test_chat_returns_text_usage_and_sends_a_streamed_request(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text("Hello there, friend."))
    result = client.chat(HI, max_tokens=50)
    assert result.text == "Hello there, friend."
    assert result.finish_reason == "stop"
    assert result.model == "fake-model"
    assert not result.usage.estimated
    assert result.usage.completion_tokens == len(split_tokens("Hello there, friend.")) == 4
    assert result.first_token_s is not None and 0 <= result.first_token_s <= result.elapsed_s
    (req,) = fake_llm.requests
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.body["messages"] == HI
    assert req.body["stream"] is True
    assert req.body["stream_options"] == {"include_usage": True}
    assert req.body["model"] == "fake-model"
    assert req.body["temperature"] == 0.2
    assert req.body["max_tokens"] == 50
    assert "response_format" not in req.body
    assert "authorization" not in req.headers


def test_temperature_override_and_no_model_field_when_model_is_empty(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    client = make_client(model="", temperature=0.7)
    client.chat(HI)
    client.chat(HI, temperature=0.0)
    first, second = fake_llm.requests
    assert "model" not in first.body and "max_tokens" not in first.body
    assert first.body["temperature"] == 0.7
    assert second.body["temperature"] == 0.0


def test_stream_yields_deltas_in_order_then_describes_itself(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    tokens = ["The", " quick", " brown", " fox"]
    fake_llm.script(Reply.stream_of(tokens))
    it = client.stream(HI)
    assert client.last_result is None or client.last_result.text != "The quick brown fox"
    assert list(it) == tokens
    assert client.last_result is not None
    assert client.last_result.text == "The quick brown fox"
    assert client.last_result.finish_reason == "stop"
    assert client.last_result.usage.completion_tokens == 4
    assert not client.last_result.usage.estimated


def test_stream_closed_early_hangs_up_on_the_server(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.stream_of([f"t{i} " for i in range(200)], token_delay=0.02))
    it = client.stream(HI)
    assert next(it) == "t0 "
    assert isinstance(it, Iterator)
    it.close()  # type: ignore[attr-defined]
    assert fake_llm.wait_for_disconnect(timeout=2.0) is not None
    assert not fake_llm.requests[0].completed


def test_server_that_ignores_stream_true_is_read_as_one_json_body(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text("whole reply", ignore_stream=True, reasoning="let me think {"))
    result = client.chat(HI)
    assert result.text == "whole reply"
    assert result.finish_reason == "stop"
    assert not result.usage.estimated
    assert list(client.stream(HI)) == ["ok"]  # the default reply, streamed


def test_reasoning_content_deltas_are_not_part_of_the_text(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text("Paris.", reasoning="The user asks about France. {hmm}"))
    result = client.chat(HI)
    assert result.text == "Paris."


@pytest.mark.parametrize("ignore_stream", [False, True])
def test_usage_is_estimated_when_the_server_sends_none(
    fake_llm: FakeLLM, client: OpenAIClient, ignore_stream: bool
) -> None:
    text = "x" * 40
    fake_llm.script(Reply.text(text, usage=False, ignore_stream=ignore_stream))
    result = client.chat(HI)
    assert result.usage.estimated
    prompt_chars = sum(len(m["content"]) for m in HI)
    assert result.usage.prompt_tokens == (prompt_chars + 3) // 4
    assert result.usage.completion_tokens == 10


def test_stream_options_refusal_is_retried_without_and_remembered(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.reject_stream_options()
    assert client.chat(HI).text == "ok"
    assert client.chat(HI).text == "ok"
    sent = ["stream_options" in r.body for r in fake_llm.requests]
    assert sent == [True, False, False]
    assert client.chat(HI).usage.estimated  # no include_usage → usage estimated


def test_missing_done_is_fine_when_the_reply_finished(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text("done anyway", no_done=True))
    assert client.chat(HI).text == "done anyway"


def test_length_finish_is_reported_not_raised_and_require_complete_raises(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text("a long answer that was", finish_reason="length"))
    result = client.chat(HI, max_tokens=5)
    assert result.finish_reason == "length"
    with pytest.raises(ModelTruncated, match="max_tokens"):
        require_complete(result)
    fake_llm.script(Reply.text("short"))
    assert require_complete(client.chat(HI)).text == "short"


def test_list_models(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.models = ["qwen3-4b", "smollm2-135m"]
    assert client.list_models() == ["qwen3-4b", "smollm2-135m"]
    assert fake_llm.requests[-1].method == "GET"
    assert fake_llm.requests[-1].path == "/v1/models"


def test_list_models_accepts_the_ollama_shape(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.models_reply = Reply(
        body=b'{"models": [{"name": "llama3:8b"}, {"model": "phi4"}]}',
        content_type="application/json",
    )
    assert client.list_models() == ["llama3:8b", "phi4"]


def test_timeouts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="first-token timeout must be positive"):
        Timeouts(first_token=0)
    with pytest.raises(ValueError, match="idle"):
        Timeouts(idle=-1)


def test_base_url_is_trimmed_but_no_path_is_guessed(fake_llm: FakeLLM) -> None:
    assert normalise_base_url(" http://localhost:1234/v1/ ") == "http://localhost:1234/v1"
    assert normalise_base_url("localhost:1234/v1") == "http://localhost:1234/v1"
    assert normalise_base_url("http://h:1/") == "http://h:1"
    with pytest.raises(ValueError, match="empty"):
        normalise_base_url("  ")
    client = OpenAIClient(fake_llm.base_url + "///", "fake-model")
    try:
        assert client.base_url == fake_llm.base_url
        client.chat(HI)
        assert fake_llm.requests[-1].path == "/v1/chat/completions"
    finally:
        client.close()


# --- API key -------------------------------------------------------------------------------------


def test_api_key_header_only_when_set(fake_llm: FakeLLM, make_client: ClientFactory) -> None:
    make_client().chat(HI)
    make_client(api_key="").chat(HI)
    make_client(api_key="sk-secret-123").chat(HI)
    headers = [r.headers.get("authorization") for r in fake_llm.requests]
    assert headers == [None, None, "Bearer sk-secret-123"]


def test_api_key_never_appears_in_errors_or_repr(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    key = "sk-very-secret-key-4242"
    client = make_client(api_key=key, timeouts=Timeouts(connect=1, first_token=0.3, idle=0.3))
    assert key not in repr(client)
    replies = [
        Reply.error(401, f"Incorrect API key provided: {key}"),
        Reply.error(403, "forbidden"),
        Reply.error(429, f"too many requests for {key}"),
        Reply.error(500, f"boom {key}"),
        Reply.html(502, f"<html><body><h1>Bad gateway</h1><p>Authorization: Bearer {key}</p>"),
        Reply.error(400, f"bad request echoing Bearer {key}"),
        Reply.fault("bad_json"),
        Reply.fault("bad_sse"),
        Reply.fault("drop"),
        Reply.fault("hang"),
    ]
    fake_llm.script(*replies)
    seen = 0
    for _ in replies:
        with pytest.raises(ModelError) as info:
            client.chat(HI)
        exc = info.value
        assert key not in str(exc) and key not in repr(exc)
        assert key not in getattr(exc, "body", "")
        seen += 1
    assert seen == len(replies)
    for base in (closed_port_url(), fake_llm.root_url):  # refused; 404 then /models listing
        other = make_client(base, api_key=key)
        with pytest.raises(ModelError) as info:
            other.chat(HI)
        assert key not in str(info.value)
