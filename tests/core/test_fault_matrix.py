"""The storage fault matrix (issue 13, item 8): every scenario on a real SQLite file, most with
real processes, each asserting what survives and what a person is told.

Scenarios: two processes on one store; disk full (a size-limited tmpfs, root only - skipped
with the reason otherwise); read-only folder (a read-only remount as root, permissions
otherwise); truncated and garbage files; WAL removed (after a kill, and while open); SIGKILL of a
window-like writer at random moments x20 (while a headless sleep runs on the same store every
other round). The SIGKILL-during-sleep trials (pass boundaries, re-audit) are in
``test_crash_safety.py``.

Each asserts: ``integrity_check`` ok (or the file refused and left byte-for-byte untouched), no
turn acknowledged as committed is lost, and the message says what happened (no traceback).
At the end the module prints the matrix: scenarios tried, survived, data lost, corrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.errors import CorruptDatabase, NotADatabase, ReadOnlyStore, StoreError
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from tests.core import matrixprint
from tests.core.storeholder import REPO, Holder, child_env, headless_sleep

KILLS = 20
RNG_SEED = 20_261_201
MATRIX: list[dict[str, Any]] = []


def record(scenario: str, *, tried: int = 1, survived: int = 1, lost: int = 0,
           corrupted: int = 0, note: str = "") -> None:
    MATRIX.append({"scenario": scenario, "tried": tried, "survived": survived, "lost": lost,
                   "corrupted": corrupted, "note": note})


@pytest.fixture(scope="module", autouse=True)
def print_matrix(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    matrixprint.print_matrix(
        request, "storage fault matrix (scenario | tried | survived | data lost | corrupted)",
        MATRIX, 44, notes=True)


def file_bytes(path: Path) -> bytes:
    """Read a database file's bytes - only from tests with no connection open in this process
    on that file (closing this descriptor would drop such a connection's POSIX locks)."""
    return path.read_bytes()


def sleep_cli(folder: Path) -> subprocess.CompletedProcess[str]:
    return headless_sleep(folder)


def assert_one_sentence(run: subprocess.CompletedProcess[str], *words: str) -> None:
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    for w in words:
        assert w in run.stderr, run.stderr


# ---------------------------------------------------------------- mounts (root only)


def _can_mount() -> str | None:
    if not sys.platform.startswith("linux"):
        return "size-limited and read-only mounts are set up with Linux tmpfs"
    if os.geteuid() != 0:
        return "not running as root: cannot mount a size-limited tmpfs"
    if shutil.which("mount") is None:
        return "no mount command"
    return None


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    why = _can_mount()
    if why is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    path.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                          str(path)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        reason = f"mounting a tmpfs failed: {out.stderr.strip()}"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


FILL = r"""
import json, sys
from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.store import Store
store = Store(sys.argv[1])
acked, error = 0, None
try:
    for i in range(1_000_000):
        store.add_turn("user", f"turn {i} " + "x" * 4000)
        acked += 1
except StoreError as exc:
    error = [type(exc).__name__, str(exc)]
try:
    store.close()
except StoreError as exc:
    error = error or [type(exc).__name__, str(exc)]
print(json.dumps({"acked": acked, "error": error}))
"""


def test_disk_full_mid_session_is_said_and_loses_nothing_committed(tmp_path: Path) -> None:
    """Fails on the old code: the person read "cannot rollback - no transaction is active"."""
    with tmpfs(tmp_path / "small", "1500k") as mnt:
        db = mnt / "nocturne.db"
        ballast = mnt / "ballast"
        ballast.write_bytes(b"\0" * 200_000)  # freed below, as a person would free space
        out = subprocess.run([sys.executable, "-c", FILL, str(db)], capture_output=True,
                             text=True, env=child_env(), cwd=REPO, timeout=120, check=False)
        assert out.returncode == 0, out.stderr  # a known error, no traceback, no crash
        report = json.loads(out.stdout)
        kind, message = report["error"]
        assert kind == "DiskFull", message
        assert "is full" in message and "rollback" not in message.lower()
        run = sleep_cli(mnt)  # the headless sleep on the full disk: one sentence, or done
        assert "Traceback" not in run.stderr, run.stderr
        if run.returncode != 0:
            assert "full" in run.stderr, run.stderr
        from nocturne_desktop.ui.app import InstanceLock

        lock = InstanceLock(mnt)  # the window at start-up on the full disk
        assert not lock.acquire() and not lock.held_elsewhere
        assert "is full" in lock.failure_message()
        assert "already open" not in lock.failure_message()
        ballast.unlink()
        with Store(db) as store:
            turns = store.turns()
            assert store.integrity_check() == "ok"
            store.add_turn("user", "written once space was freed")
        lost = max(0, report["acked"] - len(turns))
        assert lost == 0, f"{lost} acknowledged turns lost"
        assert [t.text.split()[1] for t in turns[:report["acked"]]] == \
            [str(i) for i in range(report["acked"])]
    record("disk full mid-session (tmpfs 1.5 MB)", lost=lost,
           note=f"{report['acked']} turns committed, then DiskFull said")


def test_read_only_folder_is_said_and_nothing_is_changed(tmp_path: Path) -> None:
    from nocturne_desktop.ui.app import InstanceLock

    root = _can_mount() is None
    folder = tmp_path / "ro"
    ctx = tmpfs(folder, "4m") if root else contextlib.nullcontext(folder)
    with ctx:
        folder.mkdir(exist_ok=True)
        with Store(folder / "nocturne.db") as store:
            store.append("human", FactDraft("The user lives in Lisbon."))
        before = file_bytes(folder / "nocturne.db")
        if root:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            (folder / "nocturne.db").chmod(0o444)
            folder.chmod(0o555)
        try:
            lock = InstanceLock(folder)
            assert not lock.acquire() and not lock.held_elsewhere
            msg = lock.failure_message()
            assert "already open" not in msg and ("read-only" in msg or "permissions" in msg)
            with pytest.raises(ReadOnlyStore, match="read-only"), \
                    Store(folder / "nocturne.db") as store:
                store.add_turn("user", "cannot be written")
            assert_one_sentence(sleep_cli(folder), "read-only")
            assert file_bytes(folder / "nocturne.db") == before
        finally:
            if root:
                subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=False)
            else:
                folder.chmod(0o755)
        with Store(folder / "nocturne.db") as store:
            assert store.integrity_check() == "ok" and store.active_count() == 1
    record("read-only folder (" + ("ro remount" if root else "permissions") + ")",
           note="refused as read-only, file unchanged")


