"""Job bodies for the worker-process tests. A worker process imports the module of the body it
runs, so these live apart from the Qt test modules (the worker must load no Qt)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator, Iterator
from typing import Any

from nocturne_desktop.core.types import FactDraft

HUNG_TEXT = "A fact written inside a transaction that never commits."


def where(ctx: Any) -> dict[str, Any]:
    """What the worker process loaded: no Qt, not the test runner's main module."""
    return {
        "pid": os.getpid(),
        "qt": sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6")),
        "main_file": getattr(sys.modules.get("__main__"), "__file__", None),
        "http": "httpx" in sys.modules,
    }


def count_then_return(ctx: Any, n: int) -> Generator[int, None, int]:
    yield from range(n)
    return n * 10


def fail_with(ctx: Any, exc: BaseException) -> None:
    raise exc


class Unpicklable(Exception):
    """An exception that cannot cross a pipe (it holds a lock)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        import threading

        self.lock = threading.Lock()


def fail_unpicklable(ctx: Any, message: str) -> None:
    raise Unpicklable(message)


def bug(ctx: Any) -> None:
    return {}["no such key"]  # type: ignore[no-any-return]


def hang_in_a_sleep_transaction(ctx: Any) -> Iterator[str]:
    """A sleep begun, then a write inside a transaction the worker never commits: killed there,
    the write must be rolled back and the sleep marked interrupted."""
    store = ctx.store
    sid = store.begin_sleep({"max_active_facts": 1})
    yield f"sleep {sid}"
    with store.transaction():
        store.append("scratch", FactDraft(HUNG_TEXT, "context"))
        yield "written"
        time.sleep(120)


def ignore_the_cancel(ctx: Any) -> Iterator[str]:
    """Never looks at its token (a body stuck in a long C call)."""
    yield "started"
    time.sleep(120)


def wait_for_the_cancel(ctx: Any) -> Generator[str, None, str]:
    yield "started"
    ctx.cancel.wait(60)
    yield "saw the cancel" if ctx.cancel.cancelled else "timed out"
    return "finished"


def plan_digest(ctx: Any, plan: Any) -> dict[str, Any]:
    """What a worker received of a plan in pages: a digest of its bytes, and its last change
    read through the pages (the pages unpickle)."""
    import hashlib

    h = hashlib.sha256()
    for page in plan.pages:
        h.update(page)
    h.update(plan.mask)
    for part in (*plan.edges(requires=True), *plan.edges(requires=False)):
        h.update(part.tobytes())
    return {"digest": h.hexdigest(), "size": plan.size, "pages": len(plan.pages),
            "last": plan.item(plan.size), "types": sorted({type(p).__name__ for p in plan.pages})}
