"""The word lists every meaning guard reads: negation cues, modals and markers, auxiliaries,
determiners, number words, greetings."""

from __future__ import annotations

import re


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


NEGATION_TOKENS: frozenset[str] = _words(
    "not no never nor neither none nothing nobody noone nowhere without")
"""Folded tokens that negate the rest of their clause (after :func:`canonical`)."""

_SPLIT_WORDS = _words(
    "but although though whereas while because unless however except instead whilst")
_AFTER_COMMA_SPLIT = frozenset({"only", "then", "so", "plus"})
_PRONOUNS_OTHER = frozenset({"he", "she", "it", "they", "him", "her", "them"})
_PRONOUNS_ALL = _PRONOUNS_OTHER | {"we", "us"}
_PARTY_WORDS = frozenset({"user", "users", "assistant"})
_MODALS = _words("will would might may can could should must shall")
_REPORTING = _words(
    "promise promises promised agree agrees agreed decide decides decided swear swears swore "
    "say says said tell tells told think thinks thought expect expects expected")
"""After one of these, "will"/"would" is reported speech ("promised I'd drive" = "promised to
drive"), not a change of modality."""
_TO_MARKERS = {
    "want": "wants to", "wants": "wants to", "wanted": "wants to", "wanna": "wants to",
    "plan": "plans to", "plans": "plans to", "planned": "plans to", "planning": "plans to",
    "hope": "hopes to", "hopes": "hopes to", "hoped": "hopes to", "hoping": "hopes to",
    "intend": "intends to", "intends": "intends to", "intended": "intends to",
    "going": "going to", "gonna": "going to",
    "used": "used to",
    "try": "tries to", "tries": "tries to", "tried": "tries to", "trying": "tries to",
    "need": "has to", "needs": "has to", "needed": "has to",
    "have": "has to", "has": "has to", "had": "has to",
    "wish": "wishes to", "wishes": "wishes to", "wished": "wishes to",
    "about": "about to",
}
_DETERMINERS = _words(
    "a an the this that these those my your his her its our their some any no every each "
    "many few several much more most")
_AUX = _words(
    "am is are was were be been being has have had do does did will would can could should "
    "may might must shall")
_IRREGULAR = _words(
    "went had got made took came saw ran ate drank bought built met left felt kept lost paid "
    "said sent sold spent told thought wrote gave knew became began brought caught chose drove "
    "fell flew forgot found grew heard held hid hurt lent let lit meant put read rode rang rose "
    "sang sat slept spoke stood swam taught threw understood woke won wore lives likes loves "
    "owns keeps works uses prefers enjoys hates")
_GREETINGS = _words(
    "hello hi hey hiya howdy greeting greetings thanks thank bye goodbye good morning evening "
    "night afternoon welcome cheers please sorry ok okay yes yeah yep no nope sure great nice "
    "cool bonjour hola ciao lol haha")
_YES = _words("yes yeah yep yup sure definitely absolutely indeed correct right ok okay")
_NO = _words("no nope nah never")

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_ORDINAL_WORDS = {
    "first": 1, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "thirtieth": 30,
    "hundredth": 100,
}

_APOS = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})
_SCAN = re.compile(
    r"(?P<num>\d+(?:[.,:]\d+)*)(?P<ord>st|nd|rd|th)?"
    r"|(?P<word>[^\W\d_]+(?:'[^\W\d_]+)*'?)"
    r"|(?P<stop>[.!?;:\n()\[\]\u2026]+)"
    r"|(?P<comma>,)"
)
_NEG_NO_APOS = {
    "dont": "do", "doesnt": "does", "didnt": "did", "isnt": "is", "arent": "are",
    "wasnt": "was", "werent": "were", "cant": "can", "couldnt": "could", "wouldnt": "would",
    "shouldnt": "should", "wont": "will", "havent": "have", "hasnt": "has", "hadnt": "had",
    "mustnt": "must", "cannot": "can", "aint": "is",
}
_NT_BASE = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
_SUFFIX = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}
_S_IS = _words("he she it that there what who here where how")
