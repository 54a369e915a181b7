""""How much would I still know?": a benchmark file's questions put to the open memory (S-RET-1).

A benchmark file (this project's ``nocturne-memory-bench/1`` layout, or the public LoCoMo
layout) holds questions with their answers. For each question, the chat agent's prompt
assembly builds the memory it would show (:func:`~nocturne_desktop.core.chat.agent.render_memory`
at the agent's budget); the question is *known* when the facts shown carry its answer:
coverage of the answer's content words by the shown facts ≥ :data:`KNOWN_AT` (faithful forms
equal). No model is asked and nothing is written: it measures what memory and retrieval
would put in front of a model, not what a model would make of it.

A file that is not one of the two layouts, or holds no question with an answer, raises
:class:`~nocturne_desktop.core.errors.InvalidInput` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nocturne_desktop.core.chat.agent import render_memory
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import meaning
from nocturne_desktop.core.judges import textmath as tm

if TYPE_CHECKING:
    from nocturne_desktop.core.store import Store

KNOWN_AT = 0.75
"""Share of the answer's content words the shown facts must carry."""
MAX_FILE_BYTES = 64 * 1024 * 1024
"""A larger file is refused unread."""


@dataclass(frozen=True, slots=True)
class BenchQuestion:
    question: str
    answer: str
    conversation: str = ""
    """The conversation the question is about (the file's id for it, else ``#n``)."""


@dataclass(frozen=True, slots=True)
class KnowItem:
    question: str
    answer: str
    known: bool
    coverage: float
    missing: tuple[str, ...]
    """Answer words no shown fact carries."""
    shown: int
    """Facts the memory prompt showed."""
    conversation: str = ""


@dataclass(frozen=True, slots=True)
class KnowReport:
    items: tuple[KnowItem, ...]

    @property
    def asked(self) -> int:
        return len(self.items)

    @property
    def known(self) -> int:
        return sum(i.known for i in self.items)

    @property
    def share(self) -> float:
        return self.known / self.asked if self.items else 0.0

    def by_conversation(self) -> list[tuple[str, int, int]]:
        """``(conversation, known, asked)`` per conversation, in the file's order."""
        tally: dict[str, list[int]] = {}
        for i in self.items:
            t = tally.setdefault(i.conversation, [0, 0])
            t[0] += i.known
            t[1] += 1
        return [(c, k, n) for c, (k, n) in tally.items()]

    def summary(self) -> str:
        return (f"{self.known} of {self.asked} questions ({100 * self.share:.0f} %) have their "
                "answer in the memory the agent would show")


def _answer_text(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    return ""


def _conversation_name(value: Any, n: int) -> str:
    name = _answer_text(value)
    return name[:80] if name else f"#{n}"


def load_questions(path: Path) -> list[BenchQuestion]:
    """The questions with an answer in a ``nocturne-memory-bench/1`` or LoCoMo file."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InvalidInput(f"{path.name} is larger than {MAX_FILE_BYTES // 2**20} MB")
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path.name}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path.name} is not a JSON file ({exc})") from None
    out: list[BenchQuestion] = []
    if isinstance(raw, dict) and raw.get("format") == "nocturne-memory-bench/1":
        for n, conv in enumerate(raw.get("conversations") or [], start=1):
            if not isinstance(conv, dict):
                continue
            name = _conversation_name(conv.get("id"), n)
            for q in conv.get("questions") or []:
                if isinstance(q, dict) and isinstance(q.get("q"), str):
                    out.append(BenchQuestion(q["q"].strip(), _answer_text(q.get("answer")), name))
    else:
        samples = [raw] if isinstance(raw, dict) and "qa" in raw else raw
        if not isinstance(samples, list) or not all(
                isinstance(s, dict) and "qa" in s for s in samples):
            raise InvalidInput(f"{path.name} is neither a nocturne-memory-bench/1 file nor a "
                               "LoCoMo file (a list of samples with 'qa')")
        for n, s in enumerate(samples, start=1):
            name = _conversation_name(s.get("sample_id"), n)
            for q in s.get("qa") or []:
                if isinstance(q, dict) and isinstance(q.get("question"), str):
                    out.append(BenchQuestion(q["question"].strip(), _answer_text(q.get("answer")),
                                             name))
    out = [q for q in out if q.question and tm.content_tokens(q.answer)]
    if not out:
        raise InvalidInput(f"{path.name} holds no question with an answer")
    return out


def still_know(
    store: Store, questions: Sequence[BenchQuestion], *, budget_chars: int = 6000
) -> KnowReport:
    """Put each question to the open memory's prompt assembly; see the module doc."""
    items = []
    for q in questions:
        view = render_memory(store, q.question, budget_chars=budget_chars)
        texts = [f.text for f in view.shown]
        cov, missing = meaning.canonical_coverage(q.answer, [" ".join(texts)]) if texts else (0.0, [])
        if not texts:
            missing = sorted(tm.content_tokens(q.answer))
        items.append(KnowItem(q.question, q.answer, cov >= KNOWN_AT, cov, tuple(missing),
                              len(view.shown), q.conversation))
    return KnowReport(tuple(items))
