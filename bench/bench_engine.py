"""Benchmark of the built-in local engine (llama-server + SmolLM2-135M-Instruct).

    python -m bench.bench_engine [--runs 5] [--gen 128]

Starts the engine from the user cache (``make engine`` builds it), then measures, as the median
of a few runs: prefill tokens/s for a ~200-token prompt (prompt cache off), generation tokens/s
for 128 tokens, time to first token, and whether ``json_schema`` output is honoured for a Dedupe
sized contract. Prints a markdown table. The figures come from llama-server's own ``timings``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import urllib.request
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from nocturne_desktop.llm.engine import LocalEngine, engine_dir, find_engine

PASSAGE = (
    "The night shift at the harbour begins when the last ferry ties up. Mara checks the "
    "mooring lines, writes the tide table on the whiteboard and makes a pot of strong tea. "
    "Around midnight a fishing boat radios in with a broken winch; she wakes the mechanic, "
    "who grumbles but comes down with his toolbox and a torch. By two the fog has rolled in "
    "so thickly that the lighthouse beam looks like a smear of butter on grey bread. Mara "
    "walks the pier every hour, counting the boats and listening for engines that should not "
    "be running. At four she finds a gull tangled in a net and spends twenty minutes freeing "
    "it with a pair of blunt scissors. When the sun comes up the fishermen arrive, loud and "
    "cheerful, and ask whether anything happened. She tells them about the winch, the fog and "
    "the gull, then hands over the keys and cycles home along the coast road, where the "
    "bakery is already open and the first loaves are cooling in the window."
)
PROMPT = [
    {"role": "system", "content": "You are a helpful assistant that writes clear summaries."},
    {"role": "user", "content": f"Summarise this story in detail.\n\n{PASSAGE}"},
]


class Drop(BaseModel):
    itemId: str
    duplicateOf: str
    reason: str


class DedupeReply(BaseModel):
    drop: list[Drop] = Field(max_length=8)


DEDUPE = [
    {"role": "system", "content": "You remove duplicate memory facts. For each candidate pair "
     "that says the same thing, drop the shorter: itemId to drop, duplicateOf to keep, reason "
     "a few words. Reply with compact JSON only."},
    {"role": "user", "content": "Facts:\nf1: The user's name is Ana.\nf2: User is called Ana.\n"
     "f3: Ana lives in Lisbon.\nf4: The user lives in Lisbon, Portugal.\n"
     "f5: Ana prefers tea over coffee.\nf6: Ana likes tea more than coffee.\n"
     "f7: Ana has a cat named Miso.\nf8: The user's cat is called Miso.\n"
     "Candidate pairs: (f1, f2), (f3, f4), (f5, f6), (f7, f8)"},
]


def stream_request(base_url: str, body: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
    """(time to first content token, total seconds, timings of the last chunk)."""
    data = json.dumps({**body, "stream": True}).encode()
    req = urllib.request.Request(f"{base_url}/chat/completions", data=data,
                                 headers={"Content-Type": "application/json"}, method="POST")
    t0 = time.monotonic()
    ttft: float | None = None
    timings: dict[str, Any] = {}
    with urllib.request.urlopen(req, timeout=300) as resp:
        for raw in resp:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            choices = chunk.get("choices") or [{}]
            if ttft is None and (choices[0].get("delta") or {}).get("content"):
                ttft = time.monotonic() - t0
            if "timings" in chunk:
                timings = chunk["timings"]
    total = time.monotonic() - t0
    return (ttft if ttft is not None else total), total, timings


def post(base_url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    req = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=300) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return time.monotonic() - t0, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gen", type=int, default=128, help="tokens to generate per run")
    args = parser.parse_args()

    paths = find_engine()
    if paths is None:
        print("the local engine is not built: run `make engine`", file=sys.stderr)
        return 1
    try:
        manifest = json.loads((engine_dir() / "engine.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}

    t0 = time.monotonic()
    engine = LocalEngine(paths)
    engine.start()
    startup = time.monotonic() - t0
    try:
        base = engine.base_url
        stream_request(base, {"messages": PROMPT, "max_tokens": 4})  # warm-up
        rows: list[tuple[float, float, dict[str, Any]]] = []
        for _ in range(args.runs):
            rows.append(stream_request(base, {
                "messages": PROMPT, "max_tokens": args.gen, "temperature": 0,
                "ignore_eos": True, "cache_prompt": False,
            }))
        # json_schema: is the grammar honoured, and does the reply end by itself?
        schema_body = {
            "messages": DEDUPE, "temperature": 0, "max_tokens": 512,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "DedupeReply", "strict": True,
                "schema": DedupeReply.model_json_schema()}},
        }
        schema_runs = []
        for _ in range(3):
            elapsed, data = post(base, schema_body)
            choice = data["choices"][0]
            try:
                reply = DedupeReply.model_validate_json(choice["message"]["content"])
                valid, entries = True, len(reply.drop)
            except ValidationError:
                valid, entries = False, -1
            schema_runs.append((elapsed, choice["finish_reason"], valid, entries,
                                data["usage"]["prompt_tokens"],
                                data["usage"]["completion_tokens"]))
    finally:
        engine.stop()

    def med(values: list[float]) -> float:
        return statistics.median(values)

    prompt_n = int(med([r[2].get("prompt_n", 0) for r in rows]))
    gen_n = int(med([r[2].get("predicted_n", 0) for r in rows]))
    print(f"## Local engine — {paths.model.name} on llama-server "
          f"({manifest.get('server_version', '?')})\n")
    print(f"Machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
          f"threads={engine.threads}; median of {args.runs} runs.\n")
    print("| measure | value |")
    print("|---|---|")
    build = manifest.get("build_seconds")
    print(f"| cold build of llama-server (fetch sdist + compile) | "
          f"{f'{build:.0f} s' if isinstance(build, (int, float)) else 'n/a'} |")
    print(f"| engine start → /health 200 | {startup:.2f} s |")
    print(f"| prompt tokens (cache off) | {prompt_n} |")
    print(f"| prefill tokens/s | {med([r[2]['prompt_per_second'] for r in rows]):.0f} |")
    print(f"| generated tokens | {gen_n} |")
    print(f"| generation tokens/s | {med([r[2]['predicted_per_second'] for r in rows]):.1f} |")
    print(f"| time to first token | {med([r[0] for r in rows]):.3f} s |")
    print(f"| wall time per request | {med([r[1] for r in rows]):.2f} s |")
    valid = sum(1 for r in schema_runs if r[2])
    stops = sum(1 for r in schema_runs if r[1] == "stop")
    print(f"| json_schema honoured (Dedupe contract, 8 facts, T=0) | {valid}/{len(schema_runs)} "
          f"schema-valid, {stops}/{len(schema_runs)} finish=stop |")
    e = schema_runs[0]
    print(f"| json_schema request | {e[4]} prompt + {e[5]} completion tokens, "
          f"{med([r[0] for r in schema_runs]):.2f} s, {e[3]} entries |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
