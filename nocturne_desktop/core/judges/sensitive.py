"""Sensitive data never enters memory: a rule that spots secrets in a proposed fact.

Memory goes into every system prompt from then on, so a password typed in a chat ("store: my
password is hunter2"), or one a model copies from injected text, must never become a fact. The
transcript keeps what the person typed; memory does not.

:func:`sensitive_reason` is pure (no I/O, no model) and is called at the encoder gate; it is
meant for any other door through which a fact enters (a hand-written fact, an import). It looks
for:

* **passwords, PINs and one-time codes written as values**: a secret word (``password``,
  ``passphrase``, ``PIN``, ``verification code``, ``OTP``, ``CVV``, ``recovery phrase``...)
  followed by ``is``/``:``/``=`` and a value, or a value said to *be* that secret ("uses
  hunter2 as their password"). Talking *about* a secret stays allowed: "The user's password
  manager is Bitwarden", "The user changed their password", "The user's password is weak";
* **API keys and tokens by their published shapes** (OpenAI ``sk-``, GitHub ``ghp_``/
  ``github_pat_``, AWS ``AKIA``, Slack ``xox?-``, Google ``AIza``, GitLab ``glpat-``, Stripe,
  JWTs, PEM private keys, ``Bearer`` tokens, credentials in a URL);
* **long random-looking strings**: 32+ hex digits, or 24+ characters mixing upper case, lower
  case and digits;
* **payment card numbers**: 13–19 digits (spaces or dashes allowed) starting 2–6 that pass the
  Luhn check; and US social security numbers (``123-45-6789``).

Each finding carries a label, so a refusal reads as what it is ("looks like a password").
"""

from __future__ import annotations

import itertools
import re
import unicodedata

__all__ = ["REFUSAL_NOTE", "luhn_ok", "sensitive_reason"]

REFUSAL_NOTE = "sensitive data is never kept in memory; the transcript still has what was typed"

# -- secret words followed by a value ------------------------------------------------------------

_PASSWORD_WORDS = (
    r"pass(?:word|wd|phrase|code)s?|pwd|pass\s+(?:word|phrase|code)|"
    r"(?:recovery|seed|mnemonic|backup)\s+(?:phrase|words?)|"
    r"secret\s+key|private\s+key|master\s+key|"
    r"api[\s_-]?(?:key|token|secret)|access[\s_-]?(?:key|token)|auth(?:entication)?[\s_-]?token|"
    r"bearer\s+token|refresh\s+token|session\s+token|client\s+secret|token"
)
_CODE_WORDS = (
    r"pin(?:\s+(?:code|number))?|otp|totp|cvv2?|cvc2?|csc|"
    r"(?:one[\s-]?time|verification|security|confirmation|login|sign[\s-]?in|auth(?:entication)?|"
    r"access|2fa|mfa|two[\s-]factor|sms|backup|recovery|unlock|door|alarm|safe|gate|entry)"
    r"\s+(?:code|pin|passcode|number)s?|code"
)
_HARMLESS_CODE_LIST = """
    zip postal post postcode area country dress sort promo promotional discount coupon voucher
    gift qr bar morse course product airport flight booking reference colour color error status
    source tax vat language iata icao hs zone dialling dialing
"""
_HARMLESS_CODES = frozenset(_HARMLESS_CODE_LIST.split())
_OWNER = r"(?:(?:the\s+)?(?:user|assistant)(?:['’]s)?|my|his|her|their|our|your|a|an|the)"
_LINK = r"(?:\s+(?:is|was|are|were|reads|equals)\b|\s*(?:[:=]|->|=>))"
_QUOTE = r"[\"'“”‘’`«»]?"

_KEY_VALUE = re.compile(
    rf"\b(?P<word>{_PASSWORD_WORDS}|{_CODE_WORDS})"
    rf"(?:\s+(?:for|to|of|on|at)\s+(?:{_OWNER}\s+)?[\w.@-]+(?:\s+account)?)?"
    rf"{_LINK}\s*(?:still\s+|now\s+|currently\s+|just\s+|simply\s+)?{_QUOTE}(?P<value>[^\s\"'“”‘’`«»]++)",
    re.IGNORECASE,
)
_VALUE_AS = re.compile(
    rf"(?<![^\s\"'“”‘’`«»]){_QUOTE}(?P<value>[^\s\"'“”‘’`«»]++){_QUOTE}\s+(?:as|is|was|for)\s+(?:{_OWNER}\s+)?"
    rf"(?:[\w-]+\s+)?(?P<word>{_PASSWORD_WORDS}|{_CODE_WORDS})(?=\s*(?:[.,;:!?)]|$))",
    re.IGNORECASE,
)

