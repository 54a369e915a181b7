"""scripts/dist.py: the source hash that decides whether dist/Nocturne/ is rebuilt."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_dist() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nocturne_dist_script", ROOT / "scripts" / "dist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_tree(root: Path) -> Path:
    (root / "nocturne_desktop" / "resources").mkdir(parents=True)
    (root / "nocturne_desktop" / "__init__.py").write_text('__version__ = "1"\n')
    (root / "nocturne_desktop" / "resources" / "demo.json").write_text("{}")
    (root / "nocturne.spec").write_text("# spec\n")
    (root / "pyproject.toml").write_text("[project]\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("")
    return root


def test_hash_follows_the_sources_and_nothing_else(tmp_path: Path) -> None:
    dist = load_dist()
    root = make_tree(tmp_path)
    first = dist.source_hash(root)
    assert dist.source_hash(root) == first  # deterministic
    (root / "tests" / "test_x.py").write_text("assert True\n")  # tests are not in the binary
    cache = root / "nocturne_desktop" / "__pycache__"
    cache.mkdir()
    (cache / "x.cpython-311.pyc").write_bytes(b"\0")
    assert dist.source_hash(root) == first
    for changed in ("nocturne_desktop/resources/demo.json", "nocturne.spec", "pyproject.toml"):
        path = root / changed
        before = path.read_text()
        path.write_text(before + " ")
        assert dist.source_hash(root) != first, changed
        path.write_text(before)
    assert dist.source_hash(root) == first
    (root / "nocturne_desktop" / "new.py").write_text("")  # a new module counts
    assert dist.source_hash(root) != first


def test_a_renamed_file_changes_the_hash(tmp_path: Path) -> None:
    dist = load_dist()
    root = make_tree(tmp_path)
    first = dist.source_hash(root)
    (root / "nocturne_desktop" / "resources" / "demo.json").rename(
        root / "nocturne_desktop" / "resources" / "demo2.json")
    assert dist.source_hash(root) != first


def _spec_list(name: str) -> list[str]:
    import ast

    tree = ast.parse((ROOT / "nocturne.spec").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return [str(v) for v in value]
    raise AssertionError(f"{name} not found in nocturne.spec")


def test_the_spec_excludes_no_qt_module_the_app_imports() -> None:
    """If someone imports another Qt module, the frozen app would miss it: fail here first."""
    import re

    used: set[str] = set()
    for path in (ROOT / "nocturne_desktop").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        used.update(re.findall(r"\bPySide6\.(Qt\w+)", text))
        used.update(m for line in re.findall(r"from PySide6 import ([^\n]+)", text)
                    for m in re.findall(r"\bQt\w+", line))
    excluded = set(_spec_list("UNUSED_QT"))
    assert used, "no Qt import found: the scan is broken"
    assert used <= {"QtCore", "QtGui", "QtWidgets"}, used
    assert not used & excluded, f"imported but excluded from the binary: {sorted(used & excluded)}"


def test_the_spec_keeps_test_tools_out() -> None:
    text = (ROOT / "nocturne.spec").read_text()
    block = text[text.index("EXCLUDES = "):text.index("\n]\n", text.index("EXCLUDES = "))]
    for tool in ("pytest", "_pytest", "pytestqt", "hypothesis", "mypy", "ruff"):
        assert f'"{tool}"' in block, tool


def test_strip_leaves_links_other_files_and_the_wheels_vendored_libraries(tmp_path: Path) -> None:
    dist = load_dist()
    elf = b"\x7fELF" + b"\0" * 60
    (tmp_path / "numpy.libs").mkdir()
    (tmp_path / "numpy.libs" / "libscipy_openblas64_.so").write_bytes(elf)  # auditwheel's
    (tmp_path / "PySide6").mkdir()
    (tmp_path / "PySide6" / "QtCore.abi3.so").write_bytes(elf)
    (tmp_path / "libpython3.11.so.1.0").write_bytes(elf)
    (tmp_path / "notes.so.txt").write_bytes(b"not an ELF file")
    (tmp_path / "libopenblas.so").symlink_to(tmp_path / "numpy.libs" / "libscipy_openblas64_.so")
    chosen = [p.relative_to(tmp_path).as_posix() for p in dist.strippable(tmp_path)]
    assert chosen == ["PySide6/QtCore.abi3.so", "libpython3.11.so.1.0"]


def test_a_stripped_extension_module_is_smaller_and_still_loads(tmp_path: Path) -> None:
    import ctypes
    import shutil

    import pytest

    dist = load_dist()
    if shutil.which("strip") is None:
        pytest.skip("no strip on this machine")
    spec = importlib.util.find_spec("_decimal")
    assert spec is not None and spec.origin is not None
    copy = tmp_path / Path(spec.origin).name
    shutil.copy2(spec.origin, copy)
    before = copy.stat().st_size
    saved = dist.strip_libraries([copy])
    assert saved == before - copy.stat().st_size >= 0
    ctypes.CDLL(str(copy))  # the loader still takes it
