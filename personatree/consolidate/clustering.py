"""HDBSCAN over the mixed distance, exact or with bounded memory (pure functions).

Two paths, chosen by the number of orphans n:

* **exact** (n ≤ ``max_exact`` and 24·n² bytes within ``exact_memory_mb``): the dense n×n mixed distance of
  :func:`~personatree.consolidate.distance.mixed_distance`, clustered by ``hdbscan``
  with ``metric="precomputed"``. Memory is about 24·n² bytes (our float64 matrix plus
  hdbscan's copy and its partition), e.g. 0.6 GB at 5 000 and 2.4 GB at 10 000.
* **k-nearest-neighbour graph** (otherwise): memory O(n·k). Neighbour
  *candidates* (3·``knn`` per leaf) are the most cosine-similar leaves in a
  rank-``reduced_dim`` projection of the embeddings (the top right singular vectors,
  so dot products approximate cosine similarity), scanned in row blocks; each
  candidate is then re-scored with the exact mixed distance (full embeddings, schema,
  time) and the ``knn`` nearest are kept. The mutual-reachability
  distance max(core(i), core(j), d(i, j)) is computed on those edges and handed to
  hdbscan as a sparse precomputed matrix; parts of the graph that are not connected are
  joined by edges at the largest possible distance, so they separate at the top of the
  hierarchy exactly as far-apart groups would. Time is O(n²·reduced_dim) for the
  candidate scan (a fast matrix product) plus O(n·k·log n) for the spanning tree.

Both return ``labels`` with −1 for noise. When HDBSCAN finds no cluster with
``allow_single_cluster=False`` (one lone pattern plus a few stray points has no
split to select), it is asked again with ``allow_single_cluster=True``. Fewer than
2·``min_cluster_size`` points that HDBSCAN still leaves all as noise (it never finds
a cluster of exactly ``min_cluster_size`` points) are returned as one candidate
cluster: too few to hold two patterns, and the mid gates (cohesion, similarity to
the centroid, stance) decide whether they are one.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .distance import DistanceWeights, max_distance, mixed_distance

__all__ = ["ClusterParams", "cluster_leaves", "knn_mutual_reachability"]

_BLOCK = 1024
_EPS = 1e-9  # sparse matrices drop explicit zeros; identical leaves still need an edge


@dataclass(frozen=True, slots=True)
class ClusterParams:
    """HDBSCAN parameters and the bounded-memory switch.

    Attributes
    ----------
    min_cluster_size : int
        HDBSCAN ``min_cluster_size`` (the consolidation's n_min).
    min_samples : int
        HDBSCAN ``min_samples`` (density smoothing).
    max_exact : int
        Above this many points, use the k-nearest-neighbour graph.
    knn : int
        Neighbours kept per point in the graph path.
    reduced_dim : int
        Rank of the projection used to find neighbour candidates.
    seed : int
        Seed for any random choice (the current paths are deterministic without one).
    selection_epsilon : float
        HDBSCAN ``cluster_selection_epsilon`` (clusters closer than this are not split).
    exact_memory_mb : int
        Memory budget of the exact path (it needs about 24·n² bytes).
    """

    min_cluster_size: int = 3
    min_samples: int = 3
    max_exact: int = 10_000
    knn: int = 15
    reduced_dim: int = 64
    seed: int = 0
    selection_epsilon: float = 0.4
    exact_memory_mb: int = 1024


def _hdbscan(matrix: "np.ndarray | sp.csr_matrix", params: ClusterParams, min_samples: int) -> np.ndarray:
    import hdbscan  # imported lazily: it pulls numba-free but heavy sklearn parts

    labels = np.full(matrix.shape[0], -1, dtype=np.int64)
    for single in (False, True):
        model = hdbscan.HDBSCAN(
            metric="precomputed",
            min_cluster_size=params.min_cluster_size,
            min_samples=min_samples,
            allow_single_cluster=single,
            cluster_selection_epsilon=params.selection_epsilon,
            core_dist_n_jobs=1,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = np.asarray(model.fit(matrix).labels_, dtype=np.int64)
        if labels.max(initial=-1) >= 0:
            break
    return labels


def _projection(emb: np.ndarray, rank: int) -> np.ndarray:
    """Rows projected on the top ``rank`` right singular vectors, uncentred, so that
    Z·Zᵀ is the best rank-``rank`` approximation of the cosine matrix X·Xᵀ.

    The vectors are the top eigenvectors of the d×d matrix XᵀX: one n·d² product and a
    small eigendecomposition, exact and deterministic (no random sketch needed).
    """
    if emb.shape[1] <= rank:
        return emb
    gram = (emb.T @ emb).astype(np.float64)
    _, vecs = np.linalg.eigh(gram)  # ascending eigenvalues
    top = np.ascontiguousarray(vecs[:, ::-1][:, :rank], dtype=np.float32)
    return np.ascontiguousarray(emb @ top, dtype=np.float32)


def _neighbours(
    emb: np.ndarray, z: np.ndarray, codes: np.ndarray, days: np.ndarray, mismatch: np.ndarray,
    w: DistanceWeights, k: int, count: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` nearest neighbours of every row under the exact mixed distance, among
    ``count`` candidates per row found by approximate cosine similarity (``z``).

    Returns
    -------
    rows, cols, dist : ndarray
        ``k`` entries per row, rows ascending, nearest first.
    """
    n = emb.shape[0]
    c = min(count, n - 1)
    t = days.astype(np.float64)
    out_r: list[np.ndarray] = []
    out_c: list[np.ndarray] = []
    out_d: list[np.ndarray] = []
    for s in range(0, n, _BLOCK):
        e = min(n, s + _BLOCK)
        sim = z[s:e] @ z.T
        sim[np.arange(e - s), np.arange(s, e)] = -np.inf
        # np.partition (values only) is much faster than argpartition on these blocks;
        # the threshold mask then yields ≥ c entries per row, capped to c by column order.
        thr = np.partition(sim, n - c, axis=1)[:, n - c : n - c + 1]
        r, col = np.nonzero(sim >= thr)
        del sim
        rank = np.arange(r.shape[0]) - np.searchsorted(r, np.arange(e - s))[r]
        cand = col[rank < c].reshape(e - s, c)
        # Exact mixed distance to the candidates (full embeddings, schema, time).
        cos = np.einsum("ij,ikj->ik", emb[s:e], emb[cand]).astype(np.float64)
        d = w.w_cosine * np.clip(1.0 - cos, 0.0, 2.0)
        d += w.w_schema * mismatch[codes[s:e, None], codes[cand]]
        d += w.w_time * np.minimum(np.abs(t[s:e, None] - t[cand]) / w.time_scale_days, 1.0)
        order = np.lexsort((cand, d), axis=1)[:, :k]  # by distance, then column: deterministic
        out_r.append(np.repeat(np.arange(s, e), k))
        out_c.append(np.take_along_axis(cand, order, axis=1).ravel())
        out_d.append(np.take_along_axis(d, order, axis=1).ravel())
    return np.concatenate(out_r), np.concatenate(out_c), np.concatenate(out_d)


def knn_mutual_reachability(
    emb: np.ndarray, codes: np.ndarray, days: np.ndarray, mismatch: np.ndarray,
    w: DistanceWeights, params: ClusterParams,
) -> sp.csr_matrix:
    """The sparse, connected, symmetric mutual-reachability graph on k nearest neighbours.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)
    """
    n = emb.shape[0]
    k = min(max(params.knn, params.min_samples), n - 1)
    x = np.asarray(emb, dtype=np.float32)
    z = _projection(x, params.reduced_dim)
    r, c, d = _neighbours(x, z, codes, days, mismatch, w, k, 3 * k)
    # core(i): distance to the min_samples-th neighbour (self excluded), as hdbscan does.
    ms = min(params.min_samples, k)
    core = d.reshape(n, k)[:, ms - 1]
    mr = np.maximum(d, np.maximum(core[r], core[c])) + _EPS
    g = sp.coo_matrix((mr, (r, c)), shape=(n, n)).tocsr()
    g = g.maximum(g.T).tocsr()
    parts, which = csgraph.connected_components(g, directed=False)
    if parts > 1:
        reps = np.array([np.flatnonzero(which == p)[0] for p in range(parts)])
        far = np.full(parts - 1, max_distance(w) + 1.0)
        bridge = sp.coo_matrix((far, (reps[:-1], reps[1:])), shape=(n, n)).tocsr()
        g = (g + bridge + bridge.T).tocsr()
    return g


def _labels_from_graph(graph: sp.csr_matrix, params: ClusterParams) -> np.ndarray:
    """HDBSCAN labels from a mutual-reachability graph.

    The graph already holds mutual-reachability distances, so only the spanning tree and
    the cluster extraction remain. hdbscan's public sparse path would recompute the
    reachability in a Python loop over every edge (seconds at 20k points); we build the
    minimum spanning tree with scipy and hand it to hdbscan's own tree-to-labels step.
    If those internals ever move, the public path gives the same labels, only slower.
    """
    try:
        from hdbscan._hdbscan_linkage import label
        from hdbscan.hdbscan_ import _tree_to_labels
    except ImportError:  # pragma: no cover - depends on the hdbscan release
        return _hdbscan(graph, params, 1)
    mst = csgraph.minimum_spanning_tree(graph).tocoo()
    edges = np.column_stack([mst.row, mst.col, mst.data]).astype(np.float64)
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0], edges[:, 2]))]
    tree = label(edges)
    labels = np.full(graph.shape[0], -1, dtype=np.int64)
    for single in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = np.asarray(_tree_to_labels(
                None, tree, params.min_cluster_size, "eom", single, False, params.selection_epsilon,
            )[0], dtype=np.int64)
        if labels.max(initial=-1) >= 0:
            break
    return labels


