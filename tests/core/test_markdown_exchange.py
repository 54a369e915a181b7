"""The Markdown export and its import (S-EXP-1, issue 25): plain Markdown escaped only where
Markdown reads syntax, read back into a memory with the same facts, blocks, categories, pins,
days and retention policy; and the policy that travels in the JSON export."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.checks.audit import reaudit_hand
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.store import Store, exchange, mdexchange
from nocturne_desktop.core.store.mdexchange import escape, one_line, unescape
from nocturne_desktop.core.store.memorypolicy import memory_policy
from nocturne_desktop.core.types import BLOCKS, CATEGORIES, Fact, FactDraft
from tests.clock import Clock
from tests.core.test_exchange import OPS, T0, build

PIECES = ["*", "**", "_", "__", "#", "## ", "[x](y)", "[x]: http://e.x", "`", "``", "<b>",
          "</li>", "<!-- c -->", "- ", "+ ", "> ", "1.", "1. ", "2)", "10.", "&amp;", "&#42;",
          "& ", "<", " < ", ">", "~", "~~", "\\", "\\*", "\\.", "!", "![i](file:///etc/x)", "|",
          "snake_case", "The user", " lives in ", "Lisbon.", " ", "  ", "\t", "\n", "—", " — *",
          "*identity · since 2023-11-14*", "Zoë ☕", "(empty)", "---", "***", "[ ] ", "=",
          "http://example.com", "a_b_c", "_x_", "C:\\Users"]
HOSTILE = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join).filter(
    lambda t: bool(one_line(t)))


@pytest.mark.parametrize(("text", "written"), [
    ("The user lives in Lisbon.", "The user lives in Lisbon."),
    ("Standup moved to 10:00 on Mondays (maybe).", "Standup moved to 10:00 on Mondays (maybe)."),
    ("1. Buy milk", "1\\. Buy milk"),
    ("2023) a year", "2023\\) a year"),
    ("1234567890. too long for a list", "1234567890. too long for a list"),
    ("# heading", "\\# heading"),
    ("#hashtag", "#hashtag"),
    ("a # b", "a # b"),
    ("- item", "\\- item"),
    ("-5 degrees", "-5 degrees"),
    ("+ item", "\\+ item"),
    ("+1 555 0100", "+1 555 0100"),
    ("> quote", "\\> quote"),
    ("a > b", "a > b"),
    ("5 < 6", "5 < 6"),
    ("<b>bold</b>", "\\<b>bold\\</b>"),
    ("snake_case_name", "snake_case_name"),
    ("_under_", "\\_under\\_"),
    ("*star*", "\\*star\\*"),
    ("[x](y)", "\\[x](y)"),
    ("![i](file:///etc/passwd)", "!\\[i](file:///etc/passwd)"),
    ("it`s", "it`s"),
    ("`code` here", "\\`code\\` here"),
    ("~5 km", "~5 km"),
    ("~~gone~~", "\\~\\~gone\\~\\~"),
    ("Tom & Jerry", "Tom & Jerry"),
    ("&amp; &#42; &#x2A;", "\\&amp; \\&#42; \\&#x2A;"),
    ("C:\\Users\\ana", "C:\\Users\\ana"),
    ("a\\*b", "a\\\\\\*b"),
    ("line one\nline  two\tend ", "line one line two end"),
])
def test_only_what_markdown_reads_as_syntax_is_escaped(text: str, written: str) -> None:
    assert escape(text) == written
    assert unescape(written) == one_line(text)


@settings(max_examples=300, deadline=None)
@given(text=HOSTILE)
def test_unescape_gives_back_every_escaped_line(text: str) -> None:
    assert unescape(escape(text)) == one_line(text)
    assert "\n" not in escape(text)


def _in_file_order(facts: list[Fact]) -> list[Fact]:
    active = [f for f in facts if f.active]
    return [f for b in BLOCKS for f in active if f.block == b] + [f for f in facts if not f.active]


def _day(ts: float) -> str:
    return mdexchange._day(ts)


def _seen(facts: list[Fact]) -> list[tuple[Any, ...]]:
    """What the Markdown shows of each fact, in the file's order."""
    return [(f.block, one_line(f.text), f.category, f.active, f.pinned and f.active,
             _day(f.created_at), _day(f.updated_at)) for f in _in_file_order(facts)]


