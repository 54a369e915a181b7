"""The statement guard, the category rule and the question gate on the built-in engine's real
replies (S-WORDS-2), recorded as fixtures (``tests/data/engine_replies.json``) and replayed
through the real encoder and Wake's question step with the real client's reading of each raw
reply."""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop.core.checks.quiz import check_question
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.judges.categories import category_rule
from tests.core import engine_replies as er

DATA = er.load()


def _cases() -> list[tuple[int, dict[str, object]]]:
    return list(enumerate(DATA["encoder"]))


def test_the_fixtures_are_the_engines_own_replies() -> None:
    assert DATA["model"] and DATA["recorded"]
    assert len(DATA["encoder"]) >= 20 and len(DATA["questions"]) >= 10
    for case in DATA["encoder"]:
        assert case["replies"] and all(isinstance(r["raw"], str) for r in case["replies"])


@pytest.mark.parametrize(("k", "case"), _cases())
def test_no_fragment_is_stored_and_categories_are_checked(
        k: int, case: dict[str, object], tmp_path: Path) -> None:
    got = er.replay_encoder(case, tmp_path / f"{k}.db")  # type: ignore[arg-type]
    for fact in got.accepted:
        assert meaning.statement_problem(fact.text) is None, fact.text
        # the rule has nothing left to correct in what was stored
        assert category_rule(fact.text, fact.category)[1] is None, (fact.text, fact.category)
    for raw, why in got.refused:
        text = str(raw.get("text", ""))
        if text and meaning.statement_problem(text) is not None:
            assert why.startswith("statement guard"), (text, why)
    for fix in got.corrected:
        assert all(v.startswith(("category rule:", "statement rule:")) for v in fix.values())


def test_the_issues_fragment_is_refused_and_its_category_never_commitments(tmp_path: Path) -> None:
    (case,) = [c for c in DATA["encoder"] if c["turns"][0][1].startswith("I work as a nurse")]
    # the engine's own reply proposes the bare place as a commitment
    assert '"Santa Maria hospital"' in case["replies"][0]["raw"]
    got = er.replay_encoder(case, tmp_path / "n.db")
    assert any(why.startswith("statement guard") for _, why in got.refused)
    assert all(f.text.strip(" .") != "Santa Maria hospital" for f in got.accepted)
    assert not [f for f in got.accepted if f.category == "commitments"]


def test_a_preference_is_filed_as_a_preference(tmp_path: Path) -> None:
    (case,) = [c for c in DATA["encoder"] if c["turns"][0][1] == "My favourite colour is blue."]
    got = er.replay_encoder(case, tmp_path / "n.db")
    assert got.accepted, got.refused
    assert {f.category for f in got.accepted} == {"preferences"}


@pytest.mark.parametrize("case", DATA["questions"], ids=lambda c: str(c["fact"])[:30])
def test_every_question_asked_passes_the_gate(case: dict[str, object]) -> None:
    asked, refused, template = er.replay_question(case)
    assert check_question(asked, str(case["fact"])) is None, asked
    assert asked.endswith("?")
    for question, why in refused:
        assert why, question
    if template:
        assert refused  # a template is asked only after the model's question was refused


def test_the_recorded_figures() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        fig = er.figures(Path(d))
    c = fig["counts"]
    assert c["fragments accepted"] == 0
    assert c["proposals"] >= len(DATA["encoder"])
    assert c["questions"] == len(DATA["questions"])
