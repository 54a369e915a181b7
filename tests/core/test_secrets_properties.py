"""The secrets rule survives evasion (S-DOOR-1), as properties.

Hypothesis draws an evasion class and a seed; :mod:`tests.core.secretkit` writes a known
secret hidden that way (look-alike letters, fullwidth, spaced letters, leetspeak, synonyms,
numbers in words, card separators, keys in another case or with an infix, a one-time code
described, zero-width characters, combining marks): every one is refused, over at least 1,000
tries. Faithful facts that talk about credentials without holding one pass at 95 % or more,
both the generated ones and a list written apart from the generator. On the code before this
rule, most of the evasion classes walked past it (look-alikes beyond NFKC, spacing, leetspeak,
synonyms, numbers in words, dotted card numbers, lower-case keys, described codes).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.judges.sensitive import redact, sensitive_reason
from tests.core import secretkit

TRIED: list[str] = []


@settings(max_examples=1100, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cls=st.sampled_from(secretkit.CLASSES), seed=st.integers(0, 2**32 - 1))
def test_every_evasion_of_a_known_secret_is_refused(cls: str, seed: int) -> None:
    text = secretkit.evasion(cls, random.Random(seed))
    TRIED.append(text)
    reason = sensitive_reason(text)
    assert reason is not None, f"{cls}: {text!r}"
    assert reason.startswith("sensitive: looks like")


def test_at_least_a_thousand_evasions_were_tried() -> None:
    if len(TRIED) < 1000:  # run alone: try them here
        rng = random.Random(7)
        for i in range(1100):
            text = secretkit.evasion(secretkit.CLASSES[i % len(secretkit.CLASSES)], rng)
            assert sensitive_reason(text) is not None, text
            TRIED.append(text)
    assert len(TRIED) >= 1000


@settings(max_examples=5, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seeds=st.lists(st.integers(0, 2**32 - 1), min_size=400, max_size=400))
def test_faithful_facts_about_credentials_pass(seeds: list[int]) -> None:
    texts = [secretkit.faithful(random.Random(s)) for s in seeds]
    refused = [t for t in texts if sensitive_reason(t) is not None]
    assert 1 - len(refused) / len(texts) >= 0.95, refused[:10]


def test_faithful_facts_written_apart_from_the_generator_pass() -> None:
    refused = [t for t in secretkit.HELD_OUT_FAITHFUL if sensitive_reason(t) is not None]
    assert 1 - len(refused) / len(secretkit.HELD_OUT_FAITHFUL) >= 0.95, refused


@settings(max_examples=200, deadline=None, database=None)
@given(cls=st.sampled_from(secretkit.CLASSES), seed=st.integers(0, 2**32 - 1),
       before=st.sampled_from(["I live in Lisbon.", "Quick question.", ""]),
       after=st.sampled_from(["Can you help?", "Thanks!", ""]))
def test_a_message_repeated_later_keeps_its_words_but_not_the_secret(
        cls: str, seed: int, before: str, after: str) -> None:
    secret = secretkit.evasion(cls, random.Random(seed))
    message = " ".join(p for p in (before, secret + ".", after) if p)
    shown = redact(message)
    assert sensitive_reason(shown) is None, shown
    assert "[withheld: " in shown
    for kept in (before, after):
        assert kept in shown
