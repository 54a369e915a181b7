"""Sensitive data never enters memory: a rule that spots secrets in a proposed fact.

Memory goes into every system prompt from then on, so a password typed in a chat ("store: my
password is hunter2"), or one a model copies from injected text, must never become a fact.
:func:`sensitive_reason` is pure (no I/O, no model) and is called by the admission check every
door shares (:mod:`.admission`). It looks for:

* **credentials written as values**: a credential word - ``password``, ``passcode``,
  ``login``, ``pass``, ``PIN``, a secret or security answer, a recovery phrase, a one-time or
  verification code, an API key or token... - followed by ``is``/``:``/``=``/``'s``/``set
  to`` and a value; a value said to *be* one ("uses hunter2 as their password"); the word one
  signs in with described rather than named ("the word I use to log in is tulip"); a one-time
  code described ("the six digits the bank texted were 482913"). Talking *about* a secret
  stays allowed: "The user's password manager is Bitwarden", "The user changed their
  password", "The user's PIN has four digits";
* **keys and tokens by their published shapes**, in any case and with ``_proj_``-style
  infixes (OpenAI ``sk-``, GitHub ``ghp_``/``github_pat_``, AWS ``AKIA``, Slack, Google,
  GitLab, Stripe, JWTs, PEM private keys, ``Bearer`` tokens, credentials in a URL), and long
  random-looking strings;
* **payment card numbers** (13-19 digits passing Luhn, with spaces, dashes, dots or slashes
  between them) and US social security numbers.

Before it looks, the text is read as a person reads it, so the usual evasions fail: NFKC
(fullwidth letters), zero-width characters removed, combining marks stripped, look-alike
letters of other scripts folded to Latin (a subset of Unicode's confusables table,
``resources/confusables-latin.txt``), letters spaced or hyphenated (``p a s s w o r d``,
``p-a-s-s``), digits and symbols for letters (``p@ssw0rd``), numbers written in words ("four
eight two one"). Each finding carries a label, so a refusal reads as what it is ("looks like a
password"). Every pattern is linear in the text's length.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from importlib import resources
from typing import Any

__all__ = ["REFUSAL_NOTE", "WITHHELD", "fold", "luhn_ok", "redact", "sensitive_reason", "withheld"]

REFUSAL_NOTE = "sensitive data is never kept in memory"
WITHHELD = "[withheld: it looks like sensitive data]"
"""What an audit row keeps instead of a refused text that holds a secret."""

CONFUSABLES_FILE = "confusables-latin.txt"


# -- reading the text as a person reads it ------------------------------------------------------


@functools.cache
def _confusables() -> dict[int, str]:
    """Look-alike characters → the ASCII letter or digit they read as (the shipped subset of
    Unicode's confusables table: see the file's header for its source)."""
    text = resources.files("nocturne_desktop.resources").joinpath(CONFUSABLES_FILE).read_text(
        "utf-8")
    table: dict[int, str] = {}
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        if body:
            src, dst = (part.strip() for part in body.split(";"))
            table[int(src, 16)] = chr(int(dst, 16))
    return table


_SPACES = re.compile(r"[\s\u2028\u2029]+")


def fold(text: str) -> str:
    """``text`` as the rule reads it: NFKC, no format characters (zero-width), no combining
    marks, look-alike letters as the Latin letters they show, runs of white space as one
    space."""
    if text.isascii():
        t = text
    else:  # the table first too: NFKC would make some look-alikes (lunate sigma) other letters
        table = _confusables()
        t = unicodedata.normalize("NFKC", text.translate(table))
        t = "".join(c for c in t if unicodedata.category(c) != "Cf").translate(table)
        t = "".join(c for c in unicodedata.normalize("NFD", t)
                    if unicodedata.category(c) != "Mn").translate(table)
        t = unicodedata.normalize("NFC", t)
    return _SPACES.sub(" ", t)


_SPACED_RUN = re.compile(r"(?<![\w'’])(?:[^\W_][ ._*·/\\-]{1,8}){2,}[^\W_](?![^\W_])")


def _collapse(t: str) -> str:
    """``t`` with letters written one by one ("p a s s", "p-a-s-s", "p - a - s") joined."""
    return _SPACED_RUN.sub(lambda m: re.sub(r"[ ._*·/\\-]", "", m.group(0)), t)


_UNITS = {"zero": 0, "oh": 0, "nought": 0, "nil": 0, "one": 1, "two": 2, "three": 3,
          "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
_TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60,
         "seventy": 70, "eighty": 80, "ninety": 90}
_REPEAT = {"double": 2, "triple": 3}
_NUMBER_WORD = "|".join(sorted([*_UNITS, *_TEENS, *_TENS, *_REPEAT, "hundred", "thousand"],
                               key=len, reverse=True))
_SPOKEN_RUN = re.compile(
    rf"(?<![a-z])(?:{_NUMBER_WORD})(?:(?:[\s,-]|\s*and\s)+(?:{_NUMBER_WORD}))*(?![a-z])")


def _spoken(words: list[str]) -> str:
    """The digits a run of number words says: "four eight two one" → 4821, "forty-eight
    twenty-one" → 4821, "double four" → 44, "four thousand two hundred" → 4200."""
    if any(w in ("hundred", "thousand") for w in words):
        total = part = 0
        for w in words:
            if w in _UNITS:
                part += _UNITS[w]
            elif w in _TEENS:
                part += _TEENS[w]
            elif w in _TENS:
                part += _TENS[w]
            elif w == "hundred":
                part = max(part, 1) * 100
            elif w == "thousand":
                total += max(part, 1) * 1000
                part = 0
        return str(total + part)
    out: list[str] = []
    repeat = 1
    for i, w in enumerate(words):
        if w in _REPEAT:
            repeat = _REPEAT[w]
            continue
        if w in _UNITS:
            piece = str(_UNITS[w])
        elif w in _TEENS:
            piece = str(_TEENS[w])
        else:  # a ten: "forty" is 40, "forty-eight" is 4 then 8
            nxt = words[i + 1] if i + 1 < len(words) else ""
            piece = str(_TENS[w] // 10) if _UNITS.get(nxt) else str(_TENS[w])
        out.append(piece * repeat)
        repeat = 1
    return "".join(out)


def _digits_spoken(t: str) -> str:
    """``t`` (lower case) with every run of two or more number words written as digits."""

    def digits(m: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s,-]+|\band\b", m.group(0).lower()) if w]
        return _spoken(words) if len(words) >= 2 else m.group(0)

    return _SPOKEN_RUN.sub(digits, t)


def _views(text: str) -> list[str]:
    """The readings of ``text`` every rule is run on (the folded text; with spaced letters
    joined; with numbers in words as digits), each once."""
    t = fold(text)
    views = [t]
    joined = _collapse(t) if _SPACED_RUN.search(t) else t
    if joined != t:
        views.append(joined)
    low = joined.lower()
    if _SPOKEN_RUN.search(low):
        for v in (_digits_spoken(t.lower()), _digits_spoken(low)):
            if v not in views:
                views.append(v)
    return views


# -- credential words ------------------------------------------------------------------------------

_LEET = {"a": "a4@", "b": "b8", "e": "e3", "g": "g9", "i": "i1!|l", "l": "l1|i", "o": "o0",
         "s": "s5$", "t": "t7+", "z": "z2"}
_IN_WORD = r"[ ._*·/-]?"
"""What may stand between two letters of a credential word ("p-a-s-s", "pass word")."""


_GAP = r"[\s._/-]*"
"""What may stand between two words of a credential phrase ("pass code", "passcode")."""


def _tokens(phrase: str) -> list[tuple[str, str]]:
    """``phrase`` as (separator before, letter or regex piece) pairs."""
    out: list[tuple[str, str]] = []
    for w in phrase.split():
        if w.startswith("("):
            out.append((_GAP if out else "", w))  # a regex piece, kept as written
            continue
        for i, c in enumerate(w):
            out.append((_IN_WORD if i else (_GAP if out else ""), c))
    return out


def _unit(sep: str, token: str) -> str:
    if len(token) > 1:
        return sep + token
    return sep + (f"[{re.escape(_LEET[token])}]" if token in _LEET else re.escape(token))


def _family(*phrases: str) -> str:
    """One regex for ``phrases``, written with digits for letters and separators inside words,
    as a trie (alternatives share their prefixes: matching is not a scan of every phrase)."""
    trie: dict[Any, Any] = {}
    for phrase in phrases:
        node = trie
        for token in _tokens(phrase):
            node = node.setdefault(token, {})
        node[None] = {}

    def regex(node: dict[Any, Any]) -> str:
        alts = [_unit(*key) + regex(child) for key, child in node.items() if key is not None]
        if None in node:
            alts.append("")
        if not alts:
            return ""
        if len(alts) == 1 and None not in node:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    return regex(trie)


_PASSWORD = _family(
    "login password", "log in password", "sign in password", "signin password",
    "account password", "password", "passwd", "passwort", "kennwort", "pwd", "pw", "passphrase", "passcode",
    "passkey", "logon", "login word", "login", "signin word", "signin", "sign on", "credentials",
    "secret word", "code word", "memorable word", "memorable information",
)
_ANSWER = _family(
    "secret answer", "security answer", "memorable answer", "security question answer",
    "answer to (?:my|the|their|his|her|your|our|a) security question",
    "answer to (?:my|the|their|his|her|your|our|a) secret question",
)
_RECOVERY = _family(
    "recovery phrase", "recovery words", "recovery word", "seed phrase", "seed words",
    "mnemonic phrase", "mnemonic", "backup phrase", "backup words",
)
_KEY = _family(
    "secret key", "private key", "master key", "api key", "api token", "api secret",
    "access key", "access token", "auth token", "authentication token", "bearer token",
    "refresh token", "session token", "client secret", "app password", "token",
)
_CODE = _family(
    *(f"{w} {n}" for w in ("one time", "onetime", "verification", "security", "confirmation",
                           "login", "log in", "sign in", "auth", "authentication", "access", "2fa",
                           "mfa", "two factor", "sms", "backup", "recovery", "unlock", "door",
                           "alarm", "safe", "gate", "entry", "garage", "lock screen",
                           "screen lock")
      for n in ("code", "pin", "passcode")),
    "phone pin", "phone passcode", "card pin", "bank pin", "bank card pin", "pin code",
    "pin number", "pin", "otp", "totp", "cvv2", "cvv", "cvc2", "cvc", "csc", "code",
)
_PASS = _family("pass")

_WORD = (rf"(?P<word>(?P<pw>{_PASSWORD})|(?P<ans>{_ANSWER})|(?P<rec>{_RECOVERY})|"
         rf"(?P<key>{_KEY})|(?P<code>{_CODE})|(?P<pass>{_PASS}))s?")
_B = r"(?<![a-z0-9])"
_E = r"(?![a-z0-9])"
_OWNER = r"(?:(?:the\s+)?(?:user|assistant)(?:['’]s)?|my|his|her|their|our|your|a|an|the)"
_LINK = (r"(?P<link>\s+(?:is|was|are|were|reads|equals|became|becomes)\b(?:\s+(?:now\s+)?"
         r"(?:set|changed|reset|updated)\s+to\b)?|['’]s\b|\s*(?:[:=]|->|=>)|"
         r"\s+(?:is\s+|was\s+|has\s+been\s+)?(?:now\s+)?(?:set|changed|reset|updated)\s+to\b|"
         r"\s+to\b)")
_QUOTE = r"[\"'“”‘’`«»]"
_ADVERB = r"(?:(?:still|now|currently|just|simply|actually|really|literally)\s+)?"
_VALUE = rf"(?P<quote>{_QUOTE})?(?P<value>[^\s\"“”‘’`«»]++)"

_KEY_VALUE = re.compile(
    rf"{_B}{_WORD}{_E}"
    rf"(?:\s+(?:for|to|of|on|at|into|with)(?:\s+[\w.@'’-]+){{1,4}}?(?:\s+(?:account|login))?)?"
    rf"{_LINK}\s*{_ADVERB}{_VALUE}",
)
_VALUE_AS = re.compile(
    rf"(?<![^\s\"'“”‘’`«»(]){_QUOTE}?(?P<value>[^\s\"'“”‘’`«»]++){_QUOTE}?"
    rf"\s+(?:as|is|was|for)\s+(?:{_OWNER}\s+)?(?:[\w-]+\s+)?{_B}{_WORD}"
    rf"(?=\s*(?:[.,;:!?)]|$))",
)
_SUBJECT = r"(?:i|you|he|she|they|we|one|(?:the\s+)?user|(?:the\s+)?assistant)"
_SIGN_IN = (r"(?:sign|log|logging|signing|signs|logs|signed|logged)\s*-?\s*(?:in|on|into)|"
            r"unlock|unlocks|open|opens|access|get\s+into|gets\s+into")
_DESCRIBED = re.compile(
    rf"{_B}(?:(?:(?:word|phrase|thing|text|string|combination|code|number|digits|letters|"
    rf"characters|sequence|pattern)s?\s+(?:that\s+|which\s+)?{_SUBJECT}|what\s+{_SUBJECT})"
    rf"\s+(?:[\w'’]+\s+){{0,2}}?(?:use|uses|used|type|types|typed|enter|enters|entered|put|"
    rf"puts|need|needs|needed|write|writes)\s+(?:in\s+)?(?:to|at|for|when|with)\s+"
    rf"(?:[\w'’]+\s+){{0,2}}?(?:{_SIGN_IN})(?:\s+[\w.@'’-]+){{0,4}}?"
    rf"|(?:(?:word|phrase|thing|text|string|combination|code|number|digits|pattern)s?\s+"
    rf"(?:that\s+|which\s+)?{_SUBJECT}\s+(?:{_SIGN_IN})\s+(?:with|using)))"
    rf"(?P<link>\s+(?:is|was|are|were)\b|\s*[:=])\s*{_ADVERB}{_VALUE}",
)
_SIGNS_IN_WITH = re.compile(
    rf"{_B}(?:{_SIGN_IN})(?:\s+(?:{_OWNER}\s+)?[\w'’-]+){{0,2}}?\s+(?:with|using)\s+{_VALUE}",
)

_HARMLESS_CODE_LIST = """
    zip postal post postcode area country dress sort promo promotional discount coupon voucher
    gift qr bar morse course product airport flight booking reference colour color error status
    source tax vat language iata icao hs zone dialling dialing phone calling
"""
_HARMLESS_CODES = frozenset(_HARMLESS_CODE_LIST.split())
_HARMLESS_PASS_LIST = """
    bus boarding train rail ski season gym hall day week weekly monthly annual museum backstage
    press free travel mountain park festival guest visitor hall mobile metro tram ferry
    transit parking theme
"""
_HARMLESS_PASSES = frozenset(_HARMLESS_PASS_LIST.split())

_NOT_A_VALUE_LIST = """
    a an the not no never none nothing same different new old another also still now
    in on at with for by from under over inside stored saved kept written managed handled held
    changed reset updated rotated expired revoked required needed asked forgotten lost
    unknown private secret hidden safe secure insecure weak strong long short simple easy
    hard complex complicated random unique shared personal important sensitive
    invalid valid set unset empty blank missing there here being too very really
    quite something somewhere anything everything that this which what it its
    about of to be my his her their our your them him me us you someone somebody
    printed stolen leaked hacked compromised locked blocked known given sent taken broken
    disabled enabled encrypted hashed protected generated remembered typed entered wrong
    correct incorrect expiring changing working failing case sensitive memorable guessable
    unguessable temporary default unchanged fine ok okay good bad terrible awful different
    least most more less longer shorter stronger weaker harder easier based made
    usually always often sometimes probably maybe mostly only ever again either
    written down kept somewhere elsewhere ready due overdue expiring expired coming
    all both each every any some his hers theirs mine yours ours
    and or but so because if when while as like than then
    is was are were has have had will would can could should may might must
    wife husband partner mother father sister brother son daughter friend
    2fa mfa u2f fido2 sso otp fingerprint face touch biometrics passkey passkeys yubikey
    1password bitwarden lastpass keepass google apple facebook github microsoft
    slow fast quick down up unavailable offline online pending active inactive suspended
    verified unverified flaky annoying confusing tedious cumbersome
"""
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_LIST.split())
_FUNCTION_LIST = """
    a an the not no never none nothing in on at with for by from under over inside to of
    about be being it its that this which what there here my his her their our your them him
    me us you someone somebody something somewhere anything everything and or but so because
    if when while as like than then is was are were has have had will would can could should
    may might must all both each every any some too very really quite enough again now still
    yet already though although since until unless also only ever either even just
    withheld
"""
_FUNCTION = frozenset(_FUNCTION_LIST.split())
"""Words after which a describing word stays a description ("weak and short", "printed on
the router"); before any other word it may start a passphrase ("correct horse battery")."""
_UNIT_LIST = """
    characters character chars char letters letter digits digit numbers number words word
    symbols symbol long short minutes seconds hours days times
"""
_UNIT_WORDS = frozenset(_UNIT_LIST.split())
_DIGIT = re.compile(r"\d")
_SYMBOL = re.compile(r"[^\w\s]")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def _next_word(t: str, at: int) -> str:
    m = re.match(r"[\s,]*([\w'-]+)", t[at:at + 40])
    return m.group(1).lower() if m else ""


