"""Settings of the offline consolidation pass."""

from __future__ import annotations

from pydantic import Field

from .frozen import Frozen

__all__ = ["ConsolidationConfig"]


class ConsolidationConfig(Frozen):
    """Parameters of the offline consolidation job (ARCHITECTURE.md, "offline consolidation").

    Attributes
    ----------
    n_min : int
        Fewest compatible leaves that form a mid.
    min_samples : int or None
        HDBSCAN ``min_samples`` (``None``: same as ``n_min``). A small value keeps
        clusters fine-grained in small trees, where the cohesion gate rejects coarse ones.
    w_cosine, w_schema, w_time : float
        Weights of cosine distance, schema mismatch and temporal gap in the distance.
    time_scale_days : float
        Temporal gap that counts as a full unit of distance.
    theta_c : float
        Confidence a mid needs before root promotion.
    n_root : int
        Support count a mid needs before root promotion.
    t_root_days : float
        Temporal coverage (t_last − t_first) a mid needs before root promotion.
    theta_prune : float
        Roots whose confidence falls below this are pruned (their mids survive).
    t_orphan_days : float
        Orphan leaves older than this are deleted (their observations stay in the log).
    k_leaves : int
        At most this many supporting leaves kept per mid (counts survive).
    merge_similarity : float
        Mids of one type more similar than this are merged (two that read the same
        claim merge below it when their union passes the gates of a new mid).
    max_exact : int
        Above this many orphans, clustering works on reduced dimensions in chunks.
    seed : int
        Seed for every random choice.
    selection_epsilon : float
        HDBSCAN ``cluster_selection_epsilon``: clusters closer than this mixed distance
        are not split further (keeps one pattern said in varied words as one cluster).
    min_cohesion : float
        Mean pairwise cosine similarity a cluster's members need to form a mid (an
        absolute gate: HDBSCAN's density is relative, so it finds "clusters" in noise).
    member_similarity : float
        Cluster members less similar than this to the cluster centroid stay orphans.
    knn : int
        Neighbours per leaf in the bounded-memory path (above ``max_exact``).
    reduced_dim : int
        Rank of the projection that finds neighbour candidates in that path.
    max_rounds : int
        Clustering rounds per pass: leftover orphans are clustered again until no new
        mid forms, so a second pass finds nothing to do (idempotence).
    min_sessions, min_days : int
        Distinct sessions and distinct calendar days (UTC) of evidence a mid needs
        before root promotion (one burst is not a durable claim).
    root_similarity : float
        Promotable mids at least this similar are grouped into one root; a mid this
        similar to an existing root of its chosen type joins that root.
    decay_report : float
        Decays of at least this much confidence are listed in a plan (information only).
    exact_memory_mb : int
        Memory budget of the exact clustering path (about 24·n² bytes for n orphans):
        above it the bounded-memory path is used even below ``max_exact``.
    coalesce_ratio : float
        Two cohesive clusters of one mid type are one pattern cut in pieces, and are
        joined, when their union keeps at least this share of the smaller cohesion.
        Near-duplicate mids are merged only under the same rule.
    min_root_mids : int
        Fewest compatible mids (same root type, same stance side) a new root abstracts
        over: a root is never a copy of one pattern, and a root left with fewer
        supporting mids (one changed or merged away) is removed, its mids kept.
    loose_cluster_size, max_cluster_size : int
        Most members a cluster may have to form one mid: ``loose_cluster_size`` at
        ``min_cohesion``, growing linearly to ``max_cluster_size`` at ``tight_cohesion``.
        A larger cluster is split (a loose giant is many patterns, not one).
    tight_cohesion : float
        Cohesion from which a cluster may reach ``max_cluster_size``.
    max_split_depth : int
        How many times an oversized cluster may be halved before its leaves stay orphans.
    """

    n_min: int = Field(default=3, ge=2)
    min_samples: int | None = Field(default=2, ge=1)
    w_cosine: float = Field(default=1.0, ge=0.0)
    w_schema: float = Field(default=0.3, ge=0.0)
    w_time: float = Field(default=0.1, ge=0.0)
    time_scale_days: float = Field(default=180.0, gt=0.0)
    theta_c: float = Field(default=0.7, gt=0.0, lt=1.0)
    n_root: int = Field(default=5, ge=1)
    t_root_days: float = Field(default=14.0, ge=0.0)
    theta_prune: float = Field(default=0.35, gt=0.0, lt=1.0)
    t_orphan_days: float = Field(default=365.0, gt=0.0)
    k_leaves: int = Field(default=50, ge=1)
    merge_similarity: float = Field(default=0.92, gt=0.0, le=1.0)
    max_exact: int = Field(default=10_000, ge=100)
    seed: int = 0
    selection_epsilon: float = Field(default=0.4, ge=0.0)
    min_cohesion: float = Field(default=0.4, ge=-1.0, le=1.0)
    member_similarity: float = Field(default=0.45, ge=-1.0, le=1.0)
    knn: int = Field(default=15, ge=2, le=200)
    reduced_dim: int = Field(default=64, ge=4, le=4096)
    max_rounds: int = Field(default=4, ge=1, le=50)
    min_sessions: int = Field(default=2, ge=1)
    min_days: int = Field(default=2, ge=1)
    root_similarity: float = Field(default=0.5, ge=-1.0, le=1.0)
    decay_report: float = Field(default=0.02, gt=0.0, lt=1.0)
    coalesce_ratio: float = Field(default=0.9, gt=0.0, le=1.0)
    exact_memory_mb: int = Field(default=1024, ge=16)
    min_root_mids: int = Field(default=2, ge=1)
    loose_cluster_size: int = Field(default=60, ge=2)
    max_cluster_size: int = Field(default=500, ge=2)
    tight_cohesion: float = Field(default=0.7, gt=-1.0, le=1.0)
    max_split_depth: int = Field(default=12, ge=0, le=64)
