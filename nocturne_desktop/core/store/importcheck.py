"""An import file is hostile input (S-DOOR-3): the checks :mod:`.exchange` runs on it.

Before the JSON is parsed, :func:`prescan` counts its structure bytes (no copy of the file is
made) and refuses a document denser in
objects, arrays, values or strings than any export is (a real export has about one container
per 150 bytes): a file of nested empty objects would otherwise cost Python objects of some 25
times its size before a single rule looked at it. :func:`loads` parses with every number
bounded (no NaN or Infinity, no integer of more than 19 digits). :func:`value_problems` then
checks every value against the live limits: times finite and in a sane range, ids and counts
in range, reasons, labels, meta and audit details bounded, no control characters, fact texts
through the admission check of the import door, references that resolve (supersedes, source
turns), no supersede cycle.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.limits import MAX_ID_CHARS, MAX_REASON_CHARS

if TYPE_CHECKING:
    from nocturne_desktop.core.store.exchange import MemoryExport

MAX_TIME = 10_000_000_000.0
"""Latest time an export may hold (the year 2286); the earliest is 0 (1970)."""
MAX_INT = 2**62
"""Largest id or count an export may hold (SQLite's integers are 64-bit)."""
MAX_INT_DIGITS = 19
MAX_REJECTION_CHARS = 4000
MAX_NAME_CHARS = 64
"""A pass name, kind, decided-by, policy or sleep status."""
MAX_META_KEY_CHARS = 200
MAX_META_VALUE_CHARS = 10_000
MAX_BLOB_CHARS = 256 * 1024
"""Largest audit refs, sleep policy or summary, as JSON."""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def prescan(raw: bytes) -> str | None:
    """Why ``raw`` is denser in structure than an export can be, or None. It only counts
    bytes (``{`` and ``[``, ``,`` and ``:``, quotes; those inside strings too, which only makes
    it stricter), so it costs no memory and one pass per byte kind."""
    size = len(raw)
    containers = raw.count(b"{") + raw.count(b"[")
    values = raw.count(b",") + raw.count(b":")
    strings = raw.count(b'"') // 2
    for what, found, limit in (
        ("objects and arrays", containers, 1000 + size // 40),
        ("values", values, 1000 + size // 6),
        ("strings", strings, 1000 + size // 8),
    ):
        if found > limit:
            return (f"holds {found:,} {what} in {size:,} bytes, far more than any export "
                    "(a hostile or foreign file); it was not parsed")
    return None


def _bounded_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits):,} digits")
    return int(text)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name}, which is not a number an export holds")


def loads(text: str) -> Any:
    """``json.loads`` with every integer within 19 digits and no NaN/Infinity (ValueError)."""
    return json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)


def _time_problem(value: float | None, what: str) -> str | None:
    if value is None:
        return None
    if not (math.isfinite(value) and 0 <= value <= MAX_TIME):
        return f"{what} is {value!r}, not a time between 1970 and 2286"
    return None


def _int_problem(value: int | None, what: str, low: int = 0) -> str | None:
    if value is None:
        return None
    if not low <= value <= MAX_INT:
        return f"{what} is {value:,}, outside {low}..2^62"
    return None


def _str_problem(value: str | None, what: str, limit: int) -> str | None:
    if value is None:
        return None
    if len(value) > limit:
        return f"{what} is {len(value):,} characters; the limit is {limit:,}"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"{what} contains a control character (U+{ord(bad.group()):04X})"
    return None


def _blob_problem(value: Any, what: str) -> str | None:
    size = len(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))
    if size > MAX_BLOB_CHARS:
        return f"{what} is {size:,} characters of JSON; the limit is {MAX_BLOB_CHARS:,}"
    return None


class RuleProblem(str):
    """A problem the admission check found in a fact's text, with the rule that found it."""

    rule: str

    def __new__(cls, message: str, rule: str) -> RuleProblem:
        made = super().__new__(cls, message)
        made.rule = rule
        return made


