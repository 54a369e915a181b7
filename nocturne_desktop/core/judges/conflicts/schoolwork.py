"""School and work (S-WORDS-1): the states of a person's schooling and working week that a
newer clause ends by saying what follows them.

- **a school year or stage begun** — "I'm in my second year at uni" / "started their third
  year", "Mia's in Year 2" / "moved up to year 3", "goes to nursery" / "started reception",
  "Year 6 at St Anne's Primary" / "started at the big secondary school", a higher year said as
  where the child is ("kofi's loving year 6");
- **the working week** — night shifts then days ("I'm on days now"), "Monday to Friday" then
  another range of days or a shorter week;
- **what follows a state** — studies finished ("passed my viva"), out of hospital ("discharged
  Friday"), a job after none ("unemployed" / "started at the library").

Used by :mod:`.states` (its triggers, its index and probe keys, its rule); pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nocturne_desktop.core.judges.conflicts.words import fold

if TYPE_CHECKING:
    from nocturne_desktop.core.judges.conflicts.changes import ChangeReading

__all__ = ["BEGUN", "DAYS", "DAY_RANGE", "DISCHARGED", "DONE_STUDY", "ENDED_BY", "HIRED",
           "IN_HOSPITAL", "IN_YEAR", "JOBLESS", "MOVED_UP", "NIGHTS", "SHORT_WEEK", "STAGES",
           "STAGE_WORDS", "WEEKDAY", "YEAR", "ended_by", "school_year", "stage_of", "work_days"]


_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
            "final": 99, "last": 99}
YEAR = re.compile(r"\b(first|second|third|fourth|fifth|sixth|final|last|\d)(?: ?-? ?)year\b|"
                  r"\byear (\d{1,2})\b|\b(freshman|sophomore|junior|senior)\b")
_YEAR_CLASS = {"freshman": 1, "sophomore": 2, "junior": 3, "senior": 4}
MOVED_UP = re.compile(r"\b(?:started|starting|moved up|going into|gone into|into|now|"
                      r"placement|promoted|entered|transferred)\b")


def _year_of(low: str) -> int | None:
    m = YEAR.search(low)
    if m is None:
        return None
    word, number, grade = m.groups()
    if grade is not None:
        return _YEAR_CLASS[grade]
    token = word or number
    return _ORDINAL[token] if token in _ORDINAL else int(token)


STAGES = ((re.compile(r"\b(?:nursery|preschool|pre school|playgroup|daycare|creche)\b"), -1),
          (re.compile(r"\b(?:reception|kindergarten|kindy)\b"), 0),
          (re.compile(r"\b(?:infants|infant school)\b"), 1),
          (re.compile(r"\bprimary\b"), 2),
          (re.compile(r"\b(?:juniors|junior school)\b"), 3),
          (re.compile(r"\bacademy\b"), 7),
          (re.compile(r"\b(?:secondary|high school|big school|middle school)\b"), 7),
          (re.compile(r"\b(?:sixth form|college)\b"), 12),
          (re.compile(r"\b(?:university|uni)\b"), 14))
"""Stages of schooling by their everyday names, as years (a year N is N)."""
STAGE_WORDS = ("nursery preschool playgroup daycare creche reception kindergarten kindy secondary "
               "high big middle sixth college university uni infants juniors academy primary")
BEGUN = re.compile(r"\bfirst (?:day|week|term) (?:at|of)\b|\bwent up to\b")


IN_YEAR = re.compile(r"\b(?:is|are|'s|in|loving|starting|already)\b(?: \w+)? year \d|"
                     r"\byear \d+ already\b")


def stage_of(low: str) -> int | None:
    """The stage of schooling a clause names: its year ("Year 6"), else the stage's name."""
    m = YEAR.search(low)
    if m is not None and m.group(2) is not None:
        return int(m.group(2))
    return next((n for pattern, n in STAGES if pattern.search(low)), None)


