"""Background work for the window: a job runs a body off the GUI thread (on its own thread or
in a worker process) with a store and a model client of its own; callbacks run on the GUI
thread.

The rooms: :mod:`.job` (the job, its slot and context), :mod:`.pool` (model clients),
:mod:`.thread` and :mod:`.process` (the two runners), :mod:`.child` (the worker process's
side), :mod:`.body` (what a body gets and how it is driven), :mod:`.bodies` (the window's job
bodies), :mod:`.deferred_gc`, :mod:`.errors`. How it all works: ``docs/window.md``.

A worker process imports this package on its way to :mod:`.child`, so it must load no Qt: the
Qt parts (``Job``, ``JobSlot``, ``JobContext``, ``ChildProcess``, ``running_threads``) are
imported on first use of their name here, everything else at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.deferred_gc import deferred_full_collections
from nocturne_desktop.ui.jobs.errors import ChildFailure, WorkerDied, describe_error
from nocturne_desktop.ui.jobs.pool import ClientPool, ClientSpec, ModelSource, close_quietly

if TYPE_CHECKING:
    from nocturne_desktop.ui.jobs.job import AnyJob, Job, JobContext, JobSlot, running_threads
    from nocturne_desktop.ui.jobs.process import ChildProcess

_QT_NAMES = {
    "AnyJob": "job",
    "Job": "job",
    "JobContext": "job",
    "JobSlot": "job",
    "running_threads": "job",
    "ChildProcess": "process",
}
"""Names imported on first use (their modules import Qt), and the module of each."""

__all__ = [
    "AnyJob",
    "BodyContext",
    "ChildFailure",
    "ChildProcess",
    "ClientPool",
    "ClientSpec",
    "Job",
    "JobContext",
    "JobSlot",
    "ModelSource",
    "WorkerDied",
    "close_quietly",
    "deferred_full_collections",
    "describe_error",
    "running_threads",
]


def __getattr__(name: str) -> object:
    module = _QT_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
