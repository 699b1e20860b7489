"""Sizes and weights of the HMO tiers."""

from __future__ import annotations

from pydantic import Field

from .frozen import Frozen

__all__ = ["TieringConfig"]


class TieringConfig(Frozen):
    """Persona-driven tiering over the tree (hot cache, buffer, archive).

    Attributes
    ----------
    tiers : bool
        Route ``recall`` through tiered search (T1 → T2 → T3); ``False`` searches the
        whole tree every time (the plain engine).
    S : int
        Tier 1 holds the leaves of the user's last ``S`` sessions.
    K : int
        Tier 1 holds the top ``K`` pivotal nodes by priority S_m.
    H : int
        Tier 2 holds the next ``H`` nodes by priority S_m.
    top_roots : int
        Tier 1 holds the ``top_roots`` most confident roots.
    alpha, beta : float
        Weights of importance I_m and persona similarity Sim(m, P) in S_m.
    lam : float
        λ, the recency decay rate of S_m per day (a never-recalled node's priority
        falls by e every ln(2)/λ ≈ 35 days at the default).
    tau : float
        Drift gate: a full re-rank happens only when ‖P_new − P_anchor‖₂ ≥ τ.
    strong_mid : float
        Mids at least this confident join the roots in the persona vector P.
    profile_budget : int
        Token budget of the tier-1 profile block.
    sufficient_cosine : float
        A recalled item counts as sufficient evidence when its cosine to the query
        reaches this (all-MiniLM-L6-v2 puts paraphrases at ≳0.55, unrelated text at
        ≲0.2).
    sufficient_fill : float
        Search stops at a tier when its sufficient items fill at least this share of
        the recall's token budget. On LoCoMo dev at 1,000 tokens, 0.15 keeps evidence
        recall within half a point of the whole tree; the previous rule (two
        sufficient items whatever the budget, or a claim of the routed level) lost 16
        points (BENCHMARKS.md).
    claims_suffice : bool
        Also stop when an abstract query (routed to mids or roots) is answered by a
        claim of its level. Persona questions then stay in the hot tiers, whose top
        claims are hot by construction. Off by default: claims cite no turns, and on
        LoCoMo dev most questions the router sends to claims still need turns.
    archive_k, archive_margin : int, float
        A hot tier's answer is accepted only when the archive's closest nodes to the
        query (up to ``archive_k``, within ``archive_margin`` of the best cosine; one
        matrix product over the archive, no scoring or packing) are all in that tier:
        the best evidence is known to be hot. ``archive_k=0`` (the default) trusts the
        hot tiers alone: fastest, and it misses evidence that went cold. On LoCoMo dev
        the check with ``archive_k=3`` won back only about one point of evidence recall
        while a fall-through to the archive became far more common (BENCHMARKS.md).
    promote_max : int
        At most this many tier-3 hits of one recall (most relevant first) are
        considered for promotion, so one broad query cannot flush tier 2.
    hot_children : int
        Support children of each hot claim copied into the hot sub-tree, so a hot
        claim can still be expanded to its evidence.
    """

    tiers: bool = True
    S: int = Field(default=5, ge=0)
    K: int = Field(default=50, ge=0)
    H: int = Field(default=200, ge=0)
    top_roots: int = Field(default=20, ge=0)
    alpha: float = Field(default=1.0, ge=0.0)
    beta: float = Field(default=1.0, ge=0.0)
    lam: float = Field(default=0.02, ge=0.0)
    tau: float = Field(default=0.10, ge=0.0)
    strong_mid: float = Field(default=0.7, ge=0.0, le=1.0)
    profile_budget: int = Field(default=400, ge=16)
    sufficient_cosine: float = Field(default=0.55, ge=-1.0, le=1.0)
    sufficient_fill: float = Field(default=0.15, ge=0.0, le=1.0)
    claims_suffice: bool = False
    archive_k: int = Field(default=0, ge=0)
    archive_margin: float = Field(default=0.05, ge=0.0, le=2.0)
    promote_max: int = Field(default=4, ge=0)
    hot_children: int = Field(default=8, ge=0)
