"""The retention policy a memory carries with it: written by an import, read by whoever opens it.

The person's policy lives in their settings and governs every memory they keep. An imported
memory arrives with the policy it was exported under (an export says which policy its memory
ran under: see :mod:`.exchange`), and keeps it in its own meta under :data:`POLICY_KEY`; a
window on it runs under that policy instead of the settings' (and a change to the retention
in that window is kept there, not in the settings), and ``nocturne sleep`` uses it too. Each
sleep still records the policy it ran under, so the audit log says which rules a forgetting
was checked against either way.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from pydantic import ValidationError

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.policy import RetentionPolicy

__all__ = ["POLICY_KEY", "checked_policy", "keep_policy", "memory_policy", "policy_words"]

POLICY_KEY = "retentionPolicy"
"""The meta key of a memory's own retention policy (JSON, as :meth:`RetentionPolicy.model_dump`)."""


class _Meta(Protocol):
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


def checked_policy(value: Any, what: str = "the retention policy") -> RetentionPolicy:
    """``value`` (a mapping, as an export or the meta holds it) as a policy, or
    :class:`InvalidInput` saying in one sentence which rule it breaks."""
    if isinstance(value, RetentionPolicy):
        return value
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} is {type(value).__name__}, not a set of rules")
    try:
        return RetentionPolicy.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])[:80] or "policy"
        raise InvalidInput(f"{what} is not one Nocturne accepts: {where}: "
                           f"{str(first['msg'])[:160]}") from None


def memory_policy(store: _Meta) -> RetentionPolicy | None:
    """The policy ``store``'s memory carries (None: it runs under the person's settings). A
    value that is no longer a valid policy (a file edited by hand) is treated as none."""
    raw = store.get_meta(POLICY_KEY)
    if raw is None:
        return None
    try:
        return checked_policy(json.loads(raw))
    except (ValueError, InvalidInput, RecursionError):
        return None


def keep_policy(store: _Meta, policy: RetentionPolicy) -> None:
    """Make ``policy`` the one ``store``'s memory carries from now on."""
    store.set_meta(POLICY_KEY, policy_json(policy))


def policy_json(policy: RetentionPolicy) -> str:
    """The policy as the meta holds it (keys sorted: the same policy, the same text)."""
    return json.dumps(policy.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def number(value: float) -> str:
    """A number as a person writes it and :func:`float` reads it back exactly (``30``,
    ``0.9``, ``12.5``)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def policy_words(policy: RetentionPolicy) -> str:
    """The policy in one line: ``duplicates at similarity ≥ 0.9, stale after 30 days, at most
    2000 active facts, stale facts below salience 10 forgotten, protected: identity, …``."""
    protected = ", ".join(policy.protected_categories) or "none"
    return (f"duplicates at similarity ≥ {number(policy.similarity_threshold)}, stale after "
            f"{number(policy.stale_after_days)} days, at most {policy.max_active_facts} active "
            f"facts, stale facts below salience {number(policy.forget_below)} forgotten, "
            f"protected: {protected}")
