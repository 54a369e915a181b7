"""Meaning vectors: made at every door that writes a fact's text, kept with the fact, made
again on import and on a model change; the store works by words when there is no model."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.embedder import default_embedder
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.exchange import export_json, import_export, parse_export
from nocturne_desktop.core.store.ranking import WORDS_ONLY
from nocturne_desktop.core.store.vectors import _best
from nocturne_desktop.core.types import FactDraft


def model() -> object:
    e = default_embedder()
    assert e is not None
    return e


def stored(store: Store, item_id: str) -> NDArray[np.float32] | None:
    """The vector the store holds for ``item_id`` (None: none)."""
    with store._read() as c:
        row = c.execute("SELECT vec FROM vectors WHERE num = ?", (int(item_id[2:]),)).fetchone()
    return None if row is None or row[0] is None else np.frombuffer(row[0], np.float16).astype(
        np.float32)


def close_to(store: Store, item_id: str, text: str) -> bool:
    v = stored(store, item_id)
    want = default_embedder().embed([text])[0]  # type: ignore[union-attr]
    return v is not None and float(np.abs(v - want).max()) < 2e-3


class Failing:
    """An embedder that fails on every call (a damaged model)."""

    name = "failing/1"
    dim = 256

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise RuntimeError("the model is damaged")


class Other:
    """Another model: the first ``dim`` letters' counts (enough to tell texts apart)."""

    name = "letters/1"
    dim = 26

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "m.db") as s:
        yield s


def test_append_update_and_replace_write_the_vector_of_the_new_text(store: Store) -> None:
    a = store.append("scratch", FactDraft("Maya works as a nurse.", "identity"))
    assert close_to(store, a.id, "Maya works as a nurse.")
    store.update(a.id, text="Maya works as a midwife.")
    assert close_to(store, a.id, "Maya works as a midwife.")
    b, c = store.replace("human", [FactDraft("Maya drives a Fiat.", "context"),
                                   FactDraft("Maya has a greyhound.", "context")])
    assert close_to(store, b.id, "Maya drives a Fiat.") and close_to(store, c.id, "Maya has a greyhound.")
    assert store.vectors_complete()


def test_a_sleeps_merge_and_an_undo_write_the_vectors_of_the_texts_they_leave(store: Store) -> None:
    a = store.append("scratch", FactDraft("Maya runs.", "preferences"))
    b = store.append("scratch", FactDraft("Maya runs on Sundays.", "preferences"))
    v0 = store.snapshot("before")
    merged = "Maya runs on Sunday mornings."
    store.commit_pass([mu.to_row(mu.Merge(pass_name="merge", into=a.id, from_ids=(a.id, b.id),
                                          merged_text=merged, reason="same habit"))],
                      label="after", sleep_id=None)
    assert close_to(store, a.id, merged)
    store.restore(v0.seq)
    assert close_to(store, a.id, "Maya runs.")


def test_an_import_makes_every_vector_again(store: Store, tmp_path: Path) -> None:
    store.append("human", FactDraft("Maya lives in Bristol.", "identity"))
    store.append("scratch", FactDraft("Maya ran the Bristol 10k.", "event"))
    export = parse_export(export_json(store).encode())
    with Store(tmp_path / "new.db") as fresh:
        import_export(fresh, export)
        for f in fresh.all_facts():
            assert close_to(fresh, f.id, f.text)
        assert fresh.vectors_complete()