def _seeded(path: Path, n: int = 400) -> None:
    with Store(path) as store, store.transaction():
        for i in range(n):
            store.add_turn("user", f"turn {i} " + "words " * 40)
            store.append("scratch", FactDraft(f"The user mentioned number {i} in a story."))


@pytest.mark.parametrize("cut", [0.5, 0.9, 4096 + 100])
def test_a_truncated_file_is_refused_untouched(tmp_path: Path, cut: float) -> None:
    db = tmp_path / "nocturne.db"
    _seeded(db)
    raw = file_bytes(db)
    size = int(len(raw) * cut) if cut < 1 else int(cut)
    db.write_bytes(raw[:size])
    before = file_bytes(db)
    with pytest.raises(CorruptDatabase) as info, Store(db) as store:
        store.all_facts()
        store.turns()
        assert store.integrity_check() == "ok"
    assert "nocturne.db-wal" in str(info.value)  # the advice keeps the WAL with the database
    assert_one_sentence(sleep_cli(tmp_path), "damaged")
    assert file_bytes(db) == before
    record(f"truncated file ({size} of {len(raw)} bytes)", note="refused as damaged, untouched")


@pytest.mark.parametrize("kind", ["random", "text", "header-then-garbage", "zeros-after-page-1"])
def test_a_garbage_file_is_refused_untouched(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "nocturne.db"
    rng = random.Random(kind)
    if kind == "random":
        content = rng.randbytes(16384)
    elif kind == "text":
        content = b"Eggs\nMilk\nBread\n" * 1000
    elif kind == "header-then-garbage":
        content = b"SQLite format 3\x00" + rng.randbytes(16384)
    else:
        _seeded(db, 50)
        good = file_bytes(db)
        content = good[:4096] + b"\0" * (len(good) - 4096)
    db.write_bytes(content)
    with pytest.raises(CorruptDatabase) as info, Store(db) as store:
        store.all_facts()
        assert store.integrity_check() == "ok"
    if kind in ("random", "text"):
        assert isinstance(info.value, NotADatabase)
    run = sleep_cli(tmp_path)
    assert_one_sentence(run)
    assert "damaged" in run.stderr or "not a SQLite database" in run.stderr
    assert file_bytes(db) == content
    record(f"garbage file ({kind})", note="refused, untouched")


def _acked_stream(holder: Holder, n: int, stop_after: float | None = None) -> int:
    """Ask the holder for ``n`` streamed turns; return how many it acknowledged (it may be
    killed by the caller after ``stop_after`` seconds)."""
    assert holder.proc.stdin is not None and holder.proc.stdout is not None
    holder.proc.stdin.write(f"stream {n}\n")
    holder.proc.stdin.flush()
    acked = 0
    t0 = time.monotonic()
    for _ in range(n):
        if stop_after is not None and time.monotonic() - t0 >= stop_after:
            break
        line = holder.proc.stdout.readline()
        if not line.startswith("ok "):
            break
        acked = int(line.split()[1])
    return acked


def test_wal_removed_after_a_kill_opens_intact(tmp_path: Path, holder: Holder) -> None:
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    acked = _acked_stream(holder, 200)
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait(10)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Store(db) as store:
        assert store.integrity_check() == "ok"
        texts = [t.text for t in store.turns()]
    # what the WAL alone held is gone with it (that is what deleting it means), but the store
    # is a consistent earlier state: a prefix of what was written
    written = ["hello from the window"] + [f"streamed turn {i} {i - 1}" for i in range(1, acked)]
    assert texts == written[:len(texts)]
    record("WAL and SHM deleted by hand after a SIGKILL", lost=acked - len(texts),
           note=f"opens intact at the last checkpoint ({len(texts)} of {acked} turns); the "
                "rest lived only in the deleted WAL - why the advice keeps the three together")


def test_wal_removed_while_open_loses_nothing(tmp_path: Path, holder: Holder) -> None:
    db = tmp_path / "nocturne.db"
    holder.send(f"open {db}")
    holder.send("worker 3")
    Path(f"{db}-wal").unlink()  # by hand, while the window's store is open
    holder.send("write 5")  # the open connection still has the log open: it goes on
    with pytest.raises(AssertionError, match="StorageIOError: The operating system reported an "
                                             "input/output error"):
        holder.send("worker 2")  # a new connection finds the log gone: said as an I/O error
    written = holder.send("write 3")
    holder.send("close")  # the last connection checkpoints from the log it still has open
    with Store(db) as store:
        assert store.integrity_check() == "ok"
        assert len(store.turns()) == written
    record("WAL deleted while the store is open",
           note="new connections get an I/O error; closing checkpoints, nothing lost")


def test_two_processes_writing_one_store_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "nocturne.db"
    a, b = Holder(), Holder()
    try:
        a.send(f"open {db}")
        b.send(f"open {db}")
        for _ in range(3):
            a.send("worker 5")
            b.send("write 5")
            assert sleep_cli(tmp_path).returncode == 0
            b.send("worker 5")
            a.send("write 5")
        wa, wb = a.send("close"), b.send("close")
    finally:
        a.close()
        b.close()
    with Store(db) as store:
        assert store.integrity_check() == "ok"
        assert len(store.turns()) == wa + wb
        assert [s.status for s in store.sleeps()] == ["done"] * 3
    record("two processes + headless sleeps on one store", note=f"{wa + wb} turns, 3 sleeps")


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    """A window-like writer (long-lived store + worker stores) is SIGKILLed at a random moment,
    every other round while a headless sleep runs on the same store; after each kill the store
    opens, is intact, holds every turn that was acknowledged (and possibly more: the writer
    goes on committing while its acknowledgements wait in the pipe), and a new sleep runs."""
    rng = random.Random(RNG_SEED)
    db = tmp_path / "nocturne.db"
    _seeded(db, 30)
    base = 30
    lost = corrupted = 0
    problems: list[str] = []
    for k in range(KILLS):
        holder = Holder()
        sleeper = None
        try:
            holder.send(f"open {db}")
            holder.send("worker 2")
            if k % 2:
                sleeper = subprocess.Popen(
                    [sys.executable, "-m", "nocturne_desktop", "sleep", "--engine-only",
                     "--data-dir", str(tmp_path)], cwd=REPO, env=child_env(),
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            acked = _acked_stream(holder, 100_000, stop_after=rng.uniform(0.0, 0.3))
            holder.proc.send_signal(signal.SIGKILL)
            holder.proc.wait(10)
        finally:
            holder.close()
            if sleeper is not None:
                _, err = sleeper.communicate(timeout=60)
                if sleeper.returncode not in (0, 1) or "Traceback" in err:
                    problems.append(f"kill {k}: the concurrent sleep: {err[-300:]}")
        expected = base + acked  # acked counts open's turn, the worker's two and the stream
        try:
            with Store(db) as store:
                check = store.integrity_check()
                turns = len(store.turns())
                if check != "ok":
                    corrupted += 1
                    problems.append(f"kill {k}: integrity_check: {check[:200]}")
                if turns < expected:
                    lost += expected - turns
                    problems.append(f"kill {k}: {turns} turns, {expected} acknowledged")
                base = turns
        except StoreError as exc:
            corrupted += 1
            problems.append(f"kill {k}: reopening failed: {exc}")
            break
    with Store(db) as store:
        sid = store.begin_sleep({})  # the lock of every killed process was released by the OS
        store.finish_sleep(sid, "done", {})
        assert not any(s.status == "running" for s in store.sleeps())
    record(f"SIGKILL of a window-like writer x{KILLS}", tried=KILLS,
           survived=KILLS - corrupted, lost=lost, corrupted=corrupted,
           note="a headless sleep runs in every other round")
    assert not problems, "\n".join(problems)
