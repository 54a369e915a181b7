"""Lineage includes the person (S-WORDS-3): edits, pins and unpins, adds, imports, forget now,
bring back, undo and redo appear as steps "by you", each with the state it left the fact in;
over any sequence of hand operations and sleeps the last step agrees with the fact's state."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.lineage import lineage, render
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store, exchange

NOW = 1_800_000_000.0
POLICY = RetentionPolicy(stale_after_days=30, max_active_facts=6)
TEXTS = (
    "I live in Lisbon.", "I moved from Lisbon to Porto.", "I live in Lisbon.",
    "My favourite colour is blue.", "My favourite colour is now green, no longer blue.",
    "I have two cats.", "I have three cats now.", "I work at Acme.", "I quit Acme.",
    "I play the cello on Sundays.",
)
OPS = ("add", "edit", "pin", "unpin", "forget", "bring_back", "undo", "redo", "sleep")


def _agrees(store: Store) -> None:
    for f in store.all_facts():
        lin = lineage(store, f.id)
        steps = lin.root.steps
        assert steps, (f.id, render(lin))
        assert steps[-1].state == lin.root.status, render(lin)


def _run(store: Store, op: str, pick: int, text: str) -> None:
    active = store.active_facts()
    inactive = [f for f in store.all_facts() if not f.active]
    try:
        if op == "add":
            store.add_fact("human" if pick % 2 else "scratch", text, "context")
        elif op == "edit" and active:
            f = active[pick % len(active)]
            store.edit(f.id, text=f"{f.text.rstrip('.')} indeed.")
        elif op in ("pin", "unpin") and active:
            store.pin(active[pick % len(active)].id, op == "pin")
        elif op == "forget" and active:
            store.forget_now(active[pick % len(active)].id)
        elif op == "bring_back" and inactive:
            store.bring_back(inactive[pick % len(inactive)].id)
        elif op == "undo":
            store.undo()
        elif op == "redo":
            store.redo()
        elif op == "sleep":
            list(run_sleep(store, None, POLICY, now=store.now() + 60))
    except InvalidInput:
        pass  # nothing to undo, already pinned, ...: refused with a message, nothing written


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.sampled_from(TEXTS)),
                min_size=1, max_size=14))
def test_the_last_step_agrees_with_the_facts_state(ops: list[tuple[str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as d, Store(Path(d) / "n.db") as store:
        store.add_fact("human", "I live in Lisbon.", "identity")
        for op, pick, text in ops:
            _run(store, op, pick, text)
            _agrees(store)


def test_every_hand_operation_is_a_step_by_you(tmp_path: Path) -> None:
    with Store(tmp_path / "n.db") as store:
        f, _ = store.add_fact("human", "The user lives in Lisbon.", "identity")
        store.edit(f.id, text="The user lives in Lisbon, near the river.")
        store.pin(f.id)
        store.pin(f.id, False)
        store.forget_now(f.id)
        store.bring_back(f.id)
        store.undo()
        store.redo()
        lin = lineage(store, f.id)
        whats = [s.what for s in lin.root.steps]
        assert whats[0] == "written by you into human"
        assert whats[1].startswith("edited by you (text 'The user lives in Lisbon, near")
        assert whats[2:6] == ["pinned by you", "unpinned by you", "forgotten by you",
                              "brought back by you"]
        assert whats[6].startswith("undone by you") and whats[7].startswith("redone by you")
        assert [s.state for s in lin.root.steps][-4:] == ["forgotten", "active", "forgotten",
                                                          "active"]
        assert lin.root.status == "active" and all(s.decided_by == "you" for s in lin.root.steps)
        shown = render(lin)
        assert "brought back by you" in shown and shown.rstrip().endswith("now active)")


def test_an_import_is_a_step_by_you(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as source:
        source.add_fact("human", "The user keeps bees.", "context")
        exported = exchange.build_export(source)
    with Store(tmp_path / "b.db") as store:
        done = exchange.import_into_scratch(store, exported, name="bees.json")
        (fact,) = done.added
        (step,) = lineage(store, fact.id).root.steps
        assert step.what == "imported by you from bees.json into scratch"
        assert step.state == "active" and step.decided_by == "you"
