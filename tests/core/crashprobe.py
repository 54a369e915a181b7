"""``python -m tests.core.crashprobe PROBE_FILE <nocturne args…>``: the ``nocturne`` CLI, observed.

Runs exactly ``nocturne_desktop.cli.main`` with the given arguments; the only addition is a
line appended to PROBE_FILE (one unbuffered ``write`` each, so it survives SIGKILL) when
``Store.commit_pass`` is entered and when it returns. The crash test uses it to tell a kill
inside a pass's commit from one anywhere else. Nothing the sleep does is changed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from nocturne_desktop.cli import main
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Mutation, Version


def observe(probe_path: str) -> None:
    fd = os.open(probe_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    original = Store.commit_pass

    def commit_pass(self: Store, mutations: Sequence[Mutation], *, label: str,
                    sleep_id: int | None) -> Version:
        os.write(fd, f"begin {label}\n".encode())
        version = original(self, mutations, label=label, sleep_id=sleep_id)
        os.write(fd, f"end {label}\n".encode())
        return version

    setattr(Store, "commit_pass", commit_pass)  # noqa: B010 - the point is to wrap it


def run(argv: list[str]) -> Any:
    observe(argv[0])
    return main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
