"""Settings: one declarative schema, stored as JSON in the user-config folder.

Everything a person can set lives in :class:`Settings` (defaults and descriptions included, so
the dialog and the docs read from one place). The API key is deliberately NOT part of it: it is
kept in its own file beside ``settings.json``, created with 0600 permissions, and carried in
memory by :class:`ApiKey`, whose ``repr``/``str`` never show it. So a settings export, a log
line or a traceback that prints the settings can never leak the key.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nocturne_desktop import paths
from nocturne_desktop.core import files, logfile
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.llm.client import DEFAULT_BASE_URL, Timeouts, normalise_base_url

__all__ = [
    "BUILTIN",
    "DEFAULT_BASE_URL",
    "KEY_FILENAME",
    "SCHEMA_VERSION",
    "SERVER",
    "SETTINGS_FILENAME",
    "ApiKey",
    "AutoSleep",
    "Settings",
    "SettingsError",
    "SettingsFiles",
    "Timeouts",
    "choose_endpoint",
    "field_help",
    "key_origin",
    "needs_key_confirmation",
]

SCHEMA_VERSION = 2
"""Bumped when a stored field changes meaning; older files are migrated on load.
2: ``endpoint`` (``server`` or ``builtin``) — the built-in engine is saved as itself, never as
the loopback port it happened to listen on (it picks a free port at every start)."""

Endpoint = Literal["server", "builtin"]
SERVER: Endpoint = "server"
BUILTIN: Endpoint = "builtin"

SETTINGS_FILENAME = "settings.json"
KEY_FILENAME = "api_key"


class SettingsError(NocturneError):
    """The settings file cannot be read or holds values Nocturne refuses."""


class AutoSleep(BaseModel):
    """When Nocturne sleeps by itself (S-AUTO-1); each trigger is off by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after_facts: int = Field(
        0, ge=0, le=100_000,
        description="Sleep once this many new facts were remembered since the last sleep; 0 = off.",
    )
    idle_minutes: int = Field(
        0, ge=0, le=10_080,
        description="Sleep after this many minutes without activity, if there are new facts; 0 = off.",
    )
    on_quit: bool = Field(False, description="Sleep before the window closes (it can be skipped).")

    @property
    def enabled(self) -> bool:
        return bool(self.after_facts or self.idle_minutes or self.on_quit)


