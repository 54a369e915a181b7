"""Wake: a recall quiz whose answer key is the store (S-WAK-1..4).

Pool. Active facts that are not the target of an accepted merge (a merged text joins several
facts, so a faithful answer is a paragraph and the test stops measuring recall of one fact).
Persona, human and episodes come first, scratch only when those run out; facts with at least
two answer words come before shorter ones; the order within each group is a shuffle seeded by
``seed``, so the same store and seed give the same quiz.

Questions. The model writes each question (``{"question": str}``) under a guardrail. A
question that contains half or more of its answer's content tokens is refused and recorded
(S-WAK-3). The answer tokens that count exclude :data:`SUBJECT_TOKENS` ("user", "assistant"):
they name who the fact is about, which any question has to say, so counting them would refuse
"Where does the user live?" for "The user lives in Lisbon" for naming its subject. After a
refusal the model gets one more try, told which words gave the answer away; if that leaks too,
a question is built in code from a template, "What do you remember about the user (regarding
"<words>")?", whose topic words are at most a third of the answer tokens (fewer than the
half the gate refuses), and the item is marked ``template_fallback``.

Asking. Through the chat agent's prompt (memory from the store), without recording anything
in the transcript and without chat history: the transcript still holds the original
conversation, and a quiz answered from the last few turns would not test memory.

Scoring (S-WAK-2). Correct when ``coverage(fact, reply) >= 0.9`` (faithful forms equal) and the
reply carries the fact's polarity, numbers, roles and modality (the meaning guards, with the
reply read as the assistant speaking: its "you" is the user); a reply that has every word but
not the meaning scores 0 and the guard's sentence is kept in ``QuizItem.meaning``. A wrong first answer gets
one stricter re-ask ("quote the remembered fact verbatim"), recorded as ``attempts == 2``. A
fact answered correctly gains strength (one recall, :meth:`Store.record_use`; S-RET-2): the
quiz writes nothing else.

The forgotten probe (S-WAK-4) passes only if all three hold, each reported on its own:
``absent_from_store`` (no active fact has similarity >= 0.9 with the forgotten text, checked
in code), ``said_absent`` (the reply matches an explicit not-in-memory pattern) and not
``leaked``. Leaking is measured on the fact's content tokens that are *not* in the question
(nor subject tokens): repeating the question's own words ("I don't know where the user's old
gym was") reveals nothing, while reproducing half or more of the rest does.

The correction probe (S-REC-3) asks about a superseded fact (the most recently superseded
one whose successor chain ends in an active fact; a seeded choice among ties) with a question
written from the *old* fact, and passes only if all three hold, each reported on its own:
``successor_active`` (the chain ends in an active fact), ``carries_current`` (the reply holds at
least half of the words the successor has and the old fact has not, at least one) and not
``presents_old`` (the reply is not, by the code's own conflict rules, a conflict with the
successor, and it does not name the old value without a word that places it in the past:
"used to", "previously", "before", "moved from", "no longer", "until"...). It is reported apart
from the recall figure, like the forgotten probe.

Errors: a model failure while generating or answering propagates (a quiz without a model says
nothing); a question reply that does not fit the contract counts as a refusal. Cancellation
raises :class:`~nocturne_desktop.core.cancel.Cancelled` between calls or
:class:`~nocturne_desktop.core.ports.ModelCancelled` from inside one.
"""

from __future__ import annotations

import random
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY, ChatAgent
from nocturne_desktop.core.judges import conflicts, meaning
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.mutations import Kind, Merge, from_row
from nocturne_desktop.core.ports import Message, ModelClient
from nocturne_desktop.core.stepwise import result_of
from nocturne_desktop.core.types import Fact

if TYPE_CHECKING:
    from nocturne_desktop.core.store import Store

def _spaced(words: str) -> frozenset[str]:
    return frozenset(words.split())


CORRECT_AT = 0.9
LEAK_AT = 0.5
ABSENT_BELOW = 0.9
PREFERRED_BLOCKS: tuple[str, ...] = ("persona", "human", "episodes")
SUBJECT_TOKENS: frozenset[str] = frozenset({"user", "assistant"})

GUARDRAIL = (
    "Use only what the fact says. Do not invent names, numbers or dates. Do not put the "
    "answer, or most of its words, into the question."
)

