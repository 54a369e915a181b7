"""The core knows no screen and no network: it must import with PySide6 and httpx absent."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

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


# --- every layer, read from the source (lazy imports inside functions count too) ---------------

PACKAGE = Path(core.__file__).resolve().parent.parent
COMPOSITION_ROOT = {"cli", "boot", "__main__"}
"""Top-level modules that wire the window together and may therefore import Qt; every other
top-level module (settings, paths, demo, builtin_engine, ...) is below the window."""
QT = {"PySide6", "shiboken6"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _typing_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks (never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                   "typing.TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _imports(path: Path, module: str | None = None, *, runtime: bool = False) -> set[str]:
    """Every module ``path`` imports, absolute (relative imports resolved), at any depth;
    ``runtime``: only those that can run (not the ``if TYPE_CHECKING:`` ones)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = (module or _module_name(path)).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    skip = _typing_only(tree) if runtime else set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*here[: len(here) - node.level + 1], *([base] if base else [])])
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] in ("core", "llm", "ui"):
        return parts[1]
    return "root" if parts[1] in COMPOSITION_ROOT else "top"


def _graph(*, runtime: bool = False) -> dict[str, set[str]]:
    return {_module_name(p): _imports(p, runtime=runtime) for p in sorted(PACKAGE.rglob("*.py"))}


def _ours(imported: set[str]) -> set[str]:
    return {m for m in imported if m.split(".")[0] == "nocturne_desktop"}


def _qt(imported: set[str]) -> set[str]:
    return {m for m in imported if m.split(".")[0] in QT}


def test_the_source_graph_is_read() -> None:
    graph = _graph()
    assert "nocturne_desktop.core.store" in graph and "nocturne_desktop.ui.mainwindow" in graph
    assert _qt(graph["nocturne_desktop.ui.mainwindow"])
    assert "nocturne_desktop.core.store" in graph["nocturne_desktop.demo"]


def test_core_imports_nothing_above_it() -> None:
    bad = {
        mod: sorted(m for m in _ours(imps) if _layer(m) not in ("core", "package"))
        for mod, imps in _graph().items() if _layer(mod) == "core"
    }
    assert not {k: v for k, v in bad.items() if v}, bad
    qt = {mod: sorted(_qt(imps)) for mod, imps in _graph().items() if _layer(mod) == "core"}
    assert not {k: v for k, v in qt.items() if v}


def test_llm_imports_neither_ui_nor_qt() -> None:
    graph = _graph()
    bad = {
        mod: sorted(_qt(imps) | {m for m in _ours(imps) if _layer(m) in ("ui", "root")})
        for mod, imps in graph.items() if _layer(mod) == "llm"
    }
    assert not {k: v for k, v in bad.items() if v}, bad


def test_only_ui_and_the_composition_root_import_qt() -> None:
    graph = _graph()
    bad = {
        mod: sorted(_qt(imps))
        for mod, imps in graph.items() if _layer(mod) not in ("ui", "root") and _qt(imps)
    }
    assert not bad, bad
    # and nothing below the window reaches up into it
    up = {
        mod: sorted(m for m in _ours(imps) if _layer(m) in ("ui", "root"))
        for mod, imps in graph.items() if _layer(mod) in ("core", "llm", "top")
    }
    assert not {k: v for k, v in up.items() if v}, up


def test_llm_and_the_plain_top_level_import_without_qt() -> None:
    """The same at run time: with Qt blocked, the client and every non-window module load."""
    graph = _graph()
    mods = sorted(m for m in graph if _layer(m) in ("llm", "top"))
    assert "nocturne_desktop.llm.client" in mods and "nocturne_desktop.settings" in mods
    code = f"MODULES = {mods!r}\n" + BLOCKER.replace(
        "'httpx', 'httpcore'", "").replace("{'PySide6', 'httpx'}", "{'PySide6'}")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ok {len(mods)}"


def test_the_source_checks_would_catch_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from PySide6.QtCore import QObject\n    from . import ui\n")
    imps = _imports(bad, "nocturne_desktop.llm.bad")
    assert _qt(imps) == {"PySide6.QtCore", "PySide6.QtCore.QObject"}
    assert "nocturne_desktop.llm.ui" in _ours(imps)
    bad.write_text("from nocturne_desktop import paths\nimport nocturne_desktop.ui.app\n")
    ups = {m for m in _ours(_imports(bad, "nocturne_desktop.core.bad")) if _layer(m) != "core"}
    assert ups == {"nocturne_desktop.paths", "nocturne_desktop.ui.app", "nocturne_desktop"}


