"""A sleep's passes in a worker process (``Job(process=...)``, :mod:`nocturne_desktop.ui.jobs.child`):
real processes (spawn), a real SQLite file, real HTTP to the scripted server.

The worker delivers what an in-thread job delivers (yields, changed rows, the result, the
exception as itself), a cancel ends it at a pass boundary, a killed worker is a failure that
says so with its sleep marked interrupted and its open transaction rolled back, and the API key
reaches the worker through the pipe only. Every test here fails on the code before the worker
process existed (no ``process=``, no ``Session(child_process=...)``)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import ReadOnlyStore, SleepAlreadyRunning
from nocturne_desktop.core.ports import ModelTimeout
from nocturne_desktop.core.sleep import SleepEventKind
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import PASSES
from nocturne_desktop.settings import ApiKey, Settings, key_origin
from nocturne_desktop.ui.jobs import ChildFailure, ChildProcess, Job, WorkerDied, describe_error
from nocturne_desktop.ui.session import Session
from tests import childbodies
from tests.core.sleepkit import task_of
from tests.fakeserver import FakeLLM
from tests.ui.conftest import seed_store, snapshot_of
from tests.ui.modelkit import seed_many
from tests.ui.test_flows import chat_requests, sleep_end, slow_pass

pytestmark = pytest.mark.timeout(120)

KILLED = ("the sleep's worker process ended unexpectedly (exit code -9, SIGKILL); "
          "memory is as of the last completed pass")


class Outcome:
    """Everything a job delivered, in order."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.yields: list[Any] = []
        self.changes: list[Any] = []
        self.results: list[Any] = []
        self.failures: list[BaseException] = []
        self.ended = False
        job.on_yield(self.yields.append).on_changes(self.changes.append).success(
            self.results.append).failure(self.failures.append).ended(self._end)

    def _end(self) -> None:
        self.ended = True


def run(qtbot: Any, job: Job, timeout: int = 30_000) -> Outcome:
    out = Outcome(job)
    job.start()
    qtbot.waitUntil(lambda: out.ended, timeout=timeout)
    job.wait()
    return out


def in_child(body: Any, db_path: Path | None = None, **kw: Any) -> Job:
    return Job(body, name="test", db_path=db_path, process=ChildProcess(**kw))


# --- the protocol --------------------------------------------------------------------------------


def test_a_worker_relays_every_yield_then_the_result(qtbot: Any) -> None:
    out = run(qtbot, in_child(functools.partial(childbodies.count_then_return, n=3)))
    assert out.job.in_child and out.job.child_pid not in (None, os.getpid())
    assert out.yields == [0, 1, 2]
    assert out.results == [30] and out.failures == []


def test_the_worker_loads_no_qt_no_http_and_not_the_main_module(qtbot: Any) -> None:
    out = run(qtbot, in_child(childbodies.where))
    [seen] = out.results
    assert seen["pid"] == out.job.child_pid
    assert seen["qt"] == []
    assert seen["main_file"] is None  # spawn did not run the test runner's main module again
    assert not seen["http"]  # no model: the HTTP stack is not even imported


def test_a_body_that_does_not_pickle_runs_on_the_thread(qtbot: Any) -> None:
    out = run(qtbot, in_child(lambda ctx: 7))
    assert out.results == [7] and not out.job.in_child and out.job.child_pid is None


@pytest.mark.parametrize("exc", [
    SleepAlreadyRunning("a sleep is already running on this memory (pid 1)", pid=1, since=2.0),
    ReadOnlyStore("the memory is read-only"),
    ModelTimeout("the model did not answer in time", which="idle", url="http://x/v1"),
    ValueError("not a number"),
    KeyError("no such key"),
], ids=lambda e: type(e).__name__)
def test_an_error_in_the_worker_arrives_as_itself(qtbot: Any, exc: BaseException) -> None:
    child = run(qtbot, in_child(functools.partial(childbodies.fail_with, exc=exc)))
    thread = run(qtbot, Job(functools.partial(childbodies.fail_with, exc=exc), name="thread"))
    [got], [ref] = child.failures, thread.failures
    assert type(got) is type(exc) and str(got) == str(exc)
    assert dict(vars(got).items()) == vars(exc)
    assert describe_error(got) == describe_error(ref)


