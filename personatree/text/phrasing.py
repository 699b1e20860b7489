"""Phrasing for summaries: a first-person statement as a pattern phrase, and a month span.

The offline judge names a pattern after its evidence ("I love hiking" → "Loves
hiking") and dates it with :func:`format_month_span` ("Mar–Jun 2024"); summaries
carry a "(N mentions, span)" suffix that :func:`strip_summary_suffix` removes again.
A pattern whose members share a topic and no statement is named :data:`TOPIC_CLAIM`
("Often talks about Grandpa"), a claim that takes no side (:func:`is_topic_claim`).
The day-level span of the tree view is a different format
(:func:`personatree.render.format_span`).
"""

from __future__ import annotations

import re
from datetime import datetime

from ..lexicons import ADVERBS, IRREGULAR_3SG, LEADING_FILLER_RE, PAST_IRREGULAR
from .sentences import EMOJI_CLASS
from .tokens import APOSTROPHES
from .word_class import adverb_only

__all__ = [
    "TOPIC_CLAIM", "is_topic_claim", "strip_summary_suffix", "with_mentions", "pattern_phrase", "format_month_span",
]

# The claim of a pattern whose members share a topic and no statement: it says only that
# the topic keeps coming up, and takes no side on it.
TOPIC_CLAIM = "Often talks about"


_SUFFIX_RE = re.compile(r"\s*\(\d+ mentions?(?:,[^)]*)?\)\s*$")
_TRAILING_PUNCT_RE = re.compile(rf"[\s.!?,;:\u2026{EMOJI_CLASS}]+$")
_OBJECT_PRONOUNS = (
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themself"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bme\b"), "them"),
    (re.compile(r"\bI'm\b"), "they're"),
    (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI'd\b"), "they'd"),
    (re.compile(r"\bI'll\b"), "they'll"),
    (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI\b"), "they"),
    # The speaker is one of "we" ("Our garden is full of tomatoes"): third person too.
    (re.compile(r"\bour\b", re.IGNORECASE), "their"),
    (re.compile(r"\bours\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bourselves\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bwe're\b", re.IGNORECASE), "they're"),
    (re.compile(r"\bwe've\b", re.IGNORECASE), "they've"),
    (re.compile(r"\bwe\b", re.IGNORECASE), "they"),
    (re.compile(r"\bus\b"), "them"),  # lower-case only: "the US" is a place
)
_SUBJECT_RE = re.compile(
    r"^(?:i\s+am|i'm|im)\s+(?:(?:currently|still|really|so|very|just|now)\s+)*"
    r"|^(?:i've|i\s+have)\s+been\s+"
    r"|^(?:i've|i\s+have)\s+(?=\w+ed\b|got\b|gotten\b|had\b|done\b|seen\b|made\b|taken\b|been\b|become\b|grown\b|run\b|never\b|always\b|just\b|finally\b|recently\b)"
    r"|^i\s+",
    re.IGNORECASE,
)


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in IRREGULAR_3SG:
        return IRREGULAR_3SG[low]
    if "'" in low or low.endswith("ed") or not low.isalpha():
        return verb
    if low in PAST_IRREGULAR:
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def strip_summary_suffix(text: str) -> str:
    """Remove a trailing "(N mentions, span)" suffix from a summary.

    Parameters
    ----------
    text : str
        A summary, with or without the suffix.

    Returns
    -------
    str
        The summary without it.
    """
    return _SUFFIX_RE.sub("", text)


def is_topic_claim(text: str) -> bool:
    """Whether a claim (with or without its mention suffix) only says that a topic keeps
    coming up (:data:`TOPIC_CLAIM`): it takes no side that a denial could contradict.

    Parameters
    ----------
    text : str

    Returns
    -------
    bool
    """
    return text.startswith(TOPIC_CLAIM + " ")


def with_mentions(claim: str, mentions: int, span: str) -> str:
    """A mid-level claim with its suffix: "Enjoys hiking (5 mentions, Mar–Jun 2024)".

    The inverse of :func:`strip_summary_suffix`.

    Parameters
    ----------
    claim : str
    mentions : int
    span : str
        A month span (:func:`format_month_span`).

    Returns
    -------
    str
    """
    return f"{claim} ({mentions} mention{'s' if mentions != 1 else ''}, {span})"


def pattern_phrase(sentence: str) -> str:
    """Turn a first-person statement into a subject-less pattern phrase.

    Strips leading discourse fillers ("Well,", "Yeah,") and the first-person subject,
    conjugating the verb to the third person: "I love hiking in the mountains." →
    "Loves hiking in the mountains"; "I'm allergic to peanuts" → "Allergic to
    peanuts"; "I'm a nurse" → "Is a nurse"; "I've been feeling stressed" → "Feeling
    stressed"; "I really enjoy jazz" → "Really enjoys jazz"; "I went to Paris" →
    "Went to Paris". Remaining first-person words become neutral third person ("my"
    → "their", "me" → "them", "our" → "their", "us" → "them"). Statements without a first-person subject ("The kids
    loved the beach trip.") are kept as they are. Trailing punctuation and emoji are
    removed and the first letter capitalised.

    Parameters
    ----------
    sentence : str
        A first-person statement (or any sentence).

    Returns
    -------
    str
        The pattern phrase, capitalised, without trailing punctuation.
    """
    s = _TRAILING_PUNCT_RE.sub("", strip_summary_suffix(sentence.translate(APOSTROPHES).strip()))
    s = LEADING_FILLER_RE.sub("", s)
    m = _SUBJECT_RE.match(s)
    if m is not None:
        subject = m.group(0).lower().split()
        rest = s[m.end():]
        if subject[0] in ("i'm", "im", "am") or subject[:2] == ["i", "am"]:
            first = rest.split(" ", 1)[0].lower()
            if first in ("a", "an", "the", "one", "not", "no", "from", "in", "at", "on"):
                rest = "is " + rest  # "I'm a nurse" → "Is a nurse"
        elif subject == ["i"]:
            words = rest.split(" ")
            # Skip adverbs ("I really love", "I completely agree") and conjugate the
            # verb that follows.
            for j, w in enumerate(words):
                if (w.lower() in ADVERBS or adverb_only(w.lower())) and j + 1 < len(words):
                    continue
                words[j] = _third_person(w)
                break
            rest = " ".join(words)
        elif subject[-1] != "been":
            rest = "has " + rest  # "I've got two kids" → "Has got two kids"
        s = rest
    for pattern, repl in _OBJECT_PRONOUNS:
        s = pattern.sub(repl, s)
    s = s.strip()
    return s[:1].upper() + s[1:] if s else s


def format_month_span(t_first: datetime, t_last: datetime) -> str:
    """A compact month span: "Mar 2024", "Mar–Jun 2024" or "Nov 2023–Feb 2024".

    Parameters
    ----------
    t_first, t_last : datetime
        The first and last time (order-insensitive).

    Returns
    -------
    str
        The span of months, with an en dash.
    """
    a, b = (t_first, t_last) if t_first <= t_last else (t_last, t_first)
    if (a.year, a.month) == (b.year, b.month):
        return f"{a:%b %Y}"
    if a.year == b.year:
        return f"{a:%b}\u2013{b:%b %Y}"
    return f"{a:%b %Y}\u2013{b:%b %Y}"
