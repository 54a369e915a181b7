"""``python -m tests.core.storeholder``: a process holding Stores open the way the window does.

It reads one command per line on stdin and answers ``ok …`` (or ``error …``) on stdout:

``open DB``      open the long-lived Store (the window's GUI-thread store) and write a turn
``worker N``     open a second Store on the same file, write N turns, close it (a chat job)
``write N``      write N turns through the long-lived store
``stream N``     write N turns through the long-lived store, answering ``ok i`` after each
                 commit (so a kill at any moment knows which turns were acknowledged)
``sleep``        begin a sleep on the long-lived store (holds the sleep lock); ``ok <id>``
``finish ID``    finish that sleep as done (releases the sleep lock)
``close``        close the long-lived store
``pid``          print this process's pid
``quit``         exit

Every write is a real committed transaction; ``ok`` carries the number of turns this process
wrote on the current database, so the caller can check that none is lost.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft

REPO = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Holder:
    """The window-like process: one long-lived Store plus short-lived worker Stores."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.core.storeholder"], cwd=REPO, env=child_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid

    def send(self, command: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer.startswith("ok "):
            raise AssertionError(f"{command!r}: {answer or 'the holder process died'}")
        return int(answer.split()[1])

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def headless_sleep(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nocturne_desktop", "sleep", "--engine-only", "--data-dir",
         str(folder)], cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=120)


def main() -> int:
    store: Store | None = None
    path = ""
    written = 0
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        try:
            if cmd == "open":
                path = arg
                written = 0
                store = Store(path)
                store.add_turn("user", "hello from the window")
                store.append("scratch", FactDraft(f"The user opened the window {written}."))
                written += 1
            elif cmd == "worker":
                with Store(path) as worker:
                    for i in range(int(arg)):
                        worker.add_turn("user", f"worker turn {written} {i}")
                        written += 1
            elif cmd == "write":
                assert store is not None
                for i in range(int(arg)):
                    store.add_turn("assistant", f"window turn {written} {i}")
                    store.append("scratch", FactDraft(f"The user likes number {written}."))
                    written += 1
            elif cmd == "stream":
                assert store is not None
                for i in range(int(arg)):
                    store.add_turn("user", f"streamed turn {written} {i}")
                    written += 1
                    print(f"ok {written}", flush=True)
                continue
            elif cmd == "sleep":
                assert store is not None
                print(f"ok {store.begin_sleep({'holder': True})}", flush=True)
                continue
            elif cmd == "finish":
                assert store is not None
                store.finish_sleep(int(arg), "done", {})
            elif cmd == "close":
                assert store is not None
                store.close()
                store = None
            elif cmd == "pid":
                print(f"ok {os.getpid()}", flush=True)
                continue
            elif cmd == "quit":
                return 0
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception as exc:  # reported to the test, which fails with it
            print(f"error {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
            continue
        print(f"ok {written}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
