"""The model-free heart of Nocturne: memory, its judges, sleep and checks. No Qt, no HTTP.

The few names a script needs are importable from here::

    from nocturne_desktop.core import FactDraft, RetentionPolicy, Store, render_memory, run_sleep

The rooms: :mod:`.store` (SQLite: facts, search, log, versions, changes, export), :mod:`.judges`
(text measures, meaning guards, duplicates, conflicts, sensitive data), :mod:`.sleep` (the
passes, gates, rules, run and review), :mod:`.chat` (the agent's prompt, the encoder, edits said
in chat) and :mod:`.checks` (verify, gate cases, the re-audit, the quiz, recall). A model is
reached only through the Protocol in :mod:`.ports`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nocturne_desktop.core.cancel import CancelToken
    from nocturne_desktop.core.chat.agent import ChatAgent, render_memory
    from nocturne_desktop.core.chat.encoder import Encoder
    from nocturne_desktop.core.checks.quiz import run_quiz
    from nocturne_desktop.core.errors import InvalidInput, NocturneError, StoreError
    from nocturne_desktop.core.policy import RetentionPolicy
    from nocturne_desktop.core.ports import ModelClient
    from nocturne_desktop.core.sleep.run import SleepEvent, SleepEventKind, run_sleep
    from nocturne_desktop.core.store import Store
    from nocturne_desktop.core.types import Fact, FactDraft

_PUBLIC = {
    "Store": "nocturne_desktop.core.store",
    "Fact": "nocturne_desktop.core.types",
    "FactDraft": "nocturne_desktop.core.types",
    "RetentionPolicy": "nocturne_desktop.core.policy",
    "run_sleep": "nocturne_desktop.core.sleep.run",
    "SleepEvent": "nocturne_desktop.core.sleep.run",
    "SleepEventKind": "nocturne_desktop.core.sleep.run",
    "render_memory": "nocturne_desktop.core.chat.agent",
    "ChatAgent": "nocturne_desktop.core.chat.agent",
    "Encoder": "nocturne_desktop.core.chat.encoder",
    "run_quiz": "nocturne_desktop.core.checks.quiz",
    "ModelClient": "nocturne_desktop.core.ports",
    "CancelToken": "nocturne_desktop.core.cancel",
    "NocturneError": "nocturne_desktop.core.errors",
    "StoreError": "nocturne_desktop.core.errors",
    "InvalidInput": "nocturne_desktop.core.errors",
}

__all__ = [
    "CancelToken",
    "ChatAgent",
    "Encoder",
    "Fact",
    "FactDraft",
    "InvalidInput",
    "ModelClient",
    "NocturneError",
    "RetentionPolicy",
    "SleepEvent",
    "SleepEventKind",
    "Store",
    "StoreError",
    "render_memory",
    "run_quiz",
    "run_sleep",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (importing the core stays cheap)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


# Where modules of earlier releases now live: ``import nocturne_desktop.core.agent`` in a
# person's script keeps working (the same module object, with a DeprecationWarning).
MOVED = {
    "agent": "chat.agent",
    "encoder": "chat.encoder",
    "chatedits": "chat.edits",
    "verify": "checks.verify",
    "gatecases": "checks.gatecases",
    "quiz": "checks.quiz",
    "knowhow": "checks.recall",
    "audit": "checks.audit",
    "textmath": "judges.textmath",
    "meaning": "judges.meaning",
    "conflicts": "judges.conflicts",
    "sensitive": "judges.sensitive",
    "duplicates": "judges.duplicates",
    "joinmemo": "judges.duplicates",
    "passes": "sleep.passes",
    "gates": "sleep.gates",
    "review": "sleep.review",
    "exchange": "store.exchange",
    "reads": "store.reads",
    "sqlerrors": "store.sqlerrors",
    "sleeplock": "store.sleeplock",
    "store_base": "store.base",
    "store_changes": "store.changes",
    "store_facts": "store.facts",
    "store_log": "store.log",
    "store_schema": "store.schema",
    "store_versions": "store.versions",
    "yielding": "stepwise",
    "generators": "stepwise",
}


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.target}; import it from there",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The target module is already executed."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        prefix = __name__ + "."
        if not fullname.startswith(prefix) or fullname[len(prefix):] not in MOVED:
            return None
        new = prefix + MOVED[fullname[len(prefix):]]
        return importlib.util.spec_from_loader(fullname, _MovedLoader(new))


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedFinder())
