from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nocturne_desktop.llm.client import OpenAIClient, Timeouts, forget_capabilities
from tests.fakeserver import FakeLLM

ClientFactory = Callable[..., OpenAIClient]

FAST = Timeouts(connect=2.0, first_token=5.0, idle=5.0)


@pytest.fixture(autouse=True)
def _fresh_capabilities() -> Iterator[None]:
    """Ports get reused between tests; what one test learnt must not leak into the next."""
    forget_capabilities()
    yield
    forget_capabilities()


@pytest.fixture
def make_client(fake_llm: FakeLLM) -> Iterator[ClientFactory]:
    """Build clients for the fake server (or any base URL); all are closed after the test."""
    made: list[OpenAIClient] = []

    def factory(base_url: str | None = None, model: str = "fake-model", **kw: Any) -> OpenAIClient:
        kw.setdefault("timeouts", FAST)
        client = OpenAIClient(base_url or fake_llm.base_url, model, **kw)
        made.append(client)
        return client

    yield factory
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: ClientFactory) -> OpenAIClient:
    return make_client()
