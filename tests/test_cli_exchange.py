"""``nocturne export`` and ``nocturne import``: a backup a person can script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop.cli import main
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

ROOT = Path(__file__).resolve().parent.parent


def seed(folder: Path) -> None:
    with Store(folder / "nocturne.db") as s:
        s.add_turn("user", "I live in Lisbon.")
        s.append("human", FactDraft("The user lives in Lisbon.", "identity", 1))
        f, _ = s.add_fact("human", "The user's sister is Ana.", "identity")
        s.pin(f.id)
        s.new_conversation()
        s.add_turn("user", "Hello again.")


def without_clock(doc: str) -> dict[str, object]:
    d: dict[str, object] = json.loads(doc)
    d.pop("exportedAt")
    return d


def test_export_then_import_into_a_new_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(tmp_path / "a")
    out = tmp_path / "backup.json"
    assert main(["export", "--data-dir", str(tmp_path / "a"), str(out)]) == 0
    assert "exported 2 facts" in capsys.readouterr().out
    assert main(["import", str(out), "--data-dir", str(tmp_path / "b")]) == 0
    assert "imported 2 facts" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert main(["--data-dir", str(tmp_path / "b"), "export", str(again)]) == 0
    assert without_clock(again.read_text()) == without_clock(out.read_text())
    with Store(tmp_path / "b" / "nocturne.db") as s:
        assert [c.title for c in s.conversations()] == ["Hello again.", "I live in Lisbon."]
        assert any(f.pinned for f in s.active_facts())


def test_markdown_export(tmp_path: Path) -> None:
    seed(tmp_path / "a")
    out = tmp_path / "memory.md"
    assert main(["export", "--data-dir", str(tmp_path / "a"), str(out), "--markdown"]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Nocturne memory") and "## Human" in text and "pinned" in text


def test_import_into_a_folder_with_memory_is_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    seed(tmp_path / "a")
    seed(tmp_path / "b")
    out = tmp_path / "backup.json"
    assert main(["export", "--data-dir", str(tmp_path / "a"), str(out)]) == 0
    before = (tmp_path / "b" / "nocturne.db").stat().st_size
    assert main(["import", str(out), "--data-dir", str(tmp_path / "b")]) == 1
    assert "already holds a memory" in capsys.readouterr().err
    assert (tmp_path / "b" / "nocturne.db").stat().st_size == before


def test_export_of_a_folder_without_memory_says_so(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--data-dir", str(tmp_path / "none"), str(tmp_path / "x.json")]) == 1
    assert "there is no memory" in capsys.readouterr().err
    assert not (tmp_path / "none").exists() and not (tmp_path / "x.json").exists()


def test_import_of_a_foreign_file_is_one_sentence_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"memories": ["a", "b"]}')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "nocturne_desktop", "import", str(bad),
                          "--data-dir", str(tmp_path / "new")], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert run.returncode == 1
    assert run.stderr.strip().endswith('not a Nocturne memory export (no "format": "nocturne-memory")')
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert not (tmp_path / "new").exists()


def test_import_into_scratch_of_a_folder_with_memory(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    seed(tmp_path / "a")
    with Store(tmp_path / "a" / "nocturne.db") as s:
        s.append("scratch", FactDraft("The user plays the cello on Thursdays."))
    with Store(tmp_path / "b" / "nocturne.db") as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        s.snapshot("encoded")
    out = tmp_path / "backup.json"
    assert main(["export", "--data-dir", str(tmp_path / "a"), str(out)]) == 0
    capsys.readouterr()
    assert main(["import", str(out), "--data-dir", str(tmp_path / "b"), "--into-scratch"]) == 0
    said = capsys.readouterr().out
    assert "Imported 2 of the 3 active facts of backup.json into scratch" in said
    assert "skipped 1 duplicate of facts already in memory" in said
    assert "already in memory: The user lives in Lisbon. (m_1)" in said
    with Store(tmp_path / "b" / "nocturne.db") as s:
        scratch = [f.text for f in s.get_block("scratch")]
        assert scratch == ["The user's sister is Ana.", "The user plays the cello on Thursdays."]
        assert s.versions()[-1].label == "import:2 facts from backup.json"
        assert not any(f.pinned for f in s.active_facts())  # a pin is not imported
    # a second run adds nothing
    assert main(["import", str(out), "--data-dir", str(tmp_path / "b"), "--into-scratch"]) == 0
    assert "Imported 0 of the 3" in capsys.readouterr().out


def test_import_into_scratch_refuses_a_hostile_file_or_a_missing_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(tmp_path / "b" / "nocturne.db") as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        before = s.dump()
    bad = tmp_path / "notes.json"
    bad.write_text('{"memories": ["a", "b"]}')
    assert main(["import", str(bad), "--data-dir", str(tmp_path / "b"), "--into-scratch"]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith('not a Nocturne memory export (no "format": "nocturne-memory")')
    with Store(tmp_path / "b" / "nocturne.db") as s:
        assert s.dump() == before
    assert main(["import", str(bad), "--data-dir", str(tmp_path / "none"), "--into-scratch"]) == 1
    assert "there is no memory" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_the_demo_memory_travels_with_the_demos_policy_through_markdown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its window runs under the demo's policy (a cap of 10), so its export says that one."""
    from nocturne_desktop import demo
    from nocturne_desktop.core.store.memorypolicy import memory_policy

    demo.open_demo_store(tmp_path / "demo")
    out = tmp_path / "demo.md"
    assert main(["export", "--data-dir", str(tmp_path / "demo"), str(out), "--markdown"]) == 0
    assert "the demo's" in capsys.readouterr().out and "- at most 10 active facts" in out.read_text()
    assert main(["import", str(out), "--data-dir", str(tmp_path / "b")]) == 0
    assert "its retention policy came with it" in capsys.readouterr().out
    with Store(tmp_path / "b" / "nocturne.db") as b:
        assert memory_policy(b) == demo.demo_policy() and b.active_count() == 16
