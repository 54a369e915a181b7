from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# --------------------------------------------------------------------------- the real engine


@pytest.fixture(scope="session")
def real_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    """llama-server + SmolLM2-135M from the user cache, started once per test session.

    Not built: the tests fail when ``NOCTURNE_REQUIRE_ENGINE=1`` (``make test`` sets it, since
    it builds the engine first) and are skipped otherwise.
    """
    from nocturne_desktop.llm.engine import LocalEngine, find_engine

    paths = find_engine()
    if paths is None:
        message = "the local model engine is not built: run `make engine`"
        if os.environ.get("NOCTURNE_REQUIRE_ENGINE") == "1":
            pytest.fail(message + " (NOCTURNE_REQUIRE_ENGINE=1 makes this a failure)")
        pytest.skip(message)
    log = tmp_path_factory.mktemp("engine") / "llama-server.log"
    engine = LocalEngine(paths, ctx_size=4096, log_path=log)
    engine.start(timeout=120.0)
    try:
        yield engine
    finally:
        engine.stop()
