"""Versions and diffs proven against brute force.

A hypothesis state machine drives a real store (a temp file) with random appends, replaces,
text edits, forgettings, promotions, merges (through ``apply`` and ``commit_pass``), snapshots,
restores to random earlier versions, and the person's hand edits (edit, pin/unpin, forget now,
bring back, add, facts of another export imported into scratch) with undo and redo (the model
keeps its own undo/redo stacks), and exports imported into a fresh store. Beside it runs
a plain-Python model that keeps a full copy of the state at every snapshot - the article's
"copy the world" scheme. After every step:

* every earlier version materialised by the store equals the copy taken at that moment;
* ``diff`` classifies ids (kept / changed / forgotten / added) exactly as a brute-force diff of
  the two copies, for pairs next to each other, against the latest version, and in reverse;
* the live state equals the model, and ids are ``m_1 .. m_n`` with none reused.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Diff, Fact, FactDraft, Mutation
from tests.clock import Clock

TEXTS = [
    "The user lives in Lisbon.",
    "The user lives in Porto.",
    "The user keeps a bearded dragon called Saffron.",
    "My stack is Airflow and Postgres.",
    "Café ☕ with Zoë at 7 — naïve résumé",
    "مرحبا بالعالم",
    "e\u0301\u0301 combining marks 👩‍👩‍👧 family",
    "Standup moved to 10:00 on Mondays.",
]
STATEMENTS = [*TEXTS[:4], TEXTS[-1], "Zoë keeps a café ☕ in Braga with naïve résumés 👩‍👩‍👧."]
"""Texts the person's own doors admit (a hand edit or add must be a statement, S-WORDS-2)."""

State = dict[str, Fact]

IMPORTED = [
    ("The user lives in Lisbon.", "identity"),
    ("The user plays the cello on Thursdays.", "preferences"),
    ("The user does not live in Porto.", "identity"),
    ("Standup moved to 10:00 on Mondays.", "context"),
    ("The user went to Porto last spring.", "event"),
]
_EXPORTS: dict[tuple[tuple[str, str], ...], exchange.MemoryExport] = {}


def imported_export(facts: list[tuple[str, str]]) -> exchange.MemoryExport:
    """A checked export of another memory holding ``facts`` (made once per set)."""
    key = tuple(facts)
    if key not in _EXPORTS:
        folder = Path(tempfile.mkdtemp(prefix="nocturne-other-"))
        try:
            with Store(folder / "n.db") as other:
                for text, category in facts:
                    other.append("human", FactDraft(text, category))
                other.snapshot("encoded")
                _EXPORTS[key] = exchange.parse_export(exchange.export_json(other).encode())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return _EXPORTS[key]


def brute_diff(a: State, b: State) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"kept": set(), "changed": set(), "forgotten": set(), "added": set(),
                                "superseded": set()}
    for item_id in set(a) | set(b):
        x, y = a.get(item_id), b.get(item_id)
        x_on = x is not None and x.active
        y_on = y is not None and y.active
        if x_on and y_on:
            assert x is not None and y is not None
            same = (x.text, x.block, x.category, x.pinned) == (y.text, y.block, y.category, y.pinned)
            out["kept" if same else "changed"].add(item_id)
        elif x_on and y is not None and y.superseded_by is not None:
            out["superseded"].add(item_id)
        elif x_on:
            out["forgotten"].add(item_id)
        elif y_on:
            out["added"].add(item_id)
    return out


def classes(d: Diff) -> dict[str, set[str]]:
    return {
        "kept": {e.item_id for e in d.kept},
        "changed": {e.item_id for e in d.changed},
        "forgotten": {e.item_id for e in d.forgotten},
        "added": {e.item_id for e in d.added},
        "superseded": {e.item_id for e in d.superseded},
    }


SKIP = object()
"""An undo base the store cannot know (the fact did not exist in the version before)."""


@dataclass
class Unit:
    """One undoable change as the model sees it: its versions and, per fact it wrote, the value
    before it (a Fact, None for a fact it created, SKIP) and its value right after."""

    first: int
    last: int
    base: dict[str, object] = field(default_factory=dict)


