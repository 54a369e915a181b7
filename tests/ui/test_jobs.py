"""The background-job primitive: its own store on its own thread, progress, cancel, failures as
exceptions, and superseded jobs that never reach the UI."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QElapsedTimer, QTimer

from nocturne_desktop.core.cancel import Cancelled
from nocturne_desktop.core.ports import ModelCancelled, ModelTruncated
from nocturne_desktop.core.store import Store
from nocturne_desktop.ui.jobs import Job, JobContext, JobSlot, ModelSource
from nocturne_desktop.ui.jobs.bodies import chat as chat_bodies
from tests.core.fakemodel import Chunks, FakeModel
from tests.ui.conftest import seed_store


class Recorder:
    def __init__(self, job: Job) -> None:
        self.items: list[Any] = []
        self.results: list[Any] = []
        self.errors: list[BaseException] = []
        self.ended = 0
        job.on_yield(self.items.append).success(self.results.append).failure(self.errors.append)
        job.ended(self._end)

    def _end(self) -> None:
        self.ended += 1


def run(qtbot: Any, job: Job) -> Recorder:
    """Start ``job`` and wait for its end; what it delivered."""
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    return rec


def test_a_function_job_runs_on_its_own_thread_with_its_own_store(qtbot: Any, db_path: Path) -> None:
    seed_store(db_path)
    gui = threading.get_ident()

    def body(ctx: JobContext) -> tuple[int, int]:
        return ctx.store.active_count(), threading.get_ident()

    job = Job(body, name="count", db_path=db_path)
    rec = run(qtbot, job)
    (count, worker), = rec.results
    assert count == 9
    assert worker != gui
    assert job.context.store_thread == worker  # the store was opened on the job's thread
    assert job.context._store is None  # and closed when it ended
    assert rec.errors == [] and job.done


def test_each_job_opens_its_own_store(qtbot: Any, db_path: Path) -> None:
    seed_store(db_path)
    release = threading.Event()
    seen: list[tuple[int, int]] = []

    def body(ctx: JobContext) -> None:
        seen.append((id(ctx.store), threading.get_ident()))
        release.wait(5)

    jobs = [Job(body, name=f"s{i}", db_path=db_path).start() for i in range(2)]
    qtbot.waitUntil(lambda: len(seen) == 2, timeout=5_000)
    release.set()
    for j in jobs:
        assert j.wait(5_000)
    assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1]
    assert {j.context.store_thread for j in jobs} == {t for _, t in seen}


def test_a_generator_job_yields_progress_then_its_return_value(qtbot: Any) -> None:
    def body(ctx: JobContext) -> Generator[int, None, str]:
        yield from range(3)
        return "all"

    rec = run(qtbot, Job(body, name="gen"))
    assert rec.items == [0, 1, 2]
    assert rec.results == ["all"]


def test_failure_carries_the_exception_object(qtbot: Any) -> None:
    class Boom(ValueError):
        pass

    boom = Boom("the store said no")

    def body(ctx: JobContext) -> None:
        raise boom

    rec = run(qtbot, Job(body, name="boom"))
    assert rec.errors == [boom]
    assert rec.errors[0] is boom and rec.results == []


@pytest.mark.parametrize("exc", [Cancelled("cancelled"), ModelCancelled("cancelled")])
def test_a_stopped_body_ends_quietly(qtbot: Any, exc: Exception) -> None:
    def body(ctx: JobContext) -> None:
        raise exc

    rec = run(qtbot, Job(body, name="quiet"))
    assert rec.errors == [] and rec.results == []


def test_cancel_is_checked_at_every_yield_and_drops_the_rest(qtbot: Any) -> None:
    closed = threading.Event()
    produced: list[int] = []

    def body(ctx: JobContext) -> Iterator[int]:
        try:
            for i in range(10_000):
                produced.append(i)
                yield i
                time.sleep(0.005)
        finally:
            closed.set()
        return 0  # type: ignore[return-value]

    job = Job(body, name="ticker")
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: len(rec.items) >= 3, timeout=5_000)
    job.cancel()
    assert job.token.cancelled  # model calls abort on the core's token
    n = len(rec.items)
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    assert closed.is_set()  # the generator was closed at its next yield
    assert len(produced) < 10_000
    assert len(rec.items) == n  # nothing queued before the cancel reached the UI after it
    assert rec.results == [] and rec.errors == []


def test_finish_on_cancel_drains_the_body_without_delivering(qtbot: Any) -> None:
    wrote_record = threading.Event()

    def body(ctx: JobContext) -> Iterator[str]:
        yield "started"
        while not ctx.cancel.cancelled:
            time.sleep(0.005)
        yield "cancelled"  # the core's own end event, after it wrote its record
        wrote_record.set()

    job = Job(body, name="drain", finish_on_cancel=True)
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: rec.items == ["started"], timeout=5_000)
    job.cancel()
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    assert wrote_record.is_set()
    assert rec.items == ["started"]


def test_stop_ends_early_but_delivers_what_the_body_still_reports(qtbot: Any) -> None:
    def body(ctx: JobContext) -> Iterator[str]:
        yield "tok"
        ctx.cancel.wait(5)
        yield "partial, stopped"
        return "done"  # type: ignore[return-value]

    job = Job(body, name="chat")
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: rec.items == ["tok"], timeout=5_000)
    job.stop()
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    assert rec.items == ["tok", "partial, stopped"]
    assert rec.results == ["done"]


def test_a_superseded_job_never_reaches_the_ui(qtbot: Any) -> None:
    slot = JobSlot()
    release = threading.Event()

    def slow(ctx: JobContext) -> str:
        release.wait(5)  # ignores its token: the result comes, late
        return "old"

    first = Job(slow, name="old")
    old = Recorder(first)
    slot.start(first)
    second = Job(lambda ctx: "new", name="new")
    new = Recorder(second)
    slot.start(second)
    assert first.cancelled and slot.current is second
    qtbot.waitUntil(lambda: new.ended == 1, timeout=5_000)
    release.set()
    qtbot.waitUntil(lambda: old.ended == 1, timeout=5_000)
    assert new.results == ["new"]
    assert old.results == [] and old.items == [] and old.errors == []
    assert slot.wait(5_000)


def test_a_job_leases_a_model_and_gives_it_back(qtbot: Any) -> None:
    given_back: list[object] = []

    class Source(ModelSource):
        def give_back(self, client: Any) -> None:
            given_back.append(client)

    model = object()
    rec = run(qtbot, Job(lambda ctx: ctx.model, name="lease", models=Source(lambda: model)))
    assert rec.results == [model] and given_back == [model]


def test_the_gui_thread_keeps_ticking_while_a_job_works(qtbot: Any, db_path: Path) -> None:
    seed_store(db_path)

    def body(ctx: JobContext) -> Iterator[int]:
        for i in range(40):
            ctx.store.all_facts()
            time.sleep(0.01)
            yield i

    gaps: list[int] = []
    clock = QElapsedTimer()
    clock.start()
    timer = QTimer()
    timer.setInterval(5)

    def tick() -> None:
        gaps.append(clock.restart())

    timer.timeout.connect(tick)
    timer.start()
    t0 = time.perf_counter()
    job = Job(body, name="busy", db_path=db_path)
    rec = Recorder(job)
    job.start()
    started_in = time.perf_counter() - t0
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=10_000)
    timer.stop()
    assert started_in < 0.05
    assert len(rec.items) == 40
    assert len(gaps) > 20 and max(gaps[1:]) < 100


def test_the_chat_body_reports_the_commit_first_and_a_reply_cut_at_the_cap_is_remembered(
    qtbot: Any, db_path: Path
) -> None:
    model = FakeModel()
    model.when("NEW TURNS:", {"facts": []})
    model.queue(Chunks("Hello ", "wor", ModelTruncated("cut at the size cap")))
    job = Job(functools.partial(chat_bodies.chat_turn, user_text="hi there"), name="chat",
              db_path=db_path, models=ModelSource(lambda: model))
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    assert rec.errors == []
    assert rec.items[0] == chat_bodies.ChatAccepted(1)  # committed before the model was called
    replied = [i for i in rec.items if isinstance(i, chat_bodies.ChatReplied)]
    assert replied == [chat_bodies.ChatReplied("Hello wor", True, "cut at the size cap", through=2)]
    assert rec.items[-1] == replied[0]  # the reply's job ends there: the encoder runs apart
    assert len(model.calls) == 1 and model.calls[0].kind == "stream"
    summary = remembered(qtbot, db_path, model, through=2)  # the cut reply is still remembered
    assert summary.error is None and len(model.calls) == 2
    with Store(db_path) as store:
        assert store.get_meta("extracted_through") == "2"


def test_the_chat_body_stops_the_reply_on_its_own_token_and_it_is_still_remembered(
    qtbot: Any, db_path: Path
) -> None:
    model = FakeModel()
    model.when("NEW TURNS:", {"facts": []})
    stop = chat_bodies.ReplyStop()
    model.queue(Chunks("one ", "two ", "three"))
    stop.request()  # Esc before the first token
    job = Job(functools.partial(chat_bodies.chat_turn, user_text="hi", stop=stop), name="chat",
              db_path=db_path, models=ModelSource(lambda: model))
    rec = Recorder(job)
    job.start()
    qtbot.waitUntil(lambda: rec.ended == 1, timeout=5_000)
    assert not job.token.cancelled  # the job's own token was never touched
    assert rec.items[-1] == chat_bodies.ChatReplied("", True, through=1)  # the user's turn
    assert not stop.request()  # the reply is over: a second Esc must cancel the job instead
    remembered(qtbot, db_path, model, through=1)
    last = model.calls[-1]  # the encoder read what was said
    assert last.kind != "stream" and "user: hi" in last.messages[-1]["content"]


def remembered(qtbot: Any, db_path: Path, model: Any, *, through: int | None
               ) -> chat_bodies.EncodeSummary:
    """The encoder's body over the turns up to ``through``, as the session runs it (a job)."""
    got: list[chat_bodies.EncodeSummary] = []
    job = Job(functools.partial(chat_bodies.remember_turns, through=through), name="remember",
              db_path=db_path, models=ModelSource(lambda: model)).success(got.append)
    job.start()
    qtbot.waitUntil(lambda: job.done, timeout=5_000)
    assert len(got) == 1
    return got[0]


