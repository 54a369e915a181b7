""""Forget that …" and "remember that …" said in chat, as proposed hand edits.

:func:`propose` reads one chat message. When it is a request to remember or to forget, it
returns a :class:`HandProposal` - what would be added, or which facts would be forgotten, best
match first - and writes nothing. The window shows it and the person confirms; only then does
:func:`confirm` make it a hand edit decided by ``you`` (``Store.add_fact`` /
``Store.forget_now``: audited, versioned, undoable). A model never decides these.

"Remember that …" of what memory already holds (by the dedupe gate's rule, meaning guards
included: :mod:`nocturne_desktop.core.judges.duplicates`; a negation is not a duplicate) is not
written: the proposal says "already remembered", and :func:`confirm` checks memory again when
the person confirms (the encoder may have stored the same words from that very message
meanwhile) and raises :class:`AlreadyRemembered` instead of writing a second copy.

The patterns are deliberately narrow: a message that *starts* with the request ("remember that
…", "please forget …", "don't forget that …" means remember). "Do you remember when …" is a
question, not a request, and is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Protocol

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.judges.duplicates import DEFAULT_THRESHOLD, already_held
from nocturne_desktop.core.types import Fact, Version

__all__ = ["FORGET_MATCH", "AlreadyRemembered", "HandProposal", "confirm", "propose"]

FORGET_MATCH = 0.6
"""Share of the words said that a fact must hold to be offered for forgetting."""

_POLITE = r"(?:(?:hey|ok|okay|so|and|also|nocturne)[,!]?\s+)*(?:(?:please|pls|kindly)\s+)?" \
          r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
_REMEMBER = re.compile(
    _POLITE + r"(?:remember|note|keep\s+in\s+mind|do\s*n[o']?t\s+forget|never\s+forget)"
    r"(?:\s+that\b|\s*:|\s+)\s*(?P<what>.+)", re.IGNORECASE | re.DOTALL)
_FORGET = re.compile(
    _POLITE + r"forget(?:\s+that\b|\s+about\b|\s*:|\s+)\s*(?P<what>.+)", re.IGNORECASE | re.DOTALL)
_TRAILING = re.compile(r"[\s,;:!?.]*(?:please|thanks|thank\s+you)?[\s!?.]*$", re.IGNORECASE)

_CATEGORY_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("identity", re.compile(r"\b(?:i\s*am|i'm|im|my\s+name|i\s+live|i\s+was\s+born|my\s+(?:wife|"
                            r"husband|partner|sister|brother|mother|father|son|daughter))\b", re.I)),
    ("preferences", re.compile(r"\b(?:i\s+(?:like|love|prefer|hate|enjoy|dislike|can't\s+stand)|"
                               r"my\s+favou?rite|allergic)\b", re.I)),
    ("commitments", re.compile(r"\b(?:i\s+(?:will|promised|have\s+to|must|need\s+to)|i'll|"
                               r"deadline|due\s+on)\b", re.I)),
    ("event", re.compile(r"\b(?:yesterday|last\s+(?:week|month|year|spring|summer|autumn|winter)|"
                         r"went\s+to|i\s+visited)\b", re.I)),
)
_BLOCK_OF = {"identity": "human", "preferences": "human", "commitments": "human",
             "event": "episodes", "context": "scratch"}


class _Store(Protocol):
    def active_facts(self) -> list[Fact]: ...
    def get(self, item_id: str) -> Fact | None: ...
    def add_fact(self, block: str, text: str, category: str = "context", *,
                 door: Door = Door.HAND_ADD) -> tuple[Fact, Version]: ...
    def forget_now(self, item_id: str) -> Version: ...


@dataclass(frozen=True)
class HandProposal:
    """What a chat message asks of memory; nothing is written until :func:`confirm`."""

    kind: Literal["add", "forget"]
    said: str
    """The words after "remember that" / "forget that", as written."""
    text: str = ""
    """For ``add``: the fact that would be written (the person's words, as a sentence)."""
    block: str = "scratch"
    category: str = "context"
    duplicate_of: Fact | None = None
    """For ``add``: an active fact that already says it (by the dedupe gate's rule); confirming
    then writes nothing (:class:`AlreadyRemembered`)."""
    candidates: tuple[Fact, ...] = field(default=())
    """For ``forget``: the active facts that hold what was said, best match first."""
    checked_up_to: int | None = None
    """For ``add``: the highest fact number memory held when the proposal checked it for a
    duplicate; :func:`confirm` then reads only the facts written since (a few, not the whole
    store: it runs on the window's thread). None: it checks every active fact."""

    @property
    def summary(self) -> str:
        """One line for the confirmation the window shows."""
        if self.kind == "add":
            if self.duplicate_of is not None:
                return f"Already remembered as {self.duplicate_of.id}: {self.duplicate_of.text}"
            return f"Remember in {self.block} ({self.category}): {self.text}"
        if not self.candidates:
            return f"Nothing in memory matches “{self.said}”"
        best = self.candidates[0]
        pinned = " (pinned: unpin it first)" if best.pinned else ""
        return f"Forget {best.id}: {best.text}{pinned}"


class AlreadyRemembered(InvalidInput):
    """A "remember that …" of what an active fact already says; nothing was written."""

    def __init__(self, fact: Fact) -> None:
        self.fact = fact
        super().__init__(f"already remembered: {fact.text} ({fact.id})")


def _sentence(words: str) -> str:
    text = " ".join(words.split())
    text = _TRAILING.sub("", text)
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")


def _category(text: str) -> str:
    return next((name for name, cue in _CATEGORY_CUES if cue.search(text)), "context")


def _held(said: str, fact: Fact) -> float:
    """The share of the content words said that ``fact`` holds (inflections folded)."""
    return tm.coverage(said, fact.text)[0] if tm.content_tokens(said) else 0.0


def propose(store: _Store, message: str, *, threshold: float = DEFAULT_THRESHOLD
            ) -> HandProposal | None:
    """The hand edit ``message`` asks for, or None when it asks for none. Writes nothing.
    ``threshold`` is the policy's duplicate similarity."""
    if not isinstance(message, str):
        return None
    line = message.strip()
    if not line or len(line) > 2000:
        return None
    m = _FORGET.fullmatch(line)
    if m is not None and not re.match(r"(?:do\s*n[o']?t|never)\b", line, re.I):
        said = _sentence(m.group("what")).rstrip(".!?")
        if not tm.content_tokens(said):
            return None  # "forget it", "forget that": nothing to find
        scored = [(s, f) for f in store.active_facts() if (s := _held(said, f)) >= FORGET_MATCH]
        scored.sort(key=lambda sf: (-sf[0], sf[1].pinned, -tm.similarity(said, sf[1].text)))
        return HandProposal("forget", said, candidates=tuple(f for _, f in scored[:5]))
    m = _REMEMBER.fullmatch(line)
    if m is None or re.match(r"(?:do|did)\s+you\s+remember", line, re.I):
        return None
    text = _sentence(m.group("what"))
    if not tm.content_tokens(text):
        return None
    category = _category(text)
    active = store.active_facts()
    same = already_held(text, active, category=category, threshold=threshold)
    return HandProposal("add", m.group("what").strip(), text=text, block=_BLOCK_OF[category],
                        category=category, duplicate_of=same,
                        checked_up_to=max((int(f.id[2:]) for f in active), default=0))


_NEWER_SCAN = 10_000
"""At most this many fact numbers past ``checked_up_to`` are read at a confirmation."""


def _since(store: _Store, proposal: HandProposal) -> list[Fact]:
    """The active facts a confirmation must check: all, or those written after the proposal."""
    if proposal.checked_up_to is None:
        return store.active_facts()
    out = []
    for n in range(proposal.checked_up_to + 1, proposal.checked_up_to + 1 + _NEWER_SCAN):
        fact = store.get(f"m_{n}")
        if fact is None:  # numbers are handed out in order: none after this one yet
            break
        if fact.active:
            out.append(fact)
    return out


def confirm(store: _Store, proposal: HandProposal, item_id: str | None = None, *,
            threshold: float = DEFAULT_THRESHOLD) -> Version:
    """Make a confirmed proposal a hand edit: add the fact, or forget ``item_id`` (default: the
    best candidate). Returns the new version; the store's rules apply (a pinned fact is refused;
    the text passes the admission check of the chat's door: a secret or a fragment raises
    :class:`~nocturne_desktop.core.errors.FactRefused`).
    An add that memory already holds now (checked again: memory may have changed since the
    proposal) raises :class:`AlreadyRemembered` and writes nothing. A duplicate the proposal
    already found is refused at once; otherwise only the facts written since it are read."""
    if proposal.kind == "add":
        if proposal.duplicate_of is not None:
            raise AlreadyRemembered(proposal.duplicate_of)
        same = already_held(proposal.text, _since(store, proposal), category=proposal.category,
                            threshold=threshold)
        if same is not None:
            raise AlreadyRemembered(same)
        return store.add_fact(proposal.block, proposal.text, proposal.category, door=Door.CHAT)[1]
    if item_id is None:
        if not proposal.candidates:
            raise InvalidInput(f"nothing in memory matches “{proposal.said}”")
        item_id = proposal.candidates[0].id
    elif item_id not in {f.id for f in proposal.candidates}:
        raise InvalidInput(f"{item_id} was not offered for forgetting")
    return store.forget_now(item_id)
