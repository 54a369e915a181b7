"""``nocturne verify`` with a scripted model that falls into every trap (no real engine).

The model proposes, for every encoder request, the three trap facts (every word traceable, the
meaning inverted) beside their faithful forms. Whatever it proposes, what is stored must say
what the transcript says: the new integrity check holds, and no trap fact is in memory.
"""

from __future__ import annotations

from pathlib import Path

from nocturne_desktop.core.checks.verify import FAITHFUL, TRAPS, run_verify
from tests.core.fakemodel import FakeCall, FakeModel

_PROPOSALS = [t for t, _ in TRAPS] + list(FAITHFUL) + ["Hello", "My week"]
_turns = [0]


def _responder(call: FakeCall) -> object:
    if call.kind != "structured":
        return "Noted."
    if "memory facts" in call.system:
        # one user turn per request: at most five facts fit the contract; rotate through all
        _turns[0] += 1
        start = (_turns[0] * 5) % len(_PROPOSALS)
        picked = (_PROPOSALS * 2)[start:start + 5]
        return {"facts": [{"text": t, "category": "context"} for t in picked]}
    if "quiz question" in call.system:
        return {"question": "What do you remember about the user?"}
    return {}


def test_verify_keeps_every_trap_out_of_memory(tmp_path: Path) -> None:
    _turns[0] = 0
    model = FakeModel(responder=_responder)
    report = run_verify(model, tmp_path / "verify.db", say=lambda _line: None)
    checks = {c.name: c for c in report.checks}
    assert checks["no meaning flip survives"].ok, checks["no meaning flip survives"].detail
    assert report.integrity_ok, [c for c in report.checks if not c.ok and c.kind == "integrity"]
    rejections = report.figures["seed"]["rejections"]
    assert any(r.startswith("polarity guard") for r in rejections)
    assert any(r.startswith("number guard") for r in rejections)
    assert any(r.startswith("role guard") for r in rejections)
    assert any(r.startswith("statement guard") for r in rejections)
