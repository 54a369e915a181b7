"""The start-up check: what Qt's xcb plugin lacks, named with the packages that provide it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop import cli
from nocturne_desktop.boot import platformcheck
from nocturne_desktop.boot.platformcheck import Problem

ROOT = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's xcb plugin")

# ldd on PySide6 6.11's libqxcb.so on a Debian 12 machine without two of the xcb utility libraries
LDD_OUTPUT = """\
\tlinux-vdso.so.1 (0x00007ffd5b1e4000)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/plugins/platforms/../../lib/libQt6XcbQpa.so.6 (0x00007f4c)
\tlibxkbcommon-x11.so.0 => /lib/x86_64-linux-gnu/libxkbcommon-x11.so.0 (0x00007f4cd71b5000)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f4cd71ae000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-util.so.1 => /lib/x86_64-linux-gnu/libxcb-util.so.1 (0x00007f4cd71a6000)
\tlibxcb-keysyms.so.1 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f4cd711b000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\t/lib64/ld-linux-x86-64.so.2 (0x00007f4cd7368000)
"""

EXPECTED = """\
Nocturne cannot open its window: Qt's X11 platform plugin (xcb) needs system libraries that are not installed:
  libxcb-icccm.so.4, libxcb-keysyms.so.1
Install them, then start Nocturne again:
  Debian/Ubuntu:  sudo apt-get install libxcb-icccm4 libxcb-keysyms1
  Fedora:         sudo dnf install xcb-util-wm xcb-util-keysyms"""


def test_ldd_output_gives_each_missing_library_once() -> None:
    assert platformcheck.missing_from_ldd(LDD_OUTPUT) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert platformcheck.missing_from_ldd("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == []


def test_the_message_names_packages_not_library_files() -> None:
    assert platformcheck.missing_message(["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]) == EXPECTED


def test_every_xcb_library_qt_needs_maps_to_a_package_on_both_families() -> None:
    debian, fedora, unknown = platformcheck.packages(
        ["libxcb-cursor.so.0", "libxkbcommon-x11.so.0", "libxcb-image.so.0",
         "libxcb-render-util.so.0", "libxcb-randr.so.0", "libxcb-xkb.so.1"])
    assert debian == ["libxcb-cursor0", "libxkbcommon-x11-0", "libxcb-image0",
                      "libxcb-render-util0", "libxcb-randr0", "libxcb-xkb1"]
    assert fedora == ["xcb-util-cursor", "libxkbcommon-x11", "xcb-util-image",
                      "xcb-util-renderutil", "libxcb"]  # libxcb's extensions are one package
    assert unknown == []
    assert set(platformcheck.DESKTOP_PACKAGES_DEBIAN) <= {d for d, _ in platformcheck.PACKAGES.values()}


def test_an_unknown_library_is_still_named() -> None:
    text = platformcheck.missing_message(["libQt6XcbQpa.so.6"])
    assert "libQt6XcbQpa.so.6" in text and "No package is known here for libQt6XcbQpa.so.6" in text
    assert "apt-get" not in text


@pytest.mark.parametrize("env, xcb", [
    ({"QT_QPA_PLATFORM": "offscreen"}, False),
    ({"QT_QPA_PLATFORM": "xcb"}, True),
    ({"QT_QPA_PLATFORM": "xcb:nograb;wayland"}, True),
    ({"QT_QPA_PLATFORM": "wayland;xcb"}, False),
    ({}, True),
    ({"XDG_SESSION_TYPE": "wayland"}, False),
    ({"WAYLAND_DISPLAY": "wayland-0"}, False),
])
@linux_only
def test_the_check_runs_only_when_qt_will_use_xcb(env: dict[str, str], xcb: bool) -> None:
    assert platformcheck.will_use_xcb(env) is xcb
    if not xcb:
        assert platformcheck.check(env, plugin=Path("/nonexistent/libqxcb.so")) is None


@linux_only
def test_a_plugin_whose_libraries_do_not_resolve_is_reported(tmp_path: Path) -> None:
    # the real plugin copied out of its wheel: its Qt libraries (../../lib) no longer resolve
    real = platformcheck.plugin_path()
    if real is None or shutil.which("ldd") is None:
        pytest.skip("no PySide6 xcb plugin or no ldd here")
    fake = tmp_path / "platforms" / "libqxcb.so"
    fake.parent.mkdir()
    shutil.copy(real, fake)
    problem = platformcheck.check({"QT_QPA_PLATFORM": "xcb", "PATH": os.environ.get("PATH", "")},
                                  plugin=fake)
    assert problem is not None and "libQt6XcbQpa.so.6" in problem.missing
    assert str(fake) in str(problem)


@linux_only
def test_the_check_agrees_with_ldd_on_this_machine() -> None:
    real = platformcheck.plugin_path()
    if real is None or shutil.which("ldd") is None:
        pytest.skip("no PySide6 xcb plugin or no ldd here")
    missing = platformcheck.missing_from_ldd(subprocess.run(["ldd", str(real)], capture_output=True,
                                                            text=True, check=True).stdout)
    assert platformcheck.missing_libraries(real) == missing
    problem = platformcheck.check({**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": ":0"})
    if missing:
        assert problem is not None and list(problem.missing) == missing
    else:
        assert problem is None or "display" in str(problem)


def test_no_display_is_said_plainly() -> None:
    with socket.socket() as s:  # a TCP port nobody listens on, as an X display number
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if port < 6000:
        assert platformcheck.display_reachable("nonsense") is None
    else:
        assert platformcheck.display_reachable(f"localhost:{port - 6000}", timeout=0.5) is False
    assert platformcheck.display_reachable(":987654") is False
    assert "DISPLAY is empty" in platformcheck.no_display_message("")
    assert "xvfb-run" in platformcheck.no_display_message(":3")


def test_the_window_command_exits_with_the_message_instead_of_qt_aborting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    problem = Problem(EXPECTED, ("libxcb-icccm.so.4", "libxcb-keysyms.so.1"))
    monkeypatch.setattr(platformcheck, "check", lambda env=None, plugin=None: problem)
    monkeypatch.delenv("NOCTURNE_SKIP_PLATFORM_CHECK", raising=False)
    shown: list[str] = []
    monkeypatch.setattr(platformcheck, "show_on_desktop", lambda message: shown.append(message))
    assert cli.main([]) == platformcheck.EXIT_CODE == 3
    assert capsys.readouterr().err.strip() == EXPECTED
    assert shown == []  # from source, the terminal is enough
    platformcheck.report(problem, frozen=True)  # the frozen app also tells the desktop
    assert shown == [EXPECTED]


@linux_only
def test_without_a_display_the_real_command_exits_3_not_a_core_dump(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT), NOCTURNE_DATA_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "nocturne_desktop"], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("Nocturne cannot open its window:")
    assert "sudo apt-get install" in done.stderr or "DISPLAY is empty" in done.stderr


def test_the_notifier_gets_the_message_with_the_systems_library_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "notified.txt"
    tool = tmp_path / "notify-send"
    tool.write_text(f'#!/bin/sh\nprintf "%s\\n" "$LD_LIBRARY_PATH" "$@" > {log}\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("LD_LIBRARY_PATH", "/the/bundle")
    monkeypatch.setenv("LD_LIBRARY_PATH_ORIG", "/the/system")
    assert platformcheck.show_on_desktop(EXPECTED) == "notify-send"
    lines = log.read_text().splitlines()
    assert lines[0] == "/the/system" and "--urgency=critical" in lines
    assert "Nocturne cannot start" in lines and EXPECTED.splitlines()[-1] in lines
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert platformcheck.show_on_desktop(EXPECTED) is None  # nothing to show it with: stderr only
