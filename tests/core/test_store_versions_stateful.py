"""Versions and diffs proven against brute force.

A hypothesis state machine drives a real store (a temp file) with random appends, replaces,
text edits, forgettings, promotions, merges (through ``apply`` and ``commit_pass``), snapshots
and restores to random earlier versions. Beside it runs a plain-Python model that keeps a full
copy of the state at every snapshot - the article's "copy the world" scheme. After every step:

* every earlier version materialised by the store equals the copy taken at that moment;
* ``diff`` classifies ids (kept / changed / forgotten / added) exactly as a brute-force diff of
  the two copies, for pairs next to each other, against the latest version, and in reverse;
* the live state equals the model, and ids are ``m_1 .. m_n`` with none reused.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Diff, Fact, FactDraft, Mutation

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

State = dict[str, Fact]


class StepClock:
    """Returns the same instant for every reading within a step; the test advances it."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def brute_diff(a: State, b: State) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"kept": set(), "changed": set(), "forgotten": set(), "added": set(),
                                "superseded": set()}
    for item_id in set(a) | set(b):
        x, y = a.get(item_id), b.get(item_id)
        x_on = x is not None and x.active
        y_on = y is not None and y.active
        if x_on and y_on:
            assert x is not None and y is not None
            same = x.text == y.text and x.block == y.block
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


class VersionedStore(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="nocturne-stateful-"))
        self.clock = StepClock()
        self.store = Store(self.dir / "n.db", clock=self.clock)
        self.live: State = {}
        self.copies: dict[int, State] = {}
        self.next_num = 1

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
        group = data.draw(
            st.lists(st.sampled_from(self.active_ids()), min_size=2, max_size=3, unique=True)
        )
        into = group[0]
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

    @precondition(lambda self: len(self.active_ids()) >= 2)
    @rule(data=st.data(), as_pass=st.booleans())
    def supersede(self, data: st.DataObject, as_pass: bool) -> None:
        self.tick()
        old, new = data.draw(st.lists(st.sampled_from(self.active_ids()), min_size=2, max_size=2,
                                      unique=True))
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
        for item_id in list(self.live):
            if item_id in target:
                self.live[item_id] = target[item_id]
            else:
                self.change(item_id, active=False)
        self.take_copy(v.seq, v.active_count)

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
