"""``nocturne verify``: the whole memory loop, headless, with checks a person can trust.

It seeds a scripted 8-turn conversation and a later correction (:data:`CORRECTIONS`: a fact
restated with a new value) through the real chat and encoder path, adds two
episodes backdated past the stale limit (verbatim sentences from the transcript, so they stay
traceable), runs a dry run, a policy comparison, a real sleep and the Wake quiz, then re-audits
every accepted mutation from the database, checks that every correction stuck (no pair the
gate accepted a supersede for is still both active; every superseded fact has one successor
chain ending in an active fact), sweeps every active fact for traceability to the raw
transcript, and pushes the model-free gate cases through the gates.

Checks are split in two kinds. *Integrity* checks must hold whatever the model: they are what
``verify`` exits on. *Quality* figures (recall, the probe's answer) depend on how good the model
is, and are reported, not judged, so a weak model reads as a low figure, not as corruption.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nocturne_desktop.core import lineage
from nocturne_desktop.core.chat.agent import ChatAgent
from nocturne_desktop.core.chat.encoder import Encoder, check_fact, evidence_items
from nocturne_desktop.core.checks import audit, gatecases
from nocturne_desktop.core.checks.quiz import run_quiz
from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ModelClient, ModelError
from nocturne_desktop.core.sleep import PassFigures, SleepEventKind, run_sleep
from nocturne_desktop.core.sleep.passes import PASS_SPECS, Chunk, estimate_tokens
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, FactDraft

DAY = 86400.0

REPLY_TOKENS = 120
"""The cap on each chat reply of the scripted conversation, as the built-in model's chat tuning
caps its replies. Verify judges what the encoder and the gates do with the conversation, not
the replies: a base model that never ends a turn (Gemma 3 270M) would otherwise run every reply
to the agent's 512-token cap, most of verify's time, and feed the rambling to the next prompts."""

CONVERSATION: tuple[str, ...] = (
    "Hi! I'm Maya. I live in Lisbon and I work best in the morning.",
    "I keep a bearded dragon called Saffron. She likes basking under her lamp.",
    "At work my stack is Airflow and Postgres. We run the Airflow jobs every night. "
    "The nightly run has 12 jobs and takes 40 minutes.",
    "Quick reminder: I live in Lisbon and I work best in the morning.",
    "Back in August I went to a PyData conference in Porto.",
    "I promised my team I would review the Airflow migration on Friday. "
    "I also promised Jonas I'd drive him to the airport.",
    "Last spring I fixed the garden fence with my brother.",
    "Random thought, I had toast for breakfast. I don't drink coffee. "
    "Also, my bearded dragon is called Saffron.",
)
"""Signal and noise: identity, preferences, a stack, a commitment, two episodes, a trivial
remark, an exact restatement (turn 4) and a near one (turn 8); and three meaning traps a model
may fall into: a number (12 jobs, 40 minutes, turn 3), a role (who promised whom, turn 6) and a
negation (turn 8)."""

TRAPS: tuple[tuple[str, str], ...] = (
    ("The user drinks coffee.", "polarity guard"),
    ("The nightly run has 40 jobs.", "number guard"),
    ("Jonas promised to drive the user to the airport.", "role guard"),
)
"""Facts a model could write from the traps, every word traceable and the meaning inverted:
the encoder gate must refuse each for the guard named, against the transcript as stored."""

FAITHFUL: tuple[str, ...] = (
    "The user doesn't drink coffee.",
    "The nightly run has 12 jobs.",
    "The user promised to drive Jonas to the airport.",
)
"""The same traps stated faithfully: the encoder gate must accept each."""

CORRECTIONS: tuple[str, ...] = (
    "Small update: I moved last month. I live in Porto now.",
)
"""Said after :data:`CONVERSATION`: turn 1's home restated with a new value, for Reconcile."""