def value_problems(e: MemoryExport, *, texts_admitted: bool = False) -> Iterator[str]:
    """Every value of ``e`` against the live limits; yields what is wrong (the first is
    reported). ``texts_admitted``: the caller ran the admission check on every fact text
    already (the Markdown reader, which names the line), so it is not run twice."""
    yield from filter(None, (_time_problem(e.exportedAt, "exportedAt"),
                             _int_problem(e.nextItem, "nextItem", 1)))
    turn_ids = {t.n for c in e.conversations for t in c.turns}
    seen_texts: set[str] = set()
    by: dict[str, str] = {}
    for f in e.facts:
        if len(f.id) > MAX_ID_CHARS:
            yield f"a fact id is {len(f.id):,} characters long"
            return
        for v in (*f.history, f.current):
            for problem in (
                _int_problem(v.fromSeq, f"a version of {f.id}", 1),
                _int_problem(v.toSeq, f"a version of {f.id}", 1),
                _int_problem(v.sourceTurn, f"the source turn of {f.id}", 1),
                _time_problem(v.createdAt, f"the creation time of {f.id}"),
                _time_problem(v.updatedAt, f"the change time of {f.id}"),
                _time_problem(v.validUntil, f"the validity end of {f.id}"),
            ):
                if problem:
                    yield problem
            if v.sourceTurn is not None and turn_ids and v.sourceTurn not in turn_ids:
                yield f"{f.id} names turn {v.sourceTurn} as its source, which is not in the file"
            if not texts_admitted and v.text not in seen_texts:
                refused = admission.problem(v.text, Door.IMPORT, what=f"the text of {f.id}")
                if refused is not None:
                    yield RuleProblem(refused.message, refused.rule)
                seen_texts.add(v.text)
        if f.current.supersededBy is not None:
            by[f.id] = f.current.supersededBy
            if f.current.supersededBy == f.id:
                yield f"{f.id} is superseded by itself"
    for start in by:
        hops, at = 0, start
        while at in by and hops <= len(by):
            at, hops = by[at], hops + 1
            if at == start:
                yield f"{start} is in a supersede cycle (each fact superseded by the next)"
                return
    for st in e.strengths:
        yield from filter(None, (_int_problem(st.uses, f"the recalls of {st.id}"),
                                 _time_problem(st.lastUsedAt, f"the last use of {st.id}")))
        if st.strength > MAX_INT:
            yield f"the strength of {st.id} is {st.strength!r}"
    for ver in e.versions:
        yield from filter(None, (
            _int_problem(ver.seq, "a version number", 1),
            _int_problem(ver.activeCount, f"the fact count of version {ver.seq}"),
            _int_problem(ver.sleepId, f"the sleep of version {ver.seq}"),
            _time_problem(ver.createdAt, f"the time of version {ver.seq}"),
            _str_problem(ver.label, f"the label of version {ver.seq}", 200)))
    for s in e.sleeps:
        yield from filter(None, (
            _int_problem(s.id, "a sleep id"),
            _time_problem(s.startedAt, f"the start of sleep {s.id}"),
            _time_problem(s.finishedAt, f"the end of sleep {s.id}"),
            _str_problem(s.status, f"the status of sleep {s.id}", MAX_NAME_CHARS),
            _blob_problem(s.policy, f"the policy of sleep {s.id}"),
            _blob_problem(s.summary, f"the summary of sleep {s.id}")))
    for m in e.mutations:
        yield from filter(None, (
            _int_problem(m.id, "an audit row id"),
            _int_problem(m.seq, f"the version of audit row {m.id}", 1),
            _int_problem(m.sleepId, f"the sleep of audit row {m.id}"),
            _time_problem(m.createdAt, f"the time of audit row {m.id}"),
            _str_problem(m.passName, f"the pass of audit row {m.id}", MAX_NAME_CHARS),
            _str_problem(m.kind, f"the kind of audit row {m.id}", MAX_NAME_CHARS),
            _str_problem(m.decidedBy, f"the decider of audit row {m.id}", MAX_NAME_CHARS),
            _str_problem(m.policy, f"the policy of audit row {m.id}", MAX_NAME_CHARS),
            _str_problem(m.itemId, f"the fact of audit row {m.id}", MAX_ID_CHARS),
            _str_problem(m.reason, f"the reason of audit row {m.id}", MAX_REASON_CHARS),
            _str_problem(m.rejectionReason, f"the refusal of audit row {m.id}",
                         MAX_REJECTION_CHARS),
            _blob_problem(m.refs, f"the details of audit row {m.id}")))
    for c in e.conversations:
        yield from filter(None, (_int_problem(c.id, "a conversation id", 1),
                                 _time_problem(c.createdAt, f"the start of conversation {c.id}")))
        for t in c.turns:
            yield from filter(None, (_int_problem(t.n, "a turn number", 1),
                                     _time_problem(t.createdAt, f"the time of turn {t.n}"),
                                     _str_problem(t.text, f"turn {t.n}", 10**9)))
    for k, val in e.meta.items():
        yield from filter(None, (_str_problem(k, "a meta key", MAX_META_KEY_CHARS),
                                 _str_problem(val, f"meta {k[:40]!r}", MAX_META_VALUE_CHARS)))
