"""Remembering what matters: retention and retrieval over months of conversations, model-free.

    python -m bench.bench_memory [--data FILE | --locomo FILE] [--conversations N]
                                 [--policy NAME ...] [--cap N ...] [--cost] [--json]

Data: ``bench/data/memory_conversations.json`` (written by ``bench/data/make_memory_data.py``:
six people, 18–22 dated sessions each over about four months, every fact annotated, noise
turns labelled, 52 questions per conversation each naming its evidence turns), or the public
LoCoMo file (``--locomo locomo10.json``: ``conversation.session_N`` with
``session_N_date_time``, ``observation.session_N_observation`` facts with their dialogue ids,
``qa[].evidence``; not shipped here, its licence is non-commercial). LoCoMo has no noise labels,
so its noise column is empty.

The run, per conversation and policy, with no model at all:

1. **before**: every session's annotated facts are appended to scratch (dated at their session,
   through the store's clock) and, with no sleep, each question is put to the agent's prompt
   assembly (:func:`render_memory` at the default budget): a question is *recalled* when, for
   each of its evidence turns, a fact of that turn (or the fact it was merged or deduplicated
   into) is in the memory prompt;
2. **sleeping**: a fresh store gets the sessions one at a time, a rules-only sleep (``run_sleep``
   with no model, as ``nocturne sleep --engine-only``) the night after each, then one a week
   after the last session until every fact has been through 10 sleeps. A fact is *retained*
   after k sleeps when it (or what it was merged into) is still active right after the k-th
   sleep it has seen; a noise fact is *forgotten* when it is not;
3. **after**: the questions again, on the store at the end of step 2.

Prompt size is the whole system prompt the agent builds for the question (characters, and
tokens by the passes' estimate).

``--base-url URL [--model M]``: the turns go into the transcript and the real encoder (the
model proposes, the gate decides) writes the facts, which belong to the turn their
``source_turn`` names; sleeps ask the same model (``--rules-only-sleep``: rules only). The
figures then measure the encoder too.

Policies (:data:`POLICIES`; ``--cap``, ``--new-cap``, ``--floor``, ``--stale`` add variants):
the old default (cap 120, no salience floor, facts without importance: the article's salience),
the new default, the new default with a fifth of the importances misjudged or with none at all,
and no cap. The model-free run gives each fact the importance :func:`encoder_importance` (a
text rule written to the encoder's guide, never the noise label) stands in for the encoder with.

``--cost``: retrieval time per chat turn (the memory prompt for one question) on stores of 1k,
10k and 100k facts made from the data's facts, median and 95th percentile.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nocturne_desktop.core.chat.agent import MemoryView, render_memory, system_prompt
from nocturne_desktop.core.chat.encoder import Encoder
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.policy import DEFAULT_IMPORTANCE, RetentionPolicy
from nocturne_desktop.core.ports import ModelClient
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.sleep.passes.base import estimate_tokens
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.store.ranking import FUSION, Fusion
from nocturne_desktop.core.store.vectors import DEFAULT_EMBEDDER
from nocturne_desktop.core.types import CATEGORIES, FactDraft

DATA = Path(__file__).with_name("data") / "memory_conversations.json"
DAY = 86400.0
SLEEP_MARKS = (1, 3, 10)
DEFAULT_BUDGET = 6000
"""The agent's default ``budget_chars``."""

@dataclass(frozen=True)
class BenchPolicy:
    """A retention policy, and the importance the model-free run gives the facts it appends.

    ``importance``: ``"none"`` (no importance, as the encoder wrote facts before it proposed
    one: every fact gets its category's usual importance, and salience is the article's), or
    ``"heuristic"`` (:func:`encoder_importance`). ``noise``: that share of the facts gets a
    uniformly random importance 1–5 instead, standing for an encoder that misjudges."""

    policy: RetentionPolicy
    importance: str = "heuristic"
    noise: float = 0.0

    @property
    def mode(self) -> tuple[str, float]:
        return (self.importance, self.noise)


OLD_DEFAULT = RetentionPolicy(max_active_facts=120, forget_below=0.0, stale_after_days=30.0)
"""The defaults before importance and use (cap 120, no salience floor)."""

