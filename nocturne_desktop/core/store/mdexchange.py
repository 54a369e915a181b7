"""The Markdown export a person reads, and the reader that imports it back (S-EXP-1).

The file lists the active facts by block, each on one line with its category, the day it was
written, the day it last changed and its pin; then the forgotten ones (with the block they were
in); then the retention policy the memory ran under::

    - The user lives in Lisbon. — *identity · since 2023-11-14 · pinned*

A fact's text is plain Markdown: a character is escaped only where Markdown would read it as
syntax (:func:`escape`): ``*`` and ``[`` always, ``_`` unless inside a word, backticks and
``~`` when there are two to pair, ``&`` where it would spell an entity, ``<`` where it would
open a tag, ``#``, ``>``, ``-``, ``+`` and ``1.`` only at the start, a backslash only before
punctuation. So "Lisbon." stays "Lisbon." and "*bold* <b>" shows as typed.

:func:`parse_markdown` reads exactly that shape (any file an older Nocturne wrote too: every
backslash escape is undone), as hostile input: a bounded read of a regular file, at most
:data:`MAX_MARKDOWN_FACTS` fact lines, every line one the export writes (else the line is
named), every text through the admission check of the import door, and then the same checks
as a JSON export (:func:`.exchange.check_export`). Its facts arrive as the person's own import:
version 1 adds them all (an audited ``add`` per fact, "imported from <file>"), version 2 pins
and forgets what the file shows pinned and forgotten.

What Markdown does not carry (the JSON does): the earlier values of a fact and the versions,
the sleeps and the audit log, the conversations, a fact's importance and recalls, its source
turn, what superseded it, its id, the time of day of its dates, and line breaks or runs of
spaces inside a text (each becomes one space).
"""

from __future__ import annotations

import datetime
import json
import re
import string
import time
from dataclasses import dataclass
from typing import Any

from nocturne_desktop.core import mutations
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.limits import MAX_TEXT_CHARS
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import SCHEMA_VERSION, Store
from nocturne_desktop.core.store.exchange import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    IMPORTED_FROM,
    FactExport,
    FactValue,
    ImportRefused,
    MemoryExport,
    MutationExport,
    VersionExport,
    check_export,
)
from nocturne_desktop.core.store.memorypolicy import (
    checked_policy,
    memory_policy,
    number,
    policy_json,
)
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact

__all__ = [
    "MAX_MARKDOWN_BYTES",
    "MAX_MARKDOWN_FACTS",
    "escape",
    "export_markdown",
    "looks_like_markdown",
    "one_line",
    "parse_markdown",
    "unescape",
]

MAX_MARKDOWN_BYTES = 32 * 2**20
"""Largest Markdown file an import reads (32 MiB)."""
MAX_MARKDOWN_FACTS = 50_000
"""Most fact lines a Markdown import reads (the default policy keeps 2,000 active facts; an
import holds about 12 KB of Python objects per fact at its peak, so 50,000 cost some 600 MB)."""

TITLE = "# Nocturne memory — exported "
FORGOTTEN = "Forgotten"
POLICY = "Retention policy"

# -------------------------------------------------------------------------------- escaping

_SPACES = re.compile(r"[ \t\r\n]+")
_PUNCT = frozenset(string.punctuation)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{0,47});")
_TAG = re.compile(r"<[A-Za-z/!?]")
_BLOCK_START = re.compile(r"(#{1,6}|[-+]|[0-9]{1,9}[.)])(?= |$)")
_UNESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def one_line(text: str) -> str:
    """``text`` on one line: each run of spaces, tabs and line breaks one space, none at the ends."""
    return _SPACES.sub(" ", text).strip(" ")


