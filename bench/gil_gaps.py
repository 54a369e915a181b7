"""Where a rules-only sleep's worker holds the GIL: gaps seen by another thread, and the C calls
behind them.

The window runs a sleep on a worker thread; every stretch in which that thread holds the GIL
without letting go (one C call over a large input: a sort with a C key, ``json.dumps`` of a big
plan, ``str.join``, a garbage collection) is time the GUI thread cannot run. This runs the
sleep as the window's worker does (``run_sleep`` with no model, its own ``Store`` opened on the
worker thread, the rows of every commit read there too), on the store ``bench.bench_ui --scale``
writes, while the main thread ticks every 5 ms:

- ``gaps`` (default): the longest gaps between ticks, with the worker's line right after each
  one (where it let go: just after the stretch), the process's CPU time during the gap (about
  the gap: the worker ran; far less: the machine did not run this process) and the garbage
  collections longer than 20 ms;
- ``--profile``: ``sys.setprofile`` on the worker names every C call that ran longer than
  20 ms, its Python caller and whether it called back into Python (a sort with a Python key
  does, and lets other threads run in between; one that does not held the GIL throughout).
  The profile slows the sleep; its gaps are not the figure, its list of calls is.

The worker defers full collections as the window's sleep job does
(``nocturne_desktop.ui.jobs.deferred_gc``); ``--no-defer`` measures without.

    python -m bench.gil_gaps [--sizes 20000,100000] [--profile] [--no-defer] [--keep DIR]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from types import FrameType
from typing import Any

from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.ui.jobs.deferred_gc import deferred_full_collections

LONG_C_S = 0.020
GAP_MS = 30.0


class CallLog:
    """A profile function for one thread: C calls that used more than :data:`LONG_C_S` of the
    thread's CPU time (not wall time: on a busy machine the thread may wait for a core)."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []  # [name, start, start cpu, caller, nested python calls]
        self.long: list[tuple[float, float, float, str, str, int]] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            self.stack.append([getattr(arg, "__qualname__", repr(arg)), time.perf_counter(),
                               time.thread_time(), frame, 0])
        elif event in ("c_return", "c_exception"):
            if not self.stack:
                return
            name, t0, c0, caller, nested = self.stack.pop()
            cpu = time.thread_time() - c0
            if cpu > LONG_C_S:
                where = f"{caller.f_code.co_filename}:{caller.f_lineno} {caller.f_code.co_name}"
                self.long.append((t0, time.perf_counter() - t0, cpu, name, where, nested))
        elif event == "call" and self.stack:
            self.stack[-1][4] += 1


