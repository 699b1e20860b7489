"""Reciprocal-rank fusion (pure functions).

RRF (Cormack et al., 2009) combines rankings without calibrating their scores: a
cosine of 0.4 and a BM25 score of 12 are not comparable, but "3rd in one list, 1st
in the other" is. Each list contributes w / (k + rank) with rank starting at 1.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import InputError

__all__ = ["rrf", "rrf_normalised", "rrf_top"]


def rrf(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Fuse rankings by reciprocal rank.

    Parameters
    ----------
    rankings : sequence of sequences of str
        Each a ranking of ids, best first (an id repeated within a list counts once,
        at its best rank).
    k : int
        The RRF constant; larger values flatten the head of each list.
    weights : sequence of float, optional
        One weight per ranking (default all 1).

    Returns
    -------
    dict of str to float
        Fused score per id, in descending score order (ties: first seen first).
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise InputError("one weight per ranking")
    out: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        seen: set[str] = set()
        rank = 0
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            out[item] = out.get(item, 0.0) + w / (k + rank)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def rrf_normalised(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> Mapping[str, float]:
    """:func:`rrf` scaled to [0, 1]: 1 means first in every ranking.

    The packer multiplies relevance with confidence and level fit, so it needs a
    bounded relevance whose scale does not depend on how many retrievers ran.
    """
    ws = list(weights) if weights is not None else [1.0] * len(rankings)
    top = rrf_top(ws, k)
    return {key: v / top for key, v in rrf(rankings, k, ws).items()}


def rrf_top(weights: Sequence[float], k: int = 60) -> float:
    """The :func:`rrf` score of an id first in every ranking (1 when that is 0).

    Parameters
    ----------
    weights : sequence of float
        One weight per ranking.
    k : int

    Returns
    -------
    float
    """
    return sum(w / (k + 1) for w in weights) or 1.0