def escape(text: str) -> str:
    """``text`` (on one line, :func:`one_line`) as Markdown that shows exactly it, with a
    backslash only where Markdown would otherwise read syntax (see the module's docstring).
    :func:`unescape` gives the line back."""
    line = one_line(text)
    n = len(line)
    pair_ticks, pair_tildes = line.count("`") > 1, line.count("~") > 1
    entities = {m.start() for m in _ENTITY.finditer(line)}
    tags = {m.start() for m in _TAG.finditer(line)}
    out: list[str] = []
    lead = _BLOCK_START.match(line)
    i = 0
    if line.startswith(">"):
        out.append("\\>")
        i = 1
    elif lead is not None:  # a heading, a list item or an ordered list item inside the item
        marker = lead.group(1)
        out.append(f"{marker[:-1]}\\{marker[-1]}" if marker[-1] in ".)" else f"\\{marker}")
        i = len(marker)
    while i < n:
        ch = line[i]
        if ch == "_":  # a run inside a word (snake_case) can neither open nor close emphasis
            j = i
            while j < n and line[j] == "_":
                j += 1
            inside = i > 0 and j < n and line[i - 1].isalnum() and line[j].isalnum()
            out.append(line[i:j] if inside else "\\_" * (j - i))
            i = j
            continue
        if ch == "\\":
            escaped = i + 1 < n and line[i + 1] in _PUNCT
        elif ch in "*[":
            escaped = True
        elif ch == "`":
            escaped = pair_ticks
        elif ch == "~":
            escaped = pair_tildes
        elif ch == "&":
            escaped = i in entities
        elif ch == "<":
            escaped = i in tags
        else:
            escaped = False
        out.append("\\" + ch if escaped else ch)
        i += 1
    return "".join(out)


def unescape(markdown: str) -> str:
    """Undo Markdown's backslash escapes (a backslash before ASCII punctuation); nothing else is
    read as markup."""
    return _UNESCAPE.sub(r"\1", markdown)


# --------------------------------------------------------------------------------- writing


