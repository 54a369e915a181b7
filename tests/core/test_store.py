"""Unit tests for the memory store: every public method, versions, diff, restore, audit log."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core.errors import InvalidInput, StoreError, UnknownVersion
from nocturne_desktop.core.store import SCHEMA_VERSION, Store
from nocturne_desktop.core.store import store as store_mod
from nocturne_desktop.core.types import BLOCKS, Fact, FactDraft, Mutation
from tests.clock import Clock

T0 = 1_700_000_000.0
DAY = 86_400.0


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)  # one second a reading: every timestamp distinct


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    s = Store(tmp_path / "data" / "nocturne.db", clock=clock)
    yield s
    s.close()


def add(store: Store, text: str, block: str = "scratch", category: str = "context") -> Fact:
    return store.append(block, FactDraft(text, category))


def ids(facts: object) -> list[str]:
    return [f.id for f in facts]  # type: ignore[attr-defined]


def drop(item_id: str, keeper: str, *, accepted: bool = True, reason: str = "same") -> Mutation:
    return Mutation(
        pass_name="dedupe",
        kind="drop",
        item_id=item_id,
        accepted=accepted,
        reason=reason,
        rejection_reason=None if accepted else "refused",
        refs={"duplicateOf": keeper, "similarity": 1.0},
    )


# ---------------------------------------------------------------- opening


def test_creates_file_and_folder_with_wal_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "n.db"
    with Store(path) as s:
        assert s.path == path
        assert path.exists()
        assert s.integrity_check() == "ok"
        assert s.fts_enabled  # this interpreter's SQLite has FTS5
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        blocks = [r[0] for r in raw.execute("SELECT name FROM blocks ORDER BY position")]
        assert tuple(blocks) == BLOCKS
    finally:
        raw.close()


def test_reopen_keeps_data_and_counters(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    with Store(path) as s:
        a = add(s, "The user lives in Lisbon.")
        s.forget(a.id)
        s.snapshot("one")
    with Store(path) as s:
        assert s.get(a.id) == Fact(
            a.id, "scratch", a.text, "context", None, a.created_at, s.get(a.id).updated_at, False
        )  # type: ignore[union-attr]
        b = add(s, "The user keeps a bearded dragon.")
        assert b.id == "m_2"
        assert [v.label for v in s.versions()] == ["one"]


def test_foreign_keys_are_on(store: Store) -> None:
    with pytest.raises(InvalidInput, match="unknown sleep id"):
        store.snapshot("x", sleep_id=42)


def test_migration_steps_run_in_order_and_keep_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "n.db"
    with Store(path) as s:
        a = add(s, "The user works best in the morning.")
        s.snapshot("v1 data")
    extra = [*store_mod._MIGRATIONS, ["ALTER TABLE items ADD COLUMN example_extra INTEGER DEFAULT 0"]]
    monkeypatch.setattr(store_mod, "_MIGRATIONS", extra)
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", len(extra))
    with Store(path) as s:
        assert s.get(a.id) is not None
        assert s.state_at(1)[0].text == a.text
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        cols = [r[1] for r in raw.execute("PRAGMA table_info(items)")]
        assert "example_extra" in cols
    finally:
        raw.close()


def test_empty_file_is_initialised(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    path.write_bytes(b"")
    with Store(path) as s:
        assert add(s, "hello there").id == "m_1"


# ---------------------------------------------------------------- facts


def test_append_assigns_ids_and_timestamps(store: Store, clock: Clock) -> None:
    a = store.append("scratch", FactDraft("I live in Lisbon.", "identity", source_turn=1))
    b = store.append("human", FactDraft("Backdated.", created_at=T0 - 70 * DAY))
    assert (a.id, b.id) == ("m_1", "m_2")
    assert a.block == "scratch" and a.category == "identity" and a.source_turn == 1
    assert a.active and a.created_at == a.updated_at > T0
    assert b.created_at == T0 - 70 * DAY
    assert round(b.age_days(T0)) == 70
    assert store.get("m_1") == a
    assert store.get("m_99") is None
    assert store.get("nonsense") is None


def test_get_block_orders_numerically_and_filters_inactive(store: Store) -> None:
    made = [add(store, f"fact number {i}") for i in range(1, 12)]
    store.forget(made[2].id)
    got = store.get_block("scratch")
    assert ids(got) == [f"m_{i}" for i in range(1, 12) if i != 3]  # m_10 after m_9
    assert ids(store.get_block("scratch", include_inactive=True)) == [
        f"m_{i}" for i in range(1, 12)
    ]
    assert store.get_block("persona") == []


def test_list_blocks_counts(store: Store) -> None:
    add(store, "a fact", "human")
    b = add(store, "another fact", "human")
    add(store, "an event", "episodes")
    store.forget(b.id)
    infos = store.list_blocks()
    assert [i.name for i in infos] == list(BLOCKS)
    by = {i.name: (i.active_count, i.total_count) for i in infos}
    assert by == {"persona": (0, 0), "human": (1, 2), "episodes": (1, 1), "scratch": (0, 0)}


def test_active_all_and_count(store: Store) -> None:
    a, b, c = (add(store, t) for t in ("one fact", "two fact", "three fact"))
    store.forget(b.id)
    assert ids(store.active_facts()) == [a.id, c.id]
    assert ids(store.all_facts()) == [a.id, b.id, c.id]
    assert store.active_count() == 2


def test_update_changes_only_what_is_given(store: Store) -> None:
    a = add(store, "The user likes tea.")
    u = store.update(a.id, text="The user likes green tea.")
    assert (u.text, u.block, u.category) == ("The user likes green tea.", "scratch", "context")
    assert u.updated_at > a.updated_at and u.created_at == a.created_at
    u2 = store.update(a.id, block="human", category="preferences")
    assert (u2.text, u2.block, u2.category) == (u.text, "human", "preferences")
    same = store.update(a.id, text=u.text)
    assert same == u2  # no change, no new timestamp


def test_forget_flips_active_and_never_deletes(store: Store) -> None:
    a = add(store, "Something stale.")
    f = store.forget(a.id)
    assert not f.active and store.get(a.id) == f
    with pytest.raises(InvalidInput, match="not active"):
        store.forget(a.id)
    with pytest.raises(InvalidInput, match="unknown item id 'm_9'"):
        store.forget("m_9")


def test_replace_makes_block_exactly_items(store: Store) -> None:
    a = add(store, "alpha fact", "human")
    b = add(store, "beta fact", "human")
    c = add(store, "gamma fact", "scratch")
    gone = add(store, "delta fact", "scratch")
    store.forget(gone.id)
    edited = Fact(a.id, "human", "alpha fact, edited", "identity", None, 0.0, 0.0)
    out = store.replace("human", [edited, c, gone, FactDraft("brand new fact")])
    assert ids(out) == [a.id, c.id, gone.id, "m_5"]
    assert store.get(a.id).text == "alpha fact, edited"  # type: ignore[union-attr]
    assert store.get(a.id).category == "identity"  # type: ignore[union-attr]
    assert store.get(c.id).block == "human"  # type: ignore[union-attr]
    assert store.get(gone.id).active  # type: ignore[union-attr]  # reactivated
    assert not store.get(b.id).active  # type: ignore[union-attr]  # not listed -> forgotten
    assert ids(store.get_block("human")) == [a.id, c.id, gone.id, "m_5"]
    assert store.get_block("scratch") == []
    with pytest.raises(InvalidInput, match="listed twice"):
        store.replace("human", [edited, edited])
    store.replace("human", [])
    assert store.get_block("human") == []


def test_ids_are_never_reused(store: Store) -> None:
    add(store, "first fact")
    v = store.snapshot("one")
    b = add(store, "second fact")
    store.restore(v.seq)  # m_2 did not exist at v: it is forgotten, not deleted
    assert not store.get(b.id).active  # type: ignore[union-attr]
    assert add(store, "third fact").id == "m_3"
    assert ids(store.all_facts()) == ["m_1", "m_2", "m_3"]


# ---------------------------------------------------------------- apply / transactions


def test_apply_each_kind(store: Store) -> None:
    a, b, c, d, e = (add(store, f"fact {w}") for w in "abcde")
    store.apply(drop(b.id, a.id))
    assert not store.get(b.id).active  # type: ignore[union-attr]
    store.apply(
        Mutation(
            "merge",
            "merge",
            c.id,
            True,
            "same topic",
            refs={"fromIds": [c.id, d.id], "mergedText": "fact c and d"},
        )
    )
    assert store.get(c.id).text == "fact c and d"  # type: ignore[union-attr]
    assert not store.get(d.id).active  # type: ignore[union-attr]
    store.apply(Mutation("promote", "promote", c.id, True, "stable", refs={"toBlock": "human"}))
    assert store.get(c.id).block == "human"  # type: ignore[union-attr]
    store.apply(Mutation("forget", "forget", e.id, True, "stale", policy="stale"))
    assert not store.get(e.id).active  # type: ignore[union-attr]


def test_apply_refuses_bad_mutations_and_writes_nothing(store: Store) -> None:
    a, b = add(store, "fact a"), add(store, "fact b")
    with pytest.raises(InvalidInput, match="refused mutation"):
        store.apply(drop(a.id, b.id, accepted=False))
    with pytest.raises(InvalidInput, match="unknown mutation kind 'explode'"):
        store.apply(Mutation("x", "explode", a.id, True))
    with pytest.raises(InvalidInput, match="promote m_1: unknown block 'longterm'"):
        store.apply(Mutation("promote", "promote", a.id, True, refs={"toBlock": "longterm"}))
    with pytest.raises(InvalidInput, match="unknown item id 'm_77'"):
        store.apply(
            Mutation(
                "merge",
                "merge",
                a.id,
                True,
                refs={"fromIds": [a.id, "m_77"], "mergedText": "fact a b"},
            )
        )
    assert store.get(a.id).text == "fact a"  # type: ignore[union-attr]  # merge not half-applied
    store.forget(b.id)
    with pytest.raises(InvalidInput, match="m_2 is not active"):
        store.apply(drop(b.id, a.id))
    with pytest.raises(InvalidInput, match="mergedText is empty"):
        store.apply(
            Mutation("merge", "merge", a.id, True, refs={"fromIds": [a.id], "mergedText": "  "})
        )


def test_transaction_rolls_back_and_nests(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        add(store, "will vanish")
        store.snapshot("will vanish too")
        raise RuntimeError("boom")
    assert store.all_facts() == [] and store.versions() == []
    with store.transaction():
        add(store, "kept outer")
        with pytest.raises(InvalidInput), store.transaction():
            add(store, "inner, rolled back")
            store.update("m_404", text="nope")
        add(store, "kept outer too")
    assert [f.text for f in store.all_facts()] == ["kept outer", "kept outer too"]
    # the id counter rolled back with the inner savepoint: nothing was ever exposed as m_2
    assert ids(store.all_facts()) == ["m_1", "m_2"]


def test_commit_pass_is_one_transaction(store: Store) -> None:
    a, b, c = add(store, "fact one"), add(store, "fact one again"), add(store, "fact three")
    sid = store.begin_sleep({"similarity": 0.9})
    before = store.snapshot("pass:dedupe:before", sleep_id=sid)
    muts = [drop(b.id, a.id), drop(c.id, a.id, accepted=False)]
    v = store.commit_pass(muts, label="pass:dedupe:after", sleep_id=sid)
    assert v.seq == before.seq + 1 and v.label == "pass:dedupe:after" and v.active_count == 2
    assert v.sleep_id == sid
    rows = store.mutations(sleep_id=sid)
    assert [(r.mutation.item_id, r.mutation.accepted, r.seq) for r in rows] == [
        (b.id, True, v.seq),
        (c.id, False, v.seq),
    ]
    assert rows[0].mutation == muts[0]


def test_commit_pass_with_failing_mutation_writes_nothing(store: Store) -> None:
    a, b = add(store, "fact one"), add(store, "fact two")
    store.snapshot("before")
    bad = [
        drop(b.id, a.id),
        Mutation("dedupe", "drop", b.id, True, "again"),  # b already dropped above
    ]
    with pytest.raises(InvalidInput, match="not active"):
        store.commit_pass(bad, label="after", sleep_id=None)
    assert store.get(b.id).active  # type: ignore[union-attr]
    assert store.mutations() == []
    assert [v.label for v in store.versions()] == ["before"]
    assert store.diff(1, 1).changed == ()
    # the next snapshot still gets seq 2: nothing was consumed
    assert store.snapshot("next").seq == 2


def test_record_mutations_and_filters(store: Store) -> None:
    a = add(store, "fact one")
    sid = store.begin_sleep({})
    got = store.record_mutations(
        [
            drop(a.id, "m_9"),
            Mutation(
                "merge",
                "merge",
                a.id,
                False,
                "",
                "mergedText invents 'Kitchen'",
                refs={"proposal": {"intoId": a.id}},
            ),
            Mutation(
                "promote",
                "promote",
                "m_5",
                True,
                "stable",
                decided_by="engine-promotion-rule",
                refs={"toBlock": "human"},
            ),
        ],
        seq=3,
        sleep_id=sid,
    )
    assert len(got) == 3 and got == sorted(got)
    store.record_mutations(
        [Mutation("forget", "forget", a.id, True, policy="stale")], seq=5, sleep_id=None
    )
    assert len(store.mutations()) == 4
    assert [r.id for r in store.mutations(sleep_id=sid)] == got
    assert [r.mutation.kind for r in store.mutations(pass_name="merge")] == ["merge"]
    assert [r.mutation.kind for r in store.mutations(accepted=False)] == ["merge"]
    assert len(store.mutations(seq_range=(3, 5))) == 1  # lo excluded, hi included
    assert len(store.mutations(seq_range=(2, 3))) == 3
    assert [r.mutation.kind for r in store.mutations(item_id=a.id)] == ["drop", "merge", "forget"]
    m = store.mutations(pass_name="promote")[0].mutation
    assert m.enforced and m.refs == {"toBlock": "human"}
    assert store.mutations(pass_name="merge")[0].mutation.rejection_reason.startswith("merged")  # type: ignore[union-attr]


# ---------------------------------------------------------------- versions


def test_snapshot_versions_and_lookup(store: Store) -> None:
    assert store.latest_version() is None and store.versions() == []
    add(store, "fact one")
    v1 = store.snapshot("consolidation:start")
    add(store, "fact two")
    v2 = store.snapshot("pass:dedupe:before")
    assert (v1.seq, v1.id, v1.active_count) == (1, "s0001", 1)
    assert (v2.seq, v2.id, v2.active_count) == (2, "s0002", 2)
    assert store.versions() == [v1, v2]
    assert store.version(2) == v2 and store.version("s0002") == v2
    assert store.latest_version() == v2
    for bad in (3, 0, "s0009", "2", "v2", True):
        with pytest.raises(UnknownVersion):
            store.version(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="label is empty"):
        store.snapshot("  ")


def test_state_at_returns_each_version_exactly(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")
    v1 = store.snapshot("one")
    s1 = store.state_at(v1.seq)
    store.update(a.id, text="The user lives in Porto.")
    b = add(store, "The user has a dragon.")
    store.update(b.id, block="human")  # updated in place: no snapshot saw the first value
    v2 = store.snapshot("two")
    s2 = store.state_at("s0002")
    store.forget(a.id)
    v3 = store.snapshot("three")
    assert store.state_at(v1.seq) == s1 == [store.diff(1, 1).kept[0].before]
    assert [f.text for f in s2] == ["The user lives in Porto.", "The user has a dragon."]
    assert s2[1].block == "human"
    assert [f.active for f in store.state_at(v3.seq)] == [False, True]
    assert store.state_at(v2.seq) == s2
    with pytest.raises(UnknownVersion):
        store.state_at(9)


def test_diff_classifies_with_attribution_and_sources(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.", "scratch", "identity")
    b = add(store, "User lives in Lisbon.", "scratch", "identity")
    c = add(store, "The user drinks coffee.")
    d = add(store, "The user drinks it black.")
    e = add(store, "Old trip to Faro.", "episodes", "event")
    k = add(store, "Never touched.", "human")
    sid = store.begin_sleep({})
    v0 = store.snapshot("consolidation:start", sleep_id=sid)
    store.commit_pass([drop(b.id, a.id)], label="pass:dedupe:after", sleep_id=sid)
    store.commit_pass(
        [
            Mutation(
                "merge",
                "merge",
                c.id,
                True,
                "same habit",
                refs={"fromIds": [c.id, d.id], "mergedText": "The user drinks coffee black."},
            ),
            Mutation("merge", "merge", a.id, False, "", "spans two blocks"),
        ],
        label="pass:merge:after",
        sleep_id=sid,
    )
    store.commit_pass(
        [
            Mutation(
                "promote",
                "promote",
                a.id,
                True,
                "identity",
                decided_by="engine-promotion-rule",
                refs={"fromBlock": "scratch", "toBlock": "human"},
            )
        ],
        label="pass:promote:after",
        sleep_id=sid,
    )
    store.commit_pass(
        [Mutation("forget", "forget", e.id, True, "stale, 70d", policy="stale")],
        label="pass:forget:after",
        sleep_id=sid,
    )
    n = add(store, "Added after the sleep.")
    v5 = store.snapshot("later")
    dif = store.diff(v0.seq, v5.seq)
    assert (dif.a, dif.b) == (v0.seq, v5.seq)
    assert [x.item_id for x in dif.kept] == [k.id]
    assert [x.item_id for x in dif.changed] == [a.id, c.id]
    ch = {x.item_id: x for x in dif.changed}
    assert ch[a.id].before.block == "scratch" and ch[a.id].after.block == "human"  # type: ignore[union-attr]
    assert (ch[a.id].pass_name, ch[a.id].decided_by) == ("promote", "engine-promotion-rule")
    assert ch[c.id].after.text == "The user drinks coffee black."  # type: ignore[union-attr]
    assert [s.text for s in ch[c.id].sources] == [c.text, d.text]
    assert ch[c.id].reason == "same habit"
    fg = {x.item_id: x for x in dif.forgotten}
    assert sorted(fg) == sorted([b.id, d.id, e.id])
    assert fg[b.id].pass_name == "dedupe" and fg[b.id].reason == "same"
    assert fg[d.id].pass_name == "merge"
    assert (fg[e.id].pass_name, fg[e.id].policy, fg[e.id].reason) == (
        "forget",
        "stale",
        "stale, 70d",
    )
    assert fg[e.id].after is not None and not fg[e.id].after.active
    assert [x.item_id for x in dif.added] == [n.id] and dif.added[0].before is None
    assert [r.mutation.rejection_reason for r in dif.rejected] == ["spans two blocks"]
    # reverse direction: same ranges, roles swapped
    rev = store.diff(v5.seq, v0.seq)
    assert [x.item_id for x in rev.forgotten] == [n.id]
    assert sorted(x.item_id for x in rev.added) == sorted([b.id, d.id, e.id])
    assert [x.item_id for x in rev.changed] == [a.id, c.id]
    assert [x.item_id for x in rev.kept] == [k.id]
    assert len(rev.rejected) == 1
    # changes only
    lean = store.diff(v0.seq, v5.seq, include_kept=False)
    assert lean.kept == () and lean.changed == dif.changed and lean.forgotten == dif.forgotten


def test_diff_rejected_range_is_lo_exclusive_hi_inclusive(store: Store) -> None:
    """The article's bug 6: a refusal mid-range must appear; one at lo must not."""
    a = add(store, "fact one")
    store.snapshot("s1")
    for label in ("s2", "s3", "s4"):
        store.commit_pass(
            [drop(a.id, "m_9", accepted=False, reason=label)], label=label, sleep_id=None
        )
    assert [r.mutation.reason for r in store.diff(2, 4).rejected] == ["s3", "s4"]
    assert [r.mutation.reason for r in store.diff(1, 4).rejected] == ["s2", "s3", "s4"]
    assert store.diff(4, 4).rejected == ()