def cluster_leaves(
    emb: np.ndarray,
    codes: np.ndarray,
    days: np.ndarray,
    mismatch: np.ndarray,
    w: DistanceWeights,
    params: ClusterParams,
) -> tuple[np.ndarray, str]:
    """Cluster leaves by HDBSCAN over the mixed distance.

    Parameters
    ----------
    emb : ndarray of shape (n, d)
        Unit-norm embeddings.
    codes : ndarray of shape (n,), int
        Type index of each leaf into ``mismatch``.
    days : ndarray of shape (n,)
        Leaf times in days.
    mismatch : ndarray of shape (T, T)
        Schema-mismatch matrix.
    w : DistanceWeights
    params : ClusterParams

    Returns
    -------
    labels : ndarray of shape (n,), int
        Cluster index per leaf, −1 for noise; clusters are numbered by their first member.
    method : str
        ``"exact"``, ``"knn"`` or ``"none"`` (too few points).
    """
    n = emb.shape[0]
    if n < max(params.min_cluster_size, 2):
        return np.full(n, -1, dtype=np.int64), "none"
    if n <= params.max_exact and 24 * n * n <= params.exact_memory_mb * 2**20:
        dist = mixed_distance(emb, codes, days, mismatch, w)
        labels = _hdbscan(dist, params, min(params.min_samples, n - 1))
        if labels.max(initial=-1) < 0 and n < 2 * params.min_cluster_size:
            labels = np.zeros(n, dtype=np.int64)
        method = "exact"
    else:
        graph = knn_mutual_reachability(emb, codes, days, mismatch, w, params)
        labels = _labels_from_graph(graph, params)
        method = "knn"
    return _renumber(labels), method


def _renumber(labels: np.ndarray) -> np.ndarray:
    """Number clusters 0, 1, ... in order of their first member (stable across runs)."""
    out = np.full_like(labels, -1)
    seen: dict[int, int] = {}
    for i, lab in enumerate(labels.tolist()):
        if lab >= 0:
            out[i] = seen.setdefault(lab, len(seen))
    return out
