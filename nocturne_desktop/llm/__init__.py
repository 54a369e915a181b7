"""The OpenAI-compatible model client (the only package that imports httpx)."""

from nocturne_desktop.llm.client import (
    DEFAULT_BASE_URL,
    MODES,
    OpenAIClient,
    Timeouts,
    capabilities_for,
    forget_capabilities,
    normalise_base_url,
    require_complete,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MODES",
    "OpenAIClient",
    "Timeouts",
    "capabilities_for",
    "forget_capabilities",
    "normalise_base_url",
    "require_complete",
]
