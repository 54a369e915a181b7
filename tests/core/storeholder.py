"""``python -m tests.core.storeholder``: a process holding Stores open the way the window does.

It reads one command per line on stdin and answers ``ok …`` (or ``error …``) on stdout:

``open DB``      open the long-lived Store (the window's GUI-thread store) and write a turn
``worker N``     open a second Store on the same file, write N turns, close it (a chat job)
``write N``      write N turns through the long-lived store
``close``        close the long-lived store
``pid``          print this process's pid
``quit``         exit

Every write is a real committed transaction; ``ok`` carries the number of turns this process
wrote on the current database, so the caller can check that none is lost.
"""

from __future__ import annotations

import os
import sys

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft


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
