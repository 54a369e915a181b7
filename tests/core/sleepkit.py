"""Shared helpers for sleep tests: a seeded store and a scripted model that answers each pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, FactDraft
from tests.fakeserver import Reply, Request

NOW = 1_800_000_000.0
DAY = 86400.0

SEED: list[tuple[str, str, str, float]] = [
    # block, category, text, age in days
    ("human", "identity", "The user lives in Lisbon and works best in the morning.", 2),
    ("scratch", "identity", "User lives in Lisbon and works best in the morning.", 1),
    ("scratch", "preferences", "The user keeps a bearded dragon called Saffron.", 1),
    ("scratch", "context", "The user keeps a bearded dragon.", 1),
    ("scratch", "context", "The user's stack is Airflow and Postgres.", 1),
    ("scratch", "context", "The user's stack runs Airflow jobs nightly.", 1),
    ("scratch", "commitments", "The user promised to review the Airflow migration on Friday.", 1),
    ("episodes", "event", "The user went to a conference in Porto.", 70),
    ("episodes", "event", "The user fixed the garden fence.", 65),
    ("scratch", "context", "The user had toast for breakfast.", 1),
]


def seed(path: Path) -> list[Fact]:
    with Store(path, clock=lambda: NOW) as store:
        return [store.append(block, FactDraft(text, cat, i + 1, NOW - age * DAY))
               for i, (block, cat, text, age) in enumerate(SEED)]


def task_of(req: Request) -> tuple[str, dict[str, Any]]:
    payload = json.loads(req.last_user)
    return str(payload.get("task")), payload


def pass_responder(answers: dict[str, Callable[[dict[str, Any]], Any] | Any]) -> Callable[[Request], Reply]:
    """Answer each pass by its payload's task; a callable gets the payload, anything else is sent
    as JSON (a str is sent as raw text; a Reply is sent as is)."""

    def respond(req: Request) -> Reply:
        task, payload = task_of(req)
        answer = answers.get(task, {})
        if callable(answer):
            answer = answer(payload)
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, str):
            return Reply.text(answer)
        return Reply.json(answer)

    return respond


def cooperative() -> dict[str, Any]:
    """A model that does the right thing with whatever each pass offers."""
    return {
        "dedupe": lambda p: {"drop": [{"itemId": c["dropId"], "duplicateOf": c["keeperId"],
                                       "reason": "same fact"} for c in p["candidatePairs"]]},
        "merge": lambda p: {"merge": [
            {"intoId": c["facts"][0]["itemId"], "fromIds": [f["itemId"] for f in c["facts"][1:]],
             "mergedText": " ".join(f["text"] for f in c["facts"]), "reason": "related"}
            for c in p["clusters"]]},
        "reconcile": lambda p: {"supersede": [
            {"oldId": c["oldId"], "newId": c["newId"], "reason": "a correction"}
            for c in p["candidatePairs"]]},
        "promote": lambda p: {"promote": [
            {"itemId": f["itemId"], "toBlock": "human", "reason": "durable"}
            for f in p["scratch"] if f["category"] in ("identity", "preferences", "commitments")]},
        "forget": lambda p: {"forget": [
            {"itemId": f["itemId"], "reason": "old", "policy": f["rule"]} for f in p["eligible"]]},
    }
