"""The persona vector P and the drift gate.

P is the confidence-weighted mean of the embeddings of the roots and the strong mids
(confidence ≥ ``strong_mid``): the tree's own durable claims *are* the persona. When
P moves by at least τ (L2, both unit vectors) since the last full re-rank, every
node's Sim(m, P) is stale enough to re-rank tiers 1 and 2; below τ only the nodes a
change touched are re-scored (against the anchored P, so scores stay comparable).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

import numpy as np

from ..graph import MemoryGraph
from ..render import node_confidence
from ..types import Level

__all__ = ["persona_vector", "graph_persona", "drift", "needs_rerank"]


def persona_vector(embeddings: Sequence[np.ndarray] | np.ndarray, weights: Sequence[float] | np.ndarray) -> np.ndarray | None:
    """Unit-norm weighted mean of ``embeddings``.

    Parameters
    ----------
    embeddings : sequence of ndarray, or ndarray of shape (n, d)
    weights : sequence of float
        Non-negative weights (confidences).

    Returns
    -------
    ndarray or None
        ``None`` when there is nothing to average (no claims, or all weights 0).
    """
    if len(embeddings) == 0:
        return None
    m = np.asarray(embeddings, dtype=np.float64)
    w = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
    if w.sum() <= 0.0:
        return None
    v = (w[:, None] * m).sum(axis=0) / w.sum()
    n = float(np.linalg.norm(v))
    return None if n == 0.0 else (v / n).astype(np.float32)


def graph_persona(graph: MemoryGraph, registry: Any, now: datetime, *, strong_mid: float = 0.7) -> np.ndarray | None:
    """P for one user's tree at ``now``: roots and mids with confidence ≥ ``strong_mid``."""
    vecs: list[np.ndarray] = []
    weights: list[float] = []
    for lv in (Level.ROOT, Level.MID):
        for n in graph.nodes(lv):
            if n.embedding is None:
                continue
            c = node_confidence(n, registry, now)
            if lv is Level.ROOT or c >= strong_mid:
                vecs.append(n.embedding)
                weights.append(c)
    return persona_vector(vecs, weights)


def drift(p_new: np.ndarray | None, p_anchor: np.ndarray | None) -> float:
    """‖P_new − P_anchor‖₂; infinite when exactly one of them exists, 0 when neither does."""
    if p_new is None and p_anchor is None:
        return 0.0
    if p_new is None or p_anchor is None:
        return float("inf")
    return float(np.linalg.norm(np.asarray(p_new, dtype=np.float64) - np.asarray(p_anchor, dtype=np.float64)))


def needs_rerank(p_new: np.ndarray | None, p_anchor: np.ndarray | None, tau: float) -> bool:
    """The drift gate: a full re-rank of tiers 1 and 2 iff ‖P_new − P_anchor‖₂ ≥ τ."""
    return drift(p_new, p_anchor) >= tau
