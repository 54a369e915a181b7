"""What a model server says about itself outside chat: its chat template's turn markers and
the context window it runs a model with.

There is no standard endpoint for either, so each server is asked where it says it (the
layouts, and which server sends which, are in docs/endpoints.md): the ``/models`` entry
(vLLM, llama.cpp, hosted APIs), llama.cpp's ``GET /props``, LM Studio's ``/api/v0`` and
``/api/v1`` model info, Ollama's ``/api/ps`` and ``/api/show``. Every request is short and
bounded; a server that says nothing gives None, never an error.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from nocturne_desktop.llm.endpoint import server_root
from nocturne_desktop.llm.tuning import template_stops

REQUEST_SECONDS = 3.0
"""Each request of a probe waits at most this long (connect and read)."""
PROBE_SECONDS = 8.0
"""A whole context-window probe stops asking once this much time has passed."""
_MAX_BODY = 8 * 1024 * 1024  # a hosted API's model list with descriptions is ~2 MB


@dataclass(frozen=True)
class ContextWindow:
    """What a server said of one model's context window, in tokens.

    ``tokens`` is the window the server runs the model with (llama.cpp's ``n_ctx`` per slot,
    LM Studio's loaded length, Ollama's allocated context, vLLM's ``max_model_len``); None
    when it said only the model's trained ``maximum``, which the server may run smaller (a
    model LM Studio or Ollama has not loaded yet gets their default). ``source`` says where
    the figure was read, for people."""

    tokens: int | None
    maximum: int | None
    source: str


def read_template_stops(http: httpx.Client, base_url: str) -> tuple[str, ...]:
    """The turn markers of the server's chat template (llama.cpp's ``GET /props``); () when
    the server has no such endpoint or does not answer."""
    try:
        response = http.get(f"{server_root(base_url)}/props", timeout=REQUEST_SECONDS)
        if response.status_code == 200:
            data = response.json()
            if isinstance(data, dict) and isinstance(data.get("chat_template"), str):
                return template_stops(data["chat_template"])
    except (httpx.HTTPError, OSError, ValueError):
        pass
    return ()


@dataclass
class Probe:
    """The outcome of :func:`probe_context_window`: the window (None when nothing was said)
    and whether the server answered every question asked (False: it could not be reached,
    or stopped answering, so a later probe may learn more)."""

    window: ContextWindow | None
    complete: bool


def probe_context_window(
    http: httpx.Client, base_url: str, model: str, *, connect_seconds: float = REQUEST_SECONDS
) -> Probe:
    """Ask the server behind ``base_url`` for ``model``'s context window, endpoint by endpoint,
    until one says the window it runs the model with (a trained maximum alone does not stop
    the search). ``model`` may be empty for a server that serves one model."""
    ask = _Asker(http, connect_seconds)
    root = server_root(base_url)
    maximum: ContextWindow | None = None
    steps: list[Callable[[], ContextWindow | None]] = [
        lambda: from_models_list(ask.get(f"{base_url}/models"), model),
        lambda: from_llamacpp_props(ask.get(f"{root}/props", _props_query(model))),
    ]
    if model:
        steps += [
            lambda: from_lmstudio_v1(ask.get(f"{root}/api/v1/models"), model),
            lambda: from_lmstudio_v0(ask.get(f"{root}/api/v0/models/{quote(model, safe='')}")),
            lambda: from_ollama_ps(ask.get(f"{root}/api/ps"), model),
            lambda: from_ollama_show(
                ask.post(f"{root}/api/show", {"model": model, "name": model})
            ),
        ]
    for step in steps:
        if ask.stopped:
            break
        found = step()
        if found is None:
            continue
        if found.tokens is not None:
            if found.maximum is None and maximum is not None:
                found = ContextWindow(found.tokens, maximum.maximum, found.source)
            return Probe(found, complete=True)
        if maximum is None:
            maximum = found
    return Probe(maximum, complete=not ask.stopped)


# --- the layouts -----------------------------------------------------------------------------


def from_models_list(data: Any, model: str) -> ContextWindow | None:
    """An OpenAI-style ``GET /models`` entry: ``max_model_len`` (vLLM), ``meta.n_ctx`` and
    ``meta.n_ctx_train`` (llama.cpp), ``context_length`` (OpenRouter and other hosted APIs),
    ``context_window`` (Groq), ``loaded_context_length`` / ``max_context_length``."""
    rows = data.get("data") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        return None
    entries = [r for r in rows if isinstance(r, dict)]
    entry = next((r for r in entries if model and model in (r.get("id"), r.get("name"))), None)
    if entry is None and len(entries) == 1:
        entry = entries[0]  # a server that serves one model answers to any name
    if entry is None:
        return None
    raw_meta = entry.get("meta")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    for key, value in (
        ("max_model_len", entry.get("max_model_len")),
        ("meta.n_ctx", meta.get("n_ctx")),
        ("loaded_context_length", entry.get("loaded_context_length")),
        ("context_length", entry.get("context_length")),
        ("context_window", entry.get("context_window")),
    ):
        tokens = _tokens(value)
        if tokens is not None:
            return ContextWindow(tokens, _maximum(entry, meta), f"GET /models: {key}")
    top = _maximum(entry, meta)
    return None if top is None else ContextWindow(None, top, "GET /models: trained maximum")


def _maximum(entry: Mapping[str, Any], meta: Mapping[str, Any]) -> int | None:
    return _tokens(meta.get("n_ctx_train")) or _tokens(entry.get("max_context_length"))


def from_llamacpp_props(data: Any) -> ContextWindow | None:
    """llama.cpp's ``GET /props``: ``default_generation_settings.n_ctx``, the context of one
    server slot (what one request gets), in the older flat settings and the newer slot-shaped
    ones alike; a top-level ``n_ctx`` (llama.cpp-compatible servers) when that is absent."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _tokens(settings.get("n_ctx"))) is not None:
        return ContextWindow(tokens, None,
                             "llama.cpp GET /props: default_generation_settings.n_ctx")
    if (tokens := _tokens(data.get("n_ctx"))) is not None:
        return ContextWindow(tokens, None, "GET /props: n_ctx")
    return None