def _spoken_value(t: str, start: int) -> tuple[str, int] | None:
    """The digits said in words from ``start`` ("four eight two one"), and where they end."""
    m = _SPOKEN_RUN.match(t, start)
    if m is None:
        return None
    words = [w for w in re.split(r"[\s,-]+|\band\b", m.group(0).lower()) if w]
    return _spoken(words), m.end()


def _value_is_secret(m: re.Match[str], t: str, family: str) -> bool:
    """Whether the value a credential word is linked to is a value (not "weak", "12
    characters long", "their dog's name", "four digits")."""
    value = m.group("value")
    end = m.end("value")
    quoted = m.groupdict().get("quote") is not None
    spoken = _spoken_value(t, m.start("value"))
    v = value.strip(".,;:!?)(\"'“”‘’`«»[]").lower()
    if spoken is not None:
        digits, end = spoken
        words = len(re.findall(r"[a-z]+", t[m.start("value"):end].lower()))
        if words >= 2 or not _next_word(t, end):
            v = digits
    if not v:
        return False
    if not quoted and (v in _NOT_A_VALUE or v in _FUNCTION):
        after = _next_word(t, end)
        if v in _FUNCTION or after in _FUNCTION or not after or after in _UNIT_WORDS:
            return False
    if _next_word(t, end) in _UNIT_WORDS:
        return False
    has_digit = bool(_DIGIT.search(v))
    weak_link = (m.groupdict().get("link") or "").strip().lower() == "to"
    if family == "code":
        return has_digit
    if family == "key" and m.group("word").lower().rstrip("s") in ("token", "t0ken", "tok3n"):
        return len(v) >= 8 and has_digit
    if family == "pass" or weak_link:
        return has_digit or bool(_SYMBOL.search(v.rstrip("."))) or quoted
    # a login that is an e-mail address is the account, not its secret
    return not (family == "pw" and _EMAIL.fullmatch(v))


