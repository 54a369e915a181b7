"""The soak script keeps working: one minute of scripted chat through the real window.

It runs as its own process (a crash of the interpreter, the failure the soak exists to catch,
is then an exit status, not a dead test run), and must end with status 0: every turn sent in
the store, every sleep re-audited clean, integrity ok, no exception, no refcount drift.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import soak_chat

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_one_minute_soak_in_the_window_ends_clean(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.soak_chat", "--minutes", "1", "--json", str(out),
         "--keep", str(tmp_path / "folder")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, (
        f"soak failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    summary = json.loads(out.read_text(encoding="utf-8"))["summary"]
    assert summary["failures"] == []
    assert summary["turns_sent"] >= 5
    assert summary["turns_sent"] == summary["user_turns_stored"] == summary["accepted"]
    assert summary["sleeps"] >= 1 and summary["reaudit_findings"] == []
    assert summary["integrity_check"] == "ok"
    assert summary["facts_remembered"] > 0 and summary["facts_refused"] > 0
    assert summary["stops"] >= 1
    assert "| minute | turns |" in proc.stdout


def test_the_encoder_script_reads_turn_numbers_as_a_model_would() -> None:
    script = soak_chat.Script()
    plan = soak_chat.Plan("On weekends I do chess.\nUsually on Saturday mornings.",
                          [{"text": "The user does chess on weekends.", "category": "preferences"}])
    script.register(plan)
    script.register(soak_chat.Plan("Hi again!"))
    new = ("\n[turn 7] user: Hi again!\n[turn 8] assistant (asked): Anything else?\n"
           "[turn 9] user: On weekends I do chess.\nUsually on Saturday mornings.")
    assert script.proposals(new) == [{"text": "The user does chess on weekends.",
                                      "category": "preferences", "turn": 9}]


def test_the_conversation_is_varied_and_seeded() -> None:
    import random

    a = soak_chat.Conversation(random.Random(1))
    b = soak_chat.Conversation(random.Random(1))
    plans = [a.next() for _ in range(60)]
    assert [p.text for p in plans] == [b.next().text for _ in range(60)]
    kinds = {p.kind for p in plans}
    assert {"short", "medium", "slow", "over-cap"} <= kinds
    assert any(p.stop for p in plans) and any("\n" in p.text for p in plans)
    assert any("password" in p.text for p in plans)
    assert any(not p.text.isascii() for p in plans) or any(
        not f["text"].isascii() for p in plans for f in p.facts)
