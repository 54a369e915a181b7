"""A block as lines (no server): rendering keeps one fact per line, the diff names each change."""

from __future__ import annotations

from nocturne_desktop.letta.lines import diff, parse, render, render_line

SYNCED = [("m_1", "The user lives in Lisbon."), ("m_2", "The user keeps a bearded dragon."),
          ("m_3", "The user drinks tea.")]


def test_a_fact_with_line_breaks_is_one_line_and_blank_lines_are_not_lines() -> None:
    assert render_line("The user likes\n  long walks\r\nin the rain. ") == (
        "The user likes long walks in the rain.")
    assert parse("  a line \n\n\tanother\n") == ["a line", "another"]
    assert render(["a", "b"]) == "a\nb" and parse(render([])) == []


def test_an_unchanged_block_has_no_changes_and_keeps_every_fact() -> None:
    ops, kept = diff("human", SYNCED, [t for _, t in SYNCED])
    assert ops == [] and kept == {0: "m_1", 1: "m_2", 2: "m_3"}


def test_a_correction_in_passing_is_an_edit_of_the_same_fact() -> None:
    now = ["The user lives in Porto now.", "The user keeps a bearded dragon.",
           "The user drinks tea."]
    ops, kept = diff("human", SYNCED, now)
    assert [(o.kind, o.fact_id, o.line, o.old) for o in ops] == [
        ("edit", "m_1", "The user lives in Porto now.", "The user lives in Lisbon.")]
    assert kept == {1: "m_2", 2: "m_3"}


def test_a_removed_line_and_an_inserted_one_are_a_removal_and_an_addition() -> None:
    now = ["The user lives in Lisbon.", "I'm vegetarian since last year.", "The user drinks tea."]
    ops, kept = diff("human", SYNCED, now)
    kinds = sorted((o.kind, o.fact_id, o.line) for o in ops)
    assert kinds == [("add", None, "I'm vegetarian since last year."),
                     ("remove", "m_2", "The user keeps a bearded dragon.")]
    assert kept == {0: "m_1", 2: "m_3"}
    added = next(o for o in ops if o.kind == "add")
    assert added.at == 1 and added.label == "human"


def test_lines_appended_at_the_end_are_additions_at_their_place() -> None:
    ops, _ = diff("scratch", SYNCED, [t for _, t in SYNCED] + ["The user went to Porto."])
    assert [(o.kind, o.at) for o in ops] == [("add", 3)]


def test_a_rewritten_refused_line_is_an_addition_not_an_edit_of_a_fact() -> None:
    synced = [("m_1", "The user lives in Lisbon."), (None, "Persona:")]
    ops, _ = diff("persona", synced, ["The user lives in Lisbon.", "Persona: a calm helper."])
    assert [(o.kind, o.fact_id) for o in ops] == [("add", None)]


def test_an_emptied_block_removes_every_fact() -> None:
    ops, kept = diff("human", SYNCED, [])
    assert sorted(o.fact_id or "" for o in ops if o.kind == "remove") == ["m_1", "m_2", "m_3"]
    assert kept == {}
