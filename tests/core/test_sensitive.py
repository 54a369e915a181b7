"""Sensitive data never enters memory: the rule at the encoder gate, with realistic and
adversarial secrets, and faithful facts that must still pass."""

from __future__ import annotations

import pytest

from nocturne_desktop.core.chat.encoder import check_fact
from nocturne_desktop.core.judges.sensitive import luhn_ok, sensitive_reason

SECRETS = [
    # passwords, in the words people and models use
    ("The user's password is hunter2.", "a password"),
    ("The user's wifi password is sunshine", "a password"),
    ("The user's Netflix password: Tr0ub4dor&3", "a password"),
    ("The password for the user's bank account is Blue-Horse-42", "a password"),
    ("The user's PASSWORD IS HUNTER2", "a password"),
    ("The user's pass word is letmein", "a password"),
    ("The user's passphrase is correct horse battery staple", "a password"),
    ("The user uses hunter2 as their password.", "a password"),
    ("\"qwerty123\" is the user's password.", "a password"),
    ("The user's pass\u200bword is hunter2", "a password"),  # a zero-width space inside
    ("The user's ｐａｓｓｗｏｒｄ is hunter2", "a password"),  # fullwidth letters
    ("The user's seed phrase is abandon ability able about above absent", "a recovery phrase"),
    # PINs and one-time codes
    ("The user's PIN is 4821.", "a PIN"),
    ("The user's bank card PIN code is 0000", "a PIN"),
    ("The user's one-time code is 482913", "a one-time code"),
    ("The user's verification code is 482 913", "a one-time code"),
    ("The user's 2FA code: 118822", "a one-time code"),
    ("The user's code is 739204", "a one-time code"),
    ("The user's OTP is 551902", "a one-time code"),
    ("The user's card CVV is 123", "a card security code"),
    ("The user's door code is 4711", "an access code"),
    # keys and tokens by shape, with or without a secret word
    ("The user's OpenAI key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e", "an API key (sk-…)"),
    ("The user's API key is 4f9a8b7c6d5e", "an API key or token"),
    ("The user mentioned sk-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "an API key (sk-…)"),
    ("The user's token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "a GitHub token"),
    ("The user noted github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "a GitHub token"),
    ("The user's AWS id AKIAIOSFODNN7EXAMPLE", "an AWS access key"),
    ("The user shared xoxb-123456789012-abcdefghijkl", "a Slack token"),
    ("The user pasted AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "a Google API key"),
    (
        "The user's session is eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "a JSON web token",
    ),
    ("The user's server key starts -----BEGIN RSA PRIVATE KEY-----", "a private key"),
    ("The user connects to postgres://admin:s3cret@db.example.com/prod", "credentials in a URL"),
    ("The user's client secret = 9f86d081884c", "an API key or token"),
    ("The user kept 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15", "hexadecimal"),
    ("The user kept Zk9qR2vT8mW4xL7pN3bY6hJ1cF5", "random-looking"),
    # card numbers (Luhn) and national ids
    ("The user's card number is 4111 1111 1111 1111", "a payment card number"),
    ("The user paid with 5500-0000-0000-0004", "a payment card number"),
    ("The user's Amex is 378282246310005", "a payment card number"),
    ("The user's SSN is 078-05-1120", "a social security number"),
]

FAITHFUL = [
    "The user's password manager is Bitwarden",
    "Bitwarden is the user's password manager.",
    "The user uses 1Password as their password manager.",
    "The user changed their password yesterday.",
    "The user's password is weak.",
    "The user forgot their PIN.",
    "The user was born in 1987",
    "The user's flight is LH 1234",
    "The user's flight code is LH1234",
    "The user's zip code is 10115",
    "The user's phone number is +49 30 12345678",
    "The user lives at 221B Baker Street",
    "The user's dragon is called Saffron",
    "The user has a secret: they love karaoke",
    "The user collects subway tokens",
    "The user works on the Kubernetes API server",
    "The user's favourite number is 4111",
    "The user keeps their notes in /Users/alice/Documents/ProjectAlpha2024",
    "The user ran 10 km in 52 minutes on 2024-05-12",
    "The user's order number is 1234567890",  # fails Luhn, starts with 1
]


@pytest.mark.parametrize(("text", "label"), SECRETS)
def test_secrets_are_refused_with_a_labelled_reason(text: str, label: str) -> None:
    reason = sensitive_reason(text)
    assert reason is not None, text
    assert reason.startswith("sensitive: looks like")
    assert label in reason
    assert "never kept in memory" in reason


@pytest.mark.parametrize("text", FAITHFUL)
def test_faithful_facts_still_pass(text: str) -> None:
    assert sensitive_reason(text) is None


def test_luhn() -> None:
    assert luhn_ok("4111111111111111") and luhn_ok("378282246310005")
    assert not luhn_ok("4111111111111112")


def test_the_encoder_gate_refuses_a_secret_the_transcript_holds_verbatim() -> None:
    transcript = ["store: my password is hunter2"]
    # every word is in the transcript, so only the sensitive rule can refuse it
    reason = check_fact("my password is hunter2", transcript)
    assert reason is not None and "looks like a password" in reason
    assert check_fact("my password manager is Bitwarden", ["my password manager is Bitwarden"]) is None


@pytest.mark.parametrize(
    "hostile",
    ["x" * 100_000, "a." * 50_000, "code is " * 10_000, "password for " * 5_000, "a://" * 25_000,
     "x:y@" * 25_000, "4111 " * 20_000],
    ids=["one-word", "dotted", "code-is", "password-for", "schemes", "userinfo", "digits"],
)
def test_the_rule_is_linear_on_hostile_input(hostile: str) -> None:
    """A backtracking pattern took 47 s on 100,000 characters of 'a.'; every pattern is linear."""
    import time

    t0 = time.perf_counter()
    sensitive_reason(hostile)
    assert time.perf_counter() - t0 < 2.0
