"""Slots (S-WORDS-1): what a person has one of at a time, changed by a newer fact that names the
new one and leaves the old one unsaid.

- **home** — the older fact says where the user lives ("The user lives in Leeds", "rents a flat
  in Cardiff", "lives with their parents in Lyon"); the newer says a new home in another place:
  "finally got the keys to the new place in Bristol", "we bought a little terrace in Penarth",
  "got a tiny studio in Villeurbanne". A second or holiday home, a home bought to let and a
  home someone else bought are no move;
- **place** — the older fact says where someone works, studies or plays ("works at Google in
  Dublin", "is a sophomore at Ohio State", "Finn is in Year 6 at St Mary's Primary", "plays for
  Harrow Rangers"); the newer says they started, joined, signed with or transferred to another
  one of the same kind: "Started at Stripe last month", "has transferred to the University of
  Michigan", "Finn started at Kingsmead Secondary". A work place and a school are different
  kinds (a job is no change of school), and "moved to" names a new place only when what
  follows is one (a school, a firm, a club), not a town;
- **provider** — the older fact names who provides a service the user has one of (a bank, an
  energy supplier, broadband, a phone contract, insurance, a mortgage, a tool: "I bank with
  Barclays", "my password manager is LastPass"); the newer says it moved to another ("moved my
  current account to Monzo", "moved everything to Bitwarden");
- **favourite** — the older fact names a favourite ("favourite film is Inception"); the newer
  names another one of the same thing in the other order or with "new": "rust is my favourite
  these days", "autumn is the best season", "new favourite food is birria tacos", "it's knocked
  Inception off the top spot".

And **agents**: a newer clause led by someone who acts on the user's things and names the user
or the thing ("the landlord put the rent up to 1600", "my company is making us come into the
office", "IT migrated our whole team onto Windows") is read as the user's own news
(:func:`acting_for_user`).

The guards of every change rule hold: the same party, neither fact history or a plan, the newer
no addition. Pure; the finder reaches the older fact by the slot keys of :func:`index_words` and
:func:`probe_words`.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import TYPE_CHECKING

from nocturne_desktop.core.judges.conflicts.swaps import kinds_of
from nocturne_desktop.core.judges.conflicts.words import (
    BREAKS,
    NEGATORS,
    POSS,
    _set,
    first_group,
    fold,
    is_content,
    other_party,
    said_plainly,
)

if TYPE_CHECKING:
    from nocturne_desktop.core.judges.conflicts.changes import ChangeReading

__all__ = ["SIGNS", "SLOT_KEY", "acting_for_user", "index_words", "is_agent", "probe_words",
           "slot_change"]

SLOT_KEY = "@slot"

# --- agents ---------------------------------------------------------------------------------

_AGENTS = _set(
    "landlord landlady company work employer boss it gp doctor doctors dentist vet physio they "
    "school uni university council bank insurer insurance hr manager office firm nursery club "
    "gym network provider nhs management consultant surgeon clinic hospital team someone "
    "somebody")
"""Who acts on a person's things: the landlord, the employer, the doctor, "they"."""
_FOR_USER = _set("me us our my everyone everybody them user")
"""Words by which a clause led by an agent names the user ("put *me* on 15.50")."""


_AGENTS_FOLDED = frozenset(fold(w) for w in _AGENTS)


def is_agent(word: str) -> bool:
    """Whether a (folded) subject word names one who acts on the user's things ("the user's GP
    increased their dose"): the user's news, not a thing of the user's with its own amount."""
    return word in _AGENTS_FOLDED


def _acts(tok: str) -> bool:
    """Whether a word after an agent's "'s" is a verb ("'s put", "'s making"), not a noun."""
    return tok in _ACT_WORDS or tok.endswith(("ing", "ed"))


_ACT_WORDS = _set("put made cut set got told let")


def _lead(toks: tuple[str, ...]) -> str:
    """The word a clause opens with, past "the", "my", "our"."""
    if toks[:1] in (("the",), ("my",), ("our",)) and len(toks) > 1:
        return toks[1]
    return toks[0] if toks else ""


