"""The paraphrase split of the memory benchmark: questions that share no content word with
their evidence, so that only the meaning links them."""

from __future__ import annotations

import json
import sqlite3

from bench import bench_memory as bm
from nocturne_desktop.core.judges import textmath as tm

MIN_STEM = 4
"""Two words whose common beginning is this long or longer count as one word ("week" and
"weekdays", "gran" and "grandmother"), beyond what the search's folding joins."""


def _related(a: str, b: str) -> bool:
    if a.startswith(b) or b.startswith(a):
        return min(len(a), len(b)) >= MIN_STEM
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= MIN_STEM + 1


def _shared_by_search(question: str, fact: str) -> bool:
    """Whether today's search would match ``fact`` for ``question``: the store's own folding
    (textmath, then FTS5's Porter tokenizer) on one row."""
    c = sqlite3.connect(":memory:")
    try:
        c.execute("CREATE VIRTUAL TABLE t USING fts5(stems, tokenize='porter unicode61 "
                  "remove_diacritics 2')")
        c.execute("INSERT INTO t(stems) VALUES (?)", (" ".join(tm.tokens(fact)),))
        words = sorted(tm.content_tokens(question))
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        return bool(words) and c.execute("SELECT count(*) FROM t WHERE t MATCH ?",
                                         (match,)).fetchone()[0] > 0
    finally:
        c.close()


def _paraphrases() -> list[tuple[bm.Question, str]]:
    """Each paraphrase question with the text of its evidence facts."""
    out = []
    for conv in bm.load_bench(bm.DATA):
        facts = {t.id: " ".join(text for text, _ in t.facts) for s in conv.sessions for t in s.turns}
        out += [(q, " ".join(facts[e] for e in q.evidence)) for q in conv.paraphrases]
    return out


def test_the_paraphrase_split_has_150_questions_with_a_held_out_part() -> None:
    pairs = _paraphrases()
    assert len(pairs) >= 150
    splits = [q.split for q, _ in pairs]
    assert set(splits) == {"dev", "heldout"} and splits.count("heldout") >= 50
    assert all(evidence for _, evidence in pairs)


def test_no_paraphrase_shares_a_content_word_with_its_evidence() -> None:
    for q, evidence in _paraphrases():
        assert not _shared_by_search(q.text, evidence), (q.text, evidence)
        words = tm.content_tokens(q.text)
        facts = tm.content_tokens(evidence)
        related = [(a, b) for a in words for b in facts if _related(a, b)]
        assert not related, (q.text, evidence, related)


def test_the_check_itself_sees_a_shared_word_through_the_folding() -> None:
    """Controls: the checks above must catch what the search folds and what only shares a stem."""
    assert _shared_by_search("Which race did she run?", "Maya runs the Bristol 10k.")
    assert _shared_by_search("What was she painting?", "Maya paints watercolour landscapes.")
    assert not _shared_by_search("What does she do for a living?", "Maya works as a nurse.")
    assert _related("week", "weekdays") and _related("gran", "grandmother")
    assert not _related("room", "bedroom")


def test_the_word_sharing_questions_are_unchanged_by_the_new_split() -> None:
    raw = json.loads(bm.DATA.read_text(encoding="utf-8"))
    for c in raw["conversations"]:
        assert all(q["kind"] in ("single", "multi") for q in c["questions"])
        assert all(q["kind"] == "paraphrase" for q in c["paraphrases"])
