"""Settings and the model client share one Timeouts and one base-URL normaliser."""

from __future__ import annotations

import pytest

from nocturne_desktop import settings
from nocturne_desktop.llm import client


def test_settings_store_the_clients_own_timeouts() -> None:
    assert settings.Timeouts is client.Timeouts
    assert settings.DEFAULT_BASE_URL == client.DEFAULT_BASE_URL
    t = settings.Settings(timeouts=client.Timeouts(connect=3, first_token=90, idle=20)).timeouts
    assert isinstance(t, client.Timeouts) and (t.connect, t.first_token, t.idle) == (3, 90, 20)
    with pytest.raises(ValueError, match="connect timeout must be positive"):
        settings.Settings.model_validate({"timeouts": {"connect": 0}})
    with pytest.raises(ValueError, match="less than or equal to 7200"):
        client.Timeouts(first_token=10_000)


@pytest.mark.parametrize("raw", [" http://127.0.0.1:8080/v1/ ", "localhost:1234", "HTTPS://h/v1//"])
def test_one_normaliser_for_settings_and_client(raw: str) -> None:
    assert settings.Settings(base_url=raw).base_url == client.normalise_base_url(raw)


@pytest.mark.parametrize(("raw", "fragment"), [("ftp://x", "http:// or https://"), ("  ", "empty")])
def test_settings_and_client_refuse_the_same_urls(raw: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        settings.Settings(base_url=raw)
    with pytest.raises(ValueError, match=fragment):
        client.OpenAIClient(raw)
