"""End to end against the real local engine: llama-server + SmolLM2-135M-Instruct.

The engine is built by ``make engine`` (``scripts/local-engine build``) and started once per
session by the ``real_engine`` fixture (tests/conftest.py). These tests assert the protocol,
schema validity and finish reasons — not the tiny model's wisdom.

The first group speaks raw HTTP (httpx, no project client) and proves the engine itself; the
second goes through ``nocturne_desktop.llm.client.OpenAIClient`` and is skipped while that
module does not exist.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from nocturne_desktop.core.sleep.passes import PASS_SPECS

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine

pytestmark = pytest.mark.engine


# --------------------------------------------------------------------------- contracts & prompts


DedupeReply = PASS_SPECS["dedupe"].contract(8)
"""The real Dedupe contract, bounded to eight proposals as the pass bounds it."""


CANDIDATES = [
    ("f1", "The user's name is Ana."),
    ("f2", "User is called Ana."),
    ("f3", "Ana lives in Lisbon."),
    ("f4", "The user lives in Lisbon, Portugal."),
    ("f5", "Ana prefers tea over coffee."),
    ("f6", "Ana likes tea more than coffee."),
    ("f7", "Ana has a cat named Miso."),
    ("f8", "The user's cat is called Miso."),
]
PAIRS = [("f1", "f2"), ("f3", "f4"), ("f5", "f6"), ("f7", "f8")]

DEDUPE_MESSAGES = [
    {
        "role": "system",
        "content": (
            "You remove duplicate memory facts. For each candidate pair that says the same "
            "thing, drop the shorter fact: itemId is the fact to drop, duplicateOf the fact to "
            "keep, reason a few words. Reply with compact JSON only."
        ),
    },
    {
        "role": "user",
        "content": "Facts:\n"
        + "\n".join(f"{i}: {t}" for i, t in CANDIDATES)
        + "\nCandidate pairs: "
        + ", ".join(f"({a}, {b})" for a, b in PAIRS),
    },
]
# Compact JSON: ~30 tokens an entry plus reason; 8 entries (the maxItems) fit in 512.
DEDUPE_MAX_TOKENS = 512

SHORT = [{"role": "user", "content": "Say hello in one short sentence."}]
LONG = [{"role": "user", "content": "Count from 1 to 1000, separated by commas."}]


def dedupe_schema() -> dict[str, Any]:
    return {"name": "DedupeReply", "strict": True, "schema": DedupeReply.model_json_schema()}


# --------------------------------------------------------------------------- raw HTTP helpers


def auth(engine: LocalEngine) -> dict[str, str]:
    """The header every request to the engine needs: its per-run key."""
    return {"Authorization": f"Bearer {engine.api_key}"}


def post(engine: LocalEngine, body: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
    resp = httpx.post(f"{engine.base_url}/chat/completions", json=body, timeout=timeout,
                      headers=auth(engine))
    assert resp.status_code == 200, resp.text
    data: dict[str, Any] = resp.json()
    return data


def sse_chunks(resp: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON objects of an OpenAI-style SSE stream, up to ``data: [DONE]``."""
    for line in resp.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            return
        yield json.loads(payload)


def time_to_first_token(engine: LocalEngine, messages: list[dict[str, str]]) -> float:
    body = {"messages": messages, "stream": True, "max_tokens": 8, "temperature": 0}
    t0 = time.monotonic()
    with httpx.stream(
        "POST", f"{engine.base_url}/chat/completions", json=body, timeout=60.0,
        headers=auth(engine),
    ) as resp:
        assert resp.status_code == 200
        for chunk in sse_chunks(resp):
            delta = chunk["choices"][0]["delta"] if chunk.get("choices") else {}
            if delta.get("content"):
                return time.monotonic() - t0
    pytest.fail("the stream ended without a single content delta")