def test_a_bug_in_the_worker_is_logged_with_its_traceback_in_the_windows_log(
        qtbot: Any, tmp_path: Path) -> None:
    path = logfile.install(tmp_path / "log")
    assert path is not None
    try:
        child = run(qtbot, in_child(childbodies.bug))
        odd = run(qtbot, in_child(functools.partial(childbodies.fail_unpicklable,
                                                    message="holds a lock")))
        text = path.read_text(encoding="utf-8")
    finally:
        logfile.uninstall()
    [exc] = child.failures
    assert type(exc) is KeyError and "no such key" in str(exc)
    assert "job test failed unexpectedly in its worker process" in text
    assert 'in bug' in text and "KeyError: 'no such key'" in text  # the child's traceback
    [sub] = odd.failures
    assert isinstance(sub, ChildFailure)
    assert str(sub).startswith("unexpected error (Unpicklable: holds a lock)")
    assert str(path) in str(sub)  # the worker names the window's log file
    assert "in fail_unpicklable" in sub.child_traceback
    assert "in fail_unpicklable" in text


def test_stop_lets_the_worker_finish_and_report(qtbot: Any) -> None:
    job = in_child(childbodies.wait_for_the_cancel)
    out = Outcome(job)
    job.start()
    qtbot.waitUntil(lambda: out.yields == ["started"], timeout=20_000)
    job.stop()
    qtbot.waitUntil(lambda: out.ended, timeout=20_000)
    assert out.yields == ["started", "saw the cancel"] and out.results == ["finished"]


def test_a_worker_that_ignores_the_cancel_is_killed_after_the_grace(
        qtbot: Any, caplog: pytest.LogCaptureFixture) -> None:
    job = in_child(childbodies.ignore_the_cancel, grace_s=0.5)
    out = Outcome(job)
    job.start()
    qtbot.waitUntil(lambda: out.yields == ["started"], timeout=20_000)
    pid = job.child_pid
    assert pid is not None
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="nocturne.ui"):
        job.cancel()
        qtbot.waitUntil(lambda: out.ended, timeout=20_000)
    assert time.monotonic() - t0 < 10
    assert out.failures == [] and out.results == []  # a cancelled job says nothing
    assert any("did not end within 0.5 s of the cancel; killing it" in r.getMessage()
               for r in caplog.records)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_killed_worker_rolls_back_its_transaction_and_its_sleep_reads_interrupted(
        qtbot: Any, db_path: Path) -> None:
    seed_store(db_path)
    before = snapshot_of(Store(db_path).all_facts())
    job = Job(childbodies.hang_in_a_sleep_transaction, name="sleep", db_path=db_path,
              process=ChildProcess(what="the sleep",
                                   after_death="memory is as of the last completed pass"))
    out = Outcome(job)
    job.start()
    qtbot.waitUntil(lambda: "written" in out.yields, timeout=20_000)
    sid = int(out.yields[0].split()[1])
    assert job.child_pid is not None
    os.kill(job.child_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: out.ended, timeout=20_000)
    [exc] = out.failures
    assert isinstance(exc, WorkerDied) and exc.exitcode == -9
    assert str(exc) == KILLED
    with Store(db_path) as store:
        assert snapshot_of(store.all_facts()) == before  # the open transaction rolled back
        assert childbodies.HUNG_TEXT not in [f.text for f in store.all_facts()]
        assert [(s.id, s.status) for s in store.sleeps()] == [(sid, "interrupted")]
        assert store.integrity_check() == "ok"
    # the views heard of it: the sleep's record arrived as a change
    assert [s.status for rows in out.changes for s in rows.sleeps][-1] == "interrupted"


# --- the session: a sleep both ways --------------------------------------------------------------


def _sleep_through(qtbot: Any, session: Session, **kw: Any) -> tuple[Job, list[Any], list[Any]]:
    events: list[Any] = []
    rows: list[Any] = []
    session.sleepEvent.connect(events.append)
    session.changes.subscribe(lambda commit: rows.append(commit.rows))
    job = session.start_sleep(**kw)
    qtbot.waitUntil(lambda: not session.busy, timeout=60_000)
    session.wait_threads()
    return job, events, rows


def _shape(rows: list[Any]) -> list[tuple[Any, ...]]:
    """What each commit changed (ids, not the times)."""
    return [(r.changes.added, r.changes.changed, r.changes.deactivated, len(r.changes.versions),
             [s.status for s in r.sleeps], sorted(r.facts), r.complete) for r in rows]


