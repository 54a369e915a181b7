"""The built-in engine: availability, the install hint, one engine per process, stopped on exit."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm import detect
from nocturne_desktop.llm.engine import EngineError, EngineExit, find_engine
from tests.fakeengine import fake_engine_cache, process_gone

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
    script = ("from nocturne_desktop.llm import builtin as b; e = b.start(); "
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


# ------------------------------------------------- lifetime: survives its thread, dies with us

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the parent-death guarantee is Linux's PR_SET_PDEATHSIG")


def _start_in_short_lived_thread(cache: Path) -> builtin_engine.LocalEngine:
    """Start the engine the way the first-run panel does: from a worker thread that then ends."""
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(builtin_engine.start(cache=cache)),
                              name="short-lived-worker")
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and box, "the engine did not start"
    engine = box[0]
    assert isinstance(engine, builtin_engine.LocalEngine)
    return engine


@linux_only
@pytest.mark.usefixtures("engine_stopped")
def test_engine_started_from_a_worker_thread_outlives_that_thread(tmp_path: Path) -> None:
    # Before the fix the kernel killed the child the moment the forking thread ended.
    engine = _start_in_short_lived_thread(fake_engine_cache(tmp_path))
    time.sleep(1.5)
    assert engine.running() and engine.healthy(), engine.exit
    assert engine.exit is None and builtin_engine.current() is engine


@linux_only
def test_sigkill_of_nocturne_still_ends_the_engine(tmp_path: Path) -> None:
    cache = fake_engine_cache(tmp_path / "cache")
    script = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from nocturne_desktop.llm import builtin as b\n"
        "box = []\n"
        "t = threading.Thread(target=lambda: box.append(b.start(cache=Path(sys.argv[1]))))\n"
        "t.start(); t.join()\n"
        "print(box[0].pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(cache)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline().split()[0])
        time.sleep(1.0)
        assert not process_gone(pid), "the engine died before Nocturne did"
    finally:
        proc.kill()  # SIGKILL: no atexit, no stop()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    _expect_gone(pid)


def _expect_gone(pid: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process_gone(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)
    pytest.fail(f"the engine {pid} outlived the Nocturne process that started it")


@pytest.mark.usefixtures("engine_stopped")
def test_an_engine_that_exits_by_itself_is_reported_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_ENGINE_EXIT_AFTER", "0.5")
    seen: list[tuple[str, int]] = []
    listener = lambda url, ended: seen.append((url, ended.code))  # noqa: E731
    builtin_engine.add_exit_listener(listener)
    try:
        engine = _start_in_short_lived_thread(fake_engine_cache(tmp_path))
        url = engine.base_url
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        builtin_engine.remove_exit_listener(listener)
    assert seen == [(url, 3)]
    assert engine.exit is not None and not engine.running() and builtin_engine.current() is None
    assert process_gone(engine.pid or 0)  # reaped by the watcher, not left <defunct>
    report = builtin_engine.stopped_report(url + "/")
    assert report is not None
    message = report.message()
    assert message.startswith("The built-in engine stopped: llama-server exited with code 3.")
    assert "fake failure: out of memory" in message and "cleaning up before exit" in message
    assert "LM Studio" not in message
    assert builtin_engine.stopped_report("http://127.0.0.1:1/v1") is None


@pytest.mark.usefixtures("engine_stopped")
def test_stop_is_not_reported_as_an_exit(tmp_path: Path) -> None:
    engine = builtin_engine.start(cache=fake_engine_cache(tmp_path))
    url = engine.base_url
    builtin_engine.stop()
    time.sleep(0.3)
    assert engine.exit is None and builtin_engine.stopped_report(url) is None


def test_exit_descriptions() -> None:
    assert EngineExit(-9, "", None).describe() == "llama-server was killed by SIGKILL"
    assert EngineExit(1, "", None).describe() == "llama-server exited with code 1"


@linux_only
@pytest.mark.engine
def test_sigkill_of_nocturne_ends_the_real_engine(tmp_path: Path) -> None:
    _require_engine()
    script = (
        "import threading, time\n"
        "from nocturne_desktop.llm import builtin as b\n"
        "box = []\n"
        "t = threading.Thread(target=lambda: box.append(b.start()))\n"
        "t.start(); t.join()\n"
        "print(box[0].pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline().split()[0])
        time.sleep(2.0)
        assert not process_gone(pid), "the engine died before Nocturne did"
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    _expect_gone(pid)