BACKDATED: tuple[tuple[int, str], ...] = (
    (5, "Back in August I went to a PyData conference in Porto."),
    (7, "Last spring I fixed the garden fence with my brother."),
)
"""Episodes added verbatim from their turns, created 70 days ago (past the stale limit)."""


@dataclass(frozen=True)
class Script:
    """What verify says and asks: the conversation, the correction said after it, the episodes
    backdated (the user turn, counted from 1, and the sentence from it) and the Wake questions."""

    conversation: tuple[str, ...]
    corrections: tuple[str, ...]
    backdated: tuple[tuple[int, str], ...]
    questions: int = 5


FULL = Script(CONVERSATION, CORRECTIONS, BACKDATED)
"""The whole script: eight turns, the correction, five questions (``nocturne verify``)."""

SHORT = Script(
    conversation=(" ".join(CONVERSATION[0:3]), " ".join(CONVERSATION[3:6]),
                  " ".join(CONVERSATION[6:8])),
    corrections=CORRECTIONS,
    backdated=((2, BACKDATED[0][1]), (3, BACKDATED[1][1])),
    questions=2,
)
"""Every sentence of :data:`FULL` in three turns (then the correction), and two questions: the
same traps, restatements, episodes and correction with fewer model calls, for a check that
another server runs the loop (a second server type in the tests); the checks are the same."""


@dataclass
class Check:
    name: str
    kind: str
    """``integrity`` (verify fails without it) or ``quality`` (a figure about the model)."""
    ok: bool
    detail: str


@dataclass
class VerifyReport:
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    @property
    def integrity_ok(self) -> bool:
        return all(c.ok for c in self.checks if c.kind == "integrity")

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.integrity_ok, "checks": [asdict(c) for c in self.checks],
                "figures": self.figures, "log": self.log}


class LiveMirror(Protocol):
    """Another home of the live state, kept by an adapter on the store's commit path (a Letta
    agent's memory blocks). ``verify`` attaches it to its store, syncs it before the sleep and
    the quiz, and checks that it holds exactly the live facts after the sleep and at the end;
    the loop itself never asks which home is live."""

    name: str

    def attach(self, store: Store) -> str:
        """Link ``store`` and follow its commits; one line for the log."""
        ...

    def sync(self) -> str:
        """Read back what changed there, write what changed here; one line."""
        ...

    def holds_live_state(self) -> tuple[bool, str]:
        """Whether it holds exactly the store's active facts, and the detail."""
        ...

    def detach(self) -> dict[str, Any]:
        """Stop following the store; the figures (commits synced, their latency)."""
        ...


@contextlib.contextmanager
def _mirrored(mirror: LiveMirror | None, store: Store, report: VerifyReport,
              line: Callable[[str], None]) -> Iterator[None]:
    if mirror is None:
        yield
        return
    line(mirror.attach(store))
    try:
        yield
    finally:
        report.figures["mirror"] = mirror.detach()


