"""Turning a cluster of orphan leaves into a mid (pure functions plus one graph step).

A cluster becomes a mid only when

1. one mid type accepts at least ``n_min`` of its leaves (κ(leaf type, LEAF, mid type));
   the type accepting the most wins, ties broken by the members' own most common type,
   then by similarity of the cluster centroid to the type's examples, then file order;
2. the accepted leaves at least ``member_similarity`` from the centroid number ≥ n_min;
3. they are cohesive: mean pairwise cosine ≥ ``min_cohesion`` (HDBSCAN's density is
   relative, so without an absolute gate it finds "clusters" in pure noise).

The mid's confidence replays its members as evidence in time order, exactly as if they
had attached one by one: ℓ starts at the type prior, decays toward it between mentions,
and each leaf adds ψ·γ with ψ = its cosine to the centroid, clipped to [0, 1].
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import datetime
from typing import Mapping, Sequence

import numpy as np

from ..confidence import days_between, update_logit
from ..schema import SchemaRegistry
from ..types import Level, Node

__all__ = [
    "choose_mid_type", "cohesion", "support_psi", "evidence_logit", "unit", "mid_id",
    "evidence_span", "merge_span", "SPAN_CAP", "coalesce", "size_cap", "union_cohesion",
]

SPAN_CAP = 64  # distinct sessions / days remembered per mid (promotion needs only a few)


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to unit norm, as float32 (a zero vector stays zero)."""
    v = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v if n == 0.0 else (v / n).astype(np.float32)


def cohesion(vectors: np.ndarray) -> float:
    """Mean pairwise cosine similarity of unit rows (1.0 for a single row).

    Unlike the mean similarity to the centroid, it does not grow for small groups.
    """
    n = vectors.shape[0]
    if n < 2:
        return 1.0
    s = vectors.sum(axis=0, dtype=np.float64)
    # Σ_{i≠j} xᵢ·xⱼ = ‖Σx‖² − Σ‖x‖², for unit rows the second term is n.
    return float((s @ s - n) / (n * (n - 1)))


def support_psi(vectors: np.ndarray, centroid: np.ndarray) -> np.ndarray:
    """ψ of each member: cosine to the (unit) centroid, clipped to [0, 1]."""
    return np.clip(vectors @ centroid, 0.0, 1.0).astype(np.float64)


def evidence_logit(
    prior: float,
    half_life_days: float | None,
    times: Sequence[datetime],
    weights: Sequence[float],
    clip: float,
) -> float:
    """The logit after replaying ``weights`` at ``times`` (sorted by time) from the prior.

    Returns
    -------
    float
        The logit at the last time, in [−clip, clip].
    """
    order = sorted(range(len(times)), key=lambda i: times[i])
    logit = prior
    last = times[order[0]] if order else None
    for i in order:
        assert last is not None
        logit = update_logit(logit, prior, half_life_days, days_between(last, times[i]), [weights[i]], clip)
        last = max(last, times[i])
    return logit


def choose_mid_type(
    leaf_types: Sequence[str],
    registry: SchemaRegistry,
    centroid: np.ndarray | None = None,
    type_vectors: Mapping[str, np.ndarray] | None = None,
) -> tuple[str | None, int]:
    """The mid type accepting the most members, and how many it accepts.

    Returns
    -------
    (str or None, int)
        ``(None, 0)`` when no mid type accepts any member.
    """
    own_counts = Counter(leaf_types)
    best: tuple[tuple[float, ...], str] | None = None
    for order, mt in enumerate(t.name for t in registry.types_at(Level.MID)):
        count = sum(registry.kappa(lt, Level.LEAF, mt) for lt in leaf_types)
        if count == 0:
            continue
        own = float(own_counts.get(mt, 0))  # members that already have this very type
        sim = 0.0
        tv = type_vectors.get(mt) if type_vectors else None
        if centroid is not None and tv is not None and tv.shape == centroid.shape:
            sim = float(centroid @ tv)
        key = (float(count), own, sim, -float(order))
        if best is None or key > best[0]:
            best = (key, mt)
    if best is None:
        return None, 0
    return best[1], int(best[0][0])


def mid_id(user_id: str, member_ids: Sequence[str]) -> str:
    """Deterministic mid id from its founding members (a replay recreates the same id)."""
    h = hashlib.sha256("\x1f".join([user_id, *sorted(member_ids)]).encode()).hexdigest()
    return "md_" + h[:20]


def evidence_span(leaves: Sequence[Node]) -> tuple[list[str], list[str]]:
    """Distinct session ids and UTC calendar days of the leaves' provenance (sorted, capped)."""
    sessions: set[str] = set()
    days: set[str] = set()
    for leaf in leaves:
        for p in leaf.provenance:
            sessions.add(p.session_id)
            days.add(f"{p.at:%Y-%m-%d}")
        if not leaf.provenance:
            days.add(f"{leaf.t_first:%Y-%m-%d}")
    return sorted(sessions)[:SPAN_CAP], sorted(days)[:SPAN_CAP]


