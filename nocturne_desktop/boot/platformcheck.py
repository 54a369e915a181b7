"""Before Qt starts on Linux: can its X11 (xcb) platform plugin load at all?

Qt's xcb plugin links a dozen small system libraries (``libxcb-icccm.so.4``,
``libxcb-keysyms.so.1``, ``libxcb-cursor.so.0``, ``libxkbcommon-x11.so.0``, …) that a minimal
desktop install may lack. Without them Qt prints a misleading hint (it names ``xcb-cursor0``
whatever is missing) and aborts — a core dump for someone who double-clicked the binary.
:func:`check` runs first: it resolves the plugin's libraries with ``ldd`` (standard on every
glibc system; ``ctypes`` otherwise) and, if some do not resolve, returns a message naming each
missing library and the packages that provide it on Debian/Ubuntu and Fedora, with the install
command. It also catches the other way Qt aborts before a window: no X display to connect to.

    problem = check()
    if problem is not None:
        report(problem)          # stderr, and in the frozen app the desktop's notifier too
        raise SystemExit(EXIT_CODE)

Standard library only, and Qt is not imported: this must work when Qt cannot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

EXIT_CODE = 3
"""The exit status when the window cannot open (not 134, Qt's abort)."""

PLUGIN = "libqxcb.so"

# library file (soname) → (Debian/Ubuntu package, Fedora package)
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-util.so.0": ("libxcb-util0", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-xinput.so.0": ("libxcb-xinput0", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libXau.so.6": ("libxau6", "libXau"),
    "libXdmcp.so.6": ("libxdmcp6", "libXdmcp"),
    "libSM.so.6": ("libsm6", "libSM"),
    "libICE.so.6": ("libice6", "libICE"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libGLdispatch.so.0": ("libglvnd0", "libglvnd"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libpng16.so.16": ("libpng16-16", "libpng"),
    "libexpat.so.1": ("libexpat1", "expat"),
}

DESKTOP_PACKAGES_DEBIAN = ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0",
                           "libxcb-render-util0", "libxkbcommon-x11-0", "libegl1")
"""Everything Qt's xcb plugin needs beyond a base X11 install (what the README lists)."""
DESKTOP_PACKAGES_FEDORA = ("xcb-util-cursor", "xcb-util-wm", "xcb-util-keysyms", "xcb-util-image",
                           "xcb-util-renderutil", "libxkbcommon-x11", "libglvnd-egl")

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$", re.M)
_DLOPEN_MISSING = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


@dataclass(frozen=True)
class Problem:
    """Why the window cannot open, and what to do; ``str()`` is the whole message."""

    summary: str
    missing: tuple[str, ...] = ()
    plugin: Path | None = None

    def __str__(self) -> str:
        return self.summary


# --------------------------------------------------------------------------- which platform


def will_use_xcb(env: Mapping[str, str] | None = None) -> bool:
    """True when Qt will (try to) start on X11: ``QT_QPA_PLATFORM`` names xcb first, or is
    unset outside a Wayland session (Qt then defaults to xcb). offscreen, wayland, … → False."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return False
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return chosen.split(";", 1)[0].split(":", 1)[0].strip() == "xcb"
    return not (env.get("XDG_SESSION_TYPE") == "wayland" or env.get("WAYLAND_DISPLAY"))


def plugin_path() -> Path | None:
    """PySide6's ``plugins/platforms/libqxcb.so`` (from the wheel, or inside the frozen app)."""
    roots: list[Path] = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        roots.append(Path(bundle) / "PySide6")
    with contextlib.suppress(Exception):  # found, not imported: no Qt library is loaded
        spec = importlib.util.find_spec("PySide6")
        if spec is not None:
            roots += [Path(p).resolve() for p in (spec.submodule_search_locations or [])]
    for root in roots:
        for candidate in (root / "Qt" / "plugins" / "platforms" / PLUGIN,
                          root / "plugins" / "platforms" / PLUGIN):
            if candidate.is_file():
                return candidate
    return None


# --------------------------------------------------------------------------- what is missing


def missing_from_ldd(output: str) -> list[str]:
    """The library names ``ldd`` reports as ``not found`` (each once, in order)."""
    seen: list[str] = []
    for name in _NOT_FOUND.findall(output):
        if name not in seen:
            seen.append(name)
    return seen


def missing_libraries(plugin: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """The shared libraries of ``plugin`` (transitively) that do not resolve."""
    ldd = shutil.which("ldd")
    if ldd is not None:
        try:
            done = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20,
                                  env=dict(os.environ if env is None else env))
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and (done.stdout or done.returncode == 0):
            return missing_from_ldd(done.stdout)
    return _missing_by_dlopen(plugin)


def _missing_by_dlopen(plugin: Path) -> list[str]:
    """Without ldd: load the plugin in a throw-away process; dlopen names the first gap only."""
    code = ("import ctypes, sys\n"
            "try:\n    ctypes.CDLL(sys.argv[1])\n"
            "except OSError as e:\n    print(e)\n")
    if getattr(sys, "frozen", False):
        try:
            import ctypes

            ctypes.CDLL(str(plugin))
            return []
        except OSError as exc:
            text = str(exc)
    else:
        try:
            text = subprocess.run([sys.executable, "-c", code, str(plugin)], capture_output=True,
                                  text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return []
    return _DLOPEN_MISSING.findall(text)


def packages(missing: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(Debian/Ubuntu packages, Fedora packages, libraries with no known package)."""
    debian: list[str] = []
    fedora: list[str] = []
    unknown: list[str] = []
    for lib in missing:
        pair = PACKAGES.get(lib)
        if pair is None:
            unknown.append(lib)
            continue
        if pair[0] not in debian:
            debian.append(pair[0])
        if pair[1] not in fedora:
            fedora.append(pair[1])
    return debian, fedora, unknown


def missing_message(missing: list[str], plugin: Path | None = None) -> str:
    debian, fedora, unknown = packages(missing)
    lines = ["Nocturne cannot open its window: Qt's X11 platform plugin (xcb) needs system "
             "libraries that are not installed:",
             "  " + ", ".join(missing)]
    if debian:
        lines += ["Install them, then start Nocturne again:",
                  "  Debian/Ubuntu:  sudo apt-get install " + " ".join(debian),
                  "  Fedora:         sudo dnf install " + " ".join(fedora)]
    if unknown:
        lines.append("No package is known here for " + ", ".join(unknown)
                     + "; your distribution's package search (apt-file search, dnf provides) "
                       "names the one that provides it.")
    if plugin is not None:
        lines.append(f"(found with ldd on {plugin})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the display


def display_reachable(display: str, timeout: float = 1.0) -> bool | None:
    """Whether an X server accepts connections at ``display`` (``:0``, ``host:10.0``);
    None when the form is not understood (then nothing is claimed)."""
    m = re.fullmatch(r"(?:unix)?(?P<host>[^:/]*):(?P<num>\d+)(?:\.\d+)?", display.strip())
    if m is None:
        return None
    host, num = m.group("host"), int(m.group("num"))
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{num}"
        for address in (path, "\0" + path):  # the file socket, then Linux's abstract one
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                try:
                    s.connect(address)
                    return True
                except OSError:
                    continue
        host = "" if host == "unix" else "localhost"
        if not host:
            return False
    try:
        with socket.create_connection((host, 6000 + num), timeout=timeout):
            return True
    except OSError:
        return False


def no_display_message(display: str) -> str:
    if not display:
        why = "no X display is set (DISPLAY is empty)"
    else:
        why = f"nothing answers on the X display {display!r} (DISPLAY)"
    return (f"Nocturne cannot open its window: {why}.\n"
            "Start it from a desktop session, or give it a display (for a headless machine: "
            "xvfb-run nocturne). `nocturne --self-test` runs without any display.")


# --------------------------------------------------------------------------- the whole check


def check(env: Mapping[str, str] | None = None, plugin: Path | None = None) -> Problem | None:
    """None when Qt's window can start here (or when this cannot be known); else what is wrong.

    Only on Linux and only when the platform will be xcb; ``plugin`` overrides where the xcb
    plugin is looked for (tests point it at a crafted one)."""
    env = os.environ if env is None else env
    if not will_use_xcb(env):
        return None
    found = plugin if plugin is not None else plugin_path()
    if found is not None:
        missing = missing_libraries(found, env)
        if missing:
            return Problem(missing_message(missing, found), tuple(missing), found)
    display = env.get("DISPLAY", "")
    if not display or display_reachable(display) is False:
        return Problem(no_display_message(display))
    return None


def report(problem: Problem, *, frozen: bool | None = None) -> None:
    """Print the problem to stderr; in the frozen app (often started without a terminal) also
    show it on the desktop: ``notify-send``, else a dialog tool found on the system."""
    print(str(problem), file=sys.stderr, flush=True)
    if frozen is None:
        frozen = bool(getattr(sys, "frozen", False))
    if frozen:
        show_on_desktop(str(problem))


def _system_env() -> dict[str, str]:
    """The environment without the frozen app's library path (system tools must load the
    system's libraries, not the bundle's)."""
    env = dict(os.environ)
    original = env.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        env["LD_LIBRARY_PATH"] = original
    else:
        env.pop("LD_LIBRARY_PATH", None)
    return env


def desktop_commands(message: str) -> list[list[str]]:
    """The notifier and dialog commands to try, in order (each exists on some desktops)."""
    title = "Nocturne cannot start"
    return [
        ["notify-send", "--urgency=critical", "--app-name=Nocturne", title, message],
        ["zenity", "--error", "--no-markup", f"--title={title}", f"--text={message}"],
        ["kdialog", "--title", title, "--error", message],
        ["xmessage", "-center", f"{title}\n\n{message}"],
    ]


def show_on_desktop(message: str) -> str | None:
    """Show ``message`` with the first tool that exists and succeeds; its name, or None."""
    env = _system_env()
    for command in desktop_commands(message):
        tool = shutil.which(command[0], path=env.get("PATH"))
        if tool is None:
            continue
        try:
            if command[0] == "notify-send":
                if subprocess.run([tool, *command[1:]], env=env, timeout=10,
                                  capture_output=True).returncode == 0:
                    return command[0]
                continue
            # a dialog stays open until dismissed: do not wait for it
            subprocess.Popen([tool, *command[1:]], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
            return command[0]
        except (OSError, subprocess.SubprocessError):
            continue
    return None