def acting_for_user(a: ChangeReading, b: ChangeReading) -> bool:
    """Whether the newer clause ``b`` is led by an agent acting on the user ("the landlord put
    the rent up", "my GP took me off metformin") while the older fact ``a`` is the user's:
    the clause names the user or the thing the older fact is about."""
    lead = _lead(b.toks)
    if a.who.who[:1] != ("user",) or lead not in _AGENTS:
        return False
    rest = b.toks[b.toks.index(lead) + 1:]
    if rest[:1] == (POSS,) and rest[1:2] and not _acts(rest[1]):
        return False  # "the landlord's flat": his, not an act of his ("work's making us")
    owned = a.who.who[1:]  # the landlord put *the rent* up
    return (not _FOR_USER.isdisjoint(rest)
            or (bool(owned) and fold(owned[-1]) in {fold(t) for t in rest})
            or any(t in ("the", "my", "our") and fold(w) in a.words and is_content(w)
                   for t, w in pairwise(rest)))


# --- home -----------------------------------------------------------------------------------

_LIVES = re.compile(r"\b(?:live|lives|living|rent|rents|renting|based|home is|home city is|"
                    r"home town is|hometown is|reside|resides)\b"
                    r"(?:[^.;!?]*?)\b(?:in|at)\s+([^.;!?]+)")
_NEW_HOME = re.compile(
    r"\b(?:(?:been|living|based) in \w+(?: \w+)? since (?:january|february|march|april|may|june|"
    r"july|august|september|october|november|december|spring|summer|autumn|fall|winter|last|"
    r"the|\d{4})|"
    r"got the keys|keys to|moved in(?:to)?|moving in|new (?:place|flat|house|home|"
    r"apartment|studio|digs|pad)|(?:bought|got|found|rented|renting) (?:a|an|our|my|the|this)"
    r"(?: \w+){0,2} (?:house|flat|place|home|terrace|cottage|bungalow|studio|apartment|condo|"
    r"semi|maisonette))\b")
_NOT_A_MOVE = re.compile(
    r"\b(?:holiday|second|buy to let|to let|rent out|renting out|investment|for (?:my|our|his|"
    r"her|their) (?:mum|mom|dad|parents|son|daughter|kids)|viewing|viewed|looking at|offer on)\b")
_PLACE_END = _set("and but so because with for after since last this from when which where "
                  "near by") | BREAKS


def _after_in(toks: tuple[str, ...]) -> set[str]:
    """Folded content words of each place said with "in" ("a terrace in Penarth")."""
    out: set[str] = set()
    for k, t in enumerate(toks):
        if t != "in":
            continue
        for w in toks[k + 1:]:
            if w in _PLACE_END or w == "in":
                break
            if is_content(w) and not w[:1].isdigit():
                out.add(fold(w))
    return out


def _home_of(a: ChangeReading) -> set[str]:
    """Where the older fact says the user lives (folded place words), or nothing."""
    if a.who.who != ("user",):
        return set()
    m = _LIVES.search(" ".join(a.toks))
    if m is None:
        return set()
    return _after_in(("in", *m.group(1).split())) - {fold("flat"), fold("house"), "home"}


