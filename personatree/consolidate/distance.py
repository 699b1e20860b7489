"""The mixed distance between orphan leaves (pure functions over arrays).

For leaves i, j with unit embeddings xᵢ, schema types aᵢ and times tᵢ (days)::

    d(i, j) = w_cos · (1 − xᵢ·xⱼ) + w_schema · m(aᵢ, aⱼ) + w_time · min(1, |tᵢ − tⱼ| / τ)

The schema mismatch m is 0 for the same type, 1 for types that share no allowed mid
type (κ-incompatible: they can never support one mid), and 1 − Jaccard of the two
allowed-parent sets in between (an ``event`` and a ``preference`` can both feed a
``preference`` mid, so they are closer than a ``fact`` and a ``preference``).
Cosine distance lies in [0, 2], so d lies in [0, 2·w_cos + w_schema + w_time].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..config import ConsolidationConfig
from ..schema import SchemaRegistry
from ..types import Level

_BLOCK = 1024

__all__ = ["DistanceWeights", "type_mismatch", "mixed_distance", "pair_distance", "max_distance"]


@dataclass(frozen=True, slots=True)
class DistanceWeights:
    """Weights of the three terms and the time scale τ (days)."""

    w_cosine: float = 1.0
    w_schema: float = 0.3
    w_time: float = 0.1
    time_scale_days: float = 180.0

    @classmethod
    def from_config(cls, config: ConsolidationConfig) -> "DistanceWeights":
        """The weights named in a :class:`ConsolidationConfig`."""
        return cls(config.w_cosine, config.w_schema, config.w_time, config.time_scale_days)


def max_distance(w: DistanceWeights) -> float:
    """The largest value :func:`mixed_distance` can take (used to join disconnected parts)."""
    return 2.0 * w.w_cosine + w.w_schema + w.w_time


def type_mismatch(types: Sequence[str], registry: SchemaRegistry) -> np.ndarray:
    """The schema-mismatch matrix m over ``types`` (leaf-level types).

    Parameters
    ----------
    types : sequence of str
        Distinct leaf schema types; row/column k is ``types[k]``.
    registry : SchemaRegistry
        Gives each type's allowed mid types (κ at leaf level).

    Returns
    -------
    ndarray of shape (len(types), len(types)), float32
        0 on the diagonal, 1 for κ-incompatible pairs, 1 − Jaccard otherwise.
    """
    mids = [t.name for t in registry.types_at(Level.MID)]
    allowed = [{m for m in mids if registry.kappa(a, Level.LEAF, m)} for a in types]
    k = len(types)
    out = np.ones((k, k), dtype=np.float32)
    for i in range(k):
        for j in range(k):
            if i == j:
                out[i, j] = 0.0
            elif allowed[i] & allowed[j]:
                out[i, j] = 1.0 - len(allowed[i] & allowed[j]) / len(allowed[i] | allowed[j])
    return out


def mixed_distance(
    emb: np.ndarray,
    codes: np.ndarray,
    days: np.ndarray,
    mismatch: np.ndarray,
    w: DistanceWeights,
) -> np.ndarray:
    """The dense n×n mixed distance matrix (float64, as hdbscan's precomputed path needs).

    Parameters
    ----------
    emb : ndarray of shape (n, d)
        Unit-norm embeddings.
    codes : ndarray of shape (n,), int
        Index of each leaf's type into ``mismatch``.
    days : ndarray of shape (n,)
        Leaf times in days (any origin).
    mismatch : ndarray of shape (T, T)
        From :func:`type_mismatch`.
    w : DistanceWeights

    Returns
    -------
    ndarray of shape (n, n), float64, zero diagonal (symmetric up to float rounding)
    """
    x = np.asarray(emb, dtype=np.float32)
    n = x.shape[0]
    out = np.empty((n, n), dtype=np.float64)
    t = np.asarray(days, dtype=np.float32)
    # Row blocks bound the float32 temporaries to block × n; the result is the only n×n array.
    for s in range(0, n, _BLOCK):
        e = min(n, s + _BLOCK)
        blk = x[s:e] @ x.T
        np.subtract(1.0, blk, out=blk)
        np.clip(blk, 0.0, 2.0, out=blk)
        blk *= w.w_cosine
        if w.w_schema:
            blk += w.w_schema * mismatch[codes[s:e, None], codes[None, :]]
        if w.w_time:
            gap = np.abs(t[s:e, None] - t[None, :])
            gap *= 1.0 / w.time_scale_days
            np.minimum(gap, 1.0, out=gap)
            blk += w.w_time * gap
        out[s:e] = blk
    np.fill_diagonal(out, 0.0)
    return out


def pair_distance(
    emb: np.ndarray,
    codes: np.ndarray,
    days: np.ndarray,
    mismatch: np.ndarray,
    w: DistanceWeights,
    rows: np.ndarray,
    cols: np.ndarray,
) -> np.ndarray:
    """The mixed distance for the listed pairs only (``rows[k]``, ``cols[k]``), exact.

    Returns
    -------
    ndarray of shape (len(rows),), float64
    """
    x = np.asarray(emb, dtype=np.float32)
    cos = np.einsum("ij,ij->i", x[rows], x[cols]).astype(np.float64)
    d = w.w_cosine * np.clip(1.0 - cos, 0.0, 2.0)
    d += w.w_schema * mismatch[codes[rows], codes[cols]]
    gap = np.abs(np.asarray(days, dtype=np.float64)[rows] - np.asarray(days, dtype=np.float64)[cols])
    d += w.w_time * np.minimum(gap / w.time_scale_days, 1.0)
    return d