def _body(md: str) -> list[str]:
    """The file without its date and version/conversation counts (what a Markdown import cannot
    bring back): the fact counts stay."""
    lines = md.split("\n")
    return [lines[2].split(",")[:2].__repr__(), *lines[3:]]


FACTS = st.lists(st.tuples(st.sampled_from(BLOCKS), HOSTILE, st.sampled_from(CATEGORIES),
                          st.sampled_from(["", "pin", "forget"]), st.integers(0, 400)),
                min_size=1, max_size=12)


def seed(store: Store, facts: list[tuple[str, str, str, str, int]]) -> None:
    """Each fact written ``age`` days ago, then pinned or forgotten by hand."""
    for block, text, category, then, age in facts:
        f = store.append(block, FactDraft(text, category, created_at=T0 - age * 86_400.0))
        if then == "pin":
            store.pin(f.id)
        elif then == "forget":
            store.forget_now(f.id)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts=FACTS, ops=OPS, texts=st.lists(HOSTILE, min_size=1, max_size=6),
       stale=st.floats(0.5, 400.0), cap=st.integers(1, 5000))
def test_the_markdown_import_brings_back_what_the_markdown_export_writes(
        facts: list[tuple[str, str, str, str, int]], ops: list[tuple[str, int]],
        texts: list[str], stale: float, cap: int) -> None:
    policy = RetentionPolicy(stale_after_days=stale, max_active_facts=cap,
                             protected_categories=("identity",))
    folder = Path(tempfile.mkdtemp(prefix="nocturne-md-"))
    try:
        with Store(folder / "a" / "n.db", clock=Clock(step=20_000.0)) as a:
            seed(a, facts)
            build(a, ops, texts)  # edits, sleeps, restores, undo, supersedes over them
            md = exchange.export_markdown(a, now=T0, policy=policy)
            before = _seen(a.all_facts())
        (folder / "memory.md").write_text(md, encoding="utf-8")
        read = exchange.import_file(folder / "memory.md", folder / "b" / "n.db")
        assert read.markdown and read.policy == policy
        with Store(folder / "b" / "n.db", clock=Clock(step=20_000.0)) as b:
            assert _seen(b.all_facts()) == before
            assert memory_policy(b) == policy
            again = exchange.export_markdown(b, now=T0)  # its own policy, carried
            assert _body(again) == _body(md)
            checked, problems = reaudit_hand(b)
            assert not problems and checked >= len(before)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_markdown_import_is_the_persons_import_in_two_versions_that_undo(tmp_path: Path) -> None:
    with Store(tmp_path / "a" / "n.db", clock=Clock(step=90_000.0)) as a:
        ana, _ = a.add_fact("human", "The user's sister is Ana.", "identity")
        a.pin(ana.id)
        a.add_fact("human", "The user lives in Lisbon.", "identity")
        toast = a.append("scratch", FactDraft("The user had toast for breakfast."))
        a.forget_now(toast.id)
        exchange.write_export(a, tmp_path / "laptop.md", markdown=True)
    exchange.import_file(tmp_path / "laptop.md", tmp_path / "b" / "n.db")
    with Store(tmp_path / "b" / "n.db") as b:
        assert [v.label for v in b.versions()] == [
            "import:3 facts from laptop.md", "1 pinned and 1 forgotten as in laptop.md"]
        adds = [m for m in b.mutations() if m.mutation.kind == "add"]
        assert {m.mutation.refs[exchange.IMPORTED_FROM] for m in adds} == {"laptop.md"}
        assert all(m.mutation.decided_by == "you" for m in b.mutations())
        b.undo()
        assert not any(f.pinned for f in b.active_facts()) and b.active_count() == 3
        b.undo()
        assert b.active_count() == 0