POLICIES: dict[str, BenchPolicy] = {
    "old-default": BenchPolicy(OLD_DEFAULT, "none"),
    "new-default": BenchPolicy(RetentionPolicy()),
    "new-default/no-importance": BenchPolicy(RetentionPolicy(), "none"),
    "new-default/20%-misjudged": BenchPolicy(RetentionPolicy(), "heuristic", 0.2),
    "no-cap": BenchPolicy(RetentionPolicy(max_active_facts=1_000_000, forget_below=0.0), "none"),
}
"""The policies the CLI runs by default. A plain :class:`RetentionPolicy` given to :func:`run`
runs as ``BenchPolicy(policy, "none")``."""

_ONE_DAY = re.compile(
    r"\b(?:on|by) (?:mon|tues|wednes|thurs|fri|satur|sun)day(?: (?:morning|evening|night))?\b"
    r"(?!\s+(?:mornings|evenings|nights)\b)|\b(?:today|tonight|this (?:morning|evening)|last night)\b",
    re.I,
)


def encoder_importance(text: str, category: str) -> int:
    """The importance the model-free run gives a fact, standing in for the encoder's proposal
    under its contract (:data:`~nocturne_desktop.core.chat.encoder.IMPORTANCE_GUIDE`): an event or
    context fact pinned to one day ("on Saturday", "this morning", "last night") is a passing
    remark, 1; anything else gets its category's usual importance.

    A bounded text rule, not the data's labels: it never reads a turn's kind. It is favourable
    to this data set, whose remark facts all name their day (the generator's templates do);
    ``BenchPolicy.noise`` and the ``none`` mode measure what a worse encoder would give."""
    if category in ("event", "context") and _ONE_DAY.search(text):
        return 1
    return DEFAULT_IMPORTANCE.get(category, 3)


# ------------------------------------------------------------------ data


@dataclass(frozen=True)
class BenchTurn:
    id: str
    facts: tuple[tuple[str, str], ...]
    """(text, category) per annotated fact."""
    noise: bool
    role: str = "user"
    """``user`` or ``assistant`` (LoCoMo: the first speaker is the user)."""
    text: str = ""


@dataclass(frozen=True)
class BenchSession:
    at: float
    turns: tuple[BenchTurn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    split: str = "words"
    """``words`` (shares a word with its evidence, maybe in another inflection), or the
    paraphrase split's ``dev`` and ``heldout`` parts (shares none)."""


@dataclass(frozen=True)
class Conversation:
    id: str
    sessions: tuple[BenchSession, ...]
    questions: tuple[Question, ...]
    paraphrases: tuple[Question, ...] = ()
    """The paraphrase split (this repository's data only)."""

    def turn_facts(self) -> dict[str, int]:
        return {t.id: len(t.facts) for s in self.sessions for t in s.turns}

    def answerable(self) -> list[Question]:
        """Questions with at least one evidence turn that holds a fact."""
        facts = self.turn_facts()
        return [q for q in self.questions if any(facts.get(e, 0) for e in q.evidence)]


class DataError(ValueError):
    """A benchmark file that does not have the expected layout."""


def _iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def load_bench(path: Path) -> list[Conversation]:
    """This repository's layout (``nocturne-memory-bench/1``)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or raw.get("format") != "nocturne-memory-bench/1":
        raise DataError(f"{path.name}: not a nocturne-memory-bench/1 file")
    out = []
    for c in raw["conversations"]:
        sessions = tuple(
            BenchSession(
                _iso(s["date"]),
                tuple(
                    BenchTurn(t["id"], tuple((f["text"], f["category"]) for f in t["facts"]),
                              t["kind"] in ("smalltalk", "remark"),
                              "assistant" if t["kind"] == "reply" else "user", t["text"])
                    for t in s["turns"]
                ),
            )
            for s in c["sessions"]
        )
        qs = tuple(Question(q["q"], tuple(q["evidence"])) for q in c["questions"])
        para = tuple(Question(q["q"], tuple(q["evidence"]), q["split"])
                     for q in c.get("paraphrases", ()))
        out.append(Conversation(str(c["id"]), sessions, qs, para))
    return out


_LOCOMO_DATE = re.compile(
    r"(?P<h>\d{1,2}):(?P<m>\d{2})\s*(?P<ap>am|pm)\s+on\s+"
    r"(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+),?\s+(?P<y>\d{4})",
    re.I,
)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], 1)}


def parse_locomo_date(text: str) -> float:
    """``1:56 pm on 8 May, 2023`` → a UTC timestamp."""
    m = _LOCOMO_DATE.search(text)
    if m is None:
        raise DataError(f"unreadable LoCoMo session date {text!r}")
    mon = _MONTHS.get(m["mon"].lower()) or next(
        (v for k, v in _MONTHS.items() if k.startswith(m["mon"].lower()[:3])), None)
    if mon is None:
        raise DataError(f"unreadable month in LoCoMo session date {text!r}")
    hour = int(m["h"]) % 12 + (12 if m["ap"].lower() == "pm" else 0)
    return datetime(int(m["y"]), mon, int(m["d"]), hour, int(m["m"]), tzinfo=UTC).timestamp()


_PREF = re.compile(r"\b(likes?|loves?|enjoys?|prefers?|favou?rite|hates?|dislikes?)\b", re.I)
_PLAN = re.compile(r"\b(plans?|planning|will|going to|wants? to|hopes? to|promised)\b", re.I)


def locomo_category(text: str) -> str:
    """LoCoMo's observations carry no category; a bounded guess (preferences, commitments, else
    event), so the protection rules apply to it as they would to an encoder's facts."""
    if _PREF.search(text):
        return "preferences"
    if _PLAN.search(text):
        return "commitments"
    return "event"


