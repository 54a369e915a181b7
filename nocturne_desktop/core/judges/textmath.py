"""The four text measures every memory gate rests on (S-TXT-1..5).

Pure functions, no I/O, no model: similarity decides whether Dedupe may drop a fact, coverage
and proper nouns decide whether a Merge may replace its sources. Each rule is small enough that a
rejection can be explained in one sentence.

Tokenising (S-TXT-1): text is lowercased; apostrophes (``'``, ``’``, ``ʼ``) are kept inside a word
and removed by :func:`stem_token`, never turned into a word break (``user's`` is one word, so it
cannot leave a phantom ``s`` behind); every other character that is not a Unicode letter, digit or
combining mark separates words. Digits are tokens (``16`` is content). Each word is folded by
:func:`stem_token`; content tokens are those whose form before plural folding is not in
:data:`STOPWORDS`.

Duplicate candidates (the set-similarity join over these tokens) are found in
:mod:`.duplicates`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Protocol

__all__ = [
    "STOPWORDS",
    "HasIdText",
    "content_tokens",
    "coverage",
    "normalize",
    "proper_nouns",
    "similarity",
    "stem_token",
    "tokens",
]

_STOPWORD_LIST = """
    a an the
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    one ones someone something anyone anything everyone everything
    this that these those what which who whom whose
    am is are was were be been being have has had having do does did doing done
    will would shall should can could may might must
    im ive youre youve youll youd hes shes theyre theyve weve
    about above across after against along among around as at before behind below beneath
    beside besides between beyond by down during except for from in inside into
    of off on onto out outside over per since through throughout till to toward towards
    under until up upon via with within without
    and but or so yet if then than because while whereas although though unless whether
    also too very just quite rather really even still already again ever
    there here when where why how
    all any both each either neither few many more most much other others some such
    only own same several
    etc eg ie
    user users
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_LIST.split())
"""Function words left out of content tokens.

Deliberate choices:

* ``user`` is a stopword. Facts are written about the user ("The user keeps a bearded dragon"),
  so the word carries no information, and it lets "I live in Lisbon" and "User lives in Lisbon"
  measure as the same fact. The article's coverage figures (0.86 and 0.50) require it.
* Negations (``not``, ``no``, ``never``, ``nor``, ``dont``, ``cant``, ...) are content: "likes
  tea" and "does not like tea" must never measure as duplicates.
* Contractions are listed without their apostrophe, the form :func:`stem_token` produces.
"""

