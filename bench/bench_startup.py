"""Start-up time: process start → the main window's first paint, from source and frozen.

Each run starts a fresh process with every folder (data, settings, cache, Qt's own settings) in
a new temporary directory, so it opens an empty store like a first launch. The app writes the
wall-clock time of its first paint (``NOCTURNE_STARTUP_PROBE``, see
``nocturne_desktop/startup.py``) and closes itself; the figure is that time minus the moment
just before the process was spawned. Median of 5 runs (after one untimed warm-up that fills the
page cache; the warm-up's figure is printed too, as the closest to a cold start).

    QT_QPA_PLATFORM=offscreen python -m bench.bench_startup [--runs 5] [--frozen dist/Nocturne/Nocturne]

Targets: frozen ≤ 2 s, from source ≤ 1 s. The frozen row is skipped when no build exists
(``make dist``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FROZEN = ROOT / "dist" / "Nocturne" / ("Nocturne.exe" if os.name == "nt" else "Nocturne")
TARGETS = {"source": 1.0, "frozen": 2.0}


def one_run(cmd: list[str], timeout: float = 60.0) -> float:
    with tempfile.TemporaryDirectory(prefix="nocturne-startup-") as tmp:
        t = Path(tmp)
        probe = t / "probe.json"
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
            "NOCTURNE_DATA_DIR": str(t / "data"),
            "NOCTURNE_CONFIG_DIR": str(t / "config"),
            "NOCTURNE_CACHE_DIR": str(t / "cache"),
            "XDG_CONFIG_HOME": str(t / "xdg-config"),  # QSettings (window geometry)
            "NOCTURNE_STARTUP_PROBE": str(probe),
            "NOCTURNE_STARTUP_PROBE_QUIT": "1",
        }
        if cmd[0] == sys.executable:
            env["PYTHONPATH"] = str(ROOT)
        t0 = time.time()
        proc = subprocess.run(cmd, env=env, cwd=tmp, timeout=timeout, capture_output=True, text=True)
        if proc.returncode != 0 or not probe.is_file():
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode} without a paint record:\n"
                               f"{proc.stderr[-2000:]}")
        record = json.loads(probe.read_text())
        return float(record["paint"]) - t0


def measure(name: str, cmd: list[str], runs: int) -> dict[str, object]:
    first = one_run(cmd)
    times = [one_run(cmd) for _ in range(runs)]
    return {"name": name, "first": first, "median": statistics.median(times),
            "min": min(times), "max": max(times), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="start-up to first paint, source and frozen")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--frozen", type=Path, default=DEFAULT_FROZEN)
    args = p.parse_args(argv)
    rows = [measure("source", [sys.executable, "-m", "nocturne_desktop"], args.runs)]
    if args.frozen.is_file():
        rows.append(measure("frozen", [str(args.frozen)], args.runs))
    else:
        print(f"(no frozen build at {args.frozen}; run `make dist` for the frozen row)")
    print(f"\nStart-up to first paint of the main window ({os.cpu_count()} cores, "
          f"QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM', 'offscreen')}, empty store)\n")
    print(f"| build | median of {args.runs} (s) | min (s) | max (s) | first run (s) | target (s) | ok |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        target = TARGETS[str(r["name"])]
        med = float(r["median"])  # type: ignore[arg-type]
        print(f"| {r['name']} | {med:.3f} | {r['min']:.3f} | {r['max']:.3f} | {r['first']:.3f} | "
              f"≤ {target:g} | {'yes' if med <= target else 'NO'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