def merge_span(*spans: Sequence[str]) -> list[str]:
    """Union of span lists, sorted and capped."""
    out: set[str] = set()
    for s in spans:
        out.update(str(x) for x in s)
    return sorted(out)[:SPAN_CAP]


def _coh(square_norm: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Cohesion from ‖Σx‖² and group size (1 for groups of one)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (square_norm - size) / (size * (size - 1.0))
    return np.where(size >= 2, out, 1.0)


def coalesce(
    vectors: np.ndarray, labels: np.ndarray, kinds: Sequence[str | None], ratio: float, floor: float,
) -> np.ndarray:
    """Join clusters that are one pattern cut in pieces (pure; labels −1 stay noise).

    HDBSCAN must split a lone dense group (it may not select the root), and the
    excess-of-mass choice likes tight sub-groups, so one pattern said in varied words
    can come back as several clusters. Two clusters with the same mid type ``kinds[k]``
    are joined when both are cohesive (≥ ``floor``; a loose group of stray statements
    joins nothing) and their union keeps at least ``ratio`` of the smaller cohesion of
    the two — two halves of one pattern lose almost nothing, two different patterns
    lose much more.
    Pairs are joined best first until no pair qualifies.

    Returns
    -------
    ndarray
        New labels, renumbered by first member.
    """
    labels = labels.copy()
    k = int(labels.max(initial=-1)) + 1
    if k >= 2:
        sums = np.stack([vectors[labels == i].sum(axis=0, dtype=np.float64) for i in range(k)])
        size = np.bincount(labels[labels >= 0], minlength=k).astype(np.float64)
        names = sorted({x for x in kinds if x is not None})
        code = np.array([names.index(x) if x is not None else -1 for x in kinds])
        gram = sums @ sums.T
        own = _coh(np.diag(gram).copy(), size)
        alive = (size > 0) & (code >= 0) & (own >= floor)
        same = (code[:, None] == code[None, :]) & np.triu(np.ones((k, k), dtype=bool), 1)
        while True:
            m = size[:, None] + size[None, :]
            union = _coh(np.diag(gram)[:, None] + np.diag(gram)[None, :] + 2.0 * gram, m)
            base = np.minimum(own[:, None], own[None, :])
            ok = same & alive[:, None] & alive[None, :] & (base > 0) & (union >= ratio * base)
            if not ok.any():
                break
            score = np.where(ok, union / np.where(base > 0, base, 1.0), -np.inf)
            i, j = np.unravel_index(int(np.argmax(score)), score.shape)  # first best: smallest i, j
            labels[labels == j] = i
            sums[i] += sums[j]
            size[i] += size[j]
            alive[j] = False
            gram[i, :] = sums @ sums[i]
            gram[:, i] = gram[i, :]
            own[i] = _coh(np.array([gram[i, i]]), np.array([size[i]]))[0]
    out = np.full_like(labels, -1)
    seen: dict[int, int] = {}
    for pos, lab in enumerate(labels.tolist()):
        if lab >= 0:
            out[pos] = seen.setdefault(lab, len(seen))
    return out


def size_cap(coh: float, floor: float, tight: float, loose_size: int, max_size: int) -> int:
    """Most members one mid may be formed from at cohesion ``coh``.

    A pattern said a thousand times in close words is one pattern; a thousand loosely
    related statements are many. So the cap grows with cohesion: ``loose_size`` at the
    cohesion floor, linearly up to ``max_size`` at ``tight`` and above.

    Returns
    -------
    int
    """
    lo, hi = min(loose_size, max_size), max(loose_size, max_size)
    if tight <= floor:
        return hi
    frac = min(1.0, max(0.0, (coh - floor) / (tight - floor)))
    return int(round(lo + (hi - lo) * frac))


def union_cohesion(a: np.ndarray, n_a: int, coh_a: float, b: np.ndarray, n_b: int, coh_b: float) -> float:
    """Cohesion of the union of two groups known only by unit centroid, size and cohesion.

    For unit rows, ‖Σx‖² = n + n(n−1)·cohesion, so each group's sum is its unit centroid
    scaled by that norm, and the union's cohesion follows as in :func:`cohesion`.
    """
    def total(v: np.ndarray, n: int, c: float) -> np.ndarray:
        norm = max(0.0, n + n * (n - 1) * c) ** 0.5
        return np.asarray(v, dtype=np.float64) * norm

    n = n_a + n_b
    if n < 2:
        return 1.0
    s = total(a, n_a, coh_a) + total(b, n_b, coh_b)
    return float((s @ s - n) / (n * (n - 1)))