def _day(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def policy_lines(policy: RetentionPolicy) -> list[str]:
    """The policy as the export lists it (and :func:`parse_markdown` reads it)."""
    return [
        f"- duplicates at similarity ≥ {number(policy.similarity_threshold)}",
        f"- stale after {number(policy.stale_after_days)} days",
        f"- at most {policy.max_active_facts} active facts",
        f"- stale facts below salience {number(policy.forget_below)} forgotten",
        f"- protected categories: {', '.join(policy.protected_categories) or 'none'}",
    ]


def export_markdown(store: Store, *, now: float | None = None,
                    policy: RetentionPolicy | None = None) -> str:
    """The readable export: the active facts by block (with category, days and pins), then
    the forgotten ones, then the retention policy (``policy``, else the one the memory carries;
    no section when neither is known)."""
    at = store.now() if now is None else now
    policy = policy if policy is not None else memory_policy(store)
    facts = store.all_facts()
    active = [f for f in facts if f.active]
    gone = [f for f in facts if not f.active]
    lines = [f"{TITLE}{_day(at)}", "",
             f"{len(active)} active {'fact' if len(active) == 1 else 'facts'}, "
             f"{len(gone)} forgotten, {_count(len(store.versions()), 'version')}, "
             f"{_count(len(store.conversations()), 'conversation')}.", ""]
    for block in BLOCKS:
        lines += [f"## {block.capitalize()}", ""]
        mine = [f for f in active if f.block == block]
        for f in mine:
            pin = " · pinned" if f.pinned else ""
            since, changed = _day(f.created_at), _day(f.updated_at)
            more = f" · changed {changed}" if changed != since else ""
            lines.append(f"- {escape(f.text)} — *{f.category} · since {since}{more}{pin}*")
        lines += [] if mine else ["(empty)"]
        lines.append("")
    lines += [f"## {FORGOTTEN}", ""]
    lines += [f"- {escape(f.text)} — *{f.category} · was in {f.block} · since "
              f"{_day(f.created_at)} · forgotten {_day(f.updated_at)}*" for f in gone] or ["(nothing)"]
    lines.append("")
    if policy is not None:
        lines += [f"## {POLICY}", "", *policy_lines(policy), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------- reading

_DATE = r"(\d{4}-\d{2}-\d{2})"
_FACT = re.compile(r"- (?P<text>.*?\S) — \*(?P<meta>[^*]*)\*")
_ACTIVE = re.compile(rf"(?P<category>[a-z]+) · since {_DATE}(?: · changed {_DATE})?(?P<pin> · pinned)?")
_GONE = re.compile(rf"(?P<category>[a-z]+) · was in (?P<block>[a-z]+)(?: · since {_DATE})? · "
                   rf"forgotten {_DATE}")
_NUM = r"([0-9]{1,12}(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?)"
_POLICY_LINES: dict[str, re.Pattern[str]] = {
    "similarity_threshold": re.compile(rf"- duplicates at similarity ≥ {_NUM}"),
    "stale_after_days": re.compile(rf"- stale after {_NUM} days?"),
    "max_active_facts": re.compile(r"- at most ([0-9]{1,9}) active facts?"),
    "forget_below": re.compile(rf"- stale facts below salience {_NUM} forgotten"),
    "protected_categories": re.compile(r"- protected categories: ([a-z, ]{0,200})"),
}
_SUMMARY = re.compile(r"[0-9,]{1,15} active facts?, [0-9,]{1,15} forgotten, [0-9,]{1,15} "
                      r"versions?, [0-9,]{1,15} conversations?\.")
_LONGEST_LINE = 2 * MAX_TEXT_CHARS + 200
"""A fact line's text may be escaped to twice its length; the line adds its marks."""


@dataclass(frozen=True)
class _Line:
    n: int
    block: str
    text: str
    category: str
    since: float
    changed: float
    pinned: bool
    forgotten: float | None


def looks_like_markdown(raw: bytes) -> bool:
    """Whether ``raw`` starts as a Markdown export does (``#``; no JSON starts so)."""
    return raw[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"#"


class _Reader:
    """One pass over the lines; :class:`ImportRefused` naming the line at the first problem."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.facts: list[_Line] = []
        self.policy: dict[str, Any] = {}
        self.section = ""
        self.seen: set[str] = set()

    def refuse(self, n: int, why: str, rule: str = "") -> ImportRefused:
        return ImportRefused(f"{self.name} line {n}: {why}; nothing was imported", rule=rule)

    def day(self, n: int, text: str) -> float:
        try:
            d = datetime.date.fromisoformat(text)
        except ValueError:
            raise self.refuse(n, f"{text} is not a day") from None
        if not 1970 <= d.year <= 2285:
            raise self.refuse(n, f"{text} is not a day between 1970 and 2285")
        return datetime.datetime(d.year, d.month, d.day, tzinfo=datetime.UTC).timestamp()

    def heading(self, n: int, title: str) -> None:
        wanted = {b.capitalize(): b for b in BLOCKS} | {FORGOTTEN: FORGOTTEN, POLICY: POLICY}
        section = wanted.get(title.strip().capitalize())
        if section is None:
            raise self.refuse(n, f"“## {title.strip()[:60]}” is not a section the export writes "
                                 f"({', '.join(wanted)})")
        if section in self.seen:
            raise self.refuse(n, f"the section “{title.strip()}” comes twice")
        self.seen.add(section)
        self.section = section

    def line(self, n: int, line: str) -> None:
        if self.section == POLICY:
            self.policy_line(n, line)
            return
        if line == ("(nothing)" if self.section == FORGOTTEN else "(empty)"):
            return
        if len(line) > _LONGEST_LINE:
            raise self.refuse(n, f"the line is {len(line):,} characters; a fact is at most "
                                 f"{MAX_TEXT_CHARS:,}")
        m = _FACT.fullmatch(line)
        if m is None:
            raise self.refuse(n, "not a fact line as the export writes one "
                                 "(“- text — *category · since YYYY-MM-DD*”)")
        text = unescape(m.group("text"))
        refusal = admission.problem(text, Door.IMPORT, what="its text")
        if refusal is not None:
            raise self.refuse(n, refusal.message, refusal.rule)
        meta = m.group("meta")
        if self.section == FORGOTTEN:
            g = _GONE.fullmatch(meta)
            if g is None:
                raise self.refuse(n, f"“{meta[:80]}” is not “category · was in block · since "
                                     "YYYY-MM-DD · forgotten YYYY-MM-DD”")
            category, block = g.group("category"), g.group("block")
            gone = self.day(n, g.group(4))
            since = gone if g.group(3) is None else self.day(n, g.group(3))
            changed, pinned, forgotten = since, False, gone
        else:
            a = _ACTIVE.fullmatch(meta)
            if a is None:
                raise self.refuse(n, f"“{meta[:80]}” is not “category · since YYYY-MM-DD"
                                     "[ · changed YYYY-MM-DD][ · pinned]”")
            category, block = a.group("category"), self.section
            since = self.day(n, a.group(2))
            changed = since if a.group(3) is None else self.day(n, a.group(3))
            pinned, forgotten = a.group("pin") is not None, None
        if category not in CATEGORIES:
            raise self.refuse(n, f"{category!r} is not a category ({', '.join(CATEGORIES)})")
        if block not in BLOCKS:
            raise self.refuse(n, f"{block!r} is not a block ({', '.join(BLOCKS)})")
        self.facts.append(_Line(n, block, text, category, since, changed, pinned, forgotten))

    def policy_line(self, n: int, line: str) -> None:
        for key, pattern in _POLICY_LINES.items():
            m = pattern.fullmatch(line)
            if m is None:
                continue
            if key in self.policy:
                raise self.refuse(n, "the retention policy names this rule twice")
            value = m.group(1)
            self.policy[key] = (
                [] if value.strip() == "none" else [c.strip() for c in value.split(",")]
                if key == "protected_categories" else
                int(value) if key == "max_active_facts" else float(value))
            return
        raise self.refuse(n, "not a rule of the retention policy as the export writes it")

    def checked_policy(self) -> RetentionPolicy | None:
        if POLICY not in self.seen:
            return None
        missing = [k for k in _POLICY_LINES if k not in self.policy]
        if missing:
            raise ImportRefused(f"{self.name}: the retention policy lacks "
                                f"{', '.join(missing)}; nothing was imported")
        try:
            return checked_policy(self.policy, "its retention policy")
        except InvalidInput as exc:
            raise ImportRefused(f"{self.name}: {exc}; nothing was imported") from None


def parse_markdown(raw: bytes, name: str = "the file", *, file: str | None = None,
                   now: float | None = None) -> MemoryExport:
    """Read the bytes of a Markdown export as a checked :class:`MemoryExport` (see the module's
    docstring), or :class:`ImportRefused` in one sentence. ``file`` names the source in the
    audit rows (default ``name``); ``now`` is when the facts arrive (default: now)."""
    if len(raw) > MAX_MARKDOWN_BYTES:
        raise ImportRefused(f"{name} is larger than {MAX_MARKDOWN_BYTES // 2**20} MiB, more "
                            "than any Markdown export; it was not read")
    lines_of_facts = raw.count(b"\n- ")
    if lines_of_facts > MAX_MARKDOWN_FACTS + 10:  # before a string is made of it
        raise ImportRefused(f"{name} holds {lines_of_facts:,} list lines; a Markdown import "
                            f"reads at most {MAX_MARKDOWN_FACTS:,} facts")
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{name} is not UTF-8 text (byte {exc.start}): not a Nocturne "
                            "Markdown export") from None
    if "\x00" in text:
        raise ImportRefused(f"{name} holds a NUL byte: not a Nocturne Markdown export")
    reader = _Reader(name)
    exported: float | None = None
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if exported is None:
            if not line.strip():
                continue
            if not line.startswith(TITLE):
                raise ImportRefused(f"{name} is not a Nocturne Markdown export (its first line "
                                    f"is not “{TITLE}YYYY-MM-DD”)")
            exported = reader.day(n, line.removeprefix(TITLE).strip())
            continue
        if line.startswith("## "):
            reader.heading(n, line[3:])
        elif line.strip() and reader.section:
            reader.line(n, line.rstrip(" "))
        elif line.strip() and not _SUMMARY.fullmatch(line.strip()):  # nothing is skipped unread
            raise reader.refuse(n, "before the first section the export writes only its counts "
                                   "(“3 active facts, 1 forgotten, 2 versions, 1 conversation.”)")
        if len(reader.facts) > MAX_MARKDOWN_FACTS:
            raise reader.refuse(n, f"a Markdown import reads at most {MAX_MARKDOWN_FACTS:,} facts")
    if exported is None:
        raise ImportRefused(f"{name} is empty: not a Nocturne Markdown export")
    export = _as_export(reader.facts, reader.checked_policy(), exported,
                        file=file or name, now=time.time() if now is None else now)
    return check_export(export, name, texts_admitted=True)  # each line's text was checked


def _short(file: str) -> str:
    return file if len(file) <= 120 else file[:117] + "…"


def _as_export(lines: list[_Line], policy: RetentionPolicy | None, exported: float, *,
               file: str, now: float) -> MemoryExport:
    """The facts read as an export of their own: version 1 adds every fact (the person's import,
    one ``add`` each), version 2 pins and forgets what the file shows pinned and forgotten."""
    facts: list[FactExport] = []
    rows: list[tuple[int, mutations.Change]] = []
    for k, ln in enumerate(lines, start=1):
        fid = f"m_{k}"
        first = Fact(fid, ln.block, ln.text, ln.category, None, ln.since,
                     ln.since if ln.forgotten is not None else ln.changed)
        rows.append((1, mutations.Add(target=fid, text=ln.text, block=ln.block,
                                      category=ln.category, reason=f"imported by you from {file}",
                                      extra={IMPORTED_FROM: file})))
        value = FactValue(fromSeq=1, block=ln.block, text=ln.text, category=ln.category,
                          sourceTurn=None, createdAt=first.created_at, updatedAt=first.updated_at,
                          active=True, pinned=False)
        if ln.forgotten is None and not ln.pinned:
            facts.append(FactExport(id=fid, current=value, history=[]))
            continue
        if ln.forgotten is not None:
            rows.append((2, mutations.Forget(
                pass_name=mutations.HAND_PASS, decided_by=mutations.DecidedBy.YOU, target=fid,
                reason=f"forgotten before the export, as in {file}", text=ln.text,
                extra={"before": mutations.fact_value(first)})))
            later = value.model_copy(update={"fromSeq": 2, "active": False,
                                             "updatedAt": ln.forgotten})
        else:
            rows.append((2, mutations.Pin(target=fid, pinned=True,
                                          before=mutations.fact_value(first),
                                          reason=f"pinned as in {file}")))
            later = value.model_copy(update={"fromSeq": 2, "pinned": True})
        facts.append(FactExport(id=fid, current=later,
                                history=[value.model_copy(update={"toSeq": 2})]))
    versions = []
    if lines:
        versions.append(VersionExport(seq=1, label=f"import:{_count(len(lines), 'fact')} from "
                                      f"{_short(file)}", createdAt=now, activeCount=len(lines),
                                      sleepId=None))
    pins = sum(1 for ln in lines if ln.pinned)
    gone = sum(1 for ln in lines if ln.forgotten is not None)
    if pins or gone:
        said = " and ".join(w for w in (f"{pins} pinned" if pins else "",
                                        f"{gone} forgotten" if gone else "") if w)
        versions.append(VersionExport(seq=2, label=f"{said} as in {_short(file)}", createdAt=now,
                                      activeCount=len(lines) - gone, sleepId=None))
    audit = []
    for i, (seq, change) in enumerate(rows, start=1):
        m = mutations.to_row(change)
        audit.append(MutationExport(id=i, seq=seq, sleepId=None, passName=m.pass_name,
                                    kind=m.kind, itemId=m.item_id, accepted=True, reason=m.reason,
                                    rejectionReason=None, policy=m.policy,
                                    decidedBy=m.decided_by, refs=m.refs, createdAt=now))
    return MemoryExport(
        format=EXPORT_FORMAT, exportVersion=EXPORT_VERSION, storeSchema=SCHEMA_VERSION,
        exportedAt=exported,
        policy=None if policy is None else json.loads(policy_json(policy)),
        nextItem=len(lines) + 1, facts=facts, versions=versions, sleeps=[], mutations=audit,
        conversations=[], strengths=[], meta={})
