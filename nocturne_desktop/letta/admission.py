"""The admission a line read from a Letta block passes before it becomes a fact: the project's
one admission check (:mod:`nocturne_desktop.core.judges.admission`) at its ``sync`` door —
limits, control characters, secrets, the statement guard — the same labelled refusal as every
other door. A line typed in Letta has no transcript to be traced to, so the encoder's
traceability rules do not apply: it is traced to the change in Letta.
"""

from __future__ import annotations

from nocturne_desktop.core.judges import admission
from nocturne_desktop.core.judges.admission import Door

SECRET_PREFIX = "sensitive:"
"""How a refusal by the secrets rule begins (its text is then never kept, not even in the
refusal's row)."""


def admit_text(text: str) -> str | None:
    """Why ``text`` may not become a fact's text (one sentence), or None when it may."""
    refused = admission.problem(text, Door.SYNC, what="the line")
    if refused is None:
        return None
    if refused.rule == "sensitive" and not refused.message.startswith(SECRET_PREFIX):
        return f"{SECRET_PREFIX} {refused.message}"
    return refused.message


def is_secret(reason: str | None) -> bool:
    """Whether a refusal of :func:`admit_text` is the secrets rule's."""
    return reason is not None and reason.startswith(SECRET_PREFIX)