def school_year(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """"I'm in my second year at uni" / "started their third year", "Mia's in Year 2" / "moved
    up to year 3", "goes to nursery" / "started reception", "Year 6 at St Anne's Primary" /
    "started at the big secondary school": another year or stage of the same schooling, said
    as begun."""
    la, lb = " ".join(a.toks), " ".join(b.toks)
    old, new = _year_of(la), _year_of(lb)
    if old is None or new is None:  # a stage by its name: "nursery" then "reception"
        old, new = stage_of(la), stage_of(lb)
        if old is None or new is None or new <= old:
            return None
    if old == new or (MOVED_UP.search(lb) is None and BEGUN.search(lb) is None
                      and not (new > old and IN_YEAR.search(lb))):
        return None  # a higher year said as where the child is: "kofi's loving year 6"
    if "old" in b.toks or "ago" in b.toks:
        return None  # "a year old", "a year ago": no school year
    return "year", la, lb


NIGHTS = re.compile(r"\bnight (?:shift|shifts|job|work)\b|\bwork(?:s|ing)? nights\b")
DAYS = re.compile(r"\b(?:on days|to days|day shifts|on (?:the )?day shift)\b")
WEEKDAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
DAY_RANGE = re.compile(rf"\b({WEEKDAY})s? (?:to|till|until|-) ({WEEKDAY})s?\b")
SHORT_WEEK = re.compile(r"\b(?:four|three|4|3) ?-? ?day (?:week|weeks)\b|\b(?:" + WEEKDAY +
                        r")s off\b")
_ONE_OFF = re.compile(r"\b(?:this week|this weekend|today|tonight|tomorrow|for (?:a|one|the|two) "
                      r"(?:week|day|days|weeks)|covering|cover for|swapped a shift|extra|"
                      r"overtime|picked up)\b")


_CHANGED_WEEK = re.compile(r"\b(?:now|from|since|switched|moved|back on|new|these days|"
                           r"permanent|permanently|for good|finally)\b")


def work_days(a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    """Night shifts then days ("I'm on days now"), or "Monday to Friday" then another range of
    days, a shorter week or a rota: the hours of work moved."""
    la, lb = " ".join(a.toks), " ".join(b.toks)
    if _ONE_OFF.search(lb):
        return None  # "covering a Saturday this week": one week, not the hours of work
    if (NIGHTS.search(la) and DAYS.search(lb) and not NIGHTS.search(lb)
            and _CHANGED_WEEK.search(lb)):  # "I'm on days now", "switched to days"
        return "shifts", la, lb
    old = DAY_RANGE.search(la)
    if old is None or "work" not in {fold(t) for t in a.toks}:
        return None
    new = DAY_RANGE.search(lb)
    if new is not None and new.groups() != old.groups():
        return "days", la, lb
    if new is None and SHORT_WEEK.search(lb) and _CHANGED_WEEK.search(lb):
        return "days", la, lb
    return None


DONE_STUDY = re.compile(r"\b(?:passed (?:my|the|their|his|her) (?:viva|phd|thesis|defen[cs]e)|"
                        r"graduated|got (?:my|their) degree|finished (?:my|their) (?:degree|"
                        r"phd|course|studies)|dropped out|withdrawn from|withdrew from)\b")
_STUDYING = re.compile(r"\b(?:phd|doctorate|degree|bsc|msc|mba|ba|ma|studying|student|studies|"
                       r"university|uni)\b")


IN_HOSPITAL = re.compile(r"\b(?:in hospital|in the hospital|admitted|on the ward|in (?:the )?icu)\b")
DISCHARGED = re.compile(r"\b(?:discharged|out of hospital|home from (?:the )?hospital|back home|"
                        r"sent home|is home|s home)\b")


JOBLESS = re.compile(r"\b(?:unemployed|out of work|between jobs|job hunting|job seeking|"
                     r"looking for (?:a )?(?:job|work))\b")
HIRED = re.compile(r"\b(?:started at|start at|starting at|got (?:a|the) job|new job|hired|"
                   r"took a (?:[\w-]+ ){0,3}job|joined|signed (?:a|my|the) contract|"
                   r"first day at)\b")


ENDED_BY: dict[str, tuple[str, re.Pattern[str], re.Pattern[str], frozenset[str]]] = {
    # "doing a PhD" / "passed my viva!!!" ("started my second year" is a year of the studies)
    "studies": ("finished", _STUDYING, DONE_STUDY, frozenset({"year"})),
    "hospital": ("discharged", IN_HOSPITAL, DISCHARGED, frozenset()),  # "discharged Friday"
    "hired": ("hired", JOBLESS, HIRED, frozenset()),  # "unemployed" / "started at the library"
}
"""States that a newer clause ends by saying what follows them: (kind, what the older fact
says, what the newer says, words by which the newer says something else), by the name of
their trigger words."""


def ended_by(name: str, a: ChangeReading, b: ChangeReading) -> tuple[str, str, str] | None:
    kind, old, new, unless = ENDED_BY[name]
    if not unless.isdisjoint(b.toks):
        return None
    la, lb = " ".join(a.toks), " ".join(b.toks)
    if old.search(la) and new.search(lb):
        return kind, la, lb
    return None
