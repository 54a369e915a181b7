"""sorted_yielding is sorted(), in steps (nocturne_desktop.core.stepwise)."""

from __future__ import annotations

import random

from nocturne_desktop.core.stepwise import sorted_yielding


def test_equals_sorted_with_ties_kept_in_input_order() -> None:
    rng = random.Random(3)
    items = [(rng.randint(0, 20), rng.random(), n) for n in range(10_007)]
    key = lambda it: (it[0], round(it[1], 1))  # noqa: E731 - many equal keys
    for run in (1, 7, 100, 4096, 20_000):
        assert sorted_yielding(items, key, run=run) == sorted(items, key=key)


def test_small_empty_and_any_iterable() -> None:
    assert sorted_yielding([], key=lambda x: x) == []
    assert sorted_yielding(iter([3, 1, 2]), key=lambda x: -x, run=1) == [3, 2, 1]


def test_items_that_do_not_compare_are_never_compared() -> None:
    class Thing:
        def __init__(self, k: int) -> None:
            self.k = k

    things = [Thing(k % 5) for k in range(50)]
    out = sorted_yielding(things, key=lambda t: t.k, run=4)
    assert out == sorted(things, key=lambda t: t.k)


def test_release_empties_nested_containers() -> None:
    from nocturne_desktop.core.stepwise import release

    inner = {n: [n] * 3 for n in range(3000)}
    outer = {1: inner, 2: set(range(5000)), 3: [list(range(2000)), [1]]}
    big_list = [set(range(1500)), {"a": 1}]
    release(outer, big_list, "not a container")
    assert outer == {} and big_list == [] and inner == {}
