"""The write-time encoder: new transcript turns become atomic facts in ``scratch`` (S-ENC-1..3).

Only the turns after the ``extracted_through`` cursor (a store meta key) are sent, plus at most
the one turn before them, marked as context, so a chat of N turns costs N turns of prompt in
total rather than N²/2 (the article's bug 2).

The model proposes; :func:`check_fact` decides. A fact is accepted only when it is a statement
(not a greeting, a heading or a bare noun phrase), every content token is found in the evidence
that was sent (coverage 1.0, faithful forms equal), it names nobody and nothing the transcript
does not name, and the meaning guards find it says what the evidence says (polarity, numbers,
roles, modality; :mod:`.meaning`), and its importance, when the model gave one, is a whole
number from 1 to 5 (S-RET-2; stored with the fact for its salience). The evidence is what the
user said; an assistant's question counts only with the user's answer, a yes/no question
resolved by it (S-MEAN-6). Identical facts proposed in one reply are stored once; repeats
across turns are *not* filtered: collapsing them is Dedupe's job, at Sleep (S-ENC-3).

Everything one request produces -- the appended facts, one mutation row per proposal
(accepted or refused) and the cursor advance -- is written in one store transaction, so a
crash leaves either all of it or none of it.

Failures are reported in :attr:`EncodeResult.error`, not raised. A
:class:`~nocturne_desktop.core.ports.ModelError` (model down, timeout, HTTP error) leaves the
cursor where it was: the same turns are sent again next time, for as long as the outage lasts.
An unusable reply (no JSON, wrong shape, cut off with nothing to salvage) is not retried: at
temperature 0 the same prompt fails the same way, and a retried batch would grow with every
chat turn. It is logged as a refused mutation row holding the raw reply, and the cursor moves
past those turns. Whatever a reply holds (S-ROB-1), the log keeps a bounded, sanitised excerpt
of it, so logging cannot fail; should the store still refuse a batch's writes, the batch is
logged as one refusal saying why and the cursor moves on the same way.

Cancellation is raised, not reported: a
:class:`~nocturne_desktop.core.ports.ModelCancelled` from the client, or the token found set
between requests (:class:`~nocturne_desktop.core.cancel.Cancelled`), propagates, because the
caller asked to stop and must not mistake it for a finished run. Nothing is written for a
cancelled request either.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model

from nocturne_desktop.core import limits, policy
from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import admission, meaning
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.judges.categories import category_rule
from nocturne_desktop.core.judges.sensitive import redact
from nocturne_desktop.core.judges.textmath import new_names
from nocturne_desktop.core.mutations import ABSENT, Append, DecidedBy, Kind, Refusal, to_row
from nocturne_desktop.core.ports import (
    Message,
    ModelCancelled,
    ModelClient,
    ModelError,
    Usage,
)
from nocturne_desktop.core.types import CATEGORIES, Fact, FactDraft, Mutation, Turn

if TYPE_CHECKING:
    from nocturne_desktop.core.store import Store

CURSOR_KEY = "extracted_through"
"""Store meta key: the number of the last transcript turn the encoder has processed."""

"""Store meta key: ``"<first>-<last>:<count>"``, unusable replies in a row for one batch."""

NOTE_CHARS = 1000
"""Longest error note the encoder records (a client's message may quote the reply)."""

MAX_FACT_CHARS = 300
"""An atomic fact is one short sentence; anything longer is refused."""

TARGET_BLOCK = "scratch"

TOKENS_PER_FACT = 72
"""Reply budget per requested fact (a 200-character text plus its JSON keys); the request asks
for at most 2 + 3 facts per user turn."""

GUARDRAIL = (
    "Only state what the transcript says. Do not invent names, numbers or dates, and do not "
    "add details the speakers did not give. If you are unsure about a fact, omit it. Never "
    "write a password, PIN, key, token, card number or one-time code into a fact."
)


class ProposedFact(BaseModel):
    """One fact as the model proposes it. ``category`` is validated by the gate, not here,
    so that one bad entry is refused on its own instead of sinking the whole reply."""

    text: str = Field(json_schema_extra={"maxLength": 200})
    """Bounded in the schema only: a grammar-constrained server stops a rambling fact at 200
    characters; an over-long fact from a server without grammar is refused by the gate."""
    category: str = Field(json_schema_extra={"enum": list(CATEGORIES)})
    turn: int | None = None
    """The new turn the fact comes from; a missing or out-of-range number is replaced by the
    last new turn and the claim kept in the mutation's refs."""
    importance: Any = Field(
        None, json_schema_extra={"type": "integer", "minimum": 1, "maximum": 5})
    """1–5 (:data:`IMPORTANCE_GUIDE`). Optional, so replies from before it existed still
    validate (the category's usual importance then applies); checked by the gate, not here, so
    a bad value refuses only its own fact."""


class EncoderReply(BaseModel):
    """``facts`` is required: an object without it (say the one fact object a reply with an
    unclosed outer brace still holds) is not a reply that found nothing."""

    facts: list[ProposedFact] = Field(max_length=12)


@functools.cache
def encoder_contract(max_facts: int) -> type[EncoderReply]:
    """The reply contract with the ``facts`` array bounded to ``max_facts`` entries."""
    return create_model(
        "EncoderReply",
        __base__=EncoderReply,
        facts=(list[ProposedFact], Field(max_length=max_facts)),
    )


@dataclass
class EncodeResult:
    accepted: list[Fact] = field(default_factory=list)
    rejected: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    """(raw proposal, rejection reason) for every refused proposal."""
    turns: tuple[int, int] | None = None
    """First and last turn number encoded (sent as new and cursor advanced past), if any."""
    usage: Usage | None = None
    """Summed over the requests made."""
    error: str | None = None
    """Why encoding stopped early; the cursor stays before the turns that were not encoded."""
    requests: int = 0
    request_chars: list[int] = field(default_factory=list)
    """Size (characters of all message contents) of each request sent."""
    notes: list[str] = field(default_factory=list)


# -- the gate -------------------------------------------------------------------------------

def check_fact(
    text: str,
    transcript_texts: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    speakers: Sequence[str] | None = None,
) -> str | None:
    """Why ``text`` may not be stored as a fact drawn from ``transcript_texts``, or None.

    ``transcript_texts`` is the evidence (:func:`meaning.evidence_items`): what the user said,
    and the assistant's questions the user answered. A proper noun is known when the transcript
    writes it capitalised anywhere, sentence starts included ("Saffron is my dragon."). Then the
    meaning guards (S-MEAN-1..3, 6): the fact must be a statement, and say what the evidence
    says with the same polarity, numbers, roles and modality. ``labels`` name the evidence in
    refusals ("turn 3"); ``speakers`` say who wrote each text (default: the user).

    A fact that looks like a secret (a password, key, token, card number or one-time code) is
    refused whatever the transcript says (the admission check every door shares,
    :mod:`.admission`): memory goes into every prompt, the transcript keeps what the person
    typed.
    """
    stripped = text.strip()
    if not stripped:
        return "fact text is empty"
    if "\x00" in stripped:
        return "fact text contains a NUL character"
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError:
        return "fact text is not valid Unicode"
    if len(stripped) > MAX_FACT_CHARS:
        return f"fact is too long ({len(stripped)} characters; an atomic fact has at most {MAX_FACT_CHARS})"
    floor = admission.problem(stripped, Door.ENCODER, what="fact text", statement=False)
    if floor is not None:
        return floor.message
    if not tm.content_tokens(stripped):
        return "fact has no content words"
    fragment = meaning.statement_problem(stripped)
    if fragment:
        return fragment
    who = list(speakers) if speakers is not None else ["user"] * len(transcript_texts)
    cov, missing = meaning.canonical_coverage(stripped, transcript_texts, who)
    if cov < 1.0:
        shown = ", ".join(missing[:8]) + (", …" if len(missing) > 8 else "")
        return (
            "fact is not traceable to the transcript: "
            f"{len(missing)} content token(s) invented ({shown})"
        )
    names = new_names(stripped, transcript_texts)
    if names:
        return "fact introduces proper noun(s) absent from the transcript: " + ", ".join(names)
    named = list(labels) if labels is not None else ["the transcript"] * len(transcript_texts)
    return meaning.check_claim(stripped, list(zip(named, transcript_texts, strict=True)),
                               what="fact", speakers=who)


IMPORTANCE_GUIDE = (
    "1 a passing remark true of one day (a lunch, the weather, a late train, a mood), "
    "2 a background detail, 3 an ordinary fact about their life, 4 something significant "
    "(family, work, a plan, a health event, a big trip), 5 something never to forget "
    "(who they are, an allergy, a safety matter)"
)
"""What each importance means, as the encoder's prompt says it."""


def check_importance(value: object) -> str | None:
    """Why ``value`` is not an importance (None, a missing one, is fine), or None."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        policy.check_importance(value)
    except ValueError as exc:
        return str(exc)
    return None


def check_category(category: str) -> str | None:
    """Why ``category`` is not one the store accepts, or None (:mod:`.categories`)."""
    if category not in CATEGORIES:
        return f"unknown category {limits.show(category)} (expected one of: {', '.join(CATEGORIES)})"
    return None


def completed_fact(text: str, items: Sequence[tuple[str, str, str]], *,
                   labels: Sequence[str], sources: Sequence[str],
                   speakers: Sequence[str]) -> tuple[str, str] | None:
    """(completed text, the audit's sentence) for a predicate fragment the model cut from its
    subject ("18 years old" from "I'm 18 years old" → "The user is 18 years old"), when the
    completion passes :func:`check_fact`; else None. The fragment alone is refused like any
    fragment (:func:`meaning.statement_problem`)."""
    for label, said, who in items:
        if who != "user":
            continue
        full = meaning.complete_predicate(text, [said])
        if full is not None and check_fact(full, sources, labels=labels, speakers=speakers) is None:
            return full, (f"statement rule: the fragment {text.strip()[:60]!r} was completed from "
                          f"{label} as {full[:80]!r}")
    return None


questions = meaning.questions


def evidence_items(turns: Sequence[Turn]) -> list[tuple[str, str, str]]:
    """What a fact may be traced to, as ``(label, text, speaker)`` (S-MEAN-6): everything the
    user said, plus the assistant's questions only together with the user's answer.

    An assistant's statements are not evidence: a small model happily "remembers" its own
    chatter ("Saffron is a bit of a big, imposing one"). A wh-question lends its words when the
    user answers it ("What is your dragon called?" / "Saffron."); a yes/no question is resolved
    by the answer ("Do you eat meat?" / "No." → does not eat meat), never taken as a statement."""
    return meaning.evidence_items([(t.n, t.role, t.text) for t in turns])


def evidence(turns: Sequence[Turn]) -> list[str]:
    """The texts of :func:`evidence_items`."""
    return [text for _, text, _ in evidence_items(turns)]


# -- the prompt -----------------------------------------------------------------------------


def _turn_line(turn: Turn) -> str:
    """How a turn is shown to the encoder: exactly the evidence the gate will accept.

    The user's words in full; of the assistant's, only its questions (which the user's answer
    confirms). A small model shown the assistant's statements copies them into "facts", which
    the gate then has to refuse; a model never shown them extracts what the user said."""
    if turn.role == "assistant":
        asked = " ".join(questions(turn.text))
        return f"assistant (asked): {asked}" if asked else ""
    return f"{turn.role}: {turn.text}"


def build_encoder_messages(
    new_turns: Sequence[Turn], context: Turn | None, *, max_facts: int
) -> list[Message]:
    cats = ", ".join(CATEGORIES)
    system = (
        "You turn a conversation between a user and an assistant into memory facts.\n"
        "Write each fact as one short, atomic sentence in the third person: about the user "
        '("The user ...") or, when the conversation states it, about the assistant\'s own '
        'persona ("The assistant ..."). Split compound statements into separate facts. '
        "Reuse the words of the transcript.\n"
        f"Give every fact a category ({cats}), the number of the NEW turn it comes from, and "
        f"an importance from 1 to 5: {IMPORTANCE_GUIDE}.\n"
        "Extract facts only from the turns under NEW TURNS. A turn under CONTEXT was "
        "processed before and is shown only so the new turns make sense.\n"
        f"{GUARDRAIL}\n"
        'Reply with JSON only: {"facts": [{"text": "...", "category": "...", "turn": 0, '
        '"importance": 3}]}'
        f" with at most {max_facts} facts; reply {{\"facts\": []}} when there is nothing "
        "worth remembering."
    )
    parts: list[str] = []
    if context is not None:
        line = _turn_line(context)
        if line:
            parts.append(f"CONTEXT (already processed):\n[turn {context.n}] {line}")
    parts.append(
        "NEW TURNS:\n"
        + "\n".join(f"[turn {t.n}] {line}" for t in new_turns if (line := _turn_line(t)))
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _add_usage(a: Usage | None, b: Usage) -> Usage:
    if a is None:
        return b
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.estimated or b.estimated,
    )


# -- the encoder ----------------------------------------------------------------------------


class Encoder:
    """Encodes new transcript turns into ``scratch`` facts through the model and the gate.

    ``max_turns`` bounds one request: a backlog (say the model was down for a while) is sent
    in several requests of at most that many new turns, each committed on its own.
    """

    def __init__(
        self,
        store: Store,
        model: ModelClient,
        *,
        max_facts: int = 12,
        max_tokens: int = 768,
        max_turns: int = 8,
        temperature: float = 0.0,
    ) -> None:
        if max_facts < 1 or max_turns < 1:
            raise ValueError("max_facts and max_turns must be at least 1")
        self.store = store
        self.model = model
        self.max_facts = max_facts
        self.max_tokens = max_tokens
        self.max_turns = max_turns
        self.temperature = temperature

    @property
    def cursor(self) -> int:
        raw = self.store.get_meta(CURSOR_KEY, "0")
        try:
            return max(0, int(raw or "0"))
        except ValueError:
            return 0

    def encode_new_turns(self, cancel: CancelToken | None = None, *,
                         through: int | None = None) -> EncodeResult:
        """Encode the turns after the cursor, up to turn ``through`` (None: every one).

        ``through`` lets the window remember one exchange while the next is already being
        recorded: the turns of the next message wait for their own run, in order."""
        result = EncodeResult()
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            cursor = self.cursor
            # what looks like a secret is withheld from the request (it never becomes a fact)
            pending = [dataclasses.replace(t, text=redact(t.text))
                       for t in self.store.turns(after=max(0, cursor - 1))]
            context = pending[0] if pending and pending[0].n <= cursor else None
            batch = [t for t in pending
                     if t.n > cursor and (through is None or t.n <= through)][: self.max_turns]
            if not batch:
                return result
            # one request reads one conversation: a batch stops where the next one begins, and
            # the context turn is only given when it belongs to the same conversation
            first_conv = batch[0].conversation
            new = list(itertools.takewhile(lambda t: t.conversation == first_conv, batch))  # noqa: B023
            if context is not None and context.conversation != new[0].conversation:
                context = None
            kept = len(result.accepted), len(result.rejected)
            try:
                if not self._encode_batch(new, context, result, cancel):
                    return result
            except InvalidInput as exc:  # the gate let through what the store refuses
                del result.accepted[kept[0]:], result.rejected[kept[1]:]  # rolled back
                first, last = new[0].n, new[-1].n
                why = limits.clean(f"the store refused this batch's writes, so none of its facts "
                                   f"were stored: {exc}", NOTE_CHARS)
                result.error = f"turns {first}-{last}: {why}"
                self._log_unusable(why, "", first, last)
                result.turns = (result.turns[0] if result.turns else first, last)
            if len(batch) < self.max_turns and len(new) == len(batch):
                return result

    def _encode_batch(
        self,
        new: Sequence[Turn],
        context: Turn | None,
        result: EncodeResult,
        cancel: CancelToken | None,
    ) -> bool:
        """One request. Returns False when it failed and the cursor did not move.

        A transport error leaves the cursor where it was: the turns are retried next time. A
        reply the model did send but that cannot be used (unparseable, or cut off before one
        complete fact) is logged as a refused row with its raw text and the cursor moves on:
        asking the same model the same question at temperature 0 would only repeat it, and
        re-sending an ever-growing backlog is exactly the quadratic trap the cursor avoids.
        """
        users = sum(1 for t in new if t.role == "user")
        max_facts = max(1, min(self.max_facts, 2 + 3 * users))
        max_tokens = min(self.max_tokens, 64 + TOKENS_PER_FACT * max_facts)
        messages = build_encoder_messages(new, context, max_facts=max_facts)
        result.requests += 1
        result.request_chars.append(sum(len(m["content"]) for m in messages))
        first, last = new[0].n, new[-1].n
        try:
            reply = self.model.structured(
                messages,
                encoder_contract(max_facts),
                temperature=self.temperature,
                max_tokens=max_tokens,
                cancel=cancel,
            )
        except ModelCancelled:
            raise
        except ModelError as exc:
            result.error = f"turns {first}-{last} were not encoded: {exc}"
            return False
        result.usage = _add_usage(result.usage, reply.usage)
        if reply.value is None:
            why = limits.clean(reply.error or "the reply did not fit the contract", NOTE_CHARS)
            if reply.truncated:
                why = f"the reply was cut off at max_tokens ({max_tokens}); {why}"
            result.error = f"turns {first}-{last}: the model's reply could not be used: {why}"
            self._log_unusable(f"reply could not be used: {why}", reply.raw, first, last)
            result.turns = (result.turns[0] if result.turns else first, last)
            return True
        if reply.truncated:
            result.notes.append(
                f"turns {first}-{last}: the reply was cut off; only the facts that could be "
                "salvaged were gated"
            )
        if cancel is not None and cancel.cancelled:
            raise ModelCancelled("Encoding was cancelled before its facts were written.")

        items = evidence_items([*([context] if context else []), *new])
        labels = [label for label, _, _ in items]
        sources = [text for _, text, _ in items]
        speakers = [who for _, _, who in items]
        new_numbers = {t.n for t in new}
        plan: list[tuple[dict[str, Any], FactDraft | None, str | None, int, dict[str, str]]] = []
        seen: dict[str, int] = {}
        for k, proposal in enumerate(reply.value.facts, 1):
            # an absent importance stays absent in the audit row (replies from before it existed)
            raw = proposal.model_dump(exclude={"importance"} if proposal.importance is None else None)
            turn = proposal.turn if proposal.turn in new_numbers else last
            text = proposal.text
            corrected: dict[str, str] = {}
            reason = (check_category(proposal.category) or check_importance(proposal.importance)
                      or check_fact(text, sources, labels=labels, speakers=speakers))
            if reason is not None and reason.startswith("statement guard"):
                done = completed_fact(text, items, labels=labels, sources=sources,
                                      speakers=speakers)
                if done is not None:
                    (text, corrected["text"]), reason = done, None
            draft = None
            if reason is None:
                category, cat_why = category_rule(text, proposal.category)
                if cat_why is not None:
                    corrected["category"] = cat_why
                # identical facts proposed in one batch collapse here; repeats across turns
                # stay for Dedupe (S-ENC-3)
                key = tm.normalize(meaning.canonical(text))
                if key in seen:
                    reason = (f"same fact as proposal {seen[key]} of this reply "
                              "(identical facts in one batch are stored once)")
                else:
                    seen[key] = k
                    level = proposal.importance
                    draft = FactDraft(unicodedata.normalize("NFC", text.strip()), category,
                                      source_turn=turn,
                                      importance=None if level is None else int(level))
            plan.append((raw, draft, reason, turn, corrected))

        with self.store.transaction():
            rows: list[Mutation] = []
            for raw, draft, reason, turn, corrected in plan:
                claimed = raw["turn"] if raw["turn"] != turn else ABSENT
                if draft is not None:
                    fact = self.store.append(TARGET_BLOCK, draft, door=Door.ENCODER)
                    result.accepted.append(fact)
                    why = "; ".join([f"traceable to turn {turn}", *corrected.values()])
                    rows.append(to_row(Append(
                        pass_name="encoder", target=fact.id, reason=limits.clean(why, NOTE_CHARS),
                        decided_by=DecidedBy.ENCODER, proposal=raw, turn=turn,
                        claimed_turn=claimed,
                        extra={"corrected": corrected} if corrected else {},
                    )))
                else:
                    assert reason is not None
                    result.rejected.append((raw, reason))
                    extra: dict[str, Any] = {"turn": turn}
                    if claimed is not ABSENT:
                        extra["claimed_turn"] = limits.storable(claimed, limits.SHOWN_CHARS)
                    rows.append(to_row(Refusal(
                        pass_name="encoder", of=Kind.APPEND, target="-", why=reason,
                        decided_by=DecidedBy.ENCODER, proposal=limits.storable(raw), extra=extra,
                    )))
            if rows:
                self.store.record_mutations(rows, seq=None, sleep_id=None)
            self.store.set_meta(CURSOR_KEY, str(last))
        result.turns = (result.turns[0] if result.turns else first, last)
        return True

    def _log_unusable(self, why: str, raw: str, first: int, last: int) -> None:
        """One refused row for a whole batch (with an excerpt of the raw reply, if any); the
        cursor moves past the batch."""
        row = to_row(Refusal(
            pass_name="encoder", of=Kind.APPEND, target="-", why=why, decided_by=DecidedBy.ENCODER,
            raw=limits.clean(raw, limits.RAW_EXCERPT_CHARS), extra={"turns": [first, last]},
        ))
        with self.store.transaction():
            self.store.record_mutations([row], seq=None, sleep_id=None)
            self.store.set_meta(CURSOR_KEY, str(last))
