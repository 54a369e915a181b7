"""Chat on the built-in engine, before and after its tuning, in the same run.

    python -m bench.bench_chat [--verify] [--variants untuned,first,after] [--replies]

Starts the built-in engine (llama-server + SmolLM2-135M from the user cache; ``make engine``
builds it) afresh for each variant, and chats the scripted 8-turn verify conversation through
the real agent, client and encoder, as the window does (a streamed reply, then the encoder):

- **untuned**: no chat tuning (``OpenAIClient(tuning=None)``), the last 6 turns whatever their
  length, the 512-token reply cap — the behaviour before the tuning existed;
- **first**: the first tuning (:data:`FIRST_TUNING`: brief-reply hint, DRY and repetition
  penalty, the template's stop sequences, 120-token cap, 400-token history);
- **after**: the client picks the model's :class:`ChatTuning` as it is now
  (``nocturne_desktop/llm/tuning.py``).

The default runs ``first,after`` (this change's before and after, in the same run).

Per variant it prints the median time to first token and to the full reply, the replies that
ended by themselves (finish_reason ``stop`` below the reply cap), prompt tokens and the share
the server took from its prompt cache (``usage.prompt_tokens_details.cached_tokens``), and the
encoder's time per turn. ``--verify`` also times ``nocturne verify`` (the whole loop) against each variant.
Targets (2-core machine): a reply ≤ 6 s, first token ≤ 1.5 s, encoder ≤ 3 s a turn, verify
≤ 120 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nocturne_desktop.core.chat.agent import ChatAgent
from nocturne_desktop.core.chat.encoder import Encoder
from nocturne_desktop.core.checks.verify import CONVERSATION, run_verify
from nocturne_desktop.core.ports import ChatTuning
from nocturne_desktop.core.store import Store
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from nocturne_desktop.llm.engine import LocalEngine, find_engine
from nocturne_desktop.llm.tuning import BUILTIN

FIRST_TUNING = replace(BUILTIN, name="first tuning", max_tokens=120, history_tokens=400,
                       stop=("<|im_start|>", "<|im_end|>"), memory_after_history=False)
"""The built-in model's first tuning, kept to compare against."""

VARIANTS: dict[str, ChatTuning | None] = {"untuned": None, "first": FIRST_TUNING, "after": BUILTIN}
SLOTS: dict[str, int] = {"untuned": 1, "first": 1, "after": builtin_engine.SLOTS}
"""Server slots per variant: one before, the built-in engine's (chat and encoder apart) after."""


@dataclass
class Turn:
    ttft: float
    total: float
    finish: str | None
    cap: int | None
    prompt: int
    cached: int | None
    completion: int
    encoder: float
    reply: str


@dataclass
class Variant:
    name: str
    turns: list[Turn] = field(default_factory=list)
    verify_s: float | None = None
    verify_ok: bool | None = None
    load: tuple[float, float] = (float("nan"), float("nan"))


def ended(turn: Turn) -> bool:
    """The reply ended by itself: the server says ``stop`` and it is shorter than the cap."""
    return turn.finish == "stop" and (turn.cap is None or turn.completion < turn.cap)


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def client_for(engine: LocalEngine, tuning: ChatTuning | None) -> OpenAIClient:
    return OpenAIClient(engine.base_url, engine.model_name,
                        timeouts=Timeouts(first_token=600, idle=120), tuning=tuning)


def agent_for(store: Store, client: OpenAIClient, tuning: ChatTuning | None) -> ChatAgent:
    if tuning is not None:
        return ChatAgent(store, client)
    return ChatAgent(store, client, history_turns=6, history_tokens=None)


def chat_run(engine: LocalEngine, name: str, folder: Path, say: Any) -> list[Turn]:
    rows: list[Turn] = []
    tuning = VARIANTS[name]
    with Store(folder / f"chat-{name}.db") as store, client_for(engine, tuning) as client:
        agent = agent_for(store, client, tuning)
        encoder = Encoder(store, client)
        for i, text in enumerate(CONVERSATION, 1):
            stream = agent.stream_reply(text)
            t0 = time.monotonic()
            for _ in stream:
                pass
            total = time.monotonic() - t0
            result = client.last_result
            assert result is not None
            t1 = time.monotonic()
            encoder.encode_new_turns()
            enc = time.monotonic() - t1
            rows.append(Turn(result.first_token_s or total, total, result.finish_reason,
                             agent.max_tokens, result.usage.prompt_tokens, result.usage.cached_tokens,
                             result.usage.completion_tokens, enc, stream.text))
            say(f"  turn {i}: first token {rows[-1].ttft:.2f}s, reply {total:.2f}s "
                f"({result.usage.completion_tokens} tok, {result.finish_reason}), prompt "
                f"{result.usage.prompt_tokens} tok ({result.usage.cached_tokens} cached), "
                f"encoder {enc:.2f}s: {stream.text[:50]!r}")
    return rows