def wait_idle(engine: LocalEngine, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while busy_slots(engine) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy_slots(engine) == 0, f"llama-server still busy after {seconds:.0f}s"


def busy_slots(engine: LocalEngine) -> int:
    resp = httpx.get(f"{engine.root_url}/slots", timeout=5.0, headers=auth(engine))
    assert resp.status_code == 200, resp.text
    return sum(1 for slot in resp.json() if slot.get("is_processing"))


# --------------------------------------------------------------------------- raw HTTP tests


def test_raw_health_and_models(real_engine: LocalEngine) -> None:
    health = httpx.get(f"{real_engine.root_url}/health", timeout=5.0)
    assert health.status_code == 200
    models = httpx.get(f"{real_engine.base_url}/models", timeout=5.0,
                       headers=auth(real_engine)).json()
    ids = [m["id"] for m in models["data"]]
    assert real_engine.model_name in ids


def test_the_engine_refuses_a_request_without_its_per_run_key(real_engine: LocalEngine) -> None:
    """Any local process could drive an engine that takes every request; it takes only ours."""
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for headers in ({}, {"Authorization": "Bearer guessed"}):
        resp = httpx.post(f"{real_engine.base_url}/chat/completions", json=body, timeout=30.0,
                          headers=headers)
        assert resp.status_code == 401, resp.text
    assert len(real_engine.api_key) >= 32
    assert real_engine.api_key not in " ".join(real_engine.command(1))  # not in ps


def test_raw_chat_reports_finish_reason_usage_and_timings(real_engine: LocalEngine) -> None:
    data = post(real_engine, {"messages": SHORT, "max_tokens": 24, "temperature": 0})
    choice = data["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"].strip()
    assert choice["finish_reason"] in ("stop", "length")
    usage = data["usage"]
    assert usage["prompt_tokens"] > 0
    assert 0 < usage["completion_tokens"] <= 24
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    timings = data["timings"]
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["predicted_per_second"] > 0


def test_raw_max_tokens_gives_length(real_engine: LocalEngine) -> None:
    data = post(real_engine, {"messages": LONG, "max_tokens": 5, "temperature": 0})
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["completion_tokens"] == 5


def test_raw_stream_deltas_and_finish_reason(real_engine: LocalEngine) -> None:
    body = {"messages": SHORT, "max_tokens": 24, "temperature": 0, "stream": True}
    deltas: list[str] = []
    finish: list[str] = []
    with httpx.stream(
        "POST", f"{real_engine.base_url}/chat/completions", json=body, timeout=60.0,
        headers=auth(real_engine),
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        for chunk in sse_chunks(resp):
            for choice in chunk.get("choices", []):
                if choice["delta"].get("content"):
                    deltas.append(choice["delta"]["content"])
                if choice.get("finish_reason"):
                    finish.append(choice["finish_reason"])
    assert len(deltas) >= 2  # it really streamed, token by token
    assert "".join(deltas).strip()
    assert finish and finish[-1] in ("stop", "length")
    # the same prompt without streaming, at temperature 0, gives the same text
    plain = post(real_engine, {"messages": SHORT, "max_tokens": 24, "temperature": 0})
    assert plain["choices"][0]["message"]["content"] == "".join(deltas)


def test_raw_json_schema_is_enforced(real_engine: LocalEngine) -> None:
    body = {
        "messages": DEDUPE_MESSAGES,
        "temperature": 0,
        "max_tokens": DEDUPE_MAX_TOKENS,
        "response_format": {"type": "json_schema", "json_schema": dedupe_schema()},
    }
    data = post(real_engine, body, timeout=120.0)
    choice = data["choices"][0]
    text = choice["message"]["content"]
    assert choice["finish_reason"] == "stop", f"ran to max_tokens: {text[-200:]!r}"
    reply = DedupeReply.model_validate_json(text)  # raises if the grammar let anything through
    assert len(reply.drop) <= 8


def test_raw_grammar_forces_what_the_prompt_does_not_ask(real_engine: LocalEngine) -> None:
    """The schema, not the model, decides the shape: a chit-chat prompt still yields an object
    whose ``code`` matches a pattern nothing in the prompt mentions."""
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "ok": {"type": "boolean"},
        },
        "required": ["code", "ok"],
        "additionalProperties": False,
    }
    body = {
        "messages": SHORT,
        "temperature": 0,
        "max_tokens": 40,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "Code", "strict": True, "schema": schema}},
    }
    data = post(real_engine, body)
    text = data["choices"][0]["message"]["content"]
    assert data["choices"][0]["finish_reason"] == "stop", text
    value = json.loads(text)
    assert set(value) == {"code", "ok"}
    assert re.fullmatch(r"[A-Z]{3}-[0-9]{4}", value["code"])
    assert isinstance(value["ok"], bool)