VERBATIM_INSTRUCTION = (
    "Answer by quoting the remembered fact verbatim, word for word as it appears in your "
    f'memory. If it is not in your memory, say: "{NOT_IN_MEMORY}"'
)

ABSENT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:do not|don'?t|dont)\s+have\s+(?:that|this|it|anything|any\w*)?\s*(?:\w+\s+){0,3}"
        r"in\s+(?:my\s+)?memory",
        r"\bnot\s+in\s+(?:my\s+)?memory",
        r"\bnothing\s+(?:about\s+\w+(?:\s+\w+)?\s+)?in\s+(?:my\s+)?memory",
        r"\b(?:do not|don'?t|dont)\s+(?:know|remember|recall)\b",
        r"\b(?:cannot|can'?t|unable to)\s+(?:recall|remember|find)\b",
        r"\bno\s+(?:record|memory|information)\b",
        r"\bhave\s+no\s+(?:record|memory|information|idea)\b",
    )
)


class QuizQuestion(BaseModel):
    question: str = Field(max_length=400)


@dataclass
class RefusedQuestion:
    fact_id: str
    question: str
    reason: str


@dataclass
class QuizItem:
    fact_id: str
    fact_text: str
    question: str
    answer: str
    score: float
    correct: bool
    attempts: int
    leak_refusals: list[str] = field(default_factory=list)
    template_fallback: bool = False
    first_answer: str | None = None
    """The first reply when a re-ask happened (``answer`` is then the second)."""
    first_score: float | None = None
    meaning: str | None = None
    """Why the (last) answer does not carry the fact's meaning, when a guard fired."""


@dataclass
class ForgottenProbe:
    """Wake's probe of a forgotten fact (not to be confused with the endpoint probe of
    ``llm.detect.ProbeResult``): asked about it, the agent must say it is not in memory."""

    fact_id: str
    text: str
    question: str
    answer: str
    absent_from_store: bool
    said_absent: bool
    leaked: bool
    passed: bool
    source: str
    """Where the fact came from: the last sleep's Forget pass, or which fallback."""
    closest: tuple[str, float] | None = None
    """The active fact most similar to the forgotten text, and the similarity."""
    leak_score: float = 0.0
    leak_refusals: list[str] = field(default_factory=list)
    template_fallback: bool = False


@dataclass
class CorrectionProbe:
    """Wake's probe of a superseded fact (S-REC-3): asked about it, the agent must answer with
    the current value."""

    fact_id: str
    text: str
    successor_id: str
    successor_text: str
    question: str
    answer: str
    successor_active: bool
    carries_current: bool
    presents_old: bool
    passed: bool
    current_words: tuple[str, ...] = ()
    """The words the successor has and the old fact has not (what the reply must carry)."""
    leak_refusals: list[str] = field(default_factory=list)
    template_fallback: bool = False

    @property
    def verdict(self) -> str:
        """The probe's outcome in one line a view can show as plain text (S-REC-3)."""
        if self.passed:
            return (f"passed: asked about {self.fact_id} (superseded by {self.successor_id}), "
                    "the answer carries the current value and does not present the old one")
        why = []
        if not self.successor_active:
            why.append(f"{self.successor_id} is no longer current")
        if not self.carries_current:
            words = ", ".join(self.current_words) or "the new value"
            why.append(f"the answer does not carry the current value ({words})")
        if self.presents_old:
            why.append("the answer presents the old value as current")
        return f"failed: asked about {self.fact_id}: " + "; ".join(why)


@dataclass
class QuizReport:
    questions: list[QuizItem]
    probe: ForgottenProbe | None
    recall: float
    refused_questions: list[RefusedQuestion]
    pool_size: int = 0
    notes: list[str] = field(default_factory=list)
    correction: CorrectionProbe | None = None
    """The correction probe, when memory holds a superseded fact (reported apart)."""

    @property
    def correct(self) -> int:
        return sum(1 for q in self.questions if q.correct)

    @property
    def fallbacks(self) -> int:
        """Questions asked from the template because the model's were refused."""
        probes = [p for p in (self.probe, self.correction) if p is not None]
        return (sum(1 for q in self.questions if q.template_fallback)
                + sum(1 for p in probes if p.template_fallback))


# -- pure measures --------------------------------------------------------------------------


def answer_tokens(fact_text: str) -> frozenset[str]:
    """The fact's content tokens, subject tokens excluded (what an answer must carry)."""
    return tm.content_tokens(fact_text) - SUBJECT_TOKENS


