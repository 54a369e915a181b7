"""JSON extraction and the tolerant scanner, without a server."""

from __future__ import annotations

import json

import pytest

from nocturne_desktop.llm.jsonextract import (
    extract_json_object,
    first_json_object,
    salvage_object,
    strip_fences,
    strip_think,
)

OBJ = {"a": 1, "b": ["x", {"c": "}"}]}
TEXT = json.dumps(OBJ)


@pytest.mark.parametrize(
    "text",
    [
        TEXT,
        f"<think>I should output {{a: 1}} maybe</think>{TEXT}",
        f"<THINK>\nplan\n</THINK>\n\n```json\n{TEXT}\n```",
        f"reasoning without an opening tag {{oops}}</think>{TEXT}",
        f"Here you go:\n```\n{TEXT}\n```\nAnything else?",
        f"```json\n{TEXT}",  # an unterminated fence
        f"Use {{braces}} like this: {TEXT} — done.",
        f"<think>{TEXT}",  # still thinking at the cut: look inside rather than nowhere
        json.dumps(OBJ, indent=2),
    ],
    ids=[
        "bare",
        "think",
        "think-upper-fence",
        "close-tag-only",
        "plain-fence",
        "open-fence",
        "prose-braces",
        "unterminated-think",
        "pretty",
    ],
)
def test_extract_finds_the_object(text: str) -> None:
    assert extract_json_object(text) == OBJ


def test_extract_respects_strings_and_escapes() -> None:
    obj = {"note": 'he said "{not json}" and \\ left', "n": [1, 2]}
    assert first_json_object("prefix { broken " + json.dumps(obj) + " suffix") == obj


def test_extract_returns_none_without_an_object() -> None:
    assert extract_json_object("no json here") is None
    assert extract_json_object("[1, 2, 3]") is None
    assert extract_json_object('{"a": 1') is None
    assert extract_json_object("") is None


def test_strip_helpers() -> None:
    assert strip_think("<think>x</think>y<think>z</think>w") == "yw"
    assert strip_think("a</think>b") == "b"
    assert strip_think("keep <think>dropped to the end") == "keep "
    assert strip_fences("no fence") == "no fence"
    assert strip_fences("x ```json\n{}\n``` y") == "{}\n"


def test_salvage_keeps_complete_elements_and_members_before_them() -> None:
    text = '{"round": 2, "pairs": [{"k": "a"}, {"k": "b, ]"}, {"k": "c'
    scan = salvage_object(text, "pairs")
    assert scan.list_found
    assert scan.fields == {"round": 2, "pairs": [{"k": "a"}, {"k": "b, ]"}]}
    assert scan.complete_items == 2


def test_salvage_of_a_whole_object_reads_everything() -> None:
    scan = salvage_object('{"pairs": [1, 2], "after": "x"}', "pairs")
    assert scan.fields == {"pairs": [1, 2], "after": "x"}


def test_salvage_does_not_trust_a_scalar_at_the_cut() -> None:
    assert salvage_object('{"ids": [12, 34', "ids").fields == {"ids": [12]}
    assert salvage_object('{"ids": ["ab", "cd"', "ids").fields == {"ids": ["ab", "cd"]}
    assert salvage_object('{"ids": [{"x": 1}', "ids").fields == {"ids": [{"x": 1}]}


def test_salvage_when_the_list_never_started() -> None:
    scan = salvage_object('{"note": "long text that was c', "pairs")
    assert not scan.list_found and scan.fields == {}
    assert not salvage_object("no object at all", "pairs").list_found
    scan = salvage_object('<think>hm</think>```json\n{"pairs": [ {"a": 1}, {"a"', "pairs")
    assert scan.fields == {"pairs": [{"a": 1}]}
