"""Demo memory: the verify conversation, already encoded, in a store of its own.

The facts in ``resources/demo.json`` were written by hand from the eight user turns of
:data:`nocturne_desktop.core.checks.verify.CONVERSATION`: atomic, third person, every content word taken
from the transcript (a test checks each one with :func:`core.audit.traceability`). They are laid
out so that a Sleep has work in every pass, even with no model (rules only):

- Dedupe: two exact restatements (turn 4 repeats turn 1) and a near one (turn 8 repeats turn 2);
- Merge: two related facts about the work stack (a model may join them; no rule ever does);
- Promote: identity, preference, commitment and event facts still in ``scratch``;
- Forget: two vague episodes written 70 days ago (past the 30-day stale limit) and a trivial
  remark, which are the least salient facts once the demo policy's cap applies.

:func:`open_demo_store` writes them to a fresh database in its own folder (``<data>/demo`` by
default), so the demo never touches a person's real memory.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from nocturne_desktop import paths
from nocturne_desktop.core.errors import NocturneError, StoreError
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, FactDraft

DEMO_FILE = "demo.json"
DEMO_SCHEMA = 1
DEMO_META_KEY = "demo"
"""Meta key marking a database as demo data (the only kind :func:`open_demo_store` replaces)."""
DAY = 86400.0


class DemoDataError(NocturneError):
    """The packaged demo data is missing or malformed (a packaging bug, never user data)."""


@dataclass(frozen=True)
class DemoFact:
    block: str
    category: str
    text: str
    source_turn: int
    age_days: float


@dataclass(frozen=True)
class DemoData:
    title: str
    turns: tuple[tuple[str, str], ...]
    """(role, text) in order; a fact's ``source_turn`` is the 1-based index into this."""
    facts: tuple[DemoFact, ...]
    policy: RetentionPolicy
    """The retention policy the demo is laid out for (its cap makes Forget act)."""


def _fail(why: str) -> DemoDataError:
    return DemoDataError(f"the packaged demo data ({DEMO_FILE}) is unusable: {why}")


def parse_demo(raw: Any) -> DemoData:
    """Validate the JSON document of ``demo.json``."""
    if not isinstance(raw, dict) or raw.get("schema") != DEMO_SCHEMA:
        raise _fail(f"expected an object with schema {DEMO_SCHEMA}")
    turns_raw, facts_raw = raw.get("turns"), raw.get("facts")
    if not isinstance(turns_raw, list) or not isinstance(facts_raw, list):
        raise _fail("'turns' and 'facts' must be lists")
    turns: list[tuple[str, str]] = []
    for i, t in enumerate(turns_raw, 1):
        if not (isinstance(t, dict) and t.get("role") in ("user", "assistant")
                and isinstance(t.get("text"), str) and t["text"].strip()):
            raise _fail(f"turn {i} needs a role (user/assistant) and a text")
        turns.append((t["role"], t["text"]))
    facts: list[DemoFact] = []
    for i, f in enumerate(facts_raw, 1):
        if not isinstance(f, dict):
            raise _fail(f"fact {i} is not an object")
        block, category, text = f.get("block"), f.get("category"), f.get("text")
        turn, age = f.get("source_turn"), f.get("age_days")
        if block not in BLOCKS or category not in CATEGORIES:
            raise _fail(f"fact {i} has block {block!r} / category {category!r}")
        if not isinstance(text, str) or not text.strip():
            raise _fail(f"fact {i} has no text")
        if not isinstance(turn, int) or not 1 <= turn <= len(turns):
            raise _fail(f"fact {i} cites turn {turn!r}, not one of 1..{len(turns)}")
        if not isinstance(age, int | float) or age < 0:
            raise _fail(f"fact {i} has age_days {age!r}")
        facts.append(DemoFact(block, category, text, turn, float(age)))
    try:
        policy = RetentionPolicy(**raw.get("policy", {}))
    except (TypeError, ValueError) as exc:
        raise _fail(f"bad policy: {exc}") from exc
    return DemoData(str(raw.get("title", "demo")), tuple(turns), tuple(facts), policy)


def load_demo() -> DemoData:
    """The demo data shipped as package data (read through importlib.resources)."""
    try:
        text = resources.files("nocturne_desktop.resources").joinpath(DEMO_FILE).read_text("utf-8")
        raw = json.loads(text)
    except (OSError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    return parse_demo(raw)


def demo_policy() -> RetentionPolicy:
    return load_demo().policy


def default_demo_dir(data_dir: Path | None = None) -> Path:
    """Where the demo memory lives: ``demo`` inside the data folder (``data_dir``, else the
    one in use: ``--data-dir`` and the settings' folder are passed in by the caller)."""
    return (Path(data_dir) if data_dir is not None else paths.data_dir()) / "demo"


def _remove_old_demo(db: Path) -> None:
    """Delete a previous demo database; refuse anything that is not one."""
    if not db.exists():
        return
    with Store(db) as old:
        marked = old.get_meta(DEMO_META_KEY) == "1"
    if not marked:
        raise StoreError(f"{db} holds a memory database that is not demo data; the demo will "
                         "not overwrite it. Choose another folder for the demo.")
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{db}{suffix}").unlink()


def open_demo_store(folder: Path | None = None, *, now: float | None = None) -> Path:
    """Create a fresh demo database in ``folder`` (default ``<data dir>/demo``); return its path.

    A previous demo database there is replaced; any other database is refused (StoreError).
    Facts are backdated by their ``age_days`` relative to ``now``. The store ends with one
    snapshot, ``demo:loaded``, which is the state an undo of the first sleep returns to.
    """
    data = load_demo()
    folder = Path(folder) if folder is not None else default_demo_dir()
    db = folder / paths.DB_FILENAME
    _remove_old_demo(db)
    now = time.time() if now is None else now
    with Store(db) as store:
        store.set_meta(DEMO_META_KEY, "1")
        for role, text in data.turns:
            store.add_turn(role, text)
        with store.transaction():
            for f in data.facts:
                store.append(f.block, FactDraft(f.text, f.category, f.source_turn,
                                                now - f.age_days * DAY))
        store.snapshot("demo:loaded")
    return db
