"""Which words a stance in a sentence is about: its clause (pure functions).

A sentence takes its side on what the clause that carries the side is about. "The
lifeguard yelled 'No diving!'" denies diving, not the lifeguard; "I packed my
wellies, no gloves" denies gloves, not the wellies; "Crosswords are my wind-down, so I
never bother timing myself" is no denial of crosswords. Whole-sentence stance reading
(:func:`~personatree.text.stance.stance_reading`) cannot tell these apart, so a
contradiction between a statement and a pattern rests on :func:`takes_side_on`: a clause
that takes the side by itself, with more than a feeling of the moment ("there was no
queue, but the sushi tasted awful" denies nothing of sushi), and names the pattern's
topic.

Clauses end at punctuation, at quotation marks, at a bracketed label and at the
conjunctions that open a clause of their own ("but", "because", "while", "although",
"though", "whereas"; "so" only after a comma, as it also intensifies: "not so bad"), and
before a condition or a time ("if", "when", "unless", "until"), which stays with its
clause ("If I ever quit my job" stops nothing). A clause that names nothing of its own
but takes a side ("Sushi? Can't stand it now") is read as about the whole sentence: what
it refers back to is named elsewhere in it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..lexicons import FIRST_PERSON_SUBJECT, LIKE_FORMS, NEGATORS, OTHER_PEOPLE, STANCE_NEG, STANCE_POS
from ..stance import side_of
from .stance import StanceSource, stance_reading
from .tokens import normalize, tokenize
from .topic import content_lemmas

__all__ = ["clauses", "side_scopes", "takes_side_on"]

# Punctuation, dashes, brackets and quotation marks (a straight single quote only where
# it opens or closes a quotation, not inside "can't"), and the conjunctions that open
# a clause with its own subject.
_CLAUSE_BREAK_RE = re.compile(
    r"[.,;:!?()\[\]{}\"\u201c\u201d\u00ab\u00bb\u2014\u2013\u2026]|\s-+\s|(?<!\w)'|'(?!\w)"
    r"|\b(?:but|because|while|although|though|whereas)\b"
    # A condition or a time keeps its word, which frames the clause ("if I ever quit").
    r"|(?=\b(?:if|when|whenever|unless|until)\b)"
)
# A bracketed label ("[kitchen] ...", "(at the lake)") says where a line was told, not
# what a side in it is about.
_LABEL_RE = re.compile(r"\[[^\]]*\]|\([^)]*\)")

# The words a denial or a like/dislike is told with, and who may tell it: the speaker,
# another person ("my kids don't like it", "he wouldn't notice"), or another person
# telling the speaker ("the doctor says no sugar": a restriction on the speaker).
_ANCHORS = NEGATORS | STANCE_POS | STANCE_NEG | LIKE_FORMS
_SPEAKER = FIRST_PERSON_SUBJECT | {"me", "us"}
_OTHERS = OTHER_PEOPLE | {"they're"}
_TELLING = frozenset(
    "says said say tells told tell warned warns warning advised advises ordered orders insists insisted".split()
)
# What there is not: "there's no", "there was no", "there isn't".
_THERE_IS = frozenset({("there's",), ("there", "is"), ("there", "was"), ("there", "are"), ("there", "were")})
_THERE_NOT = frozenset("isn't wasn't aren't weren't".split())


def _someone_elses(toks: list[str]) -> bool:
    """Whether the first denial or like/dislike word of a clause is not the speaker's.

    It is another person's when the nearest person named before it is not the
    speaker and does not tell the speaker something ("the doctor says no sugar" is the
    speaker's); nobody's when it tells what there is not or who did not ("there was no
    queue", "no one was at the club"): a scene, no side taken ("there's no way" is a
    refusal).
    """
    anchor = next((i for i, t in enumerate(toks) if t in _ANCHORS), None)
    if anchor is None:
        return False
    word, after = toks[anchor], toks[anchor + 1] if anchor + 1 < len(toks) else ""
    if word == "nobody" or (word == "no" and after == "one"):
        return True
    before = tuple(toks[max(0, anchor - 2):anchor])
    existential = (before[-1:] in _THERE_IS or before in _THERE_IS
                   or (before[-1:] == ("there",) and word in _THERE_NOT))
    if existential and after != "way":
        return True
    telling = False
    for t in reversed(toks[:anchor]):
        if t in _SPEAKER:
            return False
        if t in _TELLING:
            telling = True
        elif t in _OTHERS:
            return not telling
    return False


def clauses(text: str) -> list[str]:
    """The clauses of a sentence, normalised, in order, without empty ones.

    Parameters
    ----------
    text : str
        One statement.

    Returns
    -------
    list of str
    """
    return [c.strip() for c in _CLAUSE_BREAK_RE.split(normalize(text)) if c.strip()]


@lru_cache(maxsize=1 << 14)
def side_scopes(text: str) -> tuple[tuple[int, frozenset[str], StanceSource], ...]:
    """The sides a sentence's clauses take, each with the content lemmas it is about.

    Every clause whose own stance reading is not neutral, and whose denial or like or
    dislike is not told of another person ("my kids don't like it", "he wouldn't
    notice"; "the doctor says no sugar" is told *to* the speaker), gives its side (+1
    for positive and started, −1 for negative and stopped) and its content lemmas; a
    clause with none of its own (only pronouns, stance and time words) is about the
    content lemmas of the whole sentence but a bracketed label ("[kitchen]").

    Parameters
    ----------
    text : str
        One statement.

    Returns
    -------
    tuple of (int, frozenset of str, StanceSource)
        (side, lemmas, what the side rests on) per side-taking clause, in order.
    """
    parts = clauses(text)
    whole: frozenset[str] | None = None
    out: list[tuple[int, frozenset[str], StanceSource]] = []
    for part in parts:
        toks = tokenize(part)
        label, source = stance_reading(part, toks)
        side = side_of(label)
        # A cessation reads its own subject (find_cessation); a denial or a dislike
        # told of another person is theirs.
        if not side or (source != "change" and _someone_elses(toks)):
            continue
        own = content_lemmas(toks)
        if not own:
            if whole is None:
                whole = content_lemmas(tokenize(_LABEL_RE.sub(" ", text)))
            own = whole
        out.append((side, own, source))
    return tuple(out)


def takes_side_on(text: str, topic: frozenset[str], side: int) -> bool:
    """Whether a clause of ``text`` takes ``side`` on something named by ``topic``, with
    more than a feeling.

    Parameters
    ----------
    text : str
        One statement.
    topic : frozenset of str
        Content lemmas (:func:`~personatree.text.topic.content_lemmas`) of what the
        side would have to be about.
    side : int
        −1 (against, stopped) or +1 (for, started).

    Returns
    -------
    bool
        True when some clause reads as ``side`` on its own, by more than general
        affect, and its lemmas meet ``topic``. How a moment felt takes no side on
        what its clause names: in "there was no queue, but the sushi tasted awful"
        the denial is about the queue and the sushi's taste is only a feeling.
    """
    return any(s == side and source != "affect" and not lemmas.isdisjoint(topic)
               for s, lemmas, source in side_scopes(text))
