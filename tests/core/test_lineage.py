"""Lineage (S-LIN-1): ancestry and descendants of any fact from the audit log, at merge depth 3,
each step with version, pass, decided-by and reason; the headless ``nocturne lineage`` verb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nocturne_desktop import cli
from nocturne_desktop.core import mutations as mu
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.lineage import lineage, render, successor_chain
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


def build(store: Store) -> dict[str, str]:
    """Five turns, five encoded facts, then: m_2 merged into m_1, m_1 merged into m_3 (depth 3),
    m_4 dropped as a duplicate of m_3, m_3 promoted, then m_3 superseded by m_5."""
    texts = ["User lives in Lisbon", "User lives near the river", "User lives in Lisbon by the river",
             "User lives in Lisbon by the river.", "User has moved to Porto"]
    ids = {}
    for n, text in enumerate(texts, start=1):
        store.add_turn("user", f"turn {n}: {text}")
        f = store.append("scratch", FactDraft(text, "identity", n))
        ids[f"f{n}"] = f.id
        store.record_mutations([mu.to_row(mu.Append(
            pass_name="encoder", target=f.id, reason=f"traceable to turn {n}",
            decided_by=mu.DecidedBy.ENCODER, turn=n))], seq=None, sleep_id=None)
    store.snapshot("encoded")

    def commit(change: mu.Change, label: str) -> None:
        store.commit_pass([mu.to_row(change)], label=label, sleep_id=None)

    commit(mu.Merge(pass_name="merge", into="m_1", from_ids=("m_2",), reason="same home",
                    merged_text="User lives in Lisbon near the river"), "merge 1")
    commit(mu.Merge(pass_name="merge", into="m_3", from_ids=("m_1",), reason="same home again",
                    merged_text="User lives in Lisbon by the river"), "merge 2")
    commit(mu.Drop(pass_name="dedupe", target="m_4", duplicate_of="m_3", reason="same",
                   decided_by=mu.DecidedBy.DUPLICATE_RULE), "drop")
    commit(mu.Promote(pass_name="promote", target="m_3", to_block="human", reason="stable"),
           "promote")
    commit(mu.Supersede(pass_name="reconcile", target="m_3", by="m_5", reason="moved to Porto"),
           "supersede")
    return ids


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "nocturne.db")
    yield s  # type: ignore[misc]
    s.close()


def test_ancestry_of_a_fact_merged_from_merged_facts(store: Store) -> None:
    build(store)
    lin = lineage(store, "m_3")
    root = lin.root
    assert (root.fact_id, root.status) == ("m_3", "superseded")
    assert root.turn is not None and root.turn.text.startswith("turn 3:")
    assert root.depth() >= 3
    parents = {p.fact_id: p for p in root.parents}
    assert set(parents) == {"m_1", "m_4"}
    assert parents["m_1"].via == "merged into m_3"
    assert parents["m_4"].via == "dropped as a duplicate of m_3"
    grand = parents["m_1"].parents
    assert [(g.fact_id, g.via) for g in grand] == [("m_2", "merged into m_1")]
    assert grand[0].turn is not None and grand[0].turn.text == "turn 2: User lives near the river"
    kinds = [(s.kind, s.pass_name, s.decided_by) for s in root.steps]
    assert kinds[0] == ("append", "encoder", "encoder")
    assert ("drop", "dedupe", "duplicate-rule") in kinds
    assert ("promote", "promote", "model") in kinds
    assert kinds[-1] == ("supersede", "reconcile", "model")
    assert all(s.version is not None for s in root.steps if s.kind != "append")
    assert all(s.reason for s in root.steps)
    assert [(d.fact_id, d.status) for d in lin.descendants] == [("m_5", "active")]


def test_descendants_lead_to_the_fact_that_holds_it_now(store: Store) -> None:
    build(store)
    lin = lineage(store, "m_2")
    assert lin.root.status == "forgotten" and lin.root.parents == []
    assert [d.fact_id for d in lin.descendants] == ["m_1", "m_3", "m_5"]
    assert lin.descendants[-1].status == "active"
    assert [f.id for f in successor_chain(store, store.get("m_3"))] == ["m_5"]  # type: ignore[arg-type]
    text = render(lin)
    assert "m_2 merged into m_1" in text and "→ m_5 [active]" in text


def test_render_and_unknown_ids(store: Store) -> None:
    build(store)
    text = render(lineage(store, "m_5"))
    assert text.startswith("Why memory holds this:")
    assert "superseded by m_5: m_3 [superseded]" in text
    assert "decided by duplicate-rule" in text
    with pytest.raises(InvalidInput):
        lineage(store, "m_99")


def test_headless_lineage_verb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(tmp_path / "nocturne.db") as s:
        build(s)
    assert cli.main(["lineage", "m_3", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "m_3 [superseded]" in out and "turn 2 (user)" in out
    assert cli.main(["lineage", "m_3", "--data-dir", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root"]["fact_id"] == "m_3" and data["descendants"][0]["fact_id"] == "m_5"
    assert cli.main(["lineage", "m_404", "--data-dir", str(tmp_path)]) == 1
    assert "unknown item id" in capsys.readouterr().err
    assert cli.main(["lineage", "m_1", "--data-dir", str(tmp_path / "none")]) == 1