def _moved_home(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    if b.who.who != ("user",):
        return None
    old = _home_of(a)
    low = " ".join(b.toks)
    if not old or _NEW_HOME.search(low) is None or _NOT_A_MOVE.search(low):
        return None
    new = _after_in(b.toks) - {fold(w) for w in ("flat", "house", "place", "home", "area")}
    if not new or new & old:
        return None  # no place said, or the same one: a new flat in the same town
    return "home", " ".join(sorted(old)), low


# --- places of work, study and play ---------------------------------------------------------

_WORK_AT = re.compile(r"\b(?:works?|working|employed|job|role|position|contract|intern|"
                      r"interning|teach|teaches|teaching|lecture|lectures|"
                      r"(?:an?|the) (?:[a-z]+ )?(?:engineer|nurse|teacher|manager|"
                      r"accountant|developer|designer|analyst|assistant|officer|consultant|"
                      r"associate|lawyer|paralegal|chef|baker|barista|cleaner|driver))"
                      r"\b[^.;!?]*?\b(?:at|for|with)\s+([^.;!?]+)")
_STUDY_AT = re.compile(r"\b(?:studies|study|studying|student|sophomore|freshman|junior|senior|"
                       r"first year|second year|third year|final year|year \d+|enrolled|degree|"
                       r"phd|bsc|ba|ma|msc|mba|pupil)\b[^.;!?]*?\b(?:at|in)\s+([^.;!?]+)|"
                       r"\b(?:is|am|are) at\s+([^.;!?]+)|\b(?:(?:goes|go) to|attends|attend)\s+"
                       r"([^.;!?]+)")
_PLAY_FOR = re.compile(r"\b(?:plays|play|playing|member|swims|runs|rows|trains)\b[^.;!?]*?"
                       r"\b(?:for|with|of)\s+([^.;!?]+)")
_SCHOOLISH = _set("school primary secondary college university uni academy sixth nursery "
                  "preschool kindergarten grammar high infants")
_CLUBBISH = _set("club rangers united city juniors fc athletic rovers wanderers team squad "
                 "harriers")
_STARTED = re.compile(
    r"\b(?:(?:started|starting|start|starts|began)(?: (?!at\b)[\w']+){0,2}|joined|joining|"
    r"signed(?! up)(?: \w+){0,3}|"
    r"new job|new role|new position|offered a job|took a(?: [\w-]+){0,3} job|"
    r"transferred|transferring|moved|moving|switched|is now|now|is|'s) (?:at|with|to|for)\s+"
    r"([^.;!?]+)|\b(?:joined|joining) (?:the )?([^.;!?]+)")
_STRONG = _set("started starting start starts began joined joining signed job role position "
               "transferred transferring")
"""Verbs that name a new place whatever follows; "moved to", "switched to" only a school, a
club or a firm ("moved to a sixth form college", not "moved to Leeds")."""
_ORG_END = _set("in as and but so because after since last this from when which on until "
                "though coz cause for with to at by near") | BREAKS
_NOT_ORG = _set("home work office gym desk it them him her end beginning start top bottom "
                "same bus train school uni college")
_NOT_ORG_FOLDED = frozenset(fold(w) for w in _NOT_ORG)


def _org_words(text: str) -> set[str]:
    """Folded words of a place's name, up to a preposition or a break; numbers and single
    letters are not its name ("the Harlow Hornets under-10s")."""
    words: set[str] = set()
    for w in text.split():
        if w in _ORG_END or w == POSS:
            break
        if is_content(w) and not w[:1].isdigit() and len(w) > 1:
            words.add(fold(w))
    return words


_FIRMISH = _set("company firm agency ltd limited plc bank hospital ward practice surgery studio "
                "shop store restaurant cafe hotel bakery council charity startup lab department")
_HEADS = (("study", frozenset(fold(w) for w in _SCHOOLISH)),
          ("play", frozenset(fold(w) for w in _CLUBBISH)),
          ("firm", frozenset(fold(w) for w in _FIRMISH)))


def _head(words: set[str]) -> str:
    """What kind of place its words name: a school, a club, a firm, or "" (a bare name)."""
    return next((name for name, heads in _HEADS if words & heads), "")


def _place_of(a: ChangeReading) -> tuple[str, set[str]] | None:
    """(the place's kind, its folded words) of the place the older fact says its subject works,
    studies or plays at: the words after the last "at" ("in Year 4 at Hillcrest Primary"), or
    after the cue's own preposition; the kind its words name, else the cue's."""
    low = " ".join(a.toks)
    for how, pattern in (("play", _PLAY_FOR), ("firm", _WORK_AT), ("study", _STUDY_AT)):
        m = pattern.search(low)
        if m is None:
            continue
        at = low.rfind(" at ", m.start())
        where = low[at + 4:] if at >= 0 else first_group(m) or ""
        if where[:1].isdigit():
            continue  # "is on Wednesdays at 4pm": a time, not a place
        words = _org_words(where)
        if words and not words <= _NOT_ORG_FOLDED:
            return _head(words) or how, words
    return None


def _new_place(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """A strong verb ("started at", "joined", "signed with") names a new place of the old one's
    kind unless its words say another kind ("joined a running club" is no new job); a weak one
    ("moved to", "switched to") only a place whose words say the old one's kind ("moved to a
    sixth form college" for "teach at a secondary school", not "moved to Glasgow")."""
    if a.who.who != b.who.who and not (len(b.who.who) == 1 and b.who.who[0] in a.words):
        return None
    placed = _place_of(a)
    if placed is None:
        return None
    kind, old = placed
    low = " ".join(b.toks)
    for m in _STARTED.finditer(low):
        verb = m.group(0).split(" ", 1)[0]
        new = _org_words(first_group(m) or "") - _NOT_ORG_FOLDED
        if not new or new & old:
            continue
        strong = verb in _STRONG or "job" in m.group(0)
        if (_head(new) or (kind if strong else "")) == kind:
            return "place", " ".join(sorted(old)), m.group(0)
    return None


# --- providers ------------------------------------------------------------------------------

_SERVICES = tuple((name, frozenset(fold(w) for w in words.split())) for name, words in (
    ("bank", "bank banks banking account accounts isa"),
    ("energy", "energy supplier electricity electric gas tariff"),
    ("broadband", "broadband internet fibre wifi isp"),
    ("phone", "phone mobile contract sim network"),
    ("insurance", "insurance insurer policy renewal cover"),
    ("mortgage", "mortgage mortgaged remortgaged remortgage lender"),
    ("tool", "manager app notes note calendar editor software password passwords"),
))
"""What a person has one provider of at a time, by the words that speak of it."""
_KNOWN = {name: frozenset(fold(w) for w in words.split()) for name, words in (
    ("bank", "barclays hsbc lloyds natwest santander nationwide halifax monzo starling revolut "
             "chase tsb metro rbs danske ulster aib coop wells fargo citi citibank ally schwab"),
    ("energy", "octopus edf eon ovo sse bulb utilita ecotricity outfox british gas "
               "scottish power"),
    ("broadband", "bt sky virgin talktalk plusnet hyperoptic zen xfinity comcast spectrum "
                  "fios starlink"),
    ("phone", "vodafone ee o2 three giffgaff lebara voxi smarty lyca verizon tmobile mint jio "
              "airtel bsnl telstra optus"),
    ("mortgage", "nationwide halifax barclays santander hsbc natwest lloyds coventry skipton "
                 "yorkshire tsb"),
    ("insurance", "aviva admiral churchill axa hastings esure geico progressive allstate lv"),
)}
"""Providers people name without the service ("moved to giffgaff" after "my phone contract is
with Vodafone"): a name of the same service's providers is the service said."""
_WITH_NOW = re.compile(r"\b(?:been|are|is|am|now|'re) with\s+(?:a |an |the )?([^.;!?,]+)")
""""we've been with octopus since the fix ended": a provider said as had, for a known one."""
_WORD_START = re.compile(r"\b\w")
_PROVIDED = re.compile(r"\b(?:with|is|are|through|via|uses?|using|in|on)\s+(?:a |an |the )?"
                       r"([^.;!?,]+)")
_SWITCHED = re.compile(
    r"\b(?:switched|switching|moved|moving|changed|went|gone|remortgaged|signed up|signed|"
    r"transferred|ported)\b(?: \w+){0,4}? (?:to|with|into|onto|over to)\s+(?:a |an |the )?"
    r"([^.;!?,]+)")
_ALL = _set("everything all")


def _service(words: set[str]) -> tuple[str, frozenset[str]]:
    """The service some folded words speak of, and its words; ("", {}) for none. A provider
    named alone says its service ("I'm on EE")."""
    found = next(((name, ws) for name, ws in _SERVICES if words & ws), None)
    if found is None:
        named = [name for name, known in _KNOWN.items() if words & known]
        if len(named) == 1:
            found = next((name, ws) for name, ws in _SERVICES if name == named[0])
    return found or ("", frozenset())


_KIN_LED = frozenset((fold(w),) for w in _set(
    "mum mom mother dad father wife husband partner son daughter sister brother friend "
    "neighbour neighbor boss colleague nan gran grandma grandpa"))
"""A clause led by another person ("mum's moved all her stuff over to monzo"): theirs."""


def _provider(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"I bank with Barclays" / "I moved my current account to Monzo", "Our energy supplier is
    Octopus" / "we switched electricity to EDF", "My password manager is LastPass" / "Moved
    everything to Bitwarden": another provider of the same service."""
    service, its_words = _service({fold(t) for t in a.toks})
    if ((a.who.who[:1] != ("user",) and not set(a.who.who[:1]) & its_words)
            or other_party(b.who.who) or b.who.who[:1] in _KIN_LED):
        return None  # the user's, or a note led by the service ("Energy is with British Gas")
    low_a = " ".join(a.toks)
    m = next((x for x in (_PROVIDED.match(low_a, k.start()) for k in _WORD_START.finditer(low_a))
              if x is not None and _org_words(x.group(1)) - its_words), None)  # "is with EE"
    n = _SWITCHED.search(" ".join(b.toks))
    known = _KNOWN.get(service, frozenset())
    if n is None and known:
        n = _WITH_NOW.search(" ".join(b.toks))
        if n is not None and not _org_words(n.group(1)) & known:
            n = None
    if not service or m is None or n is None:
        return None
    old = _org_words(m.group(1)) - its_words
    new = _org_words(n.group(1)) - its_words
    same = (_service({fold(t) for t in b.toks})[0] == service
            or not _ALL.isdisjoint(b.toks)  # "moved everything to Bitwarden"
            or bool(new & known))  # "moved to giffgaff": a phone network by its name
    if old and new and not new & old and same:
        return "provider", " ".join(sorted(old)), n.group(0)
    return None


# --- favourites -----------------------------------------------------------------------------

_LIKED = re.compile(r"\b(?:favourite|favorite|fave|fav|go to|best|top)\b")
_FAV_OLD = re.compile(r"\b(?:favourite|favorite|fave|fav|go to) (\w+)(?: is|:| =)? ([^.;!?]+)")
_FAV_NEW = (
    re.compile(r"\b(?:new )?(?:favourite|favorite|fave|fav) (?P<of>\w+)(?: is| now is|:| =|\?)"
               r" (?:(?:now|defo|definitely|probably|deffo|my|a|an|the) )*(?P<v>[^.;!?]+)"),
    re.compile(r"(?:^|, )(?:honestly |ok |okay |so )?(?P<v>[\w ]+?) (?:is|are) (?:now |defo )?"
               r"(?:my|the) (?:new )?(?:favourite|favorite|fave|fav|best|top)(?: (?P<of>\w+))?"),
    re.compile(r"\bknocked (?P<v>[\w ]+?) off the top\b|\b(?:overtaken|overtook|replaced|beaten|"
               r"beat) (?P<w>[\w ]+?) as (?:my|the)\b"),
)
_OWNERS = _set("'s his her their your") | _set(
    "mum mom dad mother father sister brother wife husband partner son daughter friend boss")
_VALUE_END = _set("and but so because since these now for with sorry lol haha tbh honestly "
                  "fight no not") | BREAKS


def _value_words(text: str) -> set[str]:
    out: set[str] = set()
    for w in text.split():
        if w in _VALUE_END:
            break
        if is_content(w):
            out.add(fold(w))
    return out


def _favourite(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    if a.who.who[:1] != ("user",) or other_party(b.who.who):
        return None  # "my sister's favourite film is Up": hers
    m = _FAV_OLD.search(" ".join(a.toks))
    if m is None:
        return None
    of, old = fold(m.group(1)), _value_words(m.group(2))
    low = " ".join(b.toks)
    if not old or _LIKED.search(low) is None:
        return None
    for k, pattern in enumerate(_FAV_NEW):
        n = pattern.search(low)
        if n is None:
            continue
        said_of = n.groupdict().get("of")
        if k == 0 and not _OWNERS.isdisjoint(low[:n.start()].split()):
            continue  # "Ana's favourite film is Up", "his favourite film": theirs
        if said_of is not None and (said_of in _VALUE_END or not is_content(said_of)):
            said_of = None  # "rust is my favourite these days"
        if said_of is not None and fold(said_of) not in (of, "thing") and k < 2:
            continue  # another favourite: "my favourite colour is green" for a film
        if k == 2:  # "knocked Inception off the top spot": the old one named as beaten
            if _value_words(n.group("v") or n.group("w")) & old:
                return "favourite", " ".join(sorted(old)), n.group(0)
            continue
        new = _value_words(n.group("v")) - {"favourit", "favorit", "fave", "fav", of, "user"}
        if new and not new & old and (said_of is not None or k == 1):
            return "favourite", " ".join(sorted(old)), n.group(0)
    return None


# --- the rule -------------------------------------------------------------------------------

SIGNS = _set(
    "remortgaged ported transferred migrated forced making dragged landlord landlady "
    "company employer gp physio council insurer hr management surgeon clinic keys moved "
    "moving bought got found rented renting new started starting start starts began joined "
    "joining signed offered took transferring switched favourite favorite fave fav best top "
    "knocked now")
"""Tokens without which a fact names no new slot (its clauses are read only then). Agents as
common in facts as "boss" or "office" are left out: a fact is read for them only when it has
another sign."""


def slot_change(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """(kind, old value, the newer clause's words) when the newer clause ``b`` names a new
    home, place or favourite in place of the one ``a`` states (module docstring), else None."""
    if a.past or a.tentative or b.past or b.tentative or b.added or a.negated:
        return None
    if b.negated:  # "been in Vancouver since March and still not used to the rain"
        found = _moved_home(a, b) if _said_before_negation(b, _NEW_HOME) else None
    else:
        found = _moved_home(a, b) or _new_place(a, b) or _provider(a, b)
    if found is not None:  # the whole older statement ended: where one lived, worked, studied
        return found[0], said_plainly(a.toks), found[2]
    return None if b.negated else _favourite(a, b)


def _said_before_negation(b: ChangeReading, pattern: re.Pattern[str]) -> bool:
    """Whether the clause says ``pattern`` before any negation (which is then of another
    thing: "…since March and still not used to the rain")."""
    low = " ".join(b.toks)
    m = pattern.search(low)
    first = next((k for k, t in enumerate(b.toks) if t in NEGATORS), len(b.toks))
    return m is not None and len(low[:m.end()].split()) <= first


_INDEX = (
    ("home", _set("live lives living rent rents renting based home reside resides"), (_LIVES,)),
    ("place", _set(
        "work works working employed job role position contract intern interning teach teaches "
        "teaching lecture lectures engineer nurse teacher manager accountant developer designer "
        "analyst assistant officer consultant associate lawyer paralegal chef baker barista "
        "cleaner driver studies study studying student sophomore freshman junior senior year "
        "enrolled degree phd bsc ba ma msc mba pupil is am are goes go attends attend plays play "
        "playing member swims runs rows trains"), (_WORK_AT, _STUDY_AT, _PLAY_FOR)),
    ("fav", _set("favourite favorite fave fav go"), (_FAV_OLD,)),
    ("provider", _set("bank banks banking account supplier energy electricity gas broadband "
                      "internet fibre phone mobile contract sim network insurance insurer policy "
                      "mortgage manager app notes calendar editor passwords"), (_PROVIDED,)),
)
"""Each slot key, the words without which a fact cannot state it, and its patterns."""


_INDEX_NEEDS = frozenset().union(*(needs for _, needs, _ in _INDEX))


def index_words(toks: tuple[str, ...]) -> list[str]:
    """An older fact's slot keys: ``@slot:home``, ``@slot:place``, ``@slot:fav``,
    ``@slot:provider``."""
    seen = set(toks)
    if _INDEX_NEEDS.isdisjoint(seen):
        return []  # most facts state none of these
    low = ""
    out: list[str] = []
    for key, needs, patterns in _INDEX:
        if needs.isdisjoint(seen):
            continue
        low = low or " ".join(toks)
        if any(p.search(low) for p in patterns):
            out.append(f"{SLOT_KEY}:{key}")
    return out


_PROBE_NEEDS = SIGNS | _set("been living based since")
"""Words without one of which a clause names no new home, place, favourite or provider."""


def probe_words(b: ChangeReading) -> list[str]:
    """The slot keys a newer clause probes for: the slots it names a new one of, and what a
    clause led by an agent speaks of (what the older fact must hold: its words and kinds)."""
    out: list[str] = []
    if _lead(b.toks) in _AGENTS:
        out += sorted({fold(t) for t in b.toks if is_content(t)} - _AGENTS_FOLDED)
        out += [f"@kind:{k}" for k in sorted(kinds_of(b.toks))]
    if _PROBE_NEEDS.isdisjoint(b.toks):
        return out
    low = " ".join(b.toks)
    if _NEW_HOME.search(low):
        out.append(f"{SLOT_KEY}:home")
    if _STARTED.search(low):
        out.append(f"{SLOT_KEY}:place")
    if _LIKED.search(low):
        out.append(f"{SLOT_KEY}:fav")
    if _SWITCHED.search(low) or _WITH_NOW.search(low):
        out.append(f"{SLOT_KEY}:provider")
    return out