def worker_body(db: Path, n: int, out: dict[str, Any], profile: bool, defer: bool) -> None:
    out["ident"] = threading.get_ident()
    log = CallLog()
    if profile:
        sys.setprofile(log)
    try:
        with Store(db) as store, deferred_full_collections() if defer else nullcontext():
            store.subscribe(lambda ch: reads.read_changed(store, ch))  # as the window's job does
            t0 = time.perf_counter()
            for _ev in run_sleep(store, None, RetentionPolicy(max_active_facts=max(1, n // 2))):
                pass
            out["elapsed"] = time.perf_counter() - t0
    except BaseException as exc:  # reported by the main thread
        out["error"] = "".join(traceback.format_exception(exc))
    finally:
        sys.setprofile(None)
        out["long"] = log.long


def measure(db: Path, n: int, profile: bool, defer: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    collections: list[tuple[float, float, int]] = []
    gc_start: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            gc_start[ident] = time.perf_counter()
        elif ident in gc_start:
            t0 = gc_start.pop(ident)
            if time.perf_counter() - t0 > LONG_C_S:
                collections.append((t0, time.perf_counter() - t0, info["generation"]))

    gc.callbacks.append(on_gc)
    worker = threading.Thread(target=worker_body, args=(db, n, out, profile, defer), daemon=True)
    gaps: list[tuple[float, float, str, float]] = []
    t_start = time.perf_counter()
    worker.start()
    last, last_cpu = time.perf_counter(), time.process_time()
    while worker.is_alive():
        time.sleep(0.005)
        now, cpu = time.perf_counter(), time.process_time()
        gap_ms = (now - last) * 1000
        if gap_ms > GAP_MS:
            frame = sys._current_frames().get(out.get("ident", -1))
            where = ""
            if frame is not None:
                stack = traceback.extract_stack(frame, limit=3)
                where = " < ".join(f"{Path(s.filename).name}:{s.lineno} {s.name}"
                                   for s in reversed(stack))
            gaps.append((last - t_start, gap_ms, where, (cpu - last_cpu) * 1000))
        last, last_cpu = now, cpu
    worker.join()
    gc.callbacks.remove(on_gc)
    if "error" in out:
        raise RuntimeError(out["error"])
    return {"elapsed": out["elapsed"], "gaps": gaps, "long": out["long"],
            "gc": [(t - t_start, d, g) for t, d, g in collections], "t_start": t_start}


def report(n: int, r: dict[str, Any], top: int) -> None:
    gaps = sorted(r["gaps"], key=lambda g: -g[1])
    print(f"\n## {n:,} facts: sleep {r['elapsed']:.1f} s; load average "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"longest gap {gaps[0][1]:.0f} ms" if gaps else f"no gap > {GAP_MS:.0f} ms")
    print(f"gaps > {GAP_MS:.0f} ms: {len(gaps)}")
    for at, ms, where, cpu in gaps[:top]:
        print(f"  {ms:6.0f} ms at {at:6.2f} s  (process CPU {cpu:4.0f} ms)  then at {where}")
    if r["gc"]:
        print("collections > 20 ms:")
        for at, d, g in sorted(r["gc"], key=lambda c: -c[1])[:top]:
            print(f"  gen {g} {d * 1000:6.0f} ms at {at:6.2f} s")
    if r["long"]:
        print("C calls using > 20 ms of CPU (nested Python calls: 0 = held the GIL throughout, "
              "unless the call releases it, as SQLite's do):")
        for t0, dt, cpu, name, where, nested in sorted(r["long"], key=lambda c: -c[2])[:top * 2]:
            short = where.replace(str(Path(__file__).resolve().parent.parent) + "/", "")
            print(f"  CPU {cpu * 1000:4.0f} ms (wall {dt * 1000:4.0f}) at {t0 - r['t_start']:6.2f} s"
                  f"  {name:<28} nested {nested:<7} {short}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-defer", action="store_true",
                    help="let full collections run during the sleep (as before the window deferred them)")
    ap.add_argument("--keep", type=Path, help="keep (and reuse) the generated stores here")
    ap.add_argument("--sleeps", type=int, default=1000)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    sys.setswitchinterval(0.001)  # as the window (nocturne_desktop.ui.app.tune_interpreter)
    from bench.bench_ui import copy_store, scale_store

    keep = args.keep or Path(tempfile.mkdtemp())
    keep.mkdir(parents=True, exist_ok=True)
    for n in (int(s) for s in args.sizes.split(",")):
        gen = keep / f"gen-{n}-{args.sleeps}.db"
        if not gen.exists():
            t = scale_store(gen, n, args.sleeps)
            print(f"wrote {gen.name} in {t:.1f} s", flush=True)
        db = copy_store(gen, Path(tempfile.mkdtemp()) / "sleep.db")
        gc.collect()
        gc.freeze()  # as the window after start-up (freeze_startup_objects)
        report(n, measure(db, n, args.profile, not args.no_defer), args.top)
        for p in db.parent.iterdir():
            p.unlink()
        db.parent.rmdir()
    if args.keep is None:
        for p in keep.iterdir():
            p.unlink()
        keep.rmdir()
    print(f"\nload average now {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
