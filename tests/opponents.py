"""The real test opponents beyond the built-in engine: a second model and a second server type.

``scripts/local-engine build --extra gemma3-270m --extra llama-cpp-python-server`` (``make
test`` runs it) puts both in the engine cache and lists them under ``extras`` in
``engine.json``:

* **Gemma 3 270M base** on the same llama-server: a base model, not instruction-tuned, so it
  ignores instructions — the proposer the gates exist for. Its GGUF carries no chat template
  (llama-server would fall back to ChatML, which the model has never seen); it is run with
  llama.cpp's built-in ``gemma`` template, the turn format of its family.
* **llama-cpp-python's own OpenAI-compatible server** (``python -m llama_cpp.server``) with the
  built-in SmolLM2 GGUF: a second server type, which refuses ``json_schema`` and takes the
  schema inside ``json_object``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any, NoReturn

from nocturne_desktop.core.ports import ChatTuning
from nocturne_desktop.llm.engine import MANIFEST, EnginePaths, LocalEngine, engine_dir

GEMMA = "gemma3-270m"
PYSERVER = "llama-cpp-python-server"


def extras() -> dict[str, dict[str, Any]]:
    """``engine.json``'s ``extras``, with paths made absolute; {} when absent."""
    root = engine_dir()
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    listed = data.get("extras") if isinstance(data, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for name, entry in (listed.items() if isinstance(listed, dict) else ()):
        if isinstance(entry, dict):
            out[name] = {k: (root / v if k in ("model", "python", "license") else v)
                         for k, v in entry.items()}
    return out


def gemma_model() -> Path | None:
    path = extras().get(GEMMA, {}).get("model")
    return path if isinstance(path, Path) and path.is_file() else None


def pyserver_python() -> Path | None:
    path = extras().get(PYSERVER, {}).get("python")
    return path if isinstance(path, Path) and path.is_file() else None


class GemmaEngine(LocalEngine):
    """llama-server with Gemma's own turn format (the GGUF has no chat template)."""

    def command(self, port: int) -> list[str]:
        # After --jinja, --chat-template takes Jinja *source*: "gemma" would be the whole
        # prompt. --no-jinja first makes it the name of llama.cpp's built-in Gemma template.
        return [*super().command(port), "--no-jinja", "--chat-template", "gemma"]


def gemma_engine(paths: EnginePaths, model: Path, log: Path) -> GemmaEngine:
    return GemmaEngine(EnginePaths(server=paths.server, model=model), ctx_size=4096,
                       log_path=log, alias="gemma-3-270m")


GEMMA_TUNING = ChatTuning(
    name="Gemma 3 270M base (a test opponent)",
    max_tokens=64,
    stop=("\n",),
    stops_from_template=True,
)
"""Free-text replies of the base model cut at its first line (and at 64 tokens), as the
built-in model's chat tuning cuts its replies at a paragraph. A base model does not answer: it
continues the prompt, copying the system text line after line until the cap (every chat reply
and Wake answer ran to it, a third of its verify's time). Structured replies get no stop (the
client never sends one with a schema): the encoder and the passes see the model as it is."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaCppPythonServer:
    """``python -m llama_cpp.server`` on a free loopback port, one model, one thread."""

    def __init__(self, python: Path, model: Path, log: Path, *, alias: str,
                 ctx_size: int = 4096, threads: int | None = None) -> None:
        self.python, self.model, self.log, self.model_name = python, model, log, alias
        self.ctx_size = ctx_size
        self.threads = threads if threads is not None else max(1, (os.cpu_count() or 2) // 2)
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        assert self.port is not None, "not started"
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, port: int) -> list[str]:
        return [str(self.python), "-m", "llama_cpp.server", "--model", str(self.model),
                "--model_alias", self.model_name, "--host", "127.0.0.1", "--port", str(port),
                "--n_ctx", str(self.ctx_size), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads)]

    def start(self, timeout: float = 180.0) -> LlamaCppPythonServer:
        if self._proc is not None and self._proc.poll() is None:
            return self
        port = _free_port()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log.open("ab")
        kwargs: dict[str, Any] = {"start_new_session": True} if os.name != "nt" else {}
        self._proc = subprocess.Popen(self.command(port), stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT, **kwargs)
        self.port = port
        deadline = time.monotonic() + timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                raise RuntimeError(f"llama_cpp.server exited with {code} while starting:\n"
                                   + self.tail())
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"llama_cpp.server not ready within {timeout:.0f}s:\n"
                                   + self.tail())
            time.sleep(0.2)

    def tail(self, n: int = 30) -> str:
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def __enter__(self) -> LlamaCppPythonServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def unavailable(message: str, required_by: str = "NOCTURNE_REQUIRE_ENGINE") -> NoReturn:
    """A real opponent the tests need is not installed: fail when ``required_by`` is ``1``
    (``make test`` sets it, having installed the opponent first), skip otherwise."""
    import pytest

    if os.environ.get(required_by) == "1":
        pytest.fail(f"{message} ({required_by}=1 makes this a failure)")
    pytest.skip(message)


def missing(what: str, how: str) -> NoReturn:
    """An engine-cache extra is not built (:func:`unavailable`)."""
    unavailable(f"{what} is not in the engine cache: run `{how}`")


BUILD_EXTRAS = "make engine-extras"


def reason_bucket(reason: str) -> str:
    """A refusal reason without its particulars (quoted values, numbers, the part after ':')."""
    head = re.split(r": | \(", reason, maxsplit=1)[0]
    head = re.sub(r"'[^']*'|\"[^\"]*\"", "…", head)
    return re.sub(r"\d+", "N", head).strip() or reason[:60]
