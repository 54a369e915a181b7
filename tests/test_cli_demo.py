"""``nocturne --demo <command>``: a headless command works on the demo memory the window opens
(``demo`` inside the data folder), or says why not; it never works silently on the person's own
memory (before, ``nocturne --demo export F`` exported the person's memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nocturne_desktop import demo
from nocturne_desktop.cli import main
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


def own_memory(folder: Path) -> None:
    with Store(folder / "nocturne.db") as s:
        s.append("human", FactDraft("The user keeps bees.", "identity", None))


def test_export_with_demo_exports_the_demo_memory(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    own_memory(tmp_path)
    demo.open_demo_store(demo.default_demo_dir(tmp_path))
    out = tmp_path / "demo.json"
    assert main(["--demo", "--data-dir", str(tmp_path), "export", str(out)]) == 0
    doc = out.read_text()
    with Store(demo.default_demo_dir(tmp_path) / "nocturne.db") as s:
        demo_texts = [f.text for f in s.active_facts()]
    assert all(json.dumps(t)[1:-1] in doc for t in demo_texts[:5])
    assert "keeps bees" not in doc
    assert "exported" in capsys.readouterr().out


def test_lineage_with_demo_reads_the_demo_memory(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    own_memory(tmp_path)
    db = demo.open_demo_store(demo.default_demo_dir(tmp_path))
    with Store(db) as s:
        first = s.active_facts()[0]
    assert main(["--demo", "--data-dir", str(tmp_path), "lineage", first.id]) == 0
    assert first.text in capsys.readouterr().out


def test_a_demo_not_made_yet_is_said_and_nothing_is_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own_memory(tmp_path)
    assert main(["--demo", "--data-dir", str(tmp_path), "sleep", "--rules-only"]) == 1
    err = capsys.readouterr().err
    assert "the demo memory has not been made yet" in err and "nocturne --demo" in err
    assert not (tmp_path / "demo").exists()
    with Store(tmp_path / "nocturne.db") as s:  # the person's own memory was not slept
        assert [f.text for f in s.active_facts()] == ["The user keeps bees."]
        assert not s.versions()


@pytest.mark.parametrize(("argv", "said"), [
    (["verify", "--base-url", "http://127.0.0.1:9/v1"], "verify writes a memory of its own"),
    (["import", "x.json", "--data-dir", "elsewhere"], "import reads into a new folder"),
    (["export", "--data-dir", "mine", "x.json"], "--demo and --data-dir name two memories"),
])
def test_demo_where_it_does_not_apply_is_refused(argv: list[str], said: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--demo", "--data-dir", str(tmp_path), *argv]) == 2
    assert said in capsys.readouterr().err
