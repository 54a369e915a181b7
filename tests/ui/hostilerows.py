"""The window's rows of the hostile-input matrix (S-DOOR-4, S-DOOR-1 at the window's doors):
recorded by the tests that try them (the plain-text walk, the links, the key confirmation, the
window's doors) and printed at the end of the run, after the core's matrix
(``tests/core/test_hostile_matrix.py``), with the same columns.

*refused*: a hostile text shown as its characters, a misleading link that asked first, a
request to a new server without the key, a secret refused with its rule; *leaked*: a text
rendered as markup, a link opened unasked, a request that carried the key before the person
said yes, a secret written; *lost*: what typed or faithful went missing.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("tried", "refused", "lost", "leaked")
ROWS: list[dict[str, Any]] = []
TITLE = "hostile-input matrix, the window (scenario | tried | refused | lost | leaked)"


def record(scenario: str, *, tried: int = 1, refused: int = 1, lost: int = 0, leaked: int = 0,
           note: str = "") -> None:
    ROWS.append({"scenario": scenario, "tried": tried, "refused": refused, "lost": lost,
                 "leaked": leaked, "note": note})
