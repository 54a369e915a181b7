"""A packaged app finds the engine pack beside its executable, and never tells its user to run
``make``: the pack is preferred to the user cache, an incomplete pack falls back to the cache,
and the built-in engine starts from the pack as from the cache."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.engine import EngineError, bundled_engine_dir, engine_in, find_engine
from tests.fakeengine import fake_engine_cache as _fake_engine_cache

PYTHON = sys.executable


def fake_engine_cache(root: Path) -> Path:
    """The stand-in engine (tests/fakeengine.py), run by this test's real Python even while
    ``sys.executable`` names the packaged app."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "executable", PYTHON)
        return _fake_engine_cache(root)


@pytest.fixture
def packaged_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Make this process look like the frozen app ``<tmp>/app/Nocturne``, with an empty user
    cache; yields the app folder (no engine pack in it yet)."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "Nocturne").write_text("")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(app / "Nocturne"))
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(tmp_path / "cache"))
    yield app
    builtin_engine.stop()


def test_from_source_there_is_no_engine_pack() -> None:
    assert not getattr(sys, "frozen", False)
    assert bundled_engine_dir() is None


def test_a_packaged_app_finds_the_pack_beside_its_executable(packaged_app: Path) -> None:
    fake_engine_cache(packaged_app)  # writes <app>/engine/{engine.json, llama-server, tiny.gguf}
    assert bundled_engine_dir() == packaged_app / "engine"
    found = find_engine()
    assert found is not None
    assert found.server == packaged_app / "engine" / "llama-server"
    assert found.model == packaged_app / "engine" / "tiny.gguf"
    assert builtin_engine.available()


def test_the_pack_comes_before_the_user_cache(packaged_app: Path, tmp_path: Path) -> None:
    fake_engine_cache(tmp_path / "cache")
    fake_engine_cache(packaged_app)
    found = find_engine()
    assert found is not None and found.server.parent == packaged_app / "engine"
    # an explicit cache folder means that folder only (the first-run panel's tests use it)
    cached = find_engine(tmp_path / "cache")
    assert cached is not None and cached.server.parent == tmp_path / "cache" / "engine"


def test_an_incomplete_pack_falls_back_to_the_user_cache(packaged_app: Path,
                                                         tmp_path: Path) -> None:
    fake_engine_cache(packaged_app)
    (packaged_app / "engine" / "tiny.gguf").unlink()
    assert engine_in(packaged_app / "engine") is None
    assert find_engine() is None
    fake_engine_cache(tmp_path / "cache")
    found = find_engine()
    assert found is not None and found.server.parent == tmp_path / "cache" / "engine"


def test_a_pack_of_another_manifest_schema_is_not_used(packaged_app: Path) -> None:
    fake_engine_cache(packaged_app)
    manifest = packaged_app / "engine" / "engine.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "schema": 99}))
    assert find_engine() is None


def test_the_built_in_engine_starts_from_the_pack(packaged_app: Path) -> None:
    fake_engine_cache(packaged_app)
    engine = builtin_engine.start(timeout=30)
    assert engine.paths.server.parent == packaged_app / "engine"
    with urllib.request.urlopen(engine.base_url + "/models", timeout=5) as resp:
        listed: Any = json.loads(resp.read())
    assert listed["data"][0]["id"] == "tiny"
    builtin_engine.stop()
    assert builtin_engine.current() is None


def test_a_packaged_app_without_its_pack_never_says_make(packaged_app: Path) -> None:
    assert not builtin_engine.available()
    for text in (builtin_engine.install_hint(), builtin_engine.missing_note()):
        assert "make" not in text and "source folder" not in text
        assert "package" in text
    with pytest.raises(EngineError) as raised:
        builtin_engine.start()
    assert "make" not in str(raised.value)


def test_from_source_the_hint_names_the_make_target() -> None:
    assert "make engine" in builtin_engine.install_hint()
    assert "make engine" in builtin_engine.missing_note()


def test_the_first_run_panel_of_a_packaged_app_without_its_pack(packaged_app: Path,
                                                                qtbot: Any) -> None:
    from nocturne_desktop.ui.firstrun import FirstRunDialog

    dialog = FirstRunDialog("http://localhost:1234/v1", "connection refused", servers=[],
                            host="127.0.0.1", timeout=1.0)
    qtbot.addWidget(dialog)
    assert not dialog.engine_button.isEnabled()
    assert "make" not in dialog.engine_status.text()
    assert ".deb" in dialog.engine_status.text()


def test_the_first_run_panel_of_a_packaged_app_offers_its_engine(packaged_app: Path,
                                                                 qtbot: Any) -> None:
    from nocturne_desktop.ui.firstrun import FirstRunDialog

    fake_engine_cache(packaged_app)
    dialog = FirstRunDialog("http://localhost:1234/v1", "connection refused", servers=[],
                            host="127.0.0.1", timeout=1.0)
    qtbot.addWidget(dialog)
    assert dialog.engine_button.isEnabled()
    assert dialog.engine_status.text() == ""
