"""Every store write leaves a descriptor of what it changed, exact down to the id."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core import applying as ap
from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, FactDraft, StoreChanges


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        yield s


def add(store: Store, text: str, block: str = "scratch") -> str:
    return store.append(block, FactDraft(text)).id


def test_fact_writes_say_which_ids_were_added_changed_and_deactivated(store: Store) -> None:
    a = add(store, "fact a")
    assert store.last_changes == StoreChanges(added=(a,))
    b, c = add(store, "fact b"), add(store, "fact c")
    store.update(b, text="fact b, reworded")
    assert store.last_changes == StoreChanges(changed=(b,))
    store.forget(c)
    assert store.last_changes == StoreChanges(deactivated=(c,))
    store.update(a, text="fact a")  # the same value: nothing changed
    assert store.last_changes == StoreChanges() and not store.last_changes
    replaced = store.replace("scratch", [store.get(b), FactDraft("fact d")])  # type: ignore[list-item]
    d = replaced[1].id
    assert store.last_changes == StoreChanges(added=(d,), deactivated=(a,))


def test_a_pass_reports_its_facts_audit_rows_and_version(store: Store) -> None:
    a, b, c = add(store, "fact one"), add(store, "fact one again"), add(store, "fact three")
    sid = store.begin_sleep({})
    assert store.last_changes == StoreChanges(sleeps=(sid,))
    muts = [
        mu.to_row(mu.Drop(pass_name="dedupe", target=b, duplicate_of=a)),
        mu.to_row(mu.Promote(pass_name="dedupe", target=c, to_block="human")),
        mu.to_row(mu.Refusal(pass_name="dedupe", of="drop", target=a, why="no")),
    ]
    v = store.commit_pass(muts, label="pass:dedupe:after", sleep_id=sid)
    ch = store.last_changes
    assert (ch.changed, ch.deactivated, ch.added) == ((c,), (b,), ())
    assert ch.versions == (v.seq,) and len(ch.mutations) == 3
    assert [r.id for r in store.mutations(sleep_id=sid)] == list(ch.mutations)
    store.finish_sleep(sid, "done", {})
    assert store.last_changes == StoreChanges(sleeps=(sid,))


def test_restore_reports_every_fact_it_rewrote(store: Store) -> None:
    a, b = add(store, "fact a"), add(store, "fact b")
    v1 = store.snapshot("one")
    store.forget(a)
    store.update(b, block="human")
    c = add(store, "fact c")
    v = store.restore(v1.seq)
    ch = store.last_changes
    assert ch.changed == (a, b) and ch.deactivated == (c,) and ch.versions == (v.seq,)
    assert len(ch.mutations) == 1 and ch.facts == (a, b, c)


def test_turns_meta_and_snapshots(store: Store) -> None:
    t = store.add_turn("user", "hello")
    assert store.last_changes == StoreChanges(turns=(t.n,))
    store.set_meta("extracted_through", "1")
    assert store.last_changes == StoreChanges(meta=("extracted_through",))
    v = store.snapshot("manual")
    assert store.last_changes == StoreChanges(versions=(v.seq,))


def test_one_transaction_gives_one_descriptor_and_a_rolled_back_part_none(store: Store) -> None:
    a = add(store, "kept")
    with store.transaction():
        b = add(store, "outer")
        with pytest.raises(InvalidInput), store.transaction():
            add(store, "inner, rolled back")
            store.forget(a)
            store.update("m_404", text="nope")
        store.update(a, text="kept, edited")
    assert store.last_changes == StoreChanges(added=(b,), changed=(a,))
    before = store.last_changes
    with pytest.raises(RuntimeError), store.transaction():
        add(store, "vanishes")
        raise RuntimeError("boom")
    assert store.last_changes == before  # nothing committed, nothing reported
    assert store.append("scratch", FactDraft("next")).id == "m_3"
    assert store.last_changes == StoreChanges(added=("m_3",))


def test_listeners_hear_each_committed_change_once(store: Store) -> None:
    heard: list[StoreChanges] = []
    unsubscribe = store.subscribe(heard.append)
    a = add(store, "fact a")
    store.update(a, text="fact a")  # no change: not announced
    with pytest.raises(InvalidInput):
        store.forget("m_99")
    store.forget(a)
    unsubscribe()
    add(store, "unheard")
    assert heard == [StoreChanges(added=(a,)), StoreChanges(deactivated=(a,))]


def _classify(before: dict[str, Fact], after: dict[str, Fact]) -> tuple[tuple[str, ...], ...]:
    """The descriptor's fact sets, by brute force: compare every fact before and after."""
    added = [i for i in after if i not in before]
    deactivated = [i for i in before if before[i].active and not after[i].active]
    changed = [i for i in before if i not in deactivated and before[i] != after[i]]

    def order(ids: list[str]) -> tuple[str, ...]:
        return tuple(sorted(ids, key=lambda i: int(i[2:])))

    return order(added), order(changed), order(deactivated)