class VersionedStore(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="nocturne-stateful-"))
        self.clock = Clock(step=0)  # the same instant for every reading within a step
        self.store = Store(self.dir / "n.db", clock=self.clock)
        self.live: State = {}
        self.copies: dict[int, State] = {}
        self.next_num = 1
        self.undo_stack: list[Unit] = []
        self.redo_stack: list[Unit] = []

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def tick(self) -> float:
        self.clock.now += 1.0
        return self.clock.now

    def active_ids(self) -> list[str]:
        return sorted((i for i, f in self.live.items() if f.active), key=lambda i: int(i[2:]))

    def change(self, item_id: str, **fields: object) -> None:
        """Apply a change to the model the way the store should: new updated_at iff it differs."""
        old = self.live[item_id]
        new = replace(old, **fields)  # type: ignore[arg-type]
        if new != old:
            new = replace(new, updated_at=self.clock.now)
        self.live[item_id] = new

    def new_fact(self, block: str, text: str, category: str) -> Fact:
        f = Fact(
            f"m_{self.next_num}", block, text, category, None, self.clock.now, self.clock.now, True
        )
        self.next_num += 1
        self.live[f.id] = f
        return f

    # ------------------------------------------------------------ rules

    @initialize(n=st.integers(0, 4), block=st.sampled_from(BLOCKS))
    def seed(self, n: int, block: str) -> None:
        self.tick()
        for i in range(n):
            f = self.store.append(block, FactDraft(TEXTS[i % len(TEXTS)]))
            assert f == self.new_fact(block, TEXTS[i % len(TEXTS)], "context")

    @rule(
        block=st.sampled_from(BLOCKS),
        text=st.sampled_from(TEXTS),
        category=st.sampled_from(CATEGORIES),
    )
    def append(self, block: str, text: str, category: str) -> None:
        self.tick()
        got = self.store.append(block, FactDraft(text, category))
        assert got == self.new_fact(block, text, category)

    @precondition(lambda self: bool(self.live))
    @rule(
        data=st.data(),
        block=st.sampled_from(BLOCKS),
        drafts=st.lists(st.sampled_from(TEXTS), max_size=2),
    )
    def replace_block(self, data: st.DataObject, block: str, drafts: list[str]) -> None:
        self.tick()
        all_ids = sorted(self.live, key=lambda i: int(i[2:]))
        chosen = data.draw(st.lists(st.sampled_from(all_ids), unique=True, max_size=4))
        items: list[Fact | FactDraft] = []
        for item_id in chosen:
            text = data.draw(st.sampled_from([self.live[item_id].text, *TEXTS[:2]]))
            items.append(replace(self.live[item_id], text=text))
        items += [FactDraft(t) for t in drafts]
        out = self.store.replace(block, items)
        listed: set[str] = set()
        for it in items:
            if isinstance(it, Fact):
                self.change(it.id, block=block, text=it.text, category=it.category, active=True,
                            valid_until=None, superseded_by=None)
                listed.add(it.id)
            else:
                listed.add(self.new_fact(block, it.text, it.category).id)
        for item_id, f in list(self.live.items()):
            if f.block == block and f.active and item_id not in listed:
                self.change(item_id, active=False)
        assert out == [self.live[f.id] for f in out]

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data(), text=st.sampled_from(TEXTS))
    def update_text(self, data: st.DataObject, text: str) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(sorted(self.live)))
        got = self.store.update(item_id, text=text)
        self.change(item_id, text=text)
        assert got == self.live[item_id]

    @precondition(lambda self: bool(self.active_ids()))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(self.active_ids()))
        got = self.store.forget(item_id)
        self.change(item_id, active=False)
        assert got == self.live[item_id]

    @precondition(lambda self: bool(self.active_ids()))
    @rule(data=st.data(), to_block=st.sampled_from(BLOCKS[:3]))
    def promote(self, data: st.DataObject, to_block: str) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(self.active_ids()))
        self.store.apply(
            Mutation("promote", "promote", item_id, True, "stable", refs={"toBlock": to_block})
        )
        self.change(item_id, block=to_block)

    @precondition(lambda self: len(self.active_ids()) >= 2)
    @rule(data=st.data(), text=st.sampled_from(TEXTS), as_pass=st.booleans())
    def merge(self, data: st.DataObject, text: str, as_pass: bool) -> None:
        self.tick()
        into = data.draw(st.sampled_from(self.active_ids()))
        others = [i for i in self.active_ids() if i != into and not self.live[i].pinned]
        if not others:
            return
        group = [into, *data.draw(st.lists(st.sampled_from(others), min_size=1, max_size=2,
                                           unique=True))]
        m = Mutation(
            "merge", "merge", into, True, "same topic", refs={"fromIds": group, "mergedText": text}
        )
        if as_pass:
            refused = Mutation("merge", "merge", group[1], False, "", "spans two blocks")
            v = self.store.commit_pass([m, refused], label="pass:merge:after", sleep_id=None)
        else:
            self.store.apply(m)
        self.change(into, text=text)
        for other in group[1:]:
            self.change(other, active=False)
        if as_pass:
            self.take_copy(v.seq, v.active_count)
            self.push_unit(v.seq, set(group), base_seq=v.seq - 1)

    @precondition(lambda self: len(self.active_ids()) >= 2)
    @rule(data=st.data(), as_pass=st.booleans())
    def supersede(self, data: st.DataObject, as_pass: bool) -> None:
        self.tick()
        unpinned = [i for i in self.active_ids() if not self.live[i].pinned]
        if not unpinned:
            with pytest.raises(InvalidInput, match="pinned"):  # a pinned fact stays current
                a, b = self.active_ids()[:2]
                self.store.apply(Mutation("reconcile", "supersede", a, True, "a correction",
                                          refs={"supersededBy": b, "rule": "value"}))
            return
        old = data.draw(st.sampled_from(unpinned))
        new = data.draw(st.sampled_from([i for i in self.active_ids() if i != old]))
        m = Mutation("reconcile", "supersede", old, True, "a correction",
                     refs={"supersededBy": new, "rule": "value"})
        if as_pass:
            v = self.store.commit_pass([m], label="pass:reconcile:after", sleep_id=None)
        else:
            self.store.apply(m)
        self.change(old, active=False, valid_until=self.live[new].created_at, superseded_by=new)
        assert self.store.get(old) == self.live[old]
        if as_pass:
            self.take_copy(v.seq, v.active_count)
            self.push_unit(v.seq, {old}, base_seq=v.seq - 1)

    @rule(label=st.sampled_from(["pass:dedupe:before", "pass:forget:after", "manual"]))
    def snapshot(self, label: str) -> None:
        self.tick()
        v = self.store.snapshot(label)
        assert v.label == label
        self.take_copy(v.seq, v.active_count)

    @precondition(lambda self: bool(self.copies))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        self.tick()
        seq = data.draw(st.sampled_from(sorted(self.copies)))
        v = self.store.restore(seq)
        assert v.label == f"restore:s{seq:04d}"
        target = self.copies[seq]
        was = dict(self.live)
        for item_id in list(self.live):
            if item_id in target:
                self.live[item_id] = target[item_id]
            elif self.live[item_id].active:
                self.change(item_id, active=False, pinned=False)
        self.take_copy(v.seq, v.active_count)
        self.push_unit(v.seq, {i for i in self.live if self.live[i] != was[i]}, base_seq=v.seq - 1)

    # ------------------------------------------------------------ the person's hands

    def push_unit(self, seq: int, ids: set[str], *, base_seq: int | None = None,
                  base: dict[str, object] | None = None) -> None:
        if not ids:
            return
        if base is None:
            before = self.copies.get(base_seq or 0, {})
            base = {i: before.get(i, SKIP) for i in ids}
        self.undo_stack.append(Unit(seq, seq, base))
        self.redo_stack.clear()

    def hand_version(self, v: object, ids: set[str], base: dict[str, object]) -> None:
        from nocturne_desktop.core.types import Version

        assert isinstance(v, Version)
        self.take_copy(v.seq, v.active_count)
        self.push_unit(v.seq, ids, base=base)

    @precondition(lambda self: bool(self.active_ids()))
    @rule(data=st.data(), text=st.sampled_from([None, *TEXTS[:3]]),
          category=st.sampled_from([None, *CATEGORIES[:3]]), block=st.sampled_from([None, *BLOCKS]))
    def hand_edit(self, data: st.DataObject, text: str | None, category: str | None,
                  block: str | None) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(self.active_ids()))
        old = self.live[item_id]
        if (text in (None, old.text) and category in (None, old.category)
                and block in (None, old.block)):
            with pytest.raises(InvalidInput, match="nothing would change"):
                self.store.edit(item_id, text=text, category=category, block=block)
            return
        v = self.store.edit(item_id, text=text, category=category, block=block)
        self.change(item_id, text=text or old.text, category=category or old.category,
                    block=block or old.block)
        self.hand_version(v, {item_id}, {item_id: old})

    @precondition(lambda self: bool(self.active_ids()))
    @rule(data=st.data())
    def hand_pin(self, data: st.DataObject) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(self.active_ids()))
        old = self.live[item_id]
        v = self.store.pin(item_id, not old.pinned)
        self.change(item_id, pinned=not old.pinned)
        self.hand_version(v, {item_id}, {item_id: old})

    @precondition(lambda self: bool(self.active_ids()))
    @rule(data=st.data())
    def hand_forget(self, data: st.DataObject) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(self.active_ids()))
        old = self.live[item_id]
        if old.pinned:
            with pytest.raises(InvalidInput, match="pinned"):
                self.store.forget_now(item_id)
            return
        v = self.store.forget_now(item_id)
        self.change(item_id, active=False)
        self.hand_version(v, {item_id}, {item_id: old})

    @precondition(lambda self: any(not f.active for f in self.live.values()))
    @rule(data=st.data())
    def hand_bring_back(self, data: st.DataObject) -> None:
        self.tick()
        item_id = data.draw(st.sampled_from(sorted(i for i, f in self.live.items() if not f.active)))
        old = self.live[item_id]
        v = self.store.bring_back(item_id)
        self.change(item_id, active=True, valid_until=None, superseded_by=None)  # current again
        self.hand_version(v, {item_id}, {item_id: old})

    @rule(block=st.sampled_from(BLOCKS), text=st.sampled_from(STATEMENTS),
          category=st.sampled_from(CATEGORIES))
    def hand_add(self, block: str, text: str, category: str) -> None:
        self.tick()
        got, v = self.store.add_fact(block, text, category)
        assert got == self.new_fact(block, text, category)
        self.hand_version(v, {got.id}, {got.id: None})

    @rule(texts=st.lists(st.sampled_from(range(len(IMPORTED))), min_size=1, max_size=4,
                         unique=True))
    def hand_import_into_scratch(self, texts: list[int]) -> None:
        """Facts of an export imported into scratch: one version of adds by you, undoable whole."""
        self.tick()
        done = exchange.import_into_scratch(self.store, imported_export([IMPORTED[i] for i in texts]),
                                            name="other.json")
        assert len(done.added) + len(done.skipped) == len(texts)
        if done.version is None:
            assert not done.added
            return
        ids = set()
        for got in done.added:
            assert got == self.new_fact("scratch", got.text, got.category)
            ids.add(got.id)
        self.hand_version(done.version, ids, dict.fromkeys(ids))

    def set_to(self, item_id: str, want: object) -> None:
        if want is SKIP:
            return
        if want is None:
            self.change(item_id, active=False, pinned=False)
            return
        assert isinstance(want, Fact)
        old = self.live[item_id]
        self.live[item_id] = replace(old, block=want.block, text=want.text, category=want.category,
                                     active=want.active, pinned=want.pinned,
                                     valid_until=want.valid_until,
                                     superseded_by=want.superseded_by,
                                     updated_at=want.updated_at)

    @rule()
    def undo(self) -> None:
        self.tick()
        if not self.undo_stack:
            assert self.store.undo_step() is None
            with pytest.raises(InvalidInput, match="nothing to undo"):
                self.store.undo()
            return
        unit = self.undo_stack[-1]
        step = self.store.undo_step()
        assert step is not None and (step.first, step.last) == (unit.first, unit.last)
        assert set(step.ids) == set(unit.base)
        v = self.store.undo()
        for item_id, want in unit.base.items():
            self.set_to(item_id, want)
        self.take_copy(v.seq, v.active_count)
        self.redo_stack.append(self.undo_stack.pop())

    @rule()
    def redo(self) -> None:
        self.tick()
        if not self.redo_stack:
            assert self.store.redo_step() is None
            with pytest.raises(InvalidInput, match="nothing to redo"):
                self.store.redo()
            return
        unit = self.redo_stack[-1]
        step = self.store.redo_step()
        assert step is not None and (step.first, step.last) == (unit.first, unit.last)
        v = self.store.redo()
        after = self.copies[unit.last]
        for item_id in unit.base:
            if item_id in after:
                self.set_to(item_id, after[item_id])
        self.take_copy(v.seq, v.active_count)
        self.undo_stack.append(self.redo_stack.pop())

    @precondition(lambda self: bool(self.copies))
    @rule()
    def export_and_import(self) -> None:
        """An export imported into a fresh store holds every version exactly (S-EXP-1)."""

        doc = exchange.parse_export(exchange.export_json(self.store, now=0.0).encode())
        with Store(Path(tempfile.mkdtemp(dir=self.dir)) / "imported.db") as other:
            exchange.import_export(other, doc)
            for seq, copy in self.copies.items():
                assert other.state_at(seq) == sorted(copy.values(), key=lambda f: int(f.id[2:]))
            assert other.all_facts() == self.store.all_facts()
            assert other.mutations() == self.store.mutations()
            assert other.undo_step() == self.store.undo_step()
            assert other.redo_step() == self.store.redo_step()

    def take_copy(self, seq: int, active_count: int) -> None:
        assert seq == len(self.copies) + 1
        self.copies[seq] = dict(self.live)
        assert active_count == sum(f.active for f in self.live.values())

    @precondition(lambda self: len(self.copies) >= 2)
    @rule(data=st.data())
    def random_pair_diff(self, data: st.DataObject) -> None:
        seqs = sorted(self.copies)
        a = data.draw(st.sampled_from(seqs))
        b = data.draw(st.sampled_from(seqs))
        self.check_diff(a, b)

    # ------------------------------------------------------------ invariants

    def check_diff(self, a: int, b: int) -> None:
        d = self.store.diff(a, b)
        assert (d.a, d.b) == (a, b)
        assert classes(d) == brute_diff(self.copies[a], self.copies[b]), (a, b)
        for e in (*d.kept, *d.changed, *d.forgotten, *d.added, *d.superseded):
            assert e.before == self.copies[a].get(e.item_id)
            assert e.after == self.copies[b].get(e.item_id)

    @invariant()
    def live_state_matches(self) -> None:
        facts = self.store.all_facts()
        assert facts == sorted(self.live.values(), key=lambda f: int(f.id[2:]))
        assert [f.id for f in facts] == [f"m_{i}" for i in range(1, self.next_num)]
        assert self.store.active_count() == len(self.active_ids())

    @invariant()
    def every_version_is_exact(self) -> None:
        for seq, copy in self.copies.items():
            expected = sorted(copy.values(), key=lambda f: int(f.id[2:]))
            assert self.store.state_at(seq) == expected, seq

    @invariant()
    def diffs_match_brute_force(self) -> None:
        if not self.copies:
            return
        seqs = sorted(self.copies)
        latest = seqs[-1]
        for s in seqs:
            self.check_diff(s, latest)
            self.check_diff(latest, s)
        for s, t in itertools.pairwise(seqs):
            self.check_diff(s, t)


VersionedStore.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestVersionedStore = VersionedStore.TestCase
