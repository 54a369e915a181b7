"""Life states (S-WORDS-1): a few facts of the world that a change statement leaves unsaid,
read as what they end.

- **opposites** — states that exclude each other ("I eat meat" / "I'm vegetarian now", "I'm
  single" / "been seeing someone since the summer", "a night owl" / "a morning person");
- **denied, had at last** — "no pets" / "we got a rabbit", "I don't drink" / "started having
  the odd glass of wine" (a kind of the denied thing); and a kind of what is now denied ("I'm a
  Methodist" / "not religious any more");
- **household** — living alone ends when someone moves in or the user moves in with someone;
  living with someone ends when they, or the user, move out ("Both flatmates moved out", "Mum
  moved into a care home");
- **births and counts** — a count of children ends with a baby of a higher number ("our third
  baby arrived"), a pregnancy with the birth, a count of anything with more of it got ("adopted
  a third dog");
- **died** — a pet or a relative the older fact names ("RIP nugget", "Nan passed away");
- **handed over** — someone else does the user's habit now ("my partner's taken over the
  morning dog walks");
- **clock** — the hour of going to bed or getting up said again with another hour and a sign
  of change ("asleep by half nine most nights now");
- **a team's size, a name, whom one reports to** — "eleven direct reports", "call me Alex",
  "took my wife's surname … so it's Nowak now", "now reports to Raj";
- **awaited** — what the user waited or saved for, had or bought ("on the waiting list for a
  hip replacement" / "had the hip done");
- **school and work** — a school year or stage begun, night shifts then days, a new range of
  working days or a shorter week, studies finished ("passed my viva"), a job after none, out
  of hospital: :mod:`.schoolwork`.

The caller (:func:`.changes.judge_change`) checks the party for the rules of the same party;
a household, a birth, a death and a habit handed over are news of another and check it here.
Each rule keeps the change guards (no history, no plan, no addition) and runs only on a clause
holding one of its words (:data:`_TRIGGERS`). Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nocturne_desktop.core.judges.conflicts import schoolwork
from nocturne_desktop.core.judges.conflicts.words import (
    NUMBER_WORDS,
    _set,
    first_group,
    fold,
    is_content,
    other_party,
    said_plainly,
)

if TYPE_CHECKING:
    from nocturne_desktop.core.judges.conflicts.changes import ChangeReading

__all__ = ["OPPOSITE_WORDS", "SIGNS", "acquired", "denied_kind", "index_words", "kind_probes",
           "opposite", "opposite_probes", "probe_words", "state_change"]

STATE_KEY = "@state"

# --- opposites ------------------------------------------------------------------------------

_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str], bool], ...] = tuple(
    (frozenset(map(fold, old.split())), frozenset(map(fold, new.split())), copula)
    for old, new, copula in (
        ("eat meat", "vegetarian", True), ("eat meat", "vegan", True),
        ("vegetarian", "eat meat", False), ("vegan", "eat meat", False),
        ("singl", "marri", False), ("bachelor", "marri", False), ("marri", "singl", True),
        ("marri", "divorc", False),
        ("engag", "marri", False),
        ("eat dairy", "dairy free", True),
        ("pescatarian", "eat chicken", False), ("pescatarian", "eat meat", False),
        ("vegetarian", "eat chicken", False), ("vegetarian", "eat fish", False),
        ("vegan", "eat chicken", False), ("vegan", "eat fish", False),
        ("vegan", "eat egg", False), ("vegan", "eat chees", False),
        ("eat meat", "went vegan", False), ("eat meat", "went vegetarian", False),
        ("eat meat", "gone vegan", False), ("eat meat", "gone vegetarian", False),
        ("singl", "dat", False),
        ("singl", "girlfriend", True), ("singl", "boyfriend", True),
        # a diet that narrows or widens is another diet
        ("vegetarian", "vegan", False), ("vegetarian", "pescatarian", False),
        ("vegan", "vegetarian", False), ("pescatarian", "vegetarian", False),
        ("vegetarian", "eat fish", False),
        # in a relationship, said the ways people say it
        ("single", "seeing someone", False), ("single", "made official", False),
        ("single", "fiance", False), ("single", "partner", True),
        # when one is at one's best
        ("night owl", "morn person", False), ("night owl", "earli riser", False),
        ("night owl", "earli bird", False), ("morn person", "night owl", False),
        ("earli riser", "night owl", False), ("best work morn", "night owl", False),
        ("onli child", "sister", False), ("onli child", "brother", False),
        ("rent", "homeowner", False), ("rent", "homeowners", False),
    ))
"""States that exclude each other (old words, new words, the new one said with is/am/are):
a few facts of the world that a change statement often leaves implicit ("I eat meat" / "I'm
vegetarian now")."""
_DATING = frozenset({fold("dating")})
_A_DATE = re.compile(r"\b(?:a|one|first|second|third|blind|another) date\b")
OPPOSITE_WORDS = frozenset(w for old, new, _ in _OPPOSITES for w in old | new)


def opposite(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """An opposite state in the newer clause (old words in ``a``'s predicate, new in ``b``'s)."""
    if not (OPPOSITE_WORDS.intersection(a.predicate)
            and OPPOSITE_WORDS.intersection(b.predicate)):
        return None
    pa, pb = set(a.predicate), set(b.predicate)
    for old, new, copula in _OPPOSITES:
        if old <= pa and new <= pb and not (new <= pa):
            if copula and not b.copula:
                continue
            if new == _DATING and _A_DATE.search(" ".join(b.toks)):
                continue  # "went on a date with a guy from hinge": one evening, not dating
            return "opposite", " ".join(sorted(old)), " ".join(sorted(new))
    return None


def opposite_probes(predicate: tuple[str, ...]) -> list[str]:
    """The word an older fact must hold for each opposite state a newer clause states."""
    said = set(predicate)
    return [min(old) for old, new, _ in _OPPOSITES if new <= said]


# --- what was denied, had at last -----------------------------------------------------------

_KINDS_OF = {fold(k): frozenset(fold(w) for w in ws.split()) for k, ws in (
    ("pet", "dog puppy cat kitten rabbit bunny hamster guinea gerbil rat mouse ferret parrot "
            "budgie tortoise turtle snake lizard gecko fish goldfish greyhound spaniel labrador "
            "terrier beagle collie poodle retriever pony horse chicken chickens hen hens"),
    ("pets", "dog puppy cat kitten rabbit bunny hamster guinea gerbil parrot budgie tortoise "
             "snake lizard gecko fish greyhound spaniel labrador terrier beagle collie"),
    ("alcohol", "wine beer beers pint pints cider gin vodka whisky whiskey rum prosecco "
                "champagne cocktail cocktails booze lager ale"),
    ("coffee", "espresso espressos latte lattes cappuccino cappuccinos americano flat"),
    ("meat", "chicken beef pork bacon steak lamb burger burgers sausage sausages ham"),
    ("car", "car hatchback suv"),
    ("religious", "christian catholic protestant anglican muslim jewish hindu buddhist sikh "
                  "methodist baptist"),
    ("drink", "wine beer beers pint pints cider gin vodka whisky whiskey rum prosecco lager ale"),
)}
"""A denied thing and the kinds of it ("no pets" / "got a rabbit")."""
_ACQUIRED = re.compile(r"\b(?:got|get|bought|buy|adopted|adopt|brought home|rescued|picked up|"
                       r"started|starting|having|take|takes|taking|drinking|eating|flew|flying|"
                       r"booked|welcomed|my first|our first)\b")


_ONCE = re.compile(r"\b(?:today|tonight|yesterday|last night|this (?:morning|afternoon|evening|"
                   r"weekend)|at the (?:party|wedding|pub|bar)|just the once|one off)\b")


def acquired(denied: frozenset[str], b: ChangeReading) -> tuple[str, str, str] | None:
    """"I don't have any pets" / "We got a rabbit!": the newer clause says the user got,
    started or did what the older one denied, or a kind of it."""
    low = " ".join(b.toks)
    if b.negated or _ACQUIRED.search(low) is None or _ONCE.search(low):
        return None  # "had a beer at the wedding last night": once, not a habit begun
    said = {fold(t) for t in b.toks if is_content(t)}
    for word in denied:
        if word in said and word not in _VERBS:
            return "affirmed", word, low
        kinds = _KINDS_OF.get(word, frozenset())
        if kinds & said:
            return "affirmed", word, low
    return None


def denied_kind(said: set[str], denied: frozenset[str]) -> str | None:
    """The word of the older fact's predicate (``said``) that is a kind of what the newer one
    denies: "I have a dog" / "no pets any more", "I'm a Catholic" / "no longer religious"."""
    for word in denied:
        found = said & _KINDS_OF.get(word, frozenset())
        if found:
            return min(found)
    return None


def kind_probes(denied: frozenset[str]) -> list[str]:
    """The kinds of what a newer clause denies, for the finder to reach the older fact."""
    return sorted(w for word in denied for w in _KINDS_OF.get(word, ()))


_VERBS = frozenset(fold(w) for w in _set("have has own owns drink drinks eat eats do does get "
                                         "use uses take takes go goes touch touches"))


# --- household ------------------------------------------------------------------------------

_ALONE = re.compile(r"\b(?:live|lives|living)\s+(?:alone|on (?:my|their|his|her) own|by "
                    r"(?:myself|themselves|himself|herself))\b")
_WITH = re.compile(r"\b(?:live|lives|living|share|shares|sharing)\b[^.;!?]*?\bwith\b|"
                   r"\b(?:lives|live) with (?:us|me|the user)\b|\b(?:lives|living) at home\b|"
                   r"\b(?:lodger|au pair|staying with (?:us|me))\b")
_MOVED_IN = re.compile(r"\bmoved in\b|\bmoving in\b|\bmove in\b|\bthe two of us\b|"
                       r"\bliving together\b|\bmoved in together\b|"
                       r"\b(?:came|come|moved|brought \w+(?: \w+)?) to live with (?:us|me)\b")
_MOVED_OUT = re.compile(r"\bmoved out\b|\bmoving out\b|\bplace to (?:myself|ourselves)\b|"
                        r"\b(?:got|found) (?:the keys to )?(?:a|his|her|their|my) (?:own )?"
                        r"(?:place|flat|house|apartment)\b|\bfirst night in my own place\b|"
                        r"\bmoved into (?:halls|barracks|(?:his|her|their) own)\b|"
                        r"\b(?:went|gone|moved) (?:back )?(?:home to|to live with|in with)\b|"
                        r"\b(?:gone|went|moved) back to (?:his|her|their) own place\b|"
                        r"\b(?:living|live|lives) (?:alone|on (?:my|their) own|by myself)\b|"
                        r"\bmoved into a (?:care|nursing) home\b|\bwent into a (?:care|nursing) "
                        r"home\b")


_LIVES_IN = re.compile(r"\b(?:live|lives|living)\b")
_IN_WITH_US = re.compile(r"\bmoved in with (?:us|me)\b|\bmoving in with (?:us|me)\b|\blives with "
                         r"(?:us|me) now\b")
_THEIR_OWN = re.compile(r"\bmoved in with (?:her|his|their)\b")


_TO_LIVE_WITH_US = re.compile(r"\b(?:brought|bringing|moved|took|taken) \w+(?: \w+)? to live with "
                              r"(?:us|me)\b")


def _household(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """The user lived alone and someone moved in (or the user moved in with someone), or lived
    with someone who, or the user, moved out: the mover is the user or one the older names."""
    la, lb = " ".join(a.toks), " ".join(b.toks)
    mine = b.who.who[:1] == ("user",)
    if (_ALONE.search(la) and a.who.who == ("user",) and _MOVED_IN.search(lb)
            and mine and not _THEIR_OWN.search(lb)):
        return "household", "alone", lb  # "my girlfriend moved in", not "… in with her boyfriend"
    theirs = b.who.who in (a.who.who, a.who.who[1:]) or (  # "we brought mam up to live with us"
        b.who.who == ("user",) and set(a.who.who[1:]) <= {fold(t) for t in b.toks})
    if (len(a.who.who) > 1 and theirs and _LIVES_IN.search(la)
            and (_IN_WITH_US.search(lb) or _TO_LIVE_WITH_US.search(lb))):
        return "household", "lives apart", lb  # "mum lives in Cork" / "mum moved in with us"
    if _WITH.search(la) and _MOVED_OUT.search(lb):
        mover = set(b.who.who) | {fold(t) for t in b.toks[:b.who.end + 2]}
        if b.who.who == ("user",) or (mover - {"user"}) & a.words or _near_mate(a, b):
            return "household", "lives with", lb
    return None


def _near_mate(a: ChangeReading, b: ChangeReading) -> bool:
    """"share a flat with two mates" / "both flatmates moved out": the same housemates."""
    mates = {"mate", "flatmat", "housemat", "roommat"}
    return bool(mates & {fold(t) for t in a.toks}) and bool(mates & {fold(t) for t in b.toks})


# --- births ---------------------------------------------------------------------------------

_BORN = re.compile(r"\b(?:arrived|born|welcomed|had the baby|had a baby|had our baby|gave "
                   r"birth|she's here|he's here|she is here|he is here)\b")
_OFFSPRING = {fold(w): k for k, ws in (
    ("child", "child children kid kids baby babies son sons daughter daughters"),
    ("grandchild", "grandchild grandchildren grandkid grandkids grandson granddaughter")
) for w in ws.split()}


def _brood(r: ChangeReading) -> dict[str, float]:
    """How many children or grandchildren a fact counts ("two children", "third baby")."""
    out: dict[str, float] = {}
    for k, t in enumerate(r.toks):
        kind = _OFFSPRING.get(fold(t))
        if kind is None:
            continue
        for near in (r.toks[k - 1:k], r.toks[k + 1:k + 3]):
            for w in near:
                n = NUMBER_WORDS.get(w)
                if n is None and w.isdigit():
                    n = int(w)
                if n is not None:
                    out.setdefault(kind, float(n))
    return out


_GREW = re.compile(r"\b(?:adopted|got|bought|welcomed|arrived|born|rescued|brought home|"
                   r"took in|hatched)\b")


def _grew(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"User has two dogs" / "we adopted a third dog": a higher count of the same thing got."""
    if not (a.numbers and b.numbers) or _GREW.search(" ".join(b.toks)) is None:
        return None
    for n in a.numbers:
        for m in b.numbers:
            if n.unit and n.unit == m.unit and n.unit != "age" and m.value > n.value:
                return "amount", n.said, m.said
    return None


def _births(a: ChangeReading, b: ChangeReading, whole: str) -> tuple[str, str, str] | None:
    lb = " ".join(b.toks)
    if not _BORN.search(whole):  # "with the twins born in June, I've got four grandkids now"
        return None
    who = b.who.who
    newborn = a.who.who == ("user",) and len(who) == 1 and not other_party(who)  # "Ada was born"
    mine = fold(who[-1]) in _OFFSPRING and len(who) <= 2  # "our baby", not "my cousin's baby"
    if not ((who[:1] == ("user",) and not other_party(who)) or who == a.who.who or newborn
            or set(who) <= a.words or mine):
        return None  # "my sister had the baby": hers
    if "pregnant" in a.toks or "expecting" in a.toks:
        return "born", "pregnant", lb
    had, new = _brood(a), _brood(b)
    for kind, n in new.items():
        if kind in had and n > had[kind]:
            return "born", f"{had[kind]:g} {kind}", lb
    return None


# --- clock ----------------------------------------------------------------------------------

_BED = re.compile(r"\b(?:bed|bedtime|asleep|lights out|sleep by|turn in)\b")
_RISE = re.compile(r"\b(?:get up|gets up|getting up|got up|wake|wakes|waking|woke|up at|out of "
                   r"bed|alarm)\b")
_HOUR = re.compile(r"\b(?:(half|quarter past|quarter to) )?(\d{1,2}(?:[:.]\d{2})?|" +
                   "|".join(w for w, n in NUMBER_WORDS.items() if 1 <= n <= 12) +
                   r"|midnight|noon)(?: ?(am|pm|a m|p m|ish|o'clock))?\b")
_CHANGED = re.compile(r"\b(?:now|these days|lately|nowadays|since|most nights|become|turned|"
                      r"started|moved|switched|been|new)\b")


def _hours(low: str) -> set[float]:
    out: set[float] = set()
    for m in _HOUR.finditer(low):
        part, num, _ = m.groups()
        if num in ("midnight", "noon"):
            h = 12.0
        elif num[:1].isdigit():
            hh, _, mm = num.replace(".", ":").partition(":")
            h = float(hh) + (float(mm) / 60 if mm else 0.0)
        else:
            h = float(NUMBER_WORDS[num])
        if part == "half":
            h += 0.5  # "half nine" is 9:30 in British speech: half past
        elif part == "quarter past":
            h += 0.25
        elif part == "quarter to":
            h -= 0.25
        if h > 24 or (not m.group(3) and not part and num[:1].isdigit() and ":" not in num
                      and h > 12):
            continue
        out.add(h % 12)
    return out


def _clock(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    la, lb = " ".join(a.toks), " ".join(b.toks)
    for habit in (_BED, _RISE):
        if habit.search(la) and habit.search(lb) and _CHANGED.search(lb):
            old, new = _hours(la), _hours(lb)
            if old and new and not old & new:
                return "hour", la, lb
    return None


_SLEEP_WORDS = _set("lights bedtime alarm")
_HABIT_LEADS = {("usually",), ("normally",), ("always",), ("bed",), ("bedtime",), ("up",)}
"""How a note of the user's habit may open, with no subject ("usually in bed by 11ish")."""
_TAKEN = re.compile(r"\bseeing (?:someone|somebody|a (?:guy|girl|man|woman|lad)|\w+ since)\b|"
                    r"\bmade it official\b|\bgot together\b|\bproposed\b|\bengaged\b|"
                    r"\bmy (?:girlfriend|boyfriend|fiance|fiancee)\b|\bin a relationship\b")


def _taken(a: ChangeReading, lb: str) -> tuple[str, str, str] | None:
    """"I'm single" / "been seeing someone since the summer", "me and jake made it official"."""
    if "single" in a.toks and _TAKEN.search(lb) and "not single" not in " ".join(a.toks):
        return "opposite", "single", lb
    return None


_DIED = re.compile(r"\b(?:rip|put to sleep|passed away|passed on|put (?:\w+ )?down|buried|"
                   r"rainbow bridge|died|no longer with us|lost (\w+))\b")
_NAMED = re.compile(r"\b(?:called|named) (\w+)|^(\w+) , my\b|, (\w+) \.?$|"
                    r"\b(?:dog|cat|puppy|kitten|rabbit|horse|pony|hamster|parrot|tortoise|budgie) "
                    r"(\w+) (?:is|was|'s)\b")


def _died(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"I have a cat called Biscuit" / "we lost biscuit in march", "RIP nugget": the one the
    older fact names (by name, or as the user's relative) died."""
    la, lb = " ".join(a.toks), " ".join(b.toks)
    d = _DIED.search(lb)
    if d is None:
        return None
    name = first_group(_NAMED.search(la))
    said = {fold(t) for t in b.toks}
    if name is not None and fold(name) in said and (d.group(1) is None
                                                    or fold(d.group(1)) == fold(name)):
        return "died", name, lb
    kin = a.who.who[1:] if other_party(a.who.who) else ()
    mine = bool(kin) and b.who.who in (a.who.who, (fold(kin[-1]),))
    if kin and mine and d.group(1) is None and fold(kin[-1]) in said:
        return "died", kin[-1], lb  # "Nan passed away" for "my grandmother lives in Bath"
    return None


_TAKEN_OVER = re.compile(r"\btaken over (?:the |my |our )?([^.;!?]+)|\btook over (?:the |my |"
                         r"our )?([^.;!?]+)")
_NOT_THE_HABIT = frozenset(fold(w) for w in _set(
    "every day morning mornings evening evenings night nights week before after work one ones"))


def _handed_over(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"I walk the dog every morning" / "my partner's taken over the morning dog walks": someone
    else does the user's habit now."""
    if a.who.who != ("user",) or b.who.who == ("user",):
        return None
    m = _TAKEN_OVER.search(" ".join(b.toks))
    if m is None:
        return None
    what = {fold(t) for t in (m.group(1) or m.group(2)).split() if is_content(t)}
    shared = (what & a.words) - _NOT_THE_HABIT
    if shared:
        return "handed over", " ".join(sorted(shared)), m.group(0)
    return None


_PARTED_END = (r"(?:(?:are|r|have|were) )?(?:(?:now|officially|finally) )?(?:done|over|finished|through|"
               r"separated|divorced|split up|called it (?:quits|a day)|"
               r"went (?:our )?separate ways|parted ways|parted)\b(?! with)")
_DONE_WITH = re.compile(r"\b(?:me|i|she|he|they|user) and (\w+) " + _PARTED_END + r"|"
                        r"\b(\w+) and (?:i|me) " + _PARTED_END + r"|\b(\w+) ended (?:things|it)\b")
""""me and tom are done", "nadia and i called it a day", "she and Femi parted ways", "aisha
ended things": the user parted from the one named."""


def _done_with(a: ChangeReading, lb: str) -> tuple[str, str, str] | None:
    """"The user's partner is called Tom" / "me and tom are done": the user parted from them."""
    m = _DONE_WITH.search(lb)
    name = first_group(m)
    if m is not None and name is not None and fold(name) in a.words and a.who.who[:1] == ("user",):
        return "parted", name, m.group(0)
    return None


# --- counted slots, names, reports, what was awaited ----------------------------------------

_TEAM = re.compile(r"\bteam of (\w+)|\bmanag\w* (\w+) (?:people|staff)|\b(\w+) (?:direct )?"
                   r"reports\b|\b(\w+) (?:people|staff) (?:reporting|report) to me\b")


def _team(low: str) -> float | None:
    m = _TEAM.search(low)
    if m is None:
        return None
    word = next(g for g in m.groups() if g)
    n = NUMBER_WORDS.get(word)
    return float(n) if n is not None else (float(word) if word.isdigit() else None)


_NAME = re.compile(r"\b(?:surname|last name|first name|name|preferred name|pronouns|nickname)"
                   r" (?:is|are) (\w+)")
_NEW_NAME = re.compile(r"\b(?:call me|go by|goes by|took (?:my|their|his|her) \w+ 's "
                       r"(?:sur)?name)\b")
_NEW_IS = re.compile(r"\b(?:i am|it is|i m|it s) (\w+) now\b|\bcall me (\w+)|\bgo by (\w+)")
_BOSS = re.compile(r"\b(?:manager|boss|line manager|supervisor) is (\w+)")
_REPORT_TO = re.compile(r"\breports? to (\w+)|\breporting to (\w+)|\bnew (?:manager|boss) is "
                        r"(?:a |an |the )?(?:(?:guy|woman|man|lady|bloke|girl) (?:called|named) )?"
                        r"(\w+)")
_AWAITED = re.compile(r"\b(?:waiting list for|waiting for|saving up for|saving for|on the "
                      r"waiting list)\b")
_HAD = re.compile(r"\b(?:had|got|bought|completed on|completed|picked up|collected)\b")


def _counted(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    la, lb = " ".join(a.toks), " ".join(b.toks)
    old, new = _team(la), _team(lb)
    if old is not None and new is not None and old != new:
        return "amount", f"team of {old:g}", lb
    return None


def _named(a: ChangeReading, lb: str) -> tuple[str, str, str] | None:
    """A name, surname or pronouns said anew, or whom the user reports to (``lb``: the whole
    newer fact, whose clauses may say the change and the new name apart)."""
    la = " ".join(a.toks)
    m = _NAME.search(la)
    if m is not None and _NEW_NAME.search(lb):
        new = first_group(_NEW_IS.search(lb))
        if new is not None and fold(new) != fold(m.group(1)):
            return "name", m.group(1), lb
    boss = _BOSS.search(la)
    if boss is not None:
        new = first_group(_REPORT_TO.search(lb))
        if new is not None and fold(new) != fold(boss.group(1)) and is_content(new):
            return "reports", boss.group(1), lb
    return None


def _awaited(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    la, lb = " ".join(a.toks), " ".join(b.toks)
    m = _AWAITED.search(la)
    if m is None or _HAD.search(lb) is None:
        return None
    wanted = {fold(t) for t in a.toks[len(la[:m.end()].split()):] if is_content(t)}
    shared = wanted & {fold(t) for t in b.toks if is_content(t)}
    if shared - {"list", "wait", "sav"}:
        return "had", " ".join(sorted(shared)), lb
    return None


# --- the rule -------------------------------------------------------------------------------

SIGNS = _set(
    "hired joined job contract discharged hospital taken took year freshman sophomore "
    "junior senior days off rota nights passed graduated degree dropped withdrawn withdrew "
    "finished brought adopted rescued bought got get started having taking drinking eating "
    "flew booked first rip sleep put buried rainbow died lost seeing official together "
    "proposed engaged girlfriend boyfriend fiance relationship welcomed hatched moved "
    "moving move two out arrived born had gave here bed bedtime asleep lights up wake wakes "
    "waking woke alarm reports reporting report call go goes completed picked collected")
"""Tokens without which a fact ends no life state (its clauses are read only then)."""


def state_change(a: ChangeReading, b: ChangeReading, whole: tuple[str, ...],
                 same: bool) -> tuple[str, str, str] | None:
    """(kind, old value, the newer clause's words) when the newer clause ``b`` (of the newer
    fact whose tokens are ``whole``) ends the state the older fact states (module docstring),
    else None. ``same``: the clause is of the older fact's party; a household and a birth are
    news of another ("my girlfriend moved in"), the hour of sleep may lead its clause ("lights
    out by 10 these days") and the user's new manager is the user's news."""
    if a.past or a.tentative or b.past or b.tentative or b.added:
        return None
    found = _ended_state(a, b, " ".join(whole), same)
    if found is None or found[0] in _PART:
        return found
    return found[0], said_plainly(a.toks), found[2]  # the whole older state ended


_PART = frozenset({"amount"})
"""Kinds that change a part of the older fact (a count), not the whole state it states."""


_TRIGGERS = {name: _set(words) for name, words in (
    ("household", "moved moving move two together living live lives place myself ourselves care "
                  "nursing got found own halls barracks went gone"),
    ("born", "arrived born welcomed had gave here"),
    ("died", "rip sleep passed put buried rainbow died longer lost"),
    ("over", "taken took"),
    ("parted", "done over finished through quits ways called separated divorced split parted "
               "ended"),
    ("clock", "bed bedtime asleep lights sleep turn get gets getting got wake wakes waking woke up "
              "out alarm"),
    ("team", "team reports people staff reporting"),
    ("named", "call go goes took reports report reporting new"),
    ("awaited", "had got bought completed picked collected"),
    ("grew", "adopted got bought welcomed arrived born rescued brought took hatched"),
    ("taken", "seeing official together proposed engaged girlfriend boyfriend fiance fiancee "
              "relationship"),
    ("year", "year freshman sophomore junior senior " + schoolwork.STAGE_WORDS),
    ("days", "days day monday tuesday wednesday thursday friday saturday sunday mondays tuesdays "
             "wednesdays thursdays fridays saturdays sundays week weeks off"),
    ("studies", "passed graduated degree finished dropped withdrawn withdrew"),
    ("hospital", "discharged hospital home"),
    ("hired", "started start starting job hired took joined signed first"),
)}
"""The words without one of which a newer clause cannot end each state (most clauses have
none, and the state's patterns are not run)."""


def _ended_state(a: ChangeReading, b: ChangeReading, lb: str,
                 same: bool) -> tuple[str, str, str] | None:
    seen, said = set(b.toks), set(lb.split())

    def may(name: str, words: set[str] = seen) -> bool:
        return not _TRIGGERS[name].isdisjoint(words)

    found = ((may("household") and _household(a, b)) or (may("born", said) and _births(a, b, lb))
             or (may("parted", said) and _done_with(a, lb))
             or (may("died") and _died(a, b)) or (may("over") and _handed_over(a, b)) or None)
    if found is not None:
        return found
    if not same:
        if (not _SLEEP_WORDS.isdisjoint(b.toks) and not other_party(b.who.who)
                and may("clock")):  # "lights out by 10 these days", "the alarm goes at 6:15"
            return _clock(a, b)
        if (b.who.who == ("user",) or "me" in b.toks) and (
                a.who.who[:1] == ("user",) or a.toks[:1] in _HABIT_LEADS):
            return ((may("named", said) and _named(a, lb)) or (may("clock") and _clock(a, b))
                    or (may("taken", said) and _taken(a, lb)) or None)
        return None
    return ((may("clock") and _clock(a, b)) or (may("team") and _counted(a, b))
            or (may("named", said) and _named(a, lb)) or (may("awaited") and _awaited(a, b))
            or (may("grew") and _grew(a, b)) or (may("taken", said) and _taken(a, lb))
            or (may("year") and schoolwork.school_year(a, b)) or (may("days") and schoolwork.work_days(a, b))
            or next((found for name in schoolwork.ENDED_BY
                     if may(name) and (found := schoolwork.ended_by(name, a, b)) is not None), None)
            or None)


_OFFSPRING_SAID = _set(
    "child children kid kids baby babies son sons daughter daughters grandchild grandchildren "
    "grandkid grandkids grandson granddaughter boy boys pregnant expecting")
_WEEKDAYS = _set(schoolwork.WEEKDAY.replace("|", " ")) | {w + "s" for w in schoolwork.WEEKDAY.split("|")}
_INDEX: tuple[tuple[str, frozenset[str], tuple[re.Pattern[str], ...]], ...] = (
    ("household", _set("live lives living share shares sharing lodger pair staying"), (_ALONE, _WITH)),
    ("born", _OFFSPRING_SAID, ()),
    ("clock", _set("bed bedtime asleep lights sleep up wake wakes waking woke alarm"),
     (_BED, _RISE)),
    ("team", _set("team reports people staff"), (_TEAM,)),
    ("name", _set("surname name pronouns nickname manager boss supervisor"), (_NAME, _BOSS)),
    ("awaited", _set("waiting saving"), (_AWAITED,)),
    ("year", _set("year freshman sophomore junior senior " + schoolwork.STAGE_WORDS),
     (schoolwork.YEAR, *(p for p, _ in schoolwork.STAGES))),
    ("days", _set("night nights") | _WEEKDAYS, (schoolwork.NIGHTS, schoolwork.DAY_RANGE)),
    ("hospital", _set("hospital admitted ward icu"), (schoolwork.IN_HOSPITAL,)),
    ("jobless", _set("unemployed out between hunting seeking looking"), (schoolwork.JOBLESS,)),
    ("study", _set("phd doctorate degree bsc msc mba ba ma studying student studies university "
                   "uni"), ()),
)
"""Each state key, the words without which a fact cannot state it, and its patterns (none:
the words are enough)."""


_INDEX_NEEDS = frozenset().union(*(needs for _, needs, _ in _INDEX))


def index_words(toks: tuple[str, ...]) -> list[str]:
    """An older fact's state keys: what a newer fact may end without naming it."""
    seen = set(toks)
    if _INDEX_NEEDS.isdisjoint(seen):
        return []  # most facts state none of these
    low = ""
    out: list[str] = []
    for key, needs, patterns in _INDEX:
        if needs.isdisjoint(seen):
            continue
        low = low or " ".join(toks)
        if not patterns or any(p.search(low) for p in patterns):
            out.append(f"{STATE_KEY}:{key}")
    return out


_PROBE_NEEDS = frozenset().union(*_TRIGGERS.values()) | SIGNS


def whole_probes(toks: tuple[str, ...]) -> list[str]:
    """Probes read from a whole newer fact, across the clause cut at "and I": the name a parting
    names ("nadia and i called it a day"), which the older fact must hold."""
    if _TRIGGERS["parted"].isdisjoint(toks):
        return []
    parted = first_group(_DONE_WITH.search(" ".join(toks)))
    return [fold(parted)] if parted is not None else []


def probe_words(b: ChangeReading) -> list[str]:
    """The state keys a newer clause probes for."""
    if _PROBE_NEEDS.isdisjoint(b.toks):
        return []  # no state's word: nothing to probe for
    low = " ".join(b.toks)
    out: list[str] = []
    if _MOVED_IN.search(low) or _MOVED_OUT.search(low):
        out.append(f"{STATE_KEY}:household")
    if _BORN.search(low):
        out.append(f"{STATE_KEY}:born")
    if (_BED.search(low) or _RISE.search(low)) and _CHANGED.search(low):
        out.append(f"{STATE_KEY}:clock")
    if _TEAM.search(low):
        out.append(f"{STATE_KEY}:team")
    if _NEW_NAME.search(low) or _REPORT_TO.search(low):
        out.append(f"{STATE_KEY}:name")
    if _HAD.search(low):
        out.append(f"{STATE_KEY}:awaited")
    if _TAKEN.search(low):
        out.append(fold("single"))

    over = _TAKEN_OVER.search(low)
    if over is not None:  # the habit's words, which the older fact must hold
        out += sorted({fold(t) for t in (over.group(1) or over.group(2)).split()
                       if is_content(t)} - _NOT_THE_HABIT)
    if ((schoolwork.YEAR.search(low) or schoolwork.stage_of(low) is not None)
            and (schoolwork.MOVED_UP.search(low) or schoolwork.BEGUN.search(low)
                 or schoolwork.IN_YEAR.search(low))):
        out.append(f"{STATE_KEY}:year")
    if (schoolwork.DAYS.search(low) or schoolwork.DAY_RANGE.search(low)
            or schoolwork.SHORT_WEEK.search(low)):
        out.append(f"{STATE_KEY}:days")
    if schoolwork.DONE_STUDY.search(low):
        out.append(f"{STATE_KEY}:study")
    if schoolwork.DISCHARGED.search(low):
        out.append(f"{STATE_KEY}:hospital")
    if schoolwork.HIRED.search(low):
        out.append(f"{STATE_KEY}:jobless")
    d = _DIED.search(low)
    if d is not None:  # the name or the relative the older fact holds
        out += sorted({fold(t) for t in b.toks if is_content(t)} - _VERBS)
    if _ACQUIRED.search(low) and not b.negated:  # what an older denial must name
        said = {fold(t) for t in b.toks if is_content(t)} - _VERBS
        out += sorted(said | {k for k, kinds in _KINDS_OF.items() if kinds & said})
    return out