def _label(family: str, word: str) -> str:
    word = " ".join(word.lower().split())
    if family == "code":
        if word.startswith(("pin", "p1n")):
            return "a PIN"
        if word.startswith(("cvv", "cvc", "csc")):
            return "a card security code"
        if word.split()[0] in ("door", "alarm", "safe", "gate", "entry", "garage", "phone",
                               "unlock", "lock", "screen"):
            return "an access code"
        if word.endswith("pin"):
            return "a PIN"
        return "a one-time code"
    return {"pw": "a password", "pass": "a password", "ans": "a secret answer",
            "rec": "a recovery phrase", "key": "an API key or token"}[family]


def _credential(t: str) -> str | None:
    """A credential word linked to a value in ``t`` (lower case), labelled; or None."""
    for m in (*_KEY_VALUE.finditer(t), *_VALUE_AS.finditer(t)):
        family = next(f for f in ("pw", "ans", "rec", "key", "code", "pass") if m.group(f))
        word = m.group("word")
        if family in ("code", "pass"):
            before = re.findall(r"[\w-]+", t[max(0, m.start("word") - 40): m.start("word")])
            harmless = _HARMLESS_CODES if family == "code" else _HARMLESS_PASSES
            if before and before[-1].lower() in harmless:
                continue
        if _value_is_secret(m, t, family):
            shown = " ".join(word.lower().split())
            return f"sensitive: looks like {_label(family, word)} ({shown}); {REFUSAL_NOTE}"
    for m in _DESCRIBED.finditer(t):
        if _value_is_secret(m, t, "pw"):
            return (f"sensitive: looks like a password (the word used to sign in, described); "
                    f"{REFUSAL_NOTE}")
    for m in _SIGNS_IN_WITH.finditer(t):
        if _value_is_secret(m, t, "pass"):
            return f"sensitive: looks like a password (what is typed to sign in); {REFUSAL_NOTE}"
    return None