def value_tokens(fact_text: str) -> frozenset[str]:
    """The answer tokens a question may not give away: the first one (the predicate's head,
    "live" in "lives in Lisbon", "daughter" in "the user's daughter is 7") names what is asked,
    not the answer, when the fact has more than one."""
    answer = answer_tokens(fact_text)
    order = [t for t in tm._content_in_order(fact_text) if t in answer]
    topic = set(order[:1])
    m = _POSSESSED.match(fact_text.strip())
    if m:  # "the user's favourite colour is blue": the topic is "favourite colour"
        topic |= tm.content_tokens(m.group(1))
    value = answer - topic - _QUIZ_WORDS
    return value or (answer - _QUIZ_WORDS) or answer


_ASKING = _spaced(
    "what where when who whom whose which how why do does did is are was were can could has "
    "have had will would should name tell")
_QUIZ_WORDS = _spaced(
    "remember recall know tell detail details thing things anything something information "
    "memory kind type sort name named call called many much old long often kept keep favourite "
    "favorite city town country place company job work part year years time day")
"""Words a fair question may use beyond the fact's own ("Which city does the user live in?")."""
_KINDS = _spaced(
    "city town country place company job name age colour color food drink pet sport team film "
    "movie book music band hobby language car home school")
"""The kind of thing asked for: a question naming one has a topic ("Which city is home?")."""
_NUMBER = re.compile(r"\d+")
_POSSESSED = re.compile(r"^(?:the )?(?:user|assistant)['’]s ((?:\w+ ){0,2}?\w+) "
                        r"(?:is|are|was|were|has|have)\b", re.IGNORECASE)
_SUBJECT_WORDS = frozenset({"user", "users", "assistant", "you", "your", "yourself"})


def _near(word: str, pool: frozenset[str]) -> bool:
    """``word`` is in ``pool`` up to its ending ("study"/"studies", "live"/"lives")."""
    return word in pool or any(w[:4] == word[:4] and min(len(w), len(word)) >= 4 for w in pool)


def check_question(question: str, fact_text: str) -> str | None:
    """Why ``question`` may not be asked for ``fact_text``, or None (S-WAK-3, S-WORDS-2).

    A quiz question is a model proposal like any other: it must be a question (a question mark
    or a question word first), name the fact's subject ("the user", "you"), its topic (a word
    of the fact) or the kind of thing asked for ("Which city is home?"), be answerable from the
    fact (no name or number the fact does not have: a
    paraphrase's other words are fine), and not give the answer away (half or more of its value
    words, :func:`value_tokens`, or a number the fact states)."""
    q = question.strip()
    if not q:
        return "question is empty"
    words = tm.normalize(q).split()
    if not q.rstrip().endswith("?") and (not words or words[0] not in _ASKING):
        return f"not a question (no question mark, no question word): {q[:80]!r}"
    fact_words = tm.content_tokens(meaning.canonical(fact_text))
    asked = tm.content_tokens(meaning.canonical(q, "assistant"))
    named = (set(words) & _SUBJECT_WORDS or any(_near(w, fact_words) for w in asked)
             or asked & _KINDS)
    if fact_words and not named:
        return f"names neither the fact's subject nor its topic: {q[:80]!r}"
    foreign = tm.new_names(q, [fact_text]) + sorted(
        set(_NUMBER.findall(q)) - set(_NUMBER.findall(fact_text)))
    if foreign:
        return (f"not answerable from the fact: it asks about {', '.join(foreign[:4])}, which the "
                f"fact does not say: {q[:80]!r}")
    answer = value_tokens(fact_text)
    if not answer:
        return None
    shared = answer & tm.content_tokens(q)
    if 2 * len(shared) >= len(answer):
        return (
            f"question leaks {len(shared)} of its answer's {len(answer)} content words "
            f"({', '.join(sorted(shared))}): {q!r}"
        )
    given = set(_NUMBER.findall(fact_text)) & set(_NUMBER.findall(q))
    if given:
        return f"question gives the answer away: it states the number {sorted(given)[0]}: {q!r}"
    return None


def _subject(fact: Fact) -> str:
    if fact.block == "persona" or "assistant" in tm.content_tokens(fact.text):
        return "yourself"
    return "the user"


