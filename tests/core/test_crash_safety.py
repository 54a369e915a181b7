"""Crash safety: SIGKILL a headless ``nocturne sleep`` at random moments, then check the store.

Each trial copies one seeded store, starts ``python -m nocturne_desktop sleep`` as a real
process against the scripted server (which answers every pass cooperatively after a small
random delay, so a kill can land while a model call is in flight, while the gates judge, or
while a pass commits), kills it with SIGKILL, and checks that:

* ``PRAGMA integrity_check`` is ok;
* the live state equals the latest snapshot, and that state is the one of the latest pass
  boundary (``consolidation:start`` or ``pass:*:after``) - or the pre-sleep state when the
  sleep had not snapshotted yet;
* every mutation row belongs to a completed pass: its seq is the ``pass:<name>:after``
  snapshot of its own pass and sleep, and the re-audit finds nothing wrong with it;
* a new sleep then runs to ``sleep done`` and marks the killed one ``interrupted``.

The RNG is seeded; the kill distribution is printed with the test output and recorded as a
property (junit XML).
"""

from __future__ import annotations

import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.checks import audit
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES, Fact, FactDraft
from nocturne_desktop.llm.client import OpenAIClient, Timeouts
from tests.core.sleepkit import SEED, cooperative, pass_responder, task_of
from tests.fakeserver import FakeLLM, Reply, Request

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
RNG_SEED = 20_260_611
MIN_KILLS = 20
MAX_TRIALS = 32
BUDGET_S = 75.0
"""Wall-clock budget for the trials (the calibration run and the store build come on top)."""
MAX_DELAY_S = 0.12
"""Upper bound of the random delay before each scripted reply."""
DAY = 86400.0
BOUNDARY = ("consolidation:start",)

NAMES = ("Ana", "Bruno", "Carla", "Diogo", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kira", "Luis", "Marta", "Nuno", "Olga", "Pedro", "Rita", "Sofia", "Tiago", "Vera")
CITIES = ("Porto", "Braga", "Faro", "Madrid", "Paris", "Berlin", "Oslo", "Rome", "Vienna", "Prague")
THINGS = ("chess", "climbing", "jazz", "pottery", "sailing", "running", "baking", "birdwatching")


def _facts(rng: random.Random) -> list[tuple[str, str, str, float]]:
    """~150 facts: the sleep test seed plus people, hobbies and trips, with restatements
    (exact and near), related pairs, old episodes and a scratch surplus over the cap."""
    out = [(b, c, t, age) for b, c, t, age in SEED]
    for i, name in enumerate(NAMES):
        city, thing = CITIES[i % len(CITIES)], THINGS[i % len(THINGS)]
        out.append(("scratch", "context", f"The user's friend {name} lives in {city}.", 1 + i % 5))
        out.append(("scratch", "context", f"The user's friend {name} enjoys {thing}.", 2))
        if i % 3 == 0:  # an exact restatement
            out.append(("scratch", "context", f"The user's friend {name} lives in {city}.", 1))
        if i % 4 == 1:  # a near restatement
            out.append(("scratch", "context", f"User's friend {name} lives in {city}.", 1))
        if i % 2 == 0:  # an old trip, stale
            out.append(("episodes", "event", f"The user visited {name} in {city} last year.",
                        35 + rng.randint(0, 60)))
        out.append(("scratch", "preferences" if i % 5 == 0 else "context",
                    f"The user would like to try {thing} with {name} someday.", 3))
    for k in range(40):  # filler context so the cap of 120 forces the policy to forget some
        thing, city = THINGS[k % len(THINGS)], CITIES[(k * 3) % len(CITIES)]
        out.append(("scratch", "context",
                    f"The user read article {k + 1} about {thing} clubs in {city}.", 4 + k % 9))
    return out


def _build(path: Path, now: float, rng: random.Random) -> list[Fact]:
    with Store(path) as store:
        for n, (block, cat, text, age) in enumerate(_facts(rng), 1):
            store.append(block, FactDraft(text, cat, n, now - age * DAY))
        facts = store.all_facts()
    for extra in ("-wal", "-shm"):
        assert not Path(f"{path}{extra}").exists(), "the pristine store must be a single file"
    return facts


class _Delays:
    """The cooperative responder, with a seeded random delay before each reply."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.on = True
        self._answer = pass_responder(cooperative())
        self._lock = threading.Lock()

    def __call__(self, req: Request) -> Reply:
        with self._lock:
            delay = self.rng.uniform(0.0, MAX_DELAY_S) if self.on else 0.0
        return self._answer(req).with_(delay=delay)


def _spawn(data_dir: Path, base_url: str) -> subprocess.Popen[str]:
    """``nocturne --data-dir D sleep --base-url URL --model fake`` as its own process, through
    the observing wrapper (tests/core/crashprobe.py), which notes commit_pass entry and exit."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.core.crashprobe", str(data_dir / "probe.log"),
         "--data-dir", str(data_dir), "sleep",
         "--base-url", base_url, "--model", "fake", "--first-token-timeout", "20",
         "--idle-timeout", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )


