"""What the item models' tests share: facts made by number, a store seeded in one transaction,
a recorder of a model's structural signals (no Qt import: the paging's tests run without it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, Fact, FactDraft

if TYPE_CHECKING:
    from PySide6.QtCore import QModelIndex

    from nocturne_desktop.ui.models.tree import BlockTreeModel

T0 = 1_700_000_000.0
PAGE = 500
"""The tree's page (``BlockTreeModel.PAGE``)."""


def fact(n: int, block: str = "scratch", text: str | None = None, active: bool = True,
         category: str = "context") -> Fact:
    """``m_n`` in ``block``, made at ``T0 + n``."""
    return Fact(f"m_{n}", block, text or f"fact number {n}", category, n, T0 + n, T0 + n, active)


def seed_many(path: Path, n: int, block: str = "scratch", *, every: int = 0,
              other: str = "human") -> None:
    """``n`` facts in ``block`` (every ``every``-th one in ``other``), in one transaction."""
    now = time.time()
    with Store(path) as store, store.transaction():
        for i in range(n):
            b = other if every and i % every == 0 else block
            store.append(b, FactDraft(f"Fact number {i} about item{i}.", "context", None, now))


def block_index(model: BlockTreeModel, block: str) -> QModelIndex:
    return model.index(BLOCKS.index(block), 0)


class Recorder:
    """Counts the structural signals a model emits."""

    def __init__(self, model: Any) -> None:
        self.events: list[str] = []
        model.rowsInserted.connect(lambda p, a, b: self.events.append(f"insert {a}-{b}"))
        model.rowsRemoved.connect(lambda p, a, b: self.events.append(f"remove {a}-{b}"))
        model.modelReset.connect(lambda: self.events.append("reset"))
        model.dataChanged.connect(lambda a, b, roles=(): self.events.append(f"changed {a.row()}"))
