"""``nocturne verify`` against the real local engine (llama-server + SmolLM2-135M-Instruct).

Every *integrity* check the verifier makes must hold whatever the model says; this test also
re-checks the main ones itself from the database the verifier leaves behind, so a verifier that
forgot a check (or reported one it did not make) fails here too. Recall and the probe's answer
are *quality* figures of a 135M model: recorded (junit property, and printed), never asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nocturne_desktop.core import audit
from nocturne_desktop.core import textmath as tm
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.verify import run_verify

if TYPE_CHECKING:
    from nocturne_desktop.llm.engine import LocalEngine

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]

REQUIRED = (
    "dry run writes nothing",
    "policy changes the outcome",
    "re-audit of every accepted mutation",
    "every active fact traceable to the transcript",
    "no meaning flip survives",
    "no accepted correction left both facts active",
    "every superseded fact has one active successor chain",
    "model-free gate cases",
    "database integrity",
)


def test_verify_against_the_real_engine(
    real_engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None],
) -> None:
    from nocturne_desktop.llm.client import OpenAIClient

    db = tmp_path / "verify.db"
    client = OpenAIClient(real_engine.base_url, real_engine.model_name)
    t0 = time.perf_counter()
    try:
        report = run_verify(client, db, say=lambda s: None)
    finally:
        client.close()
    seconds = time.perf_counter() - t0
    log = "\n".join(report.log)

    # the verifier's own integrity verdicts: all present, all ok
    names = [c.name for c in report.checks if c.kind == "integrity"]
    for name in REQUIRED:
        assert name in names, f"verify did not run the check {name!r}\n{log}"
    failed = [f"{c.name}: {c.detail}" for c in report.checks if c.kind == "integrity" and not c.ok]
    assert not failed, "integrity checks failed:\n" + "\n".join(failed) + "\n\n" + log
    assert report.integrity_ok

    # the same properties, re-checked here from the database verify leaves behind
    with Store(db) as store:
        assert store.integrity_check() == "ok"
        sleeps = store.sleeps()
        assert [s.status for s in sleeps] == ["done"], (sleeps, log)  # dry runs leave no record
        checked, problems = audit.reaudit(store, sleeps[0].id)
        assert problems == [], problems
        trace = audit.traceability(store.active_facts(), [t.text for t in store.turns()])
        assert trace.traceable == trace.total > 0, trace.problems
        active = store.active_facts()
        forgotten = [r.mutation.item_id for r in store.mutations(sleep_id=sleeps[0].id,
                                                                 accepted=True)
                     if r.mutation.kind == "forget"]
        for item_id in forgotten:
            fact = store.get(item_id)
            assert fact is not None and not fact.active, f"{item_id} was forgotten yet is active"
            assert all(f.id != item_id for f in active)
        if forgotten:  # what the probe reports is about a fact that really was forgotten
            probe = report.figures.get("probe")
            assert probe is not None, f"{len(forgotten)} forgotten but no probe ran\n{log}"
            assert probe["fact_id"] in forgotten or probe["source"] != "forget pass"
            assert probe["absent_from_store"] == all(
                tm.similarity(probe["text"], f.text) < 0.9 for f in active)

    quiz = report.figures.get("quiz", {})
    probe = report.figures.get("probe") or {}
    summary = (f"verify on {real_engine.model_name}: {seconds:.0f}s; {checked} accepted mutations "
               f"re-audited clean; {trace.total} active facts, all traceable; "
               f"{len(forgotten)} forgotten; recall {quiz.get('correct')}/{quiz.get('asked')}; "
               f"probe passed={probe.get('passed')} saidAbsent={probe.get('said_absent')} "
               f"leaked={probe.get('leaked')}")
    record_property("verify_seconds", round(seconds, 1))
    record_property("recall", quiz.get("recall"))
    record_property("verify_summary", summary)
    with capsys.disabled():
        print("\n" + summary)
