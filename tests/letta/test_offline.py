"""The Letta link's parts that need no Letta server: the install script's reuse, the client's
errors when nothing answers, the key file, and a failed link leaving nothing behind."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import socket
from pathlib import Path
from types import ModuleType

import pytest

from nocturne_desktop.cli import main
from nocturne_desktop.letta.client import (
    LettaAuthError,
    LettaClient,
    LettaError,
    LettaUnreachable,
    normalise_url,
    read_key_file,
)
from nocturne_desktop.letta.localserver import LETTA_VERSION, find_letta, letta_dir

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "letta-server"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("letta_server_under_test", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def fake_install(root: Path) -> None:
    bin_dir = root / "venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "letta"):
        (bin_dir / name).write_text("#!/bin/sh\n")
    (root / "ready.json").write_text(json.dumps({"letta": LETTA_VERSION, "install_seconds": 99.0}))


def test_the_install_is_found_only_when_complete_and_is_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(tmp_path / "cache"))
    script = load_script()
    assert Path(script.letta_dir()) == letta_dir()
    assert script.CONSTRAINTS.is_file() and "letta-client==" in script.CONSTRAINTS.read_text()
    assert script.main(["path"]) == 1 and "run `make letta`" in capsys.readouterr().err
    assert find_letta() is None
    root = letta_dir()
    (root / "venv" / "bin").mkdir(parents=True)  # a venv whose install never finished
    assert find_letta() is None and script.existing() is None
    fake_install(root)
    assert find_letta() == root / "venv" / "bin" / "letta"

    def no_pip(*_: object, **__: object) -> None:
        raise AssertionError("a complete install must be reused, not installed again")

    monkeypatch.setattr(script, "install", no_pip)
    assert script.main(["build"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert script.main(["path"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == LETTA_VERSION


def test_nothing_answering_is_unreachable_in_one_sentence() -> None:
    with LettaClient(dead_url(), timeout=2.0) as client:
        with pytest.raises(LettaUnreachable, match=r"cannot be reached .* nothing was lost"):
            client.blocks("agent-00000000-0000-4000-8000-000000000000")
        assert client.health() is False


def test_urls_and_key_files_are_checked_before_any_request(tmp_path: Path) -> None:
    assert normalise_url(" localhost:8283/v1/ ") == "http://localhost:8283"
    with pytest.raises(LettaError, match="http:// or https://"):
        normalise_url("ftp://host")
    with pytest.raises(LettaError, match="empty"):
        normalise_url("  ")
    key = tmp_path / "key"
    key.write_text("  s3cret-key \nsecond line\n")
    assert read_key_file(key) == "s3cret-key" and read_key_file(None) is None
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(LettaAuthError, match="is empty"):
        read_key_file(tmp_path / "empty")
    with pytest.raises(LettaAuthError) as err:
        read_key_file(tmp_path / "missing")
    assert "cannot read the Letta key file" in str(err.value)


def test_a_failed_link_into_a_new_folder_leaves_no_folder_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "new" / "memory"
    code = main(["letta", "link", "--url", dead_url(), "--agent",
                 "agent-00000000-0000-4000-8000-000000000000", "--data-dir", str(folder)])
    assert code == 1 and "cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    code = main(["letta", "status", "--data-dir", str(folder)])
    assert code == 1 and "there is no memory" in capsys.readouterr().err
