"""The packaged demo memory: traceable, gives every pass of a rules-only sleep work, and undoes
exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from nocturne_desktop import demo
from nocturne_desktop.core.checks.audit import traceability
from nocturne_desktop.core.checks.verify import CONVERSATION
from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.sleep.passes.merge import clusters
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

NOW = 1_750_000_000.0


def test_transcript_is_the_verify_conversation() -> None:
    data = demo.load_demo()
    assert tuple(text for role, text in data.turns if role == "user") == CONVERSATION
    # a fact's source turn is a user turn
    for f in data.facts:
        assert data.turns[f.source_turn - 1][0] == "user", f


def test_every_demo_fact_is_traceable_to_the_user_turns(tmp_path: Path) -> None:
    db = demo.open_demo_store(tmp_path, now=NOW)
    with Store(db) as store:
        facts = store.active_facts()
        user_turns = [t.text for t in store.turns() if t.role == "user"]
    assert len(facts) == len(demo.load_demo().facts)
    result = traceability(facts, user_turns)
    assert result.problems == ()
    assert result.traceable == result.total == len(facts)


def test_demo_has_work_for_each_pass(tmp_path: Path) -> None:
    data = demo.load_demo()
    texts = [(f"m_{i}", f.text) for i, f in enumerate(data.facts, 1)]
    pairs = duplicates.candidate_pairs(texts, data.policy.similarity_threshold)
    exact = [p for p in pairs if dict(texts)[p[0]] == dict(texts)[p[1]]]
    assert len(exact) >= 2 and len(pairs) > len(exact)  # exact and near repeats
    db = demo.open_demo_store(tmp_path, now=NOW)
    with Store(db) as store:
        assert clusters(store.active_facts()), "Merge should see at least one related cluster"
        scratch_to_promote = [f for f in store.get_block("scratch")
                              if f.category in ("identity", "preferences", "commitments", "event")]
        assert scratch_to_promote
        stale = [f for f in store.active_facts() if data.policy.is_stale(f, NOW)]
        assert len([f for f in stale if f.block == "episodes"]) == 2


def test_rules_only_sleep_changes_dedupe_promote_forget_and_undo_restores(tmp_path: Path) -> None:
    db = demo.open_demo_store(tmp_path, now=NOW)
    policy = demo.demo_policy()
    with Store(db) as store:
        start = store.latest_version()
        assert start is not None and start.label == "demo:loaded"
        before = store.all_facts()
        events = list(run_sleep(store, None, policy, now=NOW))
        assert events[-1].kind == "sleep done", events[-1].message
        done = {e.pass_name: e for e in events if e.kind == "pass done"}
        accepted = {name: e.figures.accepted for name, e in done.items() if e.figures}
        assert accepted["dedupe"] == 3
        assert accepted["promote"] == 5
        assert accepted["forget"] == 3
        kinds = {m.decided_by for e in done.values() for m in e.mutations if m.accepted}
        assert kinds == {"duplicate-rule", "promotion-rule", "retention-rule"}
        forgotten = {m.refs["text"] for m in done["forget"].mutations if m.accepted}
        assert forgotten == {"Maya had toast for breakfast.",
                             "Back in August Maya was at a conference in Porto.",
                             "Last spring Maya and her brother fixed a fence."}
        after = store.all_facts()
        assert after != before
        end = store.latest_version()
        assert end is not None
        diff = store.diff(start.id, end.id)
        assert len(diff.forgotten) == 6 and len(diff.changed) == 5  # 3 drops + 3 forgets; 5 moves
        store.restore(start.id)
        assert store.all_facts() == before
        assert store.integrity_check() == "ok"


def test_open_demo_store_replaces_an_old_demo(tmp_path: Path) -> None:
    db = demo.open_demo_store(tmp_path, now=NOW)
    with Store(db) as store:
        store.forget("m_1")
    again = demo.open_demo_store(tmp_path, now=NOW)
    assert again == db
    with Store(db) as store:
        assert store.get("m_1") is not None and store.get("m_1").active  # type: ignore[union-attr]
        assert len(store.versions()) == 1


def test_open_demo_store_refuses_a_real_memory(tmp_path: Path) -> None:
    db = tmp_path / "nocturne.db"
    with Store(db) as store:
        store.append("human", FactDraft("Precious real fact.", "identity"))
    with pytest.raises(StoreError, match="not demo data"):
        demo.open_demo_store(tmp_path)
    with Store(db) as store:
        assert [f.text for f in store.active_facts()] == ["Precious real fact."]


def test_default_folder_is_inside_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOCTURNE_DATA_DIR", str(tmp_path))
    db = demo.open_demo_store()
    assert db == tmp_path / "demo" / "nocturne.db" and db.is_file()


@pytest.mark.parametrize("bad, why", [
    ({"schema": 2}, "schema"),
    ({"schema": 1, "turns": [], "facts": {}}, "lists"),
    ({"schema": 1, "turns": [{"role": "bot", "text": "x"}], "facts": []}, "turn 1"),
    ({"schema": 1, "turns": [{"role": "user", "text": "x"}],
      "facts": [{"block": "attic", "category": "event", "text": "x", "source_turn": 1, "age_days": 0}]},
     "block"),
    ({"schema": 1, "turns": [{"role": "user", "text": "x"}],
      "facts": [{"block": "human", "category": "event", "text": "x", "source_turn": 2, "age_days": 0}]},
     "cites turn"),
    ({"schema": 1, "turns": [], "facts": [], "policy": {"max_active_facts": 0}}, "policy"),
])
def test_parse_demo_rejects_bad_data(bad: object, why: str) -> None:
    with pytest.raises(demo.DemoDataError, match=why):
        demo.parse_demo(bad)
