"""Meaning guards (S-MEAN-1..6): bounded rules that see what token coverage cannot.

The rooms: :mod:`.words` (the word lists), :mod:`.canonical` (faithful forms), :mod:`.clauses`
(the analysis), :mod:`.guards` (judging a claim, duplicates, keeper, completeness) and
:mod:`.statements` (statements and evidence).

:mod:`..textmath` proves that no *word* was invented; this module checks that no *fact* was. Every
judge of a fact (the encoder gate, Dedupe and its candidate finder, Merge, the duplicate
backstop, the re-audit, the traceability sweep, verify and the Wake score) uses the same few
rules, each explainable in one sentence. No model, no embeddings.

Faithful forms first (:func:`canonical`): ``don't`` = ``do not`` = ``doesn't`` = ``does not``,
``can't`` = ``cannot`` = ``can not``, ``I'd`` = ``I would``, and the speaker's own words are
rewritten to the party they name (from the user: ``I``/``me``/``my`` → the user, ``you`` → the
assistant; from the assistant the reverse).

Then each text is cut into clauses (at ``. ! ? ; :``, line breaks, ``but``/``although``/
``because``/``while``…, and at ``and``/``or``/a comma followed by a new subject), and:

- **polarity** — a negation cue (not, no, never, nor, neither, none, nothing, nobody, without, no
  longer, n't) negates the content words after it in its clause;
- **modality and time** — a marker (will, would, might, may, can, could, should, must, wants to,
  plans to, hopes to, going to, used to, has to, no longer, anymore) qualifies the content words
  after it in its clause (``anymore``: the whole clause);
- **quantities** — a number (digits, number words, ordinals) is bound to the nearest content word
  before it and after it (its unit or what it counts) in its clause;
- **roles** — "the user", "the assistant" and named parties: the first party of a clause is its
  subject; two parties around a content word say who does what to whom.

A claim (a merged text, an encoded fact, a quiz answer's fact) is judged against its sources:
every content word it states must be stated somewhere with the same polarity and modality, every
number bound as in a source, no two parties swapped around a word, and no property moved from
the party a source gives it to another (:func:`check_claim`). Two facts are duplicates only if
none of that separates them (:func:`duplicate_conflict`).
"""

from nocturne_desktop.core.judges.meaning.canonical import canonical as canonical
from nocturne_desktop.core.judges.meaning.canonical import canonical_coverage as canonical_coverage
from nocturne_desktop.core.judges.meaning.canonical import canonical_similarity as canonical_similarity
from nocturne_desktop.core.judges.meaning.clauses import Analysis as Analysis
from nocturne_desktop.core.judges.meaning.guards import MAX_CLAIM_CHARS as MAX_CLAIM_CHARS
from nocturne_desktop.core.judges.meaning.guards import check_claim as check_claim
from nocturne_desktop.core.judges.meaning.guards import completeness as completeness
from nocturne_desktop.core.judges.meaning.guards import duplicate_conflict as duplicate_conflict
from nocturne_desktop.core.judges.meaning.guards import keeper_problem as keeper_problem
from nocturne_desktop.core.judges.meaning.statements import complete_predicate as complete_predicate
from nocturne_desktop.core.judges.meaning.statements import evidence_items as evidence_items
from nocturne_desktop.core.judges.meaning.statements import is_yes_no_question as is_yes_no_question
from nocturne_desktop.core.judges.meaning.statements import questions as questions
from nocturne_desktop.core.judges.meaning.statements import resolve_answer as resolve_answer
from nocturne_desktop.core.judges.meaning.statements import statement_problem as statement_problem
from nocturne_desktop.core.judges.meaning.words import NEGATION_TOKENS as NEGATION_TOKENS
