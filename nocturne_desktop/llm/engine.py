"""The built-in local model engine: a llama-server child process on a loopback port.

The engine is a folder with an ``engine.json`` manifest naming the server and the model inside
it. A packaged app carries one beside its executable (``<app folder>/engine``, put there by
``scripts/package.py``); from a source checkout, ``scripts/local-engine build`` (``make
engine``) compiles llama-server and fetches the SmolLM2-135M-Instruct weights into the user
cache folder and writes the manifest there. :func:`find_engine` reads the manifest and
:class:`LocalEngine` runs the server::

    paths = find_engine()
    if paths is not None:
        with LocalEngine(paths) as engine:
            client = OpenAIClient(engine.base_url, engine.model_name)

Standard library only (plus :mod:`nocturne_desktop.paths`), so importing it needs no httpx.

The child process never outlives us: :meth:`LocalEngine.stop` runs at interpreter exit, and on
Linux the kernel also kills it if this process dies without cleaning up (even by SIGKILL). That
guarantee is ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked the child exits,
not the process: so every child is forked by one spawner thread that lives as long as the
process (:func:`spawn`), whichever thread — a short-lived GUI worker, say — asks for it.

When the server exits on its own, :attr:`LocalEngine.exit` says how (code and the last lines of
its log) and the ``on_exit`` callbacks run (in a watcher thread, which also reaps the child).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, cast

from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.paths import cache_dir

MANIFEST = "engine.json"
MANIFEST_SCHEMA = 1


class EngineError(NocturneError):
    """The local engine could not be started (or is not built). ``str()`` says what to do."""


@dataclass(frozen=True)
class EnginePaths:
    server: Path
    model: Path


def engine_dir(cache: Path | None = None) -> Path:
    return (cache if cache is not None else cache_dir()) / "engine"


BUNDLED_DIRNAME = "engine"
"""The engine pack's folder name inside a packaged app's folder."""


def bundled_engine_dir() -> Path | None:
    """Where a packaged (frozen) app keeps its engine pack: ``engine`` beside the executable;
    None when running from source."""
    if not getattr(sys, "frozen", False):
        return None
    return Path(sys.executable).resolve().parent / BUNDLED_DIRNAME


def find_engine(cache: Path | None = None) -> EnginePaths | None:
    """The engine to run, or None when there is none: the engine pack of a packaged app if it
    is complete, else the one built into the user cache. With ``cache`` given, only the engine
    in that cache folder counts."""
    if cache is None:
        bundled = bundled_engine_dir()
        found = engine_in(bundled) if bundled is not None else None
        if found is not None:
            return found
    return engine_in(engine_dir(cache))


def engine_in(root: Path) -> EnginePaths | None:
    """The engine described by ``root/engine.json``, or None when it is absent or incomplete
    (a missing or non-executable server, a missing model, another manifest schema)."""
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
        return None
    server_rel, model_rel = data.get("server"), data.get("model")
    if not isinstance(server_rel, str) or not isinstance(model_rel, str):
        return None
    server, model = root / server_rel, root / model_rel
    if not server.is_file() or not model.is_file():
        return None
    if os.name != "nt" and not os.access(server, os.X_OK):
        return None
    return EnginePaths(server=server, model=model)


def repair_hint() -> str:
    """How to get a missing engine back: a packaged app is reinstalled, a checkout rebuilds."""
    if getattr(sys, "frozen", False):
        return "reinstall Nocturne (its packages carry the engine)"
    return "run `make engine`"


def default_threads() -> int:
    """Half the logical cores (at least one).

    A 135M model is bound by memory and thread synchronisation, not arithmetic: on 2 cores one
    thread generated faster than two, and two threads collapse (to a few tokens/s) as soon as
    anything else — the GUI, a test run — wants a core. See bench/bench_engine.py.
    """
    return max(1, (os.cpu_count() or 2) // 2)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


PR_SET_PDEATHSIG = 1
PARENT_DEATH_SIGNAL = signal.SIGKILL
"""What the kernel sends the engine when Nocturne dies. SIGKILL: llama-server keeps nothing worth
flushing, and a server busy generating must not be able to delay it."""


def _linux_libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _parent_death_signal(libc: Any, parent: int) -> Callable[[], None]:
    """The child's pre-exec hook: die with the parent; and if the parent already died between
    fork and prctl (the signal would never come), exit at once."""

    def arm() -> None:  # runs in the child between fork and exec: no imports, no locks
        libc.prctl(PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL))
        if os.getppid() != parent:
            os._exit(1)

    return arm


_SpawnRequest = tuple["Future[subprocess.Popen[bytes]]", Sequence[str], dict[str, Any]]


class _Spawner:
    """Forks child processes from one daemon thread that lives as long as the process.

    Linux's ``PR_SET_PDEATHSIG`` is tied to the forking thread: a child forked by a worker thread
    is killed as soon as that worker ends (the first-run panel starts the engine from one). This
    thread never ends before the process does, so the signal means "Nocturne died", nothing
    else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[_SpawnRequest] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._libc: Any = None

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def popen(self, args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                if sys.platform.startswith("linux") and self._libc is None:
                    with contextlib.suppress(OSError):
                        self._libc = _linux_libc()
                self._thread = threading.Thread(target=self._serve, name="nocturne-spawner",
                                                daemon=True)
                self._thread.start()
        future: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((future, list(args), kwargs))
        return future.result()

    def _serve(self) -> None:
        while True:
            future, args, kwargs = self._requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if self._libc is not None:
                    kwargs = {**kwargs, "preexec_fn": _parent_death_signal(self._libc, os.getpid())}
                future.set_result(cast("subprocess.Popen[bytes]", subprocess.Popen(args, **kwargs)))
            except BaseException as exc:  # handed to the caller's thread
                future.set_exception(exc)


_spawner = _Spawner()


def spawn(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(args, **kwargs)``, forked by the process-lifetime spawner thread; on
    Linux the child is killed by the kernel when this process dies, however it dies."""
    return _spawner.popen(args, **kwargs)


@dataclass(frozen=True)
class EngineExit:
    """How a server that was not asked to stop ended."""

    code: int
    log_tail: str
    log_path: Path | None

    def describe(self) -> str:
        if self.code < 0:
            try:
                how = f"was killed by {signal.Signals(-self.code).name}"
            except ValueError:
                how = f"was killed by signal {-self.code}"
        else:
            how = f"exited with code {self.code}"
        return f"llama-server {how}"


def _tail(path: Path, n: int = 25) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


_KEYS: dict[str, str] = {}
"""``http://127.0.0.1:<port>`` → the per-run key of the engine this process runs there."""


def key_for(base_url: str) -> str | None:
    """The key a client must send to the engine this process started at ``base_url`` (each
    run has its own random key, so no other local process can use the engine), or None."""
    root = "/".join(base_url.split("/", 3)[:3])
    return _KEYS.get(root)


class LocalEngine:
    """Runs llama-server for one model; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        paths: EnginePaths,
        *,
        port: int | None = None,
        ctx_size: int = 4096,
        threads: int | None = None,
        parallel: int = 1,
        alias: str | None = None,
        log_path: Path | None = None,
    ) -> None:
        """``parallel`` is the number of server slots: 1 keeps one request at a time (the
        right choice for a small CPU; others queue), more lets requests decode side by side
        with ``ctx_size`` shared between them. ``alias`` is the model id the server reports
        (default: the model file's name without ``.gguf``, rather than its full path)."""
        if ctx_size < 256:
            raise ValueError(f"ctx_size must be at least 256 tokens, not {ctx_size}")
        if parallel < 1:
            raise ValueError(f"parallel must be at least 1, not {parallel}")
        self.paths = paths
        self.ctx_size = ctx_size
        self.threads = threads if threads is not None else default_threads()
        self.parallel = parallel
        self.alias = alias or paths.model.name.removesuffix(".gguf")
        self._fixed_port = port
        self.port: int | None = None
        self.model_name = ""
        self._log_path = log_path
        self._log_file: IO[bytes] | None = None
        self._tmp_log: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.exit: EngineExit | None = None
        """Set when the server ended without being asked to (see :meth:`add_exit_callback`)."""
        self._exit_callbacks: list[Callable[[EngineExit], None]] = []
        self.api_key = secrets.token_urlsafe(32)
        """This run's key: the server refuses any request without it (it is passed in a
        private file, never on the command line, where every local user could read it)."""
        logfile.add_secret(self.api_key)
        self._key_file: str | None = None

    # ------------------------------------------------------------------ properties

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EngineError("the local engine is not running; call start() first")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    @property
    def log_path(self) -> Path | None:
        return self._log_path or self._tmp_log

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def add_exit_callback(self, callback: Callable[[EngineExit], None]) -> None:
        """Call ``callback(exit)`` (from a watcher thread) if the server ends without stop()."""
        self._exit_callbacks.append(callback)

    # ------------------------------------------------------------------ lifecycle

    def command(self, port: int) -> list[str]:
        return [
            str(self.paths.server),
            "--host", "127.0.0.1",
            "--port", str(port),
            "-m", str(self.paths.model),
            "-c", str(self.ctx_size),
            "--threads", str(self.threads),
            "--parallel", str(self.parallel),
            "--alias", self.alias,
            "--jinja",  # use the model's own chat template (the default in this version)
            "--no-webui",
            *(("--api-key-file", self._key_file) if self._key_file else ()),
        ]

    def start(self, timeout: float = 120.0) -> None:
        """Start the server and wait until ``/health`` answers 200 (the model is loaded)."""
        with self._lock:
            if self.running():
                return
            attempts = 1 if self._fixed_port is not None else 3
            last_error: EngineError | None = None
            for _ in range(attempts):
                port = self._fixed_port if self._fixed_port is not None else _free_port()
                try:
                    self._launch(port, timeout)
                    return
                except EngineError as exc:
                    last_error = exc
                    self._terminate(5.0)
                    # another process may have grabbed the port we picked; try a new one
                    if "bind" not in str(exc).lower():
                        break
            assert last_error is not None
            raise last_error

    def _launch(self, port: int, timeout: float) -> None:
        if not self.paths.server.is_file():
            raise EngineError(f"llama-server is missing at {self.paths.server}; {repair_hint()}")
        if not self.paths.model.is_file():
            raise EngineError(f"the model file is missing at {self.paths.model}; "
                              f"{repair_hint()}")
        log = self._open_log()
        fd, self._key_file = tempfile.mkstemp(prefix="nocturne-engine-key-")  # 0600
        with os.fdopen(fd, "w") as fh:
            fh.write(self.api_key + "\n")
        kwargs: dict[str, Any] = {}
        if os.name == "nt":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        try:
            self._proc = spawn(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                **kwargs,
            )
        except OSError as exc:
            raise EngineError(f"could not run {self.paths.server}: {exc}") from exc
        atexit.register(self.stop)
        self.port = port
        self.exit = None
        threading.Thread(target=self._watch, args=(self._proc,), name="nocturne-engine-watch",
                         daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                raise EngineError(
                    f"llama-server exited with code {code} while starting.\n"
                    f"--- last lines of {self.log_path} ---\n{_tail(self._require_log())}"
                )
            if self._health() == 200:
                break
            if time.monotonic() > deadline:
                raise EngineError(
                    f"llama-server did not become healthy within {timeout:.0f}s.\n"
                    f"--- last lines of {self.log_path} ---\n{_tail(self._require_log())}"
                )
            time.sleep(0.1)
        _KEYS[self.root_url] = self.api_key
        self.model_name = self._first_model_id()
        self._forget_key_file()

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        """Reap the child when it ends; if nobody asked it to stop, say how it ended."""
        code = proc.wait()
        if self._proc is not proc:  # stop() (or a failed start) took it first: expected
            return
        path = self.log_path
        ended = EngineExit(code=code, log_tail=_tail(path) if path is not None else "(no log)",
                           log_path=path)
        self.exit = ended
        for callback in list(self._exit_callbacks):
            with contextlib.suppress(Exception):
                callback(ended)

    def _open_log(self) -> IO[bytes]:
        if self._log_file is not None:
            self._log_file.close()
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self._log_path.open("ab")
        else:
            fd, name = tempfile.mkstemp(prefix="nocturne-llama-server-", suffix=".log")
            self._tmp_log = Path(name)
            self._log_file = os.fdopen(fd, "ab")
        return self._log_file

    def _require_log(self) -> Path:
        path = self.log_path
        assert path is not None
        return path

    def _get(self, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
        req = urllib.request.Request(self.root_url + path, method="GET",
                                     headers={"Authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except (urllib.error.URLError, OSError):
            return 0, b""

    def _health(self) -> int:
        return self._get("/health")[0]

    def _first_model_id(self) -> str:
        status, body = self._get("/v1/models", timeout=10.0)
        if status != 200:
            raise EngineError(f"llama-server is up but GET /v1/models answered {status}")
        try:
            data = json.loads(body)
            model_id = data["data"][0]["id"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise EngineError(f"llama-server sent an unexpected /v1/models reply: "
                              f"{body[:200]!r}") from exc
        return str(model_id)

    def healthy(self) -> bool:
        return self.running() and self._health() == 200

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL. Safe to call twice."""
        with self._lock:
            self._terminate(timeout)
            if self._tmp_log is not None:  # our own scratch log; a caller's log_path is kept
                with contextlib.suppress(OSError):
                    self._tmp_log.unlink()
                self._tmp_log = None

    def _terminate(self, timeout: float) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(OSError):
                        proc.kill()
                    proc.wait()
        if self.port is not None:
            _KEYS.pop(self.root_url, None)
        self._forget_key_file()
        self.port = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _forget_key_file(self) -> None:
        path, self._key_file = self._key_file, None
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def __enter__(self) -> LocalEngine:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.port}" if self.running() else "stopped"
        return f"<LocalEngine {self.paths.model.name} {state}>"
