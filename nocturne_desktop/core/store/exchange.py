"""Export and import of a whole memory (S-EXP-1): JSON a machine can read back exactly, and
Markdown a person can read (and Nocturne can read back: :mod:`.mdexchange`).

The JSON holds every fact with its full history (the value at every version), the versions,
the sleeps, every audit row, the conversations with their turns, the store's meta keys and the
retention policy the memory ran under when it was exported (export version 2; a version 1
file, which has none, still imports), under a format name and an export version. Importing it
into an empty store gives back the same store: the state at every version, every diff and the
audit log are equal (the test proves it on generated stores), and the policy becomes the one
the imported memory carries (:mod:`.memorypolicy`).

A file is read with care, because it may come from anywhere: only a regular file, at most
byte is read (:data:`MAX_IMPORT_BYTES`), the JSON is parsed with a bound on nesting, the
document is validated with pydantic (strict types, no unknown keys), then checked as a whole
(unique ids, histories that tile the version line, references to versions and sleeps that
exist, texts the store accepts). Anything wrong raises :class:`ImportRefused` with one sentence
saying what, and nothing is written.

A memory that is not empty cannot take a whole export (its ids, versions and audit log would
collide); :func:`import_into_scratch` offers the facts instead: each active fact of the export
becomes an ``add`` decided by ``you`` into the scratch block (its text and category kept, its
source "imported from <file> on <date>"), except those the memory already holds by the dedupe
gate's rule (:mod:`nocturne_desktop.core.judges.duplicates`), all in one version that Ctrl+Z undoes.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from nocturne_desktop.core import files, mutations
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.judges.duplicates import DEFAULT_THRESHOLD, held_by
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import (
    MAX_TEXT_CHARS,
    MAX_TURN_CHARS,
    ROLES,
    SCHEMA_VERSION,
    Store,
    importcheck,
)
from nocturne_desktop.core.store.memorypolicy import (
    POLICY_KEY,
    checked_policy,
    memory_policy,
    policy_json,
    policy_words,
)
from nocturne_desktop.core.store.sleeplock import lock_path
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact, FactDraft, Version

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "IMPORTED_FROM",
    "MARKDOWN_SUFFIXES",
    "MAX_DEPTH",
    "MAX_IMPORT_BYTES",
    "ExportFile",
    "ImportRefused",
    "MemoryExport",
    "RefusedFact",
    "ScratchImport",
    "export_json",
    "export_markdown",
    "import_file",
    "import_file_into_scratch",
    "import_into_scratch",
    "read_export",
    "read_file",
]

EXPORT_FORMAT: Literal["nocturne-memory"] = "nocturne-memory"
EXPORT_VERSION: Literal[2] = 2
"""Written by this Nocturne: 2 added the ``policy``; version 1 files are read as well."""
READS_VERSIONS = (1, 2)
MARKDOWN_SUFFIXES = (".md", ".markdown")
"""A file with one of these names is read as a Markdown export (so is one whose first
character is ``#``, which no JSON starts with)."""
MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""Largest file an import reads (256 MiB: a memory of a million facts with history fits)."""
MAX_DEPTH = 64
"""Deepest nesting of JSON an import accepts (an export itself is about six levels deep)."""


class ImportRefused(InvalidInput):
    """The file is not an export this Nocturne can read back; nothing was written. ``rule``
    names the admission check's rule when a fact's text in it was refused (``sensitive``,
    ``limits``, ``unicode``, ``statement``: :mod:`core.judges.admission`), else ``""``."""

    def __init__(self, message: str, *, rule: str = "") -> None:
        super().__init__(message)
        self.rule = rule


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class FactValue(_Model):
    """A fact's value over the versions ``[fromSeq, toSeq)`` (``toSeq`` None: still current)."""

    fromSeq: int
    toSeq: int | None = None
    block: str
    text: str
    category: str
    sourceTurn: int | None
    createdAt: float
    updatedAt: float
    active: bool
    validUntil: float | None = None
    """When a superseded value stopped being true (S-REC-2)."""
    supersededBy: str | None = None
    """The fact that superseded this value."""
    pinned: bool


class StrengthExport(_Model):
    """A fact's salience beyond its value (S-RET-2): the encoder's importance and its recalls."""

    id: str
    importance: int | None
    uses: int
    strength: float
    lastUsedAt: float | None


class FactExport(_Model):
    id: str
    current: FactValue
    history: list[FactValue]
    """Earlier values, oldest first."""


class VersionExport(_Model):
    seq: int
    label: str
    createdAt: float
    activeCount: int
    sleepId: int | None


class SleepExport(_Model):
    id: int
    startedAt: float
    finishedAt: float | None
    dryRun: bool
    status: str
    policy: Any
    summary: Any


class MutationExport(_Model):
    id: int
    seq: int | None
    sleepId: int | None
    passName: str
    kind: str
    itemId: str
    accepted: bool
    reason: str
    rejectionReason: str | None
    policy: str | None
    decidedBy: str
    refs: Any
    createdAt: float


class TurnExport(_Model):
    n: int
    role: str
    text: str
    createdAt: float


class ConversationExport(_Model):
    id: int
    createdAt: float
    turns: list[TurnExport]


class MemoryExport(_Model):
    format: Literal["nocturne-memory"]
    exportVersion: Literal[1, 2]
    storeSchema: int
    exportedAt: float
    policy: dict[str, Any] | None = None
    """The retention policy the memory ran under when it was exported
    (:meth:`RetentionPolicy.model_dump`, as each sleep records it); None: the file does not say."""
    nextItem: int
    facts: list[FactExport]
    versions: list[VersionExport]
    sleeps: list[SleepExport]
    mutations: list[MutationExport]
    conversations: list[ConversationExport]
    strengths: list[StrengthExport] = []
    meta: dict[str, str]


# ------------------------------------------------------------------------------------ export


def _value(row: tuple[Any, ...], *, to_seq: int | None) -> FactValue:
    block, text, category, source_turn, created, updated, active, until, by, pinned = row
    return FactValue(fromSeq=0, toSeq=to_seq, block=block, text=text, category=category,
                     sourceTurn=source_turn, createdAt=created, updatedAt=updated,
                     active=active == 1, validUntil=until,
                     supersededBy=None if by is None else f"m_{by}", pinned=pinned == 1)


def build_export(store: Store, *, now: float | None = None,
                 policy: RetentionPolicy | None = None) -> MemoryExport:
    """The whole memory of ``store`` as a validated :class:`MemoryExport`. ``policy`` is the
    retention policy the memory runs under (the window's, which is the settings', the demo's or
    the memory's own); without one, the policy the memory carries, if any."""
    rows = store.dump()
    policy = policy if policy is not None else memory_policy(store)
    history: dict[int, list[FactValue]] = {}
    for num, from_seq, to_seq, *value in rows["item_history"]:
        history.setdefault(num, []).append(
            _value(tuple(value), to_seq=to_seq).model_copy(update={"fromSeq": from_seq}))
    facts = []
    for num, *value, from_seq in rows["items"]:
        facts.append(FactExport(
            id=f"m_{num}",
            current=_value(tuple(value), to_seq=None).model_copy(update={"fromSeq": from_seq}),
            history=sorted(history.get(num, []), key=lambda v: v.fromSeq)))
    turns: dict[int | None, list[TurnExport]] = {}
    for n, role, text, created, conv in rows["turns"]:
        turns.setdefault(conv, []).append(TurnExport(n=n, role=role, text=text, createdAt=created))
    if turns.get(None):
        raise InvalidInput("the store holds turns outside any conversation; open it once to migrate")
    return MemoryExport(
        format=EXPORT_FORMAT, exportVersion=EXPORT_VERSION, storeSchema=SCHEMA_VERSION,
        exportedAt=store.now() if now is None else now,
        policy=None if policy is None else json.loads(policy_json(policy)),
        nextItem=rows["next_item"][0][0],
        facts=facts,
        versions=[VersionExport(seq=seq, label=label, createdAt=created, activeCount=count,
                                sleepId=sleep_id)
                  for seq, label, created, count, sleep_id in rows["snapshots"]],
        sleeps=[SleepExport(id=i, startedAt=started, finishedAt=finished, dryRun=dry == 1,
                            status=status, policy=json.loads(policy), summary=json.loads(summary))
                for i, started, finished, dry, status, policy, summary in rows["sleeps"]],
        mutations=[MutationExport(id=i, seq=seq, sleepId=sleep_id, passName=pass_name, kind=kind,
                                  itemId=item_id, accepted=accepted == 1, reason=reason,
                                  rejectionReason=rejection, policy=policy, decidedBy=decided_by,
                                  refs=json.loads(refs), createdAt=created)
                   for (i, seq, sleep_id, pass_name, kind, item_id, accepted, reason, rejection,
                        policy, decided_by, refs, created) in rows["mutations"]],
        conversations=[ConversationExport(id=i, createdAt=created, turns=turns.get(i, []))
                       for i, created in rows["conversations"]],
        strengths=[StrengthExport(id=f"m_{num}", importance=importance, uses=uses,
                                  strength=float(strength), lastUsedAt=last)
                   for num, importance, uses, strength, last in rows["strengths"]],
        meta={k: v for k, v in rows["meta"] if k != POLICY_KEY},  # carried as the policy
    )


def export_json(store: Store, *, now: float | None = None,
                policy: RetentionPolicy | None = None) -> str:
    """The JSON export of ``store`` (UTF-8 text, keys in a stable order)."""
    return build_export(store, now=now, policy=policy).model_dump_json(indent=1)


def export_markdown(store: Store, *, now: float | None = None,
                    policy: RetentionPolicy | None = None) -> str:
    """The readable export (:func:`.mdexchange.export_markdown`: facts by block, the forgotten
    ones, the policy), which :func:`read_export` reads back."""
    from nocturne_desktop.core.store import mdexchange

    return mdexchange.export_markdown(store, now=now, policy=policy)


def write_export(store: Store, target: Path, *, markdown: bool = False,
                 policy: RetentionPolicy | None = None) -> int:
    """Write the export to ``target`` atomically and privately (:func:`files.write_private`:
    a fresh 0600 temporary file in the same folder, never a fixed name a link could be planted
    under, then a rename; a failed export never leaves half a file). ``policy``: the one the
    memory runs under (see :func:`build_export`). Returns the bytes written."""
    text = (export_markdown(store, policy=policy) if markdown
            else export_json(store, policy=policy))
    return files.write_private(target, text.encode("utf-8"))


# ------------------------------------------------------------------------------------ import


def _depth_ok(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            children: Iterable[Any] = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children)
    return True


@dataclass(frozen=True)
class ExportFile:
    """A checked export file: what it holds, and whether it was the Markdown export (which
    carries facts, blocks, categories, pins, days and the policy, not the history)."""

    export: MemoryExport
    markdown: bool

    @property
    def policy(self) -> RetentionPolicy | None:
        """The retention policy the file carries (checked when it was read), or None."""
        return None if self.export.policy is None else checked_policy(self.export.policy)

    def contents(self) -> str:
        """What came in, in words: ``12 facts, 5 versions, 40 audit rows and 2 conversations``,
        or for Markdown the facts and what the file could not carry."""
        e = self.export
        if not self.markdown:
            return (f"{_n(len(e.facts), 'fact')}, {_n(len(e.versions), 'version')}, "
                    f"{_n(len(e.mutations), 'audit row')} and "
                    f"{_n(len(e.conversations), 'conversation')}")
        gone = sum(1 for f in e.facts if not f.current.active)
        pins = sum(1 for f in e.facts if f.current.pinned)
        return (f"{_n(len(e.facts), 'fact')} ({len(e.facts) - gone} active, {gone} forgotten, "
                f"{pins} pinned) from a Markdown export, which carries no earlier versions, "
                "audit log or conversations")

    def policy_message(self) -> str:
        """What becomes of the retention policy, said to the person after a full import."""
        policy = self.policy
        if policy is None:
            return ("the file names no retention policy (an older export), so the memory runs "
                    "under the policy of your settings")
        return ("its retention policy came with it and the memory runs under it: "
                f"{policy_words(policy)}")


def _n(n: int, one: str) -> str:
    return f"{n:,} {one if n == 1 else one + 's'}"


def read_file(path: Path, *, now: float | None = None) -> ExportFile:
    """Read and check an export file, JSON or Markdown (:data:`MARKDOWN_SUFFIXES`, or a first
    character ``#``); :class:`ImportRefused` (one sentence) if it is not one this Nocturne can
    import. Reads nothing when the file is too large. ``now``: when a Markdown file's facts are
    imported (the time of the version they arrive in)."""
    from nocturne_desktop.core.store import mdexchange

    markdown = path.suffix.lower() in MARKDOWN_SUFFIXES
    cap = mdexchange.MAX_MARKDOWN_BYTES if markdown else MAX_IMPORT_BYTES
    try:
        raw = files.read_regular(path, cap, what=str(path))
    except files.FileRefused as exc:
        raise ImportRefused(str(exc)) from None
    if markdown or mdexchange.looks_like_markdown(raw):
        return ExportFile(mdexchange.parse_markdown(raw, str(path), file=path.name, now=now), True)
    return ExportFile(parse_export(raw, str(path)), False)


def read_export(path: Path) -> MemoryExport:
    """What :func:`read_file` reads: the checked export, JSON or Markdown."""
    return read_file(path).export


def parse_export(raw: bytes, name: str = "the file") -> MemoryExport:
    """Check the bytes of a JSON export (see :func:`read_file`)."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise ImportRefused(f"{name} is larger than {MAX_IMPORT_BYTES // 2**20} MiB")
    dense = importcheck.prescan(raw)
    if dense is not None:
        raise ImportRefused(f"{name} {dense}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{name} is not UTF-8 text (byte {exc.start}): not a Nocturne export") from None
    export = _fast_parse(text)
    if export is None:  # not an export as Nocturne writes one: read it to say what is wrong
        export = _parse_slowly(text, name)
    del text
    return check_export(export, name)


def check_export(export: MemoryExport, name: str, *, texts_admitted: bool = False
                 ) -> MemoryExport:
    """The whole-document rules and every value against the live limits (what any export,
    JSON or read from Markdown, passes before a byte of it is written; ``texts_admitted``:
    see :func:`importcheck.value_problems`)."""
    _check_whole(export, name)
    problem = next(importcheck.value_problems(export, texts_admitted=texts_admitted), None)
    if problem is not None:
        raise ImportRefused(f"{name}: {problem}; nothing was imported",
                            rule=getattr(problem, "rule", ""))
    return export


_HEADER = re.compile(r'\s*\{\s*"format"\s*:\s*"nocturne-memory"\s*,\s*"exportVersion"\s*:\s*[12]\s*,'
                     r'\s*"storeSchema"\s*:\s*(\d{1,9})\s*,')


def _fast_parse(text: str) -> MemoryExport | None:
    """An export as Nocturne writes it (its header first), parsed straight into the models
    (no dict of the whole document on the way: its peak memory is about half); None for
    anything else, which :func:`_parse_slowly` reads and explains."""
    head = _HEADER.match(text[:400])
    if head is None or int(head.group(1)) > SCHEMA_VERSION:
        return None
    try:
        export = MemoryExport.model_validate_json(text)
    except (ValidationError, ValueError, RecursionError):
        return None
    blobs = [*(m.refs for m in export.mutations), *(s.policy for s in export.sleeps),
             *(s.summary for s in export.sleeps), export.policy]
    if not all(_depth_ok(b, MAX_DEPTH - 4) for b in blobs):
        return None
    return export


def _parse_slowly(text: str, name: str) -> MemoryExport:
    """Parse ``text`` as JSON, then as an export, saying in one sentence what is wrong."""
    try:
        doc = importcheck.loads(text)
    except RecursionError:
        raise ImportRefused(f"{name} nests JSON deeper than any export does; refused") from None
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                            f"{exc.msg}); not a Nocturne export") from None
    except ValueError as exc:
        raise ImportRefused(f"{name} holds {exc}; not a Nocturne export") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise ImportRefused(f"{name} is JSON but not a Nocturne memory export (no "
                            f"\"format\": \"{EXPORT_FORMAT}\")")
    version = doc.get("exportVersion")
    if version not in READS_VERSIONS or isinstance(version, bool):
        raise ImportRefused(f"{name} is a Nocturne export of version {version!r}; this Nocturne "
                            f"reads versions {' and '.join(map(str, READS_VERSIONS))}" + (
                                " (update Nocturne to import it)"
                                if isinstance(version, int) and version > EXPORT_VERSION else ""))
    schema = doc.get("storeSchema")
    if isinstance(schema, int) and schema > SCHEMA_VERSION:
        raise ImportRefused(f"{name} was exported by a newer Nocturne (store schema {schema}; this "
                            f"one understands up to {SCHEMA_VERSION}); update Nocturne to import it")
    if not _depth_ok(doc, MAX_DEPTH):
        raise ImportRefused(f"{name} nests JSON deeper than {MAX_DEPTH} levels; refused")
    try:
        export = MemoryExport.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])[:120]
        raise ImportRefused(f"{name} is not a valid export: {where}: {first['msg'][:200]} "
                            f"({exc.error_count()} problem(s) in all)") from None
    return export


def _check_text(text: str, what: str, limit: int) -> None:
    if not text.strip() and limit == MAX_TEXT_CHARS:
        raise ImportRefused(f"{what} is empty")
    if "\x00" in text:
        raise ImportRefused(f"{what} contains a NUL byte")
    if len(text) > limit:
        raise ImportRefused(f"{what} is {len(text)} characters; the limit is {limit}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ImportRefused(f"{what} is not valid Unicode") from None


def _unique(ids: Iterable[Any], what: str, name: str) -> set[Any]:
    seen: set[Any] = set()
    for i in ids:
        if i in seen:
            raise ImportRefused(f"{name}: two {what} have the id {i!r}; ids must not collide")
        seen.add(i)
    return seen


def _check_whole(e: MemoryExport, name: str) -> None:
    """Whole-document rules: what pydantic's types cannot say."""
    seqs = _unique((v.seq for v in e.versions), "versions", name)
    if [v.seq for v in e.versions] != list(range(1, len(e.versions) + 1)):
        raise ImportRefused(f"{name}: versions must be numbered 1, 2, 3 … in order")
    pending = len(e.versions) + 1
    sleeps = _unique((s.id for s in e.sleeps), "sleeps", name)
    _unique((m.id for m in e.mutations), "audit rows", name)
    _unique((c.id for c in e.conversations), "conversations", name)
    turn_ids = _unique((t.n for c in e.conversations for t in c.turns), "turns", name)
    _unique((f.id for f in e.facts), "facts", name)
    nums = []
    for f in e.facts:
        if not (f.id.startswith("m_") and f.id[2:].isdigit() and not f.id[2:].startswith("0")):
            raise ImportRefused(f"{name}: {f.id!r} is not a fact id (ids look like 'm_17')")
        nums.append(int(f.id[2:]))
    _unique(nums, "facts", name)
    if nums and e.nextItem <= max(nums):
        raise ImportRefused(f"{name}: nextItem {e.nextItem} would reuse fact ids up to m_{max(nums)}")
    if e.nextItem < 1:
        raise ImportRefused(f"{name}: nextItem must be at least 1")
    fact_ids = {f.id for f in e.facts}
    for f in e.facts:
        values = [*f.history, f.current]
        for v in values:
            if v.supersededBy is not None and v.supersededBy not in fact_ids:
                raise ImportRefused(f"{name}: {f.id} is superseded by {v.supersededBy!r}, which is "
                                    "not in the file")
            if v.validUntil is not None and not math.isfinite(v.validUntil):
                raise ImportRefused(f"{name}: {f.id} has a validity end that is not a time")
            if v.block not in BLOCKS:
                raise ImportRefused(f"{name}: {f.id} is in unknown block {v.block!r}")
            if v.category not in CATEGORIES:
                raise ImportRefused(f"{name}: {f.id} has unknown category {v.category!r}")
            _check_text(v.text, f"{name}: the text of {f.id}", MAX_TEXT_CHARS)
        for a, b in itertools.pairwise(values):
            if a.toSeq is None or not (a.fromSeq < a.toSeq == b.fromSeq):
                raise ImportRefused(f"{name}: the history of {f.id} does not tile the versions "
                                    f"(a value from {a.fromSeq} to {a.toSeq}, then one from {b.fromSeq})")
        if not (values[0].fromSeq >= 1 and f.current.fromSeq <= pending):
            raise ImportRefused(f"{name}: {f.id} has values outside the versions 1..{pending}")
    for st in e.strengths:
        if st.id not in fact_ids:
            raise ImportRefused(f"{name}: a strength names {st.id!r}, which is not in the file")
        if st.importance is not None and not 1 <= st.importance <= 5:
            raise ImportRefused(f"{name}: {st.id} has importance {st.importance}; it is 1 to 5")
        if st.uses < 0 or not (math.isfinite(st.strength) and st.strength >= 0) or (
                st.lastUsedAt is not None and not math.isfinite(st.lastUsedAt)):
            raise ImportRefused(f"{name}: {st.id} has a strength that is not a count of recalls")
    _unique((st.id for st in e.strengths), "strengths", name)
    for ver in e.versions:
        if ver.sleepId is not None and ver.sleepId not in sleeps:
            raise ImportRefused(
                f"{name}: version {ver.seq} names sleep {ver.sleepId}, which is not in the file")
        _check_text(ver.label, f"{name}: the label of version {ver.seq}", 200)
    for m in e.mutations:
        if m.sleepId is not None and m.sleepId not in sleeps:
            raise ImportRefused(f"{name}: audit row {m.id} names sleep {m.sleepId}, which is not in the file")
        if m.seq is not None and m.seq not in seqs and m.seq != pending:
            raise ImportRefused(f"{name}: audit row {m.id} names version {m.seq}, which is not in the file")
    for c in e.conversations:
        for t in c.turns:
            if t.role not in ROLES:
                raise ImportRefused(f"{name}: turn {t.n} has unknown role {t.role!r}")
            _check_text(t.text, f"{name}: turn {t.n}", MAX_TURN_CHARS)
    if any(n < 1 for n in turn_ids):
        raise ImportRefused(f"{name}: turn numbers start at 1")
    for k, val in e.meta.items():
        if not k.strip() or "\x00" in k or "\x00" in val:
            raise ImportRefused(f"{name}: meta key {k!r} is empty or holds a NUL byte")
    if POLICY_KEY in e.meta:
        raise ImportRefused(f"{name}: meta key {POLICY_KEY!r} is the memory's retention policy, "
                            "which an export carries as its \"policy\"; refused")
    if e.policy is not None:
        try:
            checked_policy(e.policy, "its retention policy")
        except InvalidInput as exc:
            raise ImportRefused(f"{name}: {exc}; nothing was imported") from None


def _rows(e: MemoryExport) -> dict[str, list[tuple[Any, ...]]]:
    """The export as the rows :meth:`Store.load` writes."""

    def value(v: FactValue) -> tuple[Any, ...]:
        return (v.block, v.text, v.category, v.sourceTurn, v.createdAt, v.updatedAt,
                int(v.active), v.validUntil,
                None if v.supersededBy is None else int(v.supersededBy[2:]), int(v.pinned))

    def blob(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)

    items, history = [], []
    for f in e.facts:
        num = int(f.id[2:])
        items.append((num, *value(f.current), f.current.fromSeq))
        history += [(num, h.fromSeq, h.toSeq, *value(h)) for h in f.history]
    return {
        "items": items,
        "item_history": history,
        "strengths": [(int(st.id[2:]), st.importance, st.uses, st.strength, st.lastUsedAt)
                      for st in e.strengths],
        "snapshots": [(v.seq, v.label, v.createdAt, v.activeCount, v.sleepId) for v in e.versions],
        "sleeps": [(s.id, s.startedAt, s.finishedAt, int(s.dryRun), s.status, blob(s.policy),
                    blob(s.summary)) for s in e.sleeps],
        "mutations": [(m.id, m.seq, m.sleepId, m.passName, m.kind, m.itemId, int(m.accepted),
                       m.reason, m.rejectionReason, m.policy, m.decidedBy, blob(m.refs), m.createdAt)
                      for m in e.mutations],
        "conversations": [(c.id, c.createdAt) for c in e.conversations],
        "turns": [(t.n, t.role, t.text, t.createdAt, c.id) for c in e.conversations for t in c.turns],
        "meta": sorted([*e.meta.items(), *(
            [] if e.policy is None else [(POLICY_KEY, policy_json(checked_policy(e.policy)))])]),
        "next_item": [(e.nextItem,)],
    }


def import_export(store: Store, export: MemoryExport) -> None:
    """Write a checked export into the empty ``store`` (one transaction; refused if the store
    already holds anything)."""
    if not store.is_empty():
        raise ImportRefused(f"{store.path} already holds a memory; import into a new, empty data "
                            "folder (nothing was written)")
    store.load(_rows(export))


def _holds_memory(db_path: Path) -> bool:
    """Whether the file at ``db_path`` holds facts, versions, sleeps, audit rows or turns, read
    through a read-only connection (nothing is migrated or written; an unreadable file is left
    to :class:`Store` to describe)."""
    if not db_path.is_file() or db_path.stat().st_size == 0:
        return False
    try:
        probe = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        tables = {r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return any(probe.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()
                   for t in ("items", "snapshots", "sleeps", "mutations", "turns") if t in tables)
    except sqlite3.Error:
        return False
    finally:
        probe.close()


def import_file(path: Path, db_path: Path) -> ExportFile:
    """Check the export at ``path`` (JSON or Markdown) and import it into a new store at
    ``db_path``; the policy it carries becomes the one the new memory carries. Nothing is
    written when the file is refused or the store is not empty: a store file this call created
    is removed again after a failure."""
    read = read_file(path)
    export = read.export
    if _holds_memory(db_path):  # refused before it is opened: an older schema is not migrated
        raise ImportRefused(f"{db_path} already holds a memory; import into a new, empty data "
                            "folder (nothing was written, the memory there was not opened)")
    existed = db_path.exists()
    folder_existed = db_path.parent.exists()
    try:
        with Store(db_path) as store:
            import_export(store, export)
    except BaseException:
        if not existed:  # the connection is closed: no SQLite handle on these files any more
            for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm"), lock_path(db_path)):
                if p.exists():
                    p.unlink()
            if not folder_existed and not any(db_path.parent.iterdir()):
                db_path.parent.rmdir()
        raise
    return read


# ----------------------------------------------------------------------- import into scratch

IMPORTED_FROM = "importedFrom"
"""The key of an ``add`` row's refs that names the export file its text was imported from."""
SCRATCH = "scratch"


class RefusedFact(NamedTuple):
    """A fact of an import the admission check refused: its id in the file, the reason, and
    the rule that refused it (``FactRefused.rule``)."""

    id: str
    why: str
    rule: str = ""


@dataclass(frozen=True)
class ScratchImport:
    """What :func:`import_into_scratch` did: the facts it wrote (one version), and the
    imported texts it skipped because memory already held them (with the fact that does)."""

    file: str
    offered: int
    """Active facts in the export."""
    added: tuple[Fact, ...]
    skipped: tuple[tuple[str, str, str], ...]
    """``(imported text, id, text)`` of the fact already holding it; id and text are ``""``
    when the export repeats one of its own facts."""
    version: Version | None
    """The one version holding every added fact (None: nothing was added)."""
    refused: tuple[RefusedFact, ...] = ()
    """The facts the admission check refused (a secret, a fragment): their id in the file, why
    and the rule; their texts are not repeated here."""

    def message(self) -> str:
        said = (f"Imported {len(self.added)} of the {self.offered} active facts of {self.file} "
                f"into scratch")
        if self.version is not None:
            said += f" (version {self.version.id}; Ctrl+Z undoes it)"
        if self.skipped:
            n = len(self.skipped)
            said += (f"; skipped {n} {'duplicate' if n == 1 else 'duplicates'} of facts "
                     "already in memory")
        if self.refused:
            n = len(self.refused)
            said += (f"; refused {n} {'fact' if n == 1 else 'facts'} that may not enter memory "
                     f"({'; '.join(f'{r.id}: {r.why}' for r in self.refused[:3])}"
                     f"{'; …' if n > 3 else ''})")
        return said

    def skipped_lines(self) -> list[str]:
        """One line per skipped text: what it is, and which fact already holds it."""
        out = []
        for text, held_id, held_text in self.skipped:
            if not held_id:
                out.append(f"{text} (repeated in the file)")
            elif held_text == text:
                out.append(f"{text} ({held_id})")
            else:
                out.append(f"{text} (held by {held_id}: {held_text})")
        return out


def _label(name: str, n: int) -> str:
    short = name if len(name) <= 120 else name[:117] + "…"
    return f"import:{n} {'fact' if n == 1 else 'facts'} from {short}"


def import_into_scratch(
    store: Store, export: MemoryExport, *, name: str, threshold: float = DEFAULT_THRESHOLD
) -> ScratchImport:
    """Add the active facts of a checked ``export`` to ``store``'s scratch block, as the
    person's own edits: one audited ``add`` decided by ``you`` per fact (text and category
    kept; its refs name the file, so the traceability sweep and the re-audit read it as
    "imported from <name> on <date>"), all in one version (``import:…``) that undo takes back
    whole. A fact that memory already holds (the dedupe gate's rule, meaning guards included;
    ``threshold`` is the policy's similarity) or that the file repeats is skipped and counted.
    Works on an empty store too. One transaction: a failure writes nothing. A fact the
    admission check of this door refuses (a secret, a fragment) is not written and is counted
    in :attr:`ScratchImport.refused`."""
    refused: list[RefusedFact] = []
    texts: list[tuple[str, str]] = []
    for f in export.facts:
        if not f.current.active:
            continue
        why = admission.problem(f.current.text, Door.IMPORT_SCRATCH)
        if why is None:
            texts.append((f.current.text, f.current.category))
        else:
            refused.append(RefusedFact(f.id, why.message, why.rule))
    offered = len(texts) + len(refused)
    with store.transaction():
        held = held_by(texts, store.active_facts(), threshold=threshold, now=store.now())
        skipped: list[tuple[str, str, str]] = []
        keep: list[tuple[str, str]] = []
        for (text, category), by in zip(texts, held, strict=True):
            if by is None:
                keep.append((text, category))
            elif isinstance(by, Fact):
                skipped.append((text, by.id, by.text))
            else:
                skipped.append((text, "", ""))
        if not keep:
            return ScratchImport(name, offered, (), tuple(skipped), None, tuple(refused))
        latest = store.latest_version()
        seq = (latest.seq if latest is not None else 0) + 1
        added = [store.append(SCRATCH, FactDraft(text, category), door=Door.IMPORT_SCRATCH)
                 for text, category in keep]
        store.record_mutations(
            [mutations.to_row(mutations.Add(
                target=f.id, text=f.text, block=SCRATCH, category=f.category,
                reason=f"imported by you from {name}", extra={IMPORTED_FROM: name}))
             for f in added], seq=seq, sleep_id=None)
        version = store.snapshot(_label(name, len(added)))
        if version.seq != seq:  # the audit rows must sit at the version they made
            raise InvalidInput(f"import into scratch: version {version.seq} is not {seq}")
    return ScratchImport(name, offered, tuple(added), tuple(skipped), version, tuple(refused))


def import_file_into_scratch(
    path: Path, store: Store, *, threshold: float = DEFAULT_THRESHOLD
) -> ScratchImport:
    """Check the export at ``path``, JSON or Markdown (a hostile or foreign file is refused as
    by :func:`import_file`, nothing written), then :func:`import_into_scratch` its facts. The
    memory keeps its own policy (the file's is not taken: only its facts come in)."""
    export = read_export(path)
    return import_into_scratch(store, export, name=path.name, threshold=threshold)