def test_raw_closing_a_stream_frees_the_server(real_engine: LocalEngine) -> None:
    """S-LLM-2: closing the request stops generation; the next request is not queued behind
    an orphan. ``ignore_eos`` makes the abandoned request want all 2,000 tokens."""
    body = {"messages": LONG, "max_tokens": 2000, "temperature": 0, "stream": True,
            "ignore_eos": True}
    received = 0
    with httpx.stream(
        "POST", f"{real_engine.base_url}/chat/completions", json=body, timeout=60.0,
        headers=auth(real_engine),
    ) as resp:
        assert resp.status_code == 200
        for chunk in sse_chunks(resp):
            if chunk.get("choices") and chunk["choices"][0]["delta"].get("content"):
                received += 1
            if received >= 5:
                break  # leaving the block closes the connection mid-generation
    assert received == 5
    # A request left open instead kept the only slot ~40 s (2,000 tokens) on a 2-core machine
    # and the next first token waited for all of it.
    wait_idle(real_engine, 5.0)
    ttft = time_to_first_token(real_engine, SHORT)
    assert ttft < 5.0, f"next request waited {ttft:.1f}s for its first token"


# --------------------------------------------------------------------------- through OpenAIClient


@pytest.fixture
def client_mod() -> Any:
    return pytest.importorskip("nocturne_desktop.llm.client")


@pytest.fixture
def client(real_engine: LocalEngine, client_mod: Any) -> Iterator[Any]:
    timeouts = client_mod.Timeouts(connect=5.0, first_token=60.0, idle=30.0)
    c = client_mod.OpenAIClient(real_engine.base_url, real_engine.model_name,
                                timeouts=timeouts, temperature=0.0)
    yield c
    close = getattr(c, "close", None)
    if callable(close):
        close()


def test_client_list_models(real_engine: LocalEngine, client: Any) -> None:
    assert real_engine.model_name in list(client.list_models())


def test_client_chat(client: Any) -> None:
    result = client.chat(SHORT, temperature=0, max_tokens=24)
    assert result.text.strip()
    assert result.finish_reason in ("stop", "length")
    assert result.usage.prompt_tokens > 0
    assert 0 < result.usage.completion_tokens <= 24
    assert not result.usage.estimated  # llama-server reports usage


def test_client_chat_length(client: Any) -> None:
    result = client.chat(LONG, temperature=0, max_tokens=5)
    assert result.finish_reason == "length"


def test_client_stream(client: Any) -> None:
    it = client.stream(SHORT, temperature=0, max_tokens=24)
    deltas = list(it)
    assert len(deltas) >= 2
    text = "".join(deltas)
    assert text.strip()
    last = client.last_result
    assert last is not None
    assert last.text == text
    assert last.finish_reason in ("stop", "length")


def test_client_structured_dedupe(client: Any) -> None:
    result = client.structured(DEDUPE_MESSAGES, DedupeReply, temperature=0,
                               max_tokens=DEDUPE_MAX_TOKENS)
    assert result.mode == "json_schema"
    assert result.finish_reason == "stop", result.raw[-200:]
    assert not result.truncated
    assert result.error is None
    assert isinstance(result.value, DedupeReply)
    assert len(result.value.drop) <= 8
    assert DedupeReply.model_validate_json(result.raw) == result.value


def test_client_cancel_mid_stream_frees_the_server(
    real_engine: LocalEngine, client: Any
) -> None:
    from nocturne_desktop.core.cancel import CancelToken
    from nocturne_desktop.core.ports import ModelCancelled

    token = CancelToken()
    received = 0
    t_cancel: float | None = None
    try:
        for delta in client.stream(LONG, temperature=0, max_tokens=2000, cancel=token):
            if delta:
                received += 1
            if received == 5 and t_cancel is None:
                t_cancel = time.monotonic()
                token.cancel()
    except ModelCancelled:
        pass
    assert t_cancel is not None, "the stream ended before 5 deltas"
    assert time.monotonic() - t_cancel < 2.0  # the iterator stopped at once
    wait_idle(real_engine, 5.0)
    ttft = time_to_first_token(real_engine, SHORT)
    assert ttft < 5.0, f"next request waited {ttft:.1f}s for its first token"