def test_without_a_model_the_facts_commit_and_are_found_by_their_words(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", embedder=None) as s:
        f = s.append("scratch", FactDraft("Maya works as a nurse.", "identity"))
        assert stored(s, f.id) is None and not s.vectors_complete()
        assert s.similar("What does she do for a living?", limit=5) == []
        assert [h.fact.id for h in s.rank("nurse", limit=5)] == [f.id]
    with Store(tmp_path / "m.db") as s:  # a process with the model fills in what is missing
        hits = s.similar("What does she do for a living?", limit=5)
        assert [n for n, _ in hits] == [int(f.id[2:])] and s.vectors_complete()
        assert close_to(s, f.id, "Maya works as a nurse.")


def test_a_failing_model_loses_no_fact_and_leaves_no_stale_vector(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        f = s.append("scratch", FactDraft("Maya works as a nurse.", "identity"))
    with Store(tmp_path / "m.db", embedder=Failing()) as s:  # type: ignore[arg-type]
        g = s.append("scratch", FactDraft("Maya drives a Fiat.", "context"))
        s.update(f.id, text="Maya works as a midwife.")
        assert s.get(g.id) is not None and s.get(f.id).text == "Maya works as a midwife."  # type: ignore[union-attr]
        assert stored(s, f.id) is None  # the nurse's vector is not kept for the midwife
    with Store(tmp_path / "m.db") as s:
        s.sync_vectors()
        assert close_to(s, f.id, "Maya works as a midwife.") and close_to(s, g.id, "Maya drives a Fiat.")


def test_another_model_makes_every_vector_again(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        f = s.append("scratch", FactDraft("Maya works as a nurse.", "identity"))
    with Store(tmp_path / "m.db", embedder=Other()) as s:  # type: ignore[arg-type]
        assert not s.vectors_complete()
        assert [n for n, _ in s.similar("nurse", limit=1)] == [int(f.id[2:])]
        v = stored(s, f.id)
        assert v is not None and v.shape == (26,) and s.vectors_complete()


def test_the_matrix_follows_another_connections_writes_and_forgettings(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as reader, Store(tmp_path / "m.db") as writer:
        a = writer.append("scratch", FactDraft("Maya works as a nurse at the hospital.", "identity"))
        q = "What does she do for a living?"
        assert [n for n, _ in reader.similar(q, limit=3)] == [int(a.id[2:])]
        b = writer.append("scratch", FactDraft("Maya had soup for lunch.", "event"))
        assert {n for n, _ in reader.similar(q, limit=3)} == {int(a.id[2:]), int(b.id[2:])}
        writer.forget(a.id)
        assert [n for n, _ in reader.similar(q, limit=3)] == [int(b.id[2:])]
        assert [n for n, _ in reader.similar(q, limit=3, active=False)] == [int(a.id[2:])]
        writer.update(b.id, block="episodes")
        assert reader.similar(q, limit=3, exclude_blocks=("episodes",)) == []


def test_words_alone_need_no_model_at_all(store: Store) -> None:
    store.append("scratch", FactDraft("Maya works as a nurse.", "identity"))
    assert [h.exact for h in store.rank("nurse", limit=3, fusion=WORDS_ONLY)] == [True]
    assert model() is not None


def test_a_memory_mostly_forgotten_ranks_its_few_active_facts_as_the_whole_matrix_would(
    store: Store,
) -> None:
    """Its active rows are scored from a compact copy (made once per change), the forgotten
    from the whole matrix: both orders are those of every stored vector's cosine."""
    texts = [f"Maya {verb} {thing} on day {i}." for i, (verb, thing) in enumerate(
        (v, t) for v in ("cooked", "painted", "repaired", "visited", "drove", "read")
        for t in ("a curry", "the fence", "her bicycle", "the museum", "to Leeds", "a novel"))]
    facts = [store.append("scratch", FactDraft(t, "event")) for t in texts]
    keep = {f.id for f in facts[::6]}  # 6 of 36 stay active: under a quarter of the rows
    for f in facts:
        if f.id not in keep:
            store.forget(f.id)
    q = "What did she fix?"
    qv = default_embedder().embed([q])[0]  # type: ignore[union-attr]

    def brute(ids: set[str]) -> list[int]:
        scored = [(-float(stored(store, i) @ qv), int(i[2:])) for i in ids]  # type: ignore[operator]
        return [n for _, n in sorted(scored)]

    active = store.similar(q, limit=10)
    assert [n for n, _ in active] == brute(keep)
    past = {f.id for f in facts} - keep
    assert [n for n, _ in store.similar(q, limit=40, active=False)] == brute(past)
    assert store.similar_both(q, limit=10) == (active, store.similar(q, limit=10, active=False))
    back = store.append("scratch", FactDraft("Maya repaired the garden fence.", "event"))
    assert store.similar(q, limit=1)[0][0] == int(back.id[2:])  # the copy follows the change


def test_facts_of_one_meaning_are_listed_older_first_even_at_the_cut(store: Store) -> None:
    """The same words in another order have one vector (the mean of their tokens): of 600
    such facts a list of 150 is the 150 oldest, from the whole matrix and from the compact
    copy of a memory mostly forgotten (main's partial sort kept any 150 of the equal ones)."""
    words = ["Maya", "likes", "green", "tea", "at", "night"]
    rng = np.random.default_rng(3)
    with store.transaction():
        ids = [store.append("scratch", FactDraft(" ".join(rng.permutation(words)) + ".",
                                                 "context")).id for _ in range(600)]
    with store._read() as c:
        assert len({bytes(v) for (v,) in c.execute("SELECT vec FROM vectors")}) == 1
    got = store.similar("tea in the evening", limit=150)
    assert [n for n, _ in got] == sorted(int(i[2:]) for i in ids)[:150]
    assert len({sim for _, sim in got}) == 1
    kept = set(rng.choice(ids, 140, replace=False).tolist())
    with store.transaction():
        for i in ids:
            if i not in kept:
                store.forget(i)
    got = store.similar("tea in the evening", limit=50)  # 140 of 600 rows: the compact copy
    assert [n for n, _ in got] == sorted(int(i[2:]) for i in kept)[:50]


def test_the_best_keep_the_lowest_ids_among_equal_scores_at_the_cut() -> None:
    sims = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.5, 0.9], dtype=np.float32)
    nums = np.array([70, 60, 50, 40, 30, 20, 10], dtype=np.int64)
    assert [n for n, _ in _best(sims, nums, 4, None)] == [10, 60, 20, 40]
    assert [n for n, _ in _best(sims, nums, 7, None)] == [10, 60, 20, 40, 50, 70, 30]
    at = np.array([6, 0, 2], dtype=np.int64)  # 0.5, 0.9, 0.5 for the facts 10, 70, 50
    assert _best(sims[:3], nums, 2, at) == [(70, pytest.approx(0.9)), (10, 0.5)]
    assert _best(sims, nums, 0, None) == []
