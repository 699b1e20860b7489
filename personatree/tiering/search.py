"""Tiered recall: search tier 1, then tiers 1+2, then the whole tree, stopping early.

Each tier is searched with the retrieval engine itself (:func:`recall_state`) over a
sub-tree holding only that tier's nodes (with their support paths), so scoring,
packing, rendering and the token budget behave exactly as in plain recall; only the
candidate set shrinks. A tier's answer is *sufficient* when the items it would show
with cosine ≥ ``sufficient_cosine`` to the query (the documented threshold; MiniLM
puts paraphrases at ≳0.55) fill at least ``sufficient_fill`` of the token budget,
or, with ``claims_suffice``, when an abstract query (routed to mids or roots) is
answered by a claim of its level (see :func:`sufficient`); a tier that could not be
sufficient is not searched (:func:`could_suffice`). When ``archive_k > 0``, a
sufficient answer must also hold the archive's closest nodes to the query (up to
``archive_k``, within ``archive_margin`` of the best cosine; :func:`archive_top`,
one matrix product, no scoring or packing of the archive), so the best evidence is
known to be hot. Otherwise the search goes one tier deeper. Tier 3 is the plain
engine over the whole tree (the raw log stays reachable through each leaf's
provenance); its most relevant hits (up to ``promote_max``) not yet hot are scored
on access and may be promoted into tier 2, which updates the hot sub-trees in place
(:class:`~personatree.tiering.hot.HotIndex`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterable, Sequence

import numpy as np

from ..config import RecallConfig, TieringConfig
from ..engine.caches import Slot
from ..engine.core import EngineLike, engine_of
from ..graph import MemoryGraph
from ..index import top_k
from ..ports import TokenCounter
from ..retrieval.access import access_log
from ..retrieval.prelude import RecallQuery, prepare_recall, user_state
from ..retrieval.result import Recall
from ..retrieval.state import RetrievalState
from ..schema import SchemaRegistry
from ..types import Level, Node, Route
from .hot import HotIndex
from .line_bound import line_bytes, line_tokens
from .tiers import TierState, promote, tier_state

__all__ = ["TieredResult", "sufficient", "could_suffice", "could_fill", "archive_top", "hot_states", "search_tiers",
           "search_request", "search_hot", "search_deep", "tiered_recall", "tiers_of", "tiering_config"]


@dataclass(frozen=True, slots=True)
class TieredResult:
    """A tiered recall and how deep it went.

    Attributes
    ----------
    recall : Recall
        What plain recall returns.
    tier : int
        The tier that answered: 1, 2 or 3.
    promoted : tuple of str
        Tier-3 hits promoted into tier 2 by this search.
    """

    recall: Recall
    tier: int
    promoted: tuple[str, ...] = ()


def sufficient(
    result: Recall, nodes: dict[str, Node], qvec: np.ndarray | None, cfg: TieringConfig, budget: int
) -> bool:
    """Whether ``result`` holds enough evidence to stop searching deeper.

    The shown items with cosine ≥ ``sufficient_cosine`` (paraphrase-level matches)
    must fill at least ``sufficient_fill`` of ``budget``. A context is a budget's
    worth of evidence: when the hot tiers fill a real share of it with close
    matches, the question is about what is hot (recent sessions, pivotal memories)
    and the archive would add weaker matches; one or two close matches in a
    mostly weak context say little about what the archive holds. With
    ``claims_suffice``, an abstract query (routed to mids or roots) answered by a
    claim of its level is also sufficient.

    Parameters
    ----------
    result : Recall
    nodes : dict
        Node objects by id (a retrieval state's ``nodes``).
    qvec : ndarray or None
        Query embedding; without one nothing is sufficient (go to the full tree).
    cfg : TieringConfig
    budget : int
        The recall's token budget.

    Returns
    -------
    bool
    """
    if (
        cfg.claims_suffice
        and result.route.level is not Level.LEAF
        and any(i.level is result.route.level for i in result.items)
    ):
        return True
    if qvec is None:
        return False
    need = cfg.sufficient_fill * budget
    strong = 0
    for item in result.items:
        emb = nodes[item.node_id].embedding
        if emb is not None and float(np.dot(emb, qvec)) >= cfg.sufficient_cosine:
            strong += item.tokens
            if strong >= need:
                return True
    return False


def could_suffice(
    state: RetrievalState,
    qvec: np.ndarray | None,
    cfg: TieringConfig,
    budget: int,
    levels: Sequence[Level] | None = None,
    counter: TokenCounter | None = None,
) -> bool:
    """Whether a tier holds enough close matches that its answer *could* be sufficient.

    An upper bound, one matrix product per level and no packing: every node of the
    tier with cosine ≥ ``sufficient_cosine``, at the most its rendered line could
    cost (:mod:`~personatree.tiering.line_bound`: in the recall's tokens, or in
    UTF-8 bytes without a counter, as a BPE token spans at least one byte), must
    add up to ``sufficient_fill`` of the budget. When they cannot, searching the
    tier only delays the deeper search. A bound below what the shown lines count
    would skip a tier that might have sufficed: slower, never less recall, since the
    deeper tier holds all of them.

    Parameters
    ----------
    state : RetrievalState
        The tier's retrieval state.
    qvec : ndarray or None
    cfg : TieringConfig
    budget : int
    levels : sequence of Level, optional
        Only these levels may be shown.
    counter : TokenCounter, optional
        The recall's counter (default: the bound in bytes).

    Returns
    -------
    bool
    """
    if qvec is None:
        return False
    close = (
        state.nodes[arr.ids[int(row)]]
        for lv, arr in state.arrays.items()
        if arr.ids and not (levels and lv not in levels)
        for row in np.flatnonzero(arr.matrix @ qvec >= cfg.sufficient_cosine)
    )
    return could_fill(close, cfg.sufficient_fill * budget, counter)


def could_fill(close: Iterable[Node], need: float, counter: TokenCounter | None = None) -> bool:
    """Whether the close matches ``close``, each at the most its rendered line could
    cost (in ``counter``'s tokens, or bytes without one), add up to ``need`` tokens
    (the bound of :func:`could_suffice`)."""
    total = 0
    for n in close:
        total += line_bytes(n) if counter is None else line_tokens(n, counter)
        if total >= need:
            return True
    return False


def archive_top(
    state: RetrievalState,
    qvec: np.ndarray,
    k: int,
    levels: Sequence[Level] | None = None,
    margin: float = 2.0,
) -> list[str]:
    """The nodes closest to the query in the whole archive (one matrix product per level).

    At most ``k`` of them, and only those within ``margin`` of the best cosine: the
    contenders for best evidence, not the runners-up far behind.

    Parameters
    ----------
    state : RetrievalState
        The whole tree's retrieval state.
    qvec : ndarray
    k : int
    levels : sequence of Level, optional
        Only these levels (default all).
    margin : float
        Keep only nodes whose cosine is at least the best minus this.

    Returns
    -------
    list of str
        Node ids, closest first.
    """
    ids: list[str] = []
    sims: list[np.ndarray] = []
    for lv, arr in state.arrays.items():
        if (levels and lv not in levels) or not arr.ids:
            continue
        s = arr.matrix @ qvec
        top = top_k(s, k)
        ids.extend(arr.ids[int(i)] for i in top)
        sims.append(s[top])
    if not ids:
        return []
    flat = np.concatenate(sims)
    order = np.argsort(-flat, kind="stable")[:k]
    best = float(flat[order[0]])
    return [ids[int(i)] for i in order if float(flat[int(i)]) >= best - margin]


def hot_states(tstate: TierState, graph: MemoryGraph, cfg: TieringConfig) -> tuple[RetrievalState, RetrievalState]:
    """Retrieval states over tier 1 and over tiers 1+2.

    Each is a :class:`~personatree.tiering.hot.HotIndex` kept in the tier state's
    cache: rebuilt when the tree changes, updated incrementally when only tier
    membership changed (a promotion re-indexes the nodes it brings, nothing else).
    """
    graph_key = (tstate.version, id(graph))
    out = []
    for name, ids in (("t1", tstate.tier1), ("t12", tstate.tier1 + tuple(tstate.tier2))):
        hot = tstate.cache.get(name)
        if not isinstance(hot, HotIndex):
            hot = tstate.cache[name] = HotIndex()
        out.append(hot.sync(graph, graph_key, ids, cfg.hot_children, (graph_key, tstate.membership)))
    return out[0], out[1]


def search_tiers(
    tstate: TierState,
    graph: MemoryGraph,
    full: RetrievalState | Callable[[], RetrievalState],
    query: str,
    qvec: np.ndarray | None,
    route: Route,
    *,
    registry: SchemaRegistry,
    counter: TokenCounter,
    budget: int,
    now: datetime,
    cfg: RecallConfig,
    tcfg: TieringConfig,
    levels: Sequence[Level] | None = None,
) -> TieredResult:
    """Search T1 → T1+T2 → whole tree, stopping at the first sufficient answer.

    Parameters
    ----------
    tstate : TierState
        The user's tiers at the graph's version.
    graph : MemoryGraph
        The user's whole tree (read only).
    full : RetrievalState or callable
        The whole tree's retrieval state, or a function returning it (asked only
        when tier 3 is needed).
    query, qvec, route, registry, counter, budget, now, cfg, levels
        As for :func:`personatree.retrieval.engine.recall_state`.
    tcfg : TieringConfig

    Returns
    -------
    TieredResult
    """
    req = RecallQuery(query, qvec, route, registry, counter, budget, now, cfg, levels)
    return search_request(tstate, graph, full, req, tcfg)


def search_request(
    tstate: TierState,
    graph: MemoryGraph,
    full: RetrievalState | Callable[[], RetrievalState],
    req: RecallQuery,
    tcfg: TieringConfig,
) -> TieredResult:
    """:func:`search_tiers` for a prepared :class:`~personatree.retrieval.prelude.RecallQuery`."""
    t1, t12 = hot_states(tstate, graph, tcfg)
    got = search_hot(t1, t12, full, req, tcfg)
    if isinstance(got, TieredResult):
        return got
    return search_deep(tstate, graph, got, req, tcfg)


def search_hot(
    t1: RetrievalState | Callable[[], RetrievalState],
    t12: RetrievalState | Callable[[], RetrievalState],
    full: RetrievalState | Callable[[], RetrievalState],
    req: RecallQuery,
    tcfg: TieringConfig,
    bounds: tuple[bool, bool] | None = None,
) -> TieredResult | RetrievalState | Callable[[], RetrievalState]:
    """Tiers 1 and 1+2 of :func:`search_request`: their answer when one is sufficient.

    Parameters
    ----------
    t1, t12 : RetrievalState or callable
        The states over tier 1 and over tiers 1+2 (:func:`hot_states`, or the same
        built from a shared hot tier), or functions returning them (asked only when
        that tier is searched).
    full : RetrievalState or callable
        The whole tree's state, or a function returning it (asked only when
        ``archive_k > 0`` checks a hot answer against the archive).
    req : RecallQuery
    tcfg : TieringConfig
    bounds : (bool, bool), optional
        :func:`could_suffice` of tiers 1+2 and of tier 1, when the caller knows them
        already (a shared hot tier's entry carries what they read).

    Returns
    -------
    TieredResult or RetrievalState or callable
        The sufficient answer; otherwise ``full`` for the deeper search (the state
        itself once it was asked for).
    """
    qvec, route, budget, levels = req.qvec, req.route, req.budget, req.levels
    full_state: RetrievalState | None = None
    archive: list[str] | None = None
    # A tier is searched only when it could be sufficient: tier 2 holds tier 1, so
    # when tiers 1+2 cannot, neither can tier 1.
    claim_rule = tcfg.claims_suffice and route.level is not Level.LEAF
    open_tiers = {1, 2}
    if not claim_rule:
        if bounds is None:
            c12 = could_suffice(_state(t12), qvec, tcfg, budget, levels, req.counter)
            bounds = (c12, c12 and could_suffice(_state(t1), qvec, tcfg, budget, levels, req.counter))
        if not bounds[0]:
            open_tiers.clear()
        elif not bounds[1]:
            open_tiers.discard(1)
    for tier, get in ((1, t1), (2, t12)):
        if tier not in open_tiers:
            continue
        st = _state(get)
        if not st.nodes:
            continue
        res = req.run(st)
        if not sufficient(res, st.nodes, qvec, tcfg, budget):
            continue
        if tcfg.archive_k == 0 or qvec is None:
            return TieredResult(res, tier)
        if archive is None:
            full_state = full() if callable(full) else full
            archive = archive_top(full_state, qvec, tcfg.archive_k, levels, tcfg.archive_margin)
        if all(n in st.nodes for n in archive):
            return TieredResult(res, tier)
    return full if full_state is None else full_state


def _state(got: RetrievalState | Callable[[], RetrievalState]) -> RetrievalState:
    return got() if callable(got) else got


def search_deep(
    tstate: TierState,
    graph: MemoryGraph,
    full: RetrievalState | Callable[[], RetrievalState],
    req: RecallQuery,
    tcfg: TieringConfig,
) -> TieredResult:
    """Tier 3 of :func:`search_request`: the whole tree, then promotion of its best hits.

    Parameters
    ----------
    tstate : TierState
        Updated in place by the promotions.
    graph : MemoryGraph
        The user's whole tree (read only).
    full : RetrievalState or callable
    req : RecallQuery
    tcfg : TieringConfig

    Returns
    -------
    TieredResult
    """
    full_state = full() if callable(full) else full
    res = req.run(full_state)
    # The most relevant hits are the ones worth keeping warm; promote those first. A
    # turn shown only for being next to a hit rides along with it, not on its own.
    direct = [i for i in res.items if i.neighbour_of is None]
    best = sorted(direct, key=lambda i: -i.relevance)[: tcfg.promote_max]
    promoted = promote(tstate, graph, [i.node_id for i in best], req.registry, req.now, tcfg)
    return TieredResult(res, 3, tuple(promoted))


# -- the engine-level entry point --------------------------------------------------------

# The tier state of each user, per engine.
_TIERS: Slot[dict[str, TierState]] = Slot("tiering.tiers", per_user=True)


def tiering_config(tree: EngineLike) -> TieringConfig:
    """The engine's ``config.tiering``."""
    return engine_of(tree).config.tiering


def tiers_of(tree: EngineLike, user_id: str, now: datetime | None = None,
             config: TieringConfig | None = None) -> TierState:
    """The cached :class:`TierState` of a user, brought up to the engine's version.

    Call with the engine's lock held (or from a single thread). ``config`` overrides
    ``config.tiering`` (tests, benchmarks).

    Raises
    ------
    UnknownUserError
    """
    engine = engine_of(tree)
    now = engine.clock.now() if now is None else now
    graph = engine.live_graph(user_id)
    version = engine.state(user_id).version
    cache = engine.caches.get(_TIERS, dict)
    st = tier_state(graph, engine.registry, now, config or engine.config.tiering, (id(graph), version),
                    cache.get(user_id))
    cache[user_id] = st
    return st


def tiered_recall(
    tree: EngineLike,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
    from_user: bool = False,
    config: TieringConfig | None = None,
) -> TieredResult:
    """``recall_user`` through the tiers: same arguments, same :class:`Recall` inside.

    Parameters
    ----------
    tree : Engine or PersonaTree
    user_id : str
        A validated user id.
    query : str
    budget : int, optional
    model : str, optional
    levels : sequence of Level, optional
    from_user : bool
        The query is the person's own message (see ``recall_user``).
    config : TieringConfig, optional
        Overrides ``config.tiering``.

    Returns
    -------
    TieredResult

    Raises
    ------
    UnknownUserError, QueryError, InputError
    """
    engine = engine_of(tree)
    tcfg = config or engine.config.tiering
    req = prepare_recall(engine, query, budget=budget, model=model, levels=levels, from_user=from_user)
    with engine.lock:
        st = engine.existing_state(user_id)
        tstate = tiers_of(engine, user_id, req.now, tcfg)

        def full() -> RetrievalState:
            # Share the engine's own per-user state cache: tier 3 is plain recall.
            return user_state(engine, user_id, st)

        out = search_request(tstate, st.graph, full, req, tcfg)
    access_log(engine, req.cfg.access_flush_every).record(user_id, out.recall.node_ids, req.now)
    return out