def test_a_markdown_file_of_an_older_nocturne_imports(tmp_path: Path) -> None:
    """Before issue 25 the export escaped every dot and wrote no day on forgotten lines."""
    old = ("# Nocturne memory — exported 2023-11-14\n\n1 active facts, 1 forgotten, 3 versions, "
           "1 conversations.\n\n## Persona\n\n(empty)\n\n## Human\n\n"
           "- The user lives in Lisbon\\. — *identity · since 2023-11-14 · pinned*\n\n"
           "## Episodes\n\n(empty)\n\n## Scratch\n\n(empty)\n\n## Forgotten\n\n"
           "- Toast for breakfast\\. — *context · was in scratch · forgotten 2023-11-15*\n")
    (tmp_path / "old.md").write_text(old, encoding="utf-8")
    read = exchange.import_file(tmp_path / "old.md", tmp_path / "b" / "n.db")
    assert read.policy is None and "names no retention policy" in read.policy_message()
    with Store(tmp_path / "b" / "n.db") as b:
        lisbon, toast = b.all_facts()
        assert (lisbon.text, lisbon.pinned, lisbon.active) == ("The user lives in Lisbon.", True, True)
        assert (toast.text, toast.active, _day(toast.updated_at)) == (
            "Toast for breakfast.", False, "2023-11-15")
        assert memory_policy(b) is None


def test_markdown_facts_import_into_scratch_with_the_scratch_door(tmp_path: Path) -> None:
    with Store(tmp_path / "a" / "n.db", clock=Clock()) as a:
        a.add_fact("human", "The user plays the cello on Thursdays.", "preferences")
        a.append("scratch", FactDraft("Lisbon"))  # a fragment: the scratch door wants a sentence
        exchange.write_export(a, tmp_path / "cello.md", markdown=True)
    with Store(tmp_path / "b" / "n.db", clock=Clock()) as b:
        b.add_fact("human", "The user lives in Porto.", "identity")
        done = exchange.import_file_into_scratch(tmp_path / "cello.md", b)
        assert [f.text for f in done.added] == ["The user plays the cello on Thursdays."]
        assert [f.category for f in done.added] == ["preferences"]
        assert len(done.refused) == 1 and memory_policy(b) is None


# -------------------------------------------------------------------- the policy travels


def _store_with_facts(path: Path) -> None:
    with Store(path, clock=Clock()) as s:
        s.add_fact("human", "The user lives in Lisbon.", "identity")
        s.add_turn("user", "I live in Lisbon.")


def test_the_json_export_carries_the_policy_and_the_import_restores_it(tmp_path: Path) -> None:
    """Issue 25: an imported memory ran under the default policy, not the one it was exported
    with (the export carried none)."""
    policy = RetentionPolicy(stale_after_days=90, max_active_facts=300, forget_below=0,
                             protected_categories=("identity", "commitments"))
    _store_with_facts(tmp_path / "a" / "n.db")
    with Store(tmp_path / "a" / "n.db") as a:
        exported = exchange.export_json(a, now=T0, policy=policy)
    assert json.loads(exported)["policy"] == policy.model_dump(mode="json")
    (tmp_path / "m.json").write_text(exported, encoding="utf-8")
    read = exchange.import_file(tmp_path / "m.json", tmp_path / "b" / "n.db")
    assert read.policy == policy and "stale after 90 days" in read.policy_message()
    with Store(tmp_path / "b" / "n.db") as b:
        assert memory_policy(b) == policy
        assert exchange.export_json(b, now=T0) == exported  # its own, carried on


def test_a_version_1_export_without_a_policy_imports_under_the_settings(tmp_path: Path) -> None:
    _store_with_facts(tmp_path / "a" / "n.db")
    with Store(tmp_path / "a" / "n.db") as a:
        doc = json.loads(exchange.export_json(a))
    assert doc["policy"] is None  # no policy given and none of its own: the file says none
    doc["exportVersion"] = 1
    del doc["policy"]
    (tmp_path / "v1.json").write_text(json.dumps(doc), encoding="utf-8")
    read = exchange.import_file(tmp_path / "v1.json", tmp_path / "b" / "n.db")
    assert read.policy is None and "the policy of your settings" in read.policy_message()
    with Store(tmp_path / "b" / "n.db") as b:
        assert memory_policy(b) is None and b.active_count() == 1
