"""Generators that yield progress and return a result (a sleep's events then its figures, a
plan's events then the plan, a quiz's steps then its report): the two ways their callers
use them without the progress, or with each step turned into something else."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

Y = TypeVar("Y")
Z = TypeVar("Z")
R = TypeVar("R")


def result_of(gen: Generator[Any, None, R]) -> R:
    """Run ``gen`` to its end, dropping what it yields; its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as done:
            result: R = done.value
            return result


def map_yields(gen: Generator[Y, None, R], fn: Callable[[Y], Z]) -> Generator[Z, None, R]:
    """``gen`` with ``fn`` applied to each thing it yields, returning what ``gen`` returns
    (``return (yield from map_yields(gen, fn))`` relays a generator's result)."""
    while True:
        try:
            item = next(gen)
        except StopIteration as done:
            result: R = done.value
            return result
        yield fn(item)
