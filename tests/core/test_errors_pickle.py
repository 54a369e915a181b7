"""Every error Nocturne raises on purpose pickles as itself (a sleep's error crosses from its
worker process to the window that way). Fails on the old code for the errors whose
``__init__`` takes keyword-only arguments: ``type(exc)(*exc.args)`` refused them."""

from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import nocturne_desktop.core as core_package
from nocturne_desktop.core import errors, ports
from nocturne_desktop.core.chat.edits import AlreadyRemembered
from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.core.sleep.review import PlanStale
from nocturne_desktop.core.store.exchange import ImportRefused
from nocturne_desktop.core.types import Fact

CASES = [
    ports.ModelTimeout("the model did not answer in time", which="first-token", url="http://h/v1"),
    ports.ModelHTTPError("the server said 500", status=500, body="oops", url="http://h/v1"),
    ports.ModelAuthError("the key was refused", status=401),
    ports.ModelNotFound("no such model", available=["a", "b"]),
    ports.ModelUnreachable("nothing listens", url="http://h/v1"),
    ports.ModelCancelled("cancelled"),
    errors.SleepAlreadyRunning("a sleep is already running (pid 7)", pid=7, since=1.5),
    errors.UnknownVersion("no version s0099"),
    errors.DiskFull("the disk is full"),
    errors.ReadOnlyStore("read-only"),
    errors.DatabaseLocked("locked"),
    errors.NotADatabase("not a database"),
    errors.InvalidInput("too long"),
    errors.FactRefused("sensitive: looks like a password", rule="sensitive", door="hand add"),
    PlanStale("memory changed since the plan"),
]


@pytest.mark.parametrize("exc", CASES, ids=lambda e: type(e).__name__)
def test_an_error_pickles_as_itself(exc: NocturneError) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.args == exc.args
    assert vars(back) == vars(exc)


def test_every_error_class_of_the_core_pickles_as_itself() -> None:
    def subclasses(cls: type) -> set[type]:
        out = set()
        for sub in cls.__subclasses__():
            out |= {sub} | subclasses(sub)
        return out

    arguments = {  # each constructor's required arguments beyond the message
        NocturneError.__init__: {}, KeyError.__init__: {}, ValueError.__init__: {},
        ports.ModelError.__init__: {},
        ports.ModelHTTPError.__init__: {"status": 500}, ports.ModelTimeout.__init__: {"which": "idle"},
        ports.ModelNotFound.__init__: {}, errors.SleepAlreadyRunning.__init__: {"pid": 3},
        errors.FactRefused.__init__: {"rule": "sensitive", "door": "hand add"},
        ImportRefused.__init__: {"rule": "sensitive"},
    }
    for info in pkgutil.walk_packages(core_package.__path__, prefix="nocturne_desktop.core."):
        importlib.import_module(info.name)  # every error class of the core defined
    fact = Fact("m_1", "human", "The user lives in Lisbon.", "identity", 1, 1.0, 1.0)
    special = {AlreadyRemembered: AlreadyRemembered(fact)}
    core = [c for c in subclasses(NocturneError) if c.__module__.startswith("nocturne_desktop.core")]
    assert len(core) > 15
    for cls in core:
        if cls in special:
            exc = special[cls]
        else:
            assert cls.__init__ in arguments, f"{cls.__name__} has an __init__ of its own: add it"
            exc = cls("a message", **arguments[cls.__init__])
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == str(exc) and vars(back) == vars(exc), cls