@pytest.mark.parametrize("dry_run", [False, True], ids=["sleep", "dry run"])
def test_a_rules_only_sleep_is_the_same_in_the_worker_and_on_the_thread(
        qtbot: Any, tmp_path: Path, dry_run: bool) -> None:
    """The same store twice: identical events, changes and final facts either way."""
    from nocturne_desktop.core.policy import RetentionPolicy

    one, two = tmp_path / "thread" / "m.db", tmp_path / "child" / "m.db"
    one.parent.mkdir()
    two.parent.mkdir()
    seed_store(one)
    seed_many(one, 80, every=7)
    with Store(one) as store, contextlib.closing(sqlite3.connect(two)) as copy:
        store._conn.backup(copy)  # a page-for-page copy, through SQLite
    settings = Settings(retention=RetentionPolicy(max_active_facts=50))
    results = {}
    for path, child in ((one, False), (two, True)):
        session = Session(path, settings, child_process=child)
        try:
            job, events, rows = _sleep_through(qtbot, session, engine_only=True, dry_run=dry_run)
            assert job.in_child is child
            results[child] = (
                [e.kind for e in events],
                [(e.figures.pass_name, e.figures.accepted, e.figures.enforced)
                 for e in events if e.kind.after_pass and e.figures is not None],
                _shape(rows),
                snapshot_of(session.store.all_facts()),
                [(v.label, v.active_count) for v in session.store.versions()],
                [s.status for s in session.store.sleeps()],
            )
        finally:
            session.shutdown()
    assert results[True] == results[False]
    kinds = results[True][0]
    assert kinds[0] == SleepEventKind.STARTED and kinds[-1] == SleepEventKind.DONE
    if not dry_run:
        assert results[True][2], "the commits reached the window"


def test_the_review_plan_and_apply_run_in_the_worker_as_on_the_thread(
        qtbot: Any, tmp_path: Path) -> None:
    from nocturne_desktop.core.policy import RetentionPolicy

    settings = Settings(retention=RetentionPolicy(max_active_facts=6))
    results = {}
    for child in (False, True):
        path = tmp_path / str(child) / "m.db"
        path.parent.mkdir()
        seed_store(path)
        session = Session(path, settings, child_process=child)
        try:
            plans: list[Any] = []
            job = session.start_review_plan(engine_only=True, on_plan=plans.append)
            qtbot.waitUntil(lambda s=session: not s.busy, timeout=60_000)
            assert job.in_child is child
            [plan] = plans
            approved = list(plan.tickable)
            applied: list[Any] = []
            job = session.apply_review(plan, approved, on_result=applied.append)
            qtbot.waitUntil(lambda s=session: not s.busy, timeout=60_000)
            session.wait_threads()
            assert job.in_child is child and len(applied) == 1
            results[child] = ([(it.mutation.kind, it.mutation.accepted) for it in plan.items],
                              snapshot_of(session.store.all_facts()),
                              [s.status for s in session.store.sleeps()])
        finally:
            session.shutdown()
    assert results[True] == results[False]
    assert results[True][0], "the plan has changes"