_APOS_TO_ASCII = str.maketrans({"\u2019": "'", "\u02bc": "'"})
_ASCII_WORD = re.compile(r"[A-Za-z0-9']+")
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f]+(?=[\s\"'\u201d\u2019)\]]|$)|\n")
_EPS = 1e-9


class HasIdText(Protocol):
    """Anything with a string ``id`` and ``text``, such as :class:`.types.Fact`."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


# --------------------------------------------------------------------------- words and tokens


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "'" or unicodedata.category(ch).startswith("M")


def _raw_words(text: str) -> list[str]:
    """Split ``text`` into words (case kept) that may still hold apostrophes."""
    text = text.translate(_APOS_TO_ASCII)
    if text.isascii():
        return _ASCII_WORD.findall(text)
    text = unicodedata.normalize("NFC", text)
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_word_char(ch):
            current.append(ch)
        elif current:
            words.append("".join(current))
            current.clear()
    if current:
        words.append("".join(current))
    return words


def _lower_words(text: str) -> list[str]:
    return _raw_words(text.lower())


def normalize(text: str) -> str:
    """Lowercase ``text``, delete apostrophes, turn every other non-word character into a space.

    Words are separated by single spaces: ``normalize("The user's cat!") == "the users cat"``.
    """
    return " ".join(w for w in (w.replace("'", "") for w in _lower_words(text)) if w)


def _unpossessive(tok: str) -> str:
    """Lowercase, strip a possessive (``'s`` or a trailing apostrophe), delete other apostrophes."""
    word = tok.lower().translate(_APOS_TO_ASCII)
    if word.endswith("'s"):
        word = word[:-2]
    word = word.rstrip("'")
    if "'" in word:
        word = word.replace("'", "")
    return word


def _unplural(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


def stem_token(tok: str) -> str:
    """Fold one word with two bounded rules (not a real stemmer, on purpose).

    The word is lowercased, a possessive (``'s`` or a trailing apostrophe) is stripped, any other
    apostrophe is deleted, then a trailing plural ``s`` is removed unless the word ends in
    ``ss`` or ``us`` or has at most 3 characters: ``Lisbon's`` → ``lisbon``, ``camps`` →
    ``camp``, ``business`` → ``business``, ``gas`` → ``gas``, ``users'`` → ``user``.
    """
    return _unplural(_unpossessive(tok))


def _fold(word: str) -> tuple[str, bool]:
    """(stem, is_content) for one raw word.

    Whether a word is a stopword is decided on its form before plural folding, so ``this`` is a
    stopword (not a content ``thi``) and ``cans`` stays content even though ``can`` is a
    stopword.
    """
    base = _unpossessive(word)
    stem = _unplural(base)
    return stem, bool(stem) and base not in STOPWORDS


def _folded(
    text: str, memo: dict[str, tuple[str, bool]] | None = None
) -> Iterator[tuple[str, bool]]:
    for word in _lower_words(text):
        if memo is None:
            folded = _fold(word)
        else:
            hit = memo.get(word)
            if hit is None:
                hit = memo[word] = _fold(word)
            folded = hit
        if folded[0]:
            yield folded


def tokens(text: str) -> list[str]:
    """Every folded token of ``text`` in order, stopwords included."""
    return [stem for stem, _ in _folded(text)]


def content_tokens(text: str) -> frozenset[str]:
    """The set of folded tokens of ``text`` that are not stopwords."""
    return frozenset(stem for stem, content in _folded(text) if content)


def _content_in_order(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for stem, content in _folded(text):
        if content:
            seen.setdefault(stem, None)
    return list(seen)


# --------------------------------------------------------------------------- measures


def similarity(a: str, b: str) -> float:
    """Containment of the smaller content-token set in the larger: ``|A∩B| / min(|A|,|B|)``.

    0.0 when either text has no content tokens. A restatement that only adds words scores 1.0.
    """
    sa, sb = content_tokens(a), content_tokens(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def coverage(claim: str, sources: str | Iterable[str]) -> tuple[float, list[str]]:
    """How much of ``claim`` can be traced to ``sources``.

    Returns ``(ratio, missing)``: the share of the claim's distinct content tokens that occur
    anywhere in the sources' vocabulary, and the ones that do not (claim order, no repeats). The
    vocabulary keeps the sources' stopwords, folded the same way, because a rewrite may
    legitimately turn a function word into content. A claim with no content tokens invents
    nothing, so it scores ``(1.0, [])``. ``sources`` is one text or several.
    """
    wanted = _content_in_order(claim)
    if not wanted:
        return 1.0, []
    texts = [sources] if isinstance(sources, str) else list(sources)
    vocabulary: set[str] = set()
    for source in texts:
        vocabulary.update(stem for stem, _ in _folded(source))
    missing = [tok for tok in wanted if tok not in vocabulary]
    return (len(wanted) - len(missing)) / len(wanted), missing


def _strip_possessive(word: str) -> str:
    word = word.translate(_APOS_TO_ASCII)
    if word.endswith(("'s", "'S")):
        word = word[:-2]
    return word.rstrip("'")


def _is_capitalised(word: str) -> bool:
    """Capital initial, and not the pronoun ``I`` (nor ``I'm``, ``I've``...)."""
    return word[:1].isupper() and word != "I" and not word.startswith("I'")


def proper_nouns(text: str) -> frozenset[str]:
    """Capitalised words that read as names, with a possessive ``'s`` stripped.

    A capitalised word that is not at a sentence start is a name (``Kitchen`` in "...and the
    Kitchen leaks"). At a sentence start capitalisation is forced by grammar, so the first word
    of a sentence counts only when the sentence itself shows it is a name: it is not a stopword,
    the next word is a lowercase non-stopword (a name acting as a subject, "Marco moved"), and
    the same sentence names something else mid-sentence. So "Marco moved to Lisbon in March,
    said Ana." gives {Marco, Lisbon, March, Ana} while "Lisbon is nice. The weather is warm."
    gives {}. The pronoun ``I`` (and ``I'm``, ``I've``...) is never a name. Sentences end at
    ``.``, ``!``, ``?`` or ``…`` followed by a space or quote, and at line breaks.
    """
    found: set[str] = set()
    start = 0
    bounds = [m.end() for m in _SENTENCE_END.finditer(text)]
    bounds.append(len(text))
    for end in bounds:
        sentence = text[start:end]
        start = end
        words = [w for w in (_strip_possessive(w) for w in _raw_words(sentence)) if w]
        if not words:
            continue
        names = {w for w in words[1:] if _is_capitalised(w)}
        first = words[0]
        if (
            names
            and len(words) > 1
            and _is_capitalised(first)
            and _fold(first.lower())[1]
            and not _is_capitalised(words[1])
            and _fold(words[1].lower())[1]
        ):
            names.add(first)
        found |= names
    return frozenset(found)


# --------------------------------------------------------------------------- duplicate join



_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
"""Combining marks (``\\w`` leaves them out); they belong to the word they sit on."""
_CAPITALISED = re.compile(rf"[^\W\d_][\w{_MARKS}'’-]*", re.UNICODE)


def names_written(texts: Iterable[str]) -> frozenset[str]:
    """Every word the texts write with a capital letter, sentence starts included, possessive
    cut: the names a claim may reuse (``Saffron`` at the start of a source still counts).
    Texts are NFC-normalised, as :func:`proper_nouns` reads them, and combining marks stay in
    their word, so "Zoe" + U+0301 is the same name however it was typed."""
    out: set[str] = set()
    for text in texts:
        for m in _CAPITALISED.finditer(unicodedata.normalize("NFC", text)):
            w = re.sub(r"['’]s$", "", m.group(0))
            if w[:1].isupper():
                out.add(w)
    return frozenset(out)


def new_names(claim: str, sources: Iterable[str]) -> list[str]:
    """Proper nouns of ``claim`` that no source writes capitalised (sorted)."""
    return sorted(proper_nouns(claim) - names_written(sources))
