"""A pytest plugin for ``make test``'s parallel run (``-n 2 --dist loadgroup -p
tests.xdist_groups``): tests that share a real server (a model server, the Letta server) run
in one worker, in order.

With pytest-xdist each worker is its own session, so a session fixture such as ``real_engine``
starts once per worker that needs it. Grouping every test that uses one server into one
``xdist_group`` keeps it at one server process (and one core) however the other tests are
spread; the groups and the quick tests then run side by side on the two cores. Tests marked
``engine`` that start servers of their own join the built-in engine's group, so at most one
SmolLM2 model loads at a time; those marked ``letta`` join the Letta server's. A test that
needs both servers runs in the Letta group (one Letta server matters more: it takes ~1 min
to start), where it starts a second SmolLM2 of its own.

The groups are moved to the front of the run, longest first (Gemma's verify is the longest
single test): a worker that starts one of them at once and the other worker's quick tests
finish close together, where a group met late would run alone at the end.
"""

from __future__ import annotations

import pytest

GROUPS = (
    ("gemma_engine", "gemma"),
    ("llama_cpp_python_server", "llama-cpp-python"),
    ("letta_server", "letta"),
    ("real_engine", "smollm"),
)
"""(fixture, group), first match wins; also the order the groups run in."""
RANK = {group: i for i, (_, group) in enumerate(GROUPS)}


def group_of(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    for fixture, group in GROUPS:
        if fixture in names:
            return group
    if item.get_closest_marker("engine") is not None:
        return "smollm"
    if item.get_closest_marker("letta") is not None:  # a script starting a Letta server of its own
        return "letta"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the xdist_group mark is xdist's own
    rank: dict[str, int] = {}
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
        rank[item.nodeid] = RANK.get(group, len(RANK)) if group is not None else len(RANK)
    items.sort(key=lambda item: rank[item.nodeid])  # stable: each group keeps its own order
