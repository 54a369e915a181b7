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

from pydantic import ValidationError

from nocturne_desktop.core.sleep.passes import PASS_SPECS
from nocturne_desktop.llm.engine import LocalEngine, default_threads, engine_dir, find_engine

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


DedupeReply = PASS_SPECS["dedupe"].contract(8)
"""The real Dedupe contract, bounded to eight proposals as the pass bounds it."""


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


def measure(paths: Any, threads: int, runs: int, gen: int) -> dict[str, Any]:
    t0 = time.monotonic()
    engine = LocalEngine(paths, threads=threads)
    engine.start()
    startup = time.monotonic() - t0
    try:
        base = engine.base_url
        stream_request(base, {"messages": PROMPT, "max_tokens": 4})  # warm-up
        rows = [
            stream_request(base, {"messages": PROMPT, "max_tokens": gen, "temperature": 0,
                                  "ignore_eos": True, "cache_prompt": False})
            for _ in range(runs)
        ]
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
                entries = len(DedupeReply.model_validate_json(choice["message"]["content"]).drop)
            except ValidationError:
                entries = -1
            schema_runs.append((elapsed, choice["finish_reason"], entries,
                                data["usage"]["prompt_tokens"],
                                data["usage"]["completion_tokens"]))
    finally:
        engine.stop()
    med = statistics.median
    n = len(schema_runs)
    return {
        "engine start → /health 200": f"{startup:.2f} s",
        "prompt tokens (prompt cache off)": f"{int(med([r[2].get('prompt_n', 0) for r in rows]))}",
        "prefill tokens/s": f"{med([r[2]['prompt_per_second'] for r in rows]):.0f}",
        "generated tokens": f"{int(med([r[2].get('predicted_n', 0) for r in rows]))}",
        "generation tokens/s": f"{med([r[2]['predicted_per_second'] for r in rows]):.1f}",
        "time to first token": f"{med([r[0] for r in rows]):.2f} s",
        "wall time per request": f"{med([r[1] for r in rows]):.2f} s",
        "json_schema honoured (Dedupe contract, 8 facts, T=0)":
            f"{sum(1 for r in schema_runs if r[2] >= 0)}/{n} schema-valid, "
            f"{sum(1 for r in schema_runs if r[1] == 'stop')}/{n} finish=stop",
        "json_schema request":
            f"{schema_runs[0][3]} prompt + {schema_runs[0][4]} completion tokens, "
            f"{schema_runs[0][2]} entries, {med([r[0] for r in schema_runs]):.2f} s",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gen", type=int, default=128, help="tokens to generate per run")
    parser.add_argument("--threads", type=int, nargs="*", default=None,
                        help="thread counts to compare (default: 1 and the core count)")
    args = parser.parse_args()

    paths = find_engine()
    if paths is None:
        print("the local engine is not built: run `make engine`", file=sys.stderr)
        return 1
    try:
        manifest = json.loads((engine_dir() / "engine.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    cores = os.cpu_count() or 1
    threads = args.threads or sorted({1, cores})
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results = {t: measure(paths, t, args.runs, args.gen) for t in threads}
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    print(f"## Local engine — {paths.model.name} on llama-server "
          f"({manifest.get('server_version', '?')})\n")
    print(f"{platform.system()} {platform.machine()}, {cores} cores, 1-min load average "
          f"{load_before:.1f} before / {load_after:.1f} after; median of {args.runs} runs, "
          f"{args.gen} generated tokens each. Default threads: {default_threads()}.\n")
    build = manifest.get("build_seconds")
    build_s = f"{build:.0f} s" if isinstance(build, (int, float)) else "n/a"
    print(f"Cold build of llama-server (sdist download + cmake + compile): {build_s}\n")
    print("| measure | " + " | ".join(f"threads={t}" for t in threads) + " |")
    print("|---|" + "---|" * len(threads))
    for key in results[threads[0]]:
        print(f"| {key} | " + " | ".join(results[t][key] for t in threads) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
