"""One door for facts (S-DOOR-1): every way a fact's text is written passes one admission check.

The store's public methods are found by reading its source: every method that opens a write
transaction (directly or through another method) is a *writer*. Each writer either has a
driver below that tries to write a secret through it (and must meet the same labelled
refusal, with nothing written), or is listed as writing no fact's text, with why. A new writer
that is neither fails the test. The SQL that writes a fact's text may only stand in the few
internal writers that call the admission check. On the code before the check, the drivers of
``add_fact``, ``edit``, ``replace``, ``update``, ``apply``, ``commit_pass``, ``load``,
``restore``, ``undo`` and ``redo`` all wrote the secret.
"""

from __future__ import annotations

import ast
import inspect
import json
import sqlite3
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nocturne_desktop.core import mutations
from nocturne_desktop.core.chat import edits
from nocturne_desktop.core.errors import FactRefused
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.facts import FactStore
from nocturne_desktop.core.types import FactDraft
from tests.clock import Clock

SECRET = "The user's password is hunter2."
"""A statement (so only the secrets rule can refuse it) that holds a secret."""
SAFE = "The user lives in Lisbon."
FRAGMENT = "Hello there!"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "n.db", clock=Clock()) as s:
        yield s


def _seeded(store: Store) -> str:
    fact = store.append("human", FactDraft(SAFE, "identity"))
    store.snapshot("v1")
    return fact.id


def _legacy_history(store: Store, num: int, text: str) -> None:
    """Put ``text`` into the history a store of an older Nocturne may hold (before the rule)."""
    c = sqlite3.connect(store.path)
    with c:
        c.execute("UPDATE item_history SET text = ? WHERE num = ?", (text, num))
        rows = c.execute("SELECT id, refs FROM mutations").fetchall()
        for i, refs in rows:
            c.execute("UPDATE mutations SET refs = ? WHERE id = ?", (refs.replace(SAFE, text), i))
    c.close()


def _merge_row(store: Store) -> mutations.Mutation:
    a = store.append("human", FactDraft("The user likes tea.", "preferences")).id
    b = store.append("human", FactDraft("The user likes green tea.", "preferences")).id
    return mutations.to_row(mutations.Merge(pass_name="merge", into=a, from_ids=(a, b),
                                            merged_text=SECRET, reason="same fact"))


def _drive_append(store: Store) -> None:
    store.append("human", FactDraft(SECRET))


def _drive_replace(store: Store) -> None:
    store.replace("human", [FactDraft(SECRET)])


def _drive_update(store: Store) -> None:
    store.update(_seeded(store), text=SECRET)


def _drive_edit(store: Store) -> None:
    store.edit(_seeded(store), text=SECRET)


def _drive_add_fact(store: Store) -> None:
    store.add_fact("human", SECRET, "identity")


def _drive_commit_changes_add(store: Store) -> None:
    store.commit_changes([mutations.Add(target="", text=SECRET, block="human", category="identity",
                                 decided_by=mutations.DecidedBy.LETTA, pass_name=mutations.LETTA_PASS)],
                         label="changed in Letta")


def _drive_commit_changes_edit(store: Store) -> None:
    store.commit_changes([mutations.Edit(target=_seeded(store), text=SECRET,
                                  decided_by=mutations.DecidedBy.LETTA, pass_name=mutations.LETTA_PASS)],
                         label="changed in Letta")


def _drive_apply(store: Store) -> None:
    store.apply(_merge_row(store))


def _drive_commit_pass(store: Store) -> None:
    store.commit_pass([_merge_row(store)], label="merge", sleep_id=None)


def _drive_load(store: Store) -> None:
    rows = {table: [] for table, _ in Store._DUMP_TABLES}
    rows["items"] = [(1, "human", SECRET, "identity", None, 1.0, 1.0, 1, None, None, 0, 1)]
    rows["next_item"] = [(2,)]
    store.load(rows)


def _drive_restore(store: Store) -> None:
    item = _seeded(store)
    store.edit(item, text="The user lives in Porto.")
    _legacy_history(store, int(item[2:]), SECRET)
    store.restore(1)