def _dia_ids(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in re.split(r"[;,\s]+", value) if v]
    if isinstance(value, list):
        return [x for v in value for x in _dia_ids(v)]
    return []


def load_locomo(path: Path) -> list[Conversation]:
    """The LoCoMo layout: a list of samples with ``conversation``, ``observation`` and ``qa``."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise DataError(f"{path.name}: expected a list of LoCoMo samples")
    out = []
    for i, sample in enumerate(raw):
        try:
            conv = sample["conversation"]
            obs = sample.get("observation", {})
            qa = sample.get("qa", [])
        except (KeyError, TypeError) as exc:
            raise DataError(f"{path.name}: sample {i} lacks {exc}") from exc
        nums = sorted(int(k.split("_")[1]) for k in conv
                      if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list))
        sessions = []
        for n in nums:
            facts_by_turn: dict[str, list[tuple[str, str]]] = {}
            per_speaker = obs.get(f"session_{n}_observation", {}) or {}
            for items in per_speaker.values():
                for item in items:
                    if not isinstance(item, list) or not item or not isinstance(item[0], str):
                        continue
                    ids = _dia_ids(item[1:]) or [f"D{n}:?"]
                    facts_by_turn.setdefault(ids[0], []).append(
                        (item[0], locomo_category(item[0])))
            turns = []
            for t in conv[f"session_{n}"]:
                t = t if isinstance(t, dict) else {}
                tid = str(t.get("dia_id", ""))
                role = "assistant" if t.get("speaker") == conv.get("speaker_b") else "user"
                turns.append(BenchTurn(tid, tuple(facts_by_turn.pop(tid, [])), False, role,
                                       str(t.get("text", ""))))
            turns += [BenchTurn(k, tuple(v), False) for k, v in facts_by_turn.items()]  # orphans
            date = conv.get(f"session_{n}_date_time")
            if not isinstance(date, str):
                raise DataError(f"{path.name}: sample {i} session {n} has no session_{n}_date_time")
            sessions.append(BenchSession(parse_locomo_date(date), tuple(turns)))
        qs = tuple(Question(str(q.get("question", "")), tuple(_dia_ids(q.get("evidence", []))))
                   for q in qa if isinstance(q, dict))
        out.append(Conversation(str(sample.get("sample_id", f"locomo-{i + 1}")), tuple(sessions), qs))
    return out


# ------------------------------------------------------------------ the run


@dataclass
class Loaded:
    """A store holding a conversation's facts, and which fact came from which turn."""

    store: Store
    clock: list[float]
    turn_ids: dict[str, list[str]] = field(default_factory=dict)
    noise_ids: list[str] = field(default_factory=list)
    evidence_ids: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    mode: tuple[str, float] = ("none", 0.0)
    conv_id: str = ""

    def importance(self, turn_id: str, k: int, text: str, category: str) -> int | None:
        kind, noise = self.mode
        if kind == "none":
            return None
        if noise and random.Random(f"{self.conv_id}/{turn_id}/{k}").random() < noise:
            return random.Random(f"{self.conv_id}/{turn_id}/{k}/level").randint(1, 5)
        return encoder_importance(text, category)


EMBEDDER: Any = DEFAULT_EMBEDDER
"""The embedding model the benchmark's stores use (the app's by default; bench_recall's
``--embedder`` measures another)."""