def answer_score(fact_text: str, reply: str, context: Iterable[str] = (),
                 question: str = "") -> tuple[float, str | None]:
    """(score, meaning problem): the coverage of the fact's key content by the reply, or 0.0
    with the guard's sentence when the reply has the words but not the meaning (a negation, a
    changed number, swapped roles). The key content is what the ``question`` did not say: "How
    old is the user's daughter?" answered "She's 7 years old" carries all of "the user's
    daughter is 7" that was asked. ``context`` (the store's facts) only teaches the user's own
    names ("The user is Maya")."""
    score, missing = meaning.canonical_coverage(fact_text, [reply], ["assistant"])
    if question:
        asked = tm.content_tokens(meaning.canonical(question, "assistant"))
        key = tm.content_tokens(meaning.canonical(fact_text)) - asked
        if key:
            score = 1.0 - len(set(missing) & key) / len(key)
    why = meaning.check_claim(fact_text, [("the answer", reply)], what="fact",
                              speakers=["assistant"], context=list(context))
    return (0.0, why) if why else (score, None)


_WHERE = {"live": "live", "lives": "live", "work": "work", "works": "work",
          "study": "study", "studies": "study"}
_ASK_WHAT = _spaced(
    "likes loves enjoys prefers hates dislikes drives eats drinks plays speaks reads owns keeps "
    "writes watches collects has wants needs uses teaches")
_TEMPLATE = re.compile(
    r"^(?:the )?(?P<who>user|assistant)(?P<poss>'s|’s)?\s+(?P<rest>.+)$", re.IGNORECASE)


