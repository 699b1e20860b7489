"""Entities and times: the names, places, numbers and time expressions a sentence holds.

Both are attributes of a leaf (``time``, ``entities``) and are found by regex only: a
capitalised run of words is a name unless it is the sentence-initial function word,
and times cover relative expressions, dates, weekdays, frequencies and life periods.
"""

from __future__ import annotations

import re

from ..lexicons import FILLERS, INTENSIFIERS, PRONOUN_CAPS, STOPWORDS, TIME_WORDS
from .tokens import APOSTROPHES

__all__ = ["find_time", "find_entities", "tells_the_past"]


_NUM = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a few|few|a couple(?: of)?|couple of|several)"
)
_UNIT = r"(?:days?|weeks?|months?|years?|hours?|minutes?|decades?)"
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PERIOD = (
    r"(?:night|week|weekend|month|year|summer|winter|spring|fall|autumn|morning|afternoon|"
    r"evening|semester|time)"
)
_YEAR = r"(?:19|20)\d{2}"
_TIME_RE = re.compile(
    r"\b(?:"
    rf"{_NUM}\s+{_UNIT}\s+ago"
    r"|the day before yesterday|the other day|over the weekend|earlier today"
    rf"|(?:last|this|next|past|previous)\s+(?:{_PERIOD}|{_DAY})"
    rf"|(?:in|on|since|during|by|until|from|early|late|mid|last|this|next)\s+{_MONTH}"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+{_YEAR})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"
    rf"|(?:january|february|april|june|july|august|september|october|november|december)"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+{_YEAR})?"
    rf"|(?:on\s+)?{_DAY}(?:\s+(?:morning|afternoon|evening|night))?"
    rf"|(?:every|each)\s+(?:other\s+)?(?:day|morning|night|evening|week|weekend|month|year|{_DAY})"
    r"|yesterday|today|tonight|tomorrow|recently|lately|these days|nowadays"
    r"|when i was (?:a kid|a child|young|little|younger|a teenager|\d+)"
    rf"|(?:in|since|during|by|from|until)\s+{_YEAR}|{_YEAR}"
    r")\b",
    re.IGNORECASE,
)


# A time years back or a period of one's life: the sentence is a memory.
_PAST_RE = re.compile(
    rf"\b(?:{_NUM}\s+(?:years?|decades?)\s+ago|years ago|decades ago|long ago"
    r"|when (?:i|we) (?:was|were) (?:a kid|kids|a child|children|young|little|younger|a teenager|teenagers|"
    r"in (?:school|high school|college)|\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
    r"|as a (?:kid|child|teenager|teen|boy|girl)|growing up|back in the day|back then"
    rf"|back in {_YEAR}|in my (?:childhood|youth|teens|twenties))\b",
    re.IGNORECASE,
)


def tells_the_past(text: str) -> bool:
    """Whether the sentence tells of years back or a period of one's life.

    "We moved to Ohio when I was ten" and "I started painting three years ago" are
    memories: true of the past whatever the person says later, and no news about
    the present either.

    Parameters
    ----------
    text : str
        One sentence.

    Returns
    -------
    bool
    """
    return _PAST_RE.search(text.translate(APOSTROPHES)) is not None


def find_time(text: str) -> str | None:
    """The first time expression in ``text``, verbatim, or ``None``.

    Recognises relative expressions ("yesterday", "last week", "two weeks ago", "the
    other day", "this summer"), months with optional day and year ("in March",
    "May 7, 2023", "7 May 2023"), weekdays ("on Friday"), frequencies ("every
    morning"), life periods ("when I was a kid") and years ("2022", "since 2019").
    The bare months "may" and "march" need a preposition or a day so that the verbs
    do not match.

    Parameters
    ----------
    text : str
        One sentence.

    Returns
    -------
    str or None
        The expression as written.
    """
    s = text.translate(APOSTROPHES)
    if not _may_tell_time(s):
        return None
    m = _TIME_RE.search(s)
    return m.group(0) if m else None


# Every alternative of _TIME_RE holds a digit or one of these words whole, between
# characters that are not word characters: a sentence with neither holds no time
# expression. One pass over its words spares the pattern's many alternatives, tried at
# every word start of every sentence an import reads.
_TIME_KEYS = frozenset(
    re.findall(r"[a-z]+", _PERIOD + _DAY + _MONTH)
    + ["ago", "yesterday", "day", "days", "weekend", "today", "tonight", "tomorrow", "recently",
       "lately", "nowadays", "when"]
)
_LETTERS_RE = re.compile(r"[a-z]+")
_DIGIT_RE = re.compile(r"[0-9]")


def _may_tell_time(s: str) -> bool:
    if not s.isascii():
        return True  # the pattern's case folding reaches beyond ASCII ("ſ" is "s")
    if _DIGIT_RE.search(s) is not None:
        return True
    return not _TIME_KEYS.isdisjoint(_LETTERS_RE.findall(s.lower()))


# A capitalised run not glued to a word or apostrophe before it, or a number not glued
# to a word or point. Each alternative opens with the character class it starts with
# and looks back past it, so the scan jumps from candidate to candidate instead of
# trying a lookbehind at every position.
_ENTITY_RE = re.compile(
    r"[A-Z](?<![\w'][A-Z])[\w'&\-]*(?:\s+[A-Z][\w'&\-]*)*"
    r"|\d(?<![\w.]\d)\d*(?:[.,:/]\d+)*(?:st|nd|rd|th|k|%)?(?![\w])"
)
_POSSESSIVE_RE = re.compile(r"'s$|'$")


def find_entities(text: str) -> list[str]:
    """Capitalised names and places, and numbers, in order of appearance, deduplicated.

    A capitalised run of words is a candidate ("Anna", "New York", "NAMI"). "I" and
    its contractions are skipped, possessive "'s" is stripped, and the sentence-initial
    word, which is capitalised anyway, is dropped when it is a function word, filler or
    time word, or a lone word that is not all-caps (so "The kids", "Painting's fun" give
    nothing but "Hey Anna" gives "Anna" and "NAMI groups" gives "NAMI"). Numbers
    ("10k", "3.5", "2022", "7th") are kept as they are.

    Parameters
    ----------
    text : str
        One sentence; apostrophes are normalised before matching.

    Returns
    -------
    list of str
        Names, places and numbers as written.
    """
    s = text.translate(APOSTROPHES)
    lead = len(s) - len(s.lstrip(" \"'([*-\u201c"))
    out: list[str] = []
    seen: set[str] = set()
    for m in _ENTITY_RE.finditer(s):
        ent = m.group(0)
        if ent[0].isdigit():
            pass
        else:
            words = [_POSSESSIVE_RE.sub("", w) for w in ent.split()]
            if m.start() <= lead:
                # The sentence-initial word is capitalised anyway: keep it only when it
                # starts a multi-word name or is an acronym.
                first = words[0]
                low = first.lower()
                if (low in STOPWORDS or low in FILLERS or low in TIME_WORDS
                        or low in INTENSIFIERS or first in PRONOUN_CAPS):
                    words = words[1:]
                elif len(words) == 1 and not (first.isupper() and len(first) > 1):
                    words = []
            words = [w for w in words if w and w not in PRONOUN_CAPS]
            # Function words stranded inside a run ("Thanks Mari And") are not names.
            while words and words[-1].lower() in STOPWORDS:
                words.pop()
            if not words:
                continue
            ent = " ".join(words)
            if ent.lower() in FILLERS:
                continue
        if ent not in seen:
            seen.add(ent)
            out.append(ent)
    return out
