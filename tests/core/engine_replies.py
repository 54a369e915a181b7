"""The built-in engine's recorded replies (``tests/data/engine_replies.json``, recorded through
the real client by ``scripts/record_engine_replies.py``) replayed through the real encoder and
Wake's question step, with the real client's own reading of each raw reply."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nocturne_desktop.core.chat.encoder import Encoder
from nocturne_desktop.core.checks import quiz
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.mutations import Kind
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact
from tests.core.fakemodel import FakeModel, Truncated

DATA = Path(__file__).resolve().parent.parent / "data" / "engine_replies.json"


def load() -> dict[str, Any]:
    return dict(json.loads(DATA.read_text(encoding="utf-8")))


def _model(replies: list[dict[str, Any]]) -> FakeModel:
    queued: list[Any] = [Truncated(r["raw"]) if r.get("truncated") else r["raw"] for r in replies]
    return FakeModel(replies=queued, client_parsing=True)


@dataclass
class EncodedCase:
    turns: list[tuple[str, str]]
    accepted: list[Fact] = field(default_factory=list)
    refused: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    corrected: list[dict[str, str]] = field(default_factory=list)
    """The ``corrected`` refs of each accepted fact's audit row (category rule, completion)."""
    proposals: list[dict[str, Any]] = field(default_factory=list)


def replay_encoder(case: dict[str, Any], db: Path) -> EncodedCase:
    turns = [(str(r), str(t)) for r, t in case["turns"]]
    out = EncodedCase(turns)
    with Store(db) as store:
        for role, text in turns:
            store.add_turn(role, text)
        result = Encoder(store, _model(case["replies"])).encode_new_turns()
        out.accepted, out.refused = result.accepted, result.rejected
        for row in store.mutations(pass_name="encoder"):
            m = row.mutation
            proposal = m.refs.get("proposal")
            if isinstance(proposal, dict):
                out.proposals.append(proposal)
            if m.accepted and m.kind == Kind.APPEND and isinstance(m.refs.get("corrected"), dict):
                out.corrected.append(dict(m.refs["corrected"]))
    return out


def replay_question(case: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bool]:
    """(the question asked, the refused (question, reason) pairs, whether it is a template)."""
    fact = Fact("m_1", "human", case["fact"], "context", None, 0.0, 0.0)
    replies = list(case["replies"])
    # a second try is only asked for after a refusal: replay as many replies as were recorded
    q = quiz.make_question(_model(replies), fact, None, tries=max(1, len(replies)))
    return q.text, q.refused, q.template


def figures(tmp: Path) -> dict[str, Any]:
    """Counts over all recorded encoder replies and question replies."""
    data = load()
    reasons: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for k, case in enumerate(data["encoder"]):
        got = replay_encoder(case, tmp / f"e{k}.db")
        c["proposals"] += len(got.proposals)
        c["accepted"] += len(got.accepted)
        for raw, why in got.refused:
            text = str(raw.get("text", ""))
            c["refused"] += 1
            key = why.split(":")[0] if ":" in why[:40] else why[:40]
            reasons[key] += 1
            c["fragments refused"] += why.startswith("statement guard")
            c["fragments proposed"] += bool(text) and meaning.statement_problem(text) is not None
        c["fragments accepted"] += sum(meaning.statement_problem(f.text) is not None
                                       for f in got.accepted)
        for fix in got.corrected:
            c["categories corrected"] += "category" in fix
            c["fragments completed"] += "text" in fix
        c["commitments without a commitment word"] += sum(
            f.category == "commitments" and "category rule" in quiz_rule(f) for f in got.accepted)
    for case in data["questions"]:
        _, refused, template = replay_question(case)
        c["questions"] += 1
        c["model questions refused"] += len(refused)
        c["template fallbacks"] += template
    return {"counts": dict(c), "refusals": dict(reasons), "model": data.get("model")}


def quiz_rule(fact: Fact) -> str:
    """The category rule's sentence for an accepted fact, were its category proposed again."""
    from nocturne_desktop.core.judges.categories import category_rule

    return category_rule(fact.text, fact.category)[1] or ""
