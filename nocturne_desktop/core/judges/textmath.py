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

Duplicate candidates are found with a set-similarity join (prefix filtering, as in AllPairs /
PPJoin) so a Dedupe pass over 100k facts never compares every pair; see
:func:`find_duplicate_pairs`.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from typing import Protocol

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.stepwise import release, sorted_yielding

__all__ = [
    "STOPWORDS",
    "HasIdText",
    "content_tokens",
    "coverage",
    "find_duplicate_pairs",
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
    if word.endswith("'s") or word.endswith("'S"):
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

def _overlap_needed(threshold: float, size: int) -> int:
    """Smallest shared-token count that can reach ``threshold`` against a set of ``size``.

    The epsilon keeps ``0.7 * 10 == 7.000000000000001`` from demanding 8; erring low only makes
    the prefix longer (more candidates), never misses a pair, because every candidate is
    verified exactly afterwards.
    """
    return max(1, math.ceil(threshold * size - _EPS))


_SUBSET_LEVELS = (4, 3, 2)
"""Token-subset sizes a frequent-token fact may probe with, largest first: four frequent tokens
together are held by a handful of facts in 100k even over a vocabulary of 100 words. The
largest whose index stays within :data:`_SUBSET_BUDGET` entries a fact is used."""
_SUBSET_BUDGET = 48
_FREQUENT_MIN = 16


def _frequent_rank(frequency: list[int], order: list[int], facts: int) -> int:
    """The first rank (rarest first) of a *frequent* token: one held by at least ``2·√facts``
    facts (and :data:`_FREQUENT_MIN`), where a one-token probe starts to cost more than the
    subset index does. ``len(order)`` when no token is frequent."""
    floor = max(_FREQUENT_MIN, math.ceil(2 * math.sqrt(facts)))
    lo, hi = 0, len(order)
    while lo < hi:  # ranks are in ascending frequency
        mid = (lo + hi) // 2
        if frequency[order[mid]] >= floor:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _subset_keys(toks: list[int], level: int, base: int) -> list[int]:
    """Each ``level``-subset (2 to 4) of the ascending ranks ``toks``, as one integer."""
    if level == 2:
        return [a * base + b for a, b in itertools.combinations(toks, 2)]
    if level == 3:
        return [(a * base + b) * base + c for a, b, c in itertools.combinations(toks, 3)]
    return [((a * base + b) * base + c) * base + d
            for a, b, c, d in itertools.combinations(toks, 4)]


def _subset_level(ranked: list[list[int]], frequent_from: int, facts: int) -> int:
    """The largest of :data:`_SUBSET_LEVELS` whose index (every fact under each subset of its
    frequent tokens) holds at most :data:`_SUBSET_BUDGET` entries a fact; 1 (one-token
    prefixes only) when even pairs would not."""
    tails = [len(toks) - bisect_right(toks, frequent_from - 1) for toks in ranked]
    for level in _SUBSET_LEVELS:
        if sum(math.comb(t, level) for t in tails if t >= level) <= _SUBSET_BUDGET * facts:
            return level
    return 1


def _subset_index(
    by_size: list[int], ranked: list[list[int]], frequent_from: int, level: int, base: int,
    wanted: set[int],
) -> dict[int, list[int]]:
    """Every fact's place under each ``level``-subset of its frequent tokens (the tail of its
    rank list) that some fact probes (``wanted``), places ascending."""
    index: dict[int, list[int]] = {}
    for p, i in enumerate(by_size):
        toks = ranked[i]
        start = bisect_right(toks, frequent_from - 1)
        if len(toks) - start < level:
            continue
        for key in wanted.intersection(_subset_keys(toks[start:], level, base)):
            bucket = index.get(key)
            if bucket is None:
                index[key] = [p]
            else:
                bucket.append(p)
    return index


def find_duplicate_pairs(
    items: Iterable[tuple[str, str]] | Iterable[HasIdText], threshold: float = 0.9
) -> list[tuple[str, str, float]]:
    """Every pair of facts whose :func:`similarity` is at least ``threshold``.

    ``items`` are ``(id, text)`` pairs or objects with ``.id`` and ``.text``. Returns
    ``(drop_id, keeper_id, score)`` once per unordered pair. The keeper carries more information:
    the fact with more content tokens, or on a tie the older one (earlier in ``items``). Sorted by
    the input position of the dropped fact, then of the keeper. Facts with no content tokens are
    never paired. ``threshold`` must be in (0, 1]; ids must be unique.

    How it avoids comparing every pair: with ``|A| <= |B|`` the pair qualifies iff
    ``|A∩B| >= k(A) = ceil(t·|A|)``. Order every set's tokens by global rarity; then at most
    ``|A| - k(A)`` of A's tokens lie outside B, so the first ``|A| - k(A) + 1`` tokens of A (its
    prefix, its rarest tokens) contain a shared token. Each fact therefore probes a full inverted
    index with its prefix only and is paired with facts at least as large; rare tokens have
    short posting lists, so the candidates are few. A fact whose rarest token is frequent (a
    small vocabulary) probes token subsets instead (see the comment in the body). Each
    candidate is verified exactly.
    """
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 < threshold <= 1.0
    ):
        raise InvalidInput(f"similarity threshold must be a number in (0, 1], got {threshold!r}")

    ids: list[str] = []
    position: dict[str, int] = {}
    memo: dict[str, tuple[str, bool]] = {}
    token_id: dict[str, int] = {}
    raw_sets: list[list[int]] = []
    for item in items:
        if isinstance(item, tuple):
            item_id, text = item
        else:
            item_id, text = item.id, item.text
        if item_id in position:
            raise InvalidInput(f"duplicate fact id {item_id!r} in the duplicate search")
        position[item_id] = len(ids)
        ids.append(item_id)
        toks: set[int] = set()
        for stem, content in _folded(text, memo):
            if content:
                tid = token_id.get(stem)
                if tid is None:
                    tid = token_id[stem] = len(token_id)
                toks.add(tid)
        raw_sets.append(list(toks))

    # Global rarity order: rank 0 = rarest token (ties broken by first appearance).
    frequency = [0] * len(token_id)
    for toks_list in raw_sets:
        for tid in toks_list:
            frequency[tid] += 1
    order = sorted(range(len(frequency)), key=frequency.__getitem__)
    rank = [0] * len(order)
    for r, tid in enumerate(order):
        rank[tid] = r

    ranked: list[list[int]] = [sorted(rank[t] for t in toks) for toks in raw_sets]

    # Facts in (size, input position) order; a fact's ``place`` is its rank in that order. A
    # fact pairs only with facts placed after it, so each unordered pair is met once and the
    # partner is never smaller. The full inverted index maps a token to the places holding it:
    # ascending lists (a probe bisects straight past the smaller facts) and sets (membership).
    by_size = sorted_yielding((i for i in range(len(ids)) if ranked[i]),
                              key=lambda i: (len(ranked[i]), i))
    postings: dict[int, list[int]] = {}
    for p, i in enumerate(by_size):
        for r in ranked[i]:
            bucket = postings.get(r)
            if bucket is None:
                postings[r] = [p]
            else:
                bucket.append(p)
    members = {r: set(bucket) for r, bucket in postings.items()}

    # A fact whose rarest token is frequent (a small vocabulary: every token is) would meet
    # thousands of candidates through a one-token prefix. It probes token *subsets* instead:
    # at most ``m`` of A's tokens miss a partner, so among A's ``m + l`` rarest tokens at least
    # ``l`` are shared, and the partner holds one of the ``l``-subsets of those. Every fact's
    # subsets of its frequent tokens are indexed (few for ordinary text: its frequent tokens are
    # the head of the vocabulary), and a subset's postings are far shorter than a token's.
    frequent_from = _frequent_rank(frequency, order, len(by_size))
    top_level = _subset_level(ranked, frequent_from, len(by_size)) if frequent_from < len(
        order) else 1
    probes: dict[int, int] = {}  # place -> subset size l (2 to 4) it probes with
    for my_place, i in enumerate(by_size):
        fact_toks = ranked[i]
        if fact_toks[0] >= frequent_from:
            level = min(top_level, _overlap_needed(threshold, len(fact_toks)))
            if level >= 2:
                probes[my_place] = level
    probe_keys: dict[int, list[int]] = {}  # place -> the subsets it probes
    wanted: dict[int, set[int]] = {}
    for my_place, level in probes.items():
        fact_toks = ranked[by_size[my_place]]
        misses = len(fact_toks) - _overlap_needed(threshold, len(fact_toks))
        keys = probe_keys[my_place] = _subset_keys(fact_toks[: misses + level], level, len(order))
        wanted.setdefault(level, set()).update(keys)
    subset_postings: dict[int, dict[int, list[int]]] = {
        level: _subset_index(by_size, ranked, frequent_from, level, len(order), keys)
        for level, keys in wanted.items()
    }

    found: list[tuple[int, int, float]] = []
    for my_place, i in enumerate(by_size):
        fact_toks = ranked[i]
        size_a = len(fact_toks)
        misses_allowed = size_a - _overlap_needed(threshold, size_a)
        candidates: set[int] = set()
        level = probes.get(my_place, 1)
        if level == 1:
            # Candidates: later facts holding a prefix token (at most ``misses_allowed`` of A's
            # tokens can be absent from a partner, so one of the first ``misses_allowed + 1``
            # is present).
            for r in fact_toks[: misses_allowed + 1]:
                bucket = postings[r]
                cut = bisect_right(bucket, my_place)
                if cut < len(bucket):
                    candidates.update(bucket[cut:])
        else:
            index = subset_postings[level]
            for key in probe_keys[my_place]:
                bucket = index[key]  # A itself is indexed under every key it probes
                cut = bisect_right(bucket, my_place)
                if cut < len(bucket):
                    candidates.update(bucket[cut:])
        if not candidates:
            continue
        # Exact verification with set algebra (C speed): walk A's tokens rarest first and keep
        # the candidates bucketed by how many of them they have missed so far, dropping any
        # that miss more than allowed.
        by_misses: list[set[int]] = [candidates]
        for r in fact_toks:
            holders = members[r]
            nxt = [by_misses[0] & holders]
            for d in range(1, len(by_misses)):
                nxt.append((by_misses[d] & holders) | (by_misses[d - 1] - holders))
            if len(by_misses) <= misses_allowed:
                nxt.append(by_misses[-1] - holders)
            by_misses = nxt
            if not any(by_misses):
                break
        for misses, survivors in enumerate(by_misses):
            score = (size_a - misses) / size_a  # A is never larger than its partner
            if not survivors or score < threshold:
                continue
            for p in survivors:
                j = by_size[p]
                # j is placed after i: larger, or the same size and later in the input (the
                # earlier, older fact keeps on a tie).
                if len(ranked[j]) > size_a:
                    found.append((i, j, score))
                else:
                    found.append((j, i, score))
    found = sorted_yielding(found, key=lambda f: (f[0], f[1]))  # a sort of 100k+ pairs in runs
    pairs = [(ids[d], ids[k], score) for d, k, score in found]
    # Freed step by step, not in one C call on return (over 100 ms at 100k facts).
    release(found, subset_postings, probe_keys, wanted, probes, members, postings, by_size,
            ranked, raw_sets, position, token_id, memo)
    return pairs
