"""A real export read back (issue 25): the demo memory, after a sleep has forgotten and merged
some of it and a fact was pinned by hand, exported as JSON and as Markdown, each imported into
a new folder: the facts, blocks, categories, pins, validity intervals (to the day, all the
Markdown writes) and the retention policy come back equal, and the Markdown of the imported
memory is the same file again."""

from __future__ import annotations

from pathlib import Path

from nocturne_desktop import demo
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.memorypolicy import memory_policy
from nocturne_desktop.core.types import Fact
from tests.core.test_markdown_exchange import _body, _seen


def _exact(facts: list[Fact]) -> list[tuple[object, ...]]:
    return sorted((f.block, f.text, f.category, f.active, f.pinned, f.created_at, f.updated_at)
                  for f in facts)


def test_the_demo_memory_round_trips_through_json_and_markdown(tmp_path: Path) -> None:
    policy = demo.demo_policy()
    db = demo.open_demo_store(tmp_path / "demo")
    with Store(db) as live:
        list(run_sleep(live, None, policy))  # rules only: forgets stale, merges duplicates
        first = live.active_facts()[0]
        live.pin(first.id)
        facts = live.all_facts()
        assert any(not f.active for f in facts) and any(f.pinned for f in facts)
        exchange.write_export(live, tmp_path / "demo.json", policy=policy)
        exchange.write_export(live, tmp_path / "demo.md", markdown=True, policy=policy)
        md = (tmp_path / "demo.md").read_text(encoding="utf-8")
    assert (tmp_path / "demo.md").stat().st_mode & 0o777 == 0o600

    exchange.import_file(tmp_path / "demo.json", tmp_path / "j" / "n.db")
    with Store(tmp_path / "j" / "n.db") as j:
        assert _exact(j.all_facts()) == _exact(facts)  # to the second, with history behind
        assert memory_policy(j) == policy

    read = exchange.import_file(tmp_path / "demo.md", tmp_path / "m" / "n.db")
    assert read.markdown and read.policy == policy
    with Store(tmp_path / "m" / "n.db") as m:
        assert _seen(m.all_facts()) == _seen(facts)  # block, text, category, pin, days
        assert memory_policy(m) == policy
        assert _body(exchange.export_markdown(m)) == _body(md)
