"""Frozen, validated configuration with named presets.

Nothing here reads the environment; a config is a value. Build one with keyword
arguments, start from a preset with :meth:`PersonaTreeConfig.preset`, or derive a
variant with ``config.model_copy(update=...)`` (validated again by :func:`derive`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError

__all__ = [
    "ConfidenceConfig", "InsertionConfig", "InputLimits", "ConsolidationConfig", "RecallConfig",
    "TieringConfig", "PersonaTreeConfig", "derive",
]


class _Frozen(BaseModel):
    """A frozen pydantic model that rejects unknown fields and raises :class:`ConfigError`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        # One exception tree: invalid settings surface as ConfigError, not pydantic's type.
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(f"{type(self).__name__}: {exc}") from None


class ConfidenceConfig(_Frozen):
    """Log-odds confidence parameters.

    Attributes
    ----------
    gamma : float
        Evidence scale γ: one unit of ψ moves the logit by γ.
    clip : float
        L: logits are clipped to [−L, L].
    """

    gamma: float = Field(default=0.6, gt=0.0, le=5.0)
    clip: float = Field(default=6.0, gt=0.0, le=50.0)


class InsertionConfig(_Frozen):
    """Validator-gated conservative insertion: match = κ·(a·ψ + b·sim).

    Attributes
    ----------
    a, b : float
        Weights of the validator score and of cosine similarity in the match.
    theta_attach : float
        A support match must reach this to attach.
    theta_conflict : float
        ψ ≤ −θ_conflict records a conflict edge and negative evidence.
    min_support_psi : float
        ψ must also reach this to attach, so similarity alone never attaches.
    candidates : int
        How many κ-compatible candidates (by similarity) the validator sees.
    similarity_floor : float
        Candidates below this cosine similarity are not sent to the validator.
    stance_topic_similarity : float
        A leaf of the opposite stance to a mid at least this similar is on its topic
        and is a conflict, whatever the judge said; below it, it is unrelated. The
        default equals ``ConsolidationConfig.member_similarity``, the gate that
        consolidation uses for the same question.
    """

    a: float = Field(default=0.7, ge=0.0, le=1.0)
    b: float = Field(default=0.3, ge=0.0, le=1.0)
    theta_attach: float = Field(default=0.55, gt=0.0, le=1.0)
    theta_conflict: float = Field(default=0.35, gt=0.0, le=1.0)
    min_support_psi: float = Field(default=0.3, gt=0.0, le=1.0)
    candidates: int = Field(default=5, ge=1, le=100)
    similarity_floor: float = Field(default=0.35, ge=-1.0, le=1.0)
    stance_topic_similarity: float = Field(default=0.45, ge=-1.0, le=1.0)

    @model_validator(mode="after")
    def _similarity_cannot_attach_alone(self) -> "InsertionConfig":
        # With ψ ≤ 0 the best possible match is b·1; it must stay below θ_attach.
        if self.b >= self.theta_attach:
            raise ValueError("b must be below theta_attach so that similarity alone never attaches")
        return self


class InputLimits(_Frozen):
    """Limits on what one call accepts (bigger inputs get a typed error).

    Attributes
    ----------
    max_message_chars : int
        Longest accepted message.
    max_messages : int
        Most messages in one observation.
    max_id_chars : int
        Longest user, session, observation or node id.
    """

    max_message_chars: int = Field(default=32_000, ge=1)
    max_messages: int = Field(default=512, ge=1)
    max_id_chars: int = Field(default=256, ge=8)


class ConsolidationConfig(_Frozen):
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
        Mids of one type more similar than this are merged.
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


