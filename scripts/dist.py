#!/usr/bin/env python3
"""Build the one-folder binary (``dist/Nocturne/``) and smoke-test it.

    python scripts/dist.py build   # PyInstaller, skipped when dist/ was built from these sources
    python scripts/dist.py smoke   # build if needed, then dist/Nocturne/Nocturne --self-test
    python scripts/dist.py hash    # print the source hash

``make dist`` and ``make smoke`` call these from the project's virtual environment.

The source hash covers every file under ``nocturne_desktop/`` (no caches), ``nocturne.spec``,
``pyproject.toml``, plus the versions of Python, PyInstaller and every bundled dependency: the same
sources built by the same tools give the same binary, so the build is reused. It is written to
``dist/Nocturne/.source-hash`` only after a successful build.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist" / "Nocturne"
EXE = DIST / ("Nocturne.exe" if os.name == "nt" else "Nocturne")
HASH_FILE = DIST / ".source-hash"
REPORT = ROOT / "build" / "selftest-report.json"
SMOKE_LIMIT_S = 20.0
BUNDLED_DISTRIBUTIONS = ("PySide6-Essentials", "shiboken6", "httpx", "httpcore", "pydantic",
                         "pydantic-core", "platformdirs", "numpy", "tokenizers", "safetensors",
                         "wordllama", "pyinstaller", "pyinstaller-hooks-contrib")
"""Installed packages whose version changes the binary (part of the source hash)."""
SKIP_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def source_files(root: Path = ROOT) -> list[Path]:
    files = [p for p in (root / "nocturne_desktop").rglob("*")
             if p.is_file() and not SKIP_PARTS.intersection(p.parts) and p.suffix not in (".pyc", ".pyo")]
    files += [root / "nocturne.spec", root / "pyproject.toml"]
    files += [p for p in (root / "scripts" / "dist.py",) if p.is_file()]  # how it is stripped
    return sorted(files)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def unbundlable_xcb_libraries() -> list[str]:
    """The xcb plugin's system libraries missing on this build machine (Linux): PyInstaller
    bundles the ones it finds, so a binary built without them needs them on every desktop."""
    if not sys.platform.startswith("linux"):
        return []
    sys.path.insert(0, str(ROOT))
    try:
        from nocturne_desktop.boot import platformcheck
    finally:
        sys.path.remove(str(ROOT))
    plugin = platformcheck.plugin_path()
    return platformcheck.missing_libraries(plugin) if plugin is not None else []


def source_hash(root: Path = ROOT) -> str:
    h = hashlib.sha256()
    tools = f"python {platform.python_version()} {sys.platform} {platform.machine()}; " + "; ".join(
        f"{d} {_version(d)}" for d in BUNDLED_DISTRIBUTIONS)
    # installing a missing xcb library changes what the binary carries
    tools += "; xcb missing: " + ",".join(unbundlable_xcb_libraries())
    h.update(tools.encode())
    for path in source_files(root):
        h.update(b"\0" + path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def strippable(folder: Path) -> list[Path]:
    """The shared libraries and extension modules under ``folder`` that ``strip`` may touch:
    not links, and not the libraries a wheel vendors in a ``<name>.libs/`` folder (auditwheel
    rewrote those with patchelf, and strip then leaves them unloadable: "ELF load command
    address/offset not page-aligned", seen with numpy's OpenBLAS and gfortran)."""
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and ".so" in p.name
                  and not any(part.endswith(".libs") for part in p.relative_to(folder).parts)
                  and is_elf(p))


def strip_libraries(paths: list[Path]) -> int:
    """``strip --strip-unneeded`` each of ``paths`` (symbol tables and debug sections only: what
    the loader needs stays); returns the bytes saved, 0 where there is no ``strip``."""
    tool = shutil.which("strip")
    if tool is None or not paths:
        return 0
    before = sum(p.stat().st_size for p in paths)
    for chunk in range(0, len(paths), 200):
        subprocess.run([tool, "--strip-unneeded", *map(str, paths[chunk:chunk + 200])],
                       check=True, capture_output=True)
    return before - sum(p.stat().st_size for p in paths)


