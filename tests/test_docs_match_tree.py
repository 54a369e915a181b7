"""The README's layout map and docs/architecture.md match the tree: every package is named in
both, and every source path the architecture page names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nocturne_desktop"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _layout_block() -> str:
    section = README[README.index("## Layout"):]
    return section[section.index("```"):section.index("```", section.index("```") + 3)]


def _packages() -> list[str]:
    return sorted(str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py")
                  if p.parent != PACKAGE and p.parent.name != "resources")


def test_every_package_is_named_in_the_layout_map_and_the_architecture_page() -> None:
    layout = _layout_block()
    for package in _packages():
        leaf = package.rsplit("/", 1)[-1]
        assert re.search(rf"\b{re.escape(leaf)}/", layout), f"README layout misses {package}/"
        assert f"{package}/" in ARCHITECTURE or f"{leaf}/" in ARCHITECTURE, (
            f"docs/architecture.md misses {package}/")


def test_every_source_path_the_architecture_page_names_exists() -> None:
    named = set(re.findall(r"`((?:core|ui|llm|boot)/[\w/]+?(?:\.py|/))`", ARCHITECTURE))
    assert len(named) > 20
    missing = [n for n in sorted(named) if not (PACKAGE / n).exists()]
    assert not missing, missing
