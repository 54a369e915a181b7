"""The review's plan as a model (Qt): one flat list, a header row per pass, a row per change.

A plan over 100,000 facts holds ~100,000 changes, so nothing here is per change up front:
:class:`PlanIndex` is what a tick needs, as arrays (which changes can be ticked, each pass's
range, the direct dependencies both ways), built in slices, and a tick's closure walks only what
it reaches. :class:`PlanModel` is a flat table (a ``QTableView`` with fixed row heights asks
for the rows on screen only); the tick state is one ``bytearray`` and a row's texts are made
when the view first asks (``docs/benchmarks.md``, "Sleep with review at 100k facts").
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QFont, QPalette

from nocturne_desktop.core.mutations import Kind
from nocturne_desktop.core.sleep.review import ApplyResult, Plan, PlanItem
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.models.planpages import PlanPages
from nocturne_desktop.ui.models.roles import Index
from nocturne_desktop.ui.models.text import decided_text, one_line, plain_tooltip

PASS_TITLES = {"dedupe": "Dedupe", "merge": "Merge", "reconcile": "Reconcile",
               "promote": "Promote", "forget": "Forget"}
COLUMNS = ("Change", "Verdict", "Decided by", "Before → after", "Why")
SLICE = 5000
"""Changes indexed per turn of the event loop (a few ms each at 100k)."""


def _text(facts: Iterable[Any], item_id: str) -> str:
    return next((f.text for f in facts if f.id == item_id), item_id)


def before_after(it: PlanItem) -> str:
    """The change in one line: what it reads → what it makes of it."""
    m = it.mutation
    refs = m.refs if isinstance(m.refs, dict) else {}
    first = it.before[0].text if it.before else ""
    if not m.accepted:
        named = " + ".join(one_line(f.text, 60) for f in it.before) or "—"
        return f"{named} → unchanged (refused)"
    if m.kind == Kind.DROP:
        return f"{one_line(first, 80)} → dropped (a duplicate of {refs.get('duplicateOf', '?')})"
    if m.kind == Kind.MERGE:
        sources = " + ".join(one_line(f.text, 50) for f in it.before)
        return f"{sources} → {one_line(str(refs.get('mergedText', '')), 120)}"
    if m.kind == Kind.PROMOTE:
        return f"{one_line(first, 80)}: {refs.get('fromBlock', '?')} → {refs.get('toBlock', '?')}"
    if m.kind == Kind.SUPERSEDE:
        by = str(refs.get("supersededBy", "?"))
        return f"{one_line(first, 70)} → superseded by {by}: {one_line(_text(it.before, by), 70)}"
    if m.kind == Kind.FORGET:
        return f"{one_line(first, 80)} → forgotten ({m.policy or 'retention'})"
    return one_line(first, 80)


def short_verdict(it: PlanItem, ticked: bool = True) -> str:
    """The verdict column: the gate's verdict, or that the person left it unticked (said in
    words too: an empty tick box is faint in some dark palettes)."""
    m = it.mutation
    if not m.accepted:
        return "refused"
    if not ticked:
        return "✗ unticked"
    return "⚙ enforced" if m.enforced else "accepted"


def status_of(it: PlanItem) -> str:
    m = it.mutation
    if not m.accepted:
        return "rejected"
    return {Kind.DROP: "forgotten", Kind.FORGET: "forgotten", Kind.SUPERSEDE: "superseded",
            Kind.MERGE: "changed", Kind.PROMOTE: "changed"}.get(Kind(m.kind), "changed")


class PlanIndex:
    """What ticking needs of a plan, as arrays (see the module docstring). Change numbers
    are the plan's (1-based)."""

    def __init__(self, plan: Plan | PlanPages) -> None:
        self.plan = plan
        self.size = len(plan.items)
        self.tickable = bytearray(self.size + 1)
        """``tickable[n]`` is 1 for a change the gate accepted ([0] is unused)."""
        self.groups: list[tuple[str, int, int]] = []
        """Per pass, in plan order: (pass, first change, one past the last)."""
        self.steps = 0
        """Changes and edges walked by closures so far (tests count them)."""
        self.ready = False
        self.req: tuple[Sequence[int], Sequence[int]] = ((0,), ())
        """What each change relies on directly, as compressed rows (offsets, values)."""
        self.dep: tuple[Sequence[int], Sequence[int]] = ((0,), ())
        """What relies on each change directly, as compressed rows."""
        if isinstance(plan, PlanPages):  # indexed where it was made
            self.tickable = bytearray(plan.mask)
            self.groups = list(plan.groups)
            self.req, self.dep = plan.edges(requires=True), plan.edges(requires=False)
            self.ready = True

    def build(self) -> Iterator[float]:
        """Index the plan, :data:`SLICE` changes at a time; yields the fraction done (a plan
        in pages comes indexed)."""
        if self.ready:
            return
        items = self.plan.items
        tick = self.tickable
        dependents: list[list[int]] = [[] for _ in range(self.size)]
        current: str | None = None
        start = 1
        for lo in range(0, self.size, SLICE):
            chunk = items[lo:lo + SLICE]
            tick[lo + 1:lo + 1 + len(chunk)] = bytes(it.mutation.accepted for it in chunk)
            for it in chunk:
                if it.pass_name != current:
                    if current is not None:
                        self.groups.append((current, start, it.n))
                    current, start = it.pass_name, it.n
                for k in it.depends_on:
                    dependents[k - 1].append(it.n)
            yield min(1.0, (lo + len(chunk)) / max(1, self.size))
        if current is not None:
            self.groups.append((current, start, self.size + 1))
        self.req = compressed([it.depends_on for it in items])
        self.dep = compressed(dependents)
        self.ready = True

    def build_now(self) -> PlanIndex:
        for _ in self.build():
            pass
        return self

    def group_of(self, n: int) -> int:
        starts = [g[1] for g in self.groups]
        return bisect.bisect_right(starts, n) - 1

    def _walk(self, todo: list[int], seen: set[int], on: bool) -> None:
        """Add to ``seen`` every change reached from ``todo``, each change and edge once."""
        off, to = self.req if on else self.dep
        while todo:
            k = todo.pop()
            lo, hi = off[k - 1], off[k]
            self.steps += 1 + (hi - lo)
            for j in to[lo:hi]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)

    def closure(self, seeds: Iterable[int], on: bool) -> set[int]:
        """Every change the seeds reach: what they rely on (``on``: ticking) or what relies on
        them (unticking), directly or through another; the seeds themselves not included.
        Each change and edge is walked once."""
        todo = list(seeds)
        start = set(todo)
        seen = set(start)
        self._walk(todo, seen, on)
        return seen - start

    def closure_of_range(self, a: int, b: int, on: bool) -> set[int]:
        """What every change numbered ``a`` … ``b - 1`` (a pass) reaches, outside that range:
        their direct edges are one slice of the rows (no walk over the range itself), then
        only the changes reached that have edges of their own are walked."""
        off, to = self.req if on else self.dep
        first = set(to[off[a - 1]:off[b - 1]])
        self.steps += (b - a) + len(first)
        first.difference_update(range(a, b))
        seen = set(first)
        self._walk([k for k in first if off[k] > off[k - 1]], seen, on)
        seen.difference_update(range(a, b))
        return seen


