#!/usr/bin/env python3
"""Build Nocturne's installable Linux packages from the frozen folder, and check them installed.

    python scripts/package.py build   # build/package/: nocturne_<v>_<arch>.deb, Nocturne-<v>-linux-<m>.tar.gz
    python scripts/package.py sizes   # the app folder's size, in all and without model weights

``make package`` calls it from the project's virtual environment; ``scripts/package_check.py``
(``make package-check``) installs both packages, starts them and removes them again.

Both packages carry one app folder: ``dist/Nocturne/`` (``make dist``, PyInstaller) plus the
*engine pack* ``engine/`` beside the executable, which the app finds by itself
(:func:`nocturne_desktop.llm.engine.find_engine`): llama-server and llama.cpp's shared
libraries from the engine cache (``make engine``), the C++ runtime libraries they need that are
not part of glibc (so they run on a machine without a toolchain), and the SmolLM2-135M weights.

* the ``.deb`` installs the folder as ``/opt/nocturne``, a ``/usr/bin/nocturne`` launcher, the
  desktop entry (``Exec=/opt/nocturne/Nocturne``), the icons in the hicolor theme and the
  AppStream metainfo; its ``Depends`` are the system packages of the libraries the folder links
  but does not carry, found with ``dpkg -S``;
* the ``.tar.gz`` holds the folder, the same desktop files and ``install.sh``/``uninstall.sh``,
  which install per user under ``~/.local`` and remove it again, never the memory.

A build is reused when its inputs (the frozen folder's source hash, the engine manifest, this
script and the resources) are unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nocturne_desktop import __version__  # noqa: E402
from nocturne_desktop.llm.engine import MANIFEST, MANIFEST_SCHEMA, engine_dir  # noqa: E402

DIST = ROOT / "dist" / "Nocturne"
OUT = ROOT / "build" / "package"
RESOURCES = ROOT / "resources"
PACKAGE = "nocturne"
APP_ID = "org.nocturne.desktop"
DESKTOP = "nocturne.desktop"
INSTALL_DIR = "/opt/nocturne"
ENGINE = "engine"
INPUTS_FILE = ".inputs-hash"
MAINTAINER = "The Nocturne developers <noreply@nocturne.invalid>"
SIZE_LIMIT = 350_000_000
SIZE_LIMIT_NO_WEIGHTS = 200_000_000
WEIGHTS = (".gguf", ".safetensors")
SYSTEM = re.compile(r"^(libc|libm|libdl|libpthread|librt|libutil|libresolv|libanl|ld-linux[-\w]*"
                    r"|libmvec|libgcc_s)\.so(\.\d+)*$")
"""What the engine pack takes from the system: glibc's own libraries (its version is the
package's ``libc6`` dependency) and libgcc_s, which every glibc system has (glibc itself loads
it to unwind threads)."""
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def say(msg: str) -> None:
    print(f"package: {msg}", flush=True)


def shown(path: Path) -> str:
    """``path`` relative to the project when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class PackageError(Exception):
    pass


def arch_names() -> tuple[str, str]:
    """(Debian architecture, machine name): ``amd64``/``x86_64``, ``arm64``/``aarch64``."""
    machine = platform.machine()
    deb = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armhf", "i686": "i386"}
    return deb.get(machine, machine), machine


def deb_name() -> str:
    return f"{PACKAGE}_{__version__}_{arch_names()[0]}.deb"


def tar_root() -> str:
    return f"Nocturne-{__version__}-linux-{arch_names()[1]}"


# --------------------------------------------------------------------------- the engine pack


def cached_engine() -> tuple[Path, dict[str, object]]:
    """The engine cache folder and its manifest (``make engine`` writes them)."""
    root = engine_dir()
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PackageError(f"the built-in engine is not built ({root / MANIFEST}: {exc}); "
                           "run `make engine` first") from exc
    for key in ("server", "model"):
        if not (root / str(manifest.get(key, ""))).is_file():
            raise PackageError(f"the engine cache is incomplete (no {key}); run `make engine`")
    return root, manifest


def is_elf(path: Path) -> bool:
    return bool(load_dist().is_elf(path))


def ldd(path: Path) -> dict[str, str | None]:
    """soname → resolved path (None: not found) for every library ``path`` loads."""
    proc = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False,
                          env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    out: dict[str, str | None] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            out[m.group(1)] = m.group(3)
    return out