def _base(verb: str) -> str:
    low = verb.lower()
    if low == "has":
        return "have"
    if low.endswith("ies"):
        return low[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes")):
        return low[:-2]
    return low[:-1] if low.endswith("s") else low


def template_question(fact: Fact) -> str:
    """A question built in code from the fact's own subject and verb, never its value: "Where
    does the user live?", "What does the user drive?", "What do you remember about the user's
    daughter?", "How old is the user?"; else "What do you remember about the user?". It passes
    :func:`check_question` or the plainest form is asked."""
    subject = _subject(fact)
    plain = f"What do you remember about {subject}?"
    m = _TEMPLATE.match(fact.text.strip().rstrip(".!"))
    if m is None or subject == "yourself":
        return plain
    rest = m.group("rest").split()
    who = "the user"
    question = plain
    if m.group("poss"):
        noun = []
        for w in rest:
            if w.lower() in ("is", "are", "was", "were", "has", "have") or w[:1].isupper():
                break
            noun.append(w.lower())
        if noun and len(noun) <= 3:
            question = f"What do you remember about the user's {' '.join(noun)}?"
    else:
        verb = rest[0].lower() if rest else ""
        nxt = rest[1].lower() if len(rest) > 1 else ""
        if verb in _WHERE and nxt in ("in", "at", "for", "near"):
            question = f"Where does {who} {_WHERE[verb]}?"
        elif verb in ("works", "work") and nxt == "as":
            question = f"What does {who} work as?"
        elif (verb in ("is", "am") and re.fullmatch(r"\d+", nxt)) or "years old" in fact.text:
            question = f"How old is {who}?"
        elif verb in ("is", "was") and nxt == "from":
            question = f"Where is {who} from?"
        elif verb in ("is", "was") and nxt in ("allergic", "afraid", "married", "engaged"):
            prep = {"allergic": "to", "afraid": "of", "married": "to", "engaged": "to"}[nxt]
            question = f"What do you remember about who or what {who} is {nxt} {prep}?"
        elif verb in _ASK_WHAT:
            question = f"What does {who} {_base(verb)}?"
    return question if check_question(question, fact.text) is None else plain


def said_absent(reply: str) -> bool:
    text = reply.replace("’", "'")
    return any(p.search(text) for p in ABSENT_PATTERNS)


def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(tm.tokens(text))


def leak_score(fact_text: str, question: str, reply: str) -> float:
    """Share of the fact's content tokens, beyond the question's own and the subject
    tokens, that the reply reproduces."""
    at_stake = tm.content_tokens(fact_text) - tm.content_tokens(question) - SUBJECT_TOKENS
    if not at_stake:
        return 0.0
    return len(at_stake & _vocabulary(reply)) / len(at_stake)


def closest_active(store_facts: Iterable[Fact], text: str) -> tuple[str, float] | None:
    """The active fact most similar to ``text``. A fact a meaning guard separates from it
    ("does not eat meat" for "eats meat", another number) does not hold it and is skipped."""
    best: tuple[str, float] | None = None
    for f in store_facts:
        s = meaning.canonical_similarity(text, f.text)
        if s >= ABSENT_BELOW and meaning.duplicate_conflict(("forgotten", text), (f.id, f.text)):
            continue
        if best is None or s > best[1]:
            best = (f.id, s)
    return best


# -- pool and probe choice ------------------------------------------------------------------


def merge_targets(store: Store) -> set[str]:
    return {
        r.mutation.item_id
        for r in store.mutations(accepted=True)
        if r.mutation.kind == Kind.MERGE
    }


def question_pool(store: Store, seed: int) -> list[Fact]:
    """Eligible facts in quiz order (see module doc)."""
    excluded = merge_targets(store)
    rng = random.Random(seed)
    facts = sorted(
        (f for f in store.active_facts() if f.id not in excluded and tm.content_tokens(f.text)),
        key=lambda f: f.id,
    )
    rng.shuffle(facts)

    def rank(f: Fact) -> tuple[int, int]:
        return (0 if f.block in PREFERRED_BLOCKS else 1, 0 if len(answer_tokens(f.text)) >= 2 else 1)

    return sorted(facts, key=rank)  # stable: the shuffle decides within a group


def forgotten_fact(store: Store, seed: int) -> tuple[Fact | None, str]:
    """The fact to probe and a sentence saying where it came from."""
    rng = random.Random(seed)

    def still_forgotten(ids: Iterable[str]) -> list[Fact]:
        out: dict[str, Fact] = {}
        for i in ids:
            f = store.get(i)
            if f is not None and not f.active:
                out[f.id] = f
        return [out[k] for k in sorted(out)]

    real = sorted((s for s in store.sleeps() if not s.dry_run), key=lambda s: s.id)
    if real:
        last = real[-1]
        rows = store.mutations(sleep_id=last.id, pass_name="forget", accepted=True)
        cands = still_forgotten(r.mutation.item_id for r in rows if r.mutation.kind == Kind.FORGET)
        if cands:
            return rng.choice(cands), f"removed by the Forget pass of sleep {last.id}"
    rows = store.mutations(pass_name="forget", accepted=True)
    cands = still_forgotten(r.mutation.item_id for r in rows if r.mutation.kind == Kind.FORGET)
    if cands:
        return rng.choice(cands), (
            "fallback: the most recent sleep forgot nothing that is still forgotten; "
            "using a fact an earlier Forget pass removed"
        )
    absorbed = {f.id for f in store.superseded_facts(limit=1_000_000)}  # history, not forgotten
    for r in store.mutations(accepted=True):
        m = r.mutation
        if m.kind == Kind.DROP:
            absorbed.add(m.item_id)
        elif m.kind == Kind.MERGE:
            change = from_row(m)
            assert isinstance(change, Merge)
            absorbed.update(change.from_ids)
    inactive = [f for f in store.all_facts() if not f.active]
    # a fact dropped as a duplicate or merged away is not forgotten: its content survives
    own = [f for f in inactive if f.id not in absorbed]
    if own:
        latest = max(own, key=lambda f: (f.updated_at, f.id))
        return latest, (
            "fallback: no Forget-pass removal on record; using the most recently forgotten fact"
        )
    return None, "no forgotten fact to probe"


HISTORY_WORDS: frozenset[str] = frozenset({
    "used", "previously", "before", "formerly", "earlier", "past", "was", "were", "lived",
    "worked", "moved", "longer", "until", "old", "once", "had",
})
"""Words that place a value in the past: naming the old value with one is history, not a claim."""


def successor_of(store: Store, fact: Fact) -> Fact | None:
    """The end of ``fact``'s successor chain (None if it has none or the chain is broken)."""
    seen = {fact.id}
    cur = fact
    while cur.superseded_by is not None:
        nxt = store.get(cur.superseded_by)
        if nxt is None or nxt.id in seen:
            return None
        seen.add(nxt.id)
        cur = nxt
    return cur if cur.id != fact.id else None


def superseded_fact(store: Store, seed: int) -> tuple[Fact, Fact] | None:
    """The superseded fact the correction probe asks about, with its successor chain's end."""
    cands = [(f, s) for f in store.superseded_facts(limit=50)
             if (s := successor_of(store, f)) is not None and s.active]
    if not cands:
        return None
    latest = max(f.valid_until or 0.0 for f, _ in cands)
    ties = sorted((c for c in cands if (c[0].valid_until or 0.0) == latest), key=lambda c: c[0].id)
    return random.Random(seed).choice(ties)


def correction_measures(old: Fact, new: Fact, reply: str) -> tuple[bool, bool, tuple[str, ...]]:
    """(carries_current, presents_old, current_words) for a reply about superseded ``old``."""
    old_t, new_t = tm.content_tokens(old.text), tm.content_tokens(new.text)
    said = set(tm.tokens(reply))
    current = tuple(sorted(new_t - old_t - SUBJECT_TOKENS))
    carries = bool(current) and 2 * sum(w in said for w in current) >= len(current)
    as_fact = Fact("m_0", new.block, reply or "-", new.category, None, new.created_at + 1,
                   new.created_at + 1)
    conflict = conflicts.pair_conflict(new, as_fact)
    stale_words = old_t - new_t - SUBJECT_TOKENS
    names_old = bool(stale_words) and any(w in said for w in stale_words)
    presents_old = conflict is not None or (names_old and not (said & HISTORY_WORDS))
    return carries, presents_old, current


# -- model steps ----------------------------------------------------------------------------


def question_messages(fact: Fact, refused: list[str]) -> list[Message]:
    who = "the assistant itself" if _subject(fact) == "yourself" else "the user"
    system = (
        "You write one quiz question that tests whether an assistant remembers a fact about "
        f"{who}. The question must make the fact the answer without stating it: ask for the "
        "missing detail (what, where, when, which, who), in one short sentence. "
        f"{GUARDRAIL}\n"
        'Reply with JSON only: {"question": "..."}'
    )
    user = f"Fact: {fact.text}"
    if refused:
        user += (
            "\n\nYour previous question gave the answer away: "
            f"{refused[-1]}\nWrite a less revealing question that uses none of those words."
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def fallback_note(k: int | str, q: _Question) -> str:
    """The report's line for a template question (question ``k``, or a probe named by ``k``):
    why the model's question was refused."""
    why = q.refusals[-1] if q.refusals else "no usable question"
    what = f"question {k}" if isinstance(k, int) else k
    return (f"{what}: the model's question was refused: {why}; a template question was "
            f"asked: {q.text!r}")


@dataclass
class _Question:
    text: str
    refused: list[tuple[str, str]]
    """(question, reason) for every refused attempt."""
    template: bool

    @property
    def refusals(self) -> list[str]:
        return [reason for _, reason in self.refused]


def make_question(
    model: ModelClient, fact: Fact, cancel: CancelToken | None, *, tries: int = 2
) -> _Question:
    refused: list[tuple[str, str]] = []
    for _ in range(tries):
        if cancel is not None:
            cancel.raise_if_cancelled()
        res = model.structured(
            question_messages(fact, [r for _, r in refused]),
            QuizQuestion,
            temperature=0.0,
            max_tokens=160,
            cancel=cancel,
        )
        if res.value is None:
            refused.append((res.raw, f"unusable question reply: {res.error or 'no value'}"))
            continue
        reason = check_question(res.value.question, fact.text)
        if reason is None:
            return _Question(res.value.question.strip(), refused, template=False)
        refused.append((res.value.question, reason))
    return _Question(template_question(fact), refused, template=True)


ANSWER_MAX_TOKENS = 200
"""An answer is one remembered fact; a longer reply is cut rather than waited for."""


def _ask(
    agent: ChatAgent, question: str, cancel: CancelToken | None, *, verbatim: bool = False
) -> str:
    if cancel is not None:
        cancel.raise_if_cancelled()
    return agent.reply(
        question,
        cancel,
        record=False,
        history_turns=0,
        extra_instruction=VERBATIM_INSTRUCTION if verbatim else None,
        max_tokens=ANSWER_MAX_TOKENS,
    )


@dataclass(frozen=True)
class QuizProgress:
    """Where a running quiz is: step ``step`` of ``total`` (each question, the probes), and
    what it is doing now in words ("question 2 of 5: asking", "re-asking verbatim")."""

    step: int
    total: int
    doing: str


def run_quiz(
    store: Store,
    model: ModelClient,
    *,
    n_questions: int = 5,
    seed: int = 0,
    cancel: CancelToken | None = None,
    budget_chars: int = 6000,
) -> QuizReport:
    """The whole quiz at once (:func:`iter_quiz` without its progress)."""
    return result_of(iter_quiz(store, model, n_questions=n_questions, seed=seed, cancel=cancel,
                               budget_chars=budget_chars))


def iter_quiz(
    store: Store,
    model: ModelClient,
    *,
    n_questions: int = 5,
    seed: int = 0,
    cancel: CancelToken | None = None,
    budget_chars: int = 6000,
) -> Generator[QuizProgress, None, QuizReport]:
    """The quiz as a generator: a :class:`QuizProgress` before each model step (a question
    made and asked, a verbatim re-ask, each probe), then the report as its return value."""
    agent = ChatAgent(store, model, budget_chars=budget_chars)
    pool = question_pool(store, seed)
    notes: list[str] = []
    if len(pool) < n_questions:
        notes.append(f"only {len(pool)} eligible fact(s) for {n_questions} question(s)")
    refused: list[RefusedQuestion] = []
    items: list[QuizItem] = []
    context = [f.text for f in store.active_facts()]
    asked = pool[:n_questions]
    target, source = forgotten_fact(store, seed)
    pair = superseded_fact(store, seed)
    total = len(asked) + (target is not None) + (pair is not None)
    for k, fact in enumerate(asked, start=1):
        yield QuizProgress(k, total, f"question {k} of {len(asked)}: asking about {fact.id}")
        q = make_question(model, fact, cancel)
        refused += [RefusedQuestion(fact.id, qt, r) for qt, r in q.refused]
        if q.template:
            notes.append(fallback_note(k, q))
        answer = _ask(agent, q.text, cancel)
        score, why = answer_score(fact.text, answer, context, q.text)
        item = QuizItem(
            fact.id, fact.text, q.text, answer, score, score >= CORRECT_AT, 1,
            leak_refusals=q.refusals, template_fallback=q.template, meaning=why,
        )
        if not item.correct:
            yield QuizProgress(k, total, f"question {k} of {len(asked)}: re-asking it verbatim")
            again = _ask(agent, q.text, cancel, verbatim=True)
            again_score, again_why = answer_score(fact.text, again, context, q.text)
            item.first_answer, item.first_score = answer, score
            item.answer, item.score, item.meaning = again, again_score, again_why
            item.correct, item.attempts = again_score >= CORRECT_AT, 2
        if item.correct:  # answered from memory: the fact gains strength (S-RET-2)
            store.record_use([fact.id])
        items.append(item)

    probe: ForgottenProbe | None = None
    step = len(asked)
    if target is None:
        notes.append(source)
    else:
        if source.startswith("fallback"):
            notes.append(source)
        step += 1
        yield QuizProgress(step, total, f"the forgotten probe: asking about {target.id}")
        q = make_question(model, target, cancel)
        refused += [RefusedQuestion(target.id, qt, r) for qt, r in q.refused]
        if q.template:
            notes.append(fallback_note("the forgotten probe", q))
        answer = _ask(agent, q.text, cancel)
        closest = closest_active(store.active_facts(), target.text)
        absent = closest is None or closest[1] < ABSENT_BELOW
        said = said_absent(answer)
        lscore = leak_score(target.text, q.text, answer)
        leaked = lscore >= LEAK_AT
        probe = ForgottenProbe(
            target.id, target.text, q.text, answer, absent, said, leaked,
            absent and said and not leaked, source, closest, lscore, q.refusals, q.template,
        )

    correction: CorrectionProbe | None = None
    if pair is not None:
        old, new = pair
        step += 1
        yield QuizProgress(step, total, f"the correction probe: asking about {old.id}")
        q = make_question(model, old, cancel)
        refused += [RefusedQuestion(old.id, qt, r) for qt, r in q.refused]
        if q.template:
            notes.append(fallback_note("the correction probe", q))
        answer = _ask(agent, q.text, cancel)
        carries, presents_old, current = correction_measures(old, new, answer)
        correction = CorrectionProbe(
            old.id, old.text, new.id, new.text, q.text, answer, new.active, carries,
            presents_old, new.active and carries and not presents_old, current, q.refusals,
            q.template,
        )

    recall = (sum(1 for i in items if i.correct) / len(items)) if items else 0.0
    return QuizReport(items, probe, recall, refused, len(pool), notes, correction)
