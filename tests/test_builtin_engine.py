"""The built-in engine: availability, the install hint, one engine per process, stopped on exit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop import builtin_engine
from nocturne_desktop.llm import detect
from nocturne_desktop.llm.engine import EngineError, find_engine

ROOT = Path(__file__).resolve().parents[1]


def test_not_available_in_an_empty_cache(tmp_path: Path) -> None:
    assert builtin_engine.available(tmp_path) is False
    assert "make engine" in builtin_engine.install_hint()
    with pytest.raises(EngineError, match="make engine"):
        builtin_engine.start(cache=tmp_path)
    assert builtin_engine.current() is None
    builtin_engine.stop()  # nothing to stop: still fine


def test_label_says_it_is_a_toy() -> None:
    assert "not for real use" in builtin_engine.LABEL


def _require_engine() -> None:
    if find_engine() is None:
        message = "the local model engine is not built: run `make engine`"
        if os.environ.get("NOCTURNE_REQUIRE_ENGINE") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def engine_stopped() -> Iterator[None]:
    yield
    builtin_engine.stop()


@pytest.mark.engine
@pytest.mark.usefixtures("engine_stopped")
def test_start_serves_models_on_loopback_then_stops() -> None:
    _require_engine()
    assert builtin_engine.available()
    engine = builtin_engine.start()
    assert builtin_engine.start() is engine and builtin_engine.current() is engine  # one per process
    assert engine.base_url.startswith("http://127.0.0.1:")
    result = detect.probe(engine.base_url, "built-in", timeout=5.0)
    assert result.server is not None and engine.model_name in result.server.models
    pid = engine.pid
    assert pid is not None
    builtin_engine.stop()
    assert builtin_engine.current() is None and not engine.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.engine
def test_engine_is_stopped_when_the_process_exits_without_stop(tmp_path: Path) -> None:
    _require_engine()
    script = ("from nocturne_desktop import builtin_engine as b; e = b.start(); "
              "print(e.pid, flush=True)")  # no stop(): atexit must do it
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    pytest.fail(f"llama-server {pid} outlived the process that started it")
