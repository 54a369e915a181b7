"""The models package gives each name it lists from the module that holds it, loading that
module on first use; what it tells the type checker names the same modules; the former paths of
the plan's model and pages give the same objects, with a warning."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop.ui import models


def test_every_listed_name_is_its_module_s_own() -> None:
    assert models.__all__ == sorted(models._WHERE)
    for name, module in models._WHERE.items():
        held = importlib.import_module(f"nocturne_desktop.ui.models.{module}")
        assert getattr(models, name) is getattr(held, name), name
    assert set(models.__all__) <= set(dir(models))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = models.nothing_here


def test_the_type_checker_sees_the_same_names_from_the_same_modules() -> None:
    tree = ast.parse(Path(models.__file__).read_text(encoding="utf-8"))
    typed = {alias.asname or alias.name: node.module.rsplit(".", 1)[-1]
             for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
             and node.module.startswith("nocturne_desktop.ui.models.") for alias in node.names}
    assert typed == models._WHERE


def test_a_name_loads_only_its_module() -> None:
    code = ("import sys\nfrom nocturne_desktop.ui.models import one_line\n"
            "print(sorted(m for m in sys.modules if m.startswith('nocturne_desktop.ui.models')))\n"
            "print(any(m.startswith('PySide6') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, qt = out.stdout.split("\n")[:2]
    assert loaded == "['nocturne_desktop.ui.models', 'nocturne_desktop.ui.models.text']"
    assert qt == "False"