def _open(path: Path, at: float, mode: tuple[str, float] = ("none", 0.0), conv_id: str = "") -> Loaded:
    clock = [at]
    return Loaded(Store(path, clock=lambda: clock[0], embedder=EMBEDDER), clock, mode=mode,
                  conv_id=conv_id)


def _encode_session(
    ld: Loaded, session: BenchSession, evidence_turns: set[str], model: ModelClient
) -> list[str]:
    """The session's turns go into the transcript, and the real encoder (model + gate) writes
    the facts; each fact belongs to the bench turn its ``source_turn`` names."""
    by_n: dict[int, BenchTurn] = {}
    for k, turn in enumerate(session.turns):
        if turn.text.strip():
            ld.clock[0] = session.at + 60.0 * k
            by_n[ld.store.add_turn(turn.role, turn.text).n] = turn
    result = Encoder(ld.store, model).encode_new_turns()
    if result.error:
        print(f"bench_memory: encoder: {result.error}", file=sys.stderr)
    added: list[str] = []
    for f in ld.store.active_facts():
        source = by_n.get(f.source_turn) if f.source_turn is not None else None
        if source is None or f.id in ld.seen:
            continue
        ld.seen.add(f.id)
        added.append(f.id)
        ld.turn_ids.setdefault(source.id, []).append(f.id)
        if source.noise:
            ld.noise_ids.append(f.id)
        elif source.id in evidence_turns:
            ld.evidence_ids.append(f.id)
    return added


def _append_session(
    ld: Loaded, session: BenchSession, evidence_turns: set[str], model: ModelClient | None = None
) -> list[str]:
    if model is not None:
        return _encode_session(ld, session, evidence_turns, model)
    ld.clock[0] = session.at
    added: list[str] = []
    with ld.store.transaction():
        for k, turn in enumerate(session.turns):
            for j, (text, category) in enumerate(turn.facts):
                cat = category if category in CATEGORIES else "context"
                f = ld.store.append("scratch", FactDraft(text, cat, None, session.at + 60.0 * k,
                                                         ld.importance(turn.id, j, text, cat)))
                ld.turn_ids.setdefault(turn.id, []).append(f.id)
                added.append(f.id)
                if turn.noise:
                    ld.noise_ids.append(f.id)
                elif turn.id in evidence_turns:
                    ld.evidence_ids.append(f.id)
    return added


def representatives(store: Store) -> dict[str, str]:
    """Where each deduplicated or merged fact went (drop → keeper, merge source → target)."""
    went: dict[str, str] = {}
    for row in store.mutations(accepted=True):
        m = row.mutation
        if m.kind == "drop" and isinstance(m.refs.get("duplicateOf"), str):
            went[m.item_id] = m.refs["duplicateOf"]
        elif m.kind == "merge":
            for src in m.refs.get("fromIds", []) or []:
                if isinstance(src, str) and src != m.item_id:
                    went[src] = m.item_id
        elif m.kind == "restore":
            went.pop(m.item_id, None)
    return went


def alive(store: Store, ids: Iterable[str], went: dict[str, str]) -> set[str]:
    """The subset of ``ids`` still represented by an active fact."""
    active = {f.id for f in store.active_facts()}
    out = set()
    for i in ids:
        seen = set()
        cur = i
        while cur not in active and cur in went and cur not in seen:
            seen.add(cur)
            cur = went[cur]
        if cur in active:
            out.add(i)
    return out


@dataclass
class RecallFigures:
    questions: int = 0
    recalled: int = 0
    recalled_kept: int = 0
    """Recalled among the questions whose evidence is still in memory."""
    kept: int = 0
    prompt_chars: list[int] = field(default_factory=list)

    def add(self, other: RecallFigures) -> None:
        self.questions += other.questions
        self.recalled += other.recalled
        self.recalled_kept += other.recalled_kept
        self.kept += other.kept
        self.prompt_chars += other.prompt_chars


