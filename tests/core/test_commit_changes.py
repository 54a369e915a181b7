"""Several hand-kind changes from one source as one version (``Store.commit_changes``), the link
state a link keeps beside memory, and the lineage of hand-written facts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nocturne_desktop.core.applying import touched
from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.lineage import lineage, render
from nocturne_desktop.core.mutations import (
    LETTA_PASS,
    Add,
    DecidedBy,
    Edit,
    Forget,
    Kind,
    Refusal,
    fact_value,
    is_rule,
)
from nocturne_desktop.core.store import SCHEMA_VERSION, Store
from nocturne_desktop.core.types import StoreChanges

LETTA = {"pass_name": LETTA_PASS, "decided_by": DecidedBy.LETTA}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "nocturne.db")
    s.add_fact("human", "The user lives in Lisbon.", "identity")
    s.add_fact("human", "The user keeps a bearded dragon.", "preferences")
    return s


def test_changes_from_one_source_are_one_version_with_their_rows(store: Store) -> None:
    m1, m2 = store.get("m_1"), store.get("m_2")
    assert m1 is not None and m2 is not None
    seen: list[StoreChanges] = []
    store.subscribe(seen.append)
    version, ids = store.commit_changes([
        Edit(target="m_1", text="The user lives in Porto now.", before=fact_value(m1),
             reason="changed in Letta", **LETTA),
        Forget(target="m_2", text=m2.text, extra={"before": fact_value(m2)},
               reason="removed in Letta", **LETTA),
        Add(target="", text="The user doesn't drink coffee.", block="human", category="context",
            reason="written in Letta", **LETTA),
    ], label="changed in Letta", refused=[Refusal(
        of=Kind.ADD, target="-", why="statement guard: 'Persona:' is a heading, not a fact",
        **LETTA)])
    assert version is not None and version.label == "changed in Letta"
    assert ids == ["m_1", "m_2", "m_3"]
    assert [(f.id, f.text) for f in store.active_facts()] == [
        ("m_1", "The user lives in Porto now."), ("m_3", "The user doesn't drink coffee.")]
    rows = store.mutations(seq_range=(version.seq - 1, version.seq))
    assert [(r.mutation.kind, r.mutation.item_id, r.mutation.accepted) for r in rows] == [
        ("edit", "m_1", True), ("forget", "m_2", True), ("add", "m_3", True), ("add", "-", False)]
    assert len(seen) == 1 and seen[0].versions == (version.seq,) and seen[0].added == ("m_3",)
    # re-audited and traced like the person's own changes, to the change in Letta
    assert audit.reaudit_hand(store) == (5, [])
    trace = audit.traceability(store.active_facts(), [], audit.hand_written(store))
    assert dict(trace.by_you)["m_3"].startswith("changed in Letta on ")
    assert "written in Letta" in render(lineage(store, "m_3"))
    # and one undo takes the whole version back
    store.undo()
    assert [(f.id, f.text) for f in store.active_facts()] == [
        ("m_1", "The user lives in Lisbon."), ("m_2", "The user keeps a bearded dragon.")]


def test_a_bad_change_writes_nothing_and_refusals_alone_make_no_version(store: Store) -> None:
    n_versions, n_rows = len(store.versions()), len(store.mutations())
    with pytest.raises(InvalidInput, match=r"not active|unknown item"):
        store.commit_changes([
            Add(target="", text="The user drinks tea.", block="human", category="context", **LETTA),
            Forget(target="m_9", **LETTA)], label="changed in Letta")
    assert len(store.versions()) == n_versions and len(store.mutations()) == n_rows
    assert store.get("m_3") is None
    version, ids = store.commit_changes([], label="changed in Letta", refused=[
        Refusal(of=Kind.ADD, target="-", why="sensitive: looks like a password", **LETTA)])
    assert version is None and ids == []
    assert store.mutations()[-1].seq is None and len(store.versions()) == n_versions


def test_letta_decides_like_a_person_not_like_a_rule() -> None:
    assert not is_rule(DecidedBy.LETTA)
    edit = Edit(target="m_1", text="x y", **LETTA)
    assert touched(edit) == {"m_1": "edited in Letta"}
    assert touched(Edit(target="m_1", text="x y")) == {"m_1": "edited by you"}


def test_a_hand_edit_is_in_the_lineage_of_its_fact(tmp_path: Path) -> None:
    """Lineage once listed only the model's and the rules' changes: a fact the person wrote or
    edited had no step at all."""
    with Store(tmp_path / "nocturne.db") as s:
        fact, _ = s.add_fact("human", "The user likes tea.", "preferences")
        s.edit(fact.id, text="The user likes green tea.")
        s.pin(fact.id)
        text = render(lineage(s, fact.id))
    assert "written by you" in text and "edited by you" in text and "pinned by you" in text


def test_link_state_is_kept_beside_memory_not_in_it(tmp_path: Path, store: Store) -> None:
    seen: list[StoreChanges] = []
    store.subscribe(seen.append)
    assert store.get_link_state("letta") is None
    store.set_link_state("letta", '{"agent": "agent-1"}')
    assert store.get_link_state("letta") == '{"agent": "agent-1"}'
    assert seen == []  # nothing of memory changed: nobody is told
    assert "link_state" not in store.dump()  # not exported: an import is not linked
    with pytest.raises(InvalidInput, match="NUL"):
        store.set_link_state("letta", "a\x00b")
    store.set_link_state("letta", None)
    assert store.get_link_state("letta") is None


def test_a_store_of_the_previous_schema_gains_the_link_state_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path) as s:
        s.add_fact("human", "The user lives in Lisbon.", "identity")
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE link_state")
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    raw.commit()
    raw.close()
    with Store(path) as s:
        s.set_link_state("letta", "{}")
        assert [f.text for f in s.active_facts()] == ["The user lives in Lisbon."]
