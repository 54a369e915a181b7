"""The one change hub: every commit to memory reaches every view through here, as the rows it
changed (read by id on the writer's thread) with what made it and who asked for it.

The pattern is Anki's ``operation_did_execute(changes, initiator)``: a view subscribes once and,
for each commit, decides for itself what to update; a view that asked for a write recognises
its own commit by the initiator. Subscribers run on the GUI thread, in the order they
subscribed (the window subscribes the tree before the status bar, which reads its counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from nocturne_desktop.core.store.reads import ChangedRows

WINDOW = "window"
""":attr:`Commit.source` of a write on the window's own store (a change by hand, a chat edit,
a new conversation)."""


@dataclass(frozen=True)
class Commit:
    """One committed transaction as the views receive it."""

    rows: ChangedRows
    source: str
    """What wrote it: :data:`WINDOW`, or the kind of the job that did (``chat``, ``sleep``,
    ``dry-run``, ``quiz``, ``restore``, ``import``)."""
    initiator: object | None = None
    """Whoever asked the session for the write (a view passes itself), else None."""

    @property
    def facts(self) -> tuple[str, ...]:
        """Every fact id the commit wrote."""
        return self.rows.changes.facts


class ChangeHub(QObject):
    """Signal ``committed(Commit)``, once per commit, in commit order."""

    committed = Signal(object)

    def publish(self, rows: ChangedRows, *, source: str, initiator: object | None = None) -> None:
        """One commit's rows, to every subscriber now (call it on the GUI thread)."""
        self.committed.emit(Commit(rows, source, initiator))

    def publisher(self, source: str, initiator: object | None = None
                  ) -> Callable[[ChangedRows], None]:
        """What a job's ``on_changes`` calls with each of its commits' rows."""
        return lambda rows: self.publish(rows, source=source, initiator=initiator)

    def subscribe(self, handler: Callable[[Commit], None]) -> None:
        """``handler(commit)`` after every commit, after the handlers subscribed before it."""
        self.committed.connect(handler)