def run_verify(
    model: ModelClient,
    db_path: Path,
    *,
    policy: RetentionPolicy | None = None,
    say: Callable[[str], None] = print,
    small_cap: int = 6,
    mirror: LiveMirror | None = None,
    script: Script = FULL,
) -> VerifyReport:
    """Run every step; ``say`` receives the lines as they come (figures like the article's §10).
    With ``mirror``, the live state lives there too (see :class:`LiveMirror`); ``script`` is
    what is said and asked (:data:`FULL`, or :data:`SHORT` for fewer model calls)."""
    policy = policy or RetentionPolicy(stale_after_days=30, max_active_facts=120)
    report = VerifyReport()

    def line(text: str) -> None:
        report.log.append(text)
        say(text)

    def check(name: str, kind: str, ok: bool, detail: str) -> None:
        report.checks.append(Check(name, kind, ok, detail))
        line(f"[{'OK' if ok else 'FAIL' if kind == 'integrity' else 'low'}] {name}: {detail}")

    def sync(when: str) -> None:
        if mirror is not None:
            line(f"{mirror.name} before {when}: {mirror.sync()}")

    def mirrored(when: str) -> None:
        if mirror is not None:
            ok, detail = mirror.holds_live_state()
            check(f"{mirror.name} holds the live state {when}", "integrity", ok, detail)

    with Store(db_path) as store, _mirrored(mirror, store, report, line):
        t0 = time.perf_counter()
        seeded = seed_conversation(store, model, line, script)
        report.figures["seed"] = seeded
        seeded["seconds"] = round(time.perf_counter() - t0, 1)
        line(f"seeded in {seeded['seconds']}s; encoder proposed {seeded['proposed']} facts, "
             f"accepted {seeded['accepted']}, rejected {seeded['rejected']}, "
             f"backdated {len(seeded['backdated'])} episodic fact(s) ({', '.join(seeded['backdated'])})")
        for reason in seeded["rejections"][:10]:
            line(f"  encoder rejected: {reason}")
        facts = store.active_facts()
        pairs, _ = duplicates.duplicate_pairs([(f.id, f.text) for f in facts],
                                           policy.similarity_threshold)
        exact = sum(1 for _, _, s in pairs if s >= 1.0)
        now = time.time()
        stats = {
            "active": len(facts), "dupPairs": len(pairs), "exactDupPairs": exact,
            "stale": sum(policy.is_stale(f, now) for f in facts),
            "protected": sum(policy.is_protected(f) for f in facts),
        }
        report.figures["store"] = stats
        line("active facts={active} dup pairs={dupPairs} (exact {exactDupPairs}) stale={stale} "
             "protected={protected}".format(**stats))

        # dry run: the same passes with the model, nothing written
        n_versions, n_active = len(store.versions()), store.active_count()
        dry = _figures(run_sleep(store, model, policy, dry_run=True, now=now))
        report.figures["dryRun"] = dry
        unchanged = len(store.versions()) == n_versions and store.active_count() == n_active
        check("dry run writes nothing", "integrity", unchanged and not store.sleeps(),
              f"active stays {n_active}->{store.active_count()}, versions {n_versions}->"
              f"{len(store.versions())}; plan: {dry.get('totals')}")

        # policy comparison: identical facts, two caps, the rules only (deterministic). The small
        # cap is lowered to the protected floor when the store is smaller than it, so that the
        # comparison measures something whatever the model managed to extract.
        big = _figures(run_sleep(store, None, policy, dry_run=True, now=now))
        small_cap = max(1, min(small_cap, stats["protected"]))
        small_policy = policy.model_copy(update={"max_active_facts": small_cap})
        small = _figures(run_sleep(store, None, small_policy, dry_run=True, now=now))
        fb, fs = _forgotten(big), _forgotten(small)
        report.figures["policyComparison"] = {"cap": [policy.max_active_facts, small_cap],
                                              "forgotten": [fb, fs]}
        protected = stats["protected"]
        expect_diff = cap_must_forget(small, protected, stats["stale"], small_cap)
        check("policy changes the outcome", "integrity", (fs > fb) if expect_diff else (fs >= fb),
              f"MAX_ACTIVE_FACTS={policy.max_active_facts}: forgotten={fb}; "
              f"MAX_ACTIVE_FACTS={small_cap}: forgotten={fs} (protected floor {protected})")

        # the real sleep
        sync("the sleep")
        events = list(run_sleep(store, model, policy, now=now))
        real = _figures(iter(events))
        report.figures["sleep"] = real
        for p in real["passes"]:
            line(f"pass {p['pass_name']:<7} in={p['input']:>3} proposed={p['proposed']:>3} "
                 f"accepted={p['accepted']:>3} rejected={p['rejected']:>3} enforced={p['enforced']:>3} "
                 f"activeAfter={p['active_after']:>3} model={p['model_s']:.1f}s "
                 f"tokens={p['prompt_tokens']}+{p['completion_tokens']}"
                 + (f" errors={p['errors']}" if p["errors"] else ""))
        line(f"totals: {real['totals']}; ended: {real['end']} {real['message']}".rstrip())
        sleep_id = events[0].sleep_id
        check("sleep completed", "integrity", real["end"] == SleepEventKind.DONE,
              f"{real['end']} {real['message']}".strip())
        mirrored("after the sleep")

        # independent re-audit
        checked, problems = audit.reaudit(store, sleep_id or 0)
        for p in problems:
            line(f"  audit problem: #{p.mutation_id} {p.kind} {p.item_id}: {p.problem}")
        rejected = len(list(store.mutations(sleep_id=sleep_id, accepted=False)))
        check("re-audit of every accepted mutation", "integrity", not problems,
              f"{checked} accepted, {rejected} rejected; {checked} re-verified, {len(problems)} problems")

        # corrections that stick
        supersedes = [r.mutation for r in store.mutations(sleep_id=sleep_id, accepted=True)
                      if r.mutation.kind == "supersede"]
        both = [m.item_id for m in supersedes
                if (o := store.get(m.item_id)) is not None and o.active
                and (n := store.get(str(m.refs.get("supersededBy")))) is not None and n.active]
        for m in supersedes:
            line(f"  superseded {m.item_id} by {m.refs.get('supersededBy')} "
                 f"(decided by {m.decided_by}): {m.refs.get('oldText')!r} -> "
                 f"{m.refs.get('newText')!r}")
        check("no accepted correction left both facts active", "integrity", not both,
              f"{len(supersedes)} supersede(s) accepted in this sleep"
              + (f"; still both active: {', '.join(both)}" if both else ""))
        old_facts = store.superseded_facts(limit=1_000_000)
        broken = [f.id for f in old_facts
                  if not (chain := lineage.successor_chain(store, f)) or not chain[-1].active]
        check("every superseded fact has one active successor chain", "integrity", not broken,
              f"{len(old_facts)} superseded fact(s)"
              + (f"; broken: {', '.join(broken)}" if broken else ""))
        rec = next((p for p in real["passes"] if p["pass_name"] == "reconcile"), None)
        whole = whole_store_tokens([f for f in store.state_at(store.versions()[0].seq)
                                    if f.active])
        if rec is not None:
            report.figures["reconcile"] = {"candidates": rec["candidates"],
                                           "promptTokens": rec["prompt_tokens"],
                                           "wholeStoreTokens": whole,
                                           "superseded": len(supersedes)}
            line(f"reconcile: {rec['candidates']} fact(s) in candidate pairs, prompt "
                 f"{rec['prompt_tokens']} tokens vs whole store ≈{whole}")

        # traceability sweep
        transcript = [t.text for t in store.turns()]
        trace = audit.traceability(store.active_facts(), transcript, audit.hand_written(store))
        for fid, why in trace.problems:
            line(f"  untraceable: {fid}: {why}")
        check("every active fact traceable to the transcript", "integrity",
              trace.traceable == trace.total,
              f"{trace.traceable}/{trace.total} active facts fully traceable")

        # meaning: the traps are refused, their faithful forms accepted, and no stored fact
        # states what the transcript negates, binds differently or attributes to someone else
        items = evidence_items(store.turns())
        texts = [t for _, t, _ in items]
        labels = [label for label, _, _ in items]
        speakers = [who for _, _, who in items]
        trap_bad = []
        for claim, guard in TRAPS:
            why = check_fact(claim, texts, labels=labels, speakers=speakers) or ""
            line(f"  trap {claim!r}: {why or 'ACCEPTED'}")
            if guard not in why:
                trap_bad.append(claim)
        for claim in FAITHFUL:
            refusal = check_fact(claim, texts, labels=labels, speakers=speakers)
            line(f"  faithful {claim!r}: {refusal or 'accepted'}")
            if refusal is not None:
                trap_bad.append(claim)
        flips = audit.meaning_sweep(store.active_facts(), store.turns(), audit.hand_written(store))
        for fid, why in flips.problems:
            line(f"  meaning flip: {fid}: {why}")
        check("no meaning flip survives", "integrity", not flips.problems and not trap_bad,
              f"{flips.traceable}/{flips.total} active facts say what the transcript says; "
              f"{len(TRAPS) + len(FAITHFUL) - len(trap_bad)}/{len(TRAPS) + len(FAITHFUL)} "
              "trap and faithful facts judged as required"
              + (f" (wrong: {trap_bad})" if trap_bad else ""))

        # Wake
        sync("the quiz")
        try:
            quiz = run_quiz(store, model, n_questions=script.questions, seed=0)
        except ModelError as exc:
            check("wake quiz ran", "integrity", False, str(exc))
            quiz = None
        if quiz is not None:
            report.figures["quiz"] = {
                "recall": quiz.recall, "correct": quiz.correct, "asked": len(quiz.questions),
                "refusedQuestions": len(quiz.refused_questions),
                "attempts2": sum(q.attempts == 2 for q in quiz.questions),
            }
            for q in quiz.questions:
                line(f"  Q {q.fact_id} [{'ok' if q.correct else 'miss'} {q.score:.2f} "
                     f"attempts={q.attempts}] {q.question!r} -> {q.answer[:100]!r}")
            check("recall", "quality", quiz.recall >= 0.6,
                  f"{quiz.correct}/{len(quiz.questions)} correct (recall {quiz.recall:.2f})")
            probe = quiz.probe
            if probe is None:
                check("forgotten probe", "quality", False, "nothing was forgotten to probe")
            elif not probe.source.startswith("removed by the Forget pass"):
                check("forgotten probe", "quality", probe.passed,
                      f"{probe.source}; absentFromStore={probe.absent_from_store} "
                      f"saidAbsent={probe.said_absent} leaked={probe.leaked}")
            else:
                report.figures["probe"] = asdict(probe)
                check("forgotten fact absent from store", "integrity", probe.absent_from_store,
                      f"{probe.fact_id} {probe.text!r}: absentFromStore={probe.absent_from_store} "
                      f"(closest {probe.closest})")
                check("forgotten probe answered as forgotten", "quality", probe.passed,
                      f"saidAbsent={probe.said_absent} leaked={probe.leaked}: {probe.answer[:120]!r}")

            corr = quiz.correction
            if corr is None:
                check("correction probe", "quality", False, "no superseded fact to probe")
            else:
                report.figures["correctionProbe"] = asdict(corr)
                check("correction probe answered with the current value", "quality", corr.passed,
                      f"{corr.fact_id} -> {corr.successor_id}: successorActive="
                      f"{corr.successor_active} carriesCurrent={corr.carries_current} "
                      f"presentsOld={corr.presents_old}: {corr.answer[:120]!r}")

        # model-free gate cases
        results = gatecases.run_all(policy)
        for r in results:
            line(f"  {'ok ' if r.ok else 'BAD'} {r.name}: {r.detail}")
        check("model-free gate cases", "integrity", all(r.ok for r in results),
              f"{sum(r.ok for r in results)}/{len(results)} refused or enforced as required")
        check("database integrity", "integrity", store.integrity_check() == "ok",
              f"PRAGMA integrity_check: {store.integrity_check()}")
        mirrored("at the end")

    n_int = [c for c in report.checks if c.kind == "integrity"]
    line(f"{sum(c.ok for c in n_int)}/{len(n_int)} integrity checks passed; "
         f"quality: " + ", ".join(f"{c.name} {'ok' if c.ok else 'low'}"
                                  for c in report.checks if c.kind == "quality"))
    return report