def test_diff_kept_includes_changed_and_changed_back(store: Store) -> None:
    a = add(store, "fact one")
    store.snapshot("v1")
    store.update(a.id, text="fact one changed")
    store.snapshot("v2")
    store.update(a.id, text="fact one")
    store.snapshot("v3")
    d = store.diff(1, 3)
    assert [x.item_id for x in d.kept] == [a.id] and d.changed == ()
    assert d.kept[0].after.updated_at > d.kept[0].before.updated_at  # type: ignore[union-attr]


def test_diff_shows_a_category_change_as_changed(store: Store) -> None:
    a = add(store, "fact one")
    store.snapshot("v1")
    store.update(a.id, category="identity")
    store.snapshot("v2")
    d = store.diff(1, 2)
    assert [x.item_id for x in d.changed] == [a.id] and d.kept == ()
    assert d.changed[0].after.category == "identity"  # type: ignore[union-attr]


def test_restore_is_a_new_version_and_undo_is_undoable(store: Store) -> None:
    a = add(store, "The user lives in Lisbon.")
    b = add(store, "The user keeps a dragon.")
    v1 = store.snapshot("consolidation:start")
    store.commit_pass([drop(b.id, a.id)], label="pass:dedupe:after", sleep_id=None)
    store.update(a.id, text="The user lives in Lisbon, Portugal.")
    c = add(store, "A fact born after v1.")
    v2 = store.snapshot("pass:merge:after")
    r = store.restore(v1.id)
    assert r.label == "restore:s0001" and r.seq == v2.seq + 1 and r.active_count == 2
    assert [(f.id, f.text, f.active) for f in store.active_facts()] == [
        (a.id, a.text, True),
        (b.id, b.text, True),
    ]
    assert not store.get(c.id).active  # type: ignore[union-attr]
    state1 = store.state_at(v1.seq)
    assert [f for f in store.state_at(r.seq) if f.id != c.id] == state1
    row = store.mutations(pass_name="restore")[0]
    assert row.seq == r.seq and row.mutation.kind == "restore" and row.mutation.accepted
    assert row.mutation.refs["changedIds"] == [a.id, b.id, c.id]
    d = store.diff(v2.seq, r.seq)
    assert {x.item_id: x.pass_name for x in d.forgotten} == {c.id: "restore"}
    # undo the undo
    r2 = store.restore(v2.seq)
    assert r2.label == "restore:s0003"
    assert list(store.state_at(r2.seq)) == store.state_at(v2.seq)
    assert store.diff(v2.seq, r2.seq).changed == ()
    # restoring the current state writes no fact rows
    r3 = store.restore(r2.seq)
    assert store.mutations(pass_name="restore")[-1].mutation.refs["changedIds"] == []
    assert store.state_at(r3.seq) == store.state_at(r2.seq)
    with pytest.raises(UnknownVersion):
        store.restore("s0099")


