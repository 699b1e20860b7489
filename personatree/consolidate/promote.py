"""Root promotion: the strict criteria, the root type, and grouping (pure functions).

A mid is promotable when, read at ``now``,

* its confidence (lazily decayed) is at least θ_c,
* its support count is at least n_root,
* its evidence covers at least T_root days (t_last − t_first), and
* that evidence came in at least ``min_sessions`` distinct sessions on at least
  ``min_days`` distinct UTC days — many mentions in one burst are not a durable claim.

Its root type is, among the root types κ allows for the mid's type, the one whose
schema examples are most similar to the mid (embedding of the examples' mean; file order
without an embedder). Promotable mids of one root type are grouped by single-link
similarity ≥ ``root_similarity`` and each group is summarized into one claim; a mid that
similar to an existing root of its type joins that root instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

import numpy as np

from ..config import ConsolidationConfig
from ..schema import SchemaRegistry
from ..types import Level

__all__ = ["Criteria", "promotable", "choose_root_type", "group_by_similarity", "root_psi", "root_id"]


@dataclass(frozen=True, slots=True)
class Criteria:
    """Thresholds of root promotion."""

    theta_c: float
    n_root: int
    t_root_days: float
    min_sessions: int
    min_days: int

    @classmethod
    def from_config(cls, c: ConsolidationConfig) -> "Criteria":
        """The thresholds named in a config."""
        return cls(c.theta_c, c.n_root, c.t_root_days, c.min_sessions, c.min_days)


def promotable(
    confidence: float,
    n_support: int,
    t_first: datetime,
    t_last: datetime,
    n_sessions: int,
    n_days: int,
    criteria: Criteria,
) -> tuple[bool, str]:
    """Whether a mid may be promoted, and the first reason why not.

    Returns
    -------
    (bool, str)
        ``(True, "")`` or ``(False, reason)``.
    """
    coverage = (t_last - t_first).total_seconds() / 86400.0
    if confidence < criteria.theta_c:
        return False, f"confidence {confidence:.2f} < {criteria.theta_c}"
    if n_support < criteria.n_root:
        return False, f"support {n_support} < {criteria.n_root}"
    if coverage < criteria.t_root_days:
        return False, f"covers {coverage:.1f} days < {criteria.t_root_days}"
    if n_sessions < criteria.min_sessions:
        return False, f"{n_sessions} sessions < {criteria.min_sessions}"
    if n_days < criteria.min_days:
        return False, f"{n_days} distinct days < {criteria.min_days}"
    return True, ""


def choose_root_type(
    mid_type: str,
    registry: SchemaRegistry,
    vector: np.ndarray | None = None,
    type_vectors: Mapping[str, np.ndarray] | None = None,
) -> str | None:
    """The κ-allowed root type whose examples best match ``vector`` (None: none allowed)."""
    allowed = [t.name for t in registry.types_at(Level.ROOT) if registry.kappa(mid_type, Level.MID, t.name)]
    if not allowed:
        return None
    if vector is None or not type_vectors:
        return allowed[0]
    v = np.asarray(vector, dtype=np.float32)

    def score(t: str) -> float:
        tv = type_vectors.get(t)
        # Vectors of another embedder (another dimension) cannot be compared: no vote.
        return float(v @ tv) if tv is not None and tv.shape == v.shape else -2.0

    # max() keeps the first of equal scores, i.e. file order breaks ties.
    return max(allowed, key=score)


def group_by_similarity(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Single-link groups of rows with cosine ≥ ``threshold`` (connected components).

    Returns
    -------
    list of list of int
        Groups in order of their smallest index, members ascending.
    """
    n = vectors.shape[0]
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    if n > 1:
        sims = vectors @ vectors.T
        ii, jj = np.nonzero(np.triu(sims >= threshold, k=1))
        for i, j in zip(ii.tolist(), jj.tolist()):
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return [groups[k] for k in sorted(groups)]


def root_psi(confidence: float) -> float:
    """ψ a promoted mid lends its root: 2·confidence − 1, clipped to [0, 1]."""
    return min(1.0, max(0.0, 2.0 * confidence - 1.0))


def root_id(user_id: str, root_type: str, mid_ids: Sequence[str], now: datetime) -> str:
    """Deterministic root id (``now`` included: a pruned root's mids may form a new one later)."""
    h = hashlib.sha256("\x1f".join([user_id, root_type, now.isoformat(), *sorted(mid_ids)]).encode())
    return "rt_" + h.hexdigest()[:20]
