"""Bad input gets a typed error with a clear message, and nothing is half-written."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.errors import (
    CorruptDatabase,
    DatabaseLocked,
    InvalidInput,
    SchemaTooNew,
    StoreError,
    UnknownVersion,
)
from nocturne_desktop.core.store import MAX_TEXT_CHARS, SCHEMA_VERSION, Store
from nocturne_desktop.core.types import Fact, FactDraft, Mutation


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "n.db", busy_timeout=0.3)
    yield s
    s.close()


def fingerprint(store: Store) -> tuple[Any, ...]:
    """Everything a refused call must leave untouched."""
    return (
        store.all_facts(),
        store.versions(),
        store.mutations(),
        store.turns(),
        store.sleeps(),
        store.search("fact"),
    )


def refused(store: Store, call: Callable[[], object], message: str) -> None:
    before = fingerprint(store)
    with pytest.raises(InvalidInput) as info:
        call()
    assert message.lower() in str(info.value).lower(), str(info.value)
    assert fingerprint(store) == before


def seeded(store: Store) -> Fact:
    a = store.append("human", FactDraft("A real fact about Lisbon.", "identity"))
    store.append("scratch", FactDraft("Another fact."))
    store.snapshot("seed")
    return a


# ---------------------------------------------------------------- text


BAD_TEXTS = [
    ("", "text is empty"),
    ("   \n\t ", "text is empty"),
    ("x" * 102_400, "text is 102400 characters; the limit is 4000"),
    ("x" * (MAX_TEXT_CHARS + 1), f"text is {MAX_TEXT_CHARS + 1} characters; the limit is 4000"),
    ("before\x00after", "text contains a NUL byte"),
    ("half a pair \ud83d here", "not valid Unicode"),
]


@pytest.mark.parametrize(("text", "message"), BAD_TEXTS)
def test_bad_text_is_refused_everywhere(store: Store, text: str, message: str) -> None:
    a = seeded(store)
    refused(store, lambda: store.append("scratch", FactDraft(text)), message)
    refused(store, lambda: store.update(a.id, text=text), message)
    refused(store, lambda: store.replace("scratch", [FactDraft("fine"), FactDraft(text)]), message)
    edited = Fact(a.id, "human", text, "identity", None, 0.0, 0.0)
    refused(store, lambda: store.replace("human", [edited]), message)
    merge = Mutation(
        "merge", "merge", a.id, True, "x", refs={"fromIds": [a.id], "mergedText": text}
    )
    refused(store, lambda: store.commit_pass([merge], label="after", sleep_id=None), message)


def test_non_string_text_is_refused(store: Store) -> None:
    refused(store, lambda: store.append("scratch", FactDraft(None)), "text must be a string")  # type: ignore[arg-type]
    refused(store, lambda: store.append("scratch", FactDraft(42)), "text must be a string")  # type: ignore[arg-type]


def test_text_at_the_limit_is_accepted(store: Store) -> None:
    f = store.append("scratch", FactDraft("y" * MAX_TEXT_CHARS))
    assert len(store.get(f.id).text) == MAX_TEXT_CHARS  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "The user 🦎 keeps a bearded dragon 🐉 called Saffron 👩🏽‍🚀.",
        "המשתמש גר בתל אביב",  # Hebrew, RTL
        "المستخدم يعيش في لشبونة",  # Arabic, RTL
        "mixed \u202eRTL override\u202c and \u200fmark",
        "e\u0301 vs \u00e9, a\u030a\u0323 stacked combining marks, Z\u0351\u036b\u0343algo",
        "\ufeffBOM, zero\u200bwidth, tab\tand newline\nkept",
    ],
)
def test_unicode_round_trips_byte_exact(tmp_path: Path, text: str) -> None:
    path = tmp_path / "n.db"
    with Store(path) as s:
        f = s.append("human", FactDraft(text))
        s.snapshot("v")
        assert s.get(f.id).text.encode("utf-8") == text.encode("utf-8")  # type: ignore[union-attr]
    with Store(path) as s:
        for got in (s.get(f.id), s.state_at(1)[0], s.get_block("human")[0]):
            assert got is not None and got.text.encode("utf-8") == text.encode("utf-8")
        t = s.add_turn("user", text)
        assert s.turns()[0].text.encode("utf-8") == t.text.encode("utf-8")


# ---------------------------------------------------------------- block, category, id


def test_unknown_block_category_and_id(store: Store) -> None:
    a = seeded(store)
    blocks = "unknown block 'longterm'; expected one of persona, human, episodes, scratch"
    refused(store, lambda: store.append("longterm", FactDraft("fine text")), blocks)
    refused(store, lambda: store.update(a.id, block="longterm"), blocks)
    refused(store, lambda: store.replace("longterm", []), blocks)
    refused(store, lambda: store.get_block("longterm"), blocks)
    cats = "unknown category 'gossip'; expected one of identity, preferences, commitments"
    refused(store, lambda: store.append("human", FactDraft("fine text", "gossip")), cats)
    refused(store, lambda: store.update(a.id, category="gossip"), cats)
    for bad in ("m_99", "m_0", "m_", "x", "", "M_1", "m_01", " m_1"):
        refused(
            store,
            lambda bad=bad: store.update(bad, text="new text"),  # type: ignore[misc]
            f"unknown item id {bad!r}",
        )
        refused(store, lambda bad=bad: store.forget(bad), f"unknown item id {bad!r}")  # type: ignore[misc]
        assert store.get(bad) is None
    ghost = Fact("m_99", "human", "ghost", "context", None, 0.0, 0.0)
    refused(store, lambda: store.replace("human", [a, ghost]), "unknown item id 'm_99'")
    assert store.get(a.id).active  # type: ignore[union-attr]


def test_refused_writes_inside_a_pass_leave_no_trace(store: Store) -> None:
    a = seeded(store)
    sid = store.begin_sleep({})
    good = Mutation("promote", "promote", "m_2", True, "ok", refs={"toBlock": "human"})
    bad_refs = Mutation("forget", "forget", a.id, True, refs={"when": object()})
    refused(
        store,
        lambda: store.commit_pass([good, bad_refs], label="after", sleep_id=sid),
        "mutation refs is not JSON-serialisable",
    )
    ghost = Mutation("dedupe", "drop", "m_42", True, "dup", refs={"duplicateOf": a.id})
    refused(
        store,
        lambda: store.commit_pass([good, ghost], label="after", sleep_id=sid),
        "drop m_42: unknown item id 'm_42'",
    )
    refused(
        store, lambda: store.commit_pass([good], label="", sleep_id=sid), "snapshot label is empty"
    )
    refused(
        store, lambda: store.commit_pass([good], label="after", sleep_id=77), "unknown sleep id 77"
    )
    refused(
        store,
        lambda: store.record_mutations([good], seq=0, sleep_id=None),
        "seq must be a version number",
    )
    refused(
        store,
        lambda: store.record_mutations(
            [Mutation("", "drop", "m_1", True)], seq=None, sleep_id=None
        ),
        "mutation pass_name is empty",
    )
    assert store.get("m_2").block == "scratch"  # type: ignore[union-attr]


def test_other_bad_arguments(store: Store) -> None:
    seeded(store)
    refused(store, lambda: store.add_turn("user", "a\x00b"), "turn text contains a NUL byte")
    refused(store, lambda: store.add_turn("robot", "hi"), "unknown role 'robot'")
    refused(store, lambda: store.set_meta("", "x"), "meta key is empty")
    refused(store, lambda: store.search(None), "search query must be a string")  # type: ignore[arg-type]
    refused(store, lambda: store.begin_sleep([1, 2]), "policy must be a dict")  # type: ignore[arg-type]
    for bad in (0, 99, "s9999", "latest", "s-1", 1.5):
        with pytest.raises(UnknownVersion, match="unknown version"):
            store.state_at(bad)  # type: ignore[arg-type]
        with pytest.raises(UnknownVersion):
            store.diff(1, bad)  # type: ignore[arg-type]
        with pytest.raises(KeyError):  # UnknownVersion is also a KeyError
            store.restore(bad)  # type: ignore[arg-type]
    assert [v.label for v in store.versions()] == ["seed"]


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    s = Store(tmp_path / "n.db")
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.active_facts()


# ---------------------------------------------------------------- files


def file_state(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(path.parent))


def test_newer_schema_is_refused_and_never_altered(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    with Store(path) as s:
        s.append("human", FactDraft("Written by the future."))
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode = DELETE")
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    raw.close()
    before = file_state(path)
    time.sleep(0.02)
    with pytest.raises(SchemaTooNew) as info:
        Store(path)
    msg = str(info.value)
    assert f"schema {SCHEMA_VERSION + 5}" in msg and "not changed" in msg
    assert file_state(path) == before


@pytest.mark.parametrize(
    "content",
    [
        os.urandom(8192),
        b"This is my shopping list, not a database.\nEggs\nMilk\n" * 50,
        b"SQLite format 3\x00" + os.urandom(4096 - 16) + os.urandom(4096),
        b"SQLite format 3\x00" + b"\x00" * 84 + b"\xff" * 4000,
    ],
    ids=["random-bytes", "text-file", "header-then-garbage", "header-bad-pages"],
)
def test_corrupt_file_is_refused_and_never_overwritten(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "n.db"
    path.write_bytes(content)
    before = file_state(path)
    time.sleep(0.02)
    with pytest.raises(CorruptDatabase) as info:
        Store(path)
    assert str(path) in str(info.value) and "untouched" in str(info.value)
    assert file_state(path)[:2] == before[:2]


def test_locked_database_raises_after_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    with Store(path) as s:
        s.append("human", FactDraft("Before the lock."))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with Store(path, busy_timeout=0.3) as s:  # opening needs no write lock
            assert s.active_count() == 1  # WAL: reads go on while another connection writes
            before = s.all_facts()
            t0 = time.monotonic()
            with pytest.raises(DatabaseLocked) as info:
                s.append("human", FactDraft("During the lock."))
            waited = time.monotonic() - t0
            assert 0.25 <= waited < 3.0
            msg = str(info.value)
            assert "locked" in msg and "0.3 s" in msg and str(path) in msg
            assert s.all_facts() == before
            holder.execute("COMMIT")
            s.append("human", FactDraft("After the lock."))
            assert s.active_count() == 2
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


def test_a_folder_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "n.db").mkdir()
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path / "n.db")


def test_another_programs_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE recipes(name TEXT)")
    raw.execute("INSERT INTO recipes VALUES ('soup')")
    raw.commit()
    raw.close()
    before = file_state(path)
    with pytest.raises(StoreError, match="another program") as info:
        Store(path)
    assert not isinstance(info.value, (SchemaTooNew, CorruptDatabase))
    assert file_state(path) == before