class RecallConfig(_Frozen):
    """Query-conditioned path retrieval parameters.

    Attributes
    ----------
    budget : int
        Default token budget B.
    lam : float
        λ: utility cost per token.
    rrf_k : int
        Reciprocal-rank-fusion constant.
    pool : int
        How many candidates each retriever contributes before fusion.
    model : str
        Model whose tokenizer counts the budget.
    rrf_weight : float
        Weight of the fused RRF score in the relevance of mids and roots, a weighted
        geometric mean with their calibrated cosine, which keeps claims comparable
        across levels (leaves use the fused score alone).
    fit_floor : float
        Level fit of mids and roots when the router gave their level no probability
        (the routed level fits 1).
    leaf_fit_floor : float
        The same floor for leaves: verbatim evidence stays useful under any route.
    schema_boost : float
        Relevance multiplier for nodes of a schema type the query is about.
    child_floor : float
        A supporting node shown under a chosen claim is worth at least this share of
        the claim's worth (its relevance times its level fit).
    expand_k : int
        Supporting nodes added by one expansion (d → d+1) step.
    access_flush_every : int
        Recalls between write-behind flushes of recall counts and access times.
    dense_weight, lexical_weight : float
        Weights of the dense and lexical rankings in reciprocal-rank fusion.
    speaker_boost : float
        Relevance multiplier for evidence said by a person the query names.
    disposition_weight : float
        For queries about the person (routed to patterns or claims, or asking about
        preferences), the user's disposition leaves ranked by cosine add a bonus to
        the fused score: this much for the first (on the [0, 1] scale of a leaf first
        in both the dense and lexical rankings), less for the next ones.
    disposition_k : int
        RRF constant of that ranking: the r-th disposition gets ``disposition_weight``
        · (k + 1)/(k + r). Small: the few nearest in meaning stand out.
    disposition_boost : float
        Relevance multiplier for disposition leaves under such queries: a stated habit
        or constraint ("I avoid loud crowded bars") bears on advice that shares few
        words with it.
    change_weight, change_k, change_floor, change_ratio : float, int, float, float
        The ``change_k`` statements of a change in the user's life (``text.is_change``)
        nearest the query, at cosine ≥ ``change_floor`` and ≥ ``change_ratio`` × the
        best leaf's, get this bonus (decaying as RRF): a question that depends on a
        change shares few words with it.
    update_floor, update_flip_floor : float
        A leaf of a later session updates a candidate leaf when it tells a change at
        cosine ≥ ``update_floor`` with it, or takes the opposite stance at cosine ≥
        ``update_flip_floor`` (:mod:`personatree.retrieval.updates`).
    update_k : int
        A candidate is updated only when it is among the ``update_k`` statements
        said before the update that are closest to it in meaning.
    update_top : int
        The best candidate leaves whose updates are looked for (0 turns it off).
    update_rounds : int
        An update is followed through its own updates this many steps.
    update_share : float
        The newest update is worth this share of the statements it updates.
    long_query_tokens : int
        Query length (BM25 tokens) at which the lexical weight reaches
        ``long_query_lexical_weight``; from half this length up it rises linearly from
        ``lexical_weight``. A long question describing a scene shares many rare words
        with the turns that tell it, while one sentence embedding of it blurs its
        clauses together.
    long_query_lexical_weight : float
    neighbour_share : float
        A turn told just before or after one of the best-matching turns of its
        session is worth this share of that turn's fused score (0 turns it off): a
        scene spans several turns, and a question about it matches some of them best.
    neighbour_seeds : int
        At most this many of the best-matching leaves lend their score to their
        neighbours (fewer under a small budget: one per five candidates of the pool).
    """

    budget: int = Field(default=1000, ge=1)
    lam: float = Field(default=0.0005, ge=0.0)
    rrf_k: int = Field(default=60, ge=1)
    pool: int = Field(default=200, ge=1)
    model: str = "gpt-4o-mini"
    rrf_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    fit_floor: float = Field(default=0.1, ge=0.0, le=1.0)
    leaf_fit_floor: float = Field(default=0.75, ge=0.0, le=1.0)
    schema_boost: float = Field(default=1.15, ge=1.0, le=3.0)
    child_floor: float = Field(default=0.2, ge=0.0, le=1.0)
    expand_k: int = Field(default=2, ge=1, le=50)
    access_flush_every: int = Field(default=32, ge=1)
    dense_weight: float = Field(default=1.0, ge=0.0)
    lexical_weight: float = Field(default=1.0, ge=0.0)
    speaker_boost: float = Field(default=1.3, ge=1.0, le=3.0)
    disposition_weight: float = Field(default=0.8, ge=0.0, le=1.0)
    disposition_k: int = Field(default=2, ge=1)
    disposition_boost: float = Field(default=1.3, ge=1.0, le=3.0)
    change_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    change_k: int = Field(default=1, ge=1)
    change_floor: float = Field(default=0.15, ge=-1.0, le=1.0)
    change_ratio: float = Field(default=0.5, ge=0.0, le=1.0)
    update_floor: float = Field(default=0.25, ge=-1.0, le=1.0)
    update_flip_floor: float = Field(default=0.5, ge=-1.0, le=1.0)
    update_k: int = Field(default=3, ge=1)
    update_top: int = Field(default=30, ge=0)
    update_rounds: int = Field(default=2, ge=1, le=5)
    update_share: float = Field(default=0.8, ge=0.0, le=1.0)
    long_query_tokens: int = Field(default=20, ge=2)
    long_query_lexical_weight: float = Field(default=3.0, ge=0.0)
    neighbour_share: float = Field(default=0.7, ge=0.0, le=1.0)
    neighbour_seeds: int = Field(default=20, ge=0)