def _drive_undo(store: Store) -> None:
    item = _seeded(store)
    store.edit(item, text="The user lives in Porto.")
    _legacy_history(store, int(item[2:]), SECRET)
    store.undo()


def _drive_redo(store: Store) -> None:
    item = _seeded(store)
    store.edit(item, text="The user lives in Porto.")
    store.undo()
    c = sqlite3.connect(store.path)
    with c:
        c.execute("UPDATE item_history SET text = ? WHERE text = 'The user lives in Porto.'",
                  (SECRET,))
    c.close()
    store.redo()


LEGACY = {"restore", "undo", "redo"}
"""Drivers that first plant the secret in the history, as a store of an older Nocturne holds it."""

DRIVERS: dict[str, Callable[[Store], None]] = {
    "append": _drive_append, "replace": _drive_replace, "update": _drive_update,
    "edit": _drive_edit, "add_fact": _drive_add_fact, "apply": _drive_apply,
    "commit_pass": _drive_commit_pass, "load": _drive_load, "restore": _drive_restore,
    "undo": _drive_undo, "redo": _drive_redo, "commit_changes": _drive_commit_changes_add,
}
"""How to try to write a secret through each store method that writes a fact's text."""

NO_FACT_TEXT = {
    "forget": "deactivates a fact; its text is not written",
    "forget_now": "deactivates a fact; its text is not written",
    "pin": "sets the pin flag only",
    "bring_back": "reactivates a fact as it last was (its text was admitted when written)",
    "set_importance": "writes a strength, not a text",
    "record_use": "writes a strength, not a text",
    "snapshot": "labels a version; writes no fact",
    "record_mutations": "audit rows (a refused secret in them is withheld: see below)",
    "add_turn": "the transcript keeps what was typed; memory is what is admitted",
    "set_meta": "store settings (the encoder cursor), not facts",
    "set_link_state": "a linked agent's sync state (hashes and line counts, never a fact)",
    "new_conversation": "a conversation record",
    "open_conversation": "a conversation record",
    "begin_sleep": "a sleep record",
    "finish_sleep": "a sleep record",
    "mark_interrupted_sleeps": "sleep records",
    "transaction": "the transaction itself; what runs inside it goes through the writers",
    "sync_vectors": "meaning vectors of facts already admitted (derived, not a text)",
    "rank": "may bring the meaning vectors up to date first (derived, not a text)",
    "search_all_ranked": "may bring the meaning vectors up to date first (derived, not a text)",
    "similar": "may bring the meaning vectors up to date first (derived, not a text)",
    "similar_both": "may bring the meaning vectors up to date first (derived, not a text)",
}


def _store_classes() -> list[type]:
    return [c for c in Store.__mro__ if c.__module__.startswith("nocturne_desktop.core.store")]


def _methods() -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for cls in reversed(_store_classes()):  # a subclass's definition wins
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                out[node.name] = node
    return out


