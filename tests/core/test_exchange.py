"""Export and import (S-EXP-1): the round trip is exact on generated stores, and a hostile or
foreign file gets one clear sentence and writes nothing."""

from __future__ import annotations

import itertools
import json
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.exchange import ImportRefused
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, FactDraft, Mutation
from tests.clock import Clock

T0 = 1_700_000_000.0
TEXTS = [
    "The user lives in Lisbon.",
    "The user lives in Lisbon!",
    "The user keeps a bearded dragon called Saffron.",
    "Café ☕ with Zoë at 7 — naïve résumé",
    "Standup moved to 10:00 on Mondays.",
    "*bold* <b>html</b> [link](http://x) # heading",
]


OPS = st.lists(st.tuples(
    st.sampled_from(["append", "turn", "conversation", "edit", "pin", "forget", "bring", "add",
                     "sleep", "snapshot", "restore", "undo", "redo", "supersede", "importance",
                     "use"]),
    st.integers(0, 1000)), min_size=1, max_size=25)


def build(store: Store, ops: list[tuple[str, int]], texts: list[str] | None = None) -> None:
    """Play ``ops`` on ``store``, each writing one of ``texts`` (default :data:`TEXTS`)."""
    texts = texts or TEXTS
    for op, k in ops:
        facts = store.all_facts()
        active = [f for f in facts if f.active]
        gone = [f for f in facts if not f.active]
        text = texts[k % len(texts)]
        try:
            if op == "append":
                store.append(BLOCKS[k % 4], FactDraft(text, CATEGORIES[k % 5], created_at=T0 - k * 3600))
            elif op == "turn":
                store.add_turn(("user", "assistant")[k % 2], text)
            elif op == "conversation":
                store.new_conversation()
            elif op == "edit" and active:
                store.edit(active[k % len(active)].id, text=text, category=CATEGORIES[k % 5])
            elif op == "pin" and active:
                f = active[k % len(active)]
                store.pin(f.id, not f.pinned)
            elif op == "forget" and active:
                store.forget_now(active[k % len(active)].id)
            elif op == "bring" and gone:
                store.bring_back(gone[k % len(gone)].id)
            elif op == "add":
                store.add_fact(BLOCKS[k % 4], text, CATEGORIES[k % 5])
            elif op == "sleep":
                list(run_sleep(store, None, RetentionPolicy(max_active_facts=1 + k % 4), now=T0))
            elif op == "snapshot":
                store.snapshot("manual")
            elif op == "restore" and store.versions():
                store.restore(store.versions()[k % len(store.versions())].seq)
            elif op == "undo":
                store.undo()
            elif op == "redo":
                store.redo()
            elif op == "supersede" and len(active) >= 2:
                old, new = active[k % len(active)], active[(k + 1) % len(active)]
                m = Mutation("reconcile", "supersede", old.id, True, "a correction",
                             refs={"supersededBy": new.id, "rule": "value"})
                if k % 2:
                    store.commit_pass([m], label="pass:reconcile:after", sleep_id=None)
                else:
                    store.apply(m)
            elif op == "importance" and facts:
                store.set_importance(facts[k % len(facts)].id, None if k % 6 == 0 else 1 + k % 5)
            elif op == "use" and active:
                store.record_use([active[k % len(active)].id], at=T0 + k)
        except InvalidInput:
            pass  # nothing to change / nothing to undo: the generated step is a no-op


def everything(store: Store) -> dict[str, Any]:
    seqs = [v.seq for v in store.versions()]
    return {
        "facts": store.all_facts(),
        "versions": store.versions(),
        "states": {s: store.state_at(s) for s in seqs},
        "diffs": {(a, b): store.diff(a, b) for a, b in itertools.product(seqs, seqs)},
        "mutations": store.mutations(),
        "sleeps": store.sleeps(),
        "turns": store.turns(),
        "conversations": store.conversations(),
        "current": store.current_conversation(),
        "undo": (store.undo_step(), store.redo_step()),
        "search": store.search_scored("Lisbon dragon", now=T0),
        "strengths": store.strengths(),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_round_trip_is_exact_at_every_version(ops: list[tuple[str, int]]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="nocturne-exchange-"))
    try:
        with Store(folder / "a" / "n.db", clock=Clock(step=7.25)) as a:
            build(a, ops)
            exported = exchange.export_json(a, now=T0)
            before = everything(a)
        (folder / "memory.json").write_text(exported, encoding="utf-8")
        exchange.import_file(folder / "memory.json", folder / "b" / "n.db")
        with Store(folder / "b" / "n.db", clock=Clock(step=7.25)) as b:
            assert everything(b) == before
            assert exchange.export_json(b, now=T0) == exported
            with Store(folder / "a" / "n.db", clock=Clock(step=7.25)) as a:
                assert b.append("scratch", FactDraft("next")).id == a.append(
                    "scratch", FactDraft("next")).id
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def exported(tmp_path: Path) -> dict[str, Any]:
    with Store(tmp_path / "src" / "n.db", clock=Clock(step=7.25)) as s:
        build(s, [("turn", 0), ("append", 1), ("append", 2), ("add", 3), ("pin", 0),
                  ("sleep", 0), ("edit", 1), ("conversation", 0), ("turn", 1), ("importance", 2),
                  ("use", 0)])
        doc: dict[str, Any] = json.loads(exchange.export_json(s))
    return doc