def test_article_version_line_shape(store: Store) -> None:
    """Section 7: #10 consolidation:start 8 ... #18 pass:forget:after 6, #19 restore:s0011 8."""
    for i in range(9):
        store.snapshot(f"chat:{i}")
    facts = [
        add(store, f"distinct fact number {i}", "scratch", "identity" if i < 5 else "event")
        for i in range(1, 9)
    ]
    sid = store.begin_sleep({"maxActive": 120, "staleAfterDays": 30})
    start = store.snapshot("consolidation:start", sleep_id=sid)
    assert (start.seq, start.active_count) == (10, 8)
    plan: list[tuple[str, list[Mutation]]] = [
        ("dedupe", [drop(facts[5].id, facts[4].id)]),
        (
            "merge",
            [Mutation("merge", "merge", facts[0].id, False, "", "mergedText invents 'Kitchen'")],
        ),
        (
            "promote",
            [
                Mutation("promote", "promote", f.id, True, "stable", refs={"toBlock": "human"})
                for f in facts[:5]
            ],
        ),
        ("forget", [Mutation("forget", "forget", facts[7].id, True, "stale, 70d", policy="stale")]),
    ]
    for name, muts in plan:
        store.snapshot(f"pass:{name}:before", sleep_id=sid)
        store.commit_pass(muts, label=f"pass:{name}:after", sleep_id=sid)
    store.finish_sleep(sid, "done", {"accepted": 7, "rejected": 1})
    store.restore("s0011")
    line = [(v.seq, v.label, v.active_count) for v in store.versions()[9:]]
    assert line == [
        (10, "consolidation:start", 8),
        (11, "pass:dedupe:before", 8),
        (12, "pass:dedupe:after", 7),
        (13, "pass:merge:before", 7),
        (14, "pass:merge:after", 7),
        (15, "pass:promote:before", 7),
        (16, "pass:promote:after", 7),
        (17, "pass:forget:before", 7),
        (18, "pass:forget:after", 6),
        (19, "restore:s0011", 8),
    ]
    assert [v.sleep_id for v in store.versions()[9:18]] == [sid] * 9
    assert len(store.diff(13, 14).rejected) == 1
    assert len(store.diff(15, 16).changed) == 5


