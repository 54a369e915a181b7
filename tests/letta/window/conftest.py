"""The window's test harness (``tests/ui/conftest.py``: every folder in tmp, no leaked thread,
``make_window``) for the window's tests against the real Letta server of ``tests/letta``."""

from __future__ import annotations

import pytest

from tests.ui.conftest import (  # noqa: F401  (fixtures, shared as they are)
    db_path,
    make_window,
    no_leaked_threads,
    server_settings,
    tmp_folders,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # as in tests/ui: the offscreen platform's size-hint warning says nothing about our code
    for item in items:
        if "tests/letta/window" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.qt_log_ignore("propagateSizeHints"))
