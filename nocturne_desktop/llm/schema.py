"""A pydantic contract as an OpenAI-strict JSON schema.

OpenAI's strict structured outputs (and the grammar compilers of llama.cpp, vLLM, LM Studio)
want every object closed (``additionalProperties: false``) and every property listed in
``required``. Pydantic's bounds are kept on purpose: ``Field(max_length=n)`` on a list becomes
``maxItems``, which is what stops a small model from running on until ``max_tokens``
(SPEC S-LLM-4). References are inlined so that servers with partial ``$ref`` support see a
self-contained schema; a recursive contract keeps its ``$defs``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

_DROP_KEYS = ("default", "title")


def strict_schema(contract: type[BaseModel]) -> dict[str, Any]:
    """The contract's JSON schema, closed and fully required, with ``$ref`` inlined."""
    raw = contract.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})
    recursive = any(_refers_to(defs, name, set()) for name in defs)
    if recursive:
        ref = raw.get("$ref")
        if isinstance(ref, str) and set(raw) == {"$ref"} and _ref_name(ref) in defs:
            raw = copy.deepcopy(defs[_ref_name(ref)])  # the root must be an object, not a $ref
        schema: dict[str, Any] = _close(raw)
        schema["$defs"] = {name: _close(d) for name, d in defs.items()}
        return schema
    inlined: dict[str, Any] = _close(_inline(raw, defs))
    return inlined


def schema_name(contract: type[BaseModel]) -> str:
    """A name OpenAI accepts for ``json_schema.name`` (letters, digits, ``_``, ``-``; ≤ 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", contract.__name__)[:64] or "reply"


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _refers_to(defs: dict[str, Any], start: str, seen: set[str]) -> bool:
    """True if definition ``start`` can reach itself through ``$ref``s."""
    stack = [defs.get(start)]
    visited: set[str] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = _ref_name(ref)
                if name == start:
                    return True
                if name not in visited:
                    visited.add(name)
                    stack.append(defs.get(name))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and _ref_name(ref) in defs:
            target = copy.deepcopy(defs[_ref_name(ref)])
            extra = {k: v for k, v in node.items() if k != "$ref"}
            merged = _inline(target, defs)
            if isinstance(merged, dict):
                merged.update(_inline(extra, defs))
            return merged
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _close(node: Any) -> Any:
    """Close every object schema and drop annotation-only keywords (``title``, ``default``)."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP_KEYS:
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                # A map of names to schemas: keep every name, even "title" or "default".
                out[key] = {name: _close(sub) for name, sub in value.items()}
            else:
                out[key] = _close(value)
        props = out.get("properties")
        if isinstance(props, dict):
            out["type"] = "object"
            out["additionalProperties"] = False
            out["required"] = list(props)
        elif out.get("type") == "object" and "additionalProperties" not in out:
            # An empty model: closed, nothing required. (A dict[str, X] field keeps its
            # additionalProperties schema; strict OpenAI refuses those, the others accept them.)
            out["additionalProperties"] = False
            out["properties"] = {}
            out["required"] = []
        return out
    if isinstance(node, list):
        return [_close(v) for v in node]
    return node