_NOT_A_VALUE_LIST = """
    a an the not no never none nothing same different new old another also still now
    in on at with for by from under inside stored saved kept written managed handled held
    changed reset updated rotated expired revoked required needed asked forgotten lost
    unknown private secret hidden safe secure insecure weak strong long short simple easy
    hard complex complicated random unique shared personal important sensitive
    invalid valid set unset empty blank missing there here being too very really
    quite something somewhere anything everything that this which what it its
    about of to be
"""
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_LIST.split())
_DIGIT = re.compile(r"\d")


def _value_is_secret(word: str, value: str) -> bool:
    v = value.strip(".,;:!?)(").lower()
    if not v or v in _NOT_A_VALUE:
        return False
    if re.fullmatch(_CODE_WORDS, word, re.IGNORECASE):
        return bool(_DIGIT.search(v))  # a PIN or a one-time code is digits
    if word.lower() == "token":
        return len(v) >= 8 and bool(_DIGIT.search(v))  # "token" alone is too common a word
    return True


# -- shapes of keys and tokens -------------------------------------------------------------------

_TOKEN_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
    ("an API key (sk-…)", re.compile(r"(?<![\w-])sk-(?:[a-z]+-)?[A-Za-z0-9_-]{16,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a GitLab token", re.compile(r"\bglpat-[0-9A-Za-z_-]{20,}")),
    ("a Stripe key", re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*")),
    ("credentials in a URL", re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}://[^/\s:@]++:[^/\s@]++@",
                re.IGNORECASE)),
    ("a long hexadecimal secret", re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Fa-f])")),
)
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
_SSN = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_CARD = re.compile(r"(?<![\d-])[2-6]\d{3}(?:[ -]?\d){9,15}(?![\d])")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _kind(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.isupper() else 2 if c.islower() else 3


def _random_looking(run: str) -> bool:
    """24+ letters and digits mixing all three kinds, switching kind as often as random text
    does (a path such as ``Documents/ProjectAlpha2024`` switches rarely)."""
    chars = [c for c in run if c.isalnum()]
    if len(chars) < 24:
        return False
    if sum(c.isdigit() for c in chars) < 2 or not any(c.isupper() for c in chars):
        return False
    if not any(c.islower() for c in chars):
        return False
    switches = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(chars))
    return switches >= 0.3 * len(chars)


def _card(text: str) -> bool:
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            return True
    return False


def sensitive_reason(text: str) -> str | None:
    """Why ``text`` may not enter memory because it looks like a secret, or None.

    The reason starts with ``sensitive:`` and names what was found ("looks like a password").
    """
    t = unicodedata.normalize("NFKC", text)
    t = "".join(c for c in t if unicodedata.category(c) != "Cf")  # zero-width tricks
    for m in (*_KEY_VALUE.finditer(t), *_VALUE_AS.finditer(t)):
        word = " ".join(m.group("word").lower().split())
        if word == "code":
            before = re.findall(r"[\w-]+", t[max(0, m.start("word") - 40) : m.start("word")])
            if before and before[-1].lower() in _HARMLESS_CODES:
                continue
        if _value_is_secret(word, m.group("value")):
            if re.fullmatch(_CODE_WORDS, word, re.IGNORECASE):
                label = "a PIN" if word.startswith("pin") else (
                    "a card security code" if word.startswith(("cvv", "cvc", "csc"))
                    else "a one-time code" if word not in ("door code", "alarm code", "safe code",
                                                           "gate code", "entry code")
                    else "an access code"
                )
            elif word.startswith(("pass", "pwd")):
                label = "a password"
            elif re.search(r"phrase|words?$|mnemonic", word):
                label = "a recovery phrase"
            elif re.search(r"key|token|secret", word):
                label = "an API key or token"
            else:
                label = "a password"
            return f"sensitive: looks like {label} ({word}); {REFUSAL_NOTE}"
    for label, pattern in _TOKEN_SHAPES:
        if pattern.search(t):
            return f"sensitive: looks like {label}; {REFUSAL_NOTE}"
    if any(_random_looking(m.group(0)) for m in _RANDOM_RUN.finditer(t)):
        return f"sensitive: looks like a key or token (a long random-looking string); {REFUSAL_NOTE}"
    if _card(t):
        return f"sensitive: looks like a payment card number; {REFUSAL_NOTE}"
    if _SSN.search(t):
        return f"sensitive: looks like a social security number; {REFUSAL_NOTE}"
    return None
