"""Pure helpers the baselines share: ranking fusion, lexical tokenization, budget packing.

Every function takes values and returns values, so the baselines' behaviour at a
budget can be tested without a model.
"""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

from personatree.text import tokenize

__all__ = ["rrf", "lexical_tokens", "pack_best_first", "pack_recent"]

K = TypeVar("K", bound=Hashable)
# Function words carry no topic; dropping them keeps BM25 from matching on "the".
_STOP = frozenset(
    "a an the and or but if of to in on at for with from by as is are was were be been am i me my "
    "you your we our they their it its this that these those do does did not no so what which who "
    "when where how why there here then them him her his she he has have had will would can could "
    "should about into over than too very just".split()
)


def rrf(rankings: Sequence[Sequence[K]], k: int = 60) -> list[K]:
    """Reciprocal rank fusion of several rankings (best first).

    score(x) = Σ_r 1 / (k + rank_r(x)), ranks starting at 1; ties keep the order of
    first appearance, so the result is deterministic.

    Parameters
    ----------
    rankings : sequence of sequences
        Each a best-first list of keys.
    k : int
        The RRF constant (60 in the original paper).

    Returns
    -------
    list
        Every key that appears in any ranking, best first.

    Examples
    --------
    >>> rrf([["a", "b", "c"], ["b", "c", "a"]])
    ['b', 'a', 'c']
    """
    scores: dict[K, float] = {}
    order: dict[K, int] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            order.setdefault(key, len(order))
    return sorted(scores, key=lambda x: (-scores[x], order[x]))


def lexical_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words, for BM25.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
    """
    # Contractions split ("don't" -> "don", "t"), as the baselines have always indexed
    # them: keeping them whole would change every baseline score. The stop list is the
    # baselines' own, shorter than the judge's STOPWORDS, for the same reason.
    return [w for w in tokenize(text, contractions=False) if w not in _STOP]


def pack_best_first(order: Sequence[K], costs: dict[K, int], budget: int) -> list[K]:
    """Greedy first-fit packing: take items best first, skipping any that no longer fit.

    Skipping (rather than stopping) lets a short relevant item behind a long one
    still get in, which is what a sensible retrieval baseline does.

    Parameters
    ----------
    order : sequence
        Keys best first.
    costs : dict
        Token cost of each key (including its separator).
    budget : int
        Total tokens available.

    Returns
    -------
    list
        Chosen keys in rank order; their costs sum to at most ``budget``.
    """
    out: list[K] = []
    used = 0
    for key in order:
        c = costs[key]
        if used + c <= budget:
            out.append(key)
            used += c
    return out


def pack_recent(chronological: Sequence[K], costs: dict[K, int], budget: int) -> list[K]:
    """The longest suffix of the history that fits: most recent turns, truncated to the budget.

    Parameters
    ----------
    chronological : sequence
        Keys oldest first.
    costs : dict
        Token cost of each key.
    budget : int

    Returns
    -------
    list
        The chosen keys, most recent first.
    """
    out: list[K] = []
    used = 0
    for key in reversed(chronological):
        c = costs[key]
        if used + c > budget:
            break
        out.append(key)
        used += c
    return out