# ---------------------------------------------------------------- search


def test_search_ranks_active_facts_and_sanitises(store: Store) -> None:
    a = add(store, "The user lives in Lisbon and works in Lisbon.", "human")
    b = add(store, "The user visited Lisbon once.", "episodes")
    c = add(store, "The user keeps a bearded dragon called Saffron.", "human")
    d = add(store, "Lisbon trip notes.", "scratch")
    store.forget(d.id)
    got = store.search("lisbon")
    assert set(ids(got)) == {a.id, b.id} and got[0].id == a.id  # BM25: more occurrences first
    assert ids(store.search("dragon OR lisbon", exclude_blocks=["episodes"]))[0] in {a.id, c.id}
    assert b.id not in ids(store.search("lisbon", exclude_blocks=["episodes"]))
    for nasty in ('"', 'lisbon"', "NEAR(", "a*", "-lisbon", "(dragon", "AND", "::", "^x", "'"):
        store.search(nasty)  # never raises
    assert ids(store.search('"Saffron')) == [c.id]
    assert store.search("") == [] and store.search("   ,,, ") == []
    assert len(store.search("user", limit=2)) == 2
    store.update(c.id, text="The user keeps a cat.")
    assert store.search("saffron") == []
    assert ids(store.search("cat")) == [c.id]
    with pytest.raises(InvalidInput, match="unknown block"):
        store.search("x", exclude_blocks=["longterm"])


