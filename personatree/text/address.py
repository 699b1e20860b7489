"""Who a sentence is about: the speaker, or the listener it addresses.

A line said *to* someone ("Woohoo, John", "that must have been hard for you") tells
how the speaker reacts, not a fact, habit or stance of the speaker's own; the judge
writes no fact or relationship claim from it, and recall does not read it as a
change of the speaker's mind. A line *about* the listener (:func:`about_listener`:
"Cool that you kept the old bike", "I love how your garden turned out") is no
evidence of the speaker's own patterns at all: it supports and contradicts none.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..lexicons import NOT_NAMING, SECOND_PERSON, STANCE_PHRASE_NEG_RE, STANCE_PHRASE_POS_RE, TOPIC_SKIP
from .tokens import has_first_person, normalize, tokenize

__all__ = ["about_listener", "addresses", "to_listener"]

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
    comma = "," in sentence  # a name set off by a comma needs one
    for rx in (_START_RE, _GREETED_RE) if comma else (_GREETED_RE,):
        m = rx.search(sentence)
        if m is not None and _is_name(m.group(1)):
            return True
    m = _END_RE.search(sentence) if comma else None
    if m is None or not _is_name(m.group(2)):
        return False
    return len(sentence.split()) <= 4 or not m.group(1)[:1].isupper()


def to_listener(sentence: str, tokens: list[str] | None = None) -> bool:
    """Whether the sentence is said to the listener: it says "you" or calls them by name.

    Chat often drops the subject ("Trained for two hours tonight"), so a line
    without "I" may still be the speaker's own news; one with "you" is not.

    Parameters
    ----------
    sentence : str
    tokens : list of str, optional
        ``tokenize(sentence)`` when the caller already has it.

    Returns
    -------
    bool
    """
    toks = tokens if tokens is not None else tokenize(sentence)
    return not SECOND_PERSON.isdisjoint(toks) or addresses(sentence)


# "You" that addresses nobody in particular: fillers and thanks ("It's, you know, my
# thing", "Thank you, the trip was great"), which leave the sentence the speaker's.
_DISCOURSE_YOU_RE = re.compile(r"\b(?:you know|you see|mind you|thank you|see you|bless you)\b")
# The speaker only as the one who judges, wishes or guesses something of the listener:
# "I love how you…", "we're so proud of you", "I bet your…", "I can't wait to see your…",
# "I'm sure you'll…".
# Gratitude and closeness ("I appreciate you", "lucky to have you", "I miss you") are
# left out on purpose: they tell the speaker's own relationship.
_SPEAKER_ON_LISTENER_RE = re.compile(
    r"\b(?:i|we)(?:'m|'re|'ve|\s+am|\s+are|\s+was|\s+were|\s+have)?"
    r"(?:\s+(?:so|really|very|totally|just|always|truly|super|sure|definitely|all|also|too|been|"
    r"honestly|kinda|kind of|absolutely))*\s+"
    r"(?:love|loved|like|liked|adore|admire|bet|hope|think|thought|guess|know|knew|believe|"
    r"(?:can|could|can't|cannot|couldn't) (?:tell|see|imagine|believe)|can't wait to (?:see|hear)|"
    r"proud of|happy for|glad|happy|stoked for|stoked|thrilled for|thrilled|excited for|excited|"
    r"pleased for|pleased|sorry|impressed (?:by|with)|impressed|amazed (?:by|at)|jealous of|"
    r"rooting for|inspired by|sure|certain|confident)"
    r"(?:\s+(?:that|how|the way|when|to hear|to see|about|at|with|by|what))?"
    r"\s+(?:you|your|yours|yourself|you're|you've|you'd|you'll|u|ur)\b"
)

# Thanks with the subject dropped, as chat drops it ("Appreciate your help", "So
# grateful for your support", "Thanks for your advice"): the speaker's own gratitude,
# like "I appreciate your help".
_GRATITUDE_RE = re.compile(
    r"^\W*(?:(?:oh|aw+|wow|hey|ok|okay|and|but)\W+)*"
    r"(?:(?:so|really|truly|very|much|many|always|just)\s+)*"
    r"(?:appreciate|appreciated|thanks|thank you|thx|thankful|grateful)\b"
)

# Cheers, wishes and advice said to the listener, with the subject (the listener) left
# out: "Congrats on the new shop!", "Keep at it!", "Chase those dreams, mate!", "Have
# fun at the gig!", "Go Sam!". Without a word of the speaker's own they tell nothing of
# the speaker. Verbs that chat also uses for the speaker's own news with "I" dropped
# ("Love this song", "Went for a run") are not in the list.
_CHEER_RE = re.compile(
    r"^\W*(?:(?:oh|aw+|wow|hey|yeah|yes|and|so|just|now|well)\W+)*"
    r"(?:congrats|congratulations|kudos|way to go|well done|good luck|best of luck|fingers crossed for|"
    r"go for it|go get|go,? [^\W\d_][\w'-]*\W*$|hang in there|keep (?:it up|up the|going|pushing|at it|"
    r"chasing|rocking|shining|smiling|dreaming|dancing|believing|working)|"
    r"chase (?:those|your|the)|believe in|take care|stay (?:strong|positive|safe|focused|motivated)|"
    r"have (?:fun|a blast|a great|a good|a nice|a wonderful|a safe)|enjoy (?:your|it|every)|"
    r"don't (?:forget|give up|let|stop|be)|never (?:give up|stop)|remember to|make sure (?:to|you)|"
    r"try (?:to|not)|treat yourself|be proud|be kind)"
    r"(?![\w'-])"
)

# Consolidation asks again of every orphan at every pass; the answer depends on the text only.
@lru_cache(maxsize=1 << 16)
def about_listener(sentence: str) -> bool:
    """Whether the sentence speaks of the listener and tells nothing of the speaker.

    It says "you" (not only as a filler such as "you know" or "thank you"), names no
    stance of the speaker's in an idiom, and the speaker is either absent ("Cool that
    you kept the old bike", "Your garden looks amazing") or there only to judge,
    wish or guess something of the listener ("I love how your garden turned out",
    "I'm so proud of you", "I bet you'll ace it", "I'm sure you'll love it"). So is a
    cheer, wish or piece of advice with the listener left unsaid and no word of the
    speaker's ("Congrats on the new shop!", "Keep at it!", "Go Sam!"). A sentence in
    which the speaker also tells something of their own ("I know you love jazz, I do
    too") is the speaker's, and so are thanks with or without a subject ("Appreciate
    your help") and a line that only calls the listener by name ("Back from the coast,
    Jo!"), since chat drops the subject.

    Parameters
    ----------
    sentence : str

    Returns
    -------
    bool
    """
    low = normalize(sentence)
    if _GRATITUDE_RE.search(low) is not None:
        return False
    low = _DISCOURSE_YOU_RE.sub(" ", low)
    if SECOND_PERSON.isdisjoint(tokenize(low)):
        return _CHEER_RE.search(low) is not None and not has_first_person(tokenize(low))
    if STANCE_PHRASE_POS_RE.search(low) is not None or STANCE_PHRASE_NEG_RE.search(low) is not None:
        # "You can't beat a long swim": a generic "you" around the speaker's own taste.
        return False
    return not has_first_person(tokenize(_SPEAKER_ON_LISTENER_RE.sub(" ", low)))
