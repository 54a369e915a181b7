"""Every way a request fails, against the scripted server and real sockets, and the error each
becomes: refused, unresolvable, connect/first-token/idle timeouts, malformed replies, HTTP
statuses, an error event mid-stream."""

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
    ModelHTTPError,
    ModelNotFound,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
)
from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from tests.fakeserver import FakeLLM, Reply, closed_port_url
from tests.llm.conftest import ClientFactory

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]


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
