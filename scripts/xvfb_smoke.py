#!/usr/bin/env python3
"""The real-display smoke test: the app on Qt's xcb platform under Xvfb, screenshot checked.

    python scripts/xvfb_smoke.py source   # python -m nocturne_desktop
    python scripts/xvfb_smoke.py frozen   # dist/Nocturne/Nocturne (build it first: make dist)
    ... [--keep DIR]                      # also copy the screenshot to DIR/xvfb-<which>.png

The offscreen self-test proves the widgets work; it cannot see that the xcb plugin loads
(its system libraries) or that the window paints on a real X server. This does: it starts an
Xvfb display, runs the app on the demo memory in a scratch folder with ``QT_QPA_PLATFORM=xcb``
and ``NOCTURNE_SCREENSHOT`` set (the app grabs the screen from the X server after its first
paint, records where its window, chat pane and memory tree are, and quits by itself), then
checks the picture is not blank: the tree and the chat regions must each differ from the
screenshot's background colour.

Xvfb and the xcb libraries Qt needs are installed with apt-get when this runs as root on a
system that has it; otherwise the test is skipped with the reason printed (exit 0), so
``make test`` still works on a machine without them. ``XVFB_SMOKE_REQUIRED=1`` makes a skip a
failure.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nocturne_desktop.boot import platformcheck  # noqa: E402  (standard library only, no Qt)

DIST_EXE = ROOT / "dist" / "Nocturne" / "Nocturne"
SCREEN = (1280, 800)
RUN_LIMIT_S = 90.0
MIN_DIFFERENT = 0.01
"""Share of a region's pixels that must differ from the background (text, frames, buttons)."""
MIN_COLOURS = 3


class Skip(Exception):
    """The environment cannot run this test; the message says why."""


# --------------------------------------------------------------------------- the tools


def _apt_install(packages: list[str]) -> None:
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print("xvfb-smoke: " + " ".join(cmd), flush=True)
    if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode == 0:
        return
    subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL)
    if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        raise Skip("apt-get could not install " + " ".join(packages))


def missing_xcb_libraries() -> list[str]:
    plugin = platformcheck.plugin_path()
    if plugin is None:
        raise Skip("PySide6's xcb platform plugin is not installed")
    return platformcheck.missing_libraries(plugin)


def ensure_tools() -> None:
    if not sys.platform.startswith("linux"):
        raise Skip("Xvfb and Qt's xcb platform are Linux (X11) only")
    need: list[str] = []
    if shutil.which("Xvfb") is None:
        need.append("xvfb")
    missing = missing_xcb_libraries()
    if missing:
        need += list(platformcheck.DESKTOP_PACKAGES_DEBIAN)
    if not need:
        return
    what = ("Xvfb" if "xvfb" in need else "") + (" and " if "xvfb" in need and missing else "") + (
        "the xcb libraries " + ", ".join(missing) if missing else "")
    if os.name != "posix" or os.geteuid() != 0:
        raise Skip(f"{what} not installed, and not running as root to install them "
                   f"(sudo apt-get install {' '.join(need)})")
    if shutil.which("apt-get") is None:
        raise Skip(f"{what} not installed, and no apt-get here to install them")
    _apt_install(need)
    if shutil.which("Xvfb") is None:
        raise Skip("Xvfb is still missing after apt-get install xvfb")
    still = missing_xcb_libraries()
    if still:
        raise Skip("still missing after apt-get: " + ", ".join(still))


# --------------------------------------------------------------------------- the display


def _free_display() -> int:
    for n in range(91, 200):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise Skip("no free X display number in :91–:199")