def seed_conversation(
    store: Store, model: ModelClient, line: Callable[[str], None] = print, script: Script = FULL
) -> dict[str, Any]:
    """Chat the script's conversation and correction (:data:`CONVERSATION`,
    :data:`CORRECTIONS`) through the agent and the encoder, then add its backdated episodes
    (:data:`BACKDATED`); returns the encoder's figures. (Also used by bench_sleep.)"""
    agent = ChatAgent(store, model, max_tokens=REPLY_TOKENS)
    encoder = Encoder(store, model)
    proposed = accepted = 0
    rejections: list[str] = []
    request_chars: list[int] = []
    for i, text in enumerate((*script.conversation, *script.corrections), 1):
        reply = agent.reply(text)
        result = encoder.encode_new_turns()
        accepted += len(result.accepted)
        proposed += len(result.accepted) + len(result.rejected)
        rejections.extend(reason for _, reason in result.rejected)
        request_chars.extend(result.request_chars)
        line(f"turn {i}: +{len(result.accepted)} facts, -{len(result.rejected)} refused"
             + (f" (encoder: {result.error})" if result.error else "")
             + f"; reply {reply[:60]!r}")
    now = time.time()
    turns = {t.n: t for t in store.turns()}
    user_turns = [n for n in sorted(turns) if turns[n].role == "user"]
    backdated: list[str] = []
    for index, sentence in script.backdated:
        turn = user_turns[index - 1]
        assert sentence in turns[turn].text
        # if the encoder already stored this episode, age those facts; otherwise add it verbatim
        # (a verbatim copy beside a fresh one would just be deduplicated, and nothing would be
        # left stale for Forget to act on)
        same = [f for f in store.active_facts() if tm.similarity(f.text, sentence) >= 0.9]
        for f in same:
            store.update(f.id, created_at=now - 70 * DAY)
            backdated.append(f.id)
        if not same:
            backdated.append(store.append("episodes", FactDraft(sentence, "event", turn,
                                                                now - 70 * DAY)).id)
    return {"turns": len(script.conversation) + len(script.corrections), "proposed": proposed,
            "accepted": accepted,
            "backdated": backdated,
            "rejected": len(rejections), "rejections": rejections,
            "encoderRequestChars": request_chars}


