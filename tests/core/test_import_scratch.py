"""Import facts into scratch (S-EXP-1): a memory that is not empty takes an export's active
facts as the person's own ``add`` edits into scratch, duplicates skipped by the dedupe gate's
rule, in one version Ctrl+Z undoes; a hostile file is refused as ever and writes nothing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.judges.duplicates import already_held, held_by
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.exchange import ImportRefused
from nocturne_desktop.core.types import FactDraft

THEIRS = [
    ("human", "The user lives in Lisbon.", "identity"),            # a duplicate of ours
    ("human", "The user does not live in Lisbon.", "identity"),    # a negation: not a duplicate
    ("human", "The user keeps a bearded dragon called Saffron.", "preferences"),
    ("episodes", "The user went to Porto last spring.", "event"),
    ("scratch", "The user keeps a bearded dragon called Saffron!", "context"),  # repeats the file
]


def make_export(tmp_path: Path, *, forgotten: str | None = "The user hates olives.") -> Path:
    with Store(tmp_path / "theirs" / "n.db") as s:
        for block, text, category in THEIRS:
            s.append(block, FactDraft(text, category))
        if forgotten:
            f = s.append("human", FactDraft(forgotten, "preferences"))
            s.snapshot("encoded")
            s.forget_now(f.id)
        s.snapshot("encoded")
        file = tmp_path / "backup.json"
        exchange.write_export(s, file)
    return file


@pytest.fixture
def ours(tmp_path: Path) -> Path:
    db = tmp_path / "ours" / "n.db"
    with Store(db) as s:
        s.add_turn("user", "I live in Lisbon and I work from home.")
        s.append("human", FactDraft("The user lives in Lisbon.", "identity", 1))
        s.append("human", FactDraft("The user works from home.", "context", 1))
        s.snapshot("encoded")
    return db


def test_the_active_facts_go_to_scratch_as_your_adds_in_one_version(
        tmp_path: Path, ours: Path) -> None:
    file = make_export(tmp_path)
    with Store(ours) as s:
        before_versions = len(s.versions())
        done = exchange.import_file_into_scratch(file, s)
        assert done.offered == 5  # the forgotten fact is not offered
        assert [f.text for f in done.added] == [
            "The user does not live in Lisbon.",
            "The user keeps a bearded dragon called Saffron.",
            "The user went to Porto last spring."]
        assert {f.block for f in done.added} == {"scratch"}
        assert [f.category for f in done.added] == ["identity", "preferences", "event"]
        assert [t for t, _, _ in done.skipped] == ["The user lives in Lisbon.",
                                                "The user keeps a bearded dragon called Saffron!"]
        assert done.skipped[0][1:] == ("m_1", "The user lives in Lisbon.")
        assert done.skipped[1][1:] == ("", "")
        assert done.skipped_lines() == [
            "The user lives in Lisbon. (m_1)",
            "The user keeps a bearded dragon called Saffron! (repeated in the file)"]
        assert "skipped 2 duplicates" in done.message() and "Imported 3 of the 5" in done.message()
        assert len(s.versions()) == before_versions + 1 and done.version is not None
        assert s.versions()[-1].label == "import:3 facts from backup.json"
        rows = s.mutations(seq_range=(done.version.seq - 1, done.version.seq))
        assert [(r.mutation.kind, r.mutation.decided_by, r.mutation.pass_name) for r in rows] == [
            ("add", "you", "hand")] * 3
        assert all(r.mutation.refs["importedFrom"] == "backup.json" for r in rows)
        assert rows[0].mutation.reason == "imported by you from backup.json"


def test_traceability_and_reaudit_accept_the_imported_facts(tmp_path: Path, ours: Path) -> None:
    file = make_export(tmp_path)
    with Store(ours) as s:
        exchange.import_file_into_scratch(file, s)
        transcript = [t.text for t in s.turns()]
        trace = audit.traceability(s.active_facts(), transcript, audit.hand_written(s))
        assert trace.problems == () and trace.traceable == trace.total == 5
        sources = dict(trace.by_you)
        assert len(sources) == 3
        assert all(src.startswith("imported from backup.json on ") for src in sources.values())
        checked, problems = audit.reaudit_hand(s)
        assert checked == 3 and problems == []
        sweep = audit.meaning_sweep(s.active_facts(), s.turns(), audit.hand_written(s))
        assert sweep.problems == ()


def test_ctrl_z_undoes_the_whole_import_and_redo_makes_it_again(tmp_path: Path, ours: Path) -> None:
    file = make_export(tmp_path)
    with Store(ours) as s:
        mine = [f.text for f in s.active_facts()]
        done = exchange.import_file_into_scratch(file, s)
        step = s.undo_step()
        assert step is not None and set(step.ids) == {f.id for f in done.added}
        s.undo()
        assert [f.text for f in s.active_facts()] == mine
        s.redo()
        assert len(s.active_facts()) == len(mine) + 3


def test_a_second_import_of_the_same_file_adds_nothing(tmp_path: Path, ours: Path) -> None:
    file = make_export(tmp_path)
    with Store(ours) as s:
        exchange.import_file_into_scratch(file, s)
        versions = s.versions()
        again = exchange.import_file_into_scratch(file, s)
        assert again.added == () and again.version is None and len(again.skipped) == 5
        assert s.versions() == versions
        assert "Imported 0 of the 5" in again.message()


def test_into_an_empty_store_it_still_works(tmp_path: Path) -> None:
    file = make_export(tmp_path, forgotten=None)
    with Store(tmp_path / "empty" / "n.db") as s:
        done = exchange.import_file_into_scratch(file, s)
        assert len(done.added) == 4 and s.versions()[-1].seq == 1


@pytest.mark.parametrize(("content", "match"), [
    ('{"format": ', "not valid JSON"),
    ('{"memories": []}', "not a Nocturne memory export"),
    ("[" * 100_000 + "]" * 100_000, "nests JSON deeper|far more than any export"),
])
def test_a_hostile_file_is_refused_and_nothing_is_written(
        tmp_path: Path, ours: Path, content: str, match: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with Store(ours) as s:
        before = s.dump()
        with pytest.raises(ImportRefused, match=match):
            exchange.import_file_into_scratch(bad, s)
        assert s.dump() == before


def test_colliding_ids_are_refused_too(tmp_path: Path, ours: Path) -> None:
    file = make_export(tmp_path)
    doc = json.loads(file.read_text())
    doc["facts"] = doc["facts"] + doc["facts"][:1]
    file.write_text(json.dumps(doc))
    with Store(ours) as s:
        before = s.dump()
        with pytest.raises(ImportRefused, match="two facts have the id 'm_1'"):
            exchange.import_file_into_scratch(file, s)
        assert s.dump() == before


def test_a_failure_half_way_writes_nothing(tmp_path: Path, ours: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    file = make_export(tmp_path)
    with Store(ours) as s:
        before = s.dump()

        def broken(*_a: object, **_k: object) -> None:
            raise OSError("disk on fire")

        monkeypatch.setattr(s, "snapshot", broken)
        with pytest.raises(OSError):
            exchange.import_file_into_scratch(file, s)
        monkeypatch.undo()
        assert s.dump() == before


def test_the_duplicate_rule_is_the_gates(tmp_path: Path) -> None:
    with Store(tmp_path / "n.db") as s:
        s.append("human", FactDraft("The user lives in Lisbon.", "identity"))
        s.append("human", FactDraft("The user can swim.", "identity"))
        facts = s.active_facts()
    assert already_held("The user lives in Lisbon!", facts) == facts[0]
    assert already_held("the user lives in lisbon", facts) == facts[0]
    assert already_held("The user doesn't live in Lisbon.", facts) is None  # polarity guard
    assert already_held("The user might swim.", facts) is None  # modality guard
    # the keeper guard: a fuller text is not held by the shorter fact
    assert already_held("The user lives in Lisbon with two cats.", facts) is None
    assert already_held("The user lives in Porto.", facts) is None  # another fact (a correction)
    forgotten = [dataclasses.replace(f, active=False) for f in facts]
    assert already_held("The user lives in Lisbon.", forgotten) is None
    assert held_by([("Tea is nice.", "context"), ("Tea is nice!", "context")], []) == [None, 0]