def recall(ld: Loaded, conv: Conversation, budget: int = DEFAULT_BUDGET, *,
           questions: Sequence[Question] | None = None, fusion: Fusion = FUSION) -> RecallFigures:
    """Recall of ``questions`` (default: the conversation's answerable word-sharing ones) on
    the store as it is, the prompt ranked with ``fusion``."""
    went = representatives(ld.store)
    active = {f.id for f in ld.store.active_facts()}

    def rep(i: str) -> str | None:
        seen = set()
        while i not in active and i in went and i not in seen:
            seen.add(i)
            i = went[i]
        return i if i in active else None

    fig = RecallFigures()
    for q in conv.answerable() if questions is None else questions:
        turns = [ld.turn_ids[e] for e in q.evidence if ld.turn_ids.get(e)]
        view: MemoryView = render_memory(ld.store, q.text, budget_chars=budget, fusion=fusion)
        shown = {f.id for f in view.shown}
        fig.prompt_chars.append(len(system_prompt(view)))
        fig.questions += 1
        reps = [{r for r in map(rep, ids) if r is not None} for ids in turns]
        kept = all(reps)
        hit = all(r & shown for r in reps)
        fig.kept += kept
        fig.recalled += hit
        fig.recalled_kept += hit and kept
    return fig


def _sleep(ld: Loaded, policy: RetentionPolicy, at: float, model: ModelClient | None) -> None:
    ld.clock[0] = at
    for ev in run_sleep(ld.store, model, policy, now=at):
        if ev.kind in ("sleep failed", "sleep cancelled"):
            raise RuntimeError(f"sleep ended with {ev.kind}: {ev.message}")


@dataclass
class PolicyFigures:
    policy: str
    evidence: int = 0
    noise: int = 0
    retained: dict[int, int] = field(default_factory=lambda: dict.fromkeys(SLEEP_MARKS, 0))
    forgotten: dict[int, int] = field(default_factory=lambda: dict.fromkeys(SLEEP_MARKS, 0))
    before: RecallFigures = field(default_factory=RecallFigures)
    after: RecallFigures = field(default_factory=RecallFigures)
    active_after: list[int] = field(default_factory=list)
    sleeps: int = 0
    seconds: float = 0.0

    def pct(self, n: int, d: int) -> float:
        return 100.0 * n / d if d else float("nan")

    def row(self) -> dict[str, Any]:
        def mean(xs: Sequence[int]) -> float:
            return statistics.fmean(xs) if xs else float("nan")

        return {
            "policy": self.policy,
            **{f"retained@{k}": self.pct(self.retained[k], self.evidence) for k in SLEEP_MARKS},
            **{f"noiseForgotten@{k}": self.pct(self.forgotten[k], self.noise) for k in SLEEP_MARKS},
            "recallBefore": self.pct(self.before.recalled, self.before.questions),
            "recallAfter": self.pct(self.after.recalled, self.after.questions),
            "recallAfterKept": self.pct(self.after.recalled_kept, self.after.kept),
            "promptCharsBefore": mean(self.before.prompt_chars),
            "promptCharsAfter": mean(self.after.prompt_chars),
            "promptTokensBefore": mean([estimate_tokens("x" * c) for c in self.before.prompt_chars]),
            "promptTokensAfter": mean([estimate_tokens("x" * c) for c in self.after.prompt_chars]),
            "activeAfter": mean(self.active_after),
            "evidenceFacts": self.evidence,
            "noiseFacts": self.noise,
            "questions": self.after.questions,
            "sleeps": self.sleeps,
            "seconds": self.seconds,
        }


def _count_sleep(ld: Loaded, fig: PolicyFigures, seen: dict[str, int]) -> None:
    """One more sleep for every fact in ``seen``; score those at a mark of :data:`SLEEP_MARKS`."""
    fig.sleeps += 1
    live = alive(ld.store, seen, representatives(ld.store))
    evidence, noise = set(ld.evidence_ids), set(ld.noise_ids)
    for i in list(seen):
        seen[i] += 1
        k = seen[i]
        if k in SLEEP_MARKS:
            if i in evidence:
                fig.retained[k] += i in live
            elif i in noise:
                fig.forgotten[k] += i not in live


def _bench_policy(p: RetentionPolicy | BenchPolicy) -> BenchPolicy:
    return p if isinstance(p, BenchPolicy) else BenchPolicy(p, "none")