def verify_run(engine: LocalEngine, name: str, folder: Path) -> tuple[float, bool]:
    with client_for(engine, VARIANTS[name]) as client:
        t0 = time.monotonic()
        report = run_verify(client, folder / f"verify-{name}.db",
                            say=lambda _line: None)
        for check in report.checks:
            if check.kind == "integrity" and not check.ok:
                print(f"  verify: integrity check failed: {check.name}: {check.detail}", flush=True)
        return time.monotonic() - t0, report.integrity_ok


def measure(name: str, verify: bool, folder: Path, say: Any) -> Variant:
    paths = find_engine()
    assert paths is not None
    variant = Variant(name)
    slots = SLOTS[name]
    engine = LocalEngine(paths, ctx_size=builtin_engine.SLOT_CTX * slots, parallel=slots)
    engine.start()
    load = load_average()
    try:
        say(f"{variant.name}: {engine.model_name} at {engine.base_url}, load {load:.1f}")
        variant.turns = chat_run(engine, name, folder, say)
    finally:
        engine.stop()
    variant.load = (load, load_average())
    if verify:
        engine = LocalEngine(paths, ctx_size=builtin_engine.SLOT_CTX * slots, parallel=slots)
        engine.start()
        try:
            variant.verify_s, variant.verify_ok = verify_run(engine, name, folder)
            say(f"  verify: {variant.verify_s:.0f}s, integrity {'ok' if variant.verify_ok else 'FAILED'}")
        finally:
            engine.stop()
    return variant


def table(variants: list[Variant]) -> str:
    med = statistics.median

    def row(label: str, fn: Any) -> str:
        return f"| {label} | " + " | ".join(fn(v) for v in variants) + " |"

    def cached_share(v: Variant) -> str:
        prompt = sum(t.prompt for t in v.turns[1:])
        cached = sum(t.cached or 0 for t in v.turns[1:])
        return f"{cached / prompt:.0%}" if prompt else "—"

    lines = [
        "| measure (8-turn verify conversation) | " + " | ".join(v.name for v in variants) + " |",
        "|---" * (len(variants) + 1) + "|",
        row("time to first token, median (max)",
            lambda v: f"{med(t.ttft for t in v.turns):.2f} s ({max(t.ttft for t in v.turns):.2f})"),
        row("full reply, median (max)",
            lambda v: f"{med(t.total for t in v.turns):.2f} s ({max(t.total for t in v.turns):.2f})"),
        row("replies that ended by themselves (stop, below the cap)",
            lambda v: f"{sum(1 for t in v.turns if ended(t))}/{len(v.turns)}"),
        row("reply tokens, median", lambda v: f"{med(t.completion for t in v.turns):.0f}"),
        row("prompt tokens, turns 1 → 8",
            lambda v: " → ".join(str(t.prompt) for t in (v.turns[0], v.turns[3], v.turns[-1]))
            + " (turns 1, 4, 8)"),
        row("prompt tokens from the cache, turns 2–8", cached_share),
        row("encoder per turn, median (max)",
            lambda v: f"{med(t.encoder for t in v.turns):.2f} s ({max(t.encoder for t in v.turns):.2f})"),
        row("chat + encoder, whole conversation",
            lambda v: f"{sum(t.total + t.encoder for t in v.turns):.0f} s"),
        row("load average (chat start → end)", lambda v: f"{v.load[0]:.1f} → {v.load[1]:.1f}"),
    ]
    if any(v.verify_s is not None for v in variants):
        lines.append(row("`nocturne verify`, whole loop", lambda v: (
            f"{v.verify_s:.0f} s (integrity {'ok' if v.verify_ok else 'FAILED'})"
            if v.verify_s is not None else "—")))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verify", action="store_true", help="also time nocturne verify")
    parser.add_argument("--variants", default="first,after",
                        help=f"comma-separated, run in this order (of {', '.join(VARIANTS)})")
    parser.add_argument("--replies", action="store_true", help="print every reply in full")
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or not names:
        parser.error(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}")
    if find_engine() is None:
        print("the built-in engine is not built: run `make engine`", file=sys.stderr)
        return 1
    say = lambda text: print(text, flush=True)  # noqa: E731
    load = load_average()
    say(f"# bench_chat: {platform.machine()}, {os.cpu_count()} cores, load {load:.1f}")
    variants = []
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-chat-") as tmp:
        for name in names:
            variants.append(measure(name, args.verify, Path(tmp), say))
    if args.replies:
        for v in variants:
            for i, t in enumerate(v.turns, 1):
                say(f"\n[{v.name} {i}: {t.completion} tok, {t.finish}"
                    f"{'' if ended(t) else ', at the cap'}]\n{t.reply}")
    say(f"\nload average {load:.1f} → {load_average():.1f}\n")
    say(table(variants))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