class TieringConfig(_Frozen):
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


class PersonaTreeConfig(_Frozen):
    """Top-level configuration.

    Attributes
    ----------
    embedder : str
        ``"default"`` for the packaged all-MiniLM-L6-v2, ``"static"`` for its static
        (model2vec) distillation (the ``fast`` preset), or any sentence-transformers
        model name or local path.
    embed_batch_size : int
        Batch size for embedding.
    schema_path : str or None
        A schema registry file or folder; ``None`` uses the shipped one.
    busy_timeout_s : float
        How long a write waits for another writer's lock before ``StoreBusyError``.
    judge : str or dict
        ``"offline"`` (no model), any litellm model string (``"openai/gpt-4o-mini"``,
        ``"ollama/qwen3:8b"``), or a per-operation mapping such as
        ``{"validate": "openai/gpt-4o-mini", "summarize": "anthropic/claude-sonnet-4"}``.
    judge_options : dict
        Keyword options of :class:`~personatree.judge.llm.LLMJudge` (timeouts, retries,
        concurrency, ``fallback``).
    redact : tuple of {"email", "phone", "card"}
        Patterns removed from every message before it is stored (see
        :mod:`personatree.redact`); empty by default.
    """

    embedder: str = "default"
    embed_batch_size: int = Field(default=64, ge=1, le=4096)
    schema_path: str | None = None
    busy_timeout_s: float = Field(default=10.0, gt=0.0, le=3600.0)
    redact: tuple[Literal["email", "phone", "card"], ...] = ()
    judge: str | dict[str, str] = "offline"
    judge_options: dict[str, Any] = Field(default_factory=dict)
    confidence: ConfidenceConfig = ConfidenceConfig()
    insertion: InsertionConfig = InsertionConfig()
    limits: InputLimits = InputLimits()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    recall: RecallConfig = RecallConfig()
    # Off by default until tiered recall's evidence recall on the LoCoMo harness is
    # measured within 2 points of the full search (see BENCHMARKS.md).
    tiering: TieringConfig = TieringConfig(tiers=False)

    @field_validator("judge")
    @classmethod
    def _judge_ops(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(value, dict):
            unknown = set(value) - {"extract", "validate", "route", "summarize"}
            if unknown:
                raise ValueError(f"unknown judge operations {sorted(unknown)}")
        elif not value.strip():
            raise ValueError("judge must be 'offline' or a model name")
        return value

    @classmethod
    def preset(cls, name: Literal["default", "conservative", "eager", "fast"], **overrides: Any) -> "PersonaTreeConfig":
        """A named preset, optionally with top-level overrides.

        Parameters
        ----------
        name : {"default", "conservative", "eager", "fast"}
            ``conservative`` attaches only on strong validator agreement and promotes
            roots later; ``eager`` forms patterns from fewer observations; ``fast``
            embeds with the static distillation of the packaged MiniLM (the ``fast``
            extra; distilled once on first use, see :mod:`personatree.static_embedder`).
        **overrides
            Top-level fields to replace.

        Raises
        ------
        ConfigError
            For an unknown preset or an invalid override.
        """
        presets: dict[str, dict[str, Any]] = {
            "default": {},
            "conservative": {
                "insertion": InsertionConfig(theta_attach=0.65, min_support_psi=0.45),
                "consolidation": ConsolidationConfig(n_min=4, n_root=8, theta_c=0.8, t_root_days=30.0),
            },
            "eager": {
                "insertion": InsertionConfig(theta_attach=0.45, min_support_psi=0.2),
                "consolidation": ConsolidationConfig(n_min=2, n_root=3, theta_c=0.6, t_root_days=7.0),
            },
            # A static embedder costs microseconds a text, so batches can be large.
            "fast": {"embedder": "static", "embed_batch_size": 1024},
        }
        if name not in presets:
            raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(presets)}")
        return cls(**{**presets[name], **overrides})


def derive(config: PersonaTreeConfig, **changes: Any) -> PersonaTreeConfig:
    """A validated copy of ``config`` with top-level ``changes``.

    Raises
    ------
    ConfigError
        If the result is invalid.
    """
    try:
        return PersonaTreeConfig.model_validate({**config.model_dump(), **changes})
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