def test_search_falls_back_to_like_without_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "n.db"
    monkeypatch.setattr(store_mod, "fts5_available", lambda conn: False)
    with Store(path) as s:
        assert not s.fts_enabled
        a = add(s, "The user lives in Lisbon and likes Porto.")
        b = add(s, "Lisbon is sunny.")
        add(s, "Something else entirely.")
        assert ids(s.search("porto lisbon")) == [a.id, b.id]  # two words beat one
        assert ids(s.search("100%_")) == []
    monkeypatch.undo()
    with Store(path) as s:  # FTS5 back: the index is rebuilt from the live table
        assert s.fts_enabled
        assert set(ids(s.search("lisbon"))) == {a.id, b.id}


# ---------------------------------------------------------------- transcript, meta, sleeps


def test_turns_and_cursor_meta(store: Store) -> None:
    t1 = store.add_turn("user", "I live in Lisbon.")
    t2 = store.add_turn("assistant", "Noted!")
    t3 = store.add_turn("system", "")
    assert [t.n for t in (t1, t2, t3)] == [1, 2, 3]
    assert store.turns() == [t1, t2, t3]
    assert store.turns(after=2) == [t3]
    with pytest.raises(InvalidInput, match="unknown role 'bot'"):
        store.add_turn("bot", "hi")
    assert store.get_meta("extracted_through") is None
    assert store.get_meta("extracted_through", "0") == "0"
    store.set_meta("extracted_through", "2")
    store.set_meta("extracted_through", "3")
    assert store.get_meta("extracted_through") == "3"


