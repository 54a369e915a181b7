"""Print a fault matrix (scenario | tried | survived | lost | corrupted) at the end of a module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

COUNTS = ("tried", "survived", "lost", "corrupted")


def matrix_lines(title: str, rows: Sequence[dict[str, Any]], width: int, *,
                 notes: bool = False, columns: Sequence[str] = COUNTS) -> list[str]:
    """The matrix as lines: a title, one row per scenario (with its note if ``notes``), a total."""
    lines = ["", title]
    for row in rows:
        line = f"  {row['scenario']:<{width}}" + "".join(f" {row[k]:>4}" for k in columns)
        lines.append(f"{line}  {row['note']}" if notes else line)
    tot = {k: sum(r[k] for r in rows) for k in columns}
    lines.append(f"  {'total':<{width}}" + "".join(f" {tot[k]:>4}" for k in columns))
    return lines


def print_matrix(request: pytest.FixtureRequest, title: str, rows: Sequence[dict[str, Any]],
                 width: int, *, notes: bool = False, columns: Sequence[str] = COUNTS) -> None:
    """Keep the matrix for the end of the run (:func:`pytest_terminal_summary` in the tests'
    conftest writes it, where output capture does not swallow it)."""
    if not rows:
        return
    PENDING.append(matrix_lines(title, rows, width, notes=notes, columns=columns))


PENDING: list[list[str]] = []
"""Matrices to print at the end of the run."""


def write_pending(reporter: Any) -> None:
    """Write every kept matrix through pytest's terminal reporter (the summary hook)."""
    for lines in PENDING:
        for line in lines:
            reporter.write_line(line)
    PENDING.clear()
