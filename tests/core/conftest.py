"""Fixtures of the core tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.core.storeholder import Holder


@pytest.fixture
def holder() -> Iterator[Holder]:
    """A started store-holder process (``tests/core/storeholder.py``), quit after the test."""
    h = Holder()
    try:
        yield h
    finally:
        h.close()
