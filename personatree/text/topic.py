"""Topic: what a sentence is about, as a key phrase and as a set of content lemmas.

Both skip the same words (:data:`personatree.lexicons.TOPIC_SKIP`: stopwords,
stance/affect words, light verbs, time words, intensifiers, negators, pronouns), so
the phrase a leaf is filed under and the lemmas two statements share agree.
"""

from __future__ import annotations

from ..lexicons import NOT_NAMING, TOPIC_SKIP
from .tokens import lemma, tokenize
from .word_class import noun_reading

__all__ = ["key_topic", "content_lemmas", "share_a_topic", "can_head", "can_name"]




def _forms(word: str) -> set[str]:
    """A word's regular inflections ("share" → shares, shared, sharing; "win" → wins,
    winning). Compared as forms, not as lemmas: the crude lemma would also bar
    "wine" (win) and "car" (care)."""
    out = {word, word + "s", word + "es", word + "ed", word + "ing"}
    if word.endswith("e"):
        out |= {word + "d", word[:-1] + "ing"}
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        out |= {word[:-1] + "ies", word[:-1] + "ied"}
    # A short word ending consonant-vowel-consonant doubles it: "chat" → "chatting".
    cvc = word[-1] not in "aeiouwxy" and word[-2:-1] in tuple("aeiou") and word[-3:-2] not in tuple("aeiou")
    if len(word) <= 4 and cvc:
        out |= {word + word[-1] + "ing", word + word[-1] + "ed"}
    return out


_NOT_NAMING_FORMS = frozenset(f for w in NOT_NAMING for f in _forms(w))
# Nouns that end like a participle or an adverb ("speed", "family").
_ED_NOUNS = frozenset("speed breed greed creed steed hundred".split())
_LY_NOUNS = frozenset("family supply jelly belly rally bully assembly anomaly italy july ally".split())
# Nouns among the words of the adjective endings "-able", "-ible" and "-ous".
_ABLE_NOUNS = frozenset("vegetable timetable turntable constable collectable collectible crucible".split())


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


def share_a_topic(a: str, b: str) -> bool:
    """Whether two statements share a content word, by lemma (pure).

    Parameters
    ----------
    a, b : str
        The two statements.

    Returns
    -------
    bool
    """
    return not content_lemmas(tokenize(a)).isdisjoint(content_lemmas(tokenize(b)))


def can_name(word: str) -> bool:
    """Whether a content word can name a pattern: "hiking", "sushi", "pottery" can;
    "shares", "talked", "stunning", "difference", "increasingly" cannot.

    A word list (:data:`personatree.lexicons.NOT_NAMING`, with the regular inflections
    of its words and a few irregular pasts) and endings without a parser: a participle
    or past form ("volunteered", "posted"), an adverb ("really", "increasingly") and an
    adjective ("beautiful", "admirable", "incredible", "delicious"), each with the few
    nouns of that ending ("speed", "family", "vegetable"). Gerunds of real activities
    ("hiking") name their activity.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    bool
    """
    w = word.removesuffix("'s")
    if not _is_content(w) or w in _NOT_NAMING_FORMS:
        return False
    if w.endswith("ed") and len(w) >= 5 and w not in _ED_NOUNS:
        return False
    if w.endswith("ly") and len(w) >= 5 and w not in _LY_NOUNS:
        return False
    if w.endswith(("able", "ible")) and len(w) >= 6 and w not in _ABLE_NOUNS:
        return False  # "admirable", "incredible": what a thing is like, not the thing
    if w.endswith("ous") and len(w) >= 6:
        return False  # "delicious", "nervous"
    return not (w.endswith("ful") and len(w) >= 6)


def can_head(word: str) -> bool:
    """Whether a word can name a pattern alone or end the phrase that names it.

    :func:`can_name`, and a word English reads as a noun or a gerund
    (:func:`~personatree.text.word_class.noun_reading`): "strong", "met" and "assist"
    name nothing ("Often talks about strong"). Inside a phrase an adjective may stand
    before its noun ("mental health"), so only a phrase's last word must pass this.
    A word the lexicon does not know (a name, "biz") is left to :func:`can_name`.

    Parameters
    ----------
    word : str
        A lower-case token.

    Returns
    -------
    bool
    """
    return can_name(word) and noun_reading(word.removesuffix("'s")) is not False
