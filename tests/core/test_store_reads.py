"""Reads by id and by page for the views (core/store/reads.py): each returns what the store holds."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from nocturne_desktop.core.store import Store, reads
from nocturne_desktop.core.types import FactDraft


def make(path: Path) -> Store:
    store = Store(path)
    now = time.time()
    for i, (block, text) in enumerate([("human", "Lives in Lisbon"), ("scratch", "Likes the Café"),
                                       ("scratch", "Plays chess"), ("scratch", "Owns a kayak"),
                                       ("episodes", "Went to Porto")]):
        store.append(block, FactDraft(text, "context", i + 1, now))
    return store


def test_pages_ids_counts_and_matches(tmp_path: Path) -> None:
    with make(tmp_path / "m.db") as store:
        store.forget("m_3")
        page, more = reads.block_page(store, "scratch", limit=1)
        assert [f.id for f in page] == ["m_2"] and more
        page, more = reads.block_page(store, "scratch", after=2, limit=5)
        assert [f.id for f in page] == ["m_4"] and not more  # m_3 is forgotten
        page, _ = reads.block_page(store, "scratch", include_inactive=True, upto=3)
        assert [f.id for f in page] == ["m_2", "m_3"]
        got = reads.facts_by_ids(store, ["m_3", "m_5", "m_99"])
        assert got["m_3"] == store.get("m_3") and got["m_5"] == store.get("m_5") and "m_99" not in got
        assert reads.block_counts(store)["scratch"] == (2, 0, 1)
        assert reads.matching_ids(store, "LISBON") == {"persona": [], "human": [1], "episodes": [],
                                                       "scratch": []}
        assert reads.matching_ids(store, "CAFÉ")["scratch"] == [2]  # not ASCII: folded in Python
        assert reads.matching_ids(store, "chess")["scratch"] == []  # forgotten
        assert reads.matching_ids(store, "chess", include_inactive=True)["scratch"] == [3]
        assert reads.matching_ids(store, "m_5")["episodes"] == [5]


def test_changed_rows_and_their_merge(tmp_path: Path) -> None:
    with make(tmp_path / "m.db") as store:
        store.edit("m_2", text="Likes the old café")
        first = reads.read_changed(store, store.last_changes)
        assert first.facts["m_2"].text == "Likes the old café" and first.versions
        assert first.counts is not None and first.counts["scratch"] == (3, 0, 0)
        store.forget_now("m_2")
        second = reads.read_changed(store, store.last_changes, counts=False)
        merged = reads.merge_changed([first, second])
        assert merged.facts["m_2"].active is False  # the later value wins
        assert merged.counts is None  # the last commit left them to the view
        assert [v.seq for v in merged.versions] == sorted(
            v.seq for v in first.versions + second.versions)
        assert not merged.reload


def test_rows_of_commit_never_fails_the_writer(tmp_path: Path, caplog: Any) -> None:
    with make(tmp_path / "m.db") as store:
        store.forget("m_3")
        changes = store.last_changes
        rows = reads.rows_of_commit(store, changes)
        assert rows.complete and rows.facts["m_3"].active is False and rows.counts is not None
        assert reads.rows_of_commit(store, changes, counts=False).counts is None
        store.close()  # a read now fails: the descriptor alone, marked incomplete, and logged
        with caplog.at_level(logging.ERROR, logger="nocturne.store"):
            failed = reads.rows_of_commit(store, changes)
        assert not failed.complete and failed.changes == changes and failed.reload
        assert "reading the rows of a commit failed" in caplog.text


def counted(store: Store) -> int:
    """The active facts, counted from the facts themselves."""
    with store._read() as c:
        return int(c.execute("SELECT count(*) FROM items WHERE active = 1").fetchone()[0])


def test_the_active_count_read_from_the_index_is_the_facts_count_through_every_write(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """active_count counts the word index's rows (cheap at 100k facts): it must say what the
    facts say after every kind of write, inside a transaction, after a rollback, a restore,
    an import, and when a process without FTS5 wrote last (the index then counts nothing)."""
    from nocturne_desktop.core import mutations as mu
    from nocturne_desktop.core.store import store as store_mod
    from nocturne_desktop.core.store.exchange import export_json, import_export, parse_export

    with make(tmp_path / "m.db") as store:
        def same() -> None:
            assert store.active_count() == counted(store) == len(store.active_facts())

        same()
        v0 = store.snapshot("five")
        with store.transaction():
            more = [store.append("scratch", FactDraft(f"Walked {i} km", "event")) for i in range(30)]
            same()  # uncommitted, in this connection
            for f in more[::3]:
                store.forget(f.id)
            same()
        try:
            with store.transaction():
                store.forget(more[1].id)
                raise RuntimeError("undo this")
        except RuntimeError:
            pass
        same()
        store.update(more[2].id, text="Walked two hundred km")
        store.update(more[4].id, block="episodes")
        store.commit_pass([mu.to_row(mu.Merge(
            pass_name="merge", into=more[5].id, from_ids=(more[5].id, more[7].id),
            merged_text="Walked 5 and 7 km", reason="same walk"))], label="merged", sleep_id=None)
        same()
        store.restore(v0.seq)
        same()
        assert store.active_count() == 5
        with Store(tmp_path / "new.db") as fresh:
            import_export(fresh, parse_export(export_json(store).encode()))
            assert fresh.active_count() == counted(fresh) == 5
    with Store(tmp_path / "m.db") as kept:  # open while a process without FTS5 writes
        monkeypatch.setattr(store_mod, "fts5_available", lambda conn: False)
        with Store(tmp_path / "m.db") as plain:
            plain.append("scratch", FactDraft("Owns a canoe", "context"))
            plain.append("scratch", FactDraft("Owns a paddle", "context"))
        monkeypatch.undo()
        with kept._read() as c:  # the word index did not see them
            assert c.execute("SELECT count(*) FROM items_fts_docsize").fetchone()[0] == 5
        assert kept.active_count() == counted(kept) == 7
