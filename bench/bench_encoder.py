"""Encoder request size per chat exchange: the extracted_through cursor keeps it flat.

Simulates a 50-exchange chat (user turn + assistant turn each) against a real store and a
recording in-process model, encodes after every exchange, and prints the size of the request
sent for exchanges 1, 10 and 50, next to what re-sending the whole transcript would have cost
(the article's bug 2). Run: ``python -m bench.bench_encoder``.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.chat.encoder import Encoder, build_encoder_messages
from nocturne_desktop.core.ports import ChatResult, Message, StructuredResult, Usage
from nocturne_desktop.core.store import Store

T = TypeVar("T", bound=BaseModel)

HOBBIES = ["hiking", "chess", "baking", "cycling", "painting", "gardening", "rowing", "reading"]


class RecordingModel:
    """Answers every encoder request with one fact drawn from the newest user turn."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def chat(self, messages: Sequence[Message], **_: Any) -> ChatResult:
        raise NotImplementedError("the encoder only uses structured()")

    def stream(self, messages: Sequence[Message], **_: Any) -> Iterator[str]:
        raise NotImplementedError("the encoder only uses structured()")

    def structured(
        self,
        messages: Sequence[Message],
        contract: type[T],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> StructuredResult[T]:
        size = sum(len(m["content"]) for m in messages)
        self.sizes.append(size)
        user_lines = [ln for ln in messages[-1]["content"].splitlines() if "] user: " in ln]
        turn = int(user_lines[-1].split("]")[0].removeprefix("[turn "))
        hobby = user_lines[-1].split("I enjoy ")[1].split(" ")[0]
        fact = {"text": f"The user enjoys {hobby} on weekends.", "category": "preferences"}
        raw = json.dumps({"facts": [{**fact, "turn": turn}]})
        value = contract.model_validate_json(raw)
        return StructuredResult(value, raw, "json_schema", "stop", Usage(size // 4, 30, True))


def main(exchanges: int = 50) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        model = RecordingModel()
        encoder = Encoder(store, model)
        naive: list[int] = []
        accepted = 0
        t0 = time.perf_counter()
        for i in range(1, exchanges + 1):
            hobby = HOBBIES[i % len(HOBBIES)]
            store.add_turn(
                "user", f"On weekends I enjoy {hobby} with friends, it is number {i} on my list."
            )
            store.add_turn(
                "assistant", f"That sounds like a good way to spend a weekend; {hobby} it is."
            )
            result = encoder.encode_new_turns()
            assert result.error is None, result.error
            accepted += len(result.accepted)
            everything = store.turns()
            full = build_encoder_messages(everything, None, max_facts=encoder.max_facts)
            naive.append(sum(len(m["content"]) for m in full))
        elapsed = time.perf_counter() - t0

    print("| exchange | request chars (cursor) | full-transcript chars (no cursor) |")
    print("| ---: | ---: | ---: |")
    for n in (1, 10, 50):
        if n <= exchanges:
            print(f"| {n} | {model.sizes[n - 1]} | {naive[n - 1]} |")
    print()
    print(
        f"total over {exchanges} exchanges: {sum(model.sizes)} chars with the cursor, "
        f"{sum(naive)} without ({sum(naive) / sum(model.sizes):.1f}x); "
        f"{accepted} facts accepted; encoder + store time {elapsed * 1000:.0f} ms "
        "(model time excluded)"
    )


if __name__ == "__main__":
    main()
