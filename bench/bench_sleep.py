"""Sleep figures: where the time goes, and how many prompt tokens candidate-only payloads save.

    python -m bench.bench_sleep [--engine [--verify-db DB]] [--facts 2000] [--seed 7]

Always: a generated store of ``--facts`` realistic facts (people, places, habits, trips; exact
and near restatements, related facts, a scratch/human/episodes/persona mix, some stale) gets
one sleep against the scripted OpenAI-compatible server (tests/fakeserver.py, answering every
pass cooperatively). The prompt tokens of the requests the server received (``estimate_tokens``
of each message, the same estimate the passes use for their budgets) are compared, per pass,
with "sending the whole store to every pass": the same instructions plus every active fact's
id, text, block and category as JSON, in one request per pass.

With ``--engine``: the built-in local engine (llama-server + SmolLM2-135M, from the user cache)
is started, the verify conversation is seeded exactly as ``nocturne verify`` does
(``verify.seed_conversation``), and one sleep runs on it. Per pass: proposed / accepted /
refused / by-rule counts, prompt and completion tokens (as the server counts them), model time,
wall time; then the conflict candidates Reconcile started from and its verdicts (superseded, or
refused with the gate's reason); then sleep wall time over summed model time (the engine's own
overhead; target <= 1.02); then the same whole-store comparison for that conversation.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.judges import conflicts
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import ChatResult, Message, ModelClient, StructuredResult
from nocturne_desktop.core.sleep import PassFigures, SleepEvent, run_sleep
from nocturne_desktop.core.sleep.passes import PASS_SPECS
from nocturne_desktop.core.sleep.passes.base import Chunk, estimate_tokens
from nocturne_desktop.core.sleep.passes.merge import RELATED_THRESHOLD, clusters
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES, Fact, FactDraft

T = TypeVar("T", bound=BaseModel)
DAY = 86400.0


# ------------------------------------------------------------------ prompt-token accounting


def message_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(str(m["content"])) for m in messages)


def whole_store_tokens(pass_name: str, facts: Sequence[Fact]) -> int:
    """The article's way: the pass's own instructions plus every active fact, in one request."""
    payload = {"task": pass_name, "facts": [
        {"itemId": f.id, "text": f.text, "block": f.block, "category": f.category}
        for f in facts if f.active]}
    chunk = Chunk(payload=payload, candidates=frozenset(), entries=0)
    return message_tokens(PASS_SPECS[pass_name].messages(chunk))


def facts_at_pass_start(store: Store, sleep_id: int) -> dict[str, list[Fact]]:
    """Active facts each pass started from, read back from its ``pass:<name>:before`` snapshot."""
    out: dict[str, list[Fact]] = {}
    for v in store.versions():
        if v.sleep_id == sleep_id and v.label.startswith("pass:") and v.label.endswith(":before"):
            out[v.label.split(":")[1]] = [f for f in store.state_at(v.seq) if f.active]
    return out


def token_table(title: str, ours: dict[str, tuple[int, int]], starts: dict[str, list[Fact]],
                candidates: dict[str, int]) -> float:
    """Print ours vs whole-store per pass; returns the overall ratio."""
    print(f"\n#### {title}\n")
    print("| pass | active at start | candidates | requests | ours (est. tokens) | "
          "whole store (est. tokens) | ours / whole |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    tot_ours = tot_whole = 0
    for p in PASSES:
        n_req, toks = ours.get(p, (0, 0))
        whole = whole_store_tokens(p, starts.get(p, []))
        tot_ours += toks
        tot_whole += whole
        print(f"| {p} | {len(starts.get(p, []))} | {candidates.get(p, 0)} | {n_req} | {toks} | "
              f"{whole} | {toks / whole:.3f} |")
    ratio = tot_ours / tot_whole
    print(f"| **sleep** | | | {sum(r for r, _ in ours.values())} | **{tot_ours}** | "
          f"**{tot_whole}** | **{ratio:.3f}** "
          f"({f'1/{1 / ratio:.1f}' if 0 < ratio < 1 else f'{ratio:.1f}x'}) |")
    print(f"\ntarget ours <= 1/3 of whole-store: {'met' if ratio <= 1 / 3 else 'NOT met'}")
    return ratio


# ------------------------------------------------------------------ the generated store

FIRST = ("Ana", "Bruno", "Carla", "Diogo", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kira", "Luis", "Marta", "Nuno", "Olga", "Pedro", "Rita", "Sofia", "Tiago", "Vera",
         "Walter", "Xenia", "Yusuf", "Zara", "Amir", "Beatriz", "Chen", "Dalia", "Emil", "Fatima",
         "Goran", "Hana", "Ivan", "Julia", "Kenji", "Lea", "Mateo", "Nadia", "Omar", "Paula")
RELATION = ("sister", "brother", "cousin", "colleague", "neighbour", "friend", "manager",
            "aunt", "uncle", "flatmate", "mentor", "teammate")
CITY = ("Porto", "Braga", "Faro", "Madrid", "Seville", "Paris", "Lyon", "Berlin", "Hamburg",
        "Oslo", "Rome", "Milan", "Vienna", "Prague", "Krakow", "Dublin", "Ghent", "Utrecht",
        "Zurich", "Tallinn", "Riga", "Athens", "Valencia", "Bilbao", "Nantes")
HOBBY = ("chess", "climbing", "jazz piano", "pottery", "sailing", "trail running", "sourdough "
         "baking", "birdwatching", "woodworking", "salsa dancing", "astronomy", "film photography",
         "calligraphy", "kayaking", "board games", "knitting", "gardening", "fencing")
FOOD = ("ramen", "pastel de nata", "green curry", "falafel", "paella", "dumplings", "tacos",
        "risotto", "pho", "shakshuka", "bacalhau", "pierogi", "sushi", "goulash", "empanadas")
TOOL = ("Airflow", "Postgres", "Kafka", "dbt", "Spark", "Terraform", "Kubernetes", "Grafana",
        "Redis", "Django", "FastAPI", "Snowflake", "BigQuery", "Prometheus", "Rust", "Go")
PROJECT = ("billing migration", "search rewrite", "data lake", "onboarding flow", "mobile app",
           "fraud model", "warehouse cleanup", "API gateway", "reporting suite", "ETL revamp")
DAYNAME = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
EVENT = ("a concert", "a wedding", "a hackathon", "a conference", "a marathon", "a book fair",
         "a food festival", "a family dinner", "a job interview", "a football match")
MONTH = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
         "October", "November", "December")


JOB = ("nurse", "teacher", "architect", "plumber", "lawyer", "chef", "pilot", "pharmacist",
       "journalist", "firefighter", "dentist", "translator", "electrician", "librarian")
SPORT = ("tennis", "padel", "football", "basketball", "volleyball", "badminton", "squash", "golf")
DRINK = ("black coffee", "green tea", "oat latte", "espresso", "mint tea", "hot chocolate")
PET = ("a bearded dragon", "two cats", "a beagle", "a parrot", "a tortoise", "three goldfish")
SEASON = ("spring", "summer", "autumn", "winter")
LANDMARK = ("river", "old harbour", "cathedral", "train station", "university", "market hall")
TIME = ("morning", "afternoon", "evening")

Fact4 = tuple[str, str, str, str]
"""(block, category, subject, predicate): the text is ``f"{subject} {predicate}."``. Every
template has one fixed content word at most; the rest comes from the word lists, so unrelated
facts rarely share more than a verb."""


def _c(r: random.Random, *options: str) -> str:
    return r.choice(options)


def _person_predicate(r: random.Random) -> tuple[str, str]:
    return r.choice((
        ("identity", f"lives in {r.choice(CITY)}"),
        ("identity", f"works as a {r.choice(JOB)}"),
        ("context", f"is learning {r.choice(HOBBY)}"),
        ("identity", f"was born in {r.choice(MONTH)}"),
        ("context", f"moved to {r.choice(CITY)} in {r.choice(SEASON)}"),
        ("preferences", f"is allergic to {r.choice(FOOD)}"),
        ("context", f"plays {r.choice(SPORT)} on {r.choice(DAYNAME)}"),
        ("context", f"keeps {r.choice(PET)}"),
    ))


def _human(r: random.Random) -> Fact4:
    if r.random() < 0.55:  # about someone in the user's life
        cat, pred = _person_predicate(r)
        return "human", cat, f"The user's {r.choice(RELATION)} {r.choice(FIRST)}", pred
    cat, pred = r.choice((
        ("preferences", f"{_c(r, 'likes', 'loves', 'orders', 'craves', 'cooks')} "
                        f"{r.choice(FOOD)} in {r.choice(CITY)}"),
        ("preferences", f"practises {r.choice(HOBBY)} with {r.choice(FIRST)} on "
                        f"{r.choice(DAYNAME)}"),
        ("preferences", f"prefers {r.choice(DRINK)} in the {r.choice(TIME)}"),
        ("commitments", f"promised {r.choice(FIRST)} to {_c(r, 'finish', 'review', 'ship', 'test')}"
                        f" the {r.choice(PROJECT)} by {r.choice(DAYNAME)}"),
        ("identity", f"{_c(r, 'uses', 'maintains', 'deploys', 'debugs')} {r.choice(TOOL)} for the "
                     f"{r.choice(PROJECT)}"),
        ("identity", f"grew up in {r.choice(CITY)} near the {r.choice(LANDMARK)}"),
        ("preferences", f"plays {r.choice(SPORT)} with {r.choice(FIRST)} in {r.choice(CITY)}"),
    ))
    return "human", cat, "The user", pred


def _episode(r: random.Random) -> Fact4:
    return r.choice((
        ("episodes", "event", f"In {r.choice(MONTH)} the user",
         f"{_c(r, 'went to', 'attended', 'joined')} {r.choice(EVENT)} in {r.choice(CITY)} with "
         f"{r.choice(FIRST)}"),
        ("episodes", "event", "The user",
         f"{_c(r, 'hiked', 'cycled', 'sailed', 'camped')} near {r.choice(CITY)} in "
         f"{r.choice(SEASON)} {r.randint(2015, 2025)}"),
        ("episodes", "event", f"On {r.choice(DAYNAME)} the user",
         f"{_c(r, 'cooked', 'baked', 'ordered')} {r.choice(FOOD)} for {r.choice(FIRST)}"),
    ))


def _scratch(r: random.Random) -> Fact4:
    return r.choice((
        ("scratch", "context", "The user",
         f"is {_c(r, 'reading', 'asking', 'watching talks')} about {r.choice(TOOL)} for the "
         f"{r.choice(PROJECT)}"),
        ("scratch", "context", "The user", f"had {r.choice(FOOD)} with {r.choice(FIRST)} in "
                                           f"{r.choice(CITY)}"),
        ("scratch", "preferences", "The user",
         f"{_c(r, 'wants', 'hopes', 'plans')} to try {r.choice(HOBBY)} in {r.choice(CITY)}"),
        ("scratch", "commitments", "The user",
         f"will {_c(r, 'call', 'email', 'meet')} {r.choice(FIRST)} about the {r.choice(PROJECT)} "
         f"on {r.choice(DAYNAME)}"),
        ("scratch", "context", f"{r.choice(FIRST)}", f"recommended {r.choice(HOBBY)} to the user"),
        ("scratch", "context", f"The user's {r.choice(RELATION)} {r.choice(FIRST)}",
         _person_predicate(r)[1]),
    ))


def _persona(r: random.Random) -> Fact4:
    return r.choice((
        ("persona", "preferences", "The assistant",
         f"{_c(r, 'explains', 'answers')} {r.choice(TOOL)} questions with "
         f"{_c(r, 'short', 'worked', 'runnable')} examples"),
        ("persona", "identity", "The assistant", f"is called {r.choice(FIRST)}"),
        ("persona", "preferences", "The assistant", f"keeps replies under {r.randint(3, 9)} lines"),
    ))


def _variant(text: str, r: random.Random) -> str:
    """A near restatement: the same content words, slightly different wording."""
    pick = r.randrange(3)
    if pick == 0 and text.startswith("The user"):
        return "User" + text[len("The user"):]
    if pick == 1:
        return text.rstrip(".") + " too."
    return "Also, " + text[0].lower() + text[1:]


def generate(n: int, r: random.Random, now: float) -> list[tuple[str, str, str, float]]:
    """``n`` (block, category, text, created_at): ~35 % human, 30 % episodes, 32 % scratch,
    3 % persona; ~4 % exact and ~4 % near restatements of earlier facts, ~8 % related facts (an
    earlier fact's subject with a new predicate: Merge material); ages 0-25 days, ~12 % older
    than the 30-day stale limit (mostly episodes)."""
    makers = (("human", _human, 0.35), ("episodes", _episode, 0.30), ("scratch", _scratch, 0.32),
              ("persona", _persona, 0.03))
    out: list[tuple[str, str, str, float]] = []
    base: list[Fact4] = []
    seen: set[str] = set()
    while len(out) < n:
        roll = r.random()
        if out and roll < 0.04:  # an exact restatement, later, usually landing in scratch
            b, c, t, _ = r.choice(out)
            out.append(("scratch" if r.random() < 0.7 else b, c, t, now - r.uniform(0, 5) * DAY))
            continue
        if out and roll < 0.08:
            b, c, t, _ = r.choice(out)
            out.append((b, c, _variant(t, r), now - r.uniform(0, 10) * DAY))
            continue
        if roll < 0.16 and any(s != "The user" for _, _, s, _ in base):
            block, cat, subject, _ = r.choice([f for f in base if f[2] != "The user"])
            if block in ("human", "scratch") and subject.startswith("The user's"):
                cat, pred = _person_predicate(r)
            else:
                pred = r.choice((_episode, _scratch, _persona))(r)[3]
        else:
            x, acc = r.random(), 0.0
            make = _persona
            for _, maker, share in makers:
                acc += share
                if x <= acc:
                    make = maker
                    break
            block, cat, subject, pred = make(r)
            base.append((block, cat, subject, pred))
        text = f"{subject} {pred}."
        if text in seen:
            continue
        seen.add(text)
        stale = r.random() < (0.3 if block == "episodes" else 0.04)
        age = r.uniform(31, 200) if stale else r.uniform(0, 25)
        out.append((block, cat, text, now - age * DAY))
    return out


def build_store(path: Path, n: int, seed: int, now: float) -> None:
    r = random.Random(seed)
    with Store(path) as store:
        for turn, (block, cat, text, created) in enumerate(generate(n, r, now), 1):
            store.append(block, FactDraft(text, cat, turn, created))


def run_demo() -> float:
    """The verify conversation's facts as a good encoder writes them (the shipped demo memory,
    16 facts with repeats, related pairs, scratch to promote and stale episodes), slept with the
    scripted cooperative model under the demo policy."""
    from nocturne_desktop.demo import demo_policy, open_demo_store

    now = time.time()
    return run_scripted("Demo memory (the verify conversation, already encoded)",
                        lambda db: open_demo_store(db.parent, now=now), demo_policy(), now,
                        show_merge_table=False)


def run_generated(n: int, seed: int) -> float:
    now = time.time()
    return run_scripted(f"Generated store: {n} facts (seed {seed})",
                        lambda db: build_store(db, n, seed, now),
                        RetentionPolicy(max_active_facts=max(120, n)), now)


def run_scripted(title: str, build: Any, policy: RetentionPolicy, now: float,
                 show_merge_table: bool = True) -> float:
    from nocturne_desktop.llm.client import OpenAIClient, Timeouts
    from tests.core.sleepkit import cooperative, pass_responder, task_of
    from tests.fakeserver import FakeLLM

    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as server:
        server.respond_with(pass_responder(cooperative()))
        db = Path(tmp) / "nocturne.db"
        t0 = time.perf_counter()
        build(db)
        built = time.perf_counter() - t0
        client = OpenAIClient(server.base_url, "fake", timeouts=Timeouts(first_token=60, idle=60))
        with Store(db) as store:
            mix: dict[str, int] = {}
            for f in store.active_facts():
                mix[f.block] = mix.get(f.block, 0) + 1
            stale = sum(policy.is_stale(f, now) and not policy.is_protected(f)
                        for f in store.active_facts())
            t0 = time.perf_counter()
            events = list(run_sleep(store, client, policy, now=now))
            wall = time.perf_counter() - t0
            client.close()
            sid = events[0].sleep_id
            assert sid is not None and events[-1].kind == "sleep done", events[-1]
            starts = facts_at_pass_start(store, sid)
        ours: dict[str, tuple[int, int]] = {}
        for req in server.chat_requests():
            task = task_of(req)[0]
            k, t = ours.get(task, (0, 0))
            ours[task] = (k + 1, t + message_tokens(req.messages))
    figs = _pass_figures(events)
    print(f"\n### {title}\n")
    print(f"mix: {', '.join(f'{b} {c}' for b, c in sorted(mix.items()))}; unprotected stale "
          f"{stale}; policy: {policy.describe()}; built in {built:.1f}s; sleep (scripted "
          f"cooperative model) {wall:.1f}s; accepted {events[-1].totals}")
    ratio = token_table(f"Prompt tokens, {title}: candidate-only payloads vs whole store",
                        ours, starts, {p: f.candidates for p, f in figs.items()})
    if not show_merge_table:
        return ratio
    merge_start = starts.get("merge", [])
    print(f"\nMerge candidates on the {len(merge_start)} facts Merge started from, by related "
          f"threshold (merge.RELATED_THRESHOLD = {RELATED_THRESHOLD:.3f}; clusters are star-shaped "
          "around their first fact):\n")
    print("| related threshold | clusters | facts offered | share of active |")
    print("| ---: | ---: | ---: | ---: |")
    for th in (0.5, 0.6, 0.67, 0.8):
        groups = clusters(merge_start, th)
        offered = sum(len(g) for g in groups)
        print(f"| {th:g} | {len(groups)} | {offered} | {offered / max(1, len(merge_start)):.2f} |")
    return ratio


def _pass_figures(events: Sequence[SleepEvent]) -> dict[str, PassFigures]:
    return {e.pass_name: e.figures for e in events
            if e.kind in ("pass done", "pass error") and e.pass_name and e.figures}


# ------------------------------------------------------------------ the real engine


class Recording:
    """A ModelClient that remembers the messages of every structured call (per pass)."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.calls: list[list[Message]] = []

    def chat(self, messages: Sequence[Message], **kw: Any) -> ChatResult:
        return self.inner.chat(messages, **kw)

    def stream(self, messages: Sequence[Message], **kw: Any) -> Iterator[str]:
        return self.inner.stream(messages, **kw)

    def structured(
        self, messages: Sequence[Message], contract: type[T], *,
        temperature: float | None = None, max_tokens: int | None = None,
        cancel: CancelToken | None = None,
    ) -> StructuredResult[T]:
        self.calls.append(list(messages))
        return self.inner.structured(messages, contract, temperature=temperature,
                                     max_tokens=max_tokens, cancel=cancel)


