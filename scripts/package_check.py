#!/usr/bin/env python3
"""Install the packages ``make package`` built, use them as a person would, remove them again.

    python scripts/package_check.py         # both checks (``make package-check``)
    python scripts/package_check.py deb     # or one of them
    python scripts/package_check.py tar

**The .deb** (as root, where dpkg exists; skipped with the reason otherwise):

1. a person's memory exists in their default data folder (a scratch ``HOME``): a real store
   with turns and facts;
2. ``dpkg -i`` (``apt-get -f install`` when a dependency is missing);
3. the launcher, the desktop entry (``Exec=/opt/nocturne/Nocturne``; ``desktop-file-validate``
   and ``appstreamcli validate`` when installed), the hicolor icons and the metainfo are there;
4. the engine pack, found in ``/opt/nocturne/engine`` as the app finds it, loads no library
   from outside the pack but glibc's, and its llama-server answers a chat request with the
   SmolLM2 weights — run with the system's C++ runtime and OpenMP libraries hidden (a private
   mount namespace binds ``/dev/null`` over them), as on a machine without a toolchain;
5. the app is started from the desktop entry's ``Exec`` under Xvfb with the person's ``HOME``:
   it opens their memory on Qt's xcb platform, paints (the screenshot is checked as
   ``scripts/xvfb_smoke.py`` checks it) and quits;
6. ``nocturne --self-test`` (the launcher on ``PATH``) passes;
7. ``dpkg -r``, then ``dpkg -P``: the app folder, the launcher and the entry are gone, and the
   person's memory folder is byte for byte what it was.

**The .tar.gz** (any user): unpack, ``install.sh`` with a scratch ``HOME``; the installed
entry's ``Exec`` runs ``--self-test``; the engine pack is found beside the installed app and its
server runs; ``uninstall.sh`` removes every file the install wrote and leaves the memory folder
as it was.

``PACKAGE_CHECK_REQUIRED=1`` makes a skip a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nocturne_desktop.core.store import Store  # noqa: E402
from nocturne_desktop.core.types import FactDraft  # noqa: E402
from nocturne_desktop.llm.engine import EnginePaths, LocalEngine, engine_in  # noqa: E402

RUN_LIMIT_S = 90.0
INSTALLED = Path("/opt/nocturne")
ENTRY = Path("/usr/share/applications/nocturne.desktop")
FIELD_CODES = {"%f", "%F", "%u", "%U", "%i", "%c", "%k"}


class Skip(Exception):
    """This check cannot run here; the message says why."""


class CheckFailed(Exception):
    pass


def say(msg: str) -> None:
    print(f"package-check: {msg}", flush=True)


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"nocturne_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 300,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise CheckFailed(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                          f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


# --------------------------------------------------------------------------- a person


def person_env(home: Path) -> dict[str, str]:
    """The environment of a person whose folders are the defaults under ``home``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "NOCTURNE_", "QT_")) and k not in (
               "WAYLAND_DISPLAY", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH")}
    env["HOME"] = str(home)
    return env


def make_memory(home: Path) -> Path:
    """A person's memory in their default data folder, as the app writes it; returns the folder."""
    folder = home / ".local" / "share" / "Nocturne"
    with Store(folder / "nocturne.db") as store:
        n = store.add_turn("user", "I'm Maya. I live in Lisbon and I keep a bearded dragon.").n
        store.add_turn("assistant", "Nice to meet you, Maya.")
        store.append("human", FactDraft("The user lives in Lisbon.", "identity", n, time.time()))
        store.append("human", FactDraft("The user keeps a bearded dragon.", "preferences", n,
                                        time.time()))
    return folder


def folder_digest(folder: Path) -> dict[str, str]:
    """relative path → sha256 of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def memory_facts(folder: Path) -> list[str]:
    with Store(folder / "nocturne.db") as store:
        return sorted(f.text for f in store.active_facts())


# --------------------------------------------------------------------------- the desktop entry


def entry_exec(entry: Path) -> list[str]:
    """The command a menu runs for ``entry``: its ``Exec`` split as the desktop entry
    specification says, without field codes."""
    for line in entry.read_text(encoding="utf-8").splitlines():
        if line.startswith("Exec="):
            return [a for a in shlex.split(line[len("Exec="):]) if a not in FIELD_CODES]
    raise CheckFailed(f"{entry} has no Exec line")


def validate_desktop_files(entry: Path, metainfo: Path) -> list[str]:
    """Problems the freedesktop validators find (each runs only when installed)."""
    problems = []
    if shutil.which("desktop-file-validate"):
        proc = run(["desktop-file-validate", str(entry)], check=False)
        if proc.returncode != 0 or "error:" in proc.stdout:
            problems.append(f"desktop-file-validate: {proc.stdout.strip()}")
    if shutil.which("appstreamcli"):
        proc = run(["appstreamcli", "validate", "--no-net", str(metainfo)], check=False)
        if proc.returncode != 0:
            problems.append(f"appstreamcli validate: {proc.stdout.strip()}")
    return problems


# --------------------------------------------------------------------------- the engine pack


def hidden_runtime(pack: Path) -> list[Path]:
    """The system's own copies of the runtime libraries the pack carries (what a machine
    without a toolchain may lack)."""
    manifest = json.loads((pack / "engine.json").read_text(encoding="utf-8"))
    names = manifest.get("runtime_libraries") or []
    found = []
    for line in run(["ldconfig", "-p"], check=False).stdout.splitlines():
        name = line.strip().split(" ", 1)[0]
        if name in names and "=>" in line:
            found.append(Path(line.rsplit("=>", 1)[1].strip()).resolve())
    return sorted(set(found))


def can_hide() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return run(["unshare", "-m", "true"], check=False).returncode == 0


class HiddenRuntimeEngine(LocalEngine):
    """llama-server in a private mount namespace where ``hide``'s files read as empty."""

    def __init__(self, paths: EnginePaths, hide: list[Path], **kw: Any) -> None:
        super().__init__(paths, **kw)
        self.hide = hide

    def command(self, port: int) -> list[str]:
        mounts = " && ".join(f"mount --bind /dev/null {shlex.quote(str(p))}" for p in self.hide)
        script = (mounts + " && " if mounts else "") + 'exec "$@"'
        return ["unshare", "-m", "sh", "-c", script, "sh", *super().command(port)]