def from_lmstudio_v0(data: Any) -> ContextWindow | None:
    """LM Studio's ``GET /api/v0/models/{id}``: ``loaded_context_length`` while the model is
    loaded, ``max_context_length`` (the model's maximum) always."""
    if not isinstance(data, dict) or "max_context_length" not in data:
        return None
    maximum = _tokens(data.get("max_context_length"))
    loaded = _tokens(data.get("loaded_context_length"))
    if loaded is not None and data.get("state", "loaded") == "loaded":
        return ContextWindow(loaded, maximum, "LM Studio GET /api/v0/models: "
                                              "loaded_context_length")
    if maximum is None:
        return None
    return ContextWindow(None, maximum, "LM Studio GET /api/v0/models: max_context_length")


def from_lmstudio_v1(data: Any, model: str) -> ContextWindow | None:
    """LM Studio 0.4's ``GET /api/v1/models``: the model's ``loaded_instances[].config.
    context_length`` while loaded, ``max_context_length`` always."""
    rows = data.get("models") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    for row in rows:
        if not isinstance(row, dict):
            continue
        instances = [i for i in row.get("loaded_instances") or [] if isinstance(i, dict)]
        if row.get("key") != model and not any(i.get("id") == model for i in instances):
            continue
        maximum = _tokens(row.get("max_context_length"))
        instances.sort(key=lambda i: i.get("id") != model)  # the instance asked for first
        for inst in instances:
            config = inst.get("config")
            loaded = _tokens(config.get("context_length")) if isinstance(config, dict) else None
            if loaded is not None:
                return ContextWindow(loaded, maximum, "LM Studio GET /api/v1/models: "
                                                      "loaded_instances[].config.context_length")
        if maximum is not None:
            return ContextWindow(None, maximum, "LM Studio GET /api/v1/models: "
                                                "max_context_length")
    return None


def from_ollama_ps(data: Any, model: str) -> ContextWindow | None:
    """Ollama's ``GET /api/ps``: the ``context_length`` a loaded model was given."""
    rows = data.get("models") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    wanted = _ollama_name(model)
    for row in rows:
        if not isinstance(row, dict):
            continue
        names = {_ollama_name(str(row.get(k))) for k in ("name", "model") if row.get(k)}
        tokens = _tokens(row.get("context_length"))
        if wanted in names and tokens is not None:
            return ContextWindow(tokens, None, "Ollama GET /api/ps: context_length")
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def from_ollama_show(data: Any) -> ContextWindow | None:
    """Ollama's ``POST /api/show``: a ``num_ctx`` parameter (the Modelfile's, which Ollama
    loads the model with) and ``model_info["<arch>.context_length"]`` (the trained maximum)."""
    if not isinstance(data, dict):
        return None
    info = data.get("model_info")
    maximum: int | None = None
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        maximum = _tokens(info.get(f"{arch}.context_length")) if isinstance(arch, str) else None
        if maximum is None:
            maximum = next((t for k, v in info.items() if str(k).endswith(".context_length")
                            and (t := _tokens(v)) is not None), None)
    params = data.get("parameters")
    match = _NUM_CTX.search(params) if isinstance(params, str) else None
    if match is not None:
        return ContextWindow(int(match.group(1)), maximum, "Ollama POST /api/show: num_ctx")
    if maximum is None:
        return None
    return ContextWindow(None, maximum, "Ollama POST /api/show: model_info context_length")


# --- small helpers ---------------------------------------------------------------------------


def _tokens(value: Any) -> int | None:
    """A positive whole number of tokens, or None (bools, strings, zero and negatives are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    tokens = int(value)
    return tokens if tokens > 0 and tokens == value else None


def _ollama_name(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _props_query(model: str) -> dict[str, str]:
    """llama.cpp's router mode routes ``GET /props`` by ``?model=`` (and would load the model
    to answer: ``autoload=false`` keeps a probe cheap); a one-model server ignores both."""
    return {"model": model, "autoload": "false"} if model else {}


class _Asker:
    """Short GET/POST requests that give parsed JSON or None, never raise, and stop the probe
    once the server cannot be reached or the probe's time is up."""

    def __init__(self, http: httpx.Client, connect_seconds: float) -> None:
        self._http = http
        self._deadline = time.monotonic() + PROBE_SECONDS
        connect = min(connect_seconds, REQUEST_SECONDS)
        self._timeout = httpx.Timeout(REQUEST_SECONDS, connect=connect)
        self.down = False

    @property
    def stopped(self) -> bool:
        return self.down or time.monotonic() >= self._deadline

    def get(self, url: str, params: Mapping[str, str] | None = None) -> Any:
        return self._ask("GET", url, params=params)

    def post(self, url: str, body: Mapping[str, Any]) -> Any:
        return self._ask("POST", url, body=body)

    def _ask(
        self, method: str, url: str, *, params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        if self.stopped:
            return None
        try:
            with self._http.stream(method, url, params=params, json=body,
                                   timeout=self._timeout) as response:
                if response.status_code != 200:
                    return None
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > _MAX_BODY:
                        return None
        except (httpx.HTTPError, OSError):
            self.down = True
            return None
        try:
            return json.loads(data)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            return None