# -- one-time codes described, not labelled ------------------------------------------------------

_OTP_NUMBER = re.compile(r"(?<![\d,:/-])(?<!\d\.)\d(?:[ -]?\d){3,7}(?![\d,:/-]|\.\d|\s?\d)")
_OTP_PURPOSE = re.compile(
    r"\b(?:to\s+(?:sign|log)\s*-?\s*(?:in|on)|to\s+verify|to\s+confirm|to\s+unlock|"
    r"verification|two[\s-]?factor|2fa|mfa|one[\s-]?time|otp|authenticator|security\s+code|"
    r"login\s+code|sign[\s-]?in\s+code|passcode)\b")
_OTP_DELIVERY = re.compile(
    r"\b(?:texted|text\s+message|sms|messaged|emailed|authenticator)\b.{0,60}?"
    r"\b(?:code|digits|numbers?)\b|\b(?:code|digits|numbers?)\b.{0,60}?"
    r"\b(?:texted|sms|messaged|emailed)\b|"
    r"\b(?:sent|got|received|gave)\b.{0,40}?\b(?:code|digits)\b|"
    r"\b(?:code|digits)\b.{0,40}?\b(?:sent|received)\b")
_YEAR = re.compile(r"(?:19|20)\d\d")


def _one_time_code(t: str) -> bool:
    numbers = [n for n in _OTP_NUMBER.findall(t)
               if not _YEAR.fullmatch(n) and len(re.sub(r"\D", "", n)) >= 4]
    if not numbers:
        return False
    return bool(_OTP_PURPOSE.search(t) or _OTP_DELIVERY.search(t))


