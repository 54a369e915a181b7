"""A hand change writes the validity interval exactly as a sleep's mutation would.

The person's hands (edit, pin, unpin, forget now, bring back) and :meth:`Store.apply` write the
facts ``applying.apply`` computes through one loop. A hand change used to leave the interval
(``valid_until``, ``superseded_by``) to the store's "keep it, clear it when the fact comes back"
rule instead of writing the computed one; these cases pin that both give the same row: an
interval survives an edit, a pin and a forget, and a bring-back clears it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from tests.clock import Clock

T0 = 1_700_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "n.db", clock=Clock()) as s:
        yield s


def interval(store: Store, item_id: str) -> tuple[bool, float | None, int | None]:
    """``(active, valid_until, superseded_by)`` of the live row, as stored."""
    row = store._conn.execute(
        "SELECT active, valid_until, superseded_by FROM items WHERE num = ?",
        (int(item_id[2:]),)).fetchone()
    return bool(row[0]), row[1], row[2]


def history_intervals(store: Store, item_id: str) -> list[tuple[float | None, int | None]]:
    return [tuple(r) for r in store._conn.execute(
        "SELECT valid_until, superseded_by FROM item_history WHERE num = ? ORDER BY from_seq",
        (int(item_id[2:]),))]


def test_bring_back_of_a_superseded_fact_clears_its_interval_and_undo_restores_it(
    store: Store,
) -> None:
    old = store.append("human", FactDraft("The user lives in Lisbon.", "context"))
    new = store.append("human", FactDraft("The user lives in Porto.", "context"))
    store.commit_pass([mu.to_row(mu.Supersede(pass_name="reconcile", target=old.id, by=new.id,
                                              reason="moved"))], label="reconcile", sleep_id=None)
    assert interval(store, old.id) == (False, new.created_at, int(new.id[2:]))
    store.bring_back(old.id)
    assert interval(store, old.id) == (True, None, None)
    fact = store.get(old.id)
    assert fact is not None and fact.active and not fact.superseded and fact.valid_until is None
    store.undo()
    assert interval(store, old.id) == (False, new.created_at, int(new.id[2:]))


def test_hand_changes_keep_the_interval_a_fact_already_carries(store: Store) -> None:
    """An active fact with an interval (as an older store or an import may hold): edit, pin,
    unpin and forget now leave it as it was, in the live row and in the history they write;
    bring back clears it."""
    f = store.append("human", FactDraft("The user keeps bees.", "context"))
    other = store.append("human", FactDraft("The user keeps goats.", "context"))
    with store.transaction():
        store._conn.execute("UPDATE items SET valid_until = ?, superseded_by = ? WHERE num = ?",
                            (T0 + 0.5, int(other.id[2:]), int(f.id[2:])))
    kept = (T0 + 0.5, int(other.id[2:]))
    store.edit(f.id, text="The user keeps many bees.")
    assert interval(store, f.id) == (True, *kept)
    store.pin(f.id)
    assert interval(store, f.id) == (True, *kept)
    store.pin(f.id, False)
    assert interval(store, f.id) == (True, *kept)
    store.forget_now(f.id)
    assert interval(store, f.id) == (False, *kept)
    assert set(history_intervals(store, f.id)) == {kept}
    store.bring_back(f.id)
    assert interval(store, f.id) == (True, None, None)


def test_a_sleep_forget_and_a_hand_forget_write_the_same_row(tmp_path: Path) -> None:
    rows = []
    for hand in (False, True):
        with Store(tmp_path / f"{hand}.db", clock=Clock()) as s:
            f = s.append("scratch", FactDraft("A note about lunch.", "context"))
            s.snapshot("one")
            if hand:
                s.forget_now(f.id)
            else:
                s.apply(mu.to_row(mu.Forget(pass_name="forget", target=f.id, reason="old")))
            rows.append(s._conn.execute(
                "SELECT block, text, category, active, valid_until, superseded_by, pinned "
                "FROM items").fetchall())
    assert rows[0] == rows[1]