def run_engine(verify_db: Path | None = None) -> float:
    from nocturne_desktop.core.checks.verify import seed_conversation
    from nocturne_desktop.llm.client import OpenAIClient
    from nocturne_desktop.llm.engine import LocalEngine, find_engine

    paths = find_engine()
    if paths is None:
        raise SystemExit("the local engine is not built: run `make engine`")
    policy = RetentionPolicy(stale_after_days=30, max_active_facts=120)  # as verify uses
    with tempfile.TemporaryDirectory() as tmp, LocalEngine(paths, ctx_size=4096) as engine:
        client = OpenAIClient(engine.base_url, engine.model_name)
        try:
            model = Recording(client)
            db = Path(tmp) / "verify.db"
            if verify_db is not None:  # reuse a verify run's conversation: its pre-sleep state
                shutil.copyfile(verify_db, db)
            with Store(db) as store:
                t0 = time.perf_counter()
                if verify_db is None:
                    seeded = seed_conversation(store, model,
                                               line=lambda s: print(s, file=sys.stderr))
                    origin = (f"seeded {seeded['turns']} turns in {{:.1f}}s: encoder accepted "
                              f"{seeded['accepted']} of {seeded['proposed']} proposed facts, plus "
                              f"2 backdated episodes")
                else:
                    start = next(v for v in store.versions() if v.label == "consolidation:start")
                    store.restore(start.seq)
                    origin = (f"conversation seeded by `nocturne verify` ({verify_db.name}), "
                              f"restored to its pre-sleep version {start.id} in {{:.1f}}s")
                seed_s = time.perf_counter() - t0
                model.calls.clear()
                now = time.time()
                t0 = time.perf_counter()
                events = list(run_sleep(store, model, policy, now=now))
                wall = time.perf_counter() - t0
                sid = events[0].sleep_id
                assert sid is not None
                starts = facts_at_pass_start(store, sid)
                rec_start = starts.get("reconcile", [])
                pairs = conflicts.find_conflicts(rec_start)
                rec_by_id = {f.id: f for f in rec_start}
                verdicts = store.mutations(sleep_id=sid, pass_name="reconcile")
        finally:
            client.close()
    figs = _pass_figures(events)
    print("\n### Real engine: SmolLM2-135M-Instruct (Q4_1) via llama-server, verify conversation\n")
    print(origin.format(seed_s) + f"; {len(starts.get('dedupe', []))} active facts; sleep "
          f"ended: {events[-1].kind} {events[-1].message}".rstrip())
    print("\n| pass | active in | candidates | calls | proposed / accepted / refused / by rule | "
          "prompt tokens | completion tokens | model s | wall s | wall - model (ms) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for p in PASSES:
        f = figs.get(p)
        if f is None:
            print(f"| {p} | (no figures: the pass did not run) | | | | | | | | |")
            continue
        print(f"| {p} | {f.input} | {f.candidates} | {f.calls} | {f.proposed} / {f.accepted} / "
              f"{f.rejected} / {f.enforced} | {f.prompt_tokens}"
              f"{'*' if f.usage_estimated else ''} | {f.completion_tokens} | {f.model_s:.2f} | "
              f"{f.elapsed_s:.2f} | {(f.elapsed_s - f.model_s) * 1000:.0f} |")
    model_s = sum(f.model_s for f in figs.values())
    print(f"| **sleep** | | | {sum(f.calls for f in figs.values())} | | "
          f"{sum(f.prompt_tokens for f in figs.values())} | "
          f"{sum(f.completion_tokens for f in figs.values())} | {model_s:.2f} | {wall:.2f} | "
          f"{(wall - model_s) * 1000:.0f} |")
    ratio = wall / model_s if model_s else float("inf")
    print(f"\nReconcile started from {len(rec_start)} active facts; the code's conflict "
          f"candidates ({len(pairs)}):")
    for c in pairs:
        print(f"- {c.older} {rec_by_id[c.older].text!r} / {c.newer} "
              f"{rec_by_id[c.newer].text!r}: {c.rule}, {c.why}")
    print(f"Reconcile's verdicts ({len(verdicts)}):" if verdicts else "Reconcile's verdicts: none "
          "(the model proposed nothing and no rule applied)")
    for row in verdicts:
        m = row.mutation
        proposal = m.refs.get("proposal")
        by = m.refs.get("supersededBy") or (
            proposal.get("newId", "?") if isinstance(proposal, dict) else "?")
        what = (f"accepted, {m.item_id} superseded by {by}" if m.accepted
                else f"refused {m.item_id} -> {by}: {m.rejection_reason}")
        print(f"- [{m.decided_by}] {what} (reason: {m.reason!r})")
    print(f"\nsleep wall time / summed model time = {wall:.2f} / {model_s:.2f} = **{ratio:.4f}** "
          f"(target <= 1.02: {'met' if ratio <= 1.02 else 'NOT met'})")
    ours: dict[str, tuple[int, int]] = {}
    for msgs in model.calls:
        task = str(json.loads(str(msgs[-1]["content"])).get("task"))
        k, t = ours.get(task, (0, 0))
        ours[task] = (k + 1, t + message_tokens(msgs))
    token_table("Prompt tokens, verify conversation: candidate-only payloads vs whole store",
                ours, starts, {p: f.candidates for p, f in figs.items()})
    return ratio


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench_sleep", description=__doc__.split("\n")[0])
    ap.add_argument("--engine", action="store_true", help="also run the real local engine part")
    ap.add_argument("--verify-db", type=Path, default=None,
                    help="with --engine: reuse the conversation of a `nocturne verify` database "
                         "(restored to its pre-sleep version) instead of seeding it again")
    ap.add_argument("--facts", type=int, default=2000, help="size of the generated store")
    ap.add_argument("--seed", type=int, default=7, help="seed of the generated store")
    args = ap.parse_args(argv)
    if args.engine:
        run_engine(args.verify_db)
    run_demo()
    run_generated(args.facts, args.seed)


if __name__ == "__main__":
    main()