# -- shapes of keys and tokens -------------------------------------------------------------------

_I = re.IGNORECASE
_TOKEN_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----", _I)),
    ("an API key (sk-…)",
     re.compile(r"(?<![\w-])sk[-_](?:[a-z]+[-_]){0,3}(?=[\w-]*\d[\w-]*\d)[a-z0-9_-]{16,}", _I)),
    ("a GitHub token", re.compile(
        r"\b(?:gh[pousr]_(?=\w*\d\w*\d)[a-z0-9]{20,}|github_pat_[a-z0-9_]{20,})", _I)),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("an AWS access key",  # in another case: with digits, as real ones have
     re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)(?=[0-9A-Z]*\d)[0-9A-Z]{16}\b", _I)),
    ("a Slack token", re.compile(r"\bxox[abposr]-[a-z0-9-]{10,}", _I)),
    ("a Google API key", re.compile(r"\bAIza[0-9a-z_-]{35}", _I)),
    ("a GitLab token", re.compile(r"\bglpat-[0-9a-z_-]{20,}", _I)),
    ("a Stripe key", re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[0-9a-z]{16,}", _I)),
    ("a JSON web token", re.compile(r"\beyJ[a-z0-9_-]{8,}\.eyJ[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}", _I)),
    ("a bearer token", re.compile(r"\bBearer\s+(?=[\w.~+/-]*\d)[a-z0-9._~+/-]{16,}=*", _I)),
    ("credentials in a URL", re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}://[^/\s:@]++:"
                                        r"[^/\s@]++@", _I)),
    ("a long hexadecimal secret", re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Fa-f])")),
)
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
_SSN = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_CARD = re.compile(r"(?<![\d.,/_-])[2-6](?: ?[._/-]? ?\d){12,18}(?![\d])")


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
    """24+ letters and digits switching kind as often as random text does: mixed case with
    digits (a path such as ``Documents/ProjectAlpha2024`` switches rarely), or one case with
    many digits (a key written in lower case)."""
    chars = [c for c in run if c.isalnum()]
    if len(chars) < 24:
        return False
    digits = sum(c.isdigit() for c in chars)
    upper, lower = any(c.isupper() for c in chars), any(c.islower() for c in chars)
    if digits >= 2 and upper and lower:
        switches = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(chars))
        return switches >= 0.3 * len(chars)
    if digits >= 4 and len(chars) - digits >= 4:
        switches = sum(a.isdigit() != b.isdigit() for a, b in itertools.pairwise(chars))
        return switches >= 0.25 * len(chars)
    return False


