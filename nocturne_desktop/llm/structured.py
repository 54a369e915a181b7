"""Structured output: what each rung of the ladder sends, and how a reply is read against
its pydantic contract (extraction, validation, salvage of a cut-off list).

The reply is always validated locally with the contract, whatever the server claims to
enforce; parse and validation failures are returned in the :class:`StructuredResult`, not
raised, so the caller decides what half an answer is worth.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from nocturne_desktop.core.ports import ChatResult, Message, ModelHTTPError, StructuredResult
from nocturne_desktop.llm.jsonextract import (
    extract_json_object,
    outer_object_unclosed,
    salvage_object,
)
from nocturne_desktop.llm.schema import schema_name

T = TypeVar("T", bound=BaseModel)

COMPACT_JSON_LINE = "Reply with one compact JSON object only."

CUT_RAW_EXCERPT = 2000
"""Characters of a reply cut at the size cap kept in the refused result's ``raw``."""


def response_format(
    mode: str, contract: type[BaseModel], schema: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The ``response_format`` field of a request on rung ``mode`` (None for ``text``)."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema_name(contract), "strict": True, "schema": schema},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def is_format_refusal(exc: ModelHTTPError) -> bool:
    """Whether an HTTP error refuses the ``response_format`` itself (so the ladder steps
    down) rather than the request: a 400/422/500 whose body names the field."""
    if exc.status not in (400, 422, 500):
        return False
    body = exc.body.lower()
    return any(word in body for word in ("response_format", "json_schema", "json_object"))


def with_compact_line(messages: Sequence[Message]) -> list[Message]:
    """The messages with :data:`COMPACT_JSON_LINE` added to the first system message (or a new
    one at the start: several chat templates refuse a system message anywhere else)."""
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "system":
            content = m.get("content", "")
            if COMPACT_JSON_LINE not in content:
                m["content"] = f"{content}\n\n{COMPACT_JSON_LINE}" if content else COMPACT_JSON_LINE
            return out
    return [{"role": "system", "content": COMPACT_JSON_LINE}, *out]


def interpret(
    text: str,
    contract: type[T],
    mode: str,
    chat: ChatResult,
    max_tokens: int | None,
) -> StructuredResult[T]:
    """A reply read against ``contract``: the first complete JSON object, validated; for a
    reply cut at ``max_tokens`` whose contract has one list field, the complete entries
    before the cut (each validated); otherwise ``value=None`` with the reason."""
    truncated = chat.finish_reason == "length"
    common: dict[str, Any] = {
        "raw": text,
        "mode": mode,
        "finish_reason": chat.finish_reason,
        "usage": chat.usage,
        "elapsed_s": chat.elapsed_s,
        "truncated": truncated,
    }
    name = contract.__name__
    obj = extract_json_object(text)
    problem: str
    if obj is not None and outer_object_unclosed(text):
        obj = None
        problem = (
            "the reply's JSON object is never closed (cut off or malformed); the complete "
            "object inside it is only a fragment, so nothing was taken from it"
        )
    elif obj is not None:
        try:
            return StructuredResult(value=contract.model_validate(obj), **common)
        except ValidationError as exc:
            problem = f"the reply's JSON does not fit {name}: {_validation_summary(exc)}"
    elif not text.strip():
        problem = "the reply was empty"
    else:
        problem = "the reply contains no complete JSON object"
    if not truncated:
        return StructuredResult(value=None, error=problem, **common)

    tokens = max_tokens if max_tokens is not None else chat.usage.completion_tokens
    cut = f"reply cut off at max_tokens ({tokens} tokens)"
    target = _single_list_field(contract)
    if target is None:
        return StructuredResult(value=None, error=f"{cut}; {problem}", **common)
    key, item_type = target
    scan = salvage_object(text, key)
    if not scan.list_found:
        return StructuredResult(value=None, error=f"{cut} before the {key!r} list began", **common)
    adapter: TypeAdapter[Any] = TypeAdapter(item_type)
    kept: list[Any] = []
    dropped = 0
    for item in scan.fields.get(key, []):
        try:
            kept.append(adapter.validate_python(item))
        except ValidationError:
            dropped += 1
    if not kept:
        return StructuredResult(
            value=None, error=f"{cut}; no complete valid entry came before the cut", **common
        )
    fields = dict(scan.fields)
    fields[key] = kept
    try:
        value = contract.model_validate(fields)
    except ValidationError as exc:
        return StructuredResult(
            value=None,
            error=f"{cut}; the salvaged entries do not fit {name}: {_validation_summary(exc)}",
            **common,
        )
    extras: dict[str, object] = {
        "salvaged_entries": len(kept),
        "dropped_entries": dropped,
        "note": f"{cut}; kept the {len(kept)} complete entries before the cut"
        + (f", dropped {dropped} invalid" if dropped else ""),
    }
    return StructuredResult(value=value, salvaged=True, extras=extras, **common)


def _validation_summary(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _single_list_field(contract: type[BaseModel]) -> tuple[str, Any] | None:
    """(JSON key, item type) of the contract's one list field, if it has exactly one."""
    found: list[tuple[str, Any]] = []
    for name, info in contract.model_fields.items():
        if typing.get_origin(info.annotation) is list:
            args = typing.get_args(info.annotation)
            found.append((info.alias or name, args[0] if args else Any))
    return found[0] if len(found) == 1 else None
