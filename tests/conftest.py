from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

# PySide6's import hook (shibokensupport, active once pytest-qt has imported Qt) trips over
# pydantic's lazy attribute imports and makes `from pydantic import Field` fail with a circular
# import inside test modules. Importing pydantic's lazily loaded parts up front avoids it.
import pydantic.fields  # noqa: F401
import pytest

from tests.fakeserver import FakeLLM

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine
    from tests import opponents as opponents_t
    from tests.lettaserver import LettaServer

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# --- the scripted model server (tests/fakeserver.py) -------------------------------------------


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started scripted OpenAI-compatible server on 127.0.0.1; closed after the test."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.close()
    assert not server.errors, f"the fake server itself failed: {server.errors!r}"


# --------------------------------------------------------------------------- the real engine


@pytest.fixture(scope="session")
def real_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    """llama-server + SmolLM2-135M from the user cache, started once per test session.

    Not built: the tests fail when ``NOCTURNE_REQUIRE_ENGINE=1`` (``make test`` sets it, since
    it builds the engine first) and are skipped otherwise.
    """
    from nocturne_desktop.llm import builtin as builtin_engine
    from nocturne_desktop.llm.engine import LocalEngine, find_engine

    paths = find_engine()
    if paths is None:
        from tests.opponents import unavailable

        unavailable("the local model engine is not built: run `make engine`")
    log = tmp_path_factory.mktemp("engine") / "llama-server.log"
    # as the window runs it: one slot for the chat, one for the encoder and Sleep
    engine = LocalEngine(paths, ctx_size=builtin_engine.SLOT_CTX * builtin_engine.SLOTS,
                         parallel=builtin_engine.SLOTS, log_path=log)
    engine.start(timeout=120.0)
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def gemma_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    """llama-server + Gemma 3 270M base (an engine-cache extra), started once per session."""
    from nocturne_desktop.llm.engine import find_engine
    from tests import opponents

    paths, model = find_engine(), opponents.gemma_model()
    if paths is None or model is None:
        opponents.missing("Gemma 3 270M (or llama-server)", opponents.BUILD_EXTRAS)
    assert paths is not None and model is not None
    engine = opponents.gemma_engine(paths, model,
                                    tmp_path_factory.mktemp("gemma") / "llama-server.log")
    engine.start(timeout=120.0)
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def llama_cpp_python_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[opponents_t.LlamaCppPythonServer]:
    """``python -m llama_cpp.server`` (an engine-cache extra) with the built-in SmolLM2 GGUF."""
    from nocturne_desktop.llm.engine import find_engine
    from tests import opponents

    paths, python = find_engine(), opponents.pyserver_python()
    if paths is None or python is None:
        opponents.missing("llama-cpp-python's server (or the built-in model)",
                          opponents.BUILD_EXTRAS)
    assert paths is not None and python is not None
    server = opponents.LlamaCppPythonServer(
        python, paths.model, tmp_path_factory.mktemp("llama-cpp-python") / "server.log",
        alias=paths.model.name.removesuffix(".gguf"))
    with server:  # starts it, stops it
        yield server


@pytest.fixture(scope="session")
def letta_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LettaServer]:
    """``letta server`` (``make letta``) on a free loopback port with a temporary HOME, started
    once per session (tests/lettaserver.py); stopped at the end of the session."""
    from tests.lettaserver import require_letta, running_letta

    require_letta()  # skipped (or failed) before making its folder
    with running_letta(tmp_path_factory.mktemp("letta-home")) as server:
        yield server


# --- the log file (core/logfile.py) --------------------------------------------------------------


@pytest.fixture(autouse=True)
def tmp_log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test that starts the CLI or the window logs under its own tmp folder, never in the
    user's log folder; the file handler goes when the test ends."""
    folder = tmp_path / "log"
    monkeypatch.setenv("NOCTURNE_LOG_DIR", str(folder))
    yield folder
    from nocturne_desktop.core import logfile

    logfile.uninstall()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fault and hostile-input matrices, at the end of the run (never captured)."""
    from tests.core import matrixprint

    matrixprint.write_pending(terminalreporter)