def _card(text: str) -> bool:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            return True
    return False


_ANY_SHAPE = re.compile("|".join(f"(?:{p.pattern})" for _, p in _TOKEN_SHAPES if not p.flags & _I))
_ANY_SHAPE_I = re.compile("|".join(f"(?:{p.pattern})" for _, p in _TOKEN_SHAPES if p.flags & _I),
                          _I)
"""Every shape at once: one scan finds whether any is there; the label is looked up after."""


def _shapes(t: str) -> str | None:
    if _ANY_SHAPE.search(t) or _ANY_SHAPE_I.search(t):
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


def sensitive_reason(text: str) -> str | None:
    """Why ``text`` may not enter memory because it looks like a secret, or None.

    The reason starts with ``sensitive:`` and names what was found ("looks like a password").
    """
    if not isinstance(text, str) or not text.strip():
        return None
    views = _views(text)
    lowered = [t.lower() for t in views]
    for t, low in zip(views, lowered, strict=True):
        found = _credential(low) or _shapes(t)
        if found is not None:
            return found
    if any(_one_time_code(low) for low in lowered):
        return f"sensitive: looks like a one-time code (described); {REFUSAL_NOTE}"
    return None


def withheld(value: Any, depth: int = 0) -> Any:
    """``value`` (a JSON value: an audit row's refs) with every string that looks like a
    secret replaced by :data:`WITHHELD`, so a refused secret is not kept in the log either."""
    if isinstance(value, str):
        return WITHHELD if sensitive_reason(value) is not None else value
    if depth > 64:
        return value
    if isinstance(value, list):
        return [withheld(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: withheld(v, depth + 1) for k, v in value.items()}
    return value


def _spans(t: str) -> list[tuple[int, int]]:
    """Where the secrets in ``t`` (as :func:`fold` leaves it) are: the values linked to a
    credential word, and the keys, card numbers and codes found by their shapes."""
    low = t.lower()
    spans: list[tuple[int, int]] = []
    for pattern in (_KEY_VALUE, _VALUE_AS, _DESCRIBED, _SIGNS_IN_WITH):
        for m in pattern.finditer(low):
            family = next((f for f in ("pw", "ans", "rec", "key", "code", "pass")
                           if f in m.re.groupindex and m.group(f)), "pw")
            if _value_is_secret(m, low, family):
                spoken = _spoken_value(low, m.start("value"))
                end = spoken[1] if spoken else m.end("value")
                while end > m.start("value") + 1 and low[end - 1] in ".,;:!?)":
                    end -= 1  # the sentence's own punctuation stays
                spans.append((m.start("value"), end))
    for pattern in (*(p for _, p in _TOKEN_SHAPES), _CARD, _SSN, _OTP_NUMBER):
        spans += [m.span() for m in pattern.finditer(t)]
    spans += [m.span() for m in _RANDOM_RUN.finditer(t) if _random_looking(m.group(0))]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?]++(?!\s*$|\s+[^\d\s]))*+(?:[.!?]+|\n+|$)")
