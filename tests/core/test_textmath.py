"""Text measures (S-TXT-1..5): the article's section 5 tables figure for figure, the section 11
regressions (apostrophes, inflection), Unicode robustness, and properties — above all that the
prefix-filtered duplicate join finds exactly what comparing every pair finds."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.judges import duplicates
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.types import Fact

LISBON = "I live in Lisbon and work best in the morning."

# --------------------------------------------------------------------------- similarity table


@pytest.mark.parametrize(
    ("a", "b", "expected", "duplicate"),
    [
        (LISBON, "User lives in Lisbon and works best in the morning.", 1.000, True),
        (
            "The user keeps a bearded dragon.",
            "The user keeps a bearded dragon called Saffron.",
            1.000,
            True,
        ),
        (LISBON, "I live in Porto and work best in the morning.", 0.800, False),
        ("My stack is Airflow and Postgres.", "My stack is Airflow and Kubernetes.", 0.667, False),
    ],
)
def test_similarity_table(a: str, b: str, expected: float, duplicate: bool) -> None:
    score = tm.similarity(a, b)
    assert round(score, 3) == expected
    assert (score >= 0.9) is duplicate
    assert tm.similarity(b, a) == score


def test_similarity_token_sets_behind_the_table() -> None:
    assert tm.content_tokens(LISBON) == {"live", "lisbon", "work", "best", "morning"}
    assert tm.content_tokens("User lives in Lisbon and works best in the morning.") == {
        "live",
        "lisbon",
        "work",
        "best",
        "morning",
    }
    assert tm.content_tokens("My stack is Airflow and Kubernetes.") == {
        "stack",
        "airflow",
        "kubernete",
    }


def test_similarity_of_empty_content_is_zero() -> None:
    assert tm.similarity("", "The user keeps a dragon.") == 0.0
    assert tm.similarity("and the of", "The user keeps a dragon.") == 0.0
    assert tm.similarity("", "") == 0.0


def test_negation_is_content() -> None:
    assert tm.content_tokens("The user does not like tea.") == {"not", "like", "tea"}
    assert tm.content_tokens("The user doesn't like tea.") == {"doesnt", "like", "tea"}
    assert tm.similarity("The user never drinks tea.", "The user always drinks tea.") < 0.9


# --------------------------------------------------------------------------- coverage table

# The article does not print its "two sources"; these are two natural ones that give its
# three figures exactly.
SOURCES = [
    "The user installed postgres 16 on the backup box.",
    "The kitchen tap leaks next to the kettle.",
]


def test_coverage_row_kitchen_fully_traceable_but_a_new_proper_noun() -> None:
    claim = "The user installed postgres 16 on the backup box and the Kitchen leaks."
    ratio, missing = tm.coverage(claim, SOURCES)
    assert f"{ratio:.2f}" == "1.00"
    assert missing == []
    assert tm.new_names(claim, SOURCES) == ["Kitchen"]


def test_coverage_row_near_missing() -> None:
    claim = "The user installed postgres 16 on the backup box near the kettle."
    ratio, missing = tm.coverage(claim, SOURCES)
    assert f"{ratio:.2f}" == "0.86"
    assert ratio == pytest.approx(6 / 7)
    assert missing == ["near"]


def test_coverage_row_kubernetes_invented() -> None:
    claim = "The user migrated to Kubernetes on the backup box."
    ratio, missing = tm.coverage(claim, SOURCES)
    assert f"{ratio:.2f}" == "0.50"
    assert missing == ["migrated", "kubernete"]


def test_coverage_missing_is_deduplicated_in_claim_order() -> None:
    ratio, missing = tm.coverage("zebra apple zebra mango apple", "apple")
    assert missing == ["zebra", "mango"]
    assert ratio == pytest.approx(1 / 3)


def test_coverage_accepts_one_string_or_many() -> None:
    claim = "postgres kettle"
    assert tm.coverage(claim, " ".join(SOURCES)) == tm.coverage(claim, SOURCES) == (1.0, [])
    assert tm.coverage(claim, iter(SOURCES)) == (1.0, [])
    assert tm.coverage(claim, []) == (0.0, ["postgre", "kettle"])
    # A str is one source, not a sequence of one-letter sources.
    assert tm.coverage("a kettle", "kettle") == (1.0, [])


def test_coverage_of_an_empty_claim_is_complete() -> None:
    assert tm.coverage("", SOURCES) == (1.0, [])
    assert tm.coverage("the and of it", []) == (1.0, [])


# --------------------------------------------------------------------------- stemming, nouns


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("Lisbon's", "lisbon"),
        ("camps", "camp"),
        ("business", "business"),
        ("gas", "gas"),
        ("virus", "virus"),
        ("bus", "bus"),
        ("users'", "user"),
        ("Lisbon\u2019s", "lisbon"),
        ("don't", "dont"),
        ("Kubernetes", "kubernete"),
        ("", ""),
    ],
)
def test_stem_token(word: str, stem: str) -> None:
    assert tm.stem_token(word) == stem


def test_proper_nouns_article_examples() -> None:
    assert tm.proper_nouns("Marco moved to Lisbon in March, said Ana.") == {
        "Marco",
        "Lisbon",
        "March",
        "Ana",
    }
    assert tm.proper_nouns("Lisbon is nice. The weather is warm.") == frozenset()


def test_proper_nouns_details() -> None:
    assert tm.proper_nouns("I think I'm moving to Porto.") == {"Porto"}
    assert tm.proper_nouns("The dragon is Saffron's pet.") == {"Saffron"}
    assert tm.proper_nouns("Yesterday I met Ana.") == {"Ana"}
    assert tm.proper_nouns("Prefers tea.") == frozenset()
    assert tm.proper_nouns("The user likes tea!\nSaffron eats crickets.") == frozenset()
    assert tm.proper_nouns("") == frozenset()
    assert tm.proper_nouns("We met Ana. Then we met Bo.") == {"Ana", "Bo"}


def test_normalize() -> None:
    assert tm.normalize("The user's cat—isn’t it?") == "the users cat isnt it"
    assert tm.normalize("  Hello,World!! snake_case ") == "hello world snake case"
    assert tm.normalize("''") == ""


def test_tokens_keep_stopwords_in_order() -> None:
    assert tm.tokens("The user's camps are in Lisbon.") == [
        "the",
        "user",
        "camp",
        "are",
        "in",
        "lisbon",
    ]
    assert tm.content_tokens("The user's camps are in Lisbon.") == {"camp", "lisbon"}
    # A stopword is recognised by its surface form, so "this" never becomes a content "thi".
    assert tm.content_tokens("this does yours") == frozenset()
    assert tm.content_tokens(" ".join(sorted(tm.STOPWORDS))) == frozenset()
    # ...and decided before plural folding: tin cans are content although "can" is not.
    assert tm.content_tokens("The user collects cans and likes them.") == {"collect", "can", "like"}


# --------------------------------------------------------------------------- section 11 bugs


def test_bug3_apostrophes_leave_no_phantom_s_token() -> None:
    assert "s" not in tm.tokens("The user's favourite editor is vim.")
    assert tm.tokens("user's") == ["user"]
    fact = "The user's favourite editor is vim."
    transcript = "user: my favourite editor is vim, the user said"
    assert tm.coverage(fact, transcript) == (1.0, [])
    assert tm.coverage("The user\u2019s dog barks.", "the user has a dog that barks") == (1.0, [])


def test_bug4_inflection_is_folded_on_both_sides() -> None:
    assert tm.coverage("The user uses Python.", "I only use Python") == (1.0, [])
    assert tm.coverage("The user only uses Python.", "I only use Python") == (1.0, [])
    # The source keeps its stopwords: a function word may become content in a rewrite.
    ratio, missing = tm.coverage("Together they went.", "they went together")
    assert (ratio, missing) == (1.0, [])


# --------------------------------------------------------------------------- Unicode


@pytest.mark.parametrize(
    "text",
    [
        "I love 🐉 dragons 🐉🐉 and 👩‍👩‍👧 families",
        "المستخدم يحب القهوة العربية",
        "המשתמש גר בתל אביב",
        "Cafe\u0301 in Lisbon, nai\u0308ve cre\u0300me",
        "nul\x00bytes\x00inside",
        "\x00",
        "\u0301\u0301 leading combining marks",
        "İstanbul ß Straße ǅ",
        "日本語のテキスト。Tokyo is big!",
        "\ufeff\u200b\u202e reversed",
    ],
)
def test_unicode_never_crashes(text: str) -> None:
    toks = tm.tokens(text)
    assert all(t and " " not in t for t in toks)
    assert isinstance(tm.normalize(text), str)
    assert tm.coverage(text, text)[0] == 1.0
    if tm.content_tokens(text):
        assert tm.similarity(text, text) == 1.0
    assert isinstance(tm.proper_nouns(text), frozenset)
    assert isinstance(duplicates.candidate_pairs([("a", text), ("b", text)]), list)


def test_unicode_tokenisation_rules() -> None:
    assert tm.tokens("المستخدم يحب القهوة") == ["المستخدم", "يحب", "القهوة"]
    assert tm.tokens("המשתמש גר בתל אביב") == ["המשתמש", "גר", "בתל", "אביב"]
    # Combining marks stay in the word; the decomposed and composed forms are the same token.
    assert tm.tokens("Cafe\u0301") == tm.tokens("Caf\u00e9") == ["caf\u00e9"]
    # Emoji and NUL separate words and are not tokens themselves.
    assert tm.tokens("tea🐉coffee\x00milk") == ["tea", "coffee", "milk"]
    assert tm.tokens("Ärger über Öl") == ["ärger", "über", "öl"]
    assert tm.proper_nouns("The user moved to München.") == {"München"}


# --------------------------------------------------------------------------- duplicate pairs


def _fact(fid: str, text: str) -> Fact:
    return Fact(
        id=fid,
        block="scratch",
        text=text,
        category="context",
        source_turn=None,
        created_at=0.0,
        updated_at=0.0,
    )


def test_duplicate_pairs_keeper_carries_more_information() -> None:
    facts = [
        _fact("m1", "The user keeps a bearded dragon called Saffron."),
        _fact("m2", "The user keeps a bearded dragon."),
        _fact("m3", "I live in Lisbon and work best in the morning."),
        _fact("m4", "I live in Porto and work best in the morning."),
        _fact("m5", "User lives in Lisbon and works best in the morning."),
        _fact("m6", "the and of"),
    ]
    assert duplicates.candidate_pairs(facts) == [("m2", "m1", 1.0), ("m5", "m3", 1.0)]
    pairs = duplicates.candidate_pairs(facts, 0.8)
    assert ("m4", "m3", 0.8) in pairs
    assert all("m6" not in (d, k) for d, k, _ in pairs)


def test_duplicate_pairs_tie_keeps_the_older_and_tuples_work() -> None:
    items = [("new", "Postgres runs on the backup box."), ("old", "postgres runs on backup box")]
    assert duplicates.candidate_pairs(items) == [("old", "new", 1.0)]
    assert duplicates.candidate_pairs(list(reversed(items))) == [("new", "old", 1.0)]
    assert duplicates.candidate_pairs([]) == []


def test_duplicate_pairs_output_order_follows_input() -> None:
    items = [
        ("k", "alpha beta gamma delta"),
        ("x", "alpha beta gamma"),
        ("y", "alpha beta"),
        ("z", "alpha beta gamma"),
    ]
    pairs = duplicates.candidate_pairs(items, 1.0)
    assert pairs == [
        ("x", "k", 1.0),
        ("y", "k", 1.0),
        ("y", "x", 1.0),
        ("y", "z", 1.0),
        ("z", "k", 1.0),
        ("z", "x", 1.0),
    ]


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.01, float("nan"), True, "0.9"])
def test_duplicate_pairs_refuses_a_bad_threshold(bad: object) -> None:
    with pytest.raises(InvalidInput, match="threshold"):
        duplicates.candidate_pairs([("a", "x")], bad)  # type: ignore[arg-type]


def test_duplicate_pairs_refuses_repeated_ids() -> None:
    with pytest.raises(InvalidInput, match="'a'"):
        duplicates.candidate_pairs([("a", "tea"), ("a", "coffee")])


def test_threshold_float_edges_are_exact() -> None:
    # 0.7 * 10 is 7.000000000000001 in floating point; 7 shared of 10 must still qualify.
    base = [f"w{i}" for i in range(10)]
    a = " ".join(base)
    b = " ".join([*base[:7], "x1", "x2", "x3"])
    assert duplicates.candidate_pairs([("a", a), ("b", b)], 0.7) == [("b", "a", 0.7)]
    assert duplicates.candidate_pairs([("a", a), ("b", b)], 0.71) == []


def _brute_force(items: list[tuple[str, str]], threshold: float) -> list[tuple[str, str, float]]:
    sets = [(fid, tm.content_tokens(text)) for fid, text in items]
    out: list[tuple[int, int, float]] = []
    for (i, (_, a)), (j, (_, b)) in itertools.combinations(enumerate(sets), 2):
        if not a or not b:
            continue
        score = len(a & b) / min(len(a), len(b))
        if score >= threshold:
            keeper, drop = (j, i) if len(b) > len(a) else (i, j)
            out.append((drop, keeper, score))
    out.sort(key=lambda f: (f[0], f[1]))
    return [(items[d][0], items[k][0], s) for d, k, s in out]


_VOCAB = [
    "tea",
    "coffee",
    "dragon",
    "lisbon",
    "porto",
    "saffron",
    "camp",
    "camps",
    "the",
    "and",
    "user's",
    "box",
    "Kettle",
    "16",
    "near",
    "gas",
]

_texts = st.lists(st.sampled_from(_VOCAB), min_size=0, max_size=9).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_texts, max_size=30), threshold=st.sampled_from([0.5, 0.75, 0.9, 1.0]))
def test_duplicate_pairs_equal_brute_force(texts: list[str], threshold: float) -> None:
    items = [(f"f{i}", t) for i, t in enumerate(texts)]
    assert duplicates.candidate_pairs(items, threshold) == _brute_force(items, threshold)


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.integers(0, 40), min_size=1, max_size=20).map(
            lambda ws: " ".join(f"w{w}" for w in ws)
        ),
        max_size=40,
    ),
    threshold=st.sampled_from([0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0]),
)
def test_duplicate_pairs_equal_brute_force_longer_sets(texts: list[str], threshold: float) -> None:
    items = [(f"f{i}", t) for i, t in enumerate(texts)]
    assert duplicates.candidate_pairs(items, threshold) == _brute_force(items, threshold)


# --------------------------------------------------------------------------- properties

_any_text = st.text(max_size=80)
_wordy_text = st.lists(
    st.sampled_from([*_VOCAB, "Ana", "I", "is", "business", "it's", "🐉", "ça", "ש"]), max_size=12
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(a=st.one_of(_any_text, _wordy_text), b=st.one_of(_any_text, _wordy_text))
def test_similarity_symmetric_and_bounded(a: str, b: str) -> None:
    s = tm.similarity(a, b)
    assert 0.0 <= s <= 1.0
    assert s == tm.similarity(b, a)


@settings(max_examples=200, deadline=None)
@given(x=st.one_of(_any_text, _wordy_text))
def test_self_similarity_and_self_coverage(x: str) -> None:
    if tm.content_tokens(x):
        assert tm.similarity(x, x) == 1.0
    assert tm.coverage(x, x) == (1.0, [])
    assert tm.coverage(x, [x, "unrelated"]) == (1.0, [])


@settings(max_examples=200, deadline=None)
@given(x=_any_text)
def test_tokens_are_clean(x: str) -> None:
    toks = tm.tokens(x)
    assert all(t and t == t.lower() and "'" not in t and "\u2019" not in t for t in toks)
    assert tm.content_tokens(x) <= set(toks)
    # folding is bounded: a token that no longer ends in "s" is a fixed point
    assert all(tm.stem_token(t) == t for t in toks if not t.endswith("s"))


def test_duplicate_join_is_not_quadratic_on_distinct_facts() -> None:
    # 4000 facts with unique rare words: brute force would verify ~8M pairs.
    items = [(f"f{i}", f"item{i} shares common words every time") for i in range(4000)]
    started = time.perf_counter()
    pairs = duplicates.candidate_pairs(items)
    assert time.perf_counter() - started < 5.0
    assert pairs == []