def test_a_large_request_reaches_the_worker_in_pieces_not_in_one_pickle(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review's apply carries the plan's pages (~37 MB at 100k facts). Pickled whole on the
    job's thread, then again by spawn into the worker's start-up data, each was one C call of
    tens of ms holding the GIL: the GUI thread's longest gap at the apply's start. The pages go
    as out-of-band buffers on the control pipe instead: both pickles stay small, and the worker
    gets every byte. Fails on the code before (both pickles held the ~6 MB of pages)."""
    import multiprocessing.reduction as reduction
    import pickle
    import threading

    from nocturne_desktop.ui.models.planpages import paged
    from tests.ui.test_plan_model import synthetic_plan

    plan = paged(synthetic_plan(15_000))  # 30,001 changes
    assert sum(map(len, plan.pages)) > 6_000_000
    expected = childbodies.plan_digest(None, plan)
    main = threading.get_ident()
    on_the_thread: list[int] = []
    into_spawn: list[int] = []
    real_dumps, real_dump = pickle.dumps, reduction.dump

    def dumps(obj: Any, *args: Any, **kw: Any) -> bytes:
        out = real_dumps(obj, *args, **kw)
        if threading.get_ident() != main:
            on_the_thread.append(len(out))
        return out

    def dump(obj: Any, file: Any, protocol: Any = None) -> None:
        at = file.tell()
        real_dump(obj, file, protocol)
        into_spawn.append(file.tell() - at)

    monkeypatch.setattr(pickle, "dumps", dumps)
    monkeypatch.setattr(reduction, "dump", dump)
    out = run(qtbot, in_child(functools.partial(childbodies.plan_digest, plan=plan)))
    assert out.job.in_child and out.failures == []
    assert out.results == [expected] and expected["types"] == ["bytes"]
    assert on_the_thread and max(on_the_thread) < 64_000, on_the_thread
    assert into_spawn and max(into_spawn) < 64_000, into_spawn


# --- the window ----------------------------------------------------------------------------------


def test_the_window_follows_the_workers_commits(
        qtbot: Any, make_window: Any, db_path: Path) -> None:
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.types import BLOCKS

    seed_many(db_path, 120)
    win = make_window(Settings(retention=RetentionPolicy(max_active_facts=60)))
    model = win.memory.model
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        job = win.session.start_sleep(engine_only=True)
    assert job.in_child
    with Store(db_path) as store:
        for b in BLOCKS:
            assert [f.id for f in model.facts(b)] == [f.id for f in store.get_block(b)], b
        counts = {i.name: i.active_count for i in store.list_blocks()}
        sleep = store.sleeps()[-1]
    assert sum(counts.values()) == 60
    assert win.status.active.text() == "60 active facts"
    assert win.timeline.model.all_versions() == Store(db_path).versions()
    title = win.timeline.model.data(win.timeline.model.index(0, 0))
    assert title.startswith(f"Sleep #{sleep.id} · done")


def _proc_text(pid: int, what: str) -> bytes:
    return Path(f"/proc/{pid}/{what}").read_bytes()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_api_key_reaches_the_worker_through_the_pipe_only_and_cancel_ends_it_at_a_boundary(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-0123456789-never-on-a-command-line"
    monkeypatch.delenv("NOCTURNE_API_KEY", raising=False)
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("promote", 60))
    # the key saved for this server (it goes to no other without the person's yes)
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model",
                               key_host=key_origin(fake_llm.base_url)), key=ApiKey(key))
    s = win.session
    job = s.start_sleep()
    qtbot.waitUntil(lambda: any(task_of(r)[0] == "promote" for r in chat_requests(fake_llm)),
                    timeout=30_000)
    assert job.in_child and job.child_pid is not None
    argv, env = _proc_text(job.child_pid, "cmdline"), _proc_text(job.child_pid, "environ")
    assert key.encode() not in argv and key.encode() not in env
    assert b"--multiprocessing-fork" in argv  # it is the worker we looked at
    assert all(r.headers.get("authorization") == f"Bearer {key}"
               for r in chat_requests(fake_llm))  # the key did reach the worker
    late: list[Any] = []
    s.sleepEvent.connect(late.append)
    with sleep_end(qtbot, s, 10_000) as blocker:
        win.sleep.cancel_button.click()
    assert blocker.args[0].kind == SleepEventKind.CANCELLED
    late.remove(blocker.args[0])
    qtbot.waitUntil(lambda: not s.busy, timeout=20_000)
    s.wait_threads()
    assert late == []  # nothing of the cancelled run reached the window
    labels = [v.label for v in s.store.versions()]
    assert labels[-1] == "pass:promote:before"
    merge_after = next(v for v in s.store.versions() if v.label == "pass:merge:after")
    assert snapshot_of(s.store.all_facts()) == snapshot_of(s.store.state_at(merge_after.seq))
    assert s.store.sleeps()[-1].status == "cancelled"
    request = next(r for r in chat_requests(fake_llm) if task_of(r)[0] == "promote")
    qtbot.waitUntil(lambda: request.disconnected_at is not None, timeout=5_000)


def test_a_worker_killed_mid_sleep_fails_clearly_and_the_window_sleeps_again(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path) -> None:
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("promote", 60))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    s = win.session
    job = s.start_sleep()
    qtbot.waitUntil(lambda: any(task_of(r)[0] == "promote" for r in chat_requests(fake_llm)),
                    timeout=30_000)
    assert job.child_pid is not None
    with sleep_end(qtbot, s, 20_000) as blocker:
        os.kill(job.child_pid, signal.SIGKILL)
    end = blocker.args[0]
    assert end.kind == SleepEventKind.FAILED and end.message == KILLED
    qtbot.waitUntil(lambda: not s.busy, timeout=20_000)
    s.wait_threads()
    assert KILLED in win.sleep.message.text()
    merge_after = next(v for v in s.store.versions() if v.label == "pass:merge:after")
    assert snapshot_of(s.store.all_facts()) == snapshot_of(s.store.state_at(merge_after.seq))
    assert s.store.sleeps()[-1].status == "interrupted"
    model = win.timeline.model
    assert str(model.data(model.index(0, 0))).startswith(
        f"Sleep #{s.store.sleeps()[-1].id} · interrupted")
    # the window is usable: a new sleep runs to its end
    with sleep_end(qtbot, s, 30_000) as blocker:
        s.start_sleep(engine_only=True)
    assert blocker.args[0].kind == SleepEventKind.DONE
    qtbot.waitUntil(lambda: not s.busy, timeout=20_000)
    assert [x.status for x in s.store.sleeps()] == ["interrupted", "done"]
    assert win.sleep.model.data(win.sleep.model.index(PASSES.index("forget"), 1)) == "done"


# --- a storage error ------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """A size-limited tmpfs at ``folder`` (Linux, root), so the disk can be filled for real."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is set up with a size-limited Linux tmpfs, as root")
    folder.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs",
                          str(folder)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        pytest.skip(f"mounting a tmpfs failed: {out.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill(path: Path) -> None:
    """Write ``path`` until the disk is full."""
    block = b"\0" * 65536
    with path.open("wb") as f:
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError:
            pass
        with contextlib.suppress(OSError):
            f.close()


def test_a_full_disk_fails_the_workers_sleep_with_the_threads_message(
        qtbot: Any, tmp_path: Path) -> None:
    with small_disk(tmp_path / "small") as folder:
        db = folder / "nocturne.db"
        seed_store(db)
        session = Session(db, Settings())
        try:
            fill(folder / "filler")
            messages = {}
            for child in (False, True):
                session.child_process = child
                events: list[Any] = []
                session.sleepEvent.connect(events.append)
                job = session.start_sleep(engine_only=True)
                qtbot.waitUntil(lambda: not session.busy, timeout=30_000)
                session.wait_threads()
                session.sleepEvent.disconnect(events.append)
                assert job.in_child is child
                assert events[-1].kind == SleepEventKind.FAILED
                messages[child] = events[-1].message
            assert messages[True] == messages[False]
            assert "full" in messages[True]
            (folder / "filler").unlink()
            assert [x.status for x in session.store.sleeps()] in ([], ["error", "error"])
            assert session.store.integrity_check() == "ok"
        finally:
            session.shutdown()


def test_the_builtin_engine_is_resolved_in_the_window_and_its_address_handed_to_the_worker(
        qtbot: Any, fake_llm: FakeLLM, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker never starts an engine of its own: the window's process resolves it (here a
    stand-in engine at the scripted server's address) and the worker talks to that."""
    from types import SimpleNamespace

    from nocturne_desktop.llm import builtin as builtin_engine
    from nocturne_desktop.settings import BUILTIN
    from tests.core.sleepkit import cooperative, pass_responder

    started: list[int] = []

    def start(**_kw: Any) -> Any:
        started.append(os.getpid())
        return SimpleNamespace(base_url=fake_llm.base_url, model_name="engine-model")

    monkeypatch.setattr(builtin_engine, "start", start)
    seed_store(db_path)
    fake_llm.respond_with(pass_responder(cooperative()))
    session = Session(db_path, Settings(endpoint=BUILTIN, model=""))
    try:
        job, events, _rows = _sleep_through(qtbot, session)
    finally:
        session.shutdown()
    assert job.in_child
    assert events[-1].kind == SleepEventKind.DONE, events[-1].message
    assert started == [os.getpid()]  # once, in the window's process (not the worker)
    models = {r.body.get("model") for r in chat_requests(fake_llm)}
    assert models == {"engine-model"}


def test_a_worker_that_cannot_start_leaves_the_job_on_its_thread(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import multiprocessing.context

    def refuse(self: Any) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", refuse)
    with caplog.at_level(logging.WARNING, logger="nocturne.ui"):
        out = run(qtbot, in_child(functools.partial(childbodies.count_then_return, n=2)))
    assert out.yields == [0, 1] and out.results == [20] and not out.job.in_child
    assert any("its worker process did not start" in r.getMessage() for r in caplog.records)


def test_closing_the_window_mid_sleep_ends_and_joins_the_worker(
        qtbot: Any, make_window: Any, fake_llm: FakeLLM, db_path: Path) -> None:
    seed_store(db_path)
    fake_llm.respond_with(slow_pass("promote", 60))
    win = make_window(Settings(base_url=fake_llm.base_url, model="fake-model"))
    job = win.session.start_sleep()
    qtbot.waitUntil(lambda: any(task_of(r)[0] == "promote" for r in chat_requests(fake_llm)),
                    timeout=30_000)
    pid = job.child_pid
    assert pid is not None
    t0 = time.monotonic()
    assert win.close()
    assert time.monotonic() - t0 < 10 and win.session.closed
    with pytest.raises(ProcessLookupError):  # ended at the boundary and reaped: not a zombie
        os.kill(pid, 0)
    with Store(db_path) as store:
        assert store.sleeps()[-1].status == "cancelled"
        assert [v.label for v in store.versions()][-1] == "pass:promote:before"
