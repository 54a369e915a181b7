"""Print a fault matrix (scenario | tried | survived | lost | corrupted) at the end of a module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

COUNTS = ("tried", "survived", "lost", "corrupted")


def matrix_lines(title: str, rows: Sequence[dict[str, Any]], width: int, *,
                 notes: bool = False) -> list[str]:
    """The matrix as lines: a title, one row per scenario (with its note if ``notes``), a total."""
    lines = ["", title]
    for row in rows:
        line = (f"  {row['scenario']:<{width}} {row['tried']:>3} {row['survived']:>4} "
                f"{row['lost']:>4} {row['corrupted']:>4}")
        lines.append(f"{line}  {row['note']}" if notes else line)
    tot = {k: sum(r[k] for r in rows) for k in COUNTS}
    lines.append(f"  {'total':<{width}} {tot['tried']:>3} {tot['survived']:>4} {tot['lost']:>4} "
                 f"{tot['corrupted']:>4}")
    return lines


def print_matrix(request: pytest.FixtureRequest, title: str, rows: Sequence[dict[str, Any]],
                 width: int, *, notes: bool = False) -> None:
    """Write the matrix through pytest's terminal reporter (plain ``print`` without one)."""
    if not rows:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    for line in matrix_lines(title, rows, width, notes=notes):
        if reporter is not None:
            reporter.write_line(line)
        else:  # pragma: no cover
            print(line)