def refused(tmp_path: Path, content: bytes | str, match: str) -> None:
    f = tmp_path / "in.json"
    f.write_bytes(content.encode() if isinstance(content, str) else content)
    target = tmp_path / "new" / "n.db"
    with pytest.raises(ImportRefused, match=match):
        exchange.import_file(f, target)
    assert not (tmp_path / "new").exists()  # nothing written, not even a folder


def test_a_valid_export_imports(tmp_path: Path, exported: dict[str, Any]) -> None:
    f = tmp_path / "in.json"
    f.write_text(json.dumps(exported))
    exchange.import_file(f, tmp_path / "new" / "n.db")
    with Store(tmp_path / "new" / "n.db") as s:
        assert len(s.conversations()) == 2 and s.all_facts()


@pytest.mark.parametrize(("mangle", "match"), [
    (lambda d: {**d, "exportVersion": 3},
     "export of version 3; this Nocturne reads versions 1 and 2 \\(update Nocturne"),
    (lambda d: {**d, "policy": {**RetentionPolicy().model_dump(), "max_active_facts": 0}},
     "its retention policy is not one Nocturne accepts: max_active_facts"),
    (lambda d: {**d, "policy": {"stale_after_days": 30, "cap": 5}},
     "its retention policy is not one Nocturne accepts: cap"),
    (lambda d: {**d, "meta": {**d["meta"], "retentionPolicy": "{}"}},
     "'retentionPolicy' is the memory's retention policy"),
    (lambda d: {**d, "storeSchema": 99}, "newer Nocturne"),
    (lambda d: {**d, "format": "letta"}, "not a Nocturne memory export"),
    (lambda d: {**d, "extra": 1}, "extra: Extra inputs are not permitted"),
    (lambda d: {**d, "nextItem": "7"}, "nextItem: Input should be a valid integer"),
    (lambda d: {**d, "facts": d["facts"] + d["facts"][:1]}, "two facts have the id 'm_1'"),
    (lambda d: {**d, "mutations": d["mutations"] + d["mutations"][:1]}, "two audit rows"),
    (lambda d: {**d, "versions": d["versions"] + d["versions"][:1]}, "two versions"),
    (lambda d: {**d, "nextItem": 1}, "would reuse fact ids"),
    (lambda d: {**d, "facts": [{**d["facts"][0], "id": "m_01"}]}, "not a fact id"),
    (lambda d: {**d, "facts": [{**d["facts"][0], "current": {**d["facts"][0]["current"],
                                                             "text": " "}}]}, "is empty"),
    (lambda d: {**d, "facts": [{**d["facts"][0], "current": {**d["facts"][0]["current"],
                                                             "category": "gossip"}}]},
     "unknown category 'gossip'"),
    (lambda d: {**d, "facts": [{**d["facts"][0], "current": {**d["facts"][0]["current"],
                                                             "fromSeq": 999}}]},
     "outside the versions|does not tile"),
    (lambda d: {**d, "versions": [{**d["versions"][0], "sleepId": 77}, *d["versions"][1:]]},
     "names sleep 77"),
    (lambda d: {**d, "conversations": [{**d["conversations"][0], "turns": [
        {**d["conversations"][0]["turns"][0], "role": "root"}]}, *d["conversations"][1:]]},
     "unknown role 'root'"),
    (lambda d: {**d, "strengths": [{**d["strengths"][0], "id": "m_99"}]},
     "a strength names 'm_99'"),
    (lambda d: {**d, "strengths": [{**d["strengths"][0], "importance": 9}]}, "importance 9"),
    (lambda d: {**d, "facts": [{**d["facts"][0], "current": {**d["facts"][0]["current"],
                                                             "supersededBy": "m_99"}}]},
     "superseded by 'm_99'"),
])
def test_foreign_or_damaged_exports_are_refused(tmp_path: Path, exported: dict[str, Any],
                                                mangle: Any, match: str) -> None:
    refused(tmp_path, json.dumps(mangle(exported)), match)


