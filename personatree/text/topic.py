"""Topic: what a sentence is about, as a key phrase and as a set of content lemmas.

Both skip the same words (:data:`personatree.lexicons.TOPIC_SKIP`: stopwords,
stance/affect words, light verbs, time words, intensifiers, negators, pronouns), so
the phrase a leaf is filed under and the lemmas two statements share agree.
"""

from __future__ import annotations

from ..lexicons import TOPIC_SKIP
from .tokens import lemma

__all__ = ["key_topic", "content_lemmas"]


def _is_content(token: str) -> bool:
    """A word that can name a topic: not skipped, not a number, longer than one letter."""
    return token not in TOPIC_SKIP and not token.isdigit() and len(token) > 1


def key_topic(tokens: list[str], max_words: int = 3) -> str:
    """A short lower-case key phrase naming what a sentence is about.

    Heuristic, no parser: split the tokens into runs of consecutive content words,
    where stopwords, stance/affect words, light verbs ("go", "have", "feel"), time
    words, intensifiers, negators and predicate adjectives ("allergic", "keen") break
    runs; numbers are ignored. The longest run wins, the first on ties, cut to
    ``max_words``. This picks the object of the stance verb ("I love hiking in the
    mountains" → "hiking"), the governed noun ("I'm allergic to peanuts" →
    "peanuts") or the main noun phrase ("I went to a NAMI support group" →
    "nami support group").

    Parameters
    ----------
    tokens : list of str
        Output of :func:`~personatree.text.tokenize`.
    max_words : int
        Longest phrase.

    Returns
    -------
    str
        The phrase, or ``""`` when the sentence has no content word.
    """
    best: list[str] = []
    run: list[str] = []
    for t in tokens:
        if _is_content(t):
            run.append(t)
        else:
            if len(run) > len(best):
                best = run
            run = []
    if len(run) > len(best):
        best = run
    return " ".join(best[:max_words])


def content_lemmas(tokens: list[str]) -> frozenset[str]:
    """Lemmas of the content words: what two statements can share topically.

    Stopwords, stance/affect words, light verbs, time words, intensifiers, negators and
    pronouns are left out, so "I love hiking" and "I stopped hiking" share exactly
    ``{"hik"}``.

    Parameters
    ----------
    tokens : list of str
        Output of :func:`~personatree.text.tokenize`.

    Returns
    -------
    frozenset of str
        The lemmas (:func:`~personatree.text.lemma`), without repeats.
    """
    return frozenset(lemma(t) for t in tokens if _is_content(t))
