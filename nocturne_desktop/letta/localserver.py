"""A real Letta server on a loopback port, for the tests, the benchmarks and trying the link.

``scripts/letta-server build`` (``make letta``) installs ``letta[server,sqlite]==0.11.7`` into a
virtual environment in the user cache folder; :func:`find_letta` finds it, and
:class:`LocalLettaServer` runs ``letta server`` with its data under a HOME of its own (it writes
``~/.letta``), without ``LETTA_PG_URI`` (so it uses SQLite) and with the two variables that stop
a bundled library's calls to the internet. It is up when ``GET /v1/health/`` answers; SIGTERM
stops it. The child is forked by the engine's spawner, so it dies with this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.llm.engine import _free_port, spawn
from nocturne_desktop.paths import cache_dir

LETTA_VERSION = "0.11.7"
"""The last Letta release whose server runs on SQLite."""
STAMP = "ready.json"
QUIET_ENV = {"COMPOSIO_DISABLE_VERSION_CHECK": "true", "COMPOSIO_DISABLE_SENTRY": "true"}
"""What stops a library bundled with the server from calling the internet at start."""


class LettaServerError(NocturneError):
    """The local Letta server is not installed, or did not start; ``str()`` says what to do."""


def letta_dir(cache: Path | None = None) -> Path:
    """Where ``scripts/letta-server`` installs the server (same answer as its ``letta_dir``)."""
    return (cache if cache is not None else cache_dir()) / "letta" / f"letta-{LETTA_VERSION}"


def find_letta(cache: Path | None = None) -> Path | None:
    """The installed ``letta`` program, or None when the install is absent or incomplete."""
    root = letta_dir(cache)
    try:
        stamp = json.loads((root / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("letta") != LETTA_VERSION:
        return None
    exe = root / "venv" / ("Scripts" if os.name == "nt" else "bin") / (
        "letta.exe" if os.name == "nt" else "letta")
    return exe if exe.is_file() else None


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


class LocalLettaServer:
    """``letta server`` on 127.0.0.1, its data under ``home``; a context manager."""

    def __init__(self, home: Path, *, letta: Path | None = None, port: int | None = None,
                 log: Path | None = None, password: str | None = None) -> None:
        """``password``: run in Letta's secure mode, every request but the health check then
        needs ``Authorization: Bearer <password>``."""
        self.home = home
        self.password = password
        self.letta = letta or find_letta()
        self.port = port
        self.log = log or home / "letta-server.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.start_seconds: float | None = None
        """How long the last start took until the health check answered."""

    @property
    def url(self) -> str:
        if self.port is None:
            raise LettaServerError("the Letta server is not running; call start() first")
        return f"http://127.0.0.1:{self.port}"

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int) -> list[str]:
        assert self.letta is not None
        return [str(self.letta), "server", "--host", "127.0.0.1", "--port", str(port)]

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "LETTA_PG_URI"}
        env.update(QUIET_ENV)
        env["HOME"] = str(self.home)
        env.pop("LETTA_SERVER_PASSWORD", None)
        env.pop("LETTA_SERVER_SECURE", None)
        if self.password:
            env.update(LETTA_SERVER_SECURE="true", LETTA_SERVER_PASSWORD=self.password)
        return env

    def start(self, timeout: float = 240.0) -> LocalLettaServer:
        """Start the server (on the same port as before, when restarted) and wait for health."""
        if self.running():
            return self
        if self.letta is None:
            raise LettaServerError("the Letta server is not installed: run `make letta`")
        self.home.mkdir(parents=True, exist_ok=True)
        port = self.port if self.port is not None else _free_port()
        self._log = self.log.open("ab")
        t0 = time.monotonic()
        self._proc = spawn(self.command(port), stdin=subprocess.DEVNULL, stdout=self._log,
                           stderr=subprocess.STDOUT, env=self.environment(), cwd=str(self.home))
        self.port = port
        deadline = t0 + timeout
        with httpx.Client(timeout=2.0) as http:
            while True:
                code = self._proc.poll()
                if code is not None:
                    self._close_log()
                    raise LettaServerError(f"letta server exited with code {code} while starting"
                                           f"\n--- last lines of {self.log} ---\n{_tail(self.log)}")
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(f"{self.url}/v1/health/").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    self.stop()
                    raise LettaServerError(f"letta server did not answer /v1/health/ within "
                                           f"{timeout:.0f}s\n--- last lines of {self.log} ---\n"
                                           f"{_tail(self.log)}")
                time.sleep(0.25)
        self.start_seconds = round(time.monotonic() - t0, 1)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds. Safe to call twice; the port is
        kept, so :meth:`start` brings the same server back where it was."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    proc.kill()
                proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalLettaServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