def compressed(lists: Sequence[Sequence[int]]) -> tuple[Sequence[int], Sequence[int]]:
    """Lists of ints as compressed rows: offsets (one more than the lists) and the values."""
    off = array("i", [0])
    to = array("i")
    for xs in lists:
        to.extend(xs)
        off.append(len(to))
    return off, to


class PlanModel(QAbstractTableModel):
    """The plan as rows: per pass a header row, then its changes (see the module docstring).

    :attr:`ticked` is the tick state (``ticked[n]``); :meth:`set_ticked` and
    :meth:`set_group_ticked` change it with the dependencies followed and return what followed.
    Rows asked for by the view are made on demand; :attr:`rows_made` counts the change rows
    whose texts were made (tests read it)."""

    toggled = Signal(object)
    """(group, change or 0 for the group's box, on, the changes that followed, how many of the
    group's changes turned) after a click on a tick box."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.index_: PlanIndex | None = None
        self.ticked = bytearray()
        self.outcome: ApplyResult | None = None
        self._applied: frozenset[int] = frozenset()
        self._unticked: frozenset[int] = frozenset()
        self._starts: list[int] = []
        """Per group, its header's row."""
        self._total = 0
        self._collapsed: set[int] = set()
        """Groups shown as their header row alone."""
        self._arrows: set[int] = set()
        """Groups whose header shows them folded (follows :attr:`_collapsed` once the rows
        are removed or inserted: a header's data does not change inside the move)."""
        self._texts: dict[int, tuple[str, ...]] = {}
        self.rows_made = 0
        self._bold = QFont()
        self._bold.setBold(True)
        self._brushes: dict[str, QBrush] = {}
        self._muted = QBrush(palette.muted())
        self._normal = QBrush(palette.current().color(QPalette.ColorRole.Text))

    # -- feeding ----------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan | PlanPages | None:
        return self.index_.plan if self.index_ is not None else None

    def set_index(self, index: PlanIndex | None) -> None:
        """Show the plan of ``index`` (built), every tickable change ticked; None: nothing."""
        self.beginResetModel()
        self.index_ = index
        self.outcome = None
        self._applied = self._unticked = frozenset()
        self._texts.clear()
        self._collapsed.clear()
        self._arrows.clear()
        self.ticked = bytearray(index.tickable) if index is not None else bytearray()
        self._layout()
        self._muted = QBrush(palette.muted())
        self._normal = QBrush(palette.current().color(QPalette.ColorRole.Text))
        self._brushes.clear()
        self.endResetModel()

    def set_outcome(self, result: ApplyResult) -> None:
        """The apply's result: each row says what became of it; nothing is tickable any more."""
        self.outcome = result
        self._applied = frozenset(result.applied)
        self._unticked = frozenset(result.unticked)
        self._texts.clear()
        self._changed_all()

    def _layout(self) -> None:
        self._starts = []
        row = 0
        if self.index_ is not None:
            for g, (_pass, a, b) in enumerate(self.index_.groups):
                self._starts.append(row)
                row += 1 + (0 if g in self._collapsed else b - a)
        self._total = row

    def collapsed(self, g: int) -> bool:
        return g in self._collapsed

    def set_collapsed(self, g: int, on: bool) -> None:
        """Show group ``g`` as its header row alone (``on``) or with its changes."""
        if self.index_ is None or (g in self._collapsed) == on:
            return
        _p, a, b = self.index_.groups[g]
        first = self._starts[g] + 1
        if b > a:
            (self.beginRemoveRows if on else self.beginInsertRows)(QModelIndex(), first,
                                                                   first + (b - a) - 1)
        (self._collapsed.add if on else self._collapsed.discard)(g)
        self._layout()
        if b > a:
            (self.endRemoveRows if on else self.endInsertRows)()
        self._arrows = set(self._collapsed)
        r = self._starts[g]
        self.dataChanged.emit(self.index(r, 0), self.index(r, len(COLUMNS) - 1))

    # -- where --------------------------------------------------------------------------------------
    def locate(self, row: int) -> tuple[int, int]:
        """Row → (group, change number; 0 for the group's header row)."""
        g = bisect.bisect_right(self._starts, row) - 1
        if g < 0 or self.index_ is None:
            return (-1, 0)
        off = row - self._starts[g]
        return (g, 0 if off == 0 else self.index_.groups[g][1] + off - 1)

    def row_of(self, n: int) -> int:
        """The row of change ``n`` (-1 while its group is collapsed)."""
        assert self.index_ is not None
        g = self.index_.group_of(n)
        if g in self._collapsed:
            return -1
        return self._starts[g] + 1 + (n - self.index_.groups[g][1])

    def index_of(self, n: int, column: int = 0) -> QModelIndex:
        return self.index(self.row_of(n), column)

    def group_row(self, g: int) -> int:
        return self._starts[g]

    def group_named(self, pass_name: str) -> int:
        assert self.index_ is not None
        return next(g for g, (p, _a, _b) in enumerate(self.index_.groups) if p == pass_name)

    # -- counts ---------------------------------------------------------------------------------------
    def ticked_count(self) -> int:
        return self.ticked.count(1)

    def tickable_count(self) -> int:
        return self.index_.tickable.count(1) if self.index_ is not None else 0

    def approved(self) -> list[int]:
        """The changes ticked now, in order."""
        return list(itertools.compress(range(len(self.ticked)), self.ticked))

    def group_counts(self, g: int) -> tuple[int, int, int]:
        """(ticked, tickable, refused) of group ``g``."""
        assert self.index_ is not None
        _p, a, b = self.index_.groups[g]
        tickable = self.index_.tickable[a:b].count(1)
        return self.ticked[a:b].count(1), tickable, (b - a) - tickable

    def group_text(self, g: int) -> str:
        assert self.index_ is not None
        name = self.index_.groups[g][0]
        title = PASS_TITLES.get(name, name)
        ticked, tickable, refused = self.group_counts(g)
        if not tickable:
            return f"{title} — {refused} refused, nothing to tick"
        text = f"{title} — {ticked} of {tickable} ticked"
        return text + (f", {refused} refused" if refused else "")

    # -- ticking ----------------------------------------------------------------------------------
    def set_ticked(self, n: int, on: bool) -> list[int]:
        """Tick or untick change ``n``; the changes it relies on (ticking) or that rely on it
        (unticking) follow. Returns the others that changed, in order."""
        idx = self.index_
        if idx is None or self.outcome is not None or not idx.tickable[n]:
            return []
        want = 1 if on else 0
        followed = sorted(k for k in idx.closure((n,), on) if self.ticked[k] != want)
        changed = self.ticked[n] != want
        self.ticked[n] = want
        for k in followed:
            self.ticked[k] = want
        if changed or followed:
            self._changed([n, *followed])
        return followed

    def set_group_ticked(self, g: int, on: bool) -> tuple[int, list[int]]:
        """Tick or untick every change of group ``g``; returns how many of them changed and
        the changes of other groups that followed."""
        idx = self.index_
        if idx is None or self.outcome is not None:
            return 0, []
        _p, a, b = idx.groups[g]
        want = 1 if on else 0
        before = self.ticked[a:b].count(want)
        self.ticked[a:b] = idx.tickable[a:b] if on else bytes(b - a)
        turned = self.ticked[a:b].count(want) - before
        t = self.ticked
        followed = [k for k in idx.closure_of_range(a, b, on) if t[k] != want]
        for k in followed:
            t[k] = want
        followed.sort()
        self._changed_all()
        return turned, followed

    def set_all(self, on: bool) -> None:
        if self.index_ is None or self.outcome is not None:
            return
        self.ticked[:] = self.index_.tickable if on else bytes(len(self.ticked))
        self._changed_all()

    def _changed(self, ns: list[int]) -> None:
        assert self.index_ is not None
        last = len(COLUMNS) - 1
        groups = set()
        for n in ns:
            self._texts.pop(n, None)
            r = self.row_of(n)
            if r >= 0:
                self.dataChanged.emit(self.index(r, 0), self.index(r, last))
            groups.add(self.index_.group_of(n))
        for g in groups:
            r = self._starts[g]
            self.dataChanged.emit(self.index(r, 0), self.index(r, last))

    def _changed_all(self) -> None:
        self._texts.clear()
        if self.rowCount():
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(self.rowCount() - 1, len(COLUMNS) - 1))

    # -- the model ----------------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() or self.index_ is None:
            return 0
        return self._total

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(COLUMNS)):
            return COLUMNS[section]
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid() or self.index_ is None:
            return Qt.ItemFlag.NoItemFlags
        g, n = self.locate(index.row())
        if n == 0:
            f = Qt.ItemFlag.ItemIsEnabled
            if index.column() == 0 and self.outcome is None and self.group_counts(g)[1]:
                f |= Qt.ItemFlag.ItemIsUserCheckable
            return f
        f = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == 0 and self.outcome is None and self.index_.tickable[n]:
            f |= Qt.ItemFlag.ItemIsUserCheckable
        return f

    def texts(self, n: int) -> tuple[str, ...]:
        """The five column texts of change ``n`` as shown now."""
        got = self._texts.get(n)
        if got is None:
            assert self.index_ is not None
            it = self.index_.plan.item(n)
            m = it.mutation
            why = one_line(it.why, 300)
            verdict = short_verdict(it, bool(self.ticked[n]))
            res = self.outcome
            if res is not None and it.tickable:
                if n in res.refused:
                    verdict, why = "refused at apply", one_line(res.refused[n], 300)
                elif n in self._applied:
                    verdict = "applied"
                elif n in self._unticked:
                    verdict = "left unticked"
            got = (f"{n}  {m.kind} {m.item_id}", verdict, decided_text(m.decided_by, short=True),
                   before_after(it), why)
            self._texts[n] = got
            self.rows_made += 1
        return got

    def text(self, n: int, column: int) -> str:
        return self.texts(n)[column]

    def _brush(self, status: str) -> QBrush:
        b = self._brushes.get(status)
        if b is None:
            b = self._brushes[status] = QBrush(palette.tint(status))
        return b

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.index_ is None:
            return None
        g, n = self.locate(index.row())
        col = index.column()
        R = Qt.ItemDataRole
        if n == 0:  # a pass's header row
            if role == R.DisplayRole:
                if col != 0:
                    return None
                return ("▸ " if g in self._arrows else "▾ ") + self.group_text(g)
            if role == R.ToolTipRole and col == 0:
                return ("Double-click to show this pass's changes" if g in self._arrows
                        else "Double-click to fold this pass's changes away")
            if role == R.FontRole:
                return self._bold
            if role == R.CheckStateRole and col == 0 and self.outcome is None:
                ticked, tickable, _refused = self.group_counts(g)
                if not tickable:
                    return None
                return (Qt.CheckState.Checked if ticked == tickable else
                        Qt.CheckState.Unchecked if ticked == 0 else
                        Qt.CheckState.PartiallyChecked)
            return None
        if role in (R.DisplayRole, R.ToolTipRole):
            text = self.texts(n)[col]
            return text if role == R.DisplayRole else plain_tooltip(text)
        tickable = bool(self.index_.tickable[n])
        if role == R.CheckStateRole and col == 0 and tickable and self.outcome is None:
            return Qt.CheckState.Checked if self.ticked[n] else Qt.CheckState.Unchecked
        if role == R.ForegroundRole:
            if not tickable:
                return self._muted
            if self.outcome is None and col in (0, 1, 2, 4):
                return self._normal if self.ticked[n] else self._muted
            return None
        if role == R.BackgroundRole:
            if col == (3 if tickable else 1):
                return self._brush(status_of(self.index_.plan.item(n)))
            return None
        if role == R.UserRole:
            return n
        return None

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if (role != Qt.ItemDataRole.CheckStateRole or not index.isValid() or index.column() != 0
                or self.index_ is None):
            return False
        if not self.flags(index) & Qt.ItemFlag.ItemIsUserCheckable:
            return False
        state = value if isinstance(value, Qt.CheckState) else Qt.CheckState(int(value))
        on = state != Qt.CheckState.Unchecked
        g, n = self.locate(index.row())
        if n == 0:
            turned, followed = self.set_group_ticked(g, on)
            self.toggled.emit((g, 0, on, followed, turned))
        else:
            followed = self.set_ticked(n, on)
            self.toggled.emit((g, n, on, followed, 1))
        return True