def run_conversation(
    conv: Conversation,
    policies: dict[str, RetentionPolicy | BenchPolicy],
    workdir: Path,
    *,
    budget: int = DEFAULT_BUDGET,
    sessions: int | None = None,
    model: ModelClient | None = None,
    sleep_model: ModelClient | None = None,
) -> dict[str, PolicyFigures]:
    """Steps 1–3 of the module doc for one conversation, every policy. With ``model``, facts
    come from the encoder; sleeps use ``sleep_model`` (None: rules only)."""
    sess = conv.sessions[:sessions] if sessions else conv.sessions
    conv = Conversation(conv.id, sess, conv.questions)
    evidence_turns = {e for q in conv.answerable() for e in q.evidence}
    known = {t.id for s in sess for t in s.turns}
    conv = Conversation(conv.id, sess,
                        tuple(q for q in conv.questions if all(e in known for e in q.evidence)))
    # 1. before: everything appended, no sleep (the same for every policy of one importance).
    befores: dict[tuple[str, float], RecallFigures] = {}
    modes = list(dict.fromkeys(_bench_policy(p).mode for p in policies.values()))
    if model is not None:  # the encoder proposes the importance: one "before" serves them all
        modes = modes[:1]
    for k, mode in enumerate(modes):
        ld = _open(workdir / f"{conv.id}-before-{k}.db", sess[0].at, mode, conv.id)
        try:
            for s in sess:
                _append_session(ld, s, evidence_turns, model)
            befores[mode] = recall(ld, conv, budget)
        finally:
            ld.store.close()
    out = {}
    for n_policy, (name, given) in enumerate(policies.items()):
        bp = _bench_policy(given)
        policy = bp.policy
        t0 = time.perf_counter()
        fig = PolicyFigures(name, before=befores.get(bp.mode, befores[modes[0]]))
        ld = _open(workdir / f"{conv.id}-{n_policy}.db", sess[0].at, bp.mode, conv.id)
        try:
            seen: dict[str, int] = {}
            for n, s in enumerate(sess):
                for i in _append_session(ld, s, evidence_turns, model):
                    seen[i] = 0
                nxt = sess[n + 1].at if n + 1 < len(sess) else s.at + 7 * DAY
                _sleep(ld, policy, min(s.at + 0.3 * DAY, (s.at + nxt) / 2), sleep_model)
                _count_sleep(ld, fig, seen)
            at = ld.clock[0]
            while min(seen.values(), default=max(SLEEP_MARKS)) < max(SLEEP_MARKS):
                at += 7 * DAY
                _sleep(ld, policy, at, sleep_model)
                _count_sleep(ld, fig, seen)
            fig.evidence = len(ld.evidence_ids)
            fig.noise = len(ld.noise_ids)
            fig.after = recall(ld, conv, budget)
            fig.active_after.append(ld.store.active_count())
        finally:
            ld.store.close()
        fig.seconds = time.perf_counter() - t0
        out[name] = fig
    return out


def run(
    convs: Sequence[Conversation],
    policies: dict[str, RetentionPolicy | BenchPolicy],
    *,
    budget: int = DEFAULT_BUDGET,
    sessions: int | None = None,
    model: ModelClient | None = None,
    sleep_model: ModelClient | None = None,
) -> dict[str, PolicyFigures]:
    """Figures summed over every conversation, per policy."""
    totals = {name: PolicyFigures(name) for name in policies}
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-memory-") as tmp:
        for conv in convs:
            for name, fig in run_conversation(conv, policies, Path(tmp), budget=budget,
                                              sessions=sessions, model=model,
                                              sleep_model=sleep_model).items():
                t = totals[name]
                t.evidence += fig.evidence
                t.noise += fig.noise
                for k in SLEEP_MARKS:
                    t.retained[k] += fig.retained[k]
                    t.forgotten[k] += fig.forgotten[k]
                t.before.add(fig.before)
                t.after.add(fig.after)
                t.active_after += fig.active_after
                t.sleeps += fig.sleeps
                t.seconds += fig.seconds
    return totals


# ------------------------------------------------------------------ retrieval cost


HUMAN_FACTS = 100
"""Facts in the human block of the cost stores (carried whole in every prompt); the rest are
episodes and scratch."""


