"""Swapped values (S-WORDS-1): a newer fact, said as a change, that keeps what the older fact is
about and puts another value in its place, without a "from", "not" or "instead of".

Two rules, tried after the change cues of :mod:`.changes` (which name the old value outright):

- **swap** — the two facts share what they are about (a content word that is not a common verb:
  "coffee", "hair", "shift", "library", a name) and each has a value the other lacks: "I drink my
  coffee black" / "I take milk in my coffee now" (black → milk), "My hair is blonde" / "I dyed my
  hair red", "My girlfriend is Amira" / "Amira is my wife now". The newer fact must say it is a
  change (:data:`.changes.MARKERS`, or a verb that makes one: dyed, repainted, retrained, became,
  went back to); the older value is at most two words, so a refinement that only adds detail
  ("I live in Lisbon" / "I now live in a flat in Lisbon") replaces nothing;
- **kind** — two values of one exclusive kind, where a person has one at a time: how they get to
  work (bus, train, car, bike, on foot), an operating system, hours (part or full time), where
  they work (at home, in the office), whether they rent or own, whom they live with, a season.
  "The user takes the bus to work" / "The user drives to work now". Some kinds need the facts to
  share a word besides the value (the bus and the drive are both "to work"; "I walk the dog now"
  says nothing about the commute).

Either way the two facts are about the same party (:func:`.changes.same_party`, or the newer one
is about a thing the older names: "My rent is 1100" / "The landlord put my rent up"), neither is
history or a plan, the newer is no addition ("also", "another") and no one-off event ("this
morning"). Pure; the finder reaches the older fact through :func:`probe_words` and
:func:`index_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nocturne_desktop.core.judges.conflicts.words import (
    POSS,
    SOFT_FOLDED,
    _set,
    fold,
    folded,
    is_content,
    other_party,
)

if TYPE_CHECKING:
    from nocturne_desktop.core.judges.conflicts.changes import ChangeReading

__all__ = ["CHANGE_MAKERS", "GENERIC", "MOVED", "about_its_thing", "index_words", "kinds_of",
           "moved_amount", "probe_words", "says_back", "shares_topic", "swapped", "topic"]

CHANGE_MAKERS = frozenset({
    "dyed", "cut", "repainted", "painted", "retrained", "trained", "qualified", "became",
    "become", "bought", "sold", "promoted",
    "converted", "upgraded", "downgraded", "rebranded", "renamed",
})
"""Verbs that say a value was put in place of another ("dyed my hair red")."""
_BACK = re.compile(r"\b(?:went|gone|go|going|come|came|got|moved|switched) back\b(?! from)"
                   r"|\bback (?:in|at|on|to)\b")
""""Went back to five days", "back in the office": a change back."""
_GENERIC = frozenset(fold(w) for w in _set(
    "have has had get got go goes went take takes took taking make makes made do does did "
    "use uses using live lives living work works working like likes love loves want wants "
    "need needs keep keeps manage manages managed start starts started stop pay pays paid "
    "put only just mainly mostly usually normally typically whole completely every lot "
    "bit really quite pretty very much many user thing things stuff place way favourite "
    "favorite best"))
"""Common verbs and fillers: neither what a fact is about nor its value."""
GENERIC = _GENERIC
_KIN_WORDS = _set(
    "mother mum mom father dad parents parent sister brother son daughter wife husband partner "
    "girlfriend boyfriend friend kids children child family")
"""Another person named in the newer fact: a kind it mentions may be theirs ("I bought my son
an iPhone"), a thing of theirs is not the user's ("my son's bike")."""
_MAX_OLD = 2
"""The older value has at most this many words (more is a fact of its own, not one value)."""

_KINDS: tuple[tuple[str, frozenset[str], bool], ...] = tuple(
    (name, frozenset(words.split()), shared) for name, words, shared in (
        ("commute", "bus buses train trains tube metro tram drive drives driving car cycle "
                    "cycles cycling bike walk walks walking foot", True),
        ("commuting", "bus train tube metro tram drive car cycle bike walk foot", False),
        ("system", "windows linux ubuntu macos mac macbook chromebook", False),
        ("phone", "iphone android pixel galaxy", False),
        ("language", "english german french spanish italian portuguese polish dutch welsh "
                     "japanese chinese mandarin arabic", True),
        ("hours", "part full", True),
        ("workplace", "home office remote remotely wfh site", False),
        ("tenure", "rent rents rented renting own owns bought mortgage", True),
        ("household", "alone flatmate flatmates roommate roommates housemate housemates "
                      "parents own", True),
        ("season", "spring summer autumn fall winter", True),
        ("party", "labour conservative conservatives tory tories green greens libdem libdems "
                  "liberal snp reform plaid democrat democrats republican republicans", True),
        ("faith", "christian catholic protestant anglican muslim jewish hindu buddhist sikh "
                  "atheist agnostic pagan", False),
        ("colour", "red blue green yellow black white grey gray silver brown blonde blond "
                   "purple pink orange ginger", True),
    ))
"""Exclusive kinds: (name, members as written, whether the facts must also share a word)."""
_KIN = frozenset(fold(w) for w in _set(
    "mother mum mom father dad parent sister brother son daughter wife husband partner "
    "girlfriend boyfriend fiance fiancee grandmother grandfather grandma grandpa granny "
    "nan aunt uncle cousin nephew niece sibling twin stepdad stepmum friend neighbour "
    "neighbor grandparent stepfather stepmother godmother godfather"))
"""Who a person is to others (a mother stays one on becoming a grandmother): not occupations."""
_MEMBERS = frozenset(w for _, words, _ in _KINDS for w in words)
_DWELLINGS = frozenset(fold(w) for w in _set(
    "flat apartment house home place studio terrace terraced condo bungalow cottage semi"))
"""Words for a home: two facts that name one each speak of the same thing."""


def says_back(low: str) -> bool:
    """Whether spaced lowercase tokens say a change back ("went back to", "back in the office")."""
    return _BACK.search(low) is not None


def _marked(toks: tuple[str, ...], marked: bool) -> bool:
    return marked or not CHANGE_MAKERS.isdisjoint(toks)


def topic(toks: tuple[str, ...]) -> set[str]:
    """What a clause says, folded: its content words but numbers and "user"."""
    return {w for w in folded(toks) if w != "user" and not w.startswith("#")}


def swapped(a_who: tuple[str, ...], a_pred: tuple[str, ...], a_toks: tuple[str, ...],
            b_who: tuple[str, ...], b_pred: tuple[str, ...], b_toks: tuple[str, ...],
            b_marked: bool, *, counted: bool = False) -> tuple[str, str, str] | None:
    """(kind, old value, new value) when the newer clause ``b`` swaps the older fact's value
    (module docstring), else None. Two facts that both count something (``counted``) are left
    to the amount rule but for an occupation or a kind ("an iPhone 12" / "a Pixel 8")."""
    if not _marked(b_toks, b_marked):
        return None
    shared = set(a_pred) & set(b_pred)
    if not _DWELLINGS.isdisjoint(a_pred) and not _DWELLINGS.isdisjoint(b_pred):
        shared.add("@dwelling")  # "rent a one-bedroom apartment" / "now owns their home"
    kind = _role_swap(a_toks, b_toks) or _kind_swap(a_toks, b_toks, shared,
                                                    b_marked and _KIN_WORDS.isdisjoint(b_toks))
    if kind is not None or counted or not _says_now(b_toks):
        return kind
    ta, tb = topic(a_toks), topic(b_toks)
    liked = _favourite(a_toks)
    if liked and liked == _favourite(b_toks):
        ta.add(liked)  # "my favourite month is June" / "October is my favourite month now"
        tb.add(liked)
    # what both are about: not their subject ("Maya had a headache" / "Maya lost a keyring")
    # and not a time of day ("a jazz night" / "no phone after ten at night")
    named = {w[0] for w in (a_who, b_who) if len(w) == 1}
    accessory = _for_it(b_toks)  # "new strings for the guitar": neither topic nor new value
    anchors = (ta & tb) - _GENERIC - named - SOFT_FOLDED - accessory
    if not anchors:
        return None
    old = ta - tb - _GENERIC
    if len(old) > _MAX_OLD:
        old -= set(a_who)  # "therapy session is on Thursdays at 5pm": the session is the topic
    new = tb - ta - _GENERIC - {fold(w) for w in CHANGE_MAKERS} - {"back"} - accessory
    mods_a, mods_b = _modifiers(a_toks, anchors), _modifiers(b_toks, anchors)
    for anchor, mods in mods_b.items():
        if anchor not in mods_a:  # "a nurse" / "senior nurse": a refinement, not a new value
            new -= mods
    if not old or not new or len(old) > _MAX_OLD or len(new) > _MAX_NEW:
        return None
    if all(w.startswith("#") for w in new):
        return None
    return "swap", _written(a_toks, old), _written(b_toks, new)


_FOR = frozenset({"for", "on", "onto"})


def _for_it(toks: tuple[str, ...]) -> set[str]:
    """Words the newer clause names only as what something is *for* ("bought new strings for
    the guitar", "a new case for my phone"): an accessory of the thing, not a new value of it."""
    out: set[str] = set()
    for k, t in enumerate(toks):
        if t in _FOR:
            j = k + 1
            while j < len(toks) and toks[j] in ("the", "my", "our", "a", "an"):
                j += 1
            if j < len(toks) and is_content(toks[j]):
                out.add(fold(toks[j]))
    return out - {fold(t) for k, t in enumerate(toks) if not (k and _before_is_for(toks, k))}


def _before_is_for(toks: tuple[str, ...], k: int) -> bool:
    j = k - 1
    while j >= 0 and toks[j] in ("the", "my", "our", "a", "an"):
        j -= 1
    return j >= 0 and toks[j] in _FOR


_MAX_NEW = 5
"""The newer value has at most this many words (more is a story, not a value put in place)."""
_NOW = _set("now nowadays currently anymore instead switched changed became become actually "
            "correction lately moved moving")
_NOW_SAID = re.compile(r"\b(?:these days|any more|no longer|after all|from now on|turns out|"
                       r"for good|come round to|came round to|not going back)\b")


def _says_now(toks: tuple[str, ...]) -> bool:
    """Whether a clause says what holds now instead ("now", "these days", "switched", a verb
    that puts a value in place): "since" or "after" alone says when, not that it changed
    ("friends since primary school")."""
    if not _NOW.isdisjoint(toks) or not CHANGE_MAKERS.isdisjoint(toks):
        return True
    spaced = " ".join(toks)
    return _BACK.search(spaced) is not None or _NOW_SAID.search(spaced) is not None


def _modifiers(toks: tuple[str, ...], anchors: set[str]) -> dict[str, set[str]]:
    """Per anchor word, the folded word right before it ("senior" in "senior nurse"): a newer
    fact that only adds one refines the older ("works as a nurse" / "promoted to senior
    nurse"), unless the older has one there too ("night shift" / "day shift")."""
    out: dict[str, set[str]] = {}
    for k in range(len(toks) - 1):
        anchor = fold(toks[k + 1])
        if anchor in anchors and is_content(toks[k]):
            out.setdefault(anchor, set()).add(fold(toks[k]))
    return out


_IS_ROLE = re.compile(r"\b(?:am|is|are|works? as|job is|working as) (?:an?|the) ([a-z ]+?)"
                      r"(?= at| for| in| on| of| with| and| but| since| now|$| [,;.!?])")
_NEW_ROLE = re.compile(r"\b(?:became|become|becoming|retrained as|trained as|qualified as|"
                       r"requalified as|got a job as|works? as|promoted to|now an?|am an?|is an?)"
                       r" (?:an?|the )?([a-z ]+?)(?= at| for| in| with| and| but| this| last|"
                       r" since| now|$| [,;.!?])")
_ROLE_ENDS = ("er", "or", "ist", "ian", "ant", "ent", "eer", "ect", "ive", "ic")
_ROLE_WORDS = _set(
    "nurse chef doctor lawyer medic pilot clerk cook judge vet surgeon barista nanny carer "
    "midwife paramedic officer analyst consultant student intern apprentice freelancer "
    "retiree pensioner accountant architect dentist plumber electrician mechanic")
_NOT_ROLES = _set(
    "member fan owner supporter believer lover volunteer customer user reader player "
    "beginner regular smoker drinker vegetarian vegan catholic christian")


def _role(phrase: str) -> str | None:
    words = phrase.split()
    if not words or len(words) > 3:
        return None
    head = words[-1]
    if head in _NOT_ROLES or fold(head) in _KIN:
        return None
    if head in _ROLE_WORDS or (len(head) > 4 and head.endswith(_ROLE_ENDS)):
        return phrase
    return None


def _role_swap(a_toks: tuple[str, ...], b_toks: tuple[str, ...]) -> tuple[str, str, str] | None:
    """"I'm a teacher" / "I retrained as a nurse": the older fact's occupation, and another
    one the newer fact says the person took up."""
    ma = _IS_ROLE.search(" ".join(a_toks))
    old = _role(ma.group(1)) if ma else None
    if old is None:
        return None
    for mb in _NEW_ROLE.finditer(" ".join(b_toks)):
        new = _role(mb.group(1))
        if new is not None and fold(new.split()[-1]) != fold(old.split()[-1]):
            return "role", old, new
    return None


def _favourite(toks: tuple[str, ...]) -> str:
    """The kind of thing a fact names as a favourite ("month" in "my favourite month"), or ""."""
    for k, t in enumerate(toks[:-1]):
        if t in ("favourite", "favorite", "best"):
            return "=" + toks[k + 1]
    return ""


def _kind_swap(a_toks: tuple[str, ...], b_toks: tuple[str, ...], shared: set[str],
               said: bool) -> tuple[str, str, str] | None:
    """Two members of one exclusive kind; a kind that needs no shared word needs the newer
    fact to say it is a change and to name nobody else ("I bought my son an iPhone")."""
    if _MEMBERS.isdisjoint(a_toks) or _MEMBERS.isdisjoint(b_toks):
        return None
    for name, members, needs_shared in _KINDS:
        ma, mb = _members(a_toks, members, name), _members(b_toks, members, name)
        if ma & mb and len(mb) > 1:  # "switched to a Pixel 8 after the iPhone screen cracked"
            mb = _members(_switched_to(b_toks), members, name) or mb
        if not ma or not mb or ma & mb:
            continue
        if needs_shared and not shared - _MEMBERS_FOLDED:
            continue
        if not needs_shared and not said:
            continue
        return name, " ".join(sorted(ma)), " ".join(sorted(mb))
    return None


_MEMBERS_FOLDED = frozenset(fold(w) for w in _MEMBERS)


_COMMUTE_SAID = re.compile(
    r"\b(?:commute|commutes|commuting)\b|\b(?:to|into) work\b|\bby (?:bus|train|tube|metro|tram|"
    r"car|bike|bicycle)\b|\b(?:cycle|cycles|drive|drives|walk|walks|bike|bikes|bus|train|tube|"
    r"tram|metro) in\b")
_MODE = {"buses": "bus", "trains": "train", "drives": "drive", "driving": "drive",
         "cycles": "cycle", "cycling": "cycle", "bike": "cycle", "bikes": "cycle",
         "bicycle": "cycle", "walks": "walk", "walking": "walk", "foot": "walk", "car": "drive"}


_TO_VERBS = _set("switched moved changed upgraded went gone swapped converted")


def _switched_to(toks: tuple[str, ...]) -> tuple[str, ...]:
    """The words after a change verb's "to" up to the end of its phrase ("switched to a Pixel 8
    after …" → "a pixel 8"): where the change went; () when no change verb says "to"."""
    for k, t in enumerate(toks):
        if t in _TO_VERBS:
            rest = toks[k + 1:]
            if rest[:1] == ("over",):
                rest = rest[1:]
            if rest[:1] == ("to",):
                end = next((j for j, w in enumerate(rest[1:], 1) if w in _TO_END), len(rest))
                return rest[1:end]
    return ()


_TO_END = frozenset({"after", "because", "since", "when", "but", "and", "as", ",", ".", ";"})


def _members(toks: tuple[str, ...], members: frozenset[str], name: str) -> set[str]:
    if name == "commuting":  # how the person gets to work, said as a commute
        if not _COMMUTE_SAID.search(" ".join(toks)):
            return set()
        return {_MODE.get(t, t) for t in toks if t in members or t in _MODE}
    found = {fold(t) for t in toks if t in members}
    if name == "household" and "own" in toks:
        k = toks.index("own")
        if toks[max(0, k - 2):k] not in (("my",), ("their",), ("on", "my"), ("on", "their"),
                                         ("our",)) and toks[k - 1:k] not in (("my",), ("their",)):
            found.discard(fold("own"))
    if name == "tenure" and "own" in toks:
        k = toks.index("own")
        if toks[k + 1:k + 2] in (("car",), ("business",), ("company",)) or toks[k - 1:k] in (
                ("my",), ("their",), ("our",), ("his",), ("her",)):
            found.discard(fold("own"))
    return found


def shares_topic(a_toks: tuple[str, ...], b_toks: tuple[str, ...]) -> bool:
    """Whether two clauses share a word that is what they are about (not a common verb)."""
    return bool((topic(a_toks) & topic(b_toks)) - _GENERIC)


def kinds_of(toks: Iterable[str]) -> set[str]:
    """The exclusive kinds a fact's words belong to (what it is indexed by for :func:`swapped`)."""
    seen = set(toks)
    return {name for name, members, _ in _KINDS if not members.isdisjoint(seen)}


KIND_KEY = "@kind"
ROLE_KEY = "@role"


def index_words(toks: tuple[str, ...]) -> list[str]:
    """Extra index entries of an older fact: one per exclusive kind it mentions, and
    ``@role`` when it states an occupation."""
    out = [] if _MEMBERS.isdisjoint(toks) else [f"{KIND_KEY}:{k}" for k in sorted(kinds_of(toks))]
    if _ROLE_HINT.intersection(toks):
        m = _IS_ROLE.search(" ".join(toks))
        if m is not None and _role(m.group(1)) is not None:
            out.append(ROLE_KEY)
    return out


_ROLE_HINT = frozenset({"am", "is", "are", "as", "job"})


def probe_words(toks: tuple[str, ...], marked: bool) -> list[str]:
    """What a newer clause probes for: its topic words and its kinds, when it says a change."""
    if not _marked(toks, marked):
        return []
    out = sorted(topic(toks) - _GENERIC)
    out += [w for w in index_words(toks) if w != ROLE_KEY]
    spaced = " ".join(toks)
    if any(_role(m.group(1)) for m in _NEW_ROLE.finditer(spaced)):
        out.append(ROLE_KEY)
    return out


def _written(toks: tuple[str, ...], words: set[str]) -> str:
    return " ".join(t for t in toks if t != POSS and (is_content(t) or t[:1].isdigit())
                    and fold(t) in words) or " ".join(sorted(words))


def about_its_thing(a: ChangeReading, b: ChangeReading) -> bool:
    """Whether the newer clause is about a thing of the user's that the older fact names: the
    cat it calls Mochi ("Mochi died"), the gym it pays ("the gym went up"), the rent or the
    favourite it states ("the landlord put my rent up", "autumn is my favourite season now")."""
    if a.who.who[:1] != ("user",):
        return False
    if b.toks[1:2] in (("is",), ("are",)) and fold(b.toks[0]) in a.predicate:
        return True  # "My girlfriend is Amira" / "Amira is my wife now"
    if other_party(b.who.who) or other_party(a.who.who):
        return False  # "My partner is Alex" / "Alex got promoted": news of Alex, not of the user
    named = [w for w in b.who.who if w != "user"]
    if named and b.who.who[:1] != ("user",) and set(named) <= a.words:
        return True
    low = " ".join(b.toks)
    own = a.who.who[1:]
    if own and set(own) <= b.words and any(f"{p} {own[0]}" in low for p in ("my", "our", "user 's")):
        return True
    return any(fold(b.toks[k + 1]) in a.words and b.toks[k + 1] not in _KIN_WORDS
               for k, t in enumerate(b.toks[:-1]) if t in ("my", "our"))


MOVED = _set("up down raised upped rose risen fell increased decreased cut lowered bump bumped "
             "hiked")
"""Words that say an amount moved ("put my rent up to 1,100", "down to 84 kg")."""


def moved_amount(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """One amount on each side, a word they share besides it, the newer saying it moved ("My
    rent is 950 a month" / "the landlord put my rent up to 1,100 from this month"): the units
    agree where both have one."""
    if len(a.numbers) != 1 or len(b.numbers) != 1 or MOVED.isdisjoint(b.toks):
        return None
    x, y = a.numbers[0], b.numbers[0]
    if x.value == y.value or (x.unit and y.unit and x.unit != y.unit) or "age" in (x.unit, y.unit):
        return None
    if not shares_topic(a.toks, b.toks):
        return None
    return "amount", x.said, y.said
