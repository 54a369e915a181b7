"""The model client against the scripted server: plain chat, streaming, usage, and every error."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from nocturne_desktop.core.ports import (
    ModelAuthError,
    ModelBadReply,
    ModelClient,
    ModelError,
    ModelHTTPError,
    ModelNotFound,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelTruncated,
    ModelUnreachable,
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


# --- transport errors ----------------------------------------------------------------------------


def test_connection_refused_is_unreachable_with_a_next_step(make_client: ClientFactory) -> None:
    base = closed_port_url()
    client = make_client(base)
    with pytest.raises(ModelUnreachable) as info:
        client.chat(HI)
    assert f"nothing is listening at {base}" in str(info.value)
    assert "running" in str(info.value)
    with pytest.raises(ModelUnreachable):
        client.list_models()
    with pytest.raises(ModelUnreachable):
        list(client.stream(HI))


def test_name_lookup_failure_is_unreachable() -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)

    client = OpenAIClient("http://no-such-host.invalid/v1", transport=httpx.MockTransport(fail))
    with client, pytest.raises(ModelUnreachable, match="name lookup failed"):
        client.chat(HI)


@pytest.fixture
def unaccepting_port() -> Iterator[int]:
    """A port whose listen backlog is full: SYNs are dropped, so connect() hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        f = socket.socket()
        f.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            f.connect(("127.0.0.1", port))
        fillers.append(f)
    time.sleep(0.05)
    yield port
    for f in fillers:
        f.close()
    listener.close()


def test_connect_timeout_names_itself(unaccepting_port: int, make_client: ClientFactory) -> None:
    base = f"http://127.0.0.1:{unaccepting_port}/v1"
    client = make_client(base, timeouts=Timeouts(connect=0.3, first_token=5, idle=5))
    start = time.monotonic()
    with pytest.raises(ModelTimeout) as info:
        client.chat(HI)
    assert info.value.which == "connect"
    assert time.monotonic() - start < 2.0
    assert base in str(info.value) and "0.3 s" in str(info.value)


def test_first_token_timeout_when_the_server_never_answers(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    client = make_client(timeouts=Timeouts(connect=1, first_token=0.4, idle=5))
    for reply in (Reply.fault("hang"), Reply.text("late", delay_headers=3)):
        fake_llm.script(reply)
        start = time.monotonic()
        with pytest.raises(ModelTimeout) as info:
            client.chat(HI)
        took = time.monotonic() - start
        assert info.value.which == "first-token"
        assert 0.35 <= took < 1.5
        assert "0.4 s" in str(info.value) and fake_llm.base_url in str(info.value)
        assert fake_llm.wait_for_disconnect(timeout=2.0) is not None


def test_keepalives_do_not_count_as_a_first_token(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    client = make_client(timeouts=Timeouts(connect=1, first_token=0.5, idle=0.2))
    fake_llm.script(Reply.text("late", delay=3, keepalive=0.05))
    with pytest.raises(ModelTimeout) as info:
        client.chat(HI)
    assert info.value.which == "first-token"


def test_idle_timeout_mid_stream(fake_llm: FakeLLM, make_client: ClientFactory) -> None:
    client = make_client(timeouts=Timeouts(connect=1, first_token=5, idle=0.3))
    fake_llm.script(Reply.stream_of(["a", "b", "c"], token_delay=2))
    pieces: list[str] = []
    start = time.monotonic()
    with pytest.raises(ModelTimeout) as info:
        pieces.extend(client.stream(HI))
    assert info.value.which == "idle"
    assert pieces == ["a"]
    assert time.monotonic() - start < 1.5
    assert "0.3 s" in str(info.value)


def test_first_token_and_idle_are_distinct(fake_llm: FakeLLM, make_client: ClientFactory) -> None:
    """A slow start within first_token, then a trickle within idle (kept alive by comments
    between tokens), succeeds although the start is longer than idle."""
    client = make_client(timeouts=Timeouts(connect=1, first_token=1.0, idle=0.25))
    fake_llm.script(Reply.stream_of(["a", "b", "c"], delay=0.5, token_delay=0.4, keepalive=0.1))
    assert client.chat(HI).text == "abc"


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        (Reply.fault("drop"), "closed in the middle of the reply"),
        (Reply.fault("reset"), "closed the connection without answering"),
        (Reply.fault("bad_json"), "not valid JSON"),
        (Reply.fault("bad_sse"), "streamed chunk that is not JSON"),
        (Reply.text("cut", finish_reason=None, no_done=True), "ended before the reply"),
        (
            Reply(body=b"[1, 2]", content_type="application/json"),
            "JSON that is not an object",
        ),
        (
            Reply(body=b'{"id": "x", "choices": []}', content_type="application/json"),
            "without any choices",
        ),
    ],
    ids=["dropped", "reset", "bad-json", "bad-sse", "no-finish", "json-list", "no-choices"],
)
def test_malformed_replies_are_bad_reply(
    fake_llm: FakeLLM, client: OpenAIClient, reply: Reply, needle: str
) -> None:
    fake_llm.script(reply)
    with pytest.raises(ModelBadReply, match=needle) as info:
        client.chat(HI)
    assert fake_llm.base_url in str(info.value)


