"""A pytest plugin for ``make test``'s parallel run (``-n 2 --dist loadgroup -p
tests.xdist_groups``): tests that share a real model server run in one worker, in order.

With pytest-xdist each worker is its own session, so a session fixture such as ``real_engine``
starts once per worker that needs it. Grouping every test that uses one server into one
``xdist_group`` keeps it at one server process (and one core) however the other tests are
spread; the groups and the quick tests then run side by side on the two cores. Tests marked
``engine`` that start servers of their own join the built-in engine's group, so at most one
SmolLM2 model loads at a time.
"""

from __future__ import annotations

import pytest

GROUPS = (
    ("gemma_engine", "gemma"),
    ("llama_cpp_python_server", "llama-cpp-python"),
    ("real_engine", "smollm"),
)
"""(fixture, group), first match wins."""


def group_of(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    for fixture, group in GROUPS:
        if fixture in names:
            return group
    if item.get_closest_marker("engine") is not None:
        return "smollm"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the xdist_group mark is xdist's own
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