OPS = st.lists(st.tuples(st.sampled_from(["append", "update", "move", "forget", "drop", "merge",
                                          "snapshot", "restore", "replace"]),
                         st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_descriptor_matches_a_brute_force_comparison(
    tmp_path: Path, ops: list[tuple[str, int, int]]
) -> None:
    with Store(Path(tempfile.mkdtemp(dir=tmp_path)) / "memory.db") as store:
        for i in range(3):
            add(store, f"seed fact {i}")
        for n, (op, x, y) in enumerate(ops):
            facts = store.all_facts()
            live = [f for f in facts if f.active]
            pick = live[x % len(live)] if live else None
            other = live[y % len(live)] if live else None
            before = {f.id: f for f in facts}
            try:
                if op == "append" or pick is None:
                    add(store, f"new fact {n}")
                elif op == "update":
                    store.update(pick.id, text=f"{pick.text} {n}")
                elif op == "move":
                    store.update(pick.id, block=("human", "scratch", "episodes")[y % 3])
                elif op == "forget":
                    store.forget(pick.id)
                elif op == "drop":
                    store.apply(mu.to_row(mu.Drop(pass_name="dedupe", target=pick.id)))
                elif op == "merge":
                    assert other is not None
                    store.apply(mu.to_row(mu.Merge(pass_name="merge", into=pick.id,
                                                   from_ids=(other.id,), merged_text=f"merged {n}")))
                elif op == "snapshot":
                    store.snapshot(f"v{n}")
                elif op == "restore":
                    versions = store.versions()
                    if not versions:
                        continue
                    store.restore(versions[y % len(versions)].seq)
                else:
                    keep = list(store.get_block("scratch"))[: y % 3]
                    store.replace("scratch", [*keep, FactDraft(f"replaced {n}")])
            except InvalidInput:
                continue
            after = {f.id: f for f in store.all_facts()}
            ch = store.last_changes
            assert (ch.added, ch.changed, ch.deactivated) == _classify(before, after), (op, ch)


def test_each_pass_of_a_sleep_reports_what_it_changed(store: Store) -> None:
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.sleep import SleepEventKind, run_sleep

    for text, category in [("The user lives in Lisbon.", "identity"),
                           ("The user lives in Lisbon.", "identity"),
                           ("The user likes green tea.", "preferences"),
                           ("It rained on Tuesday.", "context"),
                           ("The printer jammed twice.", "context")]:
        store.append("scratch", FactDraft(text, category))
    events = list(run_sleep(store, None, RetentionPolicy(max_active_facts=3)))
    done = [e for e in events if e.kind is SleepEventKind.PASS_DONE]
    assert [e.pass_name for e in done] == ["dedupe", "merge", "reconcile", "promote", "forget"]
    for e in done:
        assert e.changes is not None and e.figures is not None
        assert e.changes.versions == (int(e.figures.snapshot_after[1:]),)  # type: ignore[index]
        written = sorted({i for m in e.mutations if m.accepted
                          for i in ap.touched(mu.from_row(m))}, key=lambda i: int(i[2:]))
        assert sorted(e.changes.facts, key=lambda i: int(i[2:])) == written
    by_pass = {e.pass_name: e.changes for e in done}
    assert by_pass["dedupe"].deactivated == ("m_2",)  # type: ignore[union-attr]
    assert by_pass["promote"].changed == ("m_1", "m_3")  # type: ignore[union-attr]
    assert len(by_pass["forget"].deactivated) == 1  # type: ignore[union-attr]
    dry = list(run_sleep(store, None, RetentionPolicy(), dry_run=True))
    assert all(e.changes is None for e in dry)
