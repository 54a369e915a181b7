"""Secrets and their evasions, and faithful facts about credentials, for the property tests and
the hostile-input matrix.

A *known secret* is a sentence a person or a model might write that holds one (a password, a
PIN, a one-time code, a card number, a key). An *evasion* rewrites it the way someone hiding it
from a filter would: look-alike letters of other scripts, fullwidth letters, letters spaced or
hyphenated, digits for letters, another word for the credential, numbers in words, other
separators in a card number, a key in another case or with an infix, a one-time code described
instead of labelled, zero-width characters. Every evasion keeps the secret readable by a person.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# Look-alikes people paste (Cyrillic, Greek, Armenian), independent of the table shipped.
LOOKALIKE = {
    "a": "аα", "c": "сϲ", "e": "е", "i": "іι", "j": "ј", "o": "оοօ", "p": "рρ", "s": "ѕ",
    "x": "хχ", "y": "уγ", "k": "кκ", "h": "һ", "n": "п", "t": "т", "m": "м", "d": "ԁ",
    "w": "ԝ", "g": "ց", "u": "υս", "v": "ν", "r": "г", "b": "Ь",
}
LEET = {"a": "4@", "e": "3", "i": "1!", "o": "0", "s": "5$", "t": "7", "l": "1", "g": "9"}
NUMBER = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

PASSWORD_WORDS = ["password", "passcode", "passphrase", "login", "log-in", "pass", "pwd",
                  "sign-in password", "login password", "passwd"]
PIN_WORDS = ["PIN", "PIN code", "PIN number", "phone PIN", "bank PIN", "card PIN"]
OTP_WORDS = ["one-time code", "verification code", "2FA code", "login code", "security code",
             "OTP", "sign-in code", "SMS code", "authentication code"]
ANSWER_WORDS = ["secret answer", "security answer", "answer to my security question",
                "memorable word"]
OWNERS = ["My", "The user's", "Her", "His", "Their", "Our"]
LINKS = [" is ", ": ", " = ", " is still ", " was ", "'s ", " is now "]
PASSWORDS = ["hunter2", "Tr0ub4dor&3", "blue-horse-42", "letmein99", "S3cure!Pass", "zebra7771"]


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def card_number(rng: random.Random) -> str:
    first = rng.choice("3456")
    length = 15 if first == "3" else 16
    body = first + "".join(rng.choice("0123456789") for _ in range(length - 2))
    return body + _luhn_digit(body)


def key_value(rng: random.Random) -> tuple[str, str]:
    """A key of a published shape, and the words a person would introduce it with."""
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    body = "".join(rng.choice(alnum) for _ in range(rng.randint(24, 40)))
    body = body[:6] + "7" + body[7:12] + "3" + body[13:]
    kind = rng.choice(["openai", "github", "aws", "slack", "google", "gitlab", "stripe"])
    if kind == "openai":
        return f"sk-{rng.choice(['', 'proj-', 'svcacct-'])}{body}", "OpenAI key"
    if kind == "github":
        return f"ghp_{body[:36]}", "GitHub token"
    if kind == "aws":
        tail = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(14))
        return f"AKIA{tail}7Q", "AWS key"
    if kind == "slack":
        return f"xoxb-{rng.randint(10**11, 10**12)}-{body[:20]}", "Slack token"
    if kind == "google":
        return "AIza" + (body * 2)[:35], "Google key"
    if kind == "gitlab":
        return f"glpat-{body[:20]}", "GitLab token"
    return f"sk_live_{body[:24]}", "Stripe key"


# -- the evasions ----------------------------------------------------------------------------------


def lookalike(word: str, rng: random.Random) -> str:
    """Some letters swapped for the same letter of another script."""
    out = []
    for ch in word:
        opts = LOOKALIKE.get(ch.lower())
        out.append(rng.choice(opts) if opts and rng.random() < 0.6 else ch)
    if out == list(word):
        for i, ch in enumerate(word):
            if ch.lower() in LOOKALIKE:
                out[i] = LOOKALIKE[ch.lower()][0]
                break
    return "".join(out)


def fullwidth(word: str, rng: random.Random) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in word)


def spaced(word: str, rng: random.Random) -> str:
    return rng.choice([" ", "-", ".", "_", "*", " - "]).join(word.replace(" ", ""))


def leet(word: str, rng: random.Random) -> str:
    out = [rng.choice(LEET[c]) if c in LEET and rng.random() < 0.7 else c for c in word.lower()]
    if "".join(out) == word.lower():
        for i, ch in enumerate(word.lower()):
            if ch in LEET:
                out[i] = LEET[ch][0]
                break
    return "".join(out)


def zero_width(word: str, rng: random.Random) -> str:
    pos = rng.randint(1, max(1, len(word) - 1))
    return word[:pos] + rng.choice(["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad"]) + word[pos:]


def marks(word: str, rng: random.Random) -> str:
    return "".join(c + ("\u0301" if c.isalpha() and rng.random() < 0.4 else "") for c in word)


def in_words(digits: str, rng: random.Random) -> str:
    sep = rng.choice([" ", "-", ", "])
    return sep.join(NUMBER[int(d)] for d in digits)


WORD_EVASIONS: dict[str, Callable[[str, random.Random], str]] = {
    "look-alike letters": lookalike,
    "fullwidth": fullwidth,
    "spaced letters": spaced,
    "leetspeak": leet,
    "zero-width": zero_width,
    "combining marks": marks,
    "plain": lambda w, r: w,
}
"""Rewrites of the credential word itself."""

CLASSES = ("look-alike letters", "fullwidth", "spaced letters", "leetspeak", "synonyms",
           "numbers in words", "card separators", "key case and infix", "described code",
           "zero-width", "combining marks")
"""The evasion classes the matrix reports, one row each."""


def evasion(cls: str, rng: random.Random) -> str:
    """A known secret hidden by the evasion class ``cls`` (plus, sometimes, a second one)."""
    owner = rng.choice(OWNERS)
    link = rng.choice(LINKS)
    extra = rng.choice(["look-alike letters", "leetspeak", "plain", "plain", "zero-width"])
    if cls in WORD_EVASIONS:
        family = rng.choice(["password", "pin", "otp", "answer"])
        if family == "password":
            word, value = rng.choice(PASSWORD_WORDS), rng.choice(PASSWORDS)
        elif family == "pin":
            word, value = rng.choice(PIN_WORDS), str(rng.randint(1000, 999999))
        elif family == "otp":
            word, value = rng.choice(OTP_WORDS), str(rng.randint(100000, 999999))
        else:
            word, value = rng.choice(ANSWER_WORDS), rng.choice(["Fluffy", "Rex", "Lisbon1987"])
        if word == "pass" and not re.search(r"\d", value):
            value += "7"
        hidden = WORD_EVASIONS[cls](word, rng)
        return f"{owner} {hidden}{link}{value}"
    if cls == "synonyms":
        value = rng.choice(PASSWORDS)
        return rng.choice([
            f"{owner} login{link}{value}",
            f"{owner} passcode{link}{value}",
            f"{owner} pass{link}{value}",
            f"The word I use to sign in is {value}",
            f"The word the user types to log in is {value}",
            f"What I type to unlock my laptop is {value}",
            f"The phrase she logs in with is {value}",
            f"{owner} secret answer{link}{value}",
            f"{owner} sign-in word{link}{value}",
            f"{owner} credentials{link}{value}",
            f"I sign in with {value}",
            f"{owner} app password{link}{value}",
            f"{value} is {owner.lower() if owner != 'The user' else 'the user'} login",
            f"The user uses {value} as their passcode.",
        ])
    if cls == "numbers in words":
        kind = rng.choice(["pin", "otp", "card"])
        if kind == "card":
            return f"{owner} card number{link}{in_words(card_number(rng), rng)}"
        digits = str(rng.randint(1000, 9999) if kind == "pin" else rng.randint(100000, 999999))
        word = rng.choice(PIN_WORDS if kind == "pin" else OTP_WORDS)
        return f"{owner} {WORD_EVASIONS[extra](word, rng)}{link}{in_words(digits, rng)}"
    if cls == "card separators":
        digits = card_number(rng)
        sep = rng.choice([".", "-", " ", "/", "_", " . ", ""])
        groups = [digits[i:i + 4] for i in range(0, len(digits), 4)]
        if rng.random() < 0.3:
            groups = list(digits)
            sep = rng.choice([" ", ".", "-"])
        return rng.choice([f"{owner} card{link}{sep.join(groups)}",
                           f"Paid with {sep.join(groups)} today",
                           f"The Visa ends up as {sep.join(groups)}"])
    if cls == "key case and infix":
        key, what = key_value(rng)
        if key.startswith("sk-") and rng.random() < 0.5:
            key = "sk_" + rng.choice(["proj_", "svcacct_", "admin_", ""]) + key.split("-")[-1]
        key = rng.choice([key.lower(), key.upper(), key, key.swapcase()])
        return rng.choice([f"{owner} {what}{link}{key}", f"Use {key} for the API",
                           f"The config holds {key}"])
    if cls == "described code":
        code = str(rng.randint(100000, 999999))
        shown = rng.choice([code, f"{code[:3]} {code[3:]}", f"{code[:3]}-{code[3:]}",
                            in_words(code, rng)])
        return rng.choice([
            f"The six digits the bank texted were {shown}",
            f"The bank texted {shown} to the user to sign in",
            f"The code the app sent is {shown}",
            f"The number from the authenticator is {shown}",
            f"The user needs {shown} to log in",
            f"The digits in the SMS from the bank are {shown}",
            f"The user got {shown} by text message to confirm the payment",
            f"Enter {shown} to verify the account",
        ])
    raise ValueError(cls)


# -- faithful facts ------------------------------------------------------------------------------

SUBJECTS = ["The user", "The user's partner", "Ana", "I", "My sister", "The assistant"]
CREDENTIALS = ["password", "PIN", "passcode", "login", "passphrase", "security answer",
               "API key", "2FA code", "Wi-Fi password", "router password", "bank PIN",
               "email password", "recovery phrase", "one-time code", "card PIN"]
ABOUT = [
    "{s} uses a password manager",
    "{s} changed the {c} yesterday",
    "{s} forgot the {c} again",
    "{s} reset {p} {c} last week",
    "{s} keeps {p} {c} in Bitwarden",
    "{s} wants to change {p} {c} every month",
    "{s} asked how to make a strong {c}",
    "{s} locked {o} out after three wrong {c} attempts",
    "{s} never shares {p} {c} with anyone",
    "{s} got a new {c} from the bank by post",
    "{s} stores {p} {c} in a notebook at home",
    "{s} has to update the {c} on the office printer",
    "{s} thinks {p} {c} is too short",
    "{s} hates typing the {c} on a phone",
    "{s} wrote the {c} on a sticky note under the keyboard",
    "{s} will rotate the {c} on Friday",
    "{s} enabled two-factor login on {p} email account",
    "{s} is setting up a {c} for the new laptop",
    "{s} lost the paper with the {c}",
    "{s} mixed up the {c} for the gym and the bank",
]
STATES = [
    "{P} {c} is weak", "{P} {c} is 12 characters long", "{P} {c} has four digits",
    "{P} {c} is printed on the router", "{P} {c} was stolen in a breach",
    "{P} {c} is the same as the old one", "{P} {c} expired yesterday",
    "{P} {c} is stored in a password manager", "{P} {c} is long and random",
    "{P} {c} is different for every site", "{P} {c} changed last month",
    "{P} {c} is on a card in the drawer", "{P} {c} is hard to remember",
    "{P} {c} is written in the blue notebook", "{P} {c} works again",
    "{P} {c} is at least 16 characters", "{P} {c} was reset by the IT team",
    "{P} {c} is too simple", "{P} {c} is required for the VPN", "{P} {c} is saved in the browser",
]
OWNER_OF = {"The user": ("their", "The user's", "themselves"),
            "The user's partner": ("their", "The user's partner's", "themselves"),
            "Ana": ("her", "Ana's", "herself"), "I": ("my", "My", "myself"),
            "My sister": ("her", "My sister's", "herself"),
            "The assistant": ("its", "The assistant's", "itself")}


def faithful(rng: random.Random) -> str:
    """A true fact that mentions a credential without holding one."""
    s = rng.choice(SUBJECTS)
    p, poss, refl = OWNER_OF[s]
    c = rng.choice(CREDENTIALS)
    if rng.random() < 0.55:
        text = rng.choice(ABOUT).format(s=s, p=p, c=c, o=refl)
    else:
        text = rng.choice(STATES).format(P=poss, c=c)
    if s == "I":
        text = text.replace("I has", "I have").replace("I is", "I am").replace("I wants", "I want")
        text = re.sub(r"^I (\w+?)s\b", lambda m: f"I {m.group(1)}", text) if re.match(
            r"^I (uses|keeps|stores|hates|thinks|wants|never shares)", text) else text
    return text + rng.choice([".", "", "."])


HELD_OUT_FAITHFUL = [
    # written apart from the templates above, in other words, as people say them
    "My bank sent me a new card and the PIN comes in a separate letter.",
    "The user is annoyed that every site wants a different password.",
    "I finally moved all my logins into 1Password.",
    "The user's mum keeps asking for the Wi-Fi password when she visits.",
    "Ana's phone asks for a six-digit passcode now.",
    "The user typed the wrong PIN three times and the card was blocked.",
    "The user's work laptop needs a smart card to sign in.",
    "The user got a one-time code by SMS but it expired.",
    "The user prefers passkeys to passwords.",
    "The user's API key for the weather service expired in March.",
    "The user wants to learn how password hashing works.",
    "My security question is the name of my first school.",
    "The user's router came with the password printed on a sticker.",
    "The user set up two-factor authentication with an authenticator app.",
    "The user reuses the same password on old forums and regrets it.",
    "The user's recovery phrase is kept in a safe deposit box.",
    "The user's login page at work is slow on Mondays.",
    "The user shared the streaming password with their brother.",
    "The user changed the alarm code after the builders left.",
    "The user's door code changes every month.",
    "The user reads about PIN skimming at cash machines.",
    "The user's bus pass expires in June.",
    "The user logs in with their fingerprint.",
    "The user signs in with Google on most apps.",
    "The user has 2 passwords written down for emergencies.",
]
