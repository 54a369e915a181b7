"""The model's context window as the server says it: every layout the scripted server speaks
(llama.cpp old and new and its router, LM Studio's v0 and v1 APIs, Ollama loaded and not,
vLLM, a hosted API's model list), a server that says nothing, one that does not answer, the
memory per base URL and model, and the core's optional capability."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from nocturne_desktop.core.ports import (
    KnowsContextWindow,
    ModelClient,
    ModelUnreachable,
    context_window_of,
)
from nocturne_desktop.llm.capabilities import forget_capabilities
from nocturne_desktop.llm.serverinfo import PROBE_SECONDS, REQUEST_SECONDS
from tests.core.fakemodel import FakeModel
from tests.fakeserver import FakeLLM, Reply, closed_port_url
from tests.llm.conftest import ClientFactory

MODEL = "qwen2.5-7b-instruct"


def native_requests(fake: FakeLLM) -> list[str]:
    """The paths the client asked, in order, other than chat."""
    return [f"{r.method} {r.path}" for r in fake.requests if not r.path.endswith("/completions")]


@pytest.fixture
def served() -> Any:
    server = FakeLLM(models=(MODEL,)).start()
    yield server
    server.close()
    assert not server.errors, server.errors


# --- each layout ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "kw", "tokens", "maximum", "source"),
    [
        # newer llama.cpp: /v1/models carries meta.n_ctx next to n_ctx_train
        ("llama.cpp", {"tokens": 4096, "maximum": 8192}, 4096, 8192, "meta.n_ctx"),
        # older llama.cpp: only n_ctx_train in /v1/models, the slot's n_ctx in /props
        ("llama.cpp-old", {"tokens": 2048, "maximum": 131072}, 2048, 131072,
         "default_generation_settings.n_ctx"),
        # the router asks /props?model=…, several models listed
        ("llama.cpp-router", {"tokens": 16384}, 16384, None,
         "default_generation_settings.n_ctx"),
        ("lmstudio", {"tokens": 16384, "maximum": 32768}, 16384, 32768, "loaded_context_length"),
        ("lmstudio-0.4", {"tokens": 12000, "maximum": 32768}, 12000, 32768,
         "config.context_length"),
        ("ollama", {"tokens": 4096, "maximum": 32768}, 4096, None, "/api/ps"),
        ("ollama", {"tokens": None, "maximum": 32768, "num_ctx": 8192}, 8192, 32768, "num_ctx"),
        ("vllm", {"tokens": 32768}, 32768, None, "max_model_len"),
        ("openrouter", {"tokens": 131072}, 131072, None, "context_length"),
    ],
    ids=["llama.cpp", "llama.cpp-old", "llama.cpp-router", "lmstudio", "lmstudio-0.4",
         "ollama-loaded", "ollama-num_ctx", "vllm", "openrouter"],
)
def test_each_servers_layout_gives_the_window_it_runs_the_model_with(
    served: FakeLLM, make_client: ClientFactory, layout: str, kw: dict[str, Any],
    tokens: int, maximum: int | None, source: str,
) -> None:
    served.describe_window(layout, **kw)
    client = make_client(served.base_url, model=MODEL)
    assert client.context_window() == tokens
    info = client.context_window_info()
    assert info is not None and info.tokens == tokens and info.maximum == maximum
    assert source in info.source


def test_a_llamacpp_compatible_server_with_n_ctx_at_the_top_of_props(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.props = {"n_ctx": 8192, "total_slots": 1, "chat_template": ""}
    info = make_client(served.base_url, model=MODEL).context_window_info()
    assert info is not None and info.tokens == 8192 and info.source == "GET /props: n_ctx"


@pytest.mark.parametrize(("layout", "maximum"),
                         [("lmstudio", 32768), ("lmstudio-0.4", 32768), ("ollama", 131072)])
def test_a_model_not_loaded_yet_gives_only_its_maximum_and_no_window(
    served: FakeLLM, make_client: ClientFactory, layout: str, maximum: int,
) -> None:
    # LM Studio and Ollama load a model on first use at their own default (often 4,096), not
    # at the model's maximum: a budget sized from the maximum would be cut off silently.
    served.describe_window(layout, tokens=None, maximum=maximum)
    client = make_client(served.base_url, model=MODEL)
    assert client.context_window() is None
    info = client.context_window_info()
    assert info is not None and info.tokens is None and info.maximum == maximum


def test_a_model_loaded_after_the_first_ask_is_seen_once_the_answer_expires(
    served: FakeLLM, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    served.describe_window("lmstudio", tokens=None, maximum=32768)
    client = make_client(served.base_url, model=MODEL)
    assert client.context_window() is None
    served.describe_window("lmstudio", tokens=8192, maximum=32768)  # now loaded
    assert client.context_window() is None  # still the remembered answer
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + 60.0)
    assert client.context_window() == 8192


def test_the_model_is_matched_by_name_when_the_server_lists_several(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.models.append("small-model")
    served.model_fields = {MODEL: {"max_model_len": 32768},
                           "small-model": {"max_model_len": 2048}}
    assert make_client(served.base_url, model="small-model").context_window() == 2048
    assert make_client(served.base_url, model=MODEL).context_window() == 32768
    assert make_client(served.base_url, model=MODEL).context_window("small-model") == 2048


def test_a_one_model_server_answers_for_any_name_and_for_none(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.describe_window("llama.cpp", tokens=4096, maximum=8192)
    assert make_client(served.base_url, model="").context_window() == 4096
    assert make_client(served.base_url, model="whatever-is-in-settings").context_window() == 4096


def test_ollama_names_match_with_or_without_their_latest_tag(
    make_client: ClientFactory,
) -> None:
    with FakeLLM(models=("llama3.2:latest",)) as server:
        server.describe_window("ollama", tokens=4096, maximum=131072)
        assert make_client(server.base_url, model="llama3.2").context_window() == 4096


# --- servers that say nothing, or do not answer --------------------------------------------------


def test_a_server_that_says_nothing_gives_none_and_is_asked_once(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    client = make_client(served.base_url, model=MODEL)
    assert client.context_window() is None
    asked = native_requests(served)
    assert asked[0] == "GET /v1/models"
    assert "POST /api/show" in asked  # every layout was tried …
    assert client.context_window() is None
    assert make_client(served.base_url, model=MODEL).context_window() is None
    assert native_requests(served) == asked  # … once per base URL and model, in this process
    forget_capabilities(served.base_url)
    assert client.context_window() is None
    assert len(native_requests(served)) == 2 * len(asked)


def test_answers_that_are_not_windows_are_ignored(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    # LM Studio answers 200 with an error body on routes it does not have; junk elsewhere
    served.props = {"error": "Unexpected endpoint or method. (GET /props)", "n_ctx": None}
    served.model_fields = {MODEL: {"max_model_len": "8192", "context_length": True,
                                   "meta": None}}
    served.serve("GET", f"/api/v0/models/{MODEL}", {"max_context_length": -1, "state": 3})
    served.serve("GET", "/api/v1/models", Reply.text("not json", content_type="text/html",
                                                     body=b"<html>hi</html>"))
    served.serve("GET", "/api/ps", {"models": [{"name": MODEL, "context_length": 0}]})
    served.serve("POST", "/api/show", {"parameters": "num_ctx lots", "model_info": []})
    client = make_client(served.base_url, model=MODEL)
    assert client.context_window() is None
    assert client.context_window_info() is None


def test_a_closed_port_gives_none_at_once_and_is_asked_again_later(
    make_client: ClientFactory,
) -> None:
    client = make_client(closed_port_url(), model=MODEL)
    started = time.monotonic()
    assert client.context_window() is None
    assert time.monotonic() - started < 2.0
    with pytest.raises(ModelUnreachable):  # the chat itself still says what is wrong
        client.chat([{"role": "user", "content": "hi"}])


def test_a_server_that_hangs_is_given_up_on_within_one_request_timeout(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.serve("GET", "/props", Reply.fault("hang"))
    served.describe_window("lmstudio", tokens=16384, maximum=32768)  # never reached
    client = make_client(served.base_url, model=MODEL)
    started = time.monotonic()
    assert client.context_window() is None
    took = time.monotonic() - started
    assert REQUEST_SECONDS - 0.5 < took < REQUEST_SECONDS + 2.0
    assert took < PROBE_SECONDS
    assert not any("/api/" in p for p in native_requests(served))


def test_the_api_key_goes_with_every_question(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.require_api_key("sk-window")
    served.describe_window("lmstudio", tokens=16384, maximum=32768)
    assert make_client(served.base_url, model=MODEL, api_key="sk-window").context_window() == 16384
    assert all(r.headers.get("authorization") == "Bearer sk-window" for r in served.requests)


# --- the core's optional capability --------------------------------------------------------------


def test_the_client_has_the_optional_capability_and_the_fakes_need_none(
    served: FakeLLM, make_client: ClientFactory,
) -> None:
    served.describe_window("vllm", tokens=32768)
    client = make_client(served.base_url, model=MODEL)
    port: ModelClient = client
    capable: KnowsContextWindow = client  # mypy checks the structural fit
    assert isinstance(port, KnowsContextWindow) and capable.context_window() == 32768
    assert context_window_of(client) == 32768
    fake = FakeModel()  # a ModelClient without the capability: still one, and says nothing
    assert not isinstance(fake, KnowsContextWindow)
    assert context_window_of(fake) is None


class _Broken:
    def context_window(self, model: str | None = None) -> int | None:
        raise ModelUnreachable("nothing is listening")

    def chat(self, messages: Sequence[dict[str, str]], **kw: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


@pytest.mark.parametrize("said", [0, -5, True, "4096"])
def test_context_window_of_refuses_what_is_not_a_window(said: object) -> None:
    class Says:
        def context_window(self, model: str | None = None) -> object:
            return said

    assert context_window_of(Says()) is None
    assert context_window_of(_Broken()) is None
