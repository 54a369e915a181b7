"""``verify``'s short script (no engine): every sentence of the whole script in fewer turns,
the same checks, all holding, with fewer model calls (the second server type's test runs it)."""

from __future__ import annotations

from pathlib import Path

from nocturne_desktop.core.checks.verify import FULL, SHORT, VerifyReport, run_verify
from tests.core import test_verify_meaning
from tests.core.fakemodel import FakeModel
from tests.core.test_verify_correction import script


def integrity(report: VerifyReport) -> dict[str, bool]:
    return {c.name: c.ok for c in report.checks if c.kind == "integrity"}


def test_the_short_script_says_every_sentence_of_the_whole_one_in_fewer_turns() -> None:
    assert " ".join(SHORT.conversation) == " ".join(FULL.conversation)
    assert len(SHORT.conversation) < len(FULL.conversation)
    assert SHORT.corrections == FULL.corrections
    assert {s for _, s in SHORT.backdated} == {s for _, s in FULL.backdated}
    for turn, sentence in SHORT.backdated:
        assert sentence in SHORT.conversation[turn - 1]
    assert SHORT.questions < FULL.questions


def test_a_short_verify_makes_every_check_of_the_whole_one_and_each_holds(tmp_path: Path) -> None:
    whole, short = FakeModel(responder=script), FakeModel(responder=script)
    full_report = run_verify(whole, tmp_path / "full.db", say=lambda _: None)
    report = run_verify(short, tmp_path / "short.db", say=lambda _: None, script=SHORT)
    assert integrity(report) == integrity(full_report)
    assert all(integrity(report).values()), [c for c in report.checks if not c.ok]
    assert report.figures["seed"]["turns"] == len(SHORT.conversation) + 1
    # the correction is said and superseded, the episodes are backdated, as in the whole run
    checks = {c.name: c for c in report.checks}
    assert "1 superseded fact" in checks["every superseded fact has one active successor chain"].detail
    assert len(report.figures["seed"]["backdated"]) == len(SHORT.backdated)
    assert report.figures["quiz"]["asked"] <= SHORT.questions
    assert len(short.calls) < len(whole.calls) * 2 / 3


def test_a_short_verify_keeps_every_trap_out_of_memory(tmp_path: Path) -> None:
    test_verify_meaning._turns[0] = 0
    report = run_verify(FakeModel(responder=test_verify_meaning._responder), tmp_path / "v.db",
                        say=lambda _: None, script=SHORT)
    checks = {c.name: c for c in report.checks}
    assert checks["no meaning flip survives"].ok, checks["no meaning flip survives"].detail
    assert report.integrity_ok, [c for c in report.checks if not c.ok and c.kind == "integrity"]
    rejections = report.figures["seed"]["rejections"]
    for guard in ("polarity guard", "number guard", "role guard"):
        assert any(r.startswith(guard) for r in rejections), guard
