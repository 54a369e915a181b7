""""How much would I still know?": a benchmark's questions put to the open memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import bench_memory as bm
from nocturne_desktop import cli
from nocturne_desktop.core.checks.recall import load_questions, still_know
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


def one_person(tmp_path: Path) -> Path:
    raw = json.loads(bm.DATA.read_text(encoding="utf-8"))
    raw["conversations"] = raw["conversations"][:1]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def test_the_open_memory_knows_what_it_holds_and_not_what_it_forgot(tmp_path: Path) -> None:
    path = one_person(tmp_path)
    questions = load_questions(path)
    assert len(questions) == 52 and all(q.answer for q in questions)
    (conv,) = bm.load_bench(path)
    with Store(tmp_path / "memory.db") as store:
        assert still_know(store, questions).known == 0  # empty memory
        ids = []
        for s in conv.sessions:
            for t in s.turns:
                for text, cat in t.facts:
                    ids.append((store.append("scratch", FactDraft(text, cat)).id, t.noise))
        report = still_know(store, questions)
        assert report.asked == 52 and report.share >= 0.85, report.summary()
        for i, noise in ids:
            if not noise:
                store.forget(i)
        after = still_know(store, questions)
        assert after.share <= 0.1, after.summary()
        assert "of 52 questions" in after.summary()
        missed = next(i for i in after.items if not i.known)
        assert missed.missing and missed.shown > 0


def test_a_file_that_is_not_a_benchmark_is_refused_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(InvalidInput, match="neither a nocturne-memory-bench/1 file nor a LoCoMo"):
        load_questions(bad)
    bad.write_text("not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a JSON file"):
        load_questions(bad)
    bad.write_text('[{"qa": [{"question": "Who?"}]}]', encoding="utf-8")
    with pytest.raises(InvalidInput, match="no question with an answer"):
        load_questions(bad)
    with pytest.raises(InvalidInput, match="cannot read"):
        load_questions(tmp_path / "missing.json")
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"qa": [{"question": "Where did Caroline go?",
                                           "answer": "a support group", "evidence": ["D1:1"]}]}]),
                      encoding="utf-8")
    assert [q.answer for q in load_questions(locomo)] == ["a support group"]


def test_the_cli_reports_the_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = one_person(tmp_path)
    assert cli.main(["--data-dir", str(tmp_path / "none"), "still-know", str(path)]) == 1
    assert "there is no memory" in capsys.readouterr().err
    from nocturne_desktop import paths

    with Store(paths.db_path(str(tmp_path))) as store:
        store.append("human", FactDraft("Maya has an allergy to penicillin.", "identity"))
    assert cli.main(["--data-dir", str(tmp_path), "still-know", str(path), "--missed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 of 52 questions (2 %) have their answer in the memory")
    assert "- What allergies does Maya have?" not in out


def test_each_question_knows_its_conversation(tmp_path: Path) -> None:
    raw = json.loads(bm.DATA.read_text(encoding="utf-8"))
    ids = [str(c["id"]) for c in raw["conversations"][:2]]
    raw["conversations"] = raw["conversations"][:2]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    questions = load_questions(path)
    assert [q.conversation for q in questions] == sorted(
        (q.conversation for q in questions), key=ids.index)
    with Store(tmp_path / "memory.db") as store:
        report = still_know(store, questions)
    assert [c for c, _, _ in report.by_conversation()] == ids
    assert sum(n for _, _, n in report.by_conversation()) == report.asked
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([
        {"sample_id": "conv-26", "qa": [{"question": "Who?", "answer": "Caroline"}]},
        {"qa": [{"question": "Where?", "answer": "Lisbon"}]}]), encoding="utf-8")
    assert [q.conversation for q in load_questions(locomo)] == ["conv-26", "#2"]