# --- the worker process's side of a job ----------------------------------------------------------

BODIES = "nocturne_desktop.ui.jobs.bodies"
WORKER_SIDE = ("nocturne_desktop.ui.jobs.child", BODIES, *sorted(
    m for m in _graph() if m.startswith(BODIES + ".")))
"""What a worker process may import to run a job (ui/jobs/process.py starts it): its entry
point and any job body. No Qt may be loaded there, so these modules, their packages and
everything of ours they import stay free of it."""
QT_SIDE_OF_JOBS = ("nocturne_desktop.ui.jobs.job", "nocturne_desktop.ui.jobs.thread",
                   "nocturne_desktop.ui.jobs.process")


def _closure(graph: dict[str, set[str]], roots: tuple[str, ...]) -> set[str]:
    """``roots`` and every module of ours they import, at any depth (parent packages too)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        while name and name not in graph:  # ``pkg.mod.Name`` → ``pkg.mod``
            name = name.rpartition(".")[0]
        if not name or name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_ours(graph[name]))
    return seen


def test_the_worker_side_of_a_job_reaches_no_qt() -> None:
    graph = _graph(runtime=True)
    reach = _closure(graph, WORKER_SIDE)
    assert set(WORKER_SIDE) <= reach and "nocturne_desktop.core.sleep" in reach
    assert "nocturne_desktop.ui.jobs.bodies.sleep" in reach
    assert "nocturne_desktop.ui.jobs" in reach  # the package itself: its Qt parts load lazily
    assert not set(QT_SIDE_OF_JOBS) & reach
    bad = {mod: sorted(_qt(graph[mod])) for mod in reach if _qt(graph[mod])}
    assert not bad, bad
    # the same at run time, with Qt (and the HTTP stack, loaded only for a model) blocked
    code = f"MODULES = {list(WORKER_SIDE)!r}\n" + BLOCKER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_the_closure_would_catch_a_worker_module_importing_qt() -> None:
    graph = {"nocturne_desktop.ui.jobs.child": {"nocturne_desktop.ui.helper.f"},
             "nocturne_desktop.ui.helper": {"PySide6.QtCore"}, "nocturne_desktop.ui": set(),
             "nocturne_desktop.ui.jobs": set(), "nocturne_desktop": set()}
    reach = _closure(graph, ("nocturne_desktop.ui.jobs.child",))
    assert {m for m in reach if _qt(graph[m])} == {"nocturne_desktop.ui.helper"}


def test_the_closure_skips_only_what_never_runs(tmp_path: Path) -> None:
    mod = tmp_path / "lazy.py"
    mod.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                   "    from PySide6.QtCore import QObject\nelse:\n    import PySide6.QtGui\n"
                   "def f():\n    from PySide6 import QtWidgets\n")
    every = _qt(_imports(mod, "nocturne_desktop.ui.lazy"))
    run = _qt(_imports(mod, "nocturne_desktop.ui.lazy", runtime=True))
    assert "PySide6.QtCore" in every and "PySide6.QtCore" not in run
    assert {"PySide6.QtGui", "PySide6.QtWidgets"} <= run


# --- the item models' plain parts -------------------------------------------------------------

QT_FREE_MODELS = ("nocturne_desktop.ui.models.paging", "nocturne_desktop.ui.models.pagers",
                  "nocturne_desktop.ui.models.text", "nocturne_desktop.ui.models.planpages")
"""The parts of ``ui/models/`` that hold data, not Qt: the block tree's paging (tested without
Qt), its pagers, the cell texts and a review's plan in pages (which the worker process loads).
Their package loads its Qt models by name, on first use."""


def test_the_models_plain_parts_reach_no_qt() -> None:
    graph = _graph(runtime=True)
    reach = _closure(graph, QT_FREE_MODELS)
    assert "nocturne_desktop.ui.models" in reach and "nocturne_desktop.ui.models.tree" not in reach
    bad = {mod: sorted(_qt(graph[mod])) for mod in reach if _qt(graph[mod])}
    assert not bad, bad
    assert _qt(graph["nocturne_desktop.ui.models.tree"])  # the check sees the Qt models' Qt
    code = f"MODULES = {list(QT_FREE_MODELS)!r}\n" + BLOCKER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