def whole_store_tokens(facts: Sequence[Fact]) -> int:
    """The prompt tokens of one Reconcile request carrying every active fact (the same system
    text, every fact's id and text): what the pass would cost if it sent the whole store."""
    spec = PASS_SPECS["reconcile"]
    chunk = Chunk(payload={"task": "reconcile", "facts": [{"itemId": f.id, "text": f.text}
                                                          for f in facts]},
                  candidates=frozenset(), entries=1)
    return sum(estimate_tokens(m["content"]) for m in spec.messages(chunk))


def _figures(events: Iterator[Any]) -> dict[str, Any]:
    passes: list[dict[str, Any]] = []
    out: dict[str, Any] = {"passes": passes, "totals": {}, "end": "", "message": ""}
    for ev in events:
        if ev.kind.after_pass and isinstance(ev.figures, PassFigures):
            passes.append(ev.figures.as_dict())
        if ev.kind.final:
            out["end"], out["message"], out["totals"] = ev.kind, ev.message, ev.totals or {}
    return out


def cap_must_forget(small: dict[str, Any], protected: int, stale: int, cap: int) -> bool:
    """Whether the small cap is bound to forget more than the big one: judged on the facts that
    reach the Forget pass, not on the store before the sleep — Dedupe and Merge may leave only
    protected facts (a model that extracted the same identity fact three times), and then there
    is nothing a cap may forget. Facts reaching Forget beyond ``protected + stale`` are surely
    unprotected and fresh (dropping and merging never add protected or stale facts)."""
    reach = next((int(p["input"]) for p in small["passes"] if p["pass_name"] == "forget"), 0)
    return reach - protected - stale > 0 and reach - stale > cap


def _forgotten(fig: dict[str, Any]) -> int:
    passes = fig["passes"]
    if not passes:
        return 0
    first_input = int(passes[0]["input"])
    last = passes[-1]
    merged_or_dropped = sum(p["input"] - p["active_after"] for p in passes if p["pass_name"] != "forget")
    return int(first_input - merged_or_dropped - last["active_after"])
