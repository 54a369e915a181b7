"""Record the built-in engine's real replies to the encoder and to Wake's question step, as
test fixtures (``tests/data/engine_replies.json``).

Starts llama-server with the built-in model from the user cache (as the window does), sends
each conversation below through the real client and the real encoder, and each fact through
Wake's question step (first try and, after a refusal, the second), and stores every raw reply
with the request it answered. ``tests/core/test_engine_replies.py`` replays them through the
encoder gate, the category rule and the question gate. Run from the repository root:
``python scripts/record_engine_replies.py`` (a few minutes on two cores).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nocturne_desktop.core.cancel import CancelToken  # noqa: E402
from nocturne_desktop.core.chat.encoder import Encoder  # noqa: E402
from nocturne_desktop.core.checks import quiz  # noqa: E402
from nocturne_desktop.core.ports import Message, StructuredResult  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402
from nocturne_desktop.core.types import Fact  # noqa: E402

T = TypeVar("T", bound=BaseModel)
OUT = ROOT / "tests" / "data" / "engine_replies.json"

CONVERSATIONS: list[list[tuple[str, str]]] = [
    [("user", "Hi! I'm 18 years old and I just started university.")],
    [("user", "I work as a nurse at Santa Maria hospital.")],
    [("user", "My favourite colour is blue.")],
    [("user", "My favourite colour is now green, no longer blue.")],
    [("user", "I promised my sister I'd help her move on Saturday.")],
    [("user", "I have a dentist appointment next Tuesday at 9.")],
    [("user", "I live in Lisbon with my two cats."), ("assistant", "What are their names?"),
     ("user", "Miso and Tofu.")],
    [("user", "I moved from Lisbon to Porto last month.")],
    [("user", "My daughter is 7 and she loves drawing.")],
    [("user", "I don't eat pork, only chicken.")],
    [("user", "I've never been to Peru but I'd love to go.")],
    [("user", "I ran the Berlin marathon in 3 hours 10 minutes.")],
    [("user", "I'm allergic to penicillin.")],
    [("user", "I hate horror films, I prefer comedies.")],
    [("user", "Santa Maria hospital"), ("assistant", "What about it?"),
     ("user", "That's where I work.")],
    [("user", "I need to renew my passport before June.")],
    [("user", "My husband is called Rui and he works at a bank.")],
    [("user", "I'm not vegan any more."), ("assistant", "What changed?"),
     ("user", "I started eating fish again.")],
    [("user", "We went to Madrid last weekend for my birthday.")],
    [("user", "I'm a software developer and I mostly write Python.")],
    [("user", "I quit the choir in March.")],
    [("user", "I have three kids now, the baby was born in May.")],
    [("user", "I enjoy long walks by the sea on Sundays.")],
    [("user", "I will call my mum tomorrow evening.")],
]

QUIZ_FACTS: list[str] = [
    "The user's daughter is 7.",
    "The user works as a nurse at Santa Maria hospital.",
    "The user's favourite colour is blue.",
    "The user lives in Porto.",
    "The user is allergic to penicillin.",
    "The user's husband is called Rui.",
    "The user ran the Berlin marathon in 3 hours 10 minutes.",
    "The user has two cats called Miso and Tofu.",
    "The user does not eat pork.",
    "The user promised to help their sister move on Saturday.",
    "The user is 18 years old.",
    "The user prefers comedies.",
    "The user quit the choir in March.",
    "The user has a dentist appointment next Tuesday.",
    "The user writes Python.",
]


class Recorder:
    """A ``ModelClient`` that passes each call to the real client and keeps the raw reply."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[dict[str, Any]] = []

    def structured(self, messages: Sequence[Message], contract: type[T], *,
                   temperature: float | None = None, max_tokens: int | None = None,
                   cancel: CancelToken | None = None) -> StructuredResult[T]:
        res: StructuredResult[T] = self.inner.structured(
            messages, contract, temperature=temperature, max_tokens=max_tokens, cancel=cancel)
        self.calls.append({"request": messages[-1]["content"], "raw": res.raw,
                           "truncated": res.truncated, "mode": res.mode})
        return res

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.chat(*args, **kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.stream(*args, **kwargs)


def main() -> int:
    from nocturne_desktop.llm import builtin as builtin_engine
    from nocturne_desktop.llm.client import OpenAIClient
    from nocturne_desktop.llm.engine import LocalEngine, find_engine

    paths = find_engine()
    if paths is None:
        print("the built-in engine is not built: run `make engine`", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="nocturne-record-"))
    engine = LocalEngine(paths, ctx_size=builtin_engine.SLOT_CTX * builtin_engine.SLOTS,
                         parallel=builtin_engine.SLOTS, log_path=tmp / "llama-server.log")
    engine.start(timeout=180.0)
    client = OpenAIClient(engine.base_url, engine.model_name)
    out: dict[str, Any] = {
        "about": ("Raw replies of the built-in engine (" + engine.model_name + ") to the "
                  "encoder and to Wake's question step, recorded through the real client by "
                  "scripts/record_engine_replies.py; replayed by tests/core/"
                  "test_engine_replies.py."),
        "model": engine.model_name, "recorded": time.strftime("%Y-%m-%d"),
        "encoder": [], "questions": [],
    }
    try:
        for k, turns in enumerate(CONVERSATIONS):
            rec = Recorder(client)
            with Store(tmp / f"enc{k}.db") as store:
                for role, text in turns:
                    store.add_turn(role, text)
                Encoder(store, rec).encode_new_turns()  # type: ignore[arg-type]
            out["encoder"].append({"turns": [list(t) for t in turns], "replies": rec.calls})
            print(f"encoder {k + 1}/{len(CONVERSATIONS)}: {rec.calls[-1]['raw'][:100]!r}")
        for k, text in enumerate(QUIZ_FACTS):
            rec = Recorder(client)
            fact = Fact(f"m_{k + 1}", "human", text, "context", None, 0.0, 0.0)
            quiz.make_question(rec, fact, None)  # type: ignore[arg-type]
            out["questions"].append({"fact": text, "replies": rec.calls})
            print(f"question {k + 1}/{len(QUIZ_FACTS)}: {rec.calls[0]['raw'][:100]!r}")
    finally:
        client.close()
        engine.stop()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
