"""The parallel run's groups: every test that starts a Letta server runs in one worker (one
server process), whether it uses the session's server or starts one of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.xdist_groups import GROUPS, LONG, RUN_ORDER, group_of, rank_of

ROOT = Path(__file__).resolve().parent.parent


class Item:
    """What :func:`group_of` reads of a collected test: its fixtures and its marks."""

    def __init__(self, fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = (),
                 nodeid: str = "tests/test_x.py::test_x") -> None:
        self.fixturenames = list(fixtures)
        self.nodeid = nodeid
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


def rank(fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = (),
         nodeid: str = "tests/test_x.py::test_x") -> int:
    item = cast(pytest.Item, Item(fixtures, marks, nodeid))
    return rank_of(item, group_of(item))


def test_the_longest_work_goes_first_groups_then_long_tests_then_the_rest() -> None:
    assert sorted(RUN_ORDER) == sorted({group for _, group in GROUPS})
    ranks = [rank(("letta_server", "real_engine"), ("engine", "letta")), rank(("real_engine",)),
             rank(("gemma_engine",)), rank(("llama_cpp_python_server",))]
    assert ranks == sorted(ranks) and len(set(ranks)) == 4  # the groups in RUN_ORDER
    long = rank(("tmp_path",), ("slow",))
    assert long > max(ranks) and rank(nodeid=LONG[0]) == long
    assert rank(("qtbot",)) > long  # the quick tests last, in collection order


def test_every_long_test_named_is_still_there() -> None:
    for nodeid in LONG:
        path, name = nodeid.split("::")[:2]
        assert (ROOT / path).is_file(), nodeid
        assert name in (ROOT / path).read_text(encoding="utf-8"), nodeid


def test_make_test_keeps_this_order() -> None:
    """xdist sorts its work units by their number of tests unless told not to."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--dist loadgroup --no-loadscope-reorder -p tests.xdist_groups" in makefile
