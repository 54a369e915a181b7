"""The link between a memory folder and a Letta agent: pull, push, sync after every commit.

The agent's core-memory blocks are the live state it reads; the store stays the ledger of
versions, audit rows, transcripts and lineage. Blocks map by label (``persona``, ``human``,
``episodes``, ``scratch``; the last two are created on the agent when missing), one fact per
line, no ids in the text. The core never learns which backend is live: :meth:`LettaSync.attach`
subscribes to the store's commits (``Store.subscribe``) and :meth:`LettaSync.pull` records what
changed in Letta through ``Store.commit_changes``, like any other door.

* **pull** reads the blocks and diffs them by line against what the link last wrote or read
  (:mod:`.lines`); what changed in Letta becomes one version labelled ``changed in Letta``:
  added lines are new facts, removed lines forgettings, edited lines edits, each an audited
  change decided by ``letta`` that passed :func:`.admission.admit_text`. A refused line is
  logged with the reason and the block is written back without it (a secret's text is not
  kept, not even in the refusal); a removed pinned fact's line is written back.
* **push** writes every block whose lines differ from the live facts. A block over its limit is
  never cut: it is left as it was and :class:`LettaOverLimit` says so, with the two ways out
  (:meth:`LettaSync.raise_limit`, :meth:`LettaSync.keep_salient`).
* **sync** is a pull, then a push: both sides changed, Letta's changes become their own version
  first, then the result is written back. It runs after every commit once attached. When the
  server does not answer, nothing is lost: the blocks still differ from the live facts, which is
  what "pending" means, and the next sync writes them.

One ``LettaSync`` per thread, over that thread's ``Store``; it owns its HTTP client unless given
one. There is no compare-and-swap in Letta's API: an agent writing its block between this
sync's read and write would be overwritten (the window is one request long).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nocturne_desktop.core import limits
from nocturne_desktop.core.mutations import (
    HAND_PASS,
    LETTA_PASS,
    Add,
    Change,
    DecidedBy,
    Edit,
    Forget,
    Kind,
    Refusal,
    fact_value,
)
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, Fact, StoreChanges, Version
from nocturne_desktop.letta.admission import admit_text, is_secret
from nocturne_desktop.letta.client import Block, LettaClient, LettaError, LettaRefused, read_key_file
from nocturne_desktop.letta.lines import (
    REFUSED,
    LineOp,
    Synced,
    diff,
    parse,
    refused_key,
    render,
    render_line,
)
from nocturne_desktop.letta.state import LINK, BlockState, LinkState, load, save

log = logging.getLogger("nocturne.letta")

LABELS: tuple[str, ...] = BLOCKS
"""The agent's block labels the link reads and writes: the store's blocks, by the same name."""
PULL_LABEL = "changed in Letta"
"""The label of a pull's version."""
NEW_FACT_CATEGORY = "context"


class NotLinked(LettaError):
    """The memory folder is not linked to a Letta agent."""


class ChooseSide(LettaError):
    """Linking a memory that holds facts to an agent whose blocks hold lines: which side wins
    is the person's choice (``prefer="pull"`` or ``"push"``); nothing was written."""

    def __init__(self, message: str, facts: int, lines: int) -> None:
        super().__init__(message)
        self.facts, self.lines = facts, lines


@dataclass(frozen=True, slots=True)
class OverLimit:
    label: str
    chars: int
    limit: int

    def sentence(self) -> str:
        return (f"the {self.label} block would hold {self.chars:,} characters, over the Letta "
                f"agent's limit of {self.limit:,} for it: nothing was cut, the block keeps what "
                "it held. Raise the limit (`nocturne letta sync --raise-limit "
                f"{self.label}`) or keep the most salient lines that fit (`nocturne letta sync "
                f"--keep-salient {self.label}`: the others are forgotten in one version, which "
                "undo brings back)")


class LettaOverLimit(LettaError):
    """Blocks that were not written because their lines exceed the block's limit."""

    def __init__(self, blocks: Iterable[OverLimit]) -> None:
        self.blocks = tuple(blocks)
        super().__init__("; ".join(b.sentence() for b in self.blocks))


@dataclass
class PullReport:
    version: Version | None = None
    added: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """One sentence per refused line: the block, the line number and the reason."""
    refused_lines: set[str] = field(default_factory=set, repr=False)
    """The refused lines themselves (in memory only: never written anywhere)."""


@dataclass
class PushReport:
    written: list[str] = field(default_factory=list)
    over_limit: list[OverLimit] = field(default_factory=list)


