"""scripts/package.py and the tarball's install.sh/uninstall.sh, on a stand-in app folder.

The real packages are built from dist/Nocturne/ and the engine cache and checked installed by
``make package-check`` (scripts/package_check.py); these tests run the same code on a small
app folder and a real compiled C++ program standing in for llama-server: the engine pack
carries the C++ runtime it needs, the .deb has the layout and control fields a person's dpkg
expects, and install.sh installs per user, updates in place and uninstalls without touching
the memory folder."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELLO = """#include <iostream>
#include <string>
int main(int argc, char** argv) {
    std::string arg = argc > 1 ? argv[1] : "";
    if (arg == "--version") { std::cout << "version: 0 (stand-in)" << std::endl; return 0; }
    std::cout << "hello from the stand-in server" << std::endl;
    return 0;
}
"""


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"nocturne_{name}_under_test",
                                                  ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cxx_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real C++ program (it links libstdc++) whose run path is ``$ORIGIN/../lib``, as
    llama-server's is."""
    if shutil.which("g++") is None or not sys.platform.startswith("linux"):
        pytest.skip("needs g++ on Linux (the toolchain `make engine` uses)")
    folder = tmp_path_factory.mktemp("cxx")
    (folder / "hello.cpp").write_text(HELLO)
    exe = folder / "llama-server"
    subprocess.run(["g++", "-O0", "-o", str(exe), str(folder / "hello.cpp"),
                    "-Wl,-rpath,$ORIGIN/../lib"], check=True, capture_output=True)
    return exe


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cxx_program: Path) -> ModuleType:
    """package.py with a stand-in frozen folder, engine cache and output folder under tmp."""
    module = load("package")
    dist = tmp_path / "dist" / "Nocturne"
    (dist / "_internal").mkdir(parents=True)
    app = dist / "Nocturne"
    app.write_text("#!/bin/sh\necho \"stand-in Nocturne $*\"\n")
    app.chmod(0o755)
    (dist / "_internal" / "data.txt").write_text("frozen data")
    (dist / ".source-hash").write_text("abc\n")
    cache = tmp_path / "cache" / "engine"
    (cache / "srv" / "bin").mkdir(parents=True)
    shutil.copy2(cxx_program, cache / "srv" / "bin" / "llama-server")
    (cache / "srv" / "LICENSE-llama.cpp").write_text("MIT")
    (cache / "m").mkdir()
    (cache / "m" / "tiny.gguf").write_bytes(b"GGUF" + b"\0" * 4096)
    (cache / "m" / "LICENSE").write_text("Apache-2.0")
    (cache / "engine.json").write_text(json.dumps({
        "schema": 1, "server": "srv/bin/llama-server", "model": "m/tiny.gguf",
        "model_name": "Tiny", "server_version": "version: 0"}))
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(module, "DIST", dist)
    monkeypatch.setattr(module, "OUT", tmp_path / "out")
    real = module.load_dist()  # its ELF helpers are real: the pack's programs get stripped
    fake = SimpleNamespace(build=lambda: 0, is_elf=real.is_elf,
                           strip_libraries=real.strip_libraries)
    monkeypatch.setattr(module, "load_dist", lambda: fake)
    return module


def test_the_engine_pack_carries_the_cpp_runtime_and_nothing_else_from_outside(
    pkg: ModuleType, tmp_path: Path
) -> None:
    pack = tmp_path / "pack"
    manifest = pkg.make_engine_pack(pack)
    assert "libstdc++.so.6" in manifest["runtime_libraries"]
    assert (pack / "lib" / "libstdc++.so.6").is_file()
    assert pkg.check_engine_pack(pack) == []
    # the app reads the same manifest as from the user cache
    from nocturne_desktop.llm.engine import engine_in

    paths = engine_in(pack)
    assert paths is not None
    assert paths.server == pack / "bin" / "llama-server" and paths.model.name == "tiny.gguf"
    ldd = pkg.ldd(paths.server)
    assert Path(str(ldd["libstdc++.so.6"])).resolve() == (pack / "lib" / "libstdc++.so.6").resolve()
    assert (pack / "licenses" / "llama.cpp.txt").read_text() == "MIT"
    out = subprocess.run([str(paths.server), "--version"], capture_output=True, text=True,
                         check=True)
    assert "stand-in" in out.stdout


def test_a_pack_whose_program_needs_the_system_cpp_runtime_is_refused(
    pkg: ModuleType, tmp_path: Path, cxx_program: Path
) -> None:
    (tmp_path / "bare" / "bin").mkdir(parents=True)
    shutil.copy2(cxx_program, tmp_path / "bare" / "bin" / "llama-server")
    problems = pkg.check_engine_pack(tmp_path / "bare")
    assert any("libstdc++.so.6 from" in p for p in problems), problems


