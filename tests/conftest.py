from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# --- the scripted model server (tests/fakeserver.py) -------------------------------------------
from collections.abc import Iterator

# PySide6's import hook (shibokensupport, active once pytest-qt has imported Qt) trips over
# pydantic's lazy attribute imports and makes `from pydantic import Field` fail with a circular
# import inside test modules. Importing pydantic's lazily loaded parts up front avoids it.
import pydantic.fields  # noqa: F401
import pytest

from tests.fakeserver import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started scripted OpenAI-compatible server on 127.0.0.1; closed after the test."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.close()
    assert not server.errors, f"the fake server itself failed: {server.errors!r}"