@dataclass
class SyncReport:
    pull: PullReport
    push: PushReport
    seconds: float

    def summary(self) -> str:
        p = self.pull
        parts = []
        if p.version is not None:
            parts.append(f"changed in Letta ({p.version.id}): {len(p.added)} added, "
                         f"{len(p.edited)} edited, {len(p.removed)} removed")
        if p.refused:
            parts.append(f"{len(p.refused)} line(s) refused")
        if self.push.written:
            parts.append("wrote " + ", ".join(self.push.written))
        if self.push.over_limit:
            parts.append("over the limit: " + ", ".join(b.label for b in self.push.over_limit))
        return ("; ".join(parts) or "in sync, nothing to do") + f" ({self.seconds * 1000:.0f} ms)"


class _Raced(Exception):
    """Another sync of the same memory wrote the link state between this one's read and its
    pull's commit (checked inside the commit's transaction, so a pull is never recorded twice)."""


class _Pending:
    """A line whose fact is what change number ``k`` of the pull writes."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k


def rendered(facts: Iterable[Fact]) -> dict[str, Synced]:
    out: dict[str, Synced] = {label: [] for label in LABELS}
    for f in facts:
        out[f.block].append((f.id, render_line(f.text)))
    return out


def _size(lines: Synced) -> int:
    return len(render([line for _, line in lines]))


class LettaSync:
    """The link of one ``Store`` (this thread's) to its Letta agent."""

    def __init__(self, store: Store, client: LettaClient | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        state = load(store)
        if state is None:
            raise NotLinked(f"the memory in {store.path.parent} is not linked to a Letta agent; "
                            "link it with `nocturne letta link --url URL --agent ID`")
        self.store, self.state, self._clock = store, state, clock
        self._seen = store.get_link_state(LINK)
        self._own = client is None
        self.client = client or LettaClient(state.url, api_key=read_key_file(state.key_file))
        self._busy = False
        self.last: SyncReport | LettaError | None = None
        """What the last sync made of it (a report, or the error it met)."""

    def close(self) -> None:
        if self._own:
            self.client.close()

    def _save(self) -> None:
        text = self.state.to_json()
        self.store.set_link_state(LINK, text)
        self._seen = text

    def _reload(self) -> None:
        """The link state as stored now: another ``LettaSync`` (a thread, a process) may have
        synced since this one last looked."""
        text = self.store.get_link_state(LINK)
        if text is None:
            raise NotLinked(f"the memory in {self.store.path.parent} was unlinked")
        if text != self._seen:
            self.state, self._seen = LinkState.from_json(text), text

    def __enter__(self) -> LettaSync:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the commit hook

    def attach(self, on_commit: Callable[[], None] | None = None) -> Callable[[], None]:
        """Sync after every commit of this store that changed a fact (``on_commit`` instead,
        when given: the window schedules the sync on a worker). A failure never reaches the
        writer: it is kept in :attr:`last` and the link state, and the next sync retries.
        Returns the function that detaches the hook."""

        def listener(changes: StoreChanges) -> None:
            if self._busy or not changes.facts:
                return
            if on_commit is not None:
                on_commit()
            else:
                self.sync_quietly()

        return self.store.subscribe(listener)

    def sync_quietly(self) -> SyncReport | LettaError:
        """:meth:`sync`, its error returned (and logged) rather than raised."""
        try:
            return self.sync()
        except LettaError as exc:
            log.warning("Letta sync failed: %s", exc)
            return exc

    # ------------------------------------------------------------------ sync

    def sync(self) -> SyncReport:
        """Pull what changed in Letta (its own version), then push the live facts. Raises
        :class:`LettaError` (the state keeps it as the last error; nothing is lost), and
        :class:`LettaOverLimit` after writing the blocks that fit."""
        if self._busy:
            raise LettaError("a Letta sync is already running on this memory")
        self._busy = True
        t0 = time.perf_counter()
        try:
            for attempt in range(3):
                self._reload()
                blocks = self._read()
                try:
                    pulled = self._pull(blocks)
                    break
                except _Raced:
                    if attempt == 2:
                        raise LettaError("other syncs of this memory kept running at the same "
                                         "time; sync again") from None
            pushed = self._push()
            self.state.last_error = self.state.error_at = None
            self.state.last_sync = self._clock()
            self._save()
            report = SyncReport(pulled, pushed, time.perf_counter() - t0)
            self.last = report
            if pushed.over_limit:
                raise LettaOverLimit(pushed.over_limit)
            return report
        except LettaError as exc:
            self.last = exc
            if not isinstance(exc, LettaOverLimit):
                self.state.last_error, self.state.error_at = str(exc), self._clock()
                self._save()
            raise
        finally:
            self._busy = False

    def _read(self) -> dict[str, Block]:
        """The agent's blocks by label; the labels it lacks are created and attached."""
        agent = self.state.agent
        blocks = {b.label: b for b in self.client.blocks(agent) if b.label in LABELS}
        for label in LABELS:
            if label not in blocks:
                made = self.client.create_block(label, "")
                self.client.attach_block(agent, made.id)
                blocks[label] = made
                self.state.block(label).lines = []
            bs = self.state.block(label)
            bs.id, bs.limit = blocks[label].id, blocks[label].limit
        return blocks

    def _pull(self, blocks: dict[str, Block]) -> PullReport:
        report = PullReport()
        changes: list[Change] = []
        refused: list[Refusal] = []
        slots: dict[str, list[str | _Pending | None]] = {}
        now_lines: dict[str, list[str]] = {}
        for label in LABELS:
            now = parse(blocks[label].value)
            synced = self.state.block(label).lines
            ops, kept = diff(label, synced, now)
            slot: list[str | _Pending | None] = [kept.get(j) for j in range(len(now))]
            before = {t for _, t in synced if t.startswith(REFUSED)}
            for op in ops:
                self._plan(op, changes, refused, slot, report)
            # a refused line is kept as its key, never as its text (it may be a secret)
            slots[label] = slot
            now_lines[label] = [refused_key(t) if refused_key(t) in before or t in report.refused_lines
                                else t for t in now]
        if not changes and not refused:
            return report
        with self.store.transaction():
            if self.store.get_link_state(LINK) != self._seen:
                raise _Raced  # another sync recorded what it read first: read again
            version, ids = self.store.commit_changes(changes, label=PULL_LABEL, refused=refused)
            for label in LABELS:
                self.state.block(label).lines = [
                    (ids[s.k] if isinstance(s, _Pending) else s, line)
                    for s, line in zip(slots[label], now_lines[label], strict=True)]
            self.state.last_pull = self._clock()
            self._save()
        report.version = version
        for change, fact_id in zip(changes, ids, strict=True):
            {Kind.ADD: report.added, Kind.EDIT: report.edited,
             Kind.FORGET: report.removed}[change.kind].append(fact_id)
        return report

    def _plan(self, op: LineOp, changes: list[Change], refused: list[Refusal],
              slot: list[str | _Pending | None], report: PullReport) -> None:
        """What one changed line becomes: a change, a refusal, or nothing."""
        fact = self.store.get(op.fact_id) if op.fact_id is not None else None
        letta: dict[str, Any] = {"pass_name": LETTA_PASS, "decided_by": DecidedBy.LETTA}
        where = f"the {op.label} block"
        if op.kind == "remove":
            if fact is None or not fact.active:
                return  # already gone here
            if fact.pinned:
                self._refuse(refused, report, Kind.FORGET, fact.id, op, f"{fact.id} is pinned, "
                             "and a pinned fact is never forgotten: its line is written back "
                             f"into {where}")
                return
            changes.append(Forget(target=fact.id, reason=f"removed in Letta from {where}",
                                  text=fact.text, extra={"before": fact_value(fact)}, **letta))
            return
        assert op.at is not None
        why = admit_text(op.line)
        if op.kind == "edit" and fact is not None and fact.active:
            slot[op.at] = fact.id
            if render_line(fact.text) == op.line:
                return
            if why is not None:
                self._refuse(refused, report, Kind.EDIT, fact.id, op,
                             f"{why}; {where} gets {fact.id}'s text back")
                return
            changes.append(Edit(target=fact.id, text=op.line, before=fact_value(fact),
                                reason=f"changed in Letta ({where})", **letta))
            slot[op.at] = _Pending(len(changes) - 1)
            return
        if why is not None:
            slot[op.at] = None
            self._refuse(refused, report, Kind.ADD, "-", op,
                         f"{why}; the line is taken out of {where}")
            return
        gone = f"; {op.fact_id} had been forgotten here" if op.fact_id else ""
        changes.append(Add(target="", text=op.line, block=op.label, category=NEW_FACT_CATEGORY,
                           reason=f"written in Letta ({where}){gone}", **letta))
        slot[op.at] = _Pending(len(changes) - 1)

    def _refuse(self, refused: list[Refusal], report: PullReport, kind: str, target: str,
                op: LineOp, why: str) -> None:
        number = (op.at + 1) if op.at is not None else None
        shown: dict[str, object] = {"block": op.label, "line": number, "chars": len(op.line)}
        if not is_secret(why):
            shown["text"] = limits.storable(op.line, limits.SHOWN_CHARS)
        refused.append(Refusal(pass_name=LETTA_PASS, decided_by=DecidedBy.LETTA, of=kind,
                               target=target, why=why, proposal=shown))
        report.refused.append(f"{op.label} line {number or '-'}: {why}")
        if op.at is not None:
            report.refused_lines.add(op.line)

    def _push(self) -> PushReport:
        report = PushReport()
        want = rendered(self.store.active_facts())
        self.state.over_limit = {}
        for label in LABELS:
            bs = self.state.block(label)
            lines = want[label]
            if [t for _, t in lines] == [t for _, t in bs.lines]:
                bs.lines = lines  # the same text: only which fact each line is may have moved
                continue
            size = _size(lines)
            if size > bs.limit > 0:
                over = OverLimit(label, size, bs.limit)
                report.over_limit.append(over)
                self.state.over_limit[label] = over.sentence()
                continue
            try:
                written = self.client.set_block(self.state.agent, label, render([t for _, t in lines]))
            except LettaRefused as exc:
                if "exceeds the limit" not in str(exc):
                    raise
                fresh = self.client.block(self.state.agent, label)  # the limit moved in Letta
                bs.limit = fresh.limit
                over = OverLimit(label, size, fresh.limit)
                report.over_limit.append(over)
                self.state.over_limit[label] = over.sentence()
                continue
            bs.id, bs.limit, bs.lines = written.id, written.limit, lines
            report.written.append(label)
            self.state.last_push = self._clock()
            self._save()  # each block as it is written: a failure keeps them
        return report

    # ------------------------------------------------------------------ over the limit

    def needed(self, label: str) -> int:
        """Characters the ``label`` block needs for the live facts."""
        return _size(rendered(self.store.active_facts())[label])

    def raise_limit(self, label: str, limit: int | None = None) -> int:
        """Raise the ``label`` block's limit in Letta to ``limit`` (default: what the live facts
        need, rounded up to the next thousand); returns the new limit. Sync afterwards."""
        self._reload()
        bs = self._block_state(label)
        need = self.needed(label)
        new = limit if limit is not None else max(1000, math.ceil(need / 1000) * 1000)
        if new < need:
            raise LettaError(f"a limit of {new:,} is below the {need:,} characters the {label} "
                             "block needs")
        assert bs.id is not None
        block = self.client.set_limit(bs.id, new)
        bs.limit = block.limit
        self._save()
        return block.limit

    def keep_salient(self, label: str, policy: RetentionPolicy | None = None) -> Version | None:
        """Forget the least salient facts of ``label`` until its lines fit the block's limit,
        as one version decided by you (pinned facts are always kept). Sync afterwards."""
        self._reload()
        bs = self._block_state(label)
        policy = policy or RetentionPolicy()
        facts = [f for f in self.store.active_facts() if f.block == label]
        now = self.store.now()
        strengths = self.store.strengths([f.id for f in facts])
        order = sorted(facts, key=lambda f: (not f.pinned,
                                             -policy.salience(f, now, strengths.get(f.id)),
                                             -int(f.id[2:])))
        used, keep = 0, set[str]()
        for f in order:
            cost = len(render_line(f.text)) + (1 if keep else 0)
            if f.pinned or used + cost <= bs.limit:
                keep.add(f.id)
                used += cost
        if used > bs.limit:
            raise LettaError(f"the pinned facts of the {label} block alone need {used:,} "
                             f"characters, over its limit of {bs.limit:,}: only raising the "
                             "limit helps")
        drop = [f for f in facts if f.id not in keep]
        if not drop:
            return None
        why = (f"kept the most salient lines within the Letta agent's {label} limit of "
               f"{bs.limit:,} characters")
        version, _ = self.store.commit_changes(
            [Forget(pass_name=HAND_PASS, decided_by=DecidedBy.YOU, target=f.id, reason=why,
                    text=f.text, extra={"before": fact_value(f)}) for f in drop],
            label=f"keep-salient:{label}")
        return version

    def _block_state(self, label: str) -> BlockState:
        if label not in LABELS:
            raise LettaError(f"unknown block {label!r}; the linked blocks are {', '.join(LABELS)}")
        bs = self.state.block(label)
        if bs.id is None:
            self._read()
        return bs


# ---------------------------------------------------------------------------------- linking


def link(store: Store, url: str, agent_id: str, *, api_key_file: str | Path | None = None,
         prefer: Literal["pull", "push"] | None = None, client: LettaClient | None = None,
         clock: Callable[[], float] = time.time) -> tuple[LettaSync, SyncReport]:
    """:func:`connect`, then the first sync (its errors raised: the link stays)."""
    sync = connect(store, url, agent_id, api_key_file=api_key_file, prefer=prefer,
                   client=client, clock=clock)
    return sync, sync.sync()


def connect(store: Store, url: str, agent_id: str, *, api_key_file: str | Path | None = None,
            prefer: Literal["pull", "push"] | None = None, client: LettaClient | None = None,
            clock: Callable[[], float] = time.time) -> LettaSync:
    """Link ``store`` to the agent (nothing is written before the agent and its blocks were
    read and the choice below is clear); the first sync is the caller's. Which side wins, when
    both hold something, is ``prefer``'s to say: ``pull`` makes the live facts what the agent's
    blocks hold (what differs becomes a version changed in Letta), ``push`` writes this memory
    over the blocks. An empty memory pulls; an agent with empty blocks is pushed to."""
    own = client is None
    client = client or LettaClient(url, api_key=read_key_file(api_key_file))
    try:
        client.get_agent(agent_id)
        blocks = {b.label: b for b in client.blocks(agent_id) if b.label in LABELS}
        facts = store.active_facts()
        lines = sum(len(parse(b.value)) for b in blocks.values())
        if prefer is None:
            if facts and lines:
                raise ChooseSide(
                    f"this memory holds {len(facts)} facts and agent {agent_id}'s blocks hold "
                    f"{lines} lines: say which side wins, --pull (the agent's blocks; what "
                    "differs becomes a version changed in Letta, which undo takes back) or "
                    "--push (this memory; the agent's blocks are overwritten)", len(facts), lines)
            prefer = "push" if facts else "pull"
        state = LinkState(url=client.url, agent=agent_id, linked_at=clock(),
                          key_file=str(Path(api_key_file).resolve()) if api_key_file else None)
        have = rendered(facts)
        for label in LABELS:
            b = blocks.get(label)
            bs = state.block(label)
            if b is not None:
                bs.id, bs.limit = b.id, b.limit
            # pull: as if this memory had been written there, so every difference is Letta's;
            # push: as if the blocks had been read, so nothing is pulled and all is written
            bs.lines = have[label] if prefer == "pull" else [
                (None, refused_key(t)) for t in parse(b.value if b is not None else "")]
        save(store, state)
    except BaseException:
        if own:
            client.close()
        raise
    sync = LettaSync(store, client, clock=clock)
    sync._own = own
    return sync


def unlink(store: Store) -> None:
    """Forget the link (the agent's blocks and this memory stay as they are)."""
    store.set_link_state(LINK, None)


# ---------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class LinkStatus:
    """What the window's mark and banner need, read without the network."""

    url: str
    agent: str
    key_file: str | None
    linked_at: float
    last_pull: float | None
    last_push: float | None
    last_error: str | None
    error_at: float | None
    pending: tuple[str, ...]
    """Blocks whose lines differ from the live facts: what the next sync writes."""
    over_limit: dict[str, str]
    blocks: dict[str, tuple[int, int, int]]
    """label → (lines, characters, limit) of the live facts."""
    last_sync: float | None = None
    """When a sync last went through, also one with nothing to write."""

    @property
    def ok(self) -> bool:
        return self.last_error is None and not self.pending and not self.over_limit

    def lines(self) -> list[str]:
        def when(t: float | None) -> str:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "never"

        out = [f"linked to agent {self.agent} on {self.url} since {when(self.linked_at)}",
               f"key: {'read from ' + self.key_file if self.key_file else 'none'}",
               f"last pull: {when(self.last_pull)}; last push: {when(self.last_push)}"]
        for label, (n, chars, limit) in self.blocks.items():
            mark = " (pending)" if label in self.pending else ""
            out.append(f"  {label}: {n} lines, {chars:,}/{limit:,} characters{mark}")
        out += [f"over the limit: {s}" for s in self.over_limit.values()]
        if self.last_error:
            out.append(f"last error ({when(self.error_at)}): {self.last_error}")
        out.append("in sync" if self.ok else
                   f"pending: {', '.join(self.pending) or '-'} (written at the next sync)")
        return out


def link_status(store: Store) -> LinkStatus | None:
    """The link's state (None: not linked); no request is made."""
    state = load(store)
    if state is None:
        return None
    want = rendered(store.active_facts())
    pending = tuple(label for label in LABELS if [t for _, t in want[label]]
                    != [t for _, t in state.block(label).lines])
    return LinkStatus(
        state.url, state.agent, state.key_file, state.linked_at, state.last_pull,
        state.last_push, state.last_error, state.error_at, pending, dict(state.over_limit),
        {label: (len(want[label]), _size(want[label]), state.block(label).limit)
         for label in LABELS}, state.last_sync)