@contextlib.contextmanager
def xvfb() -> object:
    n = _free_display()
    proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24",
                             "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while platformcheck.display_reachable(f":{n}") is not True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"Xvfb :{n} exited with {proc.returncode}: {err[-500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Xvfb :{n} did not accept connections within 15 s")
            time.sleep(0.05)
        yield f":{n}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


# --------------------------------------------------------------------------- the picture


def _pixels(path: Path) -> tuple[int, int, array]:
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    if image.isNull():
        raise AssertionError(f"{path} is not a readable PNG")
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    width, height = image.width(), image.height()
    data = array("I")
    raw = bytes(image.constBits())  # type: ignore[arg-type]
    stride = image.bytesPerLine()
    for y in range(height):
        data.frombytes(raw[y * stride: y * stride + width * 4])
    return width, height, data


def region_figures(width: int, data: array, rect: list[int], background: int) -> tuple[float, int]:
    """(share of pixels that differ from ``background``, distinct colours) inside ``rect``."""
    x, y, w, h = rect
    colours: collections.Counter[int] = collections.Counter()
    for row in range(max(0, y), y + h):
        start = row * width + max(0, x)
        colours.update(data[start: start + w])
    total = sum(colours.values())
    if total == 0:
        return 0.0, 0
    return 1.0 - colours[background] / total, len(colours)


def run_problems(returncode: int, png: Path) -> tuple[list[str], dict[str, object]]:
    """What went wrong in a run that should have painted ``png`` and quit (empty: nothing),
    and the app's record of that screenshot (``<png>.json``; empty when missing)."""
    problems = [] if returncode == 0 else [f"exit status {returncode}"]
    try:
        record = json.loads(png.with_suffix(".png.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        record = {}
        problems.append(f"no screenshot record: {exc}")
    if record:
        problems += check_screenshot(png, record)
    return problems, record


def check_screenshot(png: Path, record: dict[str, object]) -> list[str]:
    """What is wrong with the screenshot (an empty list: it shows a painted window)."""
    problems: list[str] = []
    if record.get("platform") != "xcb":
        problems.append(f"the app ran on {record.get('platform')!r}, not xcb")
    if record.get("error"):
        problems.append(f"the app could not take the screenshot: {record['error']}")
    if not record.get("saved") or not png.is_file():
        return [*problems, "no screenshot was saved"]
    width, _height, data = _pixels(png)
    background = collections.Counter(data).most_common(1)[0][0]
    for name in ("tree", "chat"):
        rect = record.get(name)
        if not (isinstance(rect, list) and len(rect) == 4):
            problems.append(f"the {name} region was not visible")
            continue
        share, colours = region_figures(width, data, [int(v) for v in rect], background)
        print(f"xvfb-smoke: {name} region {rect}: {share:.1%} of pixels differ from the "
              f"background #{background & 0xFFFFFF:06x}, {colours} colours", flush=True)
        if share < MIN_DIFFERENT or colours < MIN_COLOURS:
            problems.append(f"the {name} region looks blank ({share:.2%} differ, {colours} colours)")
    return problems


# --------------------------------------------------------------------------- the run


def command(which: str, data_dir: Path) -> list[str]:
    args = ["--demo", "--data-dir", str(data_dir)]
    if which == "frozen":
        if not DIST_EXE.is_file():
            raise RuntimeError(f"{DIST_EXE.relative_to(ROOT)} is missing: run `make dist` first")
        return [str(DIST_EXE), *args]
    return [sys.executable, "-m", "nocturne_desktop", *args]


def run(which: str, keep: Path | None) -> int:
    try:
        ensure_tools()
    except Skip as exc:
        print(f"xvfb-smoke ({which}): skipped: {exc}", flush=True)
        return 1 if os.environ.get("XVFB_SMOKE_REQUIRED") == "1" else 0
    with tempfile.TemporaryDirectory(prefix="nocturne-xvfb-") as tmp, xvfb() as display:
        scratch = Path(tmp)
        png = scratch / f"xvfb-{which}.png"
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY",)}
        env.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", NOCTURNE_SCREENSHOT=str(png),
                   XDG_CONFIG_HOME=str(scratch / "config"), XDG_DATA_HOME=str(scratch / "data"),
                   NOCTURNE_CONFIG_DIR=str(scratch / "config" / "Nocturne"), PYTHONPATH=str(ROOT))
        env.pop("NOCTURNE_SKIP_PLATFORM_CHECK", None)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(command(which, scratch / "demo"), env=env, cwd=scratch,
                                  capture_output=True, text=True, timeout=RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            print(f"xvfb-smoke ({which}): FAILED: the app did not quit within {RUN_LIMIT_S:.0f}s",
                  file=sys.stderr)
            return 1
        elapsed = time.monotonic() - t0
        problems, _record = run_problems(proc.returncode, png)
        if keep is not None and png.is_file():
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(png, keep / png.name)
        if problems:
            sys.stderr.write(proc.stderr[-4000:])
            print(f"xvfb-smoke ({which}): FAILED: " + "; ".join(problems), file=sys.stderr)
            return 1
    print(f"xvfb-smoke ({which}): the window painted on xcb under Xvfb and quit by itself in "
          f"{elapsed:.1f}s" + (f"; screenshot in {keep / png.name}" if keep else ""), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", choices=("source", "frozen"))
    p.add_argument("--keep", type=Path, help="copy the screenshot into this folder")
    args = p.parse_args(argv)
    return run(args.which, args.keep)


if __name__ == "__main__":
    raise SystemExit(main())
