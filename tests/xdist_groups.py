"""A pytest plugin for ``make test``'s parallel run (``-n 2 --dist loadgroup
--no-loadscope-reorder -p tests.xdist_groups``): tests that share a real server (a model
server, the Letta server) run in one worker, in order, and the longest work goes first.

With pytest-xdist each worker is its own session, so a session fixture such as ``real_engine``
starts once per worker that needs it. Grouping every test that uses one server into one
``xdist_group`` keeps it at one server process (and one core) however the other tests are
spread; the groups and the quick tests then run side by side on the two cores. Tests marked
``engine`` that start servers of their own join the built-in engine's group, so at most one
SmolLM2 model loads at a time; those marked ``letta`` join the Letta server's. A test that
needs both servers runs in the Letta group (one Letta server matters more), where it starts a
second SmolLM2 of its own.

The order is longest first, so that no worker is left with a long test at the end while the
other idles: the groups in :data:`RUN_ORDER`, then the long tests outside them (marked
``slow``, or named in :data:`LONG`), then the rest in collection order. xdist would otherwise
sort its work units by their number of tests (``--no-loadscope-reorder`` keeps this order).
"""

from __future__ import annotations

import pytest

GROUPS = (
    ("gemma_engine", "gemma"),
    ("llama_cpp_python_server", "llama-cpp-python"),
    ("letta_server", "letta"),
    ("real_engine", "smollm"),
)
"""(fixture, group): a test's group is the first whose fixture it uses."""

RUN_ORDER = ("letta", "smollm", "gemma", "llama-cpp-python")
"""The groups longest first (alone on an idle machine: the Letta server's tests with the built-in
engine's verify ~180 s, the built-in engine's other tests ~100 s, Gemma's verify ~90 s,
llama-cpp-python's server ~65 s)."""
RANK = {group: i for i, group in enumerate(RUN_ORDER)}

LONG = (
    "tests/ui/test_tree_window.py::test_the_rows_of_all_blocks_are_bounded_too",
    "tests/core/test_store_versions_stateful.py::TestVersionedStore",
)
"""Tests outside the groups that take 20 s or more alone without the ``slow`` mark."""


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


def rank_of(item: pytest.Item, group: str | None) -> int:
    """Where ``item`` runs: its group's place in :data:`RUN_ORDER`, then the long tests, then
    the rest."""
    if group is not None:
        return RANK[group]
    nodeid = getattr(item, "nodeid", "")
    long = item.get_closest_marker("slow") is not None or nodeid.startswith(LONG)
    return len(RANK) + (0 if long else 1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the xdist_group mark is xdist's own
    rank: dict[str, int] = {}
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
        rank[item.nodeid] = rank_of(item, group)
    items.sort(key=lambda item: rank[item.nodeid])  # stable: each group keeps its own order
