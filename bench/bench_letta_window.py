"""The Letta link in the window: what it adds to a store-writing job, and how soon a change by
hand reaches the agent, against the real server (``make letta``; started on a free loopback
port with a temporary HOME, and stopped).

* **job**: a restore (one commit that changes facts) in the real window over a memory linked to
  an agent: its body runs inside the link's wrap (a sync before it, one after its commit, on
  the job's thread). The same restore with the wrap switched off is the baseline; the figure is
  the difference (two syncs and the client's lease).
* **by hand**: ``Session.hand("add_fact", …)`` until the link's own sync job says it is done
  (``LettaLink.synced``): the hub's debounce (``AFTER_COMMIT_MS``), the job's start and one sync.

Run: ``QT_QPA_PLATFORM=offscreen python -m bench.bench_letta_window [--runs 12]``. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench.bench_ui import make_window, run_until, seed  # imports Qt: after the env


def restore_seconds(win: Any, version: int) -> float:
    s = win.session
    t0 = time.perf_counter()
    s.restore(version)
    if not run_until(lambda: not s.busy, 60):
        raise SystemExit("a restore did not end in 60 s")
    return time.perf_counter() - t0


def hand_seconds(win: Any, n: int) -> float:
    got: list[Any] = []
    win.letta.synced.connect(got.append)
    t0 = time.perf_counter()
    win.session.hand("add_fact", "human", f"The user owns {n + 2} bicycles now.", "context")
    if not run_until(lambda: bool(got), 30):
        raise SystemExit("a change by hand was not synced in 30 s")
    seconds = time.perf_counter() - t0
    win.letta.synced.disconnect(got.append)
    if got[0].error is not None:
        raise SystemExit(f"the sync failed: {got[0].error}")
    return seconds


def figure(xs: list[float]) -> str:
    ms = sorted(x * 1000 for x in xs)
    return f"median {statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args(argv)
    from PySide6.QtWidgets import QApplication

    from nocturne_desktop.core.store import Store
    from nocturne_desktop.letta.client import LettaClient
    from nocturne_desktop.letta.localserver import LocalLettaServer, find_letta
    from nocturne_desktop.letta.sync import link
    from nocturne_desktop.settings import Settings

    if find_letta() is None:
        print("the Letta server is not installed: run `make letta`", file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="bench-letta-window-") as tmp:
        folder = Path(tmp)
        os.environ["NOCTURNE_CONFIG_DIR"] = str(folder / "config")
        db = folder / "nocturne.db"
        seed(db, 200)
        with Store(db) as store:  # two versions a restore goes back and forth between
            first = store.add_fact("human", "The user keeps bees on the roof.", "context")[1].seq
            second = store.add_fact("human", "The user has two hives.", "context")[1].seq
        with LocalLettaServer(folder / "home") as server, LettaClient(server.url) as client:
            agent = client.create_agent("bench-window")
            with Store(db) as store:
                link(store, server.url, agent.id, client=client)
            win = make_window(db, Settings())
            run_until(lambda: not win.letta.running and win.letta.last_ok is not None, 60)
            wrap = win.session.wrap_body
            linked: list[float] = []
            plain: list[float] = []
            for _ in range(args.runs):  # each restore changes the live facts
                win.session.wrap_body = wrap
                linked.append(restore_seconds(win, first))
                win.session.wrap_body = None
                plain.append(restore_seconds(win, second))
                win.session.wrap_body = wrap
                win.letta.sync_now()  # the agent in step again before the next linked restore
                run_until(lambda: not win.letta.running, 30)
            hand = [hand_seconds(win, n) for n in range(args.runs)]
            held = {b.label: b.value for b in client.blocks(agent.id)}
            win.close()
            win.session.wait_threads()
            client.delete_agent(agent.id)
    app.processEvents()
    if f"The user owns {args.runs + 1} bicycles now." not in held.get("human", ""):
        raise SystemExit("the agent does not hold the last change by hand")
    cost = [a - b for a, b in zip(linked, plain, strict=True)]
    print(f"server started in {server.start_seconds:.1f} s; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| measure | figure |")
    print("| --- | --- |")
    print(f"| a restore job, linked ({args.runs} runs) | {figure(linked)} |")
    print(f"| the same restore, not linked | {figure(plain)} |")
    print(f"| what the link adds to the job (a sync before, one after its commit) | "
          f"median {statistics.median(cost) * 1000:.0f} ms |")
    print(f"| a change by hand until the agent holds it | {figure(hand)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
