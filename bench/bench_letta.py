"""Letta link benchmark: sync latency per commit, the pull of a 2,000-line block, the install.

Run: ``python -m bench.bench_letta`` (needs ``make letta``; starts its own server on a free
loopback port with a temporary HOME, and stops it). Prints a markdown table.

* **per commit**: a linked memory with the sync attached; each commit (a hand add, edit or
  forget) is followed by a sync: one read of the agent's blocks and one write of the block that
  changed. The figure is that sync alone (the commit itself is the store's).
* **2,000-line block**: an agent whose scratch block holds 2,000 facts (its limit raised to
  fit); a new memory is linked to it (all 2,000 lines pulled: read, diff, admission, one
  version), then one line is changed in Letta and pulled again.
* **install**: the cold install's seconds as ``scripts/letta-server`` recorded them, and one
  warm ``build`` (the reuse path ``make letta`` takes every time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import LettaClient
from nocturne_desktop.letta.localserver import STAMP, LocalLettaServer, find_letta, letta_dir
from nocturne_desktop.letta.sync import LettaSync, SyncReport, link

ROOT = Path(__file__).resolve().parent.parent
PLACES = ("Porto", "Lisbon", "Braga", "Faro", "Evora", "Coimbra", "Aveiro", "Sintra")


def line(i: int) -> str:
    return f"The user visited {PLACES[i % len(PLACES)]} on trip number {i} with a friend."


def per_commit(client: LettaClient, url: str, folder: Path, n: int) -> list[float]:
    agent = client.create_agent("bench-commits")
    with Store(folder / "commits" / "nocturne.db") as store:
        sync, _ = link(store, url, agent.id, client=client)
        seconds: list[float] = []

        def after() -> None:
            done = sync.sync_quietly()
            if not isinstance(done, SyncReport):
                raise SystemExit(f"sync failed: {done}")
            seconds.append(done.seconds)

        sync.attach(on_commit=after)
        ids = []
        for i in range(n):
            kind = i % 3
            if kind == 0 or not ids:
                fact, _ = store.add_fact("human", line(i), "context")
                ids.append(fact.id)
            elif kind == 1:
                store.edit(ids[-1], text=line(i) + " It rained.")
            else:
                store.forget_now(ids.pop(0))
    client.delete_agent(agent.id)
    return seconds


def big_pull(client: LettaClient, url: str, folder: Path, n_lines: int) -> dict[str, float]:
    value = "\n".join(line(i) for i in range(n_lines))
    agent = client.create_agent("bench-pull")
    scratch = client.create_block("scratch", "", limit=len(value) + 10_000)
    client.attach_block(agent.id, scratch.id)
    client.set_block(agent.id, "scratch", value)
    out: dict[str, float] = {"chars": float(len(value))}
    with Store(folder / "pull" / "nocturne.db") as store:
        t0 = time.perf_counter()
        _, first = link(store, url, agent.id, client=client)
        out["link_s"] = time.perf_counter() - t0
        out["pulled"] = float(len(first.pull.added))
        lines = value.splitlines()
        lines[n_lines // 2] = lines[n_lines // 2].replace("a friend", "two friends")
        client.set_block(agent.id, "scratch", "\n".join(lines))
        t0 = time.perf_counter()
        again = LettaSync(store, client).sync()
        out["edit_s"] = time.perf_counter() - t0
        out["edited"] = float(len(again.pull.edited))
        t0 = time.perf_counter()
        LettaSync(store, client).sync()
        out["nothing_s"] = time.perf_counter() - t0
    client.delete_agent(agent.id)
    return out


def install_figures() -> dict[str, object]:
    try:
        stamp = json.loads((letta_dir() / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "letta-server"), "build"],
                   check=True, capture_output=True)
    return {"cold_s": stamp.get("install_seconds"), "warm_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args(argv)
    if find_letta() is None:
        print("the Letta server is not installed: run `make letta`", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-letta-") as tmp:
        folder = Path(tmp)
        with LocalLettaServer(folder / "home") as server, LettaClient(server.url) as client:
            print(f"server started in {server.start_seconds:.1f} s")
            seconds = per_commit(client, server.url, folder, args.commits)
            pull = big_pull(client, server.url, folder, args.lines)
    ms = sorted(s * 1000 for s in seconds)
    inst = install_figures()
    print("| measure | figure |")
    print("| --- | --- |")
    print(f"| sync after a commit ({len(ms)} commits: add, edit, forget) | median "
          f"{statistics.median(ms):.0f} ms, p90 {ms[int(len(ms) * 0.9)]:.0f} ms, max "
          f"{ms[-1]:.0f} ms |")
    print(f"| link of an empty memory to a {int(pull['pulled']):,}-line block "
          f"({int(pull['chars']):,} chars): read, diff, admission, one version, write back | "
          f"{pull['link_s'] * 1000:.0f} ms |")
    print(f"| pull of one line edited in that block ({int(pull['edited'])} edit) | "
          f"{pull['edit_s'] * 1000:.0f} ms |")
    print(f"| sync of that block when nothing changed | {pull['nothing_s'] * 1000:.0f} ms |")
    print(f"| install (`make letta`): cold / warm | {inst['cold_s']} s / "
          f"{inst['warm_s']:.2f} s |")
    print(f"| server start (to /v1/health/) | {server.start_seconds:.1f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
