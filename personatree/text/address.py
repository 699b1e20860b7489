"""Who a sentence is about: the speaker, or the listener it addresses.

A line said *to* someone ("Woohoo, John", "that must have been hard for you") tells
how the speaker reacts, not a fact, habit or stance of the speaker's own; the judge
writes no fact or relationship claim from it, and recall does not read it as a
change of the speaker's mind.
"""

from __future__ import annotations

import re

from ..lexicons import NOT_NAMING, SECOND_PERSON, TOPIC_SKIP
from .tokens import tokenize

__all__ = ["addresses", "to_listener"]

# A name set off by a comma at either end of a sentence: the listener addressed.
_VOCATIVE_RE = re.compile(
    r"^\W*(?:(?:[Hh]ey|[Hh]i|[Oo]h|[Tt]hanks|[Ss]orry)\s+)?([A-Z][a-z'-]+)\s*,"
    r"|,\s*([A-Z][a-z'-]+)\W*$"
)


def addresses(sentence: str) -> bool:
    """Whether the sentence calls someone by name ("John, I'm sorry…", "I get it, Jon").

    A name after the last comma counts only in a short reply: in "I live in Porto,
    Portugal" it is a place.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    for m in _VOCATIVE_RE.finditer(sentence):
        if m.group(2) and len(sentence.split()) > 4:
            continue
        word = (m.group(1) or m.group(2)).lower()
        if word not in TOPIC_SKIP and word not in NOT_NAMING:
            return True
    return False


def to_listener(sentence: str) -> bool:
    """Whether the sentence is said to the listener: it says "you" or calls them by name.

    Chat often drops the subject ("Trained for two hours tonight"), so a line
    without "I" may still be the speaker's own news; one with "you" is not.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    return not SECOND_PERSON.isdisjoint(tokenize(sentence)) or addresses(sentence)
