"""``nocturne --self-test`` from source (the frozen binary runs the same code: ``make smoke``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop.boot import selftest

ROOT = Path(__file__).resolve().parents[1]


def test_self_test_passes_from_source_in_a_fresh_process(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    # the self-test must not write into these, whatever they are
    for name in ("DATA", "CONFIG", "CACHE"):
        env[f"NOCTURNE_{name}_DIR"] = str(tmp_path / f"user-{name.lower()}")
    proc = subprocess.run([sys.executable, "-m", "nocturne_desktop", "--self-test",
                           "--self-test-report", str(report_path)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Nocturne self-test: OK"), proc.stdout
    report = json.loads(report_path.read_text())
    assert report["ok"] is True and report["frozen"] is False
    assert [s["name"] for s in report["steps"]] == [
        "qt", "package data", "demo memory", "meaning model", "window", "first-run dialog",
        "rules-only sleep", "undo", "close"]
    assert all(s["ok"] for s in report["steps"])
    sleep = next(s for s in report["steps"] if s["name"] == "rules-only sleep")
    assert sleep["detail"].startswith("in a worker process (pid ")
    assert report["seconds"] < selftest.TIME_LIMIT_S
    assert not any((tmp_path / f"user-{n}").exists() for n in ("data", "config", "cache"))


def test_a_failing_step_gives_a_nonzero_exit_and_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], qapp: object,
) -> None:
    def broken(self: selftest._Run) -> str:
        raise selftest.StepFailed("3 facts, 2/3 traceable")

    monkeypatch.setattr(selftest._Run, "demo_store", broken)
    kept = tmp_path / "kept"
    monkeypatch.setattr(selftest.tempfile, "mkdtemp", lambda prefix="": str(kept.mkdir() or kept))
    report_path = tmp_path / "r.json"
    assert selftest.run_self_test(report_path) == 1
    report = json.loads(report_path.read_text())
    assert report["ok"] is False
    assert [(s["name"], s["ok"]) for s in report["steps"]] == [
        ("qt", True), ("package data", True), ("demo memory", False)]
    out = capsys.readouterr().out
    assert "FAIL at 'demo memory': 3 facts, 2/3 traceable" in out
    assert f"data kept in {kept}" in out and kept.is_dir()  # kept for a look after a failure