def _close(proc: subprocess.Popen[str]) -> str:
    """Close the pipes; returns what the process wrote to stderr."""
    err = ""
    if proc.stderr is not None:
        err = proc.stderr.read()
        proc.stderr.close()
    if proc.stdout is not None:
        proc.stdout.close()
    return err


def _lines(proc: subprocess.Popen[str]) -> Iterator[tuple[float, str]]:
    assert proc.stdout is not None
    for line in proc.stdout:
        yield time.perf_counter(), line.rstrip("\n")


def _key(facts: list[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: int(f.id[2:]))


def _task(req: Request) -> str:
    try:
        return task_of(req)[0]
    except ValueError:
        return "?"


def _moment(server: FakeLLM, first: int, probe: Path) -> str:
    """What the process was doing when it was killed, from the probe and the server's view."""
    lines = probe.read_text().splitlines() if probe.exists() else []
    if lines and lines[-1].startswith("begin "):
        return f"inside commit_pass ({lines[-1][6:]})"
    mine = server.chat_requests()[first:]
    flying = [r for r in mine if not r.completed and r.disconnected_at is None]
    if flying:
        return f"model call in flight ({_task(flying[-1])})"
    if mine:
        return f"no call in flight; last reply: {_task(mine[-1])}"
    return "no model call yet"


def _check_after_kill(db: Path, pristine: list[Fact]) -> tuple[str, int | None, list[str]]:
    """The checks on a killed store. Returns (where the kill landed, sleep id, problems)."""
    problems: list[str] = []
    with Store(db) as store:
        integrity = store.integrity_check()
        if integrity != "ok":
            problems.append(f"integrity_check: {integrity}")
        sleeps = store.sleeps()
        if len(sleeps) > 1:
            problems.append(f"{len(sleeps)} sleep rows after one sleep")
        sid = sleeps[0].id if sleeps else None
        if sleeps and sleeps[0].status not in ("running", "done"):
            problems.append(f"killed sleep status {sleeps[0].status!r}")
        versions = store.versions()
        live = _key(store.all_facts())
        if versions and _key(store.state_at(versions[-1].seq)) != live:
            problems.append(f"live state differs from the latest snapshot {versions[-1].label}")
        bounds = [v for v in versions if v.label in BOUNDARY or
                  (v.label.startswith("pass:") and v.label.endswith(":after"))]
        expected = _key(store.state_at(bounds[-1].seq)) if bounds else _key(pristine)
        if live != expected:
            where = bounds[-1].label if bounds else "the pre-sleep state"
            problems.append(f"live state is not the state at {where}")
        labels = {v.seq: v.label for v in versions}
        for row in store.mutations():
            m = row.mutation
            want = f"pass:{m.pass_name}:after"
            if row.seq is None or labels.get(row.seq) != want or row.sleep_id != sid:
                problems.append(f"mutation #{row.id} ({m.pass_name} {m.kind}) has seq {row.seq} "
                                f"labelled {labels.get(row.seq or -1)!r}, not {want!r}")
        if sid is not None:
            _, findings = audit.reaudit(store, sid)
            problems += [f"re-audit #{f.mutation_id} {f.kind} {f.item_id}: {f.problem}"
                         for f in findings]
        if not sleeps:
            landed = "before begin_sleep (no sleep row)"
        elif not versions:
            landed = "after begin_sleep, before any snapshot"
        else:
            landed = f"after {versions[-1].label}"
        if sleeps and sleeps[0].status == "done":
            landed = "after finish_sleep (status done)"
    return landed, sid, problems


def _recover(db: Path, server: FakeLLM, killed: int | None) -> list[str]:
    """A new sleep on the killed store must run cleanly and mark the killed one interrupted."""
    problems: list[str] = []
    client = OpenAIClient(server.base_url, "fake", timeouts=Timeouts(connect=5, first_token=20,
                                                                       idle=20))
    try:
        with Store(db) as store:
            events = list(run_sleep(store, client, RetentionPolicy()))
            end = events[-1]
            if end.kind != "sleep done":
                problems.append(f"recovery sleep ended {end.kind}: {end.message}")
            sleeps = {s.id: s.status for s in store.sleeps()}
            if killed is not None and sleeps.get(killed) not in ("interrupted", "done"):
                problems.append(f"killed sleep {killed} is {sleeps.get(killed)!r}, not interrupted")
            if end.sleep_id is None or sleeps.get(end.sleep_id) != "done":
                problems.append(f"recovery sleep recorded as {sleeps.get(end.sleep_id or -1)!r}")
            else:
                _, findings = audit.reaudit(store, end.sleep_id)
                problems += [f"recovery re-audit: {f.problem}" for f in findings]
            if store.integrity_check() != "ok":
                problems.append("integrity after recovery")
    finally:
        client.close()
    return problems


def _table(counter: collections.Counter[str]) -> str:
    width = max(len(k) for k in counter)
    return "\n".join(f"  {k:<{width}}  {n:>3}" for k, n in sorted(counter.items()))


def test_sigkill_during_sleep_leaves_a_pass_boundary(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, Any], None],
) -> None:
    rng = random.Random(RNG_SEED)
    delays = _Delays(RNG_SEED + 1)
    fake_llm.respond_with(delays)
    now = time.time()
    pristine_db = tmp_path / "pristine.db"
    pristine = _build(pristine_db, now, rng)

    # calibration: one sleep run to its end, to spread the kills over its whole length
    cal = tmp_path / "calibration"
    cal.mkdir()
    shutil.copyfile(pristine_db, cal / "nocturne.db")
    t0 = time.perf_counter()
    proc = _spawn(cal, fake_llm.base_url)
    seen = list(_lines(proc))
    rc = proc.wait(timeout=60)
    err = _close(proc)
    assert rc == 0, f"the calibration sleep failed: {err}"
    started = next(t for t, line in seen if line.startswith("sleep started")) - t0
    total = time.perf_counter() - t0
    assert seen[-1][1].startswith("sleep done"), seen
    calibration_requests = len(fake_llm.chat_requests())
    cal_landed, _, cal_problems = _check_after_kill(cal / "nocturne.db", pristine)
    assert not cal_problems and cal_landed == "after finish_sleep (status done)", cal_problems

    landed: collections.Counter[str] = collections.Counter()
    moment: collections.Counter[str] = collections.Counter()
    modes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    kills = trials = 0
    deadline = time.perf_counter() + BUDGET_S
    while kills < MIN_KILLS + 4 and trials < MAX_TRIALS and time.perf_counter() < deadline:
        trials += 1
        trial = tmp_path / f"trial{trials:02d}"
        trial.mkdir()
        db = trial / "nocturne.db"
        shutil.copyfile(pristine_db, db)
        delays.on = True
        first = len(fake_llm.chat_requests())
        draw = rng.random()
        mode = ("startup" if draw < 0.1 else "commit" if draw < 0.4 else
                "after a reply" if draw < 0.6 else "anywhere")
        modes[mode] += 1
        proc = _spawn(trial, fake_llm.base_url)
        spawned = time.perf_counter()
        if mode == "startup":  # Python starting, imports, opening the store, begin_sleep
            time.sleep(rng.uniform(0.0, started * 1.1))
        elif mode == "commit":  # as soon as the probe says a pass's commit began
            probe, mark = trial / "probe.log", f"begin pass:{rng.choice(PASSES)}:after"
            limit = time.perf_counter() + 20
            while time.perf_counter() < limit and proc.poll() is None:
                if probe.exists() and mark in probe.read_text():
                    break
                time.sleep(0.0002)
            time.sleep(rng.uniform(0.0, 0.002))
        elif mode == "after a reply":  # a few ms after reply k: gates, the commit, next request
            k, lag = rng.randrange(calibration_requests), rng.uniform(0.0, 0.012)
            limit = time.perf_counter() + 20
            while time.perf_counter() < limit and proc.poll() is None:
                mine = fake_llm.chat_requests()[first:]
                if len(mine) > k and mine[k].completed:
                    break
                time.sleep(0.0005)
            time.sleep(lag)
        else:  # uniformly over the sleep proper
            for _, line in _lines(proc):
                if line.startswith("sleep started"):
                    break
            time.sleep(rng.uniform(0.0, (total - started) * 1.05))
        doing = _moment(fake_llm, first, trial / "probe.log")
        os.kill(proc.pid, signal.SIGKILL)
        rc = proc.wait(timeout=30)
        err = _close(proc)
        delays.on = False
        where, sid, problems = _check_after_kill(db, pristine)
        if rc == -signal.SIGKILL:
            kills += 1
            landed[where] += 1
            if doing.startswith("inside commit_pass"):  # did that commit land or roll back?
                label = doing[len("inside commit_pass ("):-1]
                doing += " -> " + ("committed" if where == f"after {label}" else "rolled back")
            moment[doing if sid is not None else "before begin_sleep"] += 1
        else:
            landed[f"not killed (exit {rc})"] += 1
            if rc != 0:
                problems.append(f"the sleep process failed on its own: {err[-500:]}")
        problems += _recover(db, fake_llm, sid)
        if problems:
            failures.append(f"trial {trials} ({mode}, killed {time.perf_counter() - spawned:.2f}s "
                            f"after spawn, {where}): " + "; ".join(problems[:5]))

    report = (f"crash safety: {kills} SIGKILLs in {trials} trials (seed {RNG_SEED}); calibration "
              f"sleep {total:.2f}s ({started:.2f}s to 'sleep started', {calibration_requests} "
              f"model calls)\nwhere the kills landed (last label written):\n{_table(landed)}\n"
              f"what the process was doing:\n{_table(moment)}\nkill modes drawn:\n{_table(modes)}")
    record_property("kill_distribution", report)
    with capsys.disabled():
        print("\n" + report)
    assert not failures, report + "\n" + "\n".join(failures)
    assert kills >= MIN_KILLS, report
    passes_hit = {k for k in landed if k.startswith("after pass:")}
    assert len(passes_hit) >= 3, f"the kills did not spread over the sleep:\n{report}"
    assert any(k.startswith("inside commit_pass") for k in moment), \
        f"no kill landed inside a commit:\n{report}"
