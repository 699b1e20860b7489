"""Hybrid relevance (pure): dense and lexical rankings fused by RRF, per level.

Names, places and dates matter, so a BM25 ranking (tokens that keep them) is fused
with the dense ranking by reciprocal rank. Leaves are matched lexically through their
source *turn* (a leaf is one sentence; the turn's other sentences and its speaker
often carry the query's words), then represented by the turn's sentence closest to
the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..config import RecallConfig
from ..index import top_k
from ..specific import centred_cosines
from ..text import tells_own_situation
from ..types import Level, Route
from .fusion import rrf, rrf_normalised
from .lexical import tokenize
from .state import LevelArrays, RetrievalState

# One seed lends to its neighbours per this many candidates of the level's pool (the
# pool itself scales with the budget).
_SEEDS_PER_POOL = 5

__all__ = [
    "Scored",
    "score_nodes",
    "specific_cosines",
    "level_fit",
    "lexical_weight",
    "claim_relevance",
    "calibrated",
    "disposition_bonus",
    "standing_bonus",
    "change_bonus",
]


@dataclass(frozen=True, slots=True)
class Scored:
    """Relevance of one candidate node and where it came from."""

    relevance: float
    cosine: float
    dense_rank: int | None
    lexical_rank: int | None
    neighbour_of: str | None = None  # the leaf whose turn lent this one its score


def calibrated(cos: float) -> float:
    # MiniLM cosines of unrelated sentences sit around 0.0-0.2 and of paraphrases at
    # 0.6+; map that range to [0, 1] so it can be averaged with a normalised RRF score.
    return min(1.0, max(0.0, (cos - 0.15) / 0.5))


def claim_relevance(fused: float, cos: float, weight: float) -> float:
    """fused^w · calibrated(cos)^(1−w): zero for a claim unrelated in meaning.

    Parameters
    ----------
    fused : float
        Normalised RRF score in [0, 1].
    cos : float
        Cosine with the query.
    weight : float
        w, the weight of the fused score (1: the fused score alone).

    Returns
    -------
    float
    """
    return fused**weight * calibrated(cos) ** (1.0 - weight)


def lexical_weight(n_tokens: int, cfg: RecallConfig) -> float:
    """Weight of the lexical ranking for a query of ``n_tokens`` BM25 tokens.

    ``cfg.lexical_weight`` up to half of ``cfg.long_query_tokens``, then linear up to
    ``cfg.long_query_lexical_weight`` at ``cfg.long_query_tokens`` and beyond.
    """
    lo, hi = cfg.long_query_tokens / 2.0, float(cfg.long_query_tokens)
    share = min(1.0, max(0.0, (n_tokens - lo) / (hi - lo)))
    return cfg.lexical_weight + share * (cfg.long_query_lexical_weight - cfg.lexical_weight)


def disposition_bonus(ranked: Sequence[str], cfg: RecallConfig) -> dict[str, float]:
    """Bonus of the user's dispositions, ranked by cosine, on the [0, 1] fused scale.

    The first gets ``cfg.disposition_weight``; the r-th gets that times
    (k + 1) / (k + r), with k = ``cfg.disposition_k``: RRF's decay, anchored at the
    head.

    Parameters
    ----------
    ranked : sequence of str
        Disposition leaf ids, best first.
    cfg : RecallConfig

    Returns
    -------
    dict of str to float
    """
    return _anchored_rrf(ranked, cfg.disposition_weight, cfg.disposition_k)


def standing_bonus(ranked: Sequence[str], cfg: RecallConfig) -> dict[str, float]:
    """Bonus of what the person holds, ranked by cosine, on the [0, 1] fused scale.

    For a query that tells a situation of the person's own: their goals, values,
    ongoing conditions and causes, nearest in meaning first. The first gets
    ``cfg.standing_weight``, the r-th that times (k + 1) / (k + r) with
    k = ``cfg.standing_k``, as :func:`disposition_bonus` does.

    Parameters
    ----------
    ranked : sequence of str
        Leaf ids, best first.
    cfg : RecallConfig

    Returns
    -------
    dict of str to float
    """
    return _anchored_rrf(ranked, cfg.standing_weight, cfg.standing_k)


def _nearest(arr: LevelArrays, leaf_cos: np.ndarray, rows: np.ndarray, pool: int) -> list[str]:
    """The ids of ``rows`` nearest the query, at most ``pool``, best first."""
    if not rows.size:
        return []
    return [arr.ids[int(row)] for row in rows[top_k(leaf_cos[rows], pool)]]


def _anchored_rrf(ranked: Sequence[str], weight: float, k: int) -> dict[str, float]:
    """RRF scores of one ranking scaled so that its head gets ``weight``."""
    scale = weight * (k + 1)
    return {x: v * scale for x, v in rrf([ranked], k).items()}


def level_fit(route: Route, level: Level, floor: float) -> float:
    """floor + (1 − floor)·p(level)/max p: 1 for the routed level, never below ``floor``."""
    top = max(route.probabilities.values()) or 1.0
    return floor + (1.0 - floor) * float(route.probabilities.get(level, 0.0)) / top


def score_nodes(
    state: RetrievalState,
    query: str,
    qvec: np.ndarray | None,
    levels: Iterable[Level],
    cfg: RecallConfig,
    pools: Mapping[Level, int] | None = None,
    personal: bool = False,
    from_user: bool = False,
) -> tuple[dict[str, Scored], dict[Level, np.ndarray]]:
    """Hybrid relevance of candidate nodes: dense and BM25 rankings fused by RRF, per level.

    Leaves are matched lexically through their source turn (all sentences of the turn
    and its speaker), then represented by the turn's sentence closest to the query.

    Parameters
    ----------
    state : RetrievalState
    query : str
    qvec : ndarray or None
    levels : iterable of Level
    cfg : RecallConfig
    pools : mapping of Level to int, optional
        Candidates per retriever and level (default ``cfg.pool``).
    personal : bool
        The query is about the person (advice, habits, character): the user's
        disposition leaves, ranked by cosine among themselves, join the fusion as a
        third ranking. Its share is a bonus on top of the dense + lexical scale, so
        leaves stay comparable with claims.

    from_user : bool
        The query is the person's own message to the agent, not a question about
        them: whatever it says is their situation.

    When the query is the person telling a situation of their own (``from_user``,
    or its words say so: :func:`~personatree.text.tells_own_situation`), the
    leaves that state a goal, value, ongoing condition or cause of theirs join the
    same way (:func:`standing_bonus`).

    Returns
    -------
    scored : dict
        Node id → :class:`Scored`.
    cosines : dict
        Level → cosine of every row of that level's matrix (empty without ``qvec``).
    """
    qtok = tokenize(query)
    situational = cfg.standing_weight > 0.0 and (from_user or tells_own_situation(query))
    lex_weight = lexical_weight(len(qtok), cfg)
    out: dict[str, Scored] = {}
    cosines: dict[Level, np.ndarray] = {}
    for lv in levels:
        pool = pools[lv] if pools else cfg.pool
        arr = state.arrays.get(lv)
        dense: list[str] = []
        if qvec is not None and arr is not None and arr.ids:
            s = arr.matrix @ qvec
            cosines[lv] = s
            rank = specific_cosines(state, arr, s, qvec) if lv is Level.LEAF and cfg.dense_specific else s
            dense = [arr.ids[i] for i in top_k(rank, pool)]
        s_lv = cosines.get(lv)
        lexical = _lexical(state, lv, qtok, pool, s_lv)
        rankings, weights = [dense, lexical], [cfg.dense_weight, lex_weight]
        fused = dict(rrf_normalised(rankings, k=cfg.rrf_k, weights=weights))
        lent: dict[str, str] = {}
        if lv is Level.LEAF and s_lv is not None and arr is not None:
            lent = _leaf_bonuses(state, fused, s_lv, arr, pool, cfg, personal, situational)
        d_rank = {x: i + 1 for i, x in enumerate(dense)}
        l_rank = {x: i + 1 for i, x in enumerate(lexical)}
        for x, r in fused.items():
            cos = (
                float(s_lv[arr.row[x]])
                if s_lv is not None and arr is not None and x in arr.row
                else 0.0
            )
            # Leaves compete among themselves: their fused rank is their relevance (a turn
            # first in one ranking must not be demoted for a low cosine). Claims also
            # compete across levels, so their cosine keeps them on an absolute scale: a
            # geometric mean, so that a claim unrelated in meaning scores nothing however
            # it ranks among the few claims there are.
            w = 1.0 if lv is Level.LEAF else cfg.rrf_weight
            rel = r if s_lv is None else claim_relevance(r, cos, w)
            out[x] = Scored(rel, cos, d_rank.get(x), l_rank.get(x), lent.get(x))
    return out, cosines


def specific_cosines(state: RetrievalState, arr: LevelArrays, cos: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """The query's cosine with each leaf row once what all the rows share is taken out.

    A person's small talk ("Haha, that's so true!", "Thanks, that means a lot") is
    close to any question by plain cosine, because it is close to everything they
    say; with the rows' common direction subtracted from the rows and the query
    (:func:`~personatree.specific.centred_cosines`), the statement about the
    question's topic ranks ahead of it. The rows' products with the common direction
    are kept with the state until its rows change: a query costs one product with
    the mean and a pass over its cosines.

    Parameters
    ----------
    state : RetrievalState
    arr : LevelArrays
        The state's leaf rows.
    cos : ndarray
        The query's plain cosine with each row.
    qvec : ndarray
        The query's unit embedding.

    Returns
    -------
    ndarray
        One value per row.
    """
    mean, row_mean = state.leaf_centre(arr)
    q_mean = np.array([float(qvec @ mean)], np.float32)
    return centred_cosines(cos[:, None], row_mean, q_mean, float(mean @ mean))[:, 0]


def _lexical(
    state: RetrievalState, lv: Level, qtok: list[str], pool: int, leaf_cos: np.ndarray | None
) -> list[str]:
    """The BM25 ranking of a level; leaves through their turns, each turn by its closest leaf."""
    if lv is not Level.LEAF:
        return [x for x, _ in state.bm25[lv].search(qtok, pool)]
    lexical = []
    for tk, _ in state.turns.search(qtok, pool):
        members = state.turn_leaves.get(tk) or []
        if members:
            lexical.append(_closest_leaf(state, members, leaf_cos) or members[0])
    return lexical


def _leaf_bonuses(
    state: RetrievalState,
    fused: dict[str, float],
    leaf_cos: np.ndarray,
    arr: LevelArrays,
    pool: int,
    cfg: RecallConfig,
    personal: bool,
    situational: bool,
) -> dict[str, str]:
    """Raise fused leaf scores in place: neighbours of the best turns, then what the
    person holds (dispositions for a question about them, goals, values, conditions
    and causes for a situation of their own), then changes.

    Returns the lender of each leaf that got its score from a neighbour.
    """
    lent: dict[str, str] = {}
    if cfg.neighbour_share > 0:
        # A small budget shows few lines: lending from many seeds would crowd
        # them out with the neighbours of weak matches.
        seeds = min(cfg.neighbour_seeds, pool // _SEEDS_PER_POOL)
        lent = _lend_to_neighbours(state, fused, leaf_cos, cfg.neighbour_share, seeds)
    channels = []
    if personal:
        channels.append(disposition_bonus(_nearest(arr, leaf_cos, state.disposition_rows, pool), cfg))
    if situational:
        channels.append(standing_bonus(_nearest(arr, leaf_cos, state.standing_rows, pool), cfg))
    for bonuses in channels:
        for x, bonus in bonuses.items():
            fused[x] = min(1.0, fused.get(x, 0.0) + bonus)
    for x, bonus in change_bonus(state, leaf_cos, arr, cfg).items():
        fused[x] = min(1.0, fused.get(x, 0.0) + bonus)
    return lent


def change_bonus(
    state: RetrievalState, leaf_cos: np.ndarray, arr: LevelArrays, cfg: RecallConfig
) -> dict[str, float]:
    """Bonus of the statements of change nearest the query, on the [0, 1] fused scale.

    A change in the person's circumstances or habits ("I gave up running after the
    operation", "We moved inland") is what a later question about them depends on,
    usually in other words than the ones that name it ("Should I sign them up for the
    fun run?"), so the statements that say it rarely rank among the best matches
    while the older habit they end does. The few change statements closest to the
    query (cosine at least ``cfg.change_floor`` and ``cfg.change_ratio`` of the best
    leaf's) get ``cfg.change_weight``, decaying as :func:`disposition_bonus` does.

    Parameters
    ----------
    state : RetrievalState
    leaf_cos : ndarray
        Cosine of every leaf row with the query.
    arr : LevelArrays
        The leaf level's rows.
    cfg : RecallConfig

    Returns
    -------
    dict of str to float
    """
    rows = state.change_rows
    if cfg.change_weight <= 0.0 or not rows.size or not leaf_cos.size:
        return {}
    floor = max(cfg.change_floor, cfg.change_ratio * float(leaf_cos.max()))
    cos = leaf_cos[rows]
    keep = rows[cos >= floor]
    if not keep.size:
        return {}
    best = keep[top_k(leaf_cos[keep], cfg.change_k)]
    return _anchored_rrf([arr.ids[int(row)] for row in best], cfg.change_weight, cfg.change_k)


def _closest_leaf(
    state: RetrievalState, members: Sequence[str], leaf_cos: np.ndarray | None
) -> str | None:
    """The embedded leaf of a turn closest to the query (the first on ties), if any."""
    arr = state.arrays.get(Level.LEAF)
    if leaf_cos is None or arr is None:
        return None
    embedded = [m for m in members if m in arr.row]
    return max(embedded, key=lambda m: float(leaf_cos[arr.row[m]])) if embedded else None


def _lend_to_neighbours(
    state: RetrievalState, fused: dict[str, float], leaf_cos: np.ndarray, share: float, seeds: int
) -> dict[str, str]:
    """Give the turns next to the best-matching ones a share of their score (in place).

    Each neighbour turn is represented by its leaf closest to the query; a leaf keeps
    the larger of its own score and the share it is lent. Returns lender by borrower.
    """
    lenders: dict[str, str] = {}
    for leaf, score in list(islice(fused.items(), seeds)):
        tk = state.turn_of.get(leaf)
        if tk is None:
            continue
        for other in state.neighbours(tk):
            best = _closest_leaf(state, state.turn_leaves.get(other, ()), leaf_cos) if other else None
            if best is None:
                continue
            lent = share * score
            if lent > fused.get(best, 0.0):
                fused[best] = lent
                lenders[best] = leaf
    return lenders
