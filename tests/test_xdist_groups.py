"""The parallel run's groups: every test that starts a Letta server runs in one worker (one
server process), whether it uses the session's server or starts one of its own."""

from __future__ import annotations

from typing import Any, cast

import pytest

from tests.xdist_groups import group_of


class Item:
    """What :func:`group_of` reads of a collected test: its fixtures and its marks."""

    def __init__(self, fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = ()) -> None:
        self.fixturenames = list(fixtures)
        self._marks = {name: getattr(pytest.mark, name) for name in marks}

    def get_closest_marker(self, name: str) -> Any:
        return self._marks.get(name)


def group(fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = ()) -> str | None:
    return group_of(cast(pytest.Item, Item(fixtures, marks)))


def test_every_test_that_starts_a_letta_server_joins_the_letta_group() -> None:
    assert group(("letta_server", "qtbot"), ("letta", "slow")) == "letta"
    assert group(("tmp_path",), ("letta", "slow")) == "letta"  # a script starting its own server
    # one needing the built-in engine too runs with the Letta server (its engine is a second one)
    assert group(("letta_server", "real_engine"), ("engine", "letta")) == "letta"


def test_the_engine_groups_and_the_quick_tests_stay_as_they_were() -> None:
    assert group(("real_engine",)) == "smollm"
    assert group(("tmp_path",), ("engine",)) == "smollm"
    assert group(("gemma_engine", "real_engine")) == "gemma"
    assert group(("tmp_path", "qtbot"), ("slow",)) is None
