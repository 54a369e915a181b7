"""The scripted server's own API (later tests of the sleep and the window rely on it)."""

from __future__ import annotations

import httpx
import pytest

from nocturne_desktop.llm.client import OpenAIClient
from tests.fakeserver import FakeLLM, Reply, Request, split_tokens

HI = [{"role": "user", "content": "ping"}]


def test_queue_then_default_and_recording(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.text("one"), Reply.text("two"))
    assert fake_llm.pending == 2
    assert [client.chat(HI).text for _ in range(3)] == ["one", "two", "ok"]
    fake_llm.set_default(Reply.text("fallback"))
    assert client.chat(HI).text == "fallback"
    req = fake_llm.requests[0]
    assert isinstance(req, Request) and req.completed and req.disconnected_at is None
    assert req.stream and req.last_user == "ping" and req.messages == HI
    assert req.headers["content-type"] == "application/json"


def test_responder_sees_the_request_and_can_fall_through(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.respond_with(lambda r: Reply.text(r.last_user[::-1]) if "rev" in r.last_user else None)
    fake_llm.script(Reply.text("queued"))
    assert client.chat([{"role": "user", "content": "rev me"}]).text == "em ver"
    assert client.chat(HI).text == "queued"
    fake_llm.respond_with(None)
    assert client.chat(HI).text == "ok"


def test_non_stream_requests_get_one_json_body(fake_llm: FakeLLM) -> None:
    fake_llm.script(Reply.text("plain", finish_reason="length"))
    body = {"model": "fake-model", "messages": HI, "stream": False}
    r = httpx.post(fake_llm.base_url + "/chat/completions", json=body)
    obj = r.json()
    assert r.headers["content-type"] == "application/json"
    assert obj["choices"][0]["message"]["content"] == "plain"
    assert obj["choices"][0]["finish_reason"] == "length"
    assert obj["usage"]["completion_tokens"] == 1


def test_unknown_fault_and_engine_are_refused(fake_llm: FakeLLM) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Reply.fault("explode")
    with pytest.raises(ValueError, match="unknown engine"):
        fake_llm.behave_like("skynet")


def test_routes_of_a_servers_own_api_answer_json_or_a_scripted_reply(fake_llm: FakeLLM) -> None:
    fake_llm.serve("GET", "/api/ps", {"models": []}).serve("POST", "/api/show", Reply.error(
        404, "model 'x' not found"))
    with pytest.raises(ValueError, match="unknown layout"):
        fake_llm.describe_window("skynet", tokens=1)
    with httpx.Client(base_url=fake_llm.root_url) as http:
        assert http.get("/api/ps?verbose=1").json() == {"models": []}  # the query is ignored
        assert http.post("/api/show", json={"model": "x"}).status_code == 404
        assert http.get("/props").status_code == 404  # no props set
        fake_llm.describe_window("llama.cpp-router", tokens=8192)
        assert http.get("/props").status_code == 400
        props = http.get("/props", params={"model": "fake-model"}).json()
        assert props["default_generation_settings"]["n_ctx"] == 8192


def test_split_tokens_round_trips() -> None:
    text = 'Hello,  world! {"a": "longer-word"}\n'
    assert "".join(split_tokens(text)) == text
    assert all(len(t.strip()) <= 6 for t in split_tokens(text))


def test_custom_transport_works_without_a_socket() -> None:
    sse = (
        b'data: {"choices":[{"delta":{"content":"mo"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"ck"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    with OpenAIClient("http://mock/v1", transport=httpx.MockTransport(handler)) as client:
        result = client.chat(HI)
    assert result.text == "mock" and result.finish_reason == "stop" and result.usage.estimated