def test_dropped_stream_mid_way_keeps_what_came_before_visible(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.fault("drop", drop_after=2))
    got: list[str] = []
    with pytest.raises(ModelBadReply):
        got.extend(client.stream(HI))
    assert got == ["one", " two"]


def test_error_event_mid_stream_is_a_server_error(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.fault("stream_error", content="partial"))
    with pytest.raises(ModelServerError, match="context size") as info:
        client.chat(HI)
    assert info.value.status == 500
    assert "mid-stream" in str(info.value)


# --- HTTP errors ---------------------------------------------------------------------------------


def test_500_is_a_server_error_with_an_excerpt(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.error(500, "CUDA out of memory", type="server_error"))
    with pytest.raises(ModelServerError) as info:
        client.chat(HI)
    assert info.value.status == 500
    assert "CUDA out of memory" in str(info.value)
    assert "HTTP 500" in str(info.value) and fake_llm.base_url in str(info.value)


def test_html_error_page_is_reduced_to_short_plain_text(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    filler = "<p>" + "lorem ipsum " * 200 + "</p>"
    page = (
        "<html><head><style>.x{color:red}</style><script>var a=1;</script></head>"
        f"<body><h1>502 Bad Gateway</h1>&amp; friends{filler}</body></html>"
    )
    fake_llm.script(Reply.html(502, page))
    with pytest.raises(ModelServerError) as info:
        client.chat(HI)
    msg = str(info.value)
    assert "502 Bad Gateway & friends" in msg
    assert "<" not in msg and "color:red" not in msg and "var a" not in msg
    assert len(msg) < 600


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors(fake_llm: FakeLLM, make_client: ClientFactory, status: int) -> None:
    fake_llm.script(Reply.error(status, "Incorrect API key provided"))
    with pytest.raises(ModelAuthError) as info:
        make_client(api_key="sk-x").chat(HI)
    assert info.value.status == status
    assert "check the API key" in str(info.value)
    fake_llm.script(Reply.error(status, "auth required"))
    with pytest.raises(ModelAuthError, match="wants an API key"):
        make_client().chat(HI)


def test_server_requiring_a_key(fake_llm: FakeLLM, make_client: ClientFactory) -> None:
    fake_llm.require_api_key("sk-right")
    with pytest.raises(ModelAuthError):
        make_client(api_key="sk-wrong").chat(HI)
    with pytest.raises(ModelAuthError):
        make_client(api_key="sk-wrong").list_models()
    good = make_client(api_key="sk-right")
    assert good.chat(HI).text == "ok"
    assert good.list_models() == ["fake-model"]


def test_unknown_model_lists_what_the_server_has(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.models = ["qwen3-4b", "gemma-3-1b"]
    fake_llm.check_model = True
    with pytest.raises(ModelNotFound) as info:
        make_client(model="llama-99b").chat(HI)
    assert info.value.available == ("qwen3-4b", "gemma-3-1b")
    msg = str(info.value)
    assert "'llama-99b'" in msg and "qwen3-4b, gemma-3-1b" in msg and "Settings" in msg


def test_unknown_model_when_the_list_is_unavailable(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.check_model = True
    fake_llm.models_reply = Reply.error(500, "no list today")
    with pytest.raises(ModelNotFound) as info:
        make_client(model="llama-99b").chat(HI)
    assert info.value.available == ()
    assert "does not exist" in str(info.value)


def test_404_for_a_base_url_without_v1_says_so(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    client = make_client(fake_llm.root_url)
    with pytest.raises(ModelNotFound) as info:
        client.chat(HI)
    assert "/v1" in str(info.value)
    with pytest.raises(ModelNotFound, match="no model list"):
        client.list_models()


def test_429_is_rate_limited_with_retry_after(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.error(429, "Rate limit reached", headers={"Retry-After": "20"}))
    with pytest.raises(ModelRateLimited) as info:
        client.chat(HI)
    assert info.value.status == 429
    assert "20 s" in str(info.value) and "try again" in str(info.value)


def test_other_4xx_is_a_plain_http_error(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.error(400, "This model's maximum context length is 4096 tokens"))
    with pytest.raises(ModelHTTPError) as info:
        client.chat(HI)
    assert type(info.value) is ModelHTTPError
    assert info.value.status == 400
    assert "maximum context length" in str(info.value)


def test_list_models_errors(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.models_reply = Reply(body=b"<html>not an api</html>", content_type="text/html")
    with pytest.raises(ModelBadReply, match="OpenAI-compatible"):
        client.list_models()
    fake_llm.models_reply = Reply(body=b'{"object": "list"}', content_type="application/json")
    with pytest.raises(ModelBadReply, match="without a model list"):
        client.list_models()
    fake_llm.models_reply = Reply.error(503, "loading")
    with pytest.raises(ModelServerError):
        client.list_models()
    fake_llm.models_reply = Reply.fault("hang")
    slow = OpenAIClient(fake_llm.base_url, timeouts=Timeouts(connect=1, first_token=5, idle=0.3))
    with slow, pytest.raises(ModelTimeout):
        slow.list_models()


def test_client_is_reusable_after_errors(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.error(500, "x"), Reply.fault("drop"), Reply.text("fine"))
    with pytest.raises(ModelServerError):
        client.chat(HI)
    with pytest.raises(ModelBadReply):
        client.chat(HI)
    assert client.chat(HI).text == "fine"
