"""The built-in engine: a tiny local model to try Nocturne with when no server is running.

It is the engine ``make engine`` builds (llama-server + SmolLM2-135M-Instruct in the user cache,
see :mod:`nocturne_desktop.llm.engine`), started as a child process on a free loopback port.
A 135M-parameter model is enough to watch the memory loop work, not to chat for real, and the
window says so (:data:`LABEL`).

One engine per process: :func:`start` returns the running one if there is one. It is stopped by
:func:`stop` (the window calls it on close) and, failing that, at interpreter exit; on Linux the
child also gets SIGTERM if this process dies without cleaning up.

    if available():
        engine = start()             # blocks until the model is loaded (a few seconds)
        client = OpenAIClient(engine.base_url, engine.model_name)
    else:
        print(install_hint())
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

from nocturne_desktop.llm.engine import EngineError, LocalEngine, find_engine

LABEL = "tiny built-in model — for trying Nocturne, not for real use"
INSTALL_TARGET = "make engine"
START_TIMEOUT_S = 120.0

_lock = threading.Lock()
_engine: LocalEngine | None = None


def available(cache: Path | None = None) -> bool:
    """True when the engine is built (its manifest and files are in the user cache)."""
    return find_engine(cache) is not None


def install_hint() -> str:
    return (f"The built-in engine is not installed. In Nocturne's source folder, run "
            f"`{INSTALL_TARGET}`: it compiles llama-server and fetches the SmolLM2-135M model "
            f"(about 100 MB; a few minutes on two cores) into your user cache folder, "
            "then choose it here again.")


def start(*, cache: Path | None = None, timeout: float = START_TIMEOUT_S,
          ctx_size: int = 4096) -> LocalEngine:
    """Start (or return) the process's built-in engine; raises EngineError with what to do."""
    global _engine
    with _lock:
        if _engine is not None and _engine.running():
            return _engine
        paths = find_engine(cache)
        if paths is None:
            raise EngineError(install_hint())
        engine = LocalEngine(paths, ctx_size=ctx_size)
        engine.start(timeout=timeout)
        _engine = engine
        return engine


def current() -> LocalEngine | None:
    """The running built-in engine, if any."""
    with _lock:
        return _engine if _engine is not None and _engine.running() else None


def stop() -> None:
    """Stop the built-in engine if it runs. Safe to call any number of times."""
    global _engine
    with _lock:
        engine, _engine = _engine, None
    if engine is not None:
        engine.stop()


atexit.register(stop)
