""""Remember that …" / "forget that …" said in chat (S-DOOR-1): what the message asks of memory
is read off the GUI thread, offered in the chat pane's edit bar, and written as a hand edit
decided by you once the person confirms (after the reply that streams, if one does). A text the
admission check of the chat's door refuses is said at once; nothing is written before Confirm."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from nocturne_desktop.core.chat import edits as chatedits
from nocturne_desktop.core.chat.edits import HandProposal
from nocturne_desktop.core.errors import FactRefused
from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door
from nocturne_desktop.core.types import Version
from nocturne_desktop.ui import refusals
from nocturne_desktop.ui.jobs import BodyContext, describe_error

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar

    from nocturne_desktop.ui.chat import ChatPane
    from nocturne_desktop.ui.session import Session

__all__ = ["ChatRequests"]


class ChatRequests(QObject):
    """The window's requests-in-chat flow, over its session and chat pane."""

    def __init__(self, session: Session, chat: ChatPane, status: QStatusBar,
                 guard: Callable[..., object]) -> None:
        super().__init__(chat)
        self.session = session
        self.chat = chat
        self.status = status
        self._guard = guard
        self.pending: HandProposal | None = None
        """A confirmed request waiting for the job that runs to end."""

    def propose(self, text: str) -> None:
        """Read what the message asks of memory off the GUI thread (against memory as it was
        when it was sent), with the admission check of the chat's door for what it would add;
        a request is offered in the chat pane, nothing is written."""
        threshold = self.session.settings.retention.similarity_threshold

        def read(ctx: BodyContext) -> tuple[HandProposal, admission.Refusal | None] | None:
            proposal = chatedits.propose(ctx.store, text, threshold=threshold)
            if proposal is None:
                return None
            new = proposal.kind == "add" and proposal.duplicate_of is None
            return proposal, admission.problem(proposal.text, Door.CHAT) if new else None

        self.session.read("chat-edit", read, self._offer,
                          lambda exc: self.status.showMessage(
                              f"Could not read memory for your request: {describe_error(exc)}",
                              8000))

    def _offer(self, got: tuple[HandProposal, admission.Refusal | None] | None) -> None:
        """Offer the request; a text the admission check refuses is said at once (the bar
        never offers to remember a secret)."""
        if got is None:
            return
        proposal, refusal = got
        self.pending = None
        if refusal is not None:
            self.chat.edit_bar.refused(refusals.sentence(refusal.rule, refusal.reason,
                                                         "what you asked to remember"))
            return
        self.chat.edit_bar.offer(proposal)

    def accept(self, proposal: HandProposal) -> None:
        """The person confirmed: a hand edit decided by you, now, or when the job ends."""
        if self.session.busy:
            self.pending = proposal
            self.chat.edit_bar.waiting()
            return
        self.pending = None

        def attempt() -> Version | chatedits.AlreadyRemembered | FactRefused:
            try:
                return self.session.confirm_chat_edit(proposal)
            except (chatedits.AlreadyRemembered, FactRefused) as held:  # nothing written
                return held

        v = self._guard(attempt)
        if isinstance(v, chatedits.AlreadyRemembered):
            self.chat.edit_bar.already(v.fact)
            return
        if isinstance(v, FactRefused):
            self.chat.edit_bar.refused(refusals.refused(v, "what you asked to remember"))
            return
        self.chat.edit_bar.close_offer()
        if isinstance(v, Version):
            done = "remembered" if proposal.kind == "add" else "forgot"
            what = proposal.text if proposal.kind == "add" else proposal.candidates[0].text
            self.chat.transcript.add_quiet(
                f"memory: {done} by you — {what} (version {v.id}; Ctrl+Z undoes it)")

    def accept_pending(self) -> None:
        """The job that ran ended: write a request confirmed while it ran."""
        if self.pending is not None:
            self.accept(self.pending)

    @Slot()
    def dismissed(self) -> None:
        self.pending = None
