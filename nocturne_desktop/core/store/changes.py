"""Changes made as versions: accepted mutations, a pass, the person's hands, undo and redo.

What a mutation does to the facts is defined once, in :mod:`nocturne_desktop.core.mutations`
(``applying.apply``, pure and validated in full first); here it is written, audited and, for a
hand change, snapshotted as a version of its own. Undo and redo read the timeline of versions
and their audit rows.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from nocturne_desktop.core import applying, mutations
from nocturne_desktop.core.errors import (
    InvalidInput,
)
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.store.base import (
    _ITEM_ID,
    _check_block,
    _check_category,
    _check_text,
    _fact,
    _Live,
    _num,
    _text_of,
)
from nocturne_desktop.core.store.facts import _Writes
from nocturne_desktop.core.store.versions import VersionStore
from nocturne_desktop.core.types import (
    Fact,
    FactDraft,
    Mutation,
    MutationRow,
    Version,
)

APPLY_KINDS: tuple[str, ...] = ("drop", "merge", "promote", "forget", "supersede")
"""Mutation kinds :meth:`Store.apply` knows how to apply."""


def _validity_of(value: Mapping[str, Any]) -> dict[str, Any]:
    """``_put``'s validity arguments from a hand change's recorded value before it (a value
    recorded without them leaves the fact's interval to ``_put``)."""
    out: dict[str, Any] = {}
    if "validUntil" in value:
        until = value["validUntil"]
        out["valid_until"] = float(until) if isinstance(until, int | float) else None
    if "supersededBy" in value:
        by = value["supersededBy"]
        out["superseded_by"] = _num(by) if isinstance(by, str) else None
    return out


class UndoStep(NamedTuple):
    """A change :meth:`Store.undo` or :meth:`Store.redo` would act on: versions ``first`` ..
    ``last`` (a sleep's versions, or one), ``name`` in words (``sleep 3``, ``edit m_4``), and
    the facts it wrote."""

    first: int
    last: int
    name: str
    sleep_id: int | None
    ids: tuple[str, ...]


class _Step(NamedTuple):
    first: int
    last: int
    name: str
    sleep_id: int | None
    rows: tuple[MutationRow, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for r in self.rows:
            change = _typed(r.mutation)
            if change is None:
                continue
            if isinstance(change, mutations.Restore | mutations.Undo):
                named: Iterable[str] = change.changed_ids
            else:
                named = (change.item_id, *applying.touched(change))
            out.update((i, None) for i in named if _ITEM_ID.fullmatch(i))
        return tuple(sorted(out, key=_num))

    def public(self) -> UndoStep:
        return UndoStep(self.first, self.last, self.name, self.sleep_id, self.ids)


def _prefetch(changes: Iterable[mutations.Change | Mutation]) -> list[int]:
    """The facts ``changes`` may read (to read them in one go; one missed is read alone)."""
    nums: list[int] = []
    for item in changes:
        if isinstance(item, Mutation):
            refs = item.refs if isinstance(item.refs, dict) else {}
            named: list[object] = [item.item_id, refs.get("supersededBy")]
            if isinstance(refs.get("fromIds"), list):
                named += refs["fromIds"]
        elif isinstance(item, mutations.Change):
            named = [item.item_id, *applying.touched(item), getattr(item, "by", None)]
        else:
            continue
        nums += (_num(i) for i in named if isinstance(i, str) and _ITEM_ID.fullmatch(i))
    return nums


def _typed(m: Mutation) -> mutations.Change | None:
    try:
        return mutations.from_row(m)
    except InvalidInput:
        return None


def _before_of(m: Mutation, item_id: str) -> dict[str, Any] | None:
    """The value a hand change's row recorded for ``item_id`` just before it (else None)."""
    before = m.refs.get("before") if isinstance(m.refs, dict) else None
    return before if m.item_id == item_id and isinstance(before, dict) else None


class ChangeStore(VersionStore):
    """Applying mutations and passes, hand edits, undo and redo."""

    # ------------------------------------------------------------------ the person's hands

    def _hand(self, change: mutations.Change, label: str) -> Version:
        """Apply one hand change (validated in full by ``applying.apply`` first), log its audit
        row and snapshot it as a version of its own. Call inside a write transaction."""
        self._write_all([change], door=Door.HAND_EDIT)
        self._record([mutations.to_row(change)], seq=self._pending_seq(), sleep_id=None)
        return self._snapshot(label, sleep_id=None)

    def edit(
        self,
        item_id: str,
        *,
        text: str | None = None,
        category: str | None = None,
        block: str | None = None,
    ) -> Version:
        """The person changes an active fact's text, category and/or block: one audited ``edit``
        decided by ``you``, a version of its own (labelled ``edit:m_3``). Bad input (empty or
        whitespace text, over :data:`MAX_TEXT_CHARS`, NUL, an unknown category or block, nothing
        that changes) raises :class:`InvalidInput` and writes nothing; a new text passes the
        admission check of the hand edit door (a secret or a fragment raises
        :class:`~nocturne_desktop.core.errors.FactRefused`)."""
        if text is not None:
            _check_text(text)
        if category is not None:
            _check_category(category)
        if block is not None:
            _check_block(block)
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what="edit"))
            change = mutations.Edit(
                target=fact.id, reason="edited by you", before=mutations.fact_value(fact),
                text=None if text in (None, fact.text) else text,
                category=None if category in (None, fact.category) else category,
                block=None if block in (None, fact.block) else block,
            )
            if change.text is None and change.category is None and change.block is None:
                raise InvalidInput(f"edit {fact.id}: nothing would change")
            return self._hand(change, f"edit:{fact.id}")

    def pin(self, item_id: str, pinned: bool = True) -> Version:
        """Pin an active fact (no rule or model may forget it) or unpin it: one audited ``pin``
        decided by ``you``, a version of its own (``pin:m_3`` / ``unpin:m_3``)."""
        if not isinstance(pinned, bool):
            raise InvalidInput(f"pinned must be True or False, not {pinned!r}")
        what = "pin" if pinned else "unpin"
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what=what))
            if fact.pinned == pinned:
                raise InvalidInput(f"{what} {fact.id}: it is already {'pinned' if pinned else 'not pinned'}")
            change = mutations.Pin(target=fact.id, pinned=pinned, before=mutations.fact_value(fact),
                                   reason=f"{what}ned by you")
            return self._hand(change, f"{what}:{fact.id}")

    def forget_now(self, item_id: str) -> Version:
        """The person forgets an active fact now, without a sleep: an audited ``forget`` decided
        by ``you`` (pass ``hand``), a version of its own. A pinned fact is refused: unpin it
        first."""
        with self.transaction():
            fact = _fact(self._require(item_id, active=True, what="forget"))
            change = mutations.Forget(
                pass_name=mutations.HAND_PASS, decided_by=mutations.DecidedBy.YOU, target=fact.id,
                reason="forgotten by you", text=fact.text,
                extra={"before": mutations.fact_value(fact)},
            )
            return self._hand(change, f"forget:{fact.id}")

    def bring_back(self, item_id: str) -> Version:
        """The person brings one forgotten fact back, as it last was: an audited ``bring-back``
        decided by ``you``, a version of its own."""
        with self.transaction():
            fact = _fact(self._require(item_id, what="bring back"))
            if fact.active:
                raise InvalidInput(f"bring back {fact.id}: it is not forgotten")
            change = mutations.BringBack(target=fact.id, reason="brought back by you",
                                         before=mutations.fact_value(fact))
            return self._hand(change, f"bring-back:{fact.id}")

    def add_fact(self, block: str, text: str, category: str = "context", *,
                 door: Door = Door.HAND_ADD) -> tuple[Fact, Version]:
        """The person writes a new fact: an audited ``add`` decided by ``you`` (its source is the
        edit, not a turn), a version of its own. Bad input raises :class:`InvalidInput`; the
        text passes the admission check of ``door`` (the window's *Add fact*, or
        :attr:`Door.CHAT` for "remember that …")."""
        _check_block(block)
        _check_text(text)
        _check_category(category)
        with self.transaction():
            live = self._insert(block, FactDraft(text, category), door=door)
            fact = _fact(live)
            row = mutations.Add(target=fact.id, text=text, block=block, category=category,
                                reason="written by you")
            self._record([mutations.to_row(row)], seq=self._pending_seq(), sleep_id=None)
            return fact, self._snapshot(f"add:{fact.id}", sleep_id=None)

    def commit_changes(
        self, changes: Sequence[mutations.Change], *, label: str,
        refused: Sequence[mutations.Refusal] = (), door: Door = Door.SYNC,
    ) -> tuple[Version | None, list[str]]:
        """Several hand-kind changes from one source (a pull of a linked agent's blocks) as one
        version: edits, forgettings and added facts in order, each with its audit row, and the
        ``refused`` rows beside them. An :class:`~mutations.Add` whose ``target`` is empty makes a
        new fact (its row names the id it got). Returns the version (None when nothing was
        accepted: the refusals are logged without one) and the id each change wrote. Every text
        passes the admission check of ``door``. One transaction: a bad change raises and
        writes nothing."""
        with self.transaction():
            seq = self._pending_seq() if changes else None
            rows: list[Mutation] = []
            ids: list[str] = []
            for change in changes:
                if isinstance(change, mutations.Add) and not change.target:
                    _check_block(change.block)
                    _check_category(change.category)
                    fact = _fact(self._insert(change.block, FactDraft(change.text, change.category),
                                              door=door))
                    change = dataclasses.replace(change, target=fact.id, text=fact.text)
                else:
                    self._write_all([change], door=door)
                rows.append(mutations.to_row(change))
                ids.append(change.item_id)
            rows += (mutations.to_row(r) for r in refused)
            self._record(rows, seq=seq, sleep_id=None)
            return (self._snapshot(label, sleep_id=None) if changes else None), ids

    def _steps(self, c: sqlite3.Connection) -> tuple[list[_Step], list[_Step]]:
        """The undo and redo stacks, from the timeline: every change (a sleep's versions, or one
        hand edit, restore, undo or redo) in order; a change pushes on the undo stack and clears
        redo, an undo moves its change to the redo stack, a redo moves it back."""
        by_seq: dict[int, list[MutationRow]] = {}
        for row in self._mutation_rows(c, "accepted = 1 AND seq IS NOT NULL", ()):
            assert row.seq is not None
            by_seq.setdefault(row.seq, []).append(row)
        units: list[_Step] = []
        for seq, label, sleep_id in c.execute(
                "SELECT seq, label, sleep_id FROM snapshots ORDER BY seq").fetchall():
            rows = tuple(by_seq.get(seq, ()))
            if sleep_id is not None and units and units[-1].sleep_id == sleep_id:
                units[-1] = units[-1]._replace(last=seq, rows=units[-1].rows + rows)
            else:
                name = f"sleep {sleep_id}" if sleep_id is not None else label.replace(":", " ", 1)
                units.append(_Step(seq, seq, name, sleep_id, rows))
        undo: list[_Step] = []
        redo: list[_Step] = []
        for unit in units:
            marks = [ch for ch in (_typed(r.mutation) for r in unit.rows)
                     if isinstance(ch, mutations.Undo)]
            if marks:
                mark = marks[0]
                src, dst = (redo, undo) if isinstance(mark, mutations.Redo) else (undo, redo)
                if src and (src[-1].first, src[-1].last) == (mark.first, mark.last):
                    dst.append(src.pop())
                continue
            if unit.ids:
                undo.append(unit)
                redo.clear()
        return undo, redo

    def undo_step(self) -> UndoStep | None:
        """What :meth:`undo` would undo (None: nothing)."""
        with self._read() as c:
            undo, _ = self._steps(c)
        return undo[-1].public() if undo else None

    def redo_step(self) -> UndoStep | None:
        """What :meth:`redo` would make again (None: nothing)."""
        with self._read() as c:
            _, redo = self._steps(c)
        return redo[-1].public() if redo else None

    def undo(self) -> Version:
        """Undo the last change, whoever made it (a hand edit, a sleep, a restore): every fact it
        wrote goes back to its value before it, as a new version (``undo:sleep 3``); facts it did
        not write (new ones from chat) stay. :class:`InvalidInput` if there is nothing to undo."""
        with self.transaction():
            undo, _ = self._steps(self._conn)
            if not undo:
                raise InvalidInput("nothing to undo")
            step = undo[-1]
            self._refuse_running(step, "undo")
            targets: dict[int, Fact | dict[str, Any] | None] = {}
            base = step.first if step.sleep_id is not None else step.first - 1
            for item_id in step.ids:
                num = _num(item_id)
                before = next((b for b in (_before_of(r.mutation, item_id) for r in step.rows)
                               if b is not None), None)
                if before is not None and step.sleep_id is None:
                    targets[num] = before
                    continue
                targets[num] = self._fact_at(self._conn, num, base) if base > 0 else None
                if targets[num] is None and not any(
                        r.mutation.kind == mutations.Kind.ADD and r.mutation.item_id == item_id
                        for r in step.rows):
                    del targets[num]  # its value before is not recorded anywhere: leave it
            return self._rewind(step, targets, mutations.Undo)

    def redo(self) -> Version:
        """Make the last undone change again (each fact it wrote set to its value right after
        it), as a new version (``redo:sleep 3``). :class:`InvalidInput` if there is nothing."""
        with self.transaction():
            _, redo = self._steps(self._conn)
            if not redo:
                raise InvalidInput("nothing to redo")
            step = redo[-1]
            self._refuse_running(step, "redo")
            targets: dict[int, Fact | dict[str, Any] | None] = {}
            for item_id in step.ids:
                num = _num(item_id)
                value = self._fact_at(self._conn, num, step.last)
                if value is not None:
                    targets[num] = value
            return self._rewind(step, targets, mutations.Redo)

    def _refuse_running(self, step: _Step, verb: str) -> None:
        if step.sleep_id is None:
            return
        row = self._conn.execute("SELECT status FROM sleeps WHERE id = ?", (step.sleep_id,)).fetchone()
        if row is not None and row[0] == "running":
            raise InvalidInput(f"sleep {step.sleep_id} is still running; {verb} it when it has ended")

    def _rewind(
        self, step: _Step, targets: dict[int, Fact | dict[str, Any] | None],
        kind: type[mutations.Undo],
    ) -> Version:
        changed: list[str] = []
        for num in sorted(targets):
            live = self._live(num)
            if live is None:
                continue
            want = targets[num]
            if want is None:  # created by the change: it did not exist before
                new = self._put(live, active=False, pinned=False)
            elif isinstance(want, Fact):
                new = self._put(live, block=want.block, text=want.text, category=want.category,
                                active=want.active, pinned=want.pinned, updated_at=want.updated_at,
                                valid_until=want.valid_until,
                                superseded_by=None if want.superseded_by is None
                                else _num(want.superseded_by))
            else:
                upd = want.get("updatedAt")
                new = self._put(
                    live, block=_check_block(want.get("block", live.block)),
                    text=_check_text(want.get("text", live.text)),
                    category=_check_category(want.get("category", live.category)),
                    active=bool(want.get("active", live.active)),
                    pinned=bool(want.get("pinned", live.pinned)),
                    updated_at=float(upd) if isinstance(upd, int | float) else None,
                    door=Door.RESTORE, **_validity_of(want))
            if new != live:
                changed.append(f"m_{num}")
        verb = "undo" if kind is mutations.Undo else "redo"
        row = kind(first=step.first, last=step.last, undone=step.name, changed_ids=tuple(changed),
                   reason=f"{verb} {step.name}")
        self._record([mutations.to_row(row)], seq=self._pending_seq(), sleep_id=None)
        return self._snapshot(f"{verb}:{step.name}", sleep_id=None)

    def apply(self, mutation: Mutation) -> None:
        """Apply one accepted mutation (drop, merge, promote, forget) to the live store."""
        with self.transaction():
            self._apply(mutation)

    def _apply(self, m: Mutation) -> None:
        """Apply one accepted mutation row (checked by :meth:`_change_of`)."""
        self._write_all([m])

    @staticmethod
    def _change_of(m: Mutation) -> mutations.Change:
        """The change an accepted row of a kind :meth:`apply` knows says (else InvalidInput)."""
        if not isinstance(m, Mutation):
            raise InvalidInput(f"expected a Mutation, not {type(m).__name__}")
        if not m.accepted:
            raise InvalidInput(f"{m.kind} {m.item_id}: a refused mutation cannot be applied")
        if m.kind not in APPLY_KINDS:
            raise InvalidInput(
                f"unknown mutation kind {m.kind!r}; apply knows {', '.join(APPLY_KINDS)}"
            )
        return mutations.from_row(m)

    def _write_all(self, changes: Sequence[mutations.Change | Mutation], *,
                   door: Door | None = None) -> None:
        """Write, in order, what ``applying.apply`` makes of the facts each change names -
        every field, the validity interval included - for a sleep's mutations (rows, checked
        and parsed one by one as they come) and a hand change alike.

        Each change sees the facts as the changes before it left them. A bad change raises
        before anything is written (the caller's transaction rolls back the rest): a bad
        source leaves the target as it was. The facts named are read in a few chunked
        queries and written with one statement per kind of row (:meth:`_flush`); the rows
        are those one write at a time would leave. (A hand change once left the interval to
        ``_put``'s keep-or-clear rule; ``apply`` computes the same values for every hand kind
        - kept by edit, pin and forget, cleared by bring back - which
        ``test_store_hand_validity`` pins.) A text a change writes passes the admission check
        of ``door`` (default: a merge's door for a merge, the store's for the rest).
        """
        table = self._lives(_prefetch(changes))
        writes = _Writes()

        for item in changes:
            change = item if isinstance(item, mutations.Change) else self._change_of(item)
            lives: dict[str, _Live] = {}

            def get(item_id: str, lives: dict[str, _Live] = lives) -> Fact | None:
                num = _num(item_id)
                live = writes.last.get(num) or table.get(num) or self._live(num)
                if live is None:
                    return None
                lives[item_id] = live
                return _fact(live)

            via = door or (Door.MERGE if isinstance(change, mutations.Merge) else Door.STORE)
            for new in applying.apply(change, get, check_text=_text_of):
                self._stage(writes, lives[new.id], block=new.block, text=new.text,
                            category=new.category, active=new.active, pinned=new.pinned,
                            valid_until=new.valid_until,
                            superseded_by=None if new.superseded_by is None
                            else _num(new.superseded_by), door=via)
        self._flush(writes)

    def commit_pass(
        self, mutations: Sequence[Mutation], *, label: str, sleep_id: int | None
    ) -> Version:
        """One transaction: apply accepted mutations in order, log all, snapshot ``label``."""
        with self.transaction():
            seq = self._pending_seq()
            self._write_all([m for m in mutations if isinstance(m, Mutation) and m.accepted])
            self._record(mutations, seq=seq, sleep_id=sleep_id)
            return self._snapshot(label, sleep_id=sleep_id)
