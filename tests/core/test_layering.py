"""The core knows no screen and no network: it must import with PySide6 and httpx absent."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import nocturne_desktop.core as core

BLOCKER = r"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'PySide6', 'shiboken6', 'httpx', 'httpcore'}:
            raise ImportError('blocked for the layering test: ' + name)
        return None
sys.meta_path.insert(0, Block())
import importlib
for mod in MODULES:
    importlib.import_module(mod)
top = {'PySide6', 'httpx'}
loaded = sorted(m for m in sys.modules if m.split('.')[0] in top)
assert not loaded, loaded
print('ok', len(MODULES))
"""


def core_modules() -> list[str]:
    names = [core.__name__]
    for info in pkgutil.walk_packages(core.__path__, prefix=core.__name__ + "."):
        names.append(info.name)
    return names


def test_core_imports_without_qt_or_httpx() -> None:
    mods = core_modules()
    assert "nocturne_desktop.core.types" in mods
    code = f"MODULES = {mods!r}\n" + BLOCKER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ok {len(mods)}"


def test_blocker_really_blocks() -> None:
    """The test above would prove nothing if the blocker let PySide6 through."""
    code = "MODULES = ['PySide6.QtCore']\n" + BLOCKER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode != 0
    assert "blocked for the layering test" in out.stderr