_MANY_JOBS = """
import gc, time
from PySide6.QtWidgets import QApplication
from nocturne_desktop.ui.jobs import Job, JobSlot
app = QApplication.instance() or QApplication([])
slot, ended = JobSlot(), [0]
for i in range(2000):
    job = Job(lambda ctx: 1, name="many").ended(lambda: ended.__setitem__(0, ended[0] + 1))
    slot.start(job)
    del job  # only the slot (and the job module) hold it now, as for a superseded read
    for _ in range(3):
        app.processEvents()
    if i % 50 == 0:
        gc.collect()
deadline = time.time() + 30
while ended[0] < 2000 and time.time() < deadline:
    app.processEvents()
slot.wait()
print("ended", ended[0])
"""


def test_thousands_of_short_jobs_dropped_at_once_never_free_a_running_thread(tmp_path: Path) -> None:
    """A job whose end reached the GUI thread used to be let go while its thread was still
    finishing (and its runner and thread were also deleteLater'd there): Python then freed a
    running QThread ("Destroyed while thread is still running", an abort) or the runner twice
    (a segfault) — the rare native crash on close. Run in a child process: the old code aborts."""
    script = tmp_path / "many_jobs.py"
    script.write_text(_MANY_JOBS)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ended", "2000"]


def test_the_jobs_package_loads_its_qt_parts_only_when_named() -> None:
    """A worker process imports ``ui.jobs`` on its way to the child side: the package alone
    loads no Qt, and every name it exports still resolves (the Qt ones on first use)."""
    code = ("import sys, nocturne_desktop.ui.jobs as jobs\n"
            "assert not [m for m in sys.modules if m.startswith('PySide6')], 'Qt at import'\n"
            "for name in jobs.__all__:\n"
            "    getattr(jobs, name)\n"
            "assert 'PySide6.QtCore' in sys.modules and jobs.Job.__module__.endswith('.job')\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
