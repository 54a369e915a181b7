"""``verify`` caps the replies of its scripted conversation (a base model that never ends a
turn would run each one to the agent's 512-token cap), and still runs every integrity check."""

from __future__ import annotations

from pathlib import Path

from nocturne_desktop.core.chat.agent import DEFAULT_REPLY_TOKENS
from nocturne_desktop.core.checks.verify import CONVERSATION, CORRECTIONS, REPLY_TOKENS, run_verify
from tests.core.fakemodel import FakeModel
from tests.core.test_verify_correction import script
from tests.core.test_verify_real import REQUIRED


def test_verify_caps_every_chat_reply_and_keeps_every_integrity_check(tmp_path: Path) -> None:
    model = FakeModel(responder=script)
    report = run_verify(model, tmp_path / "v.db", say=lambda _: None)
    conversation = set(CONVERSATION + CORRECTIONS)
    replies = [c for c in model.calls if c.kind != "structured" and c.last_user in conversation]
    assert len(replies) == len(conversation)
    assert REPLY_TOKENS < DEFAULT_REPLY_TOKENS
    assert [c.max_tokens for c in replies] == [REPLY_TOKENS] * len(replies)
    names = [c.name for c in report.checks if c.kind == "integrity"]
    assert set(REQUIRED) <= set(names)
    assert report.integrity_ok, [c for c in report.checks if not c.ok]
