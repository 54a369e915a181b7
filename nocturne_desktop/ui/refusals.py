"""The window's sentence for a fact's text refused at the admission check (S-DOOR-1).

Every door of the window that writes a fact's text (*Add a fact*, *Edit text*, "remember that
…" in chat, *Import into scratch*) shows a refusal the same way: one sentence that says nothing
was written, which rule refused it and why, e.g. "Nothing was written: the secrets rule refused
the new fact (it looks like a password (password); sensitive data is never kept in memory)."
The reason is the core's (:mod:`nocturne_desktop.core.judges.admission`); it never repeats the
refused text, so a secret is not shown back either. No Qt.
"""

from __future__ import annotations

from nocturne_desktop.core.errors import FactRefused

RULES = {
    "sensitive": "the secrets rule",
    "limits": "the length limits",
    "unicode": "the plain-text rule",
    "statement": "the statement guard",
}
"""The admission check's rules (``FactRefused.rule``) in words."""

_LABELS = ("sensitive: ", "statement guard: ")
"""Labels the core's reasons start with (the sentence names the rule itself)."""


def rule_name(rule: str) -> str:
    return RULES.get(rule, f"the {rule} rule" if rule else "the admission check")


def without_label(text: str) -> str:
    """``text`` with the first rule label inside it taken out (the sentence names the rule)."""
    for label in _LABELS:
        if label in text:
            return text.replace(label, "", 1)
    return text


def reason_text(reason: str) -> str:
    """The core's reason without its label, as the end of a sentence."""
    text = reason.strip().rstrip(".")
    for label in _LABELS:
        text = text.removeprefix(label)
    return f"it {text}" if text.startswith("looks like") else text


def verdict(rule: str, reason: str, what: str = "it") -> str:
    """"<rule> refused <what> (<why>)"."""
    return f"{rule_name(rule)} refused {what} ({reason_text(reason)})"


def sentence(rule: str, reason: str, what: str) -> str:
    """"Nothing was written: <rule> refused <what> (<why>)." in one sentence."""
    return f"Nothing was written: {verdict(rule, reason, what)}."


def refused(exc: FactRefused, what: str) -> str:
    """:func:`sentence` for a :class:`FactRefused`."""
    return sentence(exc.rule, str(exc), what)