class Settings(BaseModel):
    """Everything set in the Settings dialog except the API key (see :class:`ApiKey`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this file's layout.")
    endpoint: Endpoint = Field(
        SERVER,
        description="Where the model runs: 'server' = the base URL below; 'builtin' = the "
                    "built-in engine, which Nocturne starts on a free port at each start.",
    )
    base_url: str = Field(
        DEFAULT_BASE_URL,
        description="OpenAI-compatible endpoint (LM Studio, Ollama, llama.cpp server, vLLM, "
                    "OpenAI); not used while the endpoint is the built-in engine.",
    )
    model: str = Field("", description="Model id as listed by GET {base}/models; empty = server default.")
    timeouts: Timeouts = Field(default_factory=Timeouts, description="Request timeouts in seconds.")
    temperature: float = Field(0.2, ge=0.0, le=2.0, description="Sampling temperature for chat.")
    pass_budget_tokens: int = Field(
        1500, ge=200, le=200_000,
        description="Payload tokens per Sleep request; larger passes are split into several requests. "
                    "Keep it well inside the model's context (Ollama truncates silently).",
    )
    retention: RetentionPolicy = Field(
        default_factory=RetentionPolicy, description="What Sleep may forget (validated by the core)."
    )
    data_dir: str = Field(
        "", description="Folder of the memory database; empty = the platform's user-data folder."
    )
    auto_sleep: AutoSleep = Field(
        default_factory=AutoSleep, description="Automatic sleep: after N facts, when idle, on quit."
    )
    key_host: str = Field(
        "", description="The server (scheme://host:port) the API key was saved for; the key is "
                        "sent to another only after the person confirms (key_origin).",
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return normalise_base_url(value)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, value: int) -> int:
        if value > SCHEMA_VERSION:
            raise ValueError(
                f"written by a newer Nocturne (settings schema {value}, this one reads up to "
                f"{SCHEMA_VERSION})"
            )
        return SCHEMA_VERSION

    @property
    def builtin(self) -> bool:
        """True when the model is the built-in engine (its address is found at run time)."""
        return self.endpoint == BUILTIN

    def resolved_data_dir(self, override: str | os.PathLike[str] | None = None) -> Path:
        """The data folder: a command-line/env override wins, then this setting, then the default."""
        return paths.data_dir(override or self.data_dir or None)


class ApiKey:
    """The API key in memory. ``repr``/``str`` never reveal it; :meth:`reveal` is explicit."""

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value.strip()
        logfile.add_secret(self._value)  # never written to the log, whatever prints it

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("ApiKey", self._value))

    def __repr__(self) -> str:
        return "ApiKey(set)" if self._value else "ApiKey(empty)"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # pickling would copy the secret somewhere unexpected
        raise TypeError("an API key is not picklable")


_BUILTIN_MODEL = re.compile(r"smollm2?[-_ ]?135m", re.I)
_KNOWN_SERVER_PORTS = frozenset({1234, 11434, 8080, 1337, 8000, 5000})
"""Default ports of the local servers a person runs themselves (LM Studio, Ollama, llama.cpp,
vLLM, …): a v1 file pointing there is a server, not a built-in engine."""


def _was_builtin_engine(raw: dict[str, Any]) -> bool:
    """A v1 file saved while the built-in engine was chosen: a loopback address on a port no
    known server uses by default, with the built-in model (SmolLM2-135M)."""
    url, model = raw.get("base_url"), raw.get("model")
    if not isinstance(url, str) or not isinstance(model, str) or not _BUILTIN_MODEL.search(model):
        return False
    try:
        parts = urlsplit(normalise_base_url(url))
        port = parts.port
    except ValueError:
        return False
    return (parts.hostname in ("127.0.0.1", "localhost") and port is not None
            and port not in _KNOWN_SERVER_PORTS)


def _migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring an older file up to :data:`SCHEMA_VERSION`."""
    raw = dict(raw)
    version = raw.get("schema_version", 1)
    if isinstance(version, int) and version < 2:
        # v1 saved the built-in engine as the port it listened on, dead after a restart
        if "endpoint" not in raw and _was_builtin_engine(raw):
            raw["endpoint"] = BUILTIN
            raw.pop("base_url", None)
        raw["schema_version"] = SCHEMA_VERSION
    raw.setdefault("schema_version", SCHEMA_VERSION)
    raw.pop("api_key", None)  # never read a key from the exported settings file
    return raw


_DEFAULT_PORTS = {"http": 80, "https": 443}


def key_origin(base_url: str) -> str:
    """Where a key goes when it is sent to ``base_url``: ``scheme://host:port``, lower case,
    the default port written out (``http://Example.com/v1`` → ``http://example.com:80``).
    An address that cannot be read gives ``""``."""
    try:
        parts = urlsplit(normalise_base_url(base_url))
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return ""
    host = (parts.hostname or "").lower()
    return f"{parts.scheme}://{host}:{port}" if host else ""


def needs_key_confirmation(saved_for: str, base_url: str, *, has_key: bool) -> bool:
    """Whether the person must confirm before the API key is sent to ``base_url``: there is a
    key, and the server it was saved for (``saved_for``, a :func:`key_origin`; empty for a key
    saved before this rule) is not the one ``base_url`` names. The window asks; on yes it saves
    ``key_host = key_origin(base_url)``; on no it sends no key."""
    if not has_key:
        return False
    target = key_origin(base_url)
    return not target or target != saved_for


def choose_endpoint(settings: Settings, base_url: str, model: str, *,
                    builtin_url: str | None) -> Settings:
    """The settings after the first-run panel picked ``base_url``/``model``: the built-in
    engine (``base_url`` is where the running one, ``builtin_url``, listens) is saved as
    ``endpoint="builtin"`` and the server URL is kept as it was; any other address is a server."""
    if builtin_url is not None and base_url.rstrip("/") == builtin_url.rstrip("/"):
        return settings.model_copy(update={"endpoint": BUILTIN, "model": model})
    return settings.model_copy(update={"endpoint": SERVER, "base_url": normalise_base_url(base_url),
                                       "model": model})


