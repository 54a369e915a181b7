"""Search folds inflections like the text measures, ranks with explicable boosts, stays cheap."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.store import (
    SCHEMA_VERSION,
    SEARCH_BLOCK_BOOST,
    SEARCH_RECENCY_BOOST,
    Store,
)
from nocturne_desktop.core.types import FactDraft, Mutation

NOW = 1_800_000_000.0
DAY = 86400.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "s.db", clock=lambda: NOW) as s:
        yield s


def ids(facts: list) -> list[str]:  # type: ignore[type-arg]
    return [f.id for f in facts]


def test_search_folds_verb_and_plural_endings(store: Store) -> None:
    paint = store.append("scratch", FactDraft("Maya paints watercolour landscapes on Sunday mornings."))
    move = store.append("scratch", FactDraft("Maya's sister Ines moved to Porto last spring."))
    store.append("scratch", FactDraft("Maya had soup for lunch."))
    assert ids(store.search("What has Maya been painting?"))[0] == paint.id
    assert ids(store.search("painted"))[0] == paint.id
    assert ids(store.search("sisters moving"))[0] == move.id
    assert ids(store.search("landscape morning")) == [paint.id]


@pytest.mark.parametrize(
    ("fact_word", "query_word"),
    [("camps", "camp"), ("Lisbon's", "lisbon"), ("users'", "user"), ("business", "business"),
     ("cats", "cat's")],
)
def test_search_finds_what_stem_token_calls_the_same_word(
    store: Store, fact_word: str, query_word: str
) -> None:
    assert tm.stem_token(fact_word) == tm.stem_token(query_word)
    f = store.append("scratch", FactDraft(f"The note mentions {fact_word} twice: {fact_word}."))
    store.append("scratch", FactDraft("Something unrelated entirely."))
    assert ids(store.search(query_word)) == [f.id]


def test_score_is_bm25_times_block_and_recency_boosts(store: Store) -> None:
    text = "The user keeps a bearded dragon called Saffron."
    scratch = store.append("scratch", FactDraft(text, created_at=NOW))
    human = store.append("human", FactDraft(text, created_at=NOW))
    old = store.append("human", FactDraft(text, created_at=NOW - 200 * DAY))
    half = store.append("human", FactDraft(text, created_at=NOW - 45 * DAY))
    hits = store.search_scored("dragon")
    assert [h.fact.id for h in hits] == [human.id, half.id, scratch.id, old.id]
    by_id = {h.fact.id: h for h in hits}
    for h in hits:
        assert h.bm25 > 0
        assert h.score == pytest.approx(h.bm25 * (1 + h.block + h.recency))
    assert by_id[human.id].block == SEARCH_BLOCK_BOOST["human"]
    assert by_id[scratch.id].block == SEARCH_BLOCK_BOOST["scratch"] == 0.0
    assert by_id[human.id].recency == pytest.approx(SEARCH_RECENCY_BOOST)
    assert by_id[half.id].recency == pytest.approx(SEARCH_RECENCY_BOOST / 2)
    assert by_id[old.id].recency == 0.0
    assert ids(store.search("dragon")) == [h.fact.id for h in hits]


def test_the_index_follows_edits_moves_and_forgetting(store: Store) -> None:
    f = store.append("scratch", FactDraft("Maya adopted a greyhound.", "event"))
    store.apply(Mutation(pass_name="promote", kind="promote", item_id=f.id, accepted=True,
                         reason="r", decided_by="engine-promotion-rule",
                         refs={"fromBlock": "scratch", "toBlock": "episodes"}))
    assert ids(store.search("adopting", exclude_blocks=["scratch"])) == [f.id]
    assert store.search("adopting", exclude_blocks=["episodes"]) == []
    store.update(f.id, text="Maya adopted a rabbit.")
    assert store.search("greyhounds") == [] and ids(store.search("rabbits")) == [f.id]
    store.forget(f.id)
    assert store.search("rabbits") == []


def test_block_filter_widens_the_pool_when_filtered_facts_rank_first(store: Store) -> None:
    with store.transaction():
        for i in range(1_200):  # more than one IN chunk of candidates before the wanted one
            store.append("human", FactDraft(f"Piano piano piano lesson {i}."))
        wanted = store.append("scratch", FactDraft("A piano was mentioned once in passing today."))
    assert ids(store.search("piano", limit=3, exclude_blocks=["human"])) == [wanted.id]


def test_words_in_most_facts_are_left_out_when_rarer_ones_remain(store: Store) -> None:
    with store.transaction():
        for i in range(1_100):
            store.append("scratch", FactDraft(f"The user noted item number {i}."))
        rare = store.append("scratch", FactDraft("The user is allergic to penicillin."))
    assert ids(store.search("user penicillin")) == [rare.id]  # "user" alone matches 1,101
    assert len(store.search("user", limit=5)) == 5  # alone, a common word still searches


def test_recent_is_newest_first_and_filters_blocks(store: Store) -> None:
    a = store.append("scratch", FactDraft("a", created_at=NOW - 3 * DAY))
    b = store.append("human", FactDraft("b", created_at=NOW - 2 * DAY))
    c = store.append("episodes", FactDraft("c", created_at=NOW - 1 * DAY))
    store.forget(a.id)
    assert ids(store.recent(limit=5)) == [c.id, b.id]
    assert ids(store.recent(limit=5, exclude_blocks=["episodes"])) == [b.id]
    assert store.recent(limit=0) == []


def test_a_schema_1_store_is_reindexed_with_folded_words(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path, clock=lambda: NOW) as s:
        f = s.append("scratch", FactDraft("Maya paints watercolour landscapes."))
    raw = sqlite3.connect(path)
    try:  # make it what schema 1 wrote: a raw-text external-content index, no newest-first index
        raw.execute("DROP TABLE items_fts")
        raw.execute("DROP INDEX items_recent")
        raw.execute("DROP TABLE strengths")  # schema 5's
        raw.execute(
            "CREATE VIRTUAL TABLE items_fts USING fts5(text, content='items', "
            "content_rowid='num', tokenize='unicode61 remove_diacritics 2')"
        )
        raw.execute("INSERT INTO items_fts(rowid, text) SELECT num, text FROM items")
        # nor what later schemas added (pins, conversations)
        raw.execute("DROP INDEX turns_conversation")
        raw.execute("ALTER TABLE turns DROP COLUMN conversation")
        raw.execute("DROP TABLE conversations")
        raw.execute("ALTER TABLE items DROP COLUMN pinned")
        raw.execute("ALTER TABLE item_history DROP COLUMN pinned")
        raw.execute("PRAGMA user_version = 1")
        raw.commit()
    finally:
        raw.close()
    with Store(path) as s:
        assert ids(s.search("painted")) == [f.id]
        assert ids(s.recent(limit=1)) == [f.id]
        assert s.integrity_check() == "ok"
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        (sql,) = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'items_fts'").fetchone()
        assert "porter" in sql
    finally:
        raw.close()


def test_the_boosts_reorder_the_bm25_pool_and_the_limit_takes_their_best(store: Store) -> None:
    """Every hit's score is its parts' (BM25 times one plus block, recency and salience, the
    boost never below -0.5), best first (ties: the older id); a limit of L is the best L of the
    2 L facts BM25 puts first (what is left out of a full search is not asked for)."""
    rng = random.Random(4)
    words = ["kayak", "river", "paddle", "canoe", "lake", "rapids", "weir", "harbour"]
    with store.transaction():
        facts = [store.append(rng.choice(["human", "scratch", "episodes", "persona"]), FactDraft(
            " ".join(rng.choices(words, k=rng.randint(1, 6))
                     + [f"note{rng.randint(0, 999)}" for _ in range(rng.randint(0, 12))])
            + f" trip {i}.",
            rng.choice(["event", "context", "preferences"]),
            created_at=NOW - rng.uniform(0, 150) * DAY, importance=rng.choice([None, 1, 3, 5])))
            for i in range(400)]
    for f in rng.sample(facts, 60):
        store.record_use([f.id], at=NOW - rng.uniform(0, 60) * DAY)
    for f in rng.sample(facts, 40):
        store.forget(f.id)
    compared: list[int] = []
    for query, excluded in (("kayak weir", ()), ("paddle lake", ()),
                            ("river harbour rapids", ("human",)), ("canoe", ("persona", "scratch"))):
        every = store.search_scored(query, limit=1000, exclude_blocks=excluded, now=NOW)
        assert every and all(h.fact.active and h.fact.block not in excluded for h in every)
        for h in every:
            boost = max(-0.5, h.block + h.recency + h.salience)
            assert h.score == pytest.approx(h.bm25 * (1 + boost))
        assert every == sorted(every, key=lambda h: (-h.score, int(h.fact.id[2:])))
        for limit in (1, 5, 30):
            by_bm25 = sorted(every, key=lambda h: -h.bm25)
            pool = by_bm25[: 2 * limit]
            if len(by_bm25) > 2 * limit and by_bm25[2 * limit].bm25 == pytest.approx(
                    pool[-1].bm25, rel=1e-9):
                continue  # equal BM25 at the pool's edge: either may be in it
            got = store.search_scored(query, limit=limit, exclude_blocks=excluded, now=NOW)
            want = sorted(pool, key=lambda h: (-h.score, int(h.fact.id[2:])))[:limit]
            if not excluded:
                assert got == want
                compared.append(limit)
            assert [h.fact for h in got] == [store.get(h.fact.id) for h in got]
    assert len(compared) >= 3
