"""What a change of life reaches: the habits and plans it rules out or reshapes.

A statement of a change and the habit it ends are often far apart in meaning to a
sentence embedder ("my knee is in a brace for two months" and "I run along the river
before work" sit near cosine 0.15), because the link between them is knowledge of the
world, not shared words. :data:`~personatree.lexicons.CHANGE_REACH` holds a little of
that knowledge for the changes people most often tell (an injury, giving up alcohol or
caffeine, a pregnancy or a birth, a new pet, leaving a job, a move, a break-up, a diet,
failing eyesight or hearing, a stomach or heart condition, migraines, giving up
gaming or social media);
:func:`reach_of` reads which of them a change names, :func:`words_of` what they reach,
and :func:`named_words` the words a statement names, to compare with them.
"""

from __future__ import annotations

from ..lexicons import CHANGE_REACH, CHANGE_REACH_ANCHORS
from .tokens import normalize, tokenize

__all__ = ["named_words", "reach_of", "words_of"]

_WORDS = {kind: words for kind, _, words in CHANGE_REACH}
# The kinds whose pattern a sentence holding the word may match: a set lookup per
# word is a fraction of a pattern's cost, and most sentences hold no kind's word.
_KINDS_OF: dict[str, list[int]] = {}
for _i, _entry in enumerate(CHANGE_REACH):
    for _word in CHANGE_REACH_ANCHORS[_entry[0]]:
        _KINDS_OF.setdefault(_word, []).append(_i)


def reach_of(sentence: str) -> tuple[str, ...]:
    """The kinds of change ``sentence`` names (pure).

    Parameters
    ----------
    sentence : str
        A statement already read as a change (:func:`~personatree.text.is_change`):
        the patterns name the thing changed, not the change.

    Returns
    -------
    tuple of str
        Kinds of :data:`~personatree.lexicons.CHANGE_REACH`, in its order; empty for
        none.
    """
    low = normalize(sentence)
    tried = sorted({i for w in named_words(low) for i in _KINDS_OF.get(w, ())})
    return tuple(CHANGE_REACH[i][0] for i in tried if CHANGE_REACH[i][1].search(low))


def words_of(kinds: tuple[str, ...]) -> frozenset[str]:
    """The words of what the kinds of change ``kinds`` reach (pure).

    Parameters
    ----------
    kinds : tuple of str
        Kinds of :data:`~personatree.lexicons.CHANGE_REACH`; unknown kinds reach
        nothing.

    Returns
    -------
    frozenset of str
    """
    return frozenset().union(*(_WORDS.get(k, frozenset()) for k in kinds))


def named_words(sentence: str) -> frozenset[str]:
    """The words a statement names, as they are compared with :func:`words_of` (pure).

    Its tokens, and the noun of each possessive ("the team's" names "team").

    Parameters
    ----------
    sentence : str

    Returns
    -------
    frozenset of str
    """
    toks = tokenize(sentence)
    return frozenset(toks).union(t[:-2] for t in toks if t.endswith("'s"))