def test_bad_json_deep_nesting_and_binary_are_refused(tmp_path: Path,
                                                      exported: dict[str, Any]) -> None:
    refused(tmp_path, "{\"format\": ", "not valid JSON")
    refused(tmp_path, b"\xff\xfe\x00garbage", "not UTF-8")
    refused(tmp_path, "[]", "not a Nocturne memory export")
    refused(tmp_path, "[" * 100_000 + "]" * 100_000, "nests JSON deeper|far more than any export")
    deep = {**exported, "mutations": [{**exported["mutations"][0],
                                       "refs": json.loads("[" * 200 + "]" * 200)}]}
    refused(tmp_path, json.dumps(deep), "deeper than 64")


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "huge.json"
    with f.open("wb") as fh:  # 1 GB, sparse: its size is what counts
        fh.truncate(1 << 30)
    reads: list[Path] = []
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or b"")
    with pytest.raises(ImportRefused, match=r"1,024 MiB.*at most 256 MiB"):
        exchange.import_file(f, tmp_path / "new" / "n.db")
    assert reads == [] and not (tmp_path / "new").exists()


def test_importing_into_a_store_that_holds_memory_is_refused(tmp_path: Path,
                                                              exported: dict[str, Any]) -> None:
    f = tmp_path / "in.json"
    f.write_text(json.dumps(exported))
    with Store(tmp_path / "busy" / "n.db") as s:
        s.append("scratch", FactDraft("already here"))
        before = s.dump()
    with pytest.raises(ImportRefused, match="already holds a memory"):
        exchange.import_file(f, tmp_path / "busy" / "n.db")
    with Store(tmp_path / "busy" / "n.db") as s:
        assert s.dump() == before


def test_markdown_export_reads_by_block_with_dates_and_escapes(tmp_path: Path) -> None:
    with Store(tmp_path / "n.db", clock=Clock(step=7.25)) as s:
        f, _ = s.add_fact("human", "The user's sister is *Ana* <b>.", "identity")
        s.pin(f.id)
        g = s.append("scratch", FactDraft("Toast for breakfast."))
        s.forget_now(g.id)
        md = exchange.export_markdown(s, now=T0)
    assert md.startswith("# Nocturne memory — exported 2023-11-14")
    assert ("## Human\n\n- The user's sister is \\*Ana\\* \\<b>. — "
            "*identity · since 2023-11-14 · pinned*") in md
    assert ("## Forgotten\n\n- Toast for breakfast. — "
            "*context · was in scratch · since 2023-11-14 · forgotten 2023-11-14*") in md
    assert "## Persona\n\n(empty)" in md


def test_markdown_export_escapes_no_ordinary_dot_and_counts_in_the_singular() -> None:
    """Issue 25: it wrote "Lisbon\\." and "1 conversations"."""
    folder = Path(tempfile.mkdtemp(prefix="nocturne-md-"))
    try:
        with Store(folder / "n.db", clock=Clock(step=7.25)) as s:
            s.add_fact("human", "The user lives in Lisbon.", "identity")
            s.add_turn("user", "I live in Lisbon.")
            md = exchange.export_markdown(s, now=T0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert "- The user lives in Lisbon. — *identity" in md
    assert "\\." not in md
    assert "1 active fact, 0 forgotten, 1 version, 1 conversation." in md


def test_a_refused_text_names_its_rule(tmp_path: Path, exported: dict[str, Any]) -> None:
    """A fact's text the admission check refuses says which rule refused it, in a JSON and in
    a Markdown file alike (before, the refusal carried only a sentence); a file that is no
    export carries no rule."""
    doc = json.loads(json.dumps(exported))
    doc["facts"][0]["current"]["text"] = "My bank password is hunter2hunter2"
    f = tmp_path / "in.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ImportRefused) as json_refusal:
        exchange.import_file(f, tmp_path / "new" / "n.db")
    assert json_refusal.value.rule == "sensitive"
    md = tmp_path / "in.md"
    with Store(tmp_path / "md" / "n.db") as s:
        s.append("human", FactDraft("The user keeps bees.", "identity", None))
        exchange.write_export(s, md, markdown=True)
    md.write_text(md.read_text(encoding="utf-8").replace(
        "The user keeps bees.", "The user's PIN is 4821, password hunter2hunter2"),
        encoding="utf-8")
    with pytest.raises(ImportRefused) as md_refusal:
        exchange.read_export(md)
    assert md_refusal.value.rule == "sensitive"
    f.write_text("{not json")
    with pytest.raises(ImportRefused) as bad:
        exchange.read_export(f)
    assert bad.value.rule == ""
    back = pickle.loads(pickle.dumps(json_refusal.value))
    assert back.rule == "sensitive" and str(back) == str(json_refusal.value)