"""A sentence: up to a full stop, ! or ? followed by the end or by a space and a word ("p@ss!"
and "4111 . 1111" go on)."""


def redact(text: str) -> str:
    """``text`` with every sentence that looks like it holds a secret replaced by a note saying
    what was withheld (the whole text when the secret spans sentences). What a person typed is
    kept in the transcript; this is what a later request repeats of it."""
    if sensitive_reason(text) is None:
        return text
    out: list[str] = []
    for m in _SENTENCE.finditer(text):
        sentence = m.group(0)
        if not sentence:
            continue
        why = sensitive_reason(sentence)
        if why is None:
            out.append(sentence)
            continue
        label = why.split("looks like ", 1)[-1].split(";", 1)[0].split(" (", 1)[0]
        spans = _spans(sentence) if fold(sentence) == sentence else []
        if spans:
            cut = sentence
            for start, end in sorted(spans, reverse=True):
                cut = f"{cut[:start]}[withheld: {label}]{cut[end:]}"
            if sensitive_reason(cut) is None:
                out.append(cut)
                continue
        head = sentence[: len(sentence) - len(sentence.lstrip())]
        tail = sentence[len(sentence.rstrip()):]
        out.append(f"{head}[withheld: what looked like {label}]{tail}")
    redacted = "".join(out)
    if sensitive_reason(redacted) is not None:
        return "[withheld: a message that looked like it held sensitive data]"
    return redacted