def check_engine(pack: Path) -> str:
    """Find the pack as the app does, check its libraries, and get a reply from its server."""
    package = load("package")
    paths = engine_in(pack)
    if paths is None:
        raise CheckFailed(f"no complete engine pack in {pack}")
    problems = package.check_engine_pack(pack)
    if problems:
        raise CheckFailed("the engine pack loads libraries from outside itself:\n  "
                          + "\n  ".join(problems))
    hide = hidden_runtime(pack) if can_hide() else []
    engine: LocalEngine = (HiddenRuntimeEngine(paths, hide, ctx_size=1024) if hide
                           else LocalEngine(paths, ctx_size=1024))
    with engine:
        body = json.dumps({"model": engine.model_name, "max_tokens": 24, "temperature": 0,
                           "messages": [{"role": "user", "content": "Say hello."}]}).encode()
        req = urllib.request.Request(engine.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              # the engine takes requests with its run's key
                                              "Authorization": f"Bearer {engine.api_key}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            reply = json.loads(resp.read())["choices"][0]["message"]["content"]
    if not reply.strip():
        raise CheckFailed("the packaged llama-server answered with an empty reply")
    where = (f"with {', '.join(p.name for p in hide)} hidden" if hide
             else "(not as root: the system's runtime libraries could not be hidden)")
    return f"{paths.model.name} on the packaged llama-server {where} replied {reply.strip()[:40]!r}"


# --------------------------------------------------------------------------- the .deb


def installed(package: str) -> bool:
    proc = run(["dpkg-query", "-W", "-f", "${Status}", package], check=False)
    return proc.returncode == 0 and "installed" in proc.stdout and "not-installed" not in proc.stdout


def dpkg_install(deb: Path) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if run(["dpkg", "-i", str(deb)], env=env, check=False).returncode == 0:
        return
    say("dpkg -i left dependencies missing; apt-get -f install")
    proc = run(["apt-get", "install", "-f", "-y", "-q"], env=env, check=False, timeout=600)
    if proc.returncode != 0:
        run(["apt-get", "update", "-q"], env=env, check=False, timeout=600)
        run(["apt-get", "install", "-f", "-y", "-q"], env=env, timeout=600)
    if not installed("nocturne"):
        raise CheckFailed("nocturne is not installed after dpkg -i and apt-get -f install")


def start_from_entry(entry: Path, home: Path, xvfb_smoke: ModuleType) -> str:
    """Run the entry's Exec under Xvfb as the person; returns what was seen."""
    command = entry_exec(entry)
    with xvfb_smoke.xvfb() as display:
        png = home / "menu-start.png"
        env = person_env(home) | {"DISPLAY": display, "NOCTURNE_SCREENSHOT": str(png)}
        t0 = time.monotonic()
        try:
            proc = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True,
                                  timeout=RUN_LIMIT_S, stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CheckFailed(f"{command} did not quit within {RUN_LIMIT_S:.0f}s") from exc
        seconds = time.monotonic() - t0
        problems, record = xvfb_smoke.run_problems(proc.returncode, png)
        if problems:
            raise CheckFailed(f"{' '.join(command)} under Xvfb: " + "; ".join(problems)
                              + "\n" + proc.stderr[-3000:])
        keep = ROOT / "build" / "screenshots"
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(png, keep / "package-menu-start.png")
    return f"{' '.join(command)} painted on {record.get('platform')} and quit in {seconds:.1f}s"


def check_deb(deb: Path) -> None:
    if not sys.platform.startswith("linux") or shutil.which("dpkg") is None:
        raise Skip("dpkg is not installed here")
    if os.geteuid() != 0:
        raise Skip("installing a .deb needs root (sudo)")
    if installed("nocturne"):
        raise Skip("a nocturne package is already installed here; this check installs and "
                   "removes its own (dpkg -r nocturne first)")
    xvfb_smoke = load("xvfb_smoke")
    try:
        xvfb_smoke.ensure_tools()
    except xvfb_smoke.Skip as exc:
        raise Skip(f"cannot start the installed app on a display: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="nocturne-deb-") as tmp:
        home = Path(tmp) / "home"
        memory = make_memory(home)
        facts = memory_facts(memory)
        t0 = time.monotonic()
        dpkg_install(deb)
        try:
            say(f"installed {deb.name} in {time.monotonic() - t0:.1f}s")
            for path in (INSTALLED / "Nocturne", Path("/usr/bin/nocturne"), ENTRY,
                         Path("/usr/share/icons/hicolor/256x256/apps/nocturne.png"),
                         Path("/usr/share/icons/hicolor/scalable/apps/nocturne.svg"),
                         Path("/usr/share/metainfo/org.nocturne.desktop.metainfo.xml")):
                if not path.exists():
                    raise CheckFailed(f"{path} is not installed")
            if entry_exec(ENTRY) != [str(INSTALLED / "Nocturne")]:
                raise CheckFailed(f"the entry's Exec is {entry_exec(ENTRY)}")
            problems = validate_desktop_files(
                ENTRY, Path("/usr/share/metainfo/org.nocturne.desktop.metainfo.xml"))
            if problems:
                raise CheckFailed("; ".join(problems))
            say(check_engine(INSTALLED / "engine"))
            say(start_from_entry(ENTRY, home, xvfb_smoke))
            if memory_facts(memory) != facts:
                raise CheckFailed("the person's facts changed when the app opened them")
            report = home / "selftest.json"
            proc = run(["nocturne", "--self-test", "--self-test-report", str(report)],
                       env=person_env(home) | {"QT_QPA_PLATFORM": "offscreen"}, timeout=60)
            if json.loads(report.read_text()).get("frozen") is not True:
                raise CheckFailed("the self-test did not run the installed (frozen) app")
            say(proc.stdout.strip().splitlines()[-1])
            before = folder_digest(memory)
        finally:
            run(["dpkg", "-r", "nocturne"], check=False)
            run(["dpkg", "-P", "nocturne"], check=False)
        for path in (INSTALLED, Path("/usr/bin/nocturne"), ENTRY):
            if path.exists():
                raise CheckFailed(f"{path} is still there after dpkg -r / -P")
        if folder_digest(memory) != before or memory_facts(memory) != facts:
            raise CheckFailed("removing the package changed the person's memory folder")
        say(f"removed: /opt/nocturne, the launcher and the entry are gone; the memory folder "
            f"({len(before)} files, {len(facts)} facts) is untouched")


# --------------------------------------------------------------------------- the .tar.gz


def check_tar(archive: Path) -> None:
    if not sys.platform.startswith("linux"):
        raise Skip("the .tar.gz is a Linux package")
    with tempfile.TemporaryDirectory(prefix="nocturne-tar-") as tmp:
        home = Path(tmp) / "home"
        memory = make_memory(home)
        before = folder_digest(memory)
        unpacked = Path(tmp) / "download"
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        (top,) = unpacked.iterdir()
        env = person_env(home)
        proc = run([str(top / "install.sh")], env=env)
        say(proc.stdout.strip().splitlines()[0])
        app = home / ".local" / "lib" / "nocturne"
        entry = home / ".local" / "share" / "applications" / "nocturne.desktop"
        command = entry_exec(entry)
        if command != [str(app / "Nocturne")]:
            raise CheckFailed(f"the per-user entry's Exec is {command}, not {app / 'Nocturne'}")
        listed = (app / "installed-files").read_text().split("\n")
        files = [Path(p) for p in listed if p]
        for path in (home / ".local" / "bin" / "nocturne", entry,
                     home / ".local/share/icons/hicolor/256x256/apps/nocturne.png",
                     home / ".local/share/metainfo/org.nocturne.desktop.metainfo.xml"):
            if path not in files or not path.is_file():
                raise CheckFailed(f"install.sh did not install {path}")
        problems = validate_desktop_files(
            entry, home / ".local/share/metainfo/org.nocturne.desktop.metainfo.xml")
        if problems:
            raise CheckFailed("; ".join(problems))
        report = home / "selftest.json"
        run([*command, "--self-test", "--self-test-report", str(report)],
            env=env | {"QT_QPA_PLATFORM": "offscreen"}, timeout=60)
        if json.loads(report.read_text()).get("ok") is not True:
            raise CheckFailed("the installed app's self-test failed")
        paths = engine_in(app / "engine")
        if paths is None or run([str(paths.server), "--version"], env=env).returncode != 0:
            raise CheckFailed(f"no working engine pack in {app / 'engine'}")
        run([str(app / "uninstall.sh")], env=env)
        left = [p for p in [app, *files] if p.exists()]
        if left:
            raise CheckFailed(f"uninstall.sh left {left}")
        if folder_digest(memory) != before:
            raise CheckFailed("install/uninstall changed the person's memory folder")
        say(f"{archive.name}: installed under ~/.local, the entry's Exec passed the self-test, "
            f"the engine pack runs, uninstall removed all {len(files)} files and the app, "
            f"and left the memory folder untouched")


# --------------------------------------------------------------------------- main


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    say(f"{name}: passed in {time.monotonic() - t0:.1f}s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", nargs="?", choices=("deb", "tar", "both"), default="both")
    args = p.parse_args(argv)
    package = load("package")
    checks = {"deb": (check_deb, package.OUT / package.deb_name()),
              "tar": (check_tar, package.OUT / f"{package.tar_root()}.tar.gz")}
    required = os.environ.get("PACKAGE_CHECK_REQUIRED") == "1"
    status = 0
    for name, (check, artifact) in checks.items():
        if args.which not in (name, "both"):
            continue
        try:
            if not artifact.is_file():
                raise Skip(f"{package.shown(artifact)} is not built (make package)")
            with timed(name):
                check(artifact)
        except Skip as exc:
            say(f"{name}: skipped: {exc}")
            status = status or (1 if required else 0)
        except (CheckFailed, subprocess.TimeoutExpired, OSError) as exc:
            print(f"package-check: {name}: FAILED: {exc}", file=sys.stderr, flush=True)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