def copy_links(src: Path, dest: Path) -> None:
    """Copy a file, or a symbolic link as a link."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dest)
    else:
        shutil.copy2(src, dest)


def make_engine_pack(dest: Path) -> dict[str, object]:
    """Lay out the engine pack in ``dest`` from the engine cache; returns its manifest."""
    root, manifest = cached_engine()
    server = root / str(manifest["server"])
    model = root / str(manifest["model"])
    (dest / "bin").mkdir(parents=True)
    (dest / "lib").mkdir()
    (dest / "models").mkdir()
    (dest / "licenses").mkdir()
    shutil.copy2(server, dest / "bin" / server.name)
    libs = server.parent.parent / "lib"
    if libs.is_dir():
        for lib in sorted(libs.iterdir()):
            copy_links(lib, dest / "lib" / lib.name)
    # the build keeps its symbol tables (a Release build without -s); the pack needs none
    load_dist().strip_libraries(elf_files(dest / "bin") + elf_files(dest / "lib"))
    runtime = bundle_runtime(dest)
    shutil.copy2(model, dest / "models" / model.name)
    for lic, name in ((server.parent.parent / "LICENSE-llama.cpp", "llama.cpp.txt"),
                      (model.parent / "LICENSE", f"{manifest.get('model_name', 'model')}.txt")):
        if lic.is_file():
            shutil.copy2(lic, dest / "licenses" / name)
    pack = {"schema": MANIFEST_SCHEMA, "server": f"bin/{server.name}",
            "model": f"models/{model.name}", "model_name": manifest.get("model_name"),
            "server_version": manifest.get("server_version"),
            "llama_cpp_python": manifest.get("llama_cpp_python"),
            "runtime_libraries": runtime, "packaged": True}
    (dest / MANIFEST).write_text(json.dumps(pack, indent=2) + "\n", encoding="utf-8")
    return pack


def bundle_runtime(pack: Path) -> list[str]:
    """Copy into ``pack/lib`` every library the pack's programs load from the system that is
    not glibc (the C++ runtime, OpenMP): a machine without a toolchain may lack them, or have
    older ones. The binaries' run path (``$ORIGIN/../lib``) finds them there first."""
    added: list[str] = []
    for elf in elf_files(pack / "bin"):  # ldd of a program lists its whole closure
        for soname, where in ldd(elf).items():
            if where is None or SYSTEM.match(soname) or (pack / "lib" / soname).exists():
                continue
            if Path(where).resolve().is_relative_to(pack.resolve()):
                continue
            shutil.copy2(Path(where).resolve(), pack / "lib" / soname)
            added.append(soname)
    return sorted(added)


def elf_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and is_elf(p))


def check_engine_pack(pack: Path) -> list[str]:
    """What would stop the pack's programs on another machine: a library not found, or one
    taken from outside the pack that is not the system's own (empty: nothing)."""
    problems = []
    for elf in elf_files(pack / "bin"):
        for soname, where in ldd(elf).items():
            if where is None:
                problems.append(f"{elf.relative_to(pack)}: {soname} not found")
            elif not SYSTEM.match(soname) and not Path(where).resolve().is_relative_to(
                    pack.resolve()):
                problems.append(f"{elf.relative_to(pack)}: {soname} from {where}")
    return problems


def glibc_floor(folder: Path) -> str | None:
    """The newest ``GLIBC_x.y`` symbol version any ELF file in ``folder`` needs."""
    best: tuple[int, ...] = ()
    for elf in elf_files(folder):
        proc = subprocess.run(["objdump", "-T", str(elf)], capture_output=True, text=True,
                              check=False)
        for m in re.finditer(r"\bGLIBC_(\d+(?:\.\d+)+)\b", proc.stdout):
            best = max(best, tuple(int(x) for x in m.group(1).split(".")))
    return ".".join(map(str, best)) if best else None


# --------------------------------------------------------------------------- the app folder


def folder_sizes(folder: Path) -> tuple[int, int]:
    """(bytes in all, bytes without model weights) of the files under ``folder``."""
    total = weights = 0
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            size = p.stat().st_size
            total += size
            if p.name.endswith(WEIGHTS):
                weights += size
    return total, total - weights