MAX_SETTINGS_BYTES = 1 << 20
"""Largest settings file read (a real one is under 2 KB)."""
MAX_KEY_BYTES = 64 * 1024
"""Largest API key file read."""


def _short(exc: BaseException) -> str:
    return logfile.redact_url(str(exc))[:120] or type(exc).__name__


def _read_text(path: Path, cap: int, what: str) -> str:
    """A small config file's text; :class:`SettingsError` for anything but a regular UTF-8
    file of at most ``cap`` bytes."""
    try:
        raw = files.read_regular(path, cap, what=f"{what} ({path})")
    except files.FileRefused as exc:
        raise SettingsError(str(exc)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{what} ({path}) is not UTF-8 text (byte {exc.start}); fix or "
                            "delete it to use defaults") from None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        where = ".".join(str(x) for x in err["loc"]) or "settings"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class SettingsFiles:
    """The two files in the config folder: ``settings.json`` and the 0600 ``api_key``."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder) if folder is not None else paths.config_dir()

    @property
    def settings_path(self) -> Path:
        return self.folder / SETTINGS_FILENAME

    @property
    def key_path(self) -> Path:
        return self.folder / KEY_FILENAME

    def __repr__(self) -> str:
        return f"SettingsFiles({str(self.folder)!r})"

    # -- settings ----------------------------------------------------------------------------
    def load(self) -> Settings:
        """The stored settings, or the defaults when there is no file yet.

        A damaged, hostile or newer file raises :class:`SettingsError` (one sentence; the
        window then uses the defaults) and is left untouched: not a regular file, over
        :data:`MAX_SETTINGS_BYTES`, not UTF-8, not JSON, nested too deep, numbers JSON cannot
        hold, values of the wrong type or out of range.
        """
        path = self.settings_path
        if not path.exists() and not path.is_symlink():
            return Settings()
        text = _read_text(path, MAX_SETTINGS_BYTES, "the settings file")
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsError(
                f"{path} is not valid JSON (line {exc.lineno}); fix or delete it to use defaults"
            ) from None
        except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting too deep
            raise SettingsError(f"{path} holds JSON Nocturne does not read ({_short(exc)}); "
                                "fix or delete it to use defaults") from None
        if not isinstance(raw, dict):
            raise SettingsError(f"{path} must hold a JSON object, not {type(raw).__name__}")
        try:
            return Settings.model_validate(_migrate(raw))
        except ValidationError as exc:
            raise SettingsError(f"{path}: {_describe(exc)}") from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise SettingsError(f"{path} holds values Nocturne cannot read ({_short(exc)})"
                                ) from None

    def save(self, settings: Settings) -> Path:
        """Write atomically (temp file + rename), so a crash never leaves half a file; the
        file is private (0600, in a 0700 folder), as everything Nocturne keeps is."""
        data = json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        self._write_atomic(self.settings_path, data.encode("utf-8"))
        return self.settings_path

    # -- API key -----------------------------------------------------------------------------
    def load_key(self) -> ApiKey:
        """The stored key (empty when there is none). A key file that is not a regular file,
        over :data:`MAX_KEY_BYTES`, not UTF-8 or holding control characters raises
        :class:`SettingsError` (the window goes on without a key)."""
        path = self.key_path
        if not path.exists() and not path.is_symlink():
            return ApiKey()
        text = _read_text(path, MAX_KEY_BYTES, "the API key file").strip()
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise SettingsError("the API key file holds control characters or several lines; "
                                "save the key again in Settings")
        return ApiKey(text)

    def save_key(self, key: ApiKey) -> None:
        """Store the key with 0600 permissions; an empty key removes the file."""
        if not key:
            with contextlib.suppress(FileNotFoundError):
                self.key_path.unlink()
            return
        self._write_atomic(self.key_path, key.reveal().encode("utf-8"))

    def _write_atomic(self, path: Path, data: bytes) -> None:
        files.ensure_private_dir(self.folder)
        files.write_private(path, data)


def field_help(model: type[BaseModel], name: str) -> str:
    """The description of a schema field (used for the dialog's tooltips)."""
    info = model.model_fields[name]
    return info.description or ""
