"""Local server detection against real sockets: the scripted server, a closed port, a hang."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from nocturne_desktop.llm import detect
from tests.fakeserver import FakeLLM, Reply, closed_port_url


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


@pytest.fixture
def second_llm() -> Iterator[FakeLLM]:
    server = FakeLLM(models=("qwen2.5-7b-instruct", "llama-3.2-3b")).start()
    try:
        yield server
    finally:
        server.close()


def test_lists_what_answers_with_its_models(fake_llm: FakeLLM, second_llm: FakeLLM) -> None:
    closed = _port(closed_port_url())
    servers = [("LM Studio", fake_llm.port), ("Ollama", closed), ("Jan", second_llm.port)]
    found = detect.detect_local_servers(servers, host="127.0.0.1", timeout=2.0)
    assert found == [
        detect.LocalServer("LM Studio", fake_llm.base_url, ("fake-model",)),
        detect.LocalServer("Jan", second_llm.base_url, ("qwen2.5-7b-instruct", "llama-3.2-3b")),
    ]
    assert found[1].describe() == f"Jan at {second_llm.base_url} (2 models)"
    assert [r.path for r in fake_llm.requests] == ["/v1/models"]


def test_something_that_is_not_an_openai_api_is_not_listed(fake_llm: FakeLLM) -> None:
    fake_llm.models_reply = Reply.fault("html")
    result = detect.probe(fake_llm.base_url, "llama.cpp server", timeout=2.0)
    assert result.server is None and result.error
    assert detect.detect_local_servers([("x", fake_llm.port)], host="127.0.0.1", timeout=2.0) == []


def test_ollama_style_model_list(fake_llm: FakeLLM) -> None:
    body = json.dumps({"models": [{"name": "llama3.2:latest"}]}).encode()
    fake_llm.models_reply = Reply(content_type="application/json", body=body)
    result = detect.probe(fake_llm.base_url, "Ollama", timeout=2.0)
    assert result.server is not None and result.server.models == ("llama3.2:latest",)


def test_probes_run_concurrently_with_short_timeouts(fake_llm: FakeLLM, second_llm: FakeLLM) -> None:
    for server in (fake_llm, second_llm):
        server.models_reply = Reply.fault("hang")
    servers = [("a", fake_llm.port), ("b", second_llm.port), ("c", _port(closed_port_url()))]
    t0 = time.monotonic()
    results = detect.probe_all(detect.candidate_urls(servers, "127.0.0.1"), timeout=0.6)
    elapsed = time.monotonic() - t0
    assert [r.server for r in results] == [None, None, None]
    assert "timeout" in results[0].error.lower() or "did not" in results[0].error.lower(), results[0].error
    assert elapsed < 1.5, f"two hanging servers took {elapsed:.2f}s: not concurrent"


def test_bad_url_is_a_result_not_an_exception() -> None:
    assert detect.probe("   ").error
    assert detect.probe_all([]) == []


def test_default_candidates_are_the_four_usual_servers() -> None:
    urls = dict(detect.candidate_urls())
    assert urls == {
        "LM Studio": "http://localhost:1234/v1",
        "Ollama": "http://localhost:11434/v1",
        "llama.cpp server": "http://localhost:8080/v1",
        "Jan": "http://localhost:1337/v1",
    }
