"""``nocturne verify`` against real models and real servers.

Three opponents: the built-in engine (llama-server + SmolLM2-135M-Instruct), a second model on
the same server (Gemma 3 270M *base*, which does not follow instructions: the proposer the
gates exist for), and a second server type (llama-cpp-python's ``llama_cpp.server`` with the
built-in GGUF, which refuses ``json_schema`` and takes the schema inside ``json_object``).
The built-in engine's run is ``nocturne verify --letta URL`` against the real Letta server
(``make letta``): the same loop and checks, with the live state in a Letta agent as well. The
two other opponents run verify's short script (``verify.SHORT``: every sentence of the
conversation in fewer turns, two Wake questions) with every check of the whole one.

Every *integrity* check the verifier makes must hold whatever the model says; this test also
re-checks the main ones itself from the database the verifier leaves behind, so a verifier that
forgot a check (or reported one it did not make) fails here too. Recall and the probe's answer
are *quality* figures of tiny models: recorded (junit property, and printed as one JSON line
per opponent, the rows of docs/benchmarks.md's cross-model honesty table), never asserted.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.checks.verify import FULL, SHORT, Check, Script, VerifyReport, run_verify
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.store import Store
from tests.opponents import reason_bucket

if TYPE_CHECKING:
    from nocturne_desktop.core.ports import ChatTuning
    from nocturne_desktop.llm.engine import LocalEngine
    from tests.lettaserver import LettaServer
    from tests.opponents import LlamaCppPythonServer

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


@pytest.mark.letta
def test_verify_against_the_real_engine_with_the_live_state_in_letta(
    real_engine: LocalEngine, letta_server: LettaServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], record_property: Callable[[str, Any], None],
) -> None:
    """The built-in engine's verify, run as ``nocturne verify --letta URL`` runs it: the whole
    loop with the live state in a new agent of the real Letta server. One run proves both what
    the other opponents' runs prove (every integrity check, re-checked here from the database)
    and the command line's Letta path (the agent holds the live state after the sleep and at
    the end, and the commits synced are reported)."""
    from nocturne_desktop.cli import main
    from nocturne_desktop.llm.client import capabilities_for, forget_capabilities, structured_mode

    base_url, data, as_json = real_engine.base_url, tmp_path / "verify", tmp_path / "report.json"
    forget_capabilities(base_url)  # probe this server afresh
    t0 = time.perf_counter()
    code = main(["verify", "--base-url", base_url, "--model", real_engine.model_name,
                 "--data-dir", str(data), "--json", str(as_json), "--letta", letta_server.url,
                 "--letta-api-key-file", str(letta_server.key_file)])
    seconds = time.perf_counter() - t0
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err
    assert re.search(r"\[OK\] the Letta agent holds the live state at the end: \d+ active facts", out)
    assert "live state in Letta agent agent-" in out
    assert re.search(r"letta: \d+ commits synced to agent agent-\S+, sync median [\d.]+ ms", out)

    (db,) = data.glob("verify-*.db")
    saved = json.loads(as_json.read_text(encoding="utf-8"))
    report = VerifyReport([Check(**c) for c in saved["checks"]], saved["figures"], saved["log"])
    check_verify("SmolLM2-135M-Instruct Q4_1 on llama-server, live state in Letta",
                 real_engine.model_name, report, db, structured_mode(capabilities_for(base_url)),
                 seconds, capsys, record_property,
                 required=(*REQUIRED, *(f"the Letta agent holds the live state {when}"
                                        for when in ("after the sleep", "at the end"))))


def test_verify_against_gemma_base_on_llama_server(
    gemma_engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None],
) -> None:
    """The proposer the gates exist for, on verify's short script: every sentence, trap and
    correction of the conversation in fewer turns (its encoder replies, run to their cap with
    repetitions at temperature 0, were half of its time), every integrity check of the whole
    script. Its free-text replies are cut at their first line (``GEMMA_TUNING``)."""
    from tests.opponents import GEMMA_TUNING

    verify_and_check("Gemma 3 270M base Q4_K_M on llama-server", gemma_engine.base_url,
                     gemma_engine.model_name, tmp_path, capsys, record_property,
                     tuning=GEMMA_TUNING, script=SHORT)


def test_verify_against_llama_cpp_python_server(
    llama_cpp_python_server: LlamaCppPythonServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], record_property: Callable[[str, Any], None],
) -> None:
    """The second server type: verify's short script (every sentence of the conversation in
    fewer turns, two Wake questions), with every integrity check of the whole one."""
    figures = verify_and_check("SmolLM2-135M-Instruct Q4_1 on llama-cpp-python's server",
                               llama_cpp_python_server.base_url,
                               llama_cpp_python_server.model_name, tmp_path, capsys,
                               record_property, script=SHORT)
    # the server refuses json_schema; the schema must still reach it, inside json_object
    assert figures["structured"] == "json_object_schema", figures


def verify_and_check(
    label: str, base_url: str, model_name: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], record_property: Callable[[str, Any], None],
    *, tuning: ChatTuning | None = None, script: Script = FULL,
) -> dict[str, Any]:
    from nocturne_desktop.llm.client import AUTO, OpenAIClient, forget_capabilities, structured_mode

    db = tmp_path / "verify.db"
    forget_capabilities(base_url)  # probe this server afresh
    client = OpenAIClient(base_url, model_name, tuning=AUTO if tuning is None else tuning)
    t0 = time.perf_counter()
    try:
        report = run_verify(client, db, say=lambda s: None, script=script)
        structured = structured_mode(client.capabilities())
    finally:
        client.close()
    seconds = time.perf_counter() - t0
    return check_verify(label, model_name, report, db, structured, seconds, capsys,
                        record_property)


def check_verify(
    label: str, model_name: str, report: VerifyReport, db: Path, structured: str | None,
    seconds: float, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None], *, required: tuple[str, ...] = REQUIRED,
) -> dict[str, Any]:
    """Assert the verifier's integrity verdicts and re-check the main ones from the database it
    left behind; record (and print) the run's row of the honesty table."""
    log = "\n".join(report.log)
    # the verifier's own integrity verdicts: all present, all ok
    names = [c.name for c in report.checks if c.kind == "integrity"]
    for name in required:
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
        # every fact the loop ever wrote (active or not) traces to the transcript, and there is
        # at least one: with a 135M model a sleep may legitimately leave none of them active
        trace = audit.traceability(store.all_facts(), [t.text for t in store.turns()])
        assert trace.traceable == trace.total > 0, trace.problems
        assert audit.traceability(store.active_facts(), [t.text for t in store.turns()]).problems == ()
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

        # what the models proposed and what the gates decided, by reason
        rows = store.mutations()
        proposals: dict[str, dict[str, Any]] = {}
        for r in rows:
            m = r.mutation
            if m.decided_by not in ("model", "encoder"):
                continue  # engine-enforced (policy) changes are not proposals
            entry = proposals.setdefault(m.pass_name, {"accepted": 0, "refused": Counter()})
            if m.accepted:
                entry["accepted"] += 1
            else:
                entry["refused"][reason_bucket(m.rejection_reason or "?")] += 1
        enforced = sum(1 for r in rows if r.mutation.enforced and r.mutation.accepted)

    integrity = [c for c in report.checks if c.kind == "integrity"]
    quiz = report.figures.get("quiz", {})
    probe = report.figures.get("probe") or {}
    figures: dict[str, Any] = {
        "opponent": label,
        "model": model_name,
        "structured": structured,
        "seconds": round(seconds, 1),
        "integrity": f"{sum(c.ok for c in integrity)}/{len(integrity)}",
        "integrity_checks": [c.name for c in integrity],
        "proposals": {k: {"accepted": v["accepted"], "refused": dict(v["refused"])}
                      for k, v in proposals.items()},
        "enforced": enforced,
        "facts_written": trace.total,
        "active_facts": len(active),
        "forgotten": len(forgotten),
        "recall": f"{quiz.get('correct')}/{quiz.get('asked')}",
        "probe": ({"passed": probe.get("passed"), "said_absent": probe.get("said_absent"),
                   "leaked": probe.get("leaked"), "absent_from_store":
                   probe.get("absent_from_store")} if probe else None),
        "quality": {c.name: c.ok for c in report.checks if c.kind == "quality"},
    }
    summary = (f"verify on {label}: {seconds:.0f}s; structured output {structured}; "
               f"{checked} accepted mutations re-audited clean; {trace.total} facts written, "
               f"{len(active)} active, all traceable; {len(forgotten)} forgotten; "
               f"recall {figures['recall']}; "
               f"probe passed={probe.get('passed')} saidAbsent={probe.get('said_absent')} "
               f"leaked={probe.get('leaked')}")
    record_property("verify_seconds", round(seconds, 1))
    record_property("recall", quiz.get("recall"))
    record_property("verify_summary", summary)
    record_property("honesty_row", json.dumps(figures))
    with capsys.disabled():
        print("\n" + summary + "\nhonesty-row " + json.dumps(figures))
    return figures


GRAMMAR_CHECK = """
import json, sys
from llama_cpp.llama_grammar import LlamaGrammar
failed = []
for name, schema in json.load(sys.stdin).items():
    try:
        LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(json.dumps(failed))
"""


def test_llama_cpp_python_compiles_every_contract_into_a_grammar() -> None:
    """llama-cpp-python falls back to *any* JSON, silently, when a schema inside json_object
    does not convert to a grammar; every contract Nocturne sends must convert."""
    import subprocess

    from nocturne_desktop.core.chat.encoder import encoder_contract
    from nocturne_desktop.core.checks.quiz import QuizQuestion
    from nocturne_desktop.core.sleep.passes import PASS_SPECS
    from nocturne_desktop.llm.schema import strict_schema
    from tests import opponents

    python = opponents.pyserver_python()
    if python is None:
        opponents.missing("llama-cpp-python's server", opponents.BUILD_EXTRAS)
    assert python is not None
    schemas = {"encoder": strict_schema(encoder_contract(5)),
               "quiz": strict_schema(QuizQuestion),
               **{name: strict_schema(spec.contract(5)) for name, spec in PASS_SPECS.items()}}
    proc = subprocess.run([str(python), "-c", GRAMMAR_CHECK], input=json.dumps(schemas),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
