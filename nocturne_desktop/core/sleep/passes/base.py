"""What every pass shares: the guardrail, chunking to a context budget, the request shape."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from nocturne_desktop.core.judges.duplicates import JoinMemo
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import Message
from nocturne_desktop.core.types import Fact, Strength

GUARDRAIL = (
    "Rules you must follow: refer only to itemIds that appear in the input; never invent facts, "
    "names, numbers or dates; when in doubt, leave the item out. Your reply is checked by code "
    "and anything that breaks these rules is refused."
)
COMPACT = "Reply with one compact JSON object on a single line and nothing else."

Reason = Annotated[str, Field(json_schema_extra={"maxLength": 160})]
"""Every proposal's ``reason``: bounded in the schema only, so a grammar-enforcing server stops a
rambling sentence while a longer reason from any other server is still gated, not refused."""


def estimate_tokens(text: str) -> int:
    """A rough, deterministic token estimate (about four characters a token)."""
    return max(1, (len(text) + 3) // 4)


@dataclass(frozen=True)
class Chunk:
    """One model request's worth of work: the payload the model sees and the ids it may touch."""

    payload: dict[str, Any]
    candidates: frozenset[str]
    entries: int
    """How many proposals at most this chunk can sensibly yield (the contract's maxItems)."""


@dataclass(frozen=True)
class PassPlan:
    """What a pass will send: its chunks, and the size of its whole candidate set."""

    name: str
    chunks: tuple[Chunk, ...]
    candidate_count: int
    notes: tuple[str, ...] = field(default_factory=tuple)


class PassSpec:
    """One pass: how to build its payload, its contract, its prompt and its reply budget."""

    name: str = ""
    list_key: str = ""
    entry: type[BaseModel] = BaseModel
    """One proposal of the pass's contract."""
    tokens_per_entry: int = 60
    instructions: str = ""

    def plan(
        self, facts: Sequence[Fact], policy: RetentionPolicy, now: float, budget_tokens: int,
        strengths: Mapping[str, Strength] | None = None, *, join: JoinMemo | None = None,
        chunked: bool = True,
    ) -> PassPlan:
        """The pass's chunks. ``strengths`` (importance and recalls by id) let a pass rank by
        the full salience; passes that do not rank ignore them. ``join`` is the pass's shared
        duplicate join (:class:`.duplicates.JoinMemo`), for the passes that read duplicate pairs. With
        ``chunked=False`` (no model to send them to) the chunks are not built: only the
        candidate count is."""
        raise NotImplementedError

    def contract(self, max_items: int) -> type[BaseModel]:
        """``{list_key: [entry, ...]}`` with the array bounded to ``max_items`` (S-LLM-4: a small
        model under a grammar otherwise runs on until max_tokens and the reply is cut)."""
        items: Any = list.__class_getitem__(self.entry)  # list[entry], built at run time
        field: Any = (items, Field(default_factory=list, max_length=max(1, max_items)))
        return create_model(
            f"{self.name.capitalize()}Reply", __config__=ConfigDict(extra="forbid"),
            **{self.list_key: field},
        )

    def max_tokens(self, chunk: Chunk) -> int:
        return 48 + self.tokens_per_entry * max(1, chunk.entries)

    def messages(self, chunk: Chunk) -> list[Message]:
        system = f"{self.instructions}\n\n{GUARDRAIL}\n{COMPACT}"
        user = json.dumps(chunk.payload, ensure_ascii=False, separators=(",", ":"))
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def pack(
    units: Sequence[Any],
    render: Callable[[Any], Any],
    ids_of: Callable[[Any], Sequence[str]],
    wrap: Callable[[list[Any]], dict[str, Any]],
    budget_tokens: int,
    entries_of: Callable[[list[Any]], int] = len,
) -> tuple[Chunk, ...]:
    """Greedily pack units (pairs, clusters, facts) into chunks whose payload fits the budget.

    A single unit larger than the budget still gets a chunk of its own: refusing to send it
    would silently skip work; the request may then be larger than the budget, which the
    caller's context size must absorb."""
    chunks: list[Chunk] = []
    current: list[Any] = []
    rendered: list[Any] = []
    used = 0
    overhead = estimate_tokens(json.dumps(wrap([]), separators=(",", ":")))
    for unit in units:
        r = render(unit)
        cost = estimate_tokens(json.dumps(r, ensure_ascii=False, separators=(",", ":"))) + 1
        if current and overhead + used + cost > budget_tokens:
            chunks.append(_chunk(current, rendered, ids_of, wrap, entries_of))
            current, rendered, used = [], [], 0
        current.append(unit)
        rendered.append(r)
        used += cost
    if current:
        chunks.append(_chunk(current, rendered, ids_of, wrap, entries_of))
    return tuple(chunks)


def _chunk(
    units: list[Any],
    rendered: list[Any],
    ids_of: Callable[[Any], Sequence[str]],
    wrap: Callable[[list[Any]], dict[str, Any]],
    entries_of: Callable[[list[Any]], int],
) -> Chunk:
    ids = frozenset(i for u in units for i in ids_of(u))
    return Chunk(payload=wrap(rendered), candidates=ids, entries=entries_of(units))