def make_app_folder(dest: Path) -> dict[str, object]:
    """``dest`` = the frozen folder + its engine pack; returns the pack's manifest."""
    if not (DIST / "Nocturne").is_file():
        raise PackageError(f"{shown(DIST)} is missing: run `make dist` first")
    shutil.copytree(DIST, dest, symlinks=True, ignore=shutil.ignore_patterns(".source-hash"))
    pack = make_engine_pack(dest / ENGINE)
    problems = check_engine_pack(dest / ENGINE)
    if problems:
        raise PackageError("the engine pack would not run on another machine:\n  "
                           + "\n  ".join(problems) + "\n(an engine built before llama-server "
                           "had its shared libraries: `make engine` rebuilds it)")
    for path in [dest, *dest.rglob("*")]:
        if path.is_symlink():
            continue
        executable = path.is_dir() or bool(path.stat().st_mode & 0o111)
        path.chmod(0o755 if executable else 0o644)
    return pack


# --------------------------------------------------------------------------- shared files


def desktop_entry(exec_path: str) -> str:
    text = (RESOURCES / DESKTOP).read_text(encoding="utf-8")
    text = re.sub(r"(?m)^Exec=.*$", f"Exec={exec_path}", text)
    return re.sub(r"(?m)^TryExec=.*$", f"TryExec={exec_path}", text)


def metainfo() -> str:
    text = (RESOURCES / "linux" / f"{APP_ID}.metainfo.xml").read_text(encoding="utf-8")
    return text.replace("@VERSION@", __version__).replace("@DATE@", time.strftime("%Y-%m-%d"))


