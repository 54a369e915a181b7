"""The built-in engine: a tiny local model to try Nocturne with when no server is running.

It is llama-server + SmolLM2-135M-Instruct: the engine pack a packaged app carries beside its
executable, or, from a source checkout, the engine ``make engine`` builds into the user cache
(see :func:`nocturne_desktop.llm.engine.find_engine`), started as a child process on a free
loopback port.
A 135M-parameter model is enough to watch the memory loop work, not to chat for real, and the
window says so (:data:`LABEL`).

One engine per process: :func:`start` returns the running one if there is one. It is stopped by
:func:`stop` (the window calls it on close) and, failing that, at interpreter exit; on Linux the
kernel also kills the child if this process dies without cleaning up, even by SIGKILL. It may be
started from any thread (the first-run panel starts it from a short-lived worker): the child is
forked by a thread that lives as long as the process (:func:`nocturne_desktop.llm.engine.spawn`).

If the engine ends without being stopped, :func:`stopped_report` says so for its address — the
exit code and the last lines of its log — and the listeners added with :func:`add_exit_listener`
are called (from a watcher thread), so the window can say "the built-in engine stopped" rather
than blame whatever server usually sits on a port.

    if available():
        engine = start()             # blocks until the model is loaded (a few seconds)
        client = OpenAIClient(engine.base_url, engine.model_name)
    else:
        print(install_hint())
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nocturne_desktop.llm.engine import EngineError, EngineExit, LocalEngine, find_engine

NAME = "the built-in engine"
"""How the built-in engine is named where an address would stand, before it has one."""
LABEL = "tiny built-in model — for trying Nocturne, not for real use"
INSTALL_TARGET = "make engine"
START_TIMEOUT_S = 120.0
SLOTS = 2
"""Server slots: one for the chat and one for the encoder and Sleep. llama-server gives each
request the idle slot whose cached prompt it shares most with, so the encoder's request, which
runs after every chat reply, no longer evicts the chat's prompt from the one slot (measured: a
chat turn after the encoder then re-read its whole prompt, 4 tokens from the cache)."""
SLOT_CTX = 4096
"""Context of each slot (the chat's history and memory, or one Sleep request)."""

REPORT_LOG_LINES = 8

_lock = threading.Lock()
_engine: LocalEngine | None = None
_last_url = ""
"""The address of the engine started last (it stays after the engine ended: the window still
has to say which engine stopped)."""
_stopped: dict[str, EngineExit] = {}
"""base URL → how the built-in engine that served it ended (until one is started again)."""
_listeners: list[Callable[[str, EngineExit], None]] = []


@dataclass(frozen=True)
class StoppedEngine:
    base_url: str
    exit: EngineExit

    def message(self, lines: int = REPORT_LOG_LINES) -> str:
        tail = "\n".join(self.exit.log_tail.splitlines()[-lines:]) or "(the log is empty)"
        return (f"The built-in engine stopped: {self.exit.describe()}.\n"
                f"Last lines of its log:\n{tail}")


def available(cache: Path | None = None) -> bool:
    """True when the engine is built (its manifest and files are in the user cache)."""
    return find_engine(cache) is not None


def packaged() -> bool:
    """True in a packaged (frozen) app, where ``make`` and a source folder do not exist."""
    return bool(getattr(sys, "frozen", False))


def install_hint() -> str:
    """What to do when the engine is missing, for a packaged app or a source checkout."""
    if packaged():
        return ("This copy of Nocturne came without its built-in engine (the engine folder "
                "beside the program is missing or incomplete). The installable packages carry "
                "it: reinstall Nocturne from its .deb or .tar.gz package. Meanwhile any "
                "OpenAI-compatible server (LM Studio, Ollama, llama.cpp) works: choose it above.")
    return (f"The built-in engine is not installed. In Nocturne's source folder, run "
            f"`{INSTALL_TARGET}`: it compiles llama-server and fetches the SmolLM2-135M model "
            f"(about 100 MB; a few minutes on two cores) into your user cache folder, "
            "then choose it here again.")


def missing_note() -> str:
    """The one-sentence form of :func:`install_hint`, for a banner."""
    if packaged():
        return "This copy came without its built-in engine (its packages carry it)."
    return f"No built-in engine yet (`{INSTALL_TARGET}` installs it)."


def start(*, cache: Path | None = None, timeout: float = START_TIMEOUT_S,
          ctx_size: int = SLOT_CTX * SLOTS, parallel: int = SLOTS) -> LocalEngine:
    """Start (or return) the process's built-in engine; raises EngineError with what to do."""
    global _engine, _last_url
    with _lock:
        if _engine is not None and _engine.running():
            return _engine
        paths = find_engine(cache)
        if paths is None:
            raise EngineError(install_hint())
        engine = LocalEngine(paths, ctx_size=ctx_size, parallel=parallel)
        engine.start(timeout=timeout)
        url = engine.base_url
        _stopped.pop(url, None)
        engine.add_exit_callback(lambda ended: _on_exit(url, ended))
        _engine = engine
        _last_url = url
        return engine


def _on_exit(base_url: str, ended: EngineExit) -> None:
    with _lock:
        _stopped[base_url] = ended
        listeners = list(_listeners)
    for listener in listeners:
        with contextlib.suppress(Exception):  # a listener's failure must not silence the others
            listener(base_url, ended)


def add_exit_listener(listener: Callable[[str, EngineExit], None]) -> None:
    """Call ``listener(base_url, exit)`` — from a watcher thread — when a built-in engine this
    process started ends without :func:`stop`."""
    with _lock:
        _listeners.append(listener)


def remove_exit_listener(listener: Callable[[str, EngineExit], None]) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def stopped_report(base_url: str) -> StoppedEngine | None:
    """How the built-in engine at ``base_url`` ended, if this process started one there and it
    ended on its own (None otherwise, and once an engine runs there again)."""
    key = base_url.rstrip("/")
    with _lock:
        ended = _stopped.get(key)
    return StoppedEngine(key, ended) if ended is not None else None


def last_url() -> str:
    """The address of the built-in engine this process started last ("" for none), running or
    ended; the settings never store it, since every start picks a new port. Lock-free: the GUI
    thread reads it while another thread may hold the lock for a whole start."""
    return _last_url


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