def test_the_pack_runs_with_the_systems_cpp_runtime_hidden(pkg: ModuleType,
                                                           tmp_path: Path) -> None:
    check = load("package_check")
    if not check.can_hide():
        pytest.skip("needs root and unshare to hide the system's libraries")
    pack = tmp_path / "pack"
    pkg.make_engine_pack(pack)
    hide = check.hidden_runtime(pack)
    assert any(p.name.startswith("libstdc++.so.6") for p in hide)
    mounts = " && ".join(f"mount --bind /dev/null {p}" for p in hide)
    server = str(pack / "bin" / "llama-server")
    alone = subprocess.run(["unshare", "-m", "sh", "-c", f"{mounts} && exec /bin/ls --version"],
                           capture_output=True, text=True, check=False)
    assert alone.returncode == 0  # hiding libstdc++ does not break plain C programs
    run = subprocess.run(["unshare", "-m", "sh", "-c", f'{mounts} && exec "$0" --version',
                          server], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "stand-in" in run.stdout, run.stderr
    system_linked = tmp_path / "hello-system"
    shutil.copy2(server, system_linked)  # same program, no ../lib beside it
    broken = subprocess.run(["unshare", "-m", "sh", "-c", f'{mounts} && exec "$0" --version',
                             str(system_linked)], capture_output=True, text=True, check=False)
    assert broken.returncode != 0  # the hiding is real: without the pack's copy it cannot start


def test_sizes_count_model_weights_apart(pkg: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.bin").write_bytes(b"x" * 100)
    (tmp_path / "f" / "m.gguf").write_bytes(b"x" * 1000)
    (tmp_path / "f" / "w.safetensors").write_bytes(b"x" * 10)
    os.symlink("a.bin", tmp_path / "f" / "link.so")
    assert pkg.folder_sizes(tmp_path / "f") == (1110, 100)


def test_the_desktop_entry_names_the_installed_program(pkg: ModuleType) -> None:
    text = pkg.desktop_entry("/opt/nocturne/Nocturne")
    lines = text.splitlines()
    assert "Exec=/opt/nocturne/Nocturne" in lines and "TryExec=/opt/nocturne/Nocturne" in lines
    assert "Icon=nocturne" in lines and "Type=Application" in lines


def test_build_makes_a_deb_and_a_tarball(pkg: ModuleType, tmp_path: Path) -> None:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    assert pkg.build() == 0
    deb = pkg.OUT / pkg.deb_name()
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                             check=True).stdout
    for path in ("./opt/nocturne/Nocturne", "./opt/nocturne/engine/engine.json",
                 "./opt/nocturne/engine/bin/llama-server",
                 "./opt/nocturne/engine/lib/libstdc++.so.6",
                 "./opt/nocturne/engine/models/tiny.gguf", "./usr/bin/nocturne",
                 "./usr/share/applications/nocturne.desktop",
                 "./usr/share/icons/hicolor/48x48/apps/nocturne.png",
                 "./usr/share/icons/hicolor/scalable/apps/nocturne.svg",
                 "./usr/share/metainfo/org.nocturne.desktop.metainfo.xml",
                 "./usr/share/doc/nocturne/copyright"):
        assert f" {path}\n" in listing + "\n", path
    assert "root/root" in listing and ".source-hash" not in listing
    fields = {k: subprocess.run(["dpkg-deb", "-f", str(deb), k], capture_output=True,
                                text=True, check=True).stdout.strip()
              for k in ("Package", "Version", "Architecture", "Depends")}
    assert fields["Package"] == "nocturne" and fields["Version"] == pkg.__version__
    assert fields["Depends"].startswith("libc6 (>= 2.")
    assert "libstdc++" not in fields["Depends"]  # carried in the pack
    # the tarball: the same folder, the desktop files and the two scripts
    archive = pkg.OUT / f"{pkg.tar_root()}.tar.gz"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        owners = {(m.uid, m.gid) for m in tar.getmembers()}
    top = pkg.tar_root()
    for rel in ("install.sh", "uninstall.sh", "README.txt", "Nocturne/Nocturne",
                "Nocturne/engine/engine.json", "share/applications/nocturne.desktop"):
        assert f"{top}/{rel}" in names, rel
    assert owners == {(0, 0)}
    sizes = json.loads((pkg.OUT / "sizes.json").read_text())
    assert sizes["app_folder"] > sizes["without_weights"] > 0
    # unchanged inputs: reused, not rebuilt
    before = deb.stat().st_mtime_ns
    assert pkg.build() == 0
    assert deb.stat().st_mtime_ns == before
    assert not (pkg.OUT / "app").exists() and not (pkg.OUT / "deb-root").exists()


def test_build_refuses_an_app_folder_over_its_budget(pkg: ModuleType,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(pkg, "SIZE_LIMIT_NO_WEIGHTS", 1000)
    assert pkg.build() == 1
    assert "over its budget" in capsys.readouterr().err
    assert not (pkg.OUT / pkg.deb_name()).exists()


# --------------------------------------------------------------------------- install.sh


@pytest.fixture
def unpacked(tmp_path: Path) -> Path:
    """What the tarball unpacks to, with a stand-in app (a shell script that prints its args)."""
    pkg = load("package")
    top = tmp_path / "download" / "Nocturne-x"
    (top / "Nocturne" / "engine").mkdir(parents=True)
    app = top / "Nocturne" / "Nocturne"
    app.write_text('#!/bin/sh\necho "stand-in Nocturne $*"\n')
    app.chmod(0o755)
    (top / "Nocturne" / "engine" / "engine.json").write_text("{}")
    pkg.share_tree(top / "share", "/opt/nocturne/Nocturne")
    for script in ("install.sh", "uninstall.sh"):
        shutil.copy2(ROOT / "resources" / "linux" / script, top / script)
    return top


def person(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    memory = home / ".local" / "share" / "Nocturne"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "nocturne.db").write_bytes(b"the person's memory")
    (home / ".config" / "Nocturne").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "Nocturne" / "settings.json").write_text("{}")
    return env


def sh(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


def test_install_sh_installs_per_user_and_uninstall_leaves_memory_alone(
    unpacked: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home with space"
    env = person(home)
    done = sh([str(unpacked / "install.sh")], env)
    assert done.returncode == 0, done.stderr
    app = home / ".local" / "lib" / "nocturne"
    entry = home / ".local" / "share" / "applications" / "nocturne.desktop"
    check = load("package_check")
    command = check.entry_exec(entry)
    assert command == [str(app / "Nocturne")]  # the quoted Exec survives the space
    assert f"TryExec={app / 'Nocturne'}" in entry.read_text().splitlines()
    ran = sh([*command, "--self-test"], env)
    assert ran.stdout.strip() == "stand-in Nocturne --self-test"
    launcher = sh([str(home / ".local" / "bin" / "nocturne"), "--version"], env)
    assert launcher.stdout.strip() == "stand-in Nocturne --version"
    for size in (16, 256, 512):
        assert (home / f".local/share/icons/hicolor/{size}x{size}/apps/nocturne.png").is_file()
    assert (home / ".local/share/metainfo/org.nocturne.desktop.metainfo.xml").is_file()
    listed = [Path(p) for p in (app / "installed-files").read_text().splitlines()]
    assert entry in listed and all(p.is_file() for p in listed)

    # installing again updates in place (no .new/.old left behind)
    (unpacked / "Nocturne" / "Nocturne").write_text('#!/bin/sh\necho "version two $*"\n')
    assert sh([str(unpacked / "install.sh")], env).returncode == 0
    assert sh([*command], env).stdout.strip() == "version two"
    assert sorted(p.name for p in app.parent.iterdir()) == ["nocturne"]

    gone = sh([str(app / "uninstall.sh")], env)
    assert gone.returncode == 0, gone.stderr
    assert not app.exists() and not any(p.exists() for p in listed)
    assert (home / ".local/share/Nocturne/nocturne.db").read_bytes() == b"the person's memory"
    assert (home / ".config/Nocturne/settings.json").read_text() == "{}"
    assert "memory" in gone.stdout


def test_install_sh_follows_xdg_data_home_and_uninstalls_from_the_archive(
    unpacked: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = person(home) | {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert sh([str(unpacked / "install.sh")], env).returncode == 0
    assert (tmp_path / "data" / "applications" / "nocturne.desktop").is_file()
    assert not (home / ".local" / "share" / "applications").exists()
    gone = sh([str(unpacked / "install.sh"), "--uninstall"], env)
    assert gone.returncode == 0, gone.stderr
    assert not (tmp_path / "data" / "applications" / "nocturne.desktop").exists()
    assert not (home / ".local" / "lib" / "nocturne").exists()
    assert (home / ".local/share/Nocturne/nocturne.db").read_bytes() == b"the person's memory"


def test_uninstall_sh_refuses_a_folder_it_did_not_install(unpacked: Path,
                                                          tmp_path: Path) -> None:
    env = person(tmp_path / "home")
    refused = sh([str(unpacked / "uninstall.sh")], env)  # run from the unpacked archive
    assert refused.returncode == 1 and "nothing removed" in refused.stderr
    assert (unpacked / "Nocturne" / "Nocturne").is_file()
    nothing = sh([str(unpacked / "install.sh"), "--uninstall"], env)
    assert nothing.returncode == 1 and "not installed" in nothing.stderr