def share_tree(share: Path, exec_path: str) -> None:
    """``share/{applications, icons/hicolor, metainfo}`` as both packages install them."""
    (share / "applications").mkdir(parents=True)
    (share / "applications" / DESKTOP).write_text(desktop_entry(exec_path), encoding="utf-8")
    for size in ICON_SIZES:
        icon = share / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "nocturne.png"
        icon.parent.mkdir(parents=True)
        shutil.copy2(RESOURCES / "icons" / f"nocturne-{size}.png", icon)
    scalable = share / "icons" / "hicolor" / "scalable" / "apps" / "nocturne.svg"
    scalable.parent.mkdir(parents=True)
    shutil.copy2(RESOURCES / "nocturne.svg", scalable)
    (share / "metainfo").mkdir()
    (share / "metainfo" / f"{APP_ID}.metainfo.xml").write_text(metainfo(), encoding="utf-8")
    for p in [share, *share.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


COPYRIGHT = """\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: Nocturne Desktop

Files: *
License: MIT

Files: opt/nocturne/_internal/PySide6/* opt/nocturne/_internal/shiboken6/*
License: LGPL-3.0-only
Comment: Qt for Python and the Qt libraries it carries.

Files: opt/nocturne/engine/bin/* opt/nocturne/engine/lib/libllama* opt/nocturne/engine/lib/libggml*
License: MIT
Comment: llama.cpp (opt/nocturne/engine/licenses/llama.cpp.txt).

Files: opt/nocturne/engine/models/*
License: Apache-2.0
Comment: SmolLM2-135M-Instruct by Hugging Face (opt/nocturne/engine/licenses/).

Files: opt/nocturne/engine/lib/libstdc++* opt/nocturne/engine/lib/libgcc_s* opt/nocturne/engine/lib/libgomp*
License: GPL-3.0-or-later WITH GCC-exception-3.1
"""


# --------------------------------------------------------------------------- the .deb


def deb_depends(app: Path, glibc: str | None) -> list[str]:
    """The packages of the system libraries the app folder links but does not carry (what
    ``dpkg-shlibdeps`` would say), with ``libc6`` at ``glibc``, the version the folder needs."""
    carried = {p.name for p in app.rglob("*") if ".so" in p.name}
    wanted: set[str] = set()
    for elf in elf_files(app):
        for soname, where in ldd(elf).items():
            if where is None or soname in carried:
                continue
            if Path(where).resolve().is_relative_to(app.resolve()):
                continue
            wanted.add(str(Path(where).resolve()))
    packages: set[str] = set()
    for path in sorted(wanted):
        proc = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
        if proc.returncode != 0:  # a merged-/usr path dpkg knows under /lib
            alt = re.sub(r"^/usr(/lib)", r"\1", path)
            proc = subprocess.run(["dpkg", "-S", alt], capture_output=True, text=True,
                                  check=False)
        if proc.returncode == 0:
            packages.add(proc.stdout.split(":")[0].strip())
    packages.discard("libc6")
    return [f"libc6 (>= {glibc})" if glibc else "libc6", *sorted(packages)]


DEB_COMPRESSION = ["-Zzstd", "-z9"]
"""zstd: every dpkg that can install this package reads it (dpkg ≥ 1.21.18, 2022; the app needs
a glibc of that age anyway), and it packs the folder several times faster than xz."""


def build_deb(app: Path, out: Path, glibc: str | None) -> Path:
    """The .deb, from the app folder ``app`` (moved into the package tree, then deleted)."""
    tree = out / "deb-root"
    shutil.rmtree(tree, ignore_errors=True)
    opt = tree / INSTALL_DIR.lstrip("/")
    opt.parent.mkdir(parents=True)
    os.replace(app, opt)
    (tree / "usr" / "bin").mkdir(parents=True)
    launcher = tree / "usr" / "bin" / PACKAGE
    launcher.write_text(f'#!/bin/sh\nexec {INSTALL_DIR}/Nocturne "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    share_tree(tree / "usr" / "share", f"{INSTALL_DIR}/Nocturne")
    doc = tree / "usr" / "share" / "doc" / PACKAGE
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(COPYRIGHT, encoding="utf-8")
    depends = deb_depends(opt, glibc) if shutil.which("dpkg") else ["libc6"]
    installed_kib = sum(p.stat().st_size for p in tree.rglob("*")
                        if p.is_file() and not p.is_symlink()) // 1024
    control = tree / "DEBIAN" / "control"
    control.parent.mkdir()
    control.write_text(
        f"Package: {PACKAGE}\n"
        f"Version: {__version__}\n"
        f"Architecture: {arch_names()[0]}\n"
        f"Maintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {', '.join(depends)}\n"
        "Section: utils\n"
        "Priority: optional\n"
        "Description: chat agent whose long-term memory you can see, audit and undo\n"
        " Nocturne chats with a local model (LM Studio, Ollama, llama.cpp, any\n"
        " OpenAI-compatible server, or the tiny built-in engine it carries) and keeps\n"
        " the facts of the conversation in a local memory you can browse, correct,\n"
        " consolidate with a Sleep that code gates, compare and undo.\n",
        encoding="utf-8")
    for p in [tree, *tree.rglob("*")]:
        if not p.is_symlink() and p.is_dir():
            p.chmod(0o755)
    target = out / deb_name()
    cmd = ["dpkg-deb", "--root-owner-group", *DEB_COMPRESSION, "--build", str(tree), str(target)]
    say("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    shutil.rmtree(tree, ignore_errors=True)
    if proc.returncode != 0:
        raise PackageError(f"dpkg-deb failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    say(f"Depends: {', '.join(depends)}")
    return target


# --------------------------------------------------------------------------- the .tar.gz


def build_tar(app: Path, out: Path) -> Path:
    base = tar_root()
    tree = out / "tar-root" / base
    shutil.rmtree(tree.parent, ignore_errors=True)
    tree.mkdir(parents=True)
    shutil.copytree(app, tree / "Nocturne", symlinks=True)
    share_tree(tree / "share", f"{INSTALL_DIR}/Nocturne")  # install.sh rewrites Exec
    for script in ("install.sh", "uninstall.sh"):
        shutil.copy2(RESOURCES / "linux" / script, tree / script)
        (tree / script).chmod(0o755)
    (tree / "README.txt").write_text(
        f"Nocturne {__version__} for Linux ({arch_names()[1]})\n\n"
        "Install for yourself (no root needed): ./install.sh\n"
        "  the app goes to ~/.local/lib/nocturne, the command to ~/.local/bin/nocturne, and\n"
        "  Nocturne appears in the applications menu.\n"
        "Remove it: ~/.local/lib/nocturne/uninstall.sh (or ./install.sh --uninstall).\n"
        "Your memory (~/.local/share/Nocturne) is never touched by either.\n\n"
        "Or run it from here without installing: ./Nocturne/Nocturne\n", encoding="utf-8")
    target = out / f"{base}.tar.gz"
    tmp = target.with_name(target.name + ".tmp")

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6,
                                              mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(tree, arcname=base, filter=owned_by_root)
    os.replace(tmp, target)
    return target


# --------------------------------------------------------------------------- build


@functools.cache
def load_dist() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nocturne_dist_script",
                                                  ROOT / "scripts" / "dist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs_hash() -> str:
    """What the packages are made of: the frozen folder's source hash, the engine manifest,
    the engine's files' sizes and times, this script and the resources it copies."""
    h = hashlib.sha256()
    with contextlib.suppress(OSError):
        h.update((DIST / ".source-hash").read_bytes())
    root = engine_dir()
    with contextlib.suppress(OSError, PackageError):
        h.update((root / MANIFEST).read_bytes())
        _, manifest = cached_engine()
        used = [(root / str(manifest[key])).parent for key in ("server", "model")]
        used[0] = used[0].parent  # the server's folder: bin/ and lib/
        for p in sorted(p for folder in used for p in folder.rglob("*") if p.is_file()):
            st = p.lstat()
            h.update(f"{p.relative_to(root)} {st.st_size} {st.st_mtime_ns}\n".encode())
    for p in [Path(__file__), *sorted(q for q in RESOURCES.rglob("*") if q.is_file())]:
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def outputs() -> list[Path]:
    return [OUT / deb_name(), OUT / f"{tar_root()}.tar.gz"]


def build(force: bool = False) -> int:
    if not sys.platform.startswith("linux"):
        say("the .deb and .tar.gz packages are built on Linux only; skipped")
        return 0
    dist = load_dist()
    status = dist.build()
    if status != 0:
        return int(status)
    digest = inputs_hash()
    stamp = OUT / INPUTS_FILE
    if (not force and all(p.is_file() for p in outputs())
            and stamp.is_file() and stamp.read_text().strip() == digest):
        say("packages are up to date (same frozen folder, engine and resources); not rebuilt")
        return 0
    t0 = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        stamp.unlink()
    app = OUT / "app"
    shutil.rmtree(app, ignore_errors=True)
    try:
        sizes = make_packages(app)
    except PackageError as exc:
        print(f"package: {exc}", file=sys.stderr)
        return 1
    finally:
        for leftover in (app, OUT / "tar-root", OUT / "deb-root"):
            shutil.rmtree(leftover, ignore_errors=True)
    (OUT / "sizes.json").write_text(json.dumps(sizes, indent=2) + "\n", encoding="utf-8")
    if shutil.which("dpkg-deb"):
        stamp.write_text(digest + "\n")
    else:
        say("dpkg-deb is not installed: no .deb built (apt-get install dpkg)")
    say(f"done in {time.monotonic() - t0:.0f}s")
    return 0


def make_packages(app: Path) -> dict[str, object]:
    """The app folder in ``app``, within its budget, then the .tar.gz and the .deb from it;
    returns the sizes."""
    t0 = time.monotonic()
    pack = make_app_folder(app)
    glibc = glibc_floor(app)
    total, bare = folder_sizes(app)
    engine_total, _ = folder_sizes(app / ENGINE)
    sizes: dict[str, object] = {
        "app_folder": total, "without_weights": bare, "engine_pack": engine_total,
        "glibc_needed": glibc, "runtime_libraries": pack["runtime_libraries"]}
    say(f"app folder {total / 1e6:.1f} MB (engine pack {engine_total / 1e6:.1f} MB); "
        f"{bare / 1e6:.1f} MB without model weights; needs glibc ≥ {sizes['glibc_needed']}; "
        f"carries {', '.join(map(str, pack['runtime_libraries'])) or 'no runtime libraries'}")
    over = []
    if total > SIZE_LIMIT:
        over.append(f"{total / 1e6:.1f} MB > {SIZE_LIMIT / 1e6:.0f} MB in all")
    if bare > SIZE_LIMIT_NO_WEIGHTS:
        over.append(f"{bare / 1e6:.1f} MB > {SIZE_LIMIT_NO_WEIGHTS / 1e6:.0f} MB without weights")
    if over:
        raise PackageError("the app folder is over its budget: " + "; ".join(over))
    say(f"app folder laid out and checked in {time.monotonic() - t0:.0f}s")
    makers = [build_tar] + ([lambda a, o: build_deb(a, o, glibc)] if shutil.which("dpkg-deb")
                            else [])
    for make in makers:
        t0 = time.monotonic()
        target = make(app, OUT)
        sizes[target.name] = target.stat().st_size
        say(f"built {shown(target)} ({target.stat().st_size / 1e6:.1f} MB) in "
            f"{time.monotonic() - t0:.0f}s")
    return sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("build", "sizes"))
    p.add_argument("--force", action="store_true", help="rebuild even when the inputs match")
    args = p.parse_args(argv)
    if args.action == "build":
        return build(force=args.force)
    print((OUT / "sizes.json").read_text() if (OUT / "sizes.json").is_file()
          else "no sizes yet: run `make package`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
