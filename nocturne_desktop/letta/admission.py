"""The admission rules a text read from a Letta block passes before it becomes a fact.

One function, :func:`admit_text`, so that this door asks exactly what the others ask and can be
pointed at the project's single admission check once there is one: the store's own input
checks (:func:`core.limits.text_problem`: empty, NUL, too long, not Unicode), the sensitive-data
rule (:func:`core.judges.sensitive.sensitive_reason`: passwords, keys, card numbers, codes) and
the statement guard (:func:`core.judges.meaning.statement_problem`: a heading, a greeting or a
bare noun phrase is not a fact). A line typed in Letta has no transcript to be traced to, so
the traceability rules of the encoder's gate do not apply: it is traced to the change in Letta.
"""

from __future__ import annotations

from nocturne_desktop.core.judges.meaning import statement_problem
from nocturne_desktop.core.judges.sensitive import REFUSAL_NOTE, sensitive_reason
from nocturne_desktop.core.limits import text_problem

SECRET_NOTE = "sensitive data is never kept in memory"


def admit_text(text: str) -> str | None:
    """Why ``text`` may not become a fact's text (one sentence), or None when it may."""
    problem = text_problem(text, what="the line")
    if problem is not None:
        return problem
    secret = sensitive_reason(text)
    if secret is not None:
        return secret.replace(REFUSAL_NOTE, SECRET_NOTE)
    return statement_problem(text)


def is_secret(reason: str | None) -> bool:
    """Whether a refusal of :func:`admit_text` is the sensitive-data rule's (its text is then
    never kept, not even in the refusal's row)."""
    return reason is not None and reason.startswith("sensitive:")
