"""Tokens and lemmas: lower-case word tokens and a crude stemmer.

:func:`tokenize` is the tokenizer of the offline judge (and of the BM25 baselines, with
``contractions=False``); :func:`lemma` maps "hike/hikes/hiked/hiking" to one key, so the
same word in different forms compares equal. :data:`APOSTROPHES` maps typographic
apostrophes to ``'`` before any pattern runs.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..lexicons import FIRST_PERSON

__all__ = ["APOSTROPHES", "normalize", "tokenize", "lemma", "has_first_person"]

APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)*")
# The same words with the apostrophe as a separator ("can't" -> "can", "t").
_SPLIT_TOKEN_RE = re.compile(r"[a-z0-9]+")


def normalize(text: str) -> str:
    """Lower-case ``text`` and map typographic apostrophes to ``'``.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    str
        The text as every word pattern of this package expects it.
    """
    return text.translate(APOSTROPHES).lower()


def tokenize(text: str, *, contractions: bool = True) -> list[str]:
    """Lower-case word tokens, keeping contractions whole ("can't", "i'm").

    Parameters
    ----------
    text : str
        Any text (normalised internally).
    contractions : bool
        Keep contractions and possessives as one token ("can't", "anna's"). With
        ``False`` the apostrophe separates words ("can", "t"; "anna", "s"): the
        tokens the BM25 baselines (:func:`personatree.bench.packing.lexical_tokens`)
        index.

    Returns
    -------
    list of str
        The tokens in order.
    """
    pattern = _TOKEN_RE if contractions else _SPLIT_TOKEN_RE
    return pattern.findall(normalize(text))


_KEEP_S = ("ss", "us", "is", "os", "as")


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """A crude lemma: strip possessive, plural ``s``, ``ing`` and ``ed``, a final ``e``
    and a doubled final consonant, so "hike", "hikes", "hiked" and "hiking" (and "run",
    "running") share one key.

    It is not linguistics: it only has to make the same word in different forms
    compare equal, cheaply and deterministically.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    str
        The lemma (the word itself when it is three letters or shorter).
    """
    w = word
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) >= 6:
        w = w[:-3]
    elif w.endswith("ed") and len(w) >= 5:
        w = w[:-2]
    elif w.endswith("es") and len(w) >= 5 and w[-3] in "sxz":
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(_KEEP_S):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def has_first_person(tokens: list[str]) -> bool:
    """Whether the tokens contain a first-person pronoun ("I", "my", "we", "I'm", ...).

    Parameters
    ----------
    tokens : list of str
        Output of :func:`tokenize`.

    Returns
    -------
    bool
        True when one of :data:`personatree.lexicons.FIRST_PERSON` occurs.
    """
    return not FIRST_PERSON.isdisjoint(tokens)
