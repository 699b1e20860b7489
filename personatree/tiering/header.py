"""Node headers and the HMO priority S_m, as pure functions.

    S_m = (α·I_m + β·Sim(m,P)) · g(C_m) · exp(−λ·Δt / g(C_m))

Two choices make the formula well behaved, and both are deliberate:

* ``g(C) = ln(2 + C)`` (i.e. ln(1 + C_m) with C_m counted from 1): with the literal
  ln(1 + C_m) a never-recalled node has S_m = 0 and a 0/0 in the exponent, so every
  fresh node would tie at zero. ln 2 keeps fresh nodes ranked by importance,
  similarity and age, and g stays increasing, so each recall both raises S_m and
  stretches the decay time (``g/λ``): more recalls flatten the decay.
* Sim(m, P) enters as ``(1 + cos)/2`` ∈ [0, 1]: the base must stay non-negative, or
  a negative base would make older nodes *rise* (exp decay of a negative number).

Δt counts days since the node was last touched, by evidence (``t_last``) or by a
recall (``t_access``), and is never negative. Every function takes ``now``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ..types import Level, Node

__all__ = [
    "NodeHeader",
    "recall_strength",
    "persona_term",
    "priority",
    "priorities",
    "offline_importance",
    "last_touch",
    "age_days",
    "header_of",
]

# Higher levels are more durable claims about the person, so they start more important.
_LEVEL_WEIGHT = {Level.LEAF: 0.2, Level.MID: 0.6, Level.ROOT: 1.0}
# Support saturates: the 10th supporting leaf says less than the 2nd.
_SUPPORT_SCALE = 5.0


@dataclass(frozen=True, slots=True)
class NodeHeader:
    """The HMO header of one node.

    Attributes
    ----------
    node_id : str
    importance : float
        I_m in [0, 1] (see :func:`offline_importance`).
    persona_sim : float
        Cosine Sim(m, P) of the node's embedding to the persona vector (0 without one).
    recall_count : int
        C_m, recalls that used the node.
    t_last : datetime
        Last touch by evidence or recall.
    """

    node_id: str
    importance: float
    persona_sim: float
    recall_count: int
    t_last: datetime

    def score(self, now: datetime, *, alpha: float = 1.0, beta: float = 1.0, lam: float = 0.02) -> float:
        """S_m of this header read at ``now`` (see :func:`priority`)."""
        return priority(self.importance, self.persona_sim, self.recall_count, age_days(self.t_last, now),
                        alpha=alpha, beta=beta, lam=lam)


def recall_strength(recall_count: int | np.ndarray) -> float | np.ndarray:
    """g(C_m) = ln(2 + C_m): ln 2 for a never-recalled node, increasing with recalls.

    Parameters
    ----------
    recall_count : int or ndarray
        C_m ≥ 0 (negative values are treated as 0).

    Returns
    -------
    float or ndarray
    """
    if isinstance(recall_count, np.ndarray):
        return np.log(2.0 + np.maximum(recall_count, 0))
    return math.log(2.0 + max(int(recall_count), 0))


def persona_term(cosine: float | np.ndarray) -> float | np.ndarray:
    """(1 + cos)/2: Sim(m, P) mapped to [0, 1] so the base of S_m is never negative."""
    if isinstance(cosine, np.ndarray):
        return (1.0 + np.clip(cosine, -1.0, 1.0)) / 2.0
    return (1.0 + min(1.0, max(-1.0, float(cosine)))) / 2.0


def priority(
    importance: float,
    persona_sim: float,
    recall_count: int,
    dt_days: float,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    lam: float = 0.02,
) -> float:
    """S_m = (α·I_m + β·Sim) · g(C) · exp(−λ·Δt / g(C)) with g(C) = ln(2 + C).

    Parameters
    ----------
    importance : float
        I_m in [0, 1].
    persona_sim : float
        Cosine to the persona vector, in [−1, 1].
    recall_count : int
        C_m.
    dt_days : float
        Days since the last touch (negative values count as 0).
    alpha, beta, lam : float
        α, β and λ (per day).

    Returns
    -------
    float
        Non-negative priority.
    """
    g = recall_strength(recall_count)
    base = alpha * importance + beta * persona_term(persona_sim)
    return float(base * g * math.exp(-lam * max(dt_days, 0.0) / g))


def priorities(
    importance: np.ndarray,
    persona_sim: np.ndarray,
    recall_count: np.ndarray,
    dt_days: np.ndarray,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    lam: float = 0.02,
) -> np.ndarray:
    """Vectorised :func:`priority` (a full re-rank of 10⁵ nodes is one pass of numpy)."""
    g = recall_strength(np.asarray(recall_count, dtype=np.float64))
    base = alpha * np.asarray(importance, dtype=np.float64) + beta * persona_term(np.asarray(persona_sim, dtype=np.float64))
    return base * g * np.exp(-lam * np.maximum(np.asarray(dt_days, dtype=np.float64), 0.0) / g)


def offline_importance(level: Level, confidence: float, n_support: int) -> float:
    """I_m ∈ [0, 1] without an LLM: schema level, confidence and support.

    ``0.4·level + 0.4·confidence + 0.2·(1 − e^{−n_support/5})``, with level weights
    leaf 0.2, mid 0.6, root 1.0. (An LLM judge's 1–10 score at insertion, when
    configured, maps to (score − 1)/9 and replaces this.)

    Parameters
    ----------
    level : Level
    confidence : float
        Confidence read now, in [0, 1].
    n_support : int
        Supporting evidence ever seen.

    Returns
    -------
    float
    """
    support = 1.0 - math.exp(-max(n_support, 0) / _SUPPORT_SCALE)
    conf = min(1.0, max(0.0, confidence))
    return 0.4 * _LEVEL_WEIGHT[level] + 0.4 * conf + 0.2 * support


def last_touch(node: Node) -> datetime:
    """The later of ``t_last`` (evidence) and ``t_access`` (recall)."""
    if node.t_access is not None and node.t_access > node.t_last:
        return node.t_access
    return node.t_last


def age_days(t: datetime, now: datetime) -> float:
    """Days from ``t`` to ``now``, never negative."""
    return max(0.0, (now - t).total_seconds() / 86400.0)


def header_of(node: Node, confidence: float, persona: np.ndarray | None) -> NodeHeader:
    """The header of ``node`` given its confidence now and the persona vector.

    Parameters
    ----------
    node : Node
    confidence : float
        Confidence read now.
    persona : ndarray or None
        Unit persona vector; ``None`` (no claims yet) gives Sim = 0.

    Returns
    -------
    NodeHeader
    """
    sim = 0.0
    if persona is not None and node.embedding is not None:
        sim = float(np.dot(np.asarray(node.embedding, dtype=np.float32), persona))
    return NodeHeader(node.id, offline_importance(node.level, confidence, node.n_support), sim,
                      node.recall_count, last_touch(node))