def test_client_first_token_timeout(real_engine: LocalEngine, client_mod: Any) -> None:
    from nocturne_desktop.core.ports import ModelTimeout

    # A fresh ~300-token prompt (the nonce defeats llama-server's prompt cache) takes most of
    # a second to prefill even on an idle machine, so the first token cannot beat a 1 ms
    # deadline even when the client's watchdog wakes late.
    nonce = f"{time.time_ns()}"
    filler = " ".join(f"Note {i}: the lamp in room {i} was checked." for i in range(30))
    prompt = [{"role": "user", "content": f"[{nonce}] {filler}\nSummarise the notes."}]
    timeouts = client_mod.Timeouts(connect=5.0, first_token=0.001, idle=30.0)
    c = client_mod.OpenAIClient(real_engine.base_url, real_engine.model_name, timeouts=timeouts)
    t0 = time.monotonic()
    with pytest.raises(ModelTimeout) as info:
        list(c.stream(prompt, temperature=0, max_tokens=64))
    assert time.monotonic() - t0 < 5.0  # raised at the deadline, not after a reply
    assert info.value.which == "first-token"
    assert str(info.value)
    c.close()
    # llama-server finishes the prefill of the abandoned request before it notices the closed
    # connection; let it, so the next test starts on an idle server
    wait_idle(real_engine, 120.0)


def test_client_closed_port_is_unreachable(client_mod: Any) -> None:
    from nocturne_desktop.core.ports import ModelUnreachable

    with socket.socket() as s:  # a port that was free a moment ago, now closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    timeouts = client_mod.Timeouts(connect=2.0, first_token=5.0, idle=5.0)
    c = client_mod.OpenAIClient(f"http://127.0.0.1:{port}/v1", "any", timeouts=timeouts)
    t0 = time.monotonic()
    with pytest.raises(ModelUnreachable) as info:
        c.chat(SHORT, max_tokens=8)
    assert time.monotonic() - t0 < 3.0
    assert str(port) in str(info.value) or str(port) in (info.value.url or "")


def test_client_chats_with_the_built_in_tuning(real_engine: LocalEngine, client: Any,
                                               tmp_path: Any) -> None:
    """The built-in model gets its tuning by name: capped replies, the template's own stop
    sequences (from GET /props), and a prompt the server's cache reuses turn after turn."""
    from nocturne_desktop.core.chat.agent import ChatAgent
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.llm.tuning import BUILTIN

    assert client.tuning is BUILTIN
    assert client._template_stops() == ("<|im_start|>", "<|im_end|>")  # SmolLM2's ChatML
    cached: list[int] = []
    with Store(tmp_path / "chat.db") as store:
        agent = ChatAgent(store, client)
        for text in ("Hi! I'm Maya and I live in Lisbon.", "I keep a bearded dragon.",
                     "What do I keep?"):
            list(agent.stream_reply(text))
            result = client.last_result
            assert result is not None and result.text.strip()
            assert result.usage.completion_tokens <= BUILTIN.max_tokens
            cached.append(result.usage.cached_tokens or 0)
    assert all(c > 0 for c in cached[1:]), cached  # the standing prompt is not re-read


def test_client_reads_the_engines_real_context_window(real_engine: LocalEngine,
                                                      client: Any) -> None:
    """llama-server's own ``GET /props`` says one slot's ``n_ctx`` (the window one request
    gets: the engine's context shared by its slots), and the client reports that figure."""
    from nocturne_desktop.llm import builtin as builtin_engine
    from nocturne_desktop.llm.serverinfo import from_llamacpp_props, from_models_list

    root = real_engine.base_url.removesuffix("/v1")
    props = httpx.get(f"{root}/props", timeout=10.0, headers=auth(real_engine)).json()
    said = from_llamacpp_props(props)
    assert said is not None and said.tokens == real_engine.ctx_size // real_engine.parallel
    assert said.tokens == builtin_engine.SLOT_CTX
    listed = from_models_list(httpx.get(f"{real_engine.base_url}/models", timeout=10.0,
                                        headers=auth(real_engine)).json(),
                              real_engine.model_name)
    assert listed is None or listed.tokens in (None, said.tokens)  # the two never disagree
    assert client.context_window() == said.tokens
    info = client.context_window_info()
    assert info is not None and info.maximum is not None and info.maximum >= said.tokens