def test_sleeps_lifecycle(store: Store) -> None:
    sid = store.begin_sleep({"similarityThreshold": 0.9, "protected": ["identity"]})
    dry = store.begin_sleep({"x": 1}, dry_run=True)
    recs = store.sleeps()
    # one sleep at a time: the one still running when another begins was interrupted
    assert [(r.id, r.status, r.dry_run) for r in recs] == [
        (sid, "interrupted", False),
        (dry, "running", True),
    ]
    assert recs[0].finished_at is not None and recs[1].finished_at is None
    store.finish_sleep(sid, "done", {"accepted": 3})  # its own process, if alive, has the last word
    r = store.sleeps()[0]
    assert r.status == "done" and r.summary == {"accepted": 3} and r.finished_at is not None
    assert r.policy == {"similarityThreshold": 0.9, "protected": ["identity"]}
    with pytest.raises(InvalidInput, match="unknown sleep status"):
        store.finish_sleep(dry, "exploded", {})
    with pytest.raises(InvalidInput, match="unknown sleep id 99"):
        store.finish_sleep(99, "done", {})
    with pytest.raises(InvalidInput, match="not JSON"):
        store.begin_sleep({"x": object()})


def test_stale_running_sleeps_are_marked_interrupted(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "crash.db"
    with Store(path, clock=clock) as first:
        killed = first.begin_sleep({"x": 1})
        first.snapshot("consolidation:start", sleep_id=killed)
        # the process dies here: no finish_sleep
    with Store(path, clock=clock) as store:
        assert [s.status for s in store.sleeps()] == ["running"]  # opening changes nothing
        assert store.mark_interrupted_sleeps() == [killed]
        rec = store.sleeps()[0]
        assert rec.status == "interrupted" and rec.finished_at is not None
        assert "ended before it finished" in rec.summary["interrupted"]
        assert rec.policy == {"x": 1}
        assert store.mark_interrupted_sleeps() == []  # idempotent
        with pytest.raises(InvalidInput, match="unknown sleep status 'interrupted'"):
            store.finish_sleep(killed, "interrupted", {})
        again = store.begin_sleep({"x": 2})  # the next sleep marks a stale one by itself
        store.finish_sleep(again, "done", {})
        third = store.begin_sleep({"x": 3})
        assert [(s.id, s.status) for s in store.sleeps()] == [
            (killed, "interrupted"), (again, "done"), (third, "running")]
        assert [v.label for v in store.versions()] == ["consolidation:start"]


def test_integrity_check(store: Store) -> None:
    add(store, "fact")
    assert store.integrity_check() == "ok"


# ---------------------------------------------------------------- threads


def test_store_used_from_another_thread_raises(store: Store) -> None:
    errors: list[BaseException] = []

    def use() -> None:
        try:
            store.active_facts()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert len(errors) == 1 and isinstance(errors[0], StoreError)
    assert "thread" in str(errors[0])
    # the underlying sqlite connection refuses too, should anyone reach it directly
    failures: list[BaseException] = []

    def raw() -> None:
        try:
            store._conn.execute("SELECT 1")
        except BaseException as exc:
            failures.append(exc)

    t = threading.Thread(target=raw)
    t.start()
    t.join()
    assert isinstance(failures[0], sqlite3.ProgrammingError)


def test_two_stores_in_two_threads_work_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    writer_done = threading.Event()
    reader_ready = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with Store(path) as s:
                reader_ready.wait(5)
                with s.transaction():
                    for i in range(50):
                        add(s, f"fact {i}")
                    s.snapshot("w")
            writer_done.set()
        except BaseException as exc:
            errors.append(exc)
            writer_done.set()

    def reader() -> None:
        try:
            with Store(path) as s:
                seen.append(s.active_count())
                reader_ready.set()
                writer_done.wait(5)
                seen.append(s.active_count())
                seen.append(len(s.state_at(1)))
        except BaseException as exc:
            errors.append(exc)

    Store(path).close()  # create the schema once, so both threads only open it
    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == []
    assert seen == [0, 50, 50]


def test_two_writers_in_two_threads_share_one_id_sequence(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    Store(path).close()
    errors: list[BaseException] = []
    made: list[str] = []
    lock = threading.Lock()

    def writer(tag: str) -> None:
        try:
            with Store(path) as s:
                for i in range(60):
                    f = add(s, f"{tag} fact {i}")
                    with lock:
                        made.append(f.id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert sorted(made, key=lambda i: int(i[2:])) == [f"m_{i}" for i in range(1, 121)]
    with Store(path) as s:
        assert s.active_count() == 120 and s.integrity_check() == "ok"


# ---------------------------------------------------------------- cost is O(changes)


def build(path: Path, n_facts: int, n_changes: int) -> Store:
    s = Store(path)
    with s.transaction():
        for i in range(n_facts):
            s.append(BLOCKS[i % 4], FactDraft(f"fact number {i} about topic {i % 17}"))
    s.snapshot("start")
    for round_ in range(3):
        with s.transaction():
            for k in range(n_changes):
                num = 1 + (k * 7919 + round_ * 31) % n_facts
                s.update(f"m_{num}", text=f"changed {round_} {k}")
            s.forget(f"m_{1 + round_}")
        s.snapshot(f"round {round_}")
    return s


def vm_steps(store: Store, call: object) -> int:
    """SQLite virtual-machine instructions spent by ``call`` (counted in hundreds)."""
    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0

    store._conn.set_progress_handler(tick, 100)
    try:
        call()  # type: ignore[operator]
    finally:
        store._conn.set_progress_handler(None, 100)
    return ticks[0]


def test_snapshot_diff_restore_cost_does_not_grow_with_the_store(tmp_path: Path) -> None:
    """Same number of changes, a store ten times larger: the SQL work must stay about the same."""
    small = build(tmp_path / "small.db", 400, 40)
    large = build(tmp_path / "large.db", 4000, 40)
    try:
        costs = {}
        for name, s in (("small", small), ("large", large)):
            with s.transaction():
                for k in range(40):
                    s.update(f"m_{5 + k}", text=f"pending {k}")
            costs[name] = (
                vm_steps(s, lambda s=s: s.snapshot("measured")),
                vm_steps(s, lambda s=s: s.diff(2, 4, include_kept=False)),
                vm_steps(s, lambda s=s: s.diff(4, 2, include_kept=False)),
                vm_steps(s, lambda s=s: s.restore(3)),
            )
            assert s.diff(2, 4, include_kept=False).changed  # the diff did classify changes
        for what, lo, hi in zip(
            ("snapshot", "diff", "reverse diff", "restore"),
            costs["small"],
            costs["large"],
            strict=True,
        ):
            assert hi <= 1.25 * lo + 10, (what, lo, hi)
        # state_at reads the version's whole state (10x more facts), but never the history:
        # its cost follows the store's size, not the number of versions behind it.
    finally:
        small.close()
        large.close()


def test_version_queries_never_scan_the_history(tmp_path: Path) -> None:
    s = build(tmp_path / "n.db", 300, 30)
    statements: list[str] = []
    s._conn.set_trace_callback(statements.append)
    try:
        s.snapshot("traced")
        s.diff(2, 4)
        s.state_at(2)
        s.restore(2)
    finally:
        s._conn.set_trace_callback(None)
    selects = [q for q in statements if q.lstrip().upper().startswith("SELECT")]
    assert selects
    for q in selects:
        plan = [r[3] for r in s._conn.execute("EXPLAIN QUERY PLAN " + q).fetchall()]
        assert not any(p.startswith("SCAN item_history") for p in plan), (q, plan)
        assert not any(p.startswith("SCAN mutations") for p in plan), (q, plan)
    s.close()


def test_backdating_is_a_versioned_change(tmp_path: Path) -> None:
    with Store(tmp_path / "b.db", clock=lambda: 1_800_000_000.0) as store:
        f = store.append("episodes", FactDraft("The user fixed the garden fence.", "event"))
        v1 = store.snapshot("before")
        store.update(f.id, created_at=1_800_000_000.0 - 70 * 86400)
        v2 = store.snapshot("after")
        assert store.get(f.id).created_at == 1_800_000_000.0 - 70 * 86400  # type: ignore[union-attr]
        assert store.state_at(v1.seq)[0].created_at == 1_800_000_000.0
        assert store.state_at(v2.seq)[0].created_at == 1_800_000_000.0 - 70 * 86400
        with pytest.raises(InvalidInput, match="created_at"):
            store.update(f.id, created_at=-5)
