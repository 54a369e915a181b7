"""Where a model server is and how long to wait for it: the base URL and the timeouts.

One definition each, shared by the client, the settings and the endpoint probe, so a URL or a
timeout the settings accept is one the client accepts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from nocturne_desktop.core import logfile

DEFAULT_BASE_URL = "http://localhost:1234/v1"


class Timeouts(BaseModel):
    """Seconds the client waits, per phase of a request (also stored in the settings).

    ``first_token``: request sent → first generated token (prompt processing and model loading
    happen here, so it is long). ``idle``: the longest silence between two chunks once the
    reply has started. ``total``: the overall deadline of one request, however steadily the
    server trickles. A wrong value raises ``ValueError`` (pydantic's ``ValidationError``)
    saying which.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    connect: float = Field(10.0, le=600, description="Connecting to the model server.")
    first_token: float = Field(
        600.0, le=7200,
        description="Request sent → first token (prompt processing and model loading happen here).",
    )
    idle: float = Field(120.0, le=3600, description="Longest silence between two chunks.")
    total: float = Field(
        1200.0, le=14400,
        description="Overall deadline of one request, however steadily the reply trickles in.",
    )

    @field_validator("connect", "first_token", "idle", "total")
    @classmethod
    def _positive(cls, value: float, info: ValidationInfo) -> float:
        if not value > 0:
            name = (info.field_name or "").replace("_", "-")
            raise ValueError(f"the {name} timeout must be positive, not {value!r}")
        return value


DEFAULT_TIMEOUTS = Timeouts()


def normalise_base_url(base_url: str) -> str:
    """The base URL as given, trimmed, without trailing slashes.

    No path is guessed: ``http://host:1234`` stays without ``/v1``. A missing scheme gets
    ``http://`` (local servers speak plain HTTP); any scheme but http and https is refused.
    """
    url = base_url.strip()
    if not url:
        raise ValueError(
            f"the model server's base URL is empty; set it in Settings (LM Studio's default is "
            f"{DEFAULT_BASE_URL})")
    if "://" not in url:
        url = "http://" + url
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"the base URL must start with http:// or https://, not {scheme}://")
    if "@" in url.split("://", 1)[1].split("/", 1)[0]:  # never saved, sent or shown with a password
        raise ValueError(f"the base URL {logfile.redact_url(url)} holds a user name or password; "
                         "leave them out and put the key in the API key field")
    return url.rstrip("/")


def server_root(base_url: str) -> str:
    """The server's own root for its native endpoints (llama.cpp's ``/props``, LM Studio's
    ``/api/v0``, Ollama's ``/api``): a normalised base URL without its ``/v1``."""
    return base_url.removesuffix("/v1")
