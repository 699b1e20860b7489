"""Settings of query-conditioned path retrieval."""

from __future__ import annotations

from pydantic import Field

from .frozen import Frozen

__all__ = ["RecallConfig"]


class RecallConfig(Frozen):
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
    dense_specific : bool
        The dense ranking of leaves orders them by cosine with what all of the
        memory's statements share taken out (:mod:`personatree.specific`), so small
        talk that is close to any question does not crowd out the statement about
        its topic. Every floor and bonus still reads the plain cosine.
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
    standing_weight, standing_k : float, int
        When the query is the person telling a situation of their own (a statement
        or a yes/no question about themself, ``text.tells_own_situation``), the
        user's leaves that state a goal, value, ongoing condition or cause
        (``text.is_standing``), ranked by cosine among themselves, add this bonus to
        the fused score, decaying as RRF with constant ``standing_k``: the situation
        is read against what the person holds, which it rarely names.
    update_floor, update_flip_floor : float
        A leaf of a later session updates a candidate leaf when it tells a change at
        cosine ≥ ``update_floor`` with it, or takes the opposite side at cosine ≥
        ``update_flip_floor`` (a neutral mention counts with the positive side;
        :mod:`personatree.retrieval.updates`).
    update_restate_floor : float or None
        Any later statement of the same speaker in a later session, at cosine ≥
        this with a candidate, updates it too (None turns it off): what the person
        said last about a thing is their current word on it, whether or not its
        words read as a change. Shown alone, such an update is worth its share of
        the candidate; carried with it (when the two name a thing in common), it
        adds no worth of its own to the pair: it may only restate it.
    update_k : int
        A candidate is updated only when it is among the ``update_k`` statements
        said before the update that are closest to it in meaning.
    update_specific : bool
        For an update read as a change or an opposite side, closest in meaning for
        ``update_k`` means closest once what all the user's statements share is
        taken out (as ``dense_specific``): by plain cosine the person's small talk is
        close to everything they say, and crowds out the habit a change ends. A
        restatement keeps the plain test, and the floors stay on the plain cosine.
    update_top : int
        The best candidate leaves whose updates are looked for, at least (0 turns it
        off); a budget of ``b`` tokens follows ``b / 20`` when that is more.
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
    dense_specific: bool = True
    lexical_weight: float = Field(default=1.0, ge=0.0)
    speaker_boost: float = Field(default=1.3, ge=1.0, le=3.0)
    disposition_weight: float = Field(default=0.8, ge=0.0, le=1.0)
    disposition_k: int = Field(default=2, ge=1)
    disposition_boost: float = Field(default=1.3, ge=1.0, le=3.0)
    change_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    change_k: int = Field(default=1, ge=1)
    change_floor: float = Field(default=0.15, ge=-1.0, le=1.0)
    change_ratio: float = Field(default=0.5, ge=0.0, le=1.0)
    standing_weight: float = Field(default=0.8, ge=0.0, le=1.0)
    standing_k: int = Field(default=2, ge=1)
    update_floor: float = Field(default=0.25, ge=-1.0, le=1.0)
    update_flip_floor: float = Field(default=0.35, ge=-1.0, le=1.0)
    update_restate_floor: float | None = Field(default=0.4, ge=-1.0, le=1.0)
    update_k: int = Field(default=3, ge=1)
    update_specific: bool = True
    update_top: int = Field(default=30, ge=0)
    update_rounds: int = Field(default=2, ge=1, le=5)
    update_share: float = Field(default=0.8, ge=0.0, le=1.0)
    long_query_tokens: int = Field(default=20, ge=2)
    long_query_lexical_weight: float = Field(default=3.0, ge=0.0)
    neighbour_share: float = Field(default=0.7, ge=0.0, le=1.0)
    neighbour_seeds: int = Field(default=20, ge=0)