def retrieval_cost(convs: Sequence[Conversation],
                   sizes: Sequence[int | tuple[int, int]] = (1_000, 10_000, 100_000),
                   *, queries: int = 60, seed: int = 12,
                   fusions: dict[str, Fusion] | None = None,
                   store_dir: Path | None = None,
                   budgets: Sequence[int] = (DEFAULT_BUDGET,)) -> list[dict[str, Any]]:
    """Milliseconds to build the memory prompt for one question, on stores of ``sizes`` facts
    (the data's facts, copies varied by two random words, dated over a year, each with its
    :func:`encoder_importance`, as the encoder would store it), per fusion of ``fusions``
    (default: the default one) and memory budget of ``budgets`` (columns after the first
    budget are suffixed with it), all taking turns on each question so that a loaded machine
    weighs on them alike; the meaning list alone (``similar``) and the search panel's query
    (``search_all_ranked``). A size ``(n, active)``: ``n`` facts of which all but ``active``
    were forgotten (as in a memory that slept under a cap). ``…CpuMs``: the process's CPU
    time per turn (a loaded machine stretches wall time more). ``store_dir``: keep the stores
    there and reuse them on the next run (writing 100k facts takes minutes); ``load`` is the
    load average during the run."""
    fusions = fusions or {"fused": FUSION}
    pool = [(text, cat) for c in convs for s in c.sessions for t in s.turns for text, cat in t.facts]
    qs = [q.text for c in convs for q in (*c.questions, *c.paraphrases)]
    words = sorted({w for text, _ in pool for w in re.findall(r"[A-Za-z]{4,}", text)})
    out = []
    with tempfile.TemporaryDirectory(prefix="nocturne-bench-cost-") as tmp:
        folder = store_dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        now = 1_800_000_000.0
        for size in sizes:
            n, active = size if isinstance(size, tuple) else (size, size)
            name = f"cost-{n}" if active == n else f"cost-{n}-{active}"
            path = folder / f"{name}.db"
            write_s = float("nan")  # a kept store reused: not written on this run
            if path.exists():
                with Store(path) as kept:
                    reuse = kept.active_count() == active
                if not reuse:
                    for leftover in folder.glob(f"{name}.db*"):
                        leftover.unlink()
            if not path.exists():
                rng = random.Random(seed * 1_000_003 + n)
                with Store(path, clock=lambda: 1_800_000_000.0) as store:
                    t0 = time.perf_counter()
                    with store.transaction():
                        for i in range(n):
                            base, cat = pool[i % len(pool)]
                            text = base
                            # vary the copies so the index is not n/len(pool) rows deep (a
                            # variation the admission check refuses, "open with 49545" read as
                            # a door code, is drawn again)
                            while i >= len(pool) and (
                                    text == base or admission.problem(text, Door.STORE) is not None):
                                text = f"{base[:-1]} ({rng.choice(words)} {rng.choice(words)} {i})."
                            block = "human" if i < HUMAN_FACTS else rng.choice(("episodes", "scratch"))
                            store.append(block, FactDraft(text, cat, None,
                                                          now - rng.uniform(0, 365) * DAY,
                                                          encoder_importance(text, cat)))
                        for i in rng.sample(range(HUMAN_FACTS, n), n - active):
                            store.forget(f"m_{i + 1}")
                    write_s = time.perf_counter() - t0
            with Store(path, clock=lambda: 1_800_000_000.0) as store:
                rng = random.Random(seed + n)
                sample = rng.sample(qs, min(queries, len(qs)))
                render_memory(store, sample[0])  # warm the page cache and the vector matrix
                load0 = os.getloadavg()[0]
                row: dict[str, Any] = {"facts": n, "active": active, "writeS": write_s}
                runs = {(f"{name}{'' if b == budgets[0] else b}"): (fusion, b)
                        for b in budgets for name, fusion in fusions.items()}
                times: dict[str, list[float]] = {name: [] for name in (*runs, "meaning", "panel")}
                cpu: dict[str, list[float]] = {name: [] for name in (*runs, "meaning", "panel")}
                chars: list[int] = []
                for q in sample:
                    for name, (fusion, budget) in runs.items():
                        t0, c0 = time.perf_counter(), time.process_time()
                        view = render_memory(store, q, fusion=fusion, budget_chars=budget)
                        times[name].append((time.perf_counter() - t0) * 1000.0)
                        cpu[name].append((time.process_time() - c0) * 1000.0)
                        if name == next(iter(runs)):
                            chars.append(len(system_prompt(view)))
                    t0, c0 = time.perf_counter(), time.process_time()
                    store.similar(q, limit=400, exclude_blocks=("persona", "human"))
                    times["meaning"].append((time.perf_counter() - t0) * 1000.0)
                    cpu["meaning"].append((time.process_time() - c0) * 1000.0)
                    t0, c0 = time.perf_counter(), time.process_time()
                    store.search_all_ranked(q, limit=50)
                    times["panel"].append((time.perf_counter() - t0) * 1000.0)
                    cpu["panel"].append((time.process_time() - c0) * 1000.0)
                for name in runs:
                    ts = sorted(times[name])
                    row[f"{name}MedianMs"] = statistics.median(ts)
                    row[f"{name}P95Ms"] = ts[int(0.95 * (len(ts) - 1))]
                    row[f"{name}CpuMs"] = statistics.median(cpu[name])
                row["promptChars"] = statistics.fmean(chars)
                row["meaningListMedianMs"] = statistics.median(times["meaning"])
                row["meaningListCpuMs"] = statistics.median(cpu["meaning"])
                row["panelMedianMs"] = statistics.median(times["panel"])
                row["panelCpuMs"] = statistics.median(cpu["panel"])
                row["load"] = (load0 + os.getloadavg()[0]) / 2
            out.append(row)
    return out


