"""``verify`` with a scripted model (no engine): the correction in its conversation is
superseded and both correction integrity checks hold."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nocturne_desktop.core.checks.verify import CONVERSATION, CORRECTIONS, run_verify
from tests.core.fakemodel import FakeCall, FakeModel

FACTS = {
    "I live in Lisbon": ("The user lives in Lisbon.", "identity"),
    "I work best in the morning": ("The user works best in the morning.", "preferences"),
    "bearded dragon called Saffron": ("The user keeps a bearded dragon called Saffron.",
                                      "preferences"),
    "my stack is Airflow and Postgres": ("The user's stack is Airflow and Postgres.", "context"),
    "review the Airflow migration": ("The user promised to review the Airflow migration on "
                                     "Friday.", "commitments"),
    "I had toast": ("The user had toast for breakfast.", "context"),
    "I live in Porto now": ("The user lives in Porto now.", "identity"),
}
TURN = re.compile(r"\[turn (\d+)\] user: (.*)")


def script(call: FakeCall) -> object:
    if call.kind != "structured":
        return "Noted."
    if "into memory facts" in call.system:
        facts = []
        for n, text in TURN.findall(call.last_user):
            for key, (fact, cat) in FACTS.items():
                if key in text:
                    facts.append({"text": fact, "category": cat, "turn": int(n)})
        return {"facts": facts}
    if "quiz question" in call.system:
        return {"question": "What do you remember?"}
    payload = json.loads(call.last_user)
    if payload.get("task") == "reconcile":
        return {"supersede": [{"oldId": p["oldId"], "newId": p["newId"], "reason": "moved"}
                              for p in payload["candidatePairs"]]}
    return {}


def test_verify_supersedes_the_correction_and_checks_it(tmp_path: Path) -> None:
    assert CORRECTIONS and "Porto now" in CORRECTIONS[0]
    report = run_verify(FakeModel(responder=script), tmp_path / "v.db", say=lambda _: None)
    checks = {c.name: c for c in report.checks}
    assert checks["no accepted correction left both facts active"].ok
    assert checks["every superseded fact has one active successor chain"].ok
    assert "1 superseded fact" in checks["every superseded fact has one active successor chain"].detail
    rec = report.figures["reconcile"]
    assert rec["superseded"] == 1 and 0 < rec["promptTokens"] < rec["wholeStoreTokens"]
    assert report.figures["seed"]["turns"] == len(CONVERSATION) + 1
    assert "correction probe answered with the current value" in checks
    assert report.integrity_ok, [c for c in report.checks if not c.ok]
