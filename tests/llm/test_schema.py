"""The contract → OpenAI-strict JSON schema conversion."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from nocturne_desktop.llm.schema import schema_name, strict_schema


class Item(BaseModel):
    id: str = Field(max_length=12)
    score: float = 0.0
    title: str = ""  # a property named like a schema keyword must survive
    kind: Literal["a", "b"] = "a"


class Inner(BaseModel):
    note: str | None = None


class Contract(BaseModel):
    items: list[Item] = Field(min_length=1, max_length=4)
    inner: Inner
    tags: list[str] = Field(default_factory=list, max_length=2)


def walk(node: Any) -> list[dict[str, Any]]:
    out = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out.extend(walk(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(walk(v))
    return out


def test_every_object_is_closed_and_fully_required() -> None:
    schema = strict_schema(Contract)
    objects = [n for n in walk(schema) if n.get("type") == "object"]
    assert len(objects) == 3
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert "$defs" not in schema and not any("$ref" in n for n in walk(schema))


def test_bounds_are_kept_and_defaults_dropped() -> None:
    schema = strict_schema(Contract)
    items = schema["properties"]["items"]
    assert items["maxItems"] == 4 and items["minItems"] == 1
    assert schema["properties"]["tags"]["maxItems"] == 2
    item = items["items"]
    assert item["properties"]["id"]["maxLength"] == 12
    assert set(item["properties"]) == {"id", "score", "title", "kind"}
    assert item["properties"]["kind"]["enum"] == ["a", "b"]
    assert not any("default" in n for n in walk(schema))


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list, max_length=3)


def test_recursive_contract_keeps_consistent_defs() -> None:
    schema = strict_schema(Node)
    assert "$defs" in schema
    assert schema["type"] == "object" and "$ref" not in schema  # the root is an object
    for obj in (n for n in walk(schema) if "properties" in n):
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    refs = {n["$ref"] for n in walk(schema) if "$ref" in n}
    assert refs and all(r.rsplit("/", 1)[-1] in schema["$defs"] for r in refs)


def test_schema_name_is_openai_safe() -> None:
    assert schema_name(Contract) == "Contract"

    class Weird(BaseModel):
        pass

    Weird.__name__ = "Weird name.v2"
    assert schema_name(Weird) == "Weird_name_v2"
    assert strict_schema(Weird) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