def _calls_on_self(node: ast.FunctionDef) -> set[str]:
    return {n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"}


def writers() -> set[str]:
    """The store's public methods that open a write transaction, directly or not."""
    methods = _methods()
    writes = {"transaction"}
    changed = True
    while changed:
        changed = False
        for name, node in methods.items():
            if name not in writes and _calls_on_self(node) & writes:
                writes.add(name)
                changed = True
    return {w for w in writes if not w.startswith("_") and callable(getattr(Store, w, None))}


def test_every_writer_of_the_store_is_guarded_or_writes_no_fact_text() -> None:
    found = writers()
    unclassified = found - set(DRIVERS) - set(NO_FACT_TEXT)
    assert not unclassified, (
        f"new store writer(s) {sorted(unclassified)}: add a driver to DRIVERS that shows it "
        "refuses a secret, or list it in NO_FACT_TEXT with why it writes no fact's text")
    assert set(DRIVERS) <= found, f"not writers any more: {sorted(set(DRIVERS) - found)}"


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_a_secret_is_refused_at_every_writer_with_the_same_label(store: Store, name: str) -> None:
    with pytest.raises(FactRefused) as refused:
        DRIVERS[name](store)
    assert refused.value.rule == "sensitive"
    assert str(refused.value).startswith("sensitive: looks like a password")
    assert "never kept in memory" in str(refused.value)
    assert not any("hunter2" in f.text for f in store.all_facts())
    if name not in LEGACY:
        assert not any("hunter2" in json.dumps(m.mutation.refs) for m in store.mutations())


def test_the_sql_that_writes_a_fact_text_stands_only_in_the_guarded_writers() -> None:
    """``INSERT INTO items`` / ``UPDATE items SET`` (and the history) only in the functions
    that run the admission check, or write what such a function staged."""
    allowed = {"_insert", "_flush", "load", "_migrate", "_setup"}
    offenders = []
    for cls in _store_classes():
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            sql = " ".join(c.value for c in ast.walk(fn)
                           if isinstance(c, ast.Constant) and isinstance(c.value, str))
            if any(s in sql for s in ("INSERT INTO items", "UPDATE items SET",
                                       "INSERT INTO item_history", "INSERT INTO {table}")
                   ) and fn.name not in allowed:
                offenders.append(f"{cls.__name__}.{fn.name}")
    assert not offenders, offenders

    for writer in (FactStore._insert, FactStore._stage, Store.load):
        assert "admission.check" in inspect.getsource(writer), writer.__qualname__


# -- where the statement guard applies --------------------------------------------------------


def test_the_doors_where_new_words_enter_refuse_a_fragment(store: Store) -> None:
    item = _seeded(store)
    for attempt in (lambda: store.add_fact("human", FRAGMENT),
                    lambda: store.edit(item, text=FRAGMENT),
                    lambda: store.append("scratch", FactDraft(FRAGMENT), door=Door.ENCODER),
                    lambda: store.append("scratch", FactDraft(FRAGMENT), door=Door.SYNC)):
        with pytest.raises(FactRefused) as refused:
            attempt()
        assert refused.value.rule == "statement"
    proposal = edits.propose(store, f"remember that {FRAGMENT}")
    assert proposal is not None
    with pytest.raises(FactRefused):
        edits.confirm(store, proposal)
    assert [f.text for f in store.all_facts()] == [SAFE]


def test_the_store_api_restore_and_import_keep_what_memory_already_held(store: Store) -> None:
    """The statement guard is for new words; the store's own API, a restore and a full import
    carry texts an older Nocturne admitted (see core.judges.admission)."""
    f = store.append("scratch", FactDraft("Groceries: milk, eggs"))
    assert f.text == "Groceries: milk, eggs"
    for door in (Door.MERGE, Door.RESTORE, Door.IMPORT, Door.STORE):
        assert admission.problem("Groceries: milk, eggs", door) is None
        assert admission.problem(SECRET, door) is not None
        assert admission.problem("The user \x1b[2J lives here.", door) is not None


def test_import_into_scratch_counts_what_the_door_refuses_and_writes_the_rest(
        tmp_path: Path, store: Store) -> None:
    with Store(tmp_path / "other.db", clock=Clock()) as other:
        other.append("human", FactDraft(SAFE, "identity"))
        c = sqlite3.connect(other.path)
        with c:  # an export of a memory an older Nocturne kept a secret in
            c.execute("INSERT INTO items(num, block, text, category, source_turn, created_at, "
                      "updated_at, active, valid_until, superseded_by, pinned, from_seq) "
                      "VALUES (7, 'human', ?, 'identity', NULL, 1, 1, 1, NULL, NULL, 0, 1)",
                      (SECRET,))
            c.execute("UPDATE counters SET value = 8 WHERE name = 'next_item'")
        c.close()
        export = exchange.build_export(other)
    done = exchange.import_into_scratch(store, export, name="other.json")
    assert [f.text for f in done.added] == [SAFE]
    assert [(r.id, r.rule) for r in done.refused] == [("m_7", "sensitive")]
    assert "refused 1 fact" in done.message() and "hunter2" not in done.message()
    assert not any("hunter2" in f.text for f in store.all_facts())


def test_a_refused_secret_is_withheld_from_the_audit_log(store: Store) -> None:
    row = mutations.to_row(mutations.Refusal(
        pass_name="encoder", of=mutations.Kind.APPEND, target="-",
        why="sensitive: looks like a password (password); sensitive data is never kept in memory",
        proposal={"text": SECRET, "category": "context"}))
    store.record_mutations([row], seq=None, sleep_id=None)
    (kept,) = store.mutations()
    assert "hunter2" not in json.dumps(kept.mutation.refs)
    assert kept.mutation.refs["proposal"]["category"] == "context"


# -- a secret typed in chat -------------------------------------------------------------------


def test_a_secret_typed_in_chat_never_enters_memory_nor_a_later_request(tmp_path: Path) -> None:
    """The transcript keeps what was typed; the encoder's request and every later chat request
    carry the message with the secret's sentence withheld; memory never holds it."""
    from nocturne_desktop.core.chat.agent import ChatAgent
    from nocturne_desktop.core.chat.encoder import Encoder
    from tests.core.fakemodel import FakeModel

    typed = "I live in Lisbon. My p@ssw0rd is hunter2. Please remember both."
    model = FakeModel(replies=[
        "Noted.",
        {"facts": [{"text": "The user's password is hunter2.", "category": "context", "turn": 1},
                   {"text": "The user lives in Lisbon.", "category": "identity", "turn": 1}]},
        "You live in Lisbon.",
    ])
    with Store(tmp_path / "n.db", clock=Clock()) as store:
        agent = ChatAgent(store, model)
        assert "".join(agent.stream_reply(typed)) == "Noted."
        result = Encoder(store, model).encode_new_turns()
        "".join(agent.stream_reply("Where do I live?"))
        assert store.turns()[0].text == typed  # the transcript keeps what was typed
        assert [f.text for f in result.accepted] == ["The user lives in Lisbon."]
        assert not any("hunter2" in f.text for f in store.all_facts())
        assert not any("hunter2" in json.dumps(m.mutation.refs) for m in store.mutations())
    first, encoder, later = model.calls
    assert typed in json.dumps(first.messages)  # sent once, as the person chose
    for call in (encoder, later):
        body = json.dumps(call.messages, ensure_ascii=False)
        assert "hunter2" not in body and "Lisbon" in body
        assert "My p@ssw0rd is [withheld: a password]. Please remember both." in body


# -- the key goes only where it was saved for ---------------------------------------------------


def test_a_key_needs_confirmation_for_any_other_host() -> None:
    from nocturne_desktop.settings import Settings, key_origin, needs_key_confirmation

    saved = key_origin("http://localhost:1234/v1")
    assert saved == "http://localhost:1234"
    assert key_origin("HTTPS://API.Example.com/v1/") == "https://api.example.com:443"
    assert not needs_key_confirmation(saved, "http://localhost:1234/v1/", has_key=True)
    for other in ("http://localhost:1235/v1", "https://localhost:1234/v1",
                  "http://evil.example/v1", "http://localhost.evil.example:1234/v1"):
        assert needs_key_confirmation(saved, other, has_key=True), other
    assert not needs_key_confirmation(saved, "http://evil.example/v1", has_key=False)
    assert needs_key_confirmation("", "http://localhost:1234/v1", has_key=True)  # saved before
    with pytest.raises(ValueError, match=r"\*\*\*@"):
        Settings(base_url="http://me:hunter2@localhost:1234/v1")


def test_credentials_in_a_url_never_reach_the_log(tmp_path: Path) -> None:
    import logging

    from nocturne_desktop.core import logfile

    path = logfile.install(tmp_path, hook_uncaught=False)
    assert path is not None
    try:
        logging.getLogger("nocturne.test").warning("cannot reach %s", "http://me:hunter2@host/v1")
    finally:
        logfile.uninstall()
    text = path.read_text()
    assert "hunter2" not in text and "http://***@host/v1" in text


def test_an_edit_from_a_linked_agent_is_refused_like_an_add(store: Store) -> None:
    with pytest.raises(FactRefused) as refused:
        _drive_commit_changes_edit(store)
    assert refused.value.rule == "sensitive" and refused.value.door == "sync"
    assert SECRET not in "".join(f.text for f in store.all_facts())