# ------------------------------------------------------------------ CLI


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "–" if v != v else f"{v:.1f}"
    return str(v)


COLUMNS = ["policy", "retained@1", "retained@3", "retained@10", "noiseForgotten@10",
           "recallBefore", "recallAfter", "recallAfterKept", "promptTokensBefore",
           "promptTokensAfter", "activeAfter"]


def table(rows: Sequence[dict[str, Any]], cols: Sequence[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--data", type=Path, default=DATA, help="a nocturne-memory-bench/1 file")
    src.add_argument("--locomo", type=Path, help="the public LoCoMo JSON (locomo10.json)")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N")
    ap.add_argument("--sessions", type=int, default=None, help="only the first N sessions of each")
    ap.add_argument("--policy", action="append", choices=sorted(POLICIES), help="default: all")
    ap.add_argument("--cap", type=int, action="append", default=[],
                    help="also run the old default's rules with this cap (repeatable)")
    ap.add_argument("--new-cap", type=int, action="append", default=[],
                    help="also run the new default with this cap (repeatable)")
    ap.add_argument("--floor", type=float, action="append", default=[],
                    help="also run the new default with this salience floor (repeatable)")
    ap.add_argument("--stale", type=float, action="append", default=[],
                    help="also run the new default with this stale-after (days, repeatable)")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="prompt budget (chars)")
    ap.add_argument("--cost", action="store_true", help="retrieval cost at 1k, 10k, 100k facts")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--base-url", help="an OpenAI-compatible server: facts come from the encoder "
                    "and sleeps ask the model (slow: start with --conversations 1 --sessions 3)")
    ap.add_argument("--model", default="", help="the model name to ask for (with --base-url)")
    ap.add_argument("--rules-only-sleep", action="store_true",
                    help="with --base-url: encode with the model, sleep with the rules only")
    args = ap.parse_args(argv)
    try:
        convs = load_locomo(args.locomo) if args.locomo else load_bench(args.data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"bench_memory: cannot read the data: {exc}", file=sys.stderr)
        return 2
    convs = convs[: args.conversations] if args.conversations else convs
    policies: dict[str, RetentionPolicy | BenchPolicy] = {
        p: POLICIES[p] for p in (args.policy or POLICIES)}
    new = RetentionPolicy()
    for cap in args.cap:
        policies[f"old-rules/cap-{cap}"] = BenchPolicy(
            OLD_DEFAULT.model_copy(update={"max_active_facts": cap}), "none")
    for cap in args.new_cap:
        policies[f"new/cap-{cap}"] = BenchPolicy(new.model_copy(update={"max_active_facts": cap}))
    for floor in args.floor:
        policies[f"new/floor-{floor:g}"] = BenchPolicy(new.model_copy(update={"forget_below": floor}))
    for days in args.stale:
        policies[f"new/stale-{days:g}d"] = BenchPolicy(
            new.model_copy(update={"stale_after_days": days}))
    model: ModelClient | None = None
    if args.base_url:
        from nocturne_desktop.llm.client import OpenAIClient

        model = OpenAIClient(args.base_url, args.model, api_key=os.environ.get("NOCTURNE_API_KEY"))
    totals = run(convs, policies, budget=args.budget, sessions=args.sessions, model=model,
                 sleep_model=None if args.rules_only_sleep else model)
    rows = [t.row() for t in totals.values()]
    result: dict[str, Any] = {"conversations": len(convs), "rows": rows}
    if args.cost:
        result["cost"] = retrieval_cost(convs)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    first = rows[0]
    print(f"{len(convs)} conversations, {first['evidenceFacts']} evidence facts, "
          f"{first['noiseFacts']} noise facts, {first['questions']} questions, "
          f"budget {args.budget} chars\n")
    print(table(rows))
    if args.cost:
        print()
        print(table(result["cost"], list(result["cost"][0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
