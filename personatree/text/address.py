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

# A name set off by a comma at either end of a sentence: the listener addressed. At the
# start it may follow a greeting or an interjection ("Yeah Mel, stoked!", "Thanks,
# Sam!"); at the end it may stand after a lower-case word ("so inspiring, Mel!").
_INTERJECTION = (
    r"(?:hey|hi|hello|oh|ah|aww?|thanks|thank you|sorry|yeah|yes|yep|no|nah|wow|whoa|woah|yay|"
    r"well|okay|ok|congrats|congratulations|good morning|morning|haha|great|cool|nice|awesome)"
)
_NAME = r"([^\W\d_][\w'-]*)"
_START_RE = re.compile(rf"^\W*(?:{_INTERJECTION}[\s,!.]+)?{_NAME}\s*,", re.IGNORECASE)
_GREETED_RE = re.compile(rf"^\W*{_INTERJECTION}[\s,]+{_NAME}\s*(?:[!,.?]|$)", re.IGNORECASE)
_END_RE = re.compile(rf"(\S*),\s*{_NAME}\W*$")


def _is_name(word: str) -> bool:
    return word[:1].isupper() and word.lower() not in TOPIC_SKIP and word.lower() not in NOT_NAMING


def addresses(sentence: str) -> bool:
    """Whether the sentence calls someone by name ("John, I'm sorry…", "I get it, Jon").

    A name after the last comma counts in a short reply, or after a lower-case word
    ("That was so inspiring, Mel!"): in "I live in Porto, Portugal" it is a place.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    for rx in (_START_RE, _GREETED_RE):
        m = rx.search(sentence)
        if m is not None and _is_name(m.group(1)):
            return True
    m = _END_RE.search(sentence)
    if m is None or not _is_name(m.group(2)):
        return False
    return len(sentence.split()) <= 4 or not m.group(1)[:1].isupper()


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
