"""Search over every fact: active, forgotten and superseded, each with where it was last active."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "s.db", clock=lambda: NOW) as s:
        yield s


def by_id(store: Store, query: str) -> dict[str, tuple[str, int | None, frozenset[str]]]:
    return {h.fact.id: (h.status, h.last_active_seq, h.matched) for h in store.search_all(query)}


def test_forgotten_fact_is_found_with_the_version_where_it_was_last_active(store: Store) -> None:
    paint = store.append("scratch", FactDraft("Maya paints watercolour landscapes."))
    other = store.append("scratch", FactDraft("Maya has a painting class on Tuesdays."))
    store.append("scratch", FactDraft("Maya had soup for lunch."))
    v1 = store.snapshot("encoded")
    store.forget(paint.id)
    v2 = store.snapshot("forgot")
    assert [f.id for f in store.search("painted")] == [other.id]  # the old search: active only
    hits = by_id(store, "painted")
    assert hits == {
        other.id: ("active", None, frozenset({"painting"})),
        paint.id: ("forgotten", v1.seq, frozenset({"paint"})),
    }
    assert [f.id for f in store.state_at(v1.seq) if f.active and f.id == paint.id] == [paint.id]
    assert v2.seq == v1.seq + 1
    assert [h.status for h in store.search_all("painted")] == ["active", "forgotten"]


def test_superseded_fact_is_found_and_says_so(store: Store) -> None:
    old = store.append("human", FactDraft("User lives in Lisbon.", "identity"))
    new = store.append("human", FactDraft("User moved to Porto.", "identity"))
    v1 = store.snapshot("encoded")
    store.commit_pass([mu.to_row(mu.Supersede(pass_name="reconcile", target=old.id, by=new.id,
                                              reason="moved"))], label="reconcile", sleep_id=None)
    assert by_id(store, "Lisbon's flat") == {old.id: ("superseded", v1.seq, frozenset({"lisbon"}))}
    assert by_id(store, "moving")[new.id][0] == "active"


def test_brought_back_fact_is_active_again_and_edited_text_is_what_is_found(store: Store) -> None:
    f = store.append("scratch", FactDraft("The cat sleeps on the radiator."))
    store.snapshot("one")
    store.forget(f.id)
    v = store.snapshot("two")
    assert by_id(store, "sleeping")[f.id][0] == "forgotten"
    store.restore(1)
    assert by_id(store, "sleeping") == {f.id: ("active", None, frozenset({"sleep"}))}
    store.forget(f.id)
    store.update(f.id, text="The cat naps on the sofa.")
    assert by_id(store, "sleeping") == {}
    assert by_id(store, "napping")[f.id][0] == "forgotten"
    assert v.seq >= 2


def test_fact_never_active_in_a_version_has_no_version(store: Store) -> None:
    f = store.append("scratch", FactDraft("Short-lived note about kayaks."))
    store.forget(f.id)
    assert by_id(store, "kayak") == {f.id: ("forgotten", None, frozenset({"kayak"}))}


def test_hostile_and_fts_syntax_queries_are_plain_words(store: Store) -> None:
    f = store.append("scratch", FactDraft("He wrote <b>bold</b> and <img src=http://x/y.png>."))
    store.forget(f.id)
    for q in ['"', "NEAR(", "*", "-bold", "bold OR", "(img"]:
        store.search_all(q)
    assert by_id(store, "<b>")[f.id][0] == "forgotten"
    assert store.search_all("") == [] and store.search_all("   ") == []
    assert store.search_all("\x00bold")[0].fact.id == f.id


def test_an_older_store_without_the_inactive_index_gets_one_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path) as s:
        f = s.append("scratch", FactDraft("Grandma's recipes for dumplings."))
        s.snapshot("one")
        s.forget(f.id)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE past_fts")
    conn.commit()
    conn.close()
    with Store(path) as s:
        assert [h.status for h in s.search_all("dumpling")] == ["forgotten"]


@pytest.mark.slow
def test_search_all_at_10k_facts_is_fast(tmp_path: Path) -> None:
    with Store(tmp_path / "big.db") as s:
        with s.transaction():
            for i in range(10_000):
                s.append("scratch", FactDraft(f"Fact {i} about topic{i % 300} and painting {i}."))
        s.snapshot("all")
        with s.transaction():
            for i in range(0, 10_000, 2):
                s.forget(f"m_{i + 1}")
        s.snapshot("half forgotten")
        start = time.perf_counter()
        for _ in range(20):
            hits = s.search_all("topic7 topic8 painted", limit=50)
        per = (time.perf_counter() - start) / 20
        assert {h.status for h in hits} == {"active", "forgotten"}
        assert per < 0.1, per


def test_without_fts5_forgotten_facts_are_found_by_like_and_indexed_when_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nocturne_desktop.core import store as store_mod

    path = tmp_path / "n.db"
    monkeypatch.setattr(store_mod, "fts5_available", lambda conn: False)
    with Store(path) as s:
        f = s.append("scratch", FactDraft("The user sails to Lisbon."))
        s.snapshot("one")
        s.forget(f.id)
        assert by_id(s, "lisbon") == {f.id: ("forgotten", 1, frozenset({"lisbon"}))}
    monkeypatch.undo()
    with Store(path) as s:  # FTS5 back: both indexes are rebuilt from the live table
        assert by_id(s, "sailing lisbon") == {
            f.id: ("forgotten", 1, frozenset({"lisbon", "sail"}))}


def test_stopwords_do_not_find_facts_unless_nothing_else_is_asked(store: Store) -> None:
    lisbon = store.append("scratch", FactDraft("The user lives in Lisbon."))
    porto = store.append("scratch", FactDraft("A talk in Porto."))
    assert by_id(store, "living in Lisbon") == {
        lisbon.id: ("active", None, frozenset({"live", "lisbon"}))}  # "in" neither finds nor marks
    assert set(by_id(store, "in")) == {lisbon.id, porto.id}