def up_to_date() -> bool:
    try:
        return EXE.is_file() and HASH_FILE.read_text().strip() == source_hash()
    except OSError:
        return False


def build(force: bool = False) -> int:
    if not force and up_to_date():
        print(f"dist: {DIST.relative_to(ROOT)} is up to date (source hash matches); not rebuilding")
        return 0
    digest = source_hash()
    missing = unbundlable_xcb_libraries()
    if missing:
        print("dist: WARNING: this machine lacks " + ", ".join(missing) + ", so the binary will "
              "not carry them and needs them installed wherever it runs (it says so at start-up). "
              "Install them before building to bundle them.", file=sys.stderr, flush=True)
    with contextlib.suppress(FileNotFoundError):
        HASH_FILE.unlink()
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "nocturne.spec"]
    print("dist: " + " ".join(cmd[2:]), flush=True)
    result = subprocess.run(cmd, cwd=ROOT)
    if result.returncode != 0:
        print(f"dist: PyInstaller failed (exit {result.returncode})", file=sys.stderr)
        return result.returncode
    if not EXE.is_file():
        print(f"dist: PyInstaller finished but {EXE} is missing", file=sys.stderr)
        return 1
    # PyInstaller's own strip option would take the wheels' vendored libraries too (see
    # strippable); the executable is left as PyInstaller made it (its archive is appended)
    saved = strip_libraries(strippable(DIST)) if sys.platform.startswith("linux") else 0
    HASH_FILE.write_text(digest + "\n")
    size = folder_size(DIST)
    print(f"dist: built {DIST.relative_to(ROOT)} in {time.monotonic() - t0:.0f}s, "
          f"{size / 1e6:.1f} MB ({saved / 1e6:.1f} MB of symbols stripped)")
    return 0


def smoke() -> int:
    status = build()
    if status != 0:
        return status
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        REPORT.unlink()
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    t0 = time.monotonic()
    try:
        proc = subprocess.run([str(EXE), "--self-test", "--self-test-report", str(REPORT)],
                              env=env, timeout=SMOKE_LIMIT_S + 10, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        print(f"smoke: {EXE.name} --self-test did not exit within {SMOKE_LIMIT_S + 10:.0f}s",
              file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0
    sys.stdout.write(proc.stdout)
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    try:
        report = json.loads(REPORT.read_text())
    except (OSError, ValueError) as exc:
        problems.append(f"no readable report at {REPORT}: {exc}")
        report = {}
    if report:
        if report.get("ok") is not True:
            bad = [s for s in report.get("steps", []) if not s.get("ok")]
            problems.append(f"report says not ok: {bad[:1]}")
        if report.get("frozen") is not True:
            problems.append("the report was not written by a frozen build")
    if elapsed > SMOKE_LIMIT_S:
        problems.append(f"took {elapsed:.1f}s (limit {SMOKE_LIMIT_S:g}s)")
    if problems:
        sys.stderr.write(proc.stderr[-4000:])
        print("smoke: FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"smoke: frozen self-test passed in {elapsed:.1f}s "
          f"({report.get('window')}, {report.get('qt')}); dist {folder_size(DIST) / 1e6:.1f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("build", "smoke", "hash", "clean"))
    p.add_argument("--force", action="store_true", help="rebuild even when the hash matches")
    args = p.parse_args(argv)
    if args.action == "hash":
        print(source_hash())
        return 0
    if args.action == "clean":
        shutil.rmtree(DIST, ignore_errors=True)
        shutil.rmtree(ROOT / "build" / "nocturne", ignore_errors=True)
        return 0
    if args.action == "build":
        return build(force=args.force)
    return smoke()


if __name__ == "__main__":
    raise SystemExit(main())
