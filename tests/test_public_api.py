"""The public API a script uses: the README's example runs, every exported name resolves, and
the core's old module paths still import (with a warning naming the new place)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import nocturne_desktop.core as core

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    marker = text.index("<!-- public-api-example")
    block = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert block is not None, "the README's public-API example has no python block"
    return block.group(1)


def test_the_readme_example_runs_and_sleeps_by_the_rules() -> None:
    out = subprocess.run([sys.executable, "-W", "error", "-c", _example()],
                         capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("sleep started")
    assert "sleep done" in out.stdout
    human = out.stdout.split("[human")[1].split("[episodes")[0]
    # the two copies became one fact, promoted out of scratch by the rules
    assert human.count("The user lives in Lisbon.") == 1
    assert "The user drinks green tea every morning." in human
    assert "(empty)" in out.stdout.split("[scratch")[1]


@pytest.mark.parametrize("name", core.__all__)
def test_every_public_name_resolves(name: str) -> None:
    value = getattr(core, name)
    assert getattr(value, "__name__", name) == name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nonsense'"):
        core.Nonsense  # noqa: B018


@pytest.mark.parametrize("old", sorted(core.MOVED))
def test_old_module_paths_import_with_a_warning(old: str) -> None:
    sys.modules.pop(f"nocturne_desktop.core.{old}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = __import__(f"nocturne_desktop.core.{old}", fromlist=["_"])
    assert module.__name__ == f"nocturne_desktop.core.{core.MOVED[old]}"
    assert any(issubclass(w.category, DeprecationWarning) and core.MOVED[old] in str(w.message)
               for w in caught)
