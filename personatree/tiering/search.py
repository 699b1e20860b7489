"""Tiered recall: search tier 1, then tiers 1+2, then the whole tree, stopping early.

Each tier is searched with the retrieval engine itself (:func:`recall_state`) over a
sub-tree holding only that tier's nodes (with their support paths), so scoring,
packing, rendering and the token budget behave exactly as in plain recall; only the
candidate set shrinks. A tier's answer is *sufficient* when at least
``sufficient_hits`` of the items it would show have cosine ≥ ``sufficient_cosine``
to the query (the documented threshold; MiniLM puts paraphrases at ≳0.55), or when
an abstract query (routed to mids or roots) is answered by a claim of its level
(see :func:`sufficient`), and, when ``archive_k > 0``, the archive's closest nodes to
the query (up to ``archive_k``, within ``archive_margin`` of the best cosine) are all
in that tier (:func:`archive_top`: one matrix product, no scoring or packing of the
archive), so the best evidence is known to be hot. Otherwise the search goes
one tier deeper. Tier 3 is the plain engine over the whole tree (the
raw log stays reachable through each leaf's provenance); its most relevant hits
(up to ``promote_max``) not yet hot are scored on access and may be promoted into
tier 2.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Sequence

import numpy as np

from ..config import RecallConfig
from ..graph import MemoryGraph
from ..index import top_k
from ..retrieval.engine import recall_state
from ..retrieval.result import Recall
from ..retrieval.state import RetrievalState
from ..types import Level, Route
from .config import TieringConfig
from .tiers import TierState, hot_graph, promote, tier_state

__all__ = ["TieredResult", "sufficient", "archive_top", "hot_states", "search_tiers",
           "tiered_recall", "tiers_of", "tiering_config"]


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


def sufficient(result: Recall, nodes: dict[str, Any], qvec: np.ndarray | None, cfg: TieringConfig) -> bool:
    """Whether ``result`` holds enough evidence to stop searching deeper.

    Two ways to be sufficient:

    * at least ``sufficient_hits`` shown items have cosine ≥ ``sufficient_cosine``
      (specific questions: paraphrase-level matches were found);
    * the router sent the query to the claims (mid or root level) and a shown claim
      is of that level: abstract questions ("what kind of person am I?") are about
      the persona, whose top claims are hot by construction, and they match claims
      at cosines (~0.3) that no threshold for specific evidence would accept.

    Parameters
    ----------
    result : Recall
    nodes : dict
        Node objects by id (a retrieval state's ``nodes``).
    qvec : ndarray or None
        Query embedding; without one nothing is sufficient (go to the full tree).
    cfg : TieringConfig

    Returns
    -------
    bool
    """
    if result.route.level is not Level.LEAF and any(i.level is result.route.level for i in result.items):
        return True
    if qvec is None:
        return False
    hits = 0
    for nid in result.node_ids:
        emb = nodes[nid].embedding
        if emb is not None and float(np.dot(emb, qvec)) >= cfg.sufficient_cosine:
            hits += 1
            if hits >= cfg.sufficient_hits:
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
    """Retrieval states over tier 1 and over tiers 1+2, cached by tier membership.

    The states are refreshed incrementally (only nodes entering or leaving a tier
    are re-indexed), keyed by ``(graph version, membership)``.
    """
    key = (tstate.version, tstate.membership, id(graph))
    out = []
    for name, ids in (("t1", tstate.tier1), ("t12", tstate.tier1 + tuple(tstate.tier2))):
        st = tstate.cache.get(name)
        if st is None or st.version != key:
            sub = hot_graph(graph, ids, cfg.hot_children)
            st = (st or RetrievalState(sub)).refresh(sub, key)
            tstate.cache[name] = st
        out.append(st)
    return out[0], out[1]


def search_tiers(
    tstate: TierState,
    graph: MemoryGraph,
    full: RetrievalState | Callable[[], RetrievalState],
    query: str,
    qvec: np.ndarray | None,
    route: Route,
    *,
    registry: Any,
    counter: Any,
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
    kw = dict(registry=registry, counter=counter, budget=budget, now=now, cfg=cfg, levels=levels)
    t1, t12 = hot_states(tstate, graph, tcfg)
    full_state: RetrievalState | None = None
    archive: list[str] | None = None
    for tier, st in ((1, t1), (2, t12)):
        if not st.nodes:
            continue
        res = recall_state(st, query, qvec, route, **kw)  # type: ignore[arg-type]
        if not sufficient(res, st.nodes, qvec, tcfg):
            continue
        if tcfg.archive_k == 0 or qvec is None:
            return TieredResult(res, tier)
        if archive is None:
            full_state = full() if callable(full) else full
            archive = archive_top(full_state, qvec, tcfg.archive_k, levels, tcfg.archive_margin)
        if all(n in st.nodes for n in archive):
            return TieredResult(res, tier)
    if full_state is None:
        full_state = full() if callable(full) else full
    res = recall_state(full_state, query, qvec, route, **kw)  # type: ignore[arg-type]
    # The most relevant hits are the ones worth keeping warm; promote those first.
    best = sorted(res.items, key=lambda i: -i.relevance)[: tcfg.promote_max]
    promoted = promote(tstate, graph, [i.node_id for i in best], registry, now, tcfg)
    return TieredResult(res, 3, tuple(promoted))


# -- the PersonaTree-level entry point ----------------------------------------------------

_TIERS: "weakref.WeakKeyDictionary[Any, dict[str, TierState]]" = weakref.WeakKeyDictionary()
_TIERS_LOCK = threading.Lock()


def tiering_config(tree: Any) -> TieringConfig:
    """``tree.config.tiering`` when the config has it, else the defaults."""
    cfg = getattr(tree.config, "tiering", None)
    return cfg if isinstance(cfg, TieringConfig) else TieringConfig()


def tiers_of(tree: Any, user_id: str, now: datetime | None = None, config: TieringConfig | None = None) -> TierState:
    """The cached :class:`TierState` of a user, brought up to the tree's version.

    Call with ``tree._lock`` held (or from a single thread). ``config`` overrides
    ``tree.config.tiering`` (tests, benchmarks).

    Raises
    ------
    UnknownUserError
    """
    now = tree.clock.now() if now is None else now
    graph = tree._graph(user_id)
    version = tree._state(user_id).version
    with _TIERS_LOCK:
        cache = _TIERS.setdefault(tree, {})
    st = tier_state(graph, tree.registry, now, config or tiering_config(tree), (id(graph), version), cache.get(user_id))  # noqa: E501
    cache[user_id] = st
    return st


def tiered_recall(
    tree: Any,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
    config: TieringConfig | None = None,
) -> TieredResult:
    """``recall_user`` through the tiers: same arguments, same :class:`Recall` inside.

    Parameters
    ----------
    tree : PersonaTree
    user_id : str
        A validated user id.
    query : str
    budget : int, optional
    model : str, optional
    levels : sequence of Level, optional
    config : TieringConfig, optional
        Overrides ``tree.config.tiering``.

    Returns
    -------
    TieredResult

    Raises
    ------
    UnknownUserError, QueryError, InputError
    """
    from .. import retrieval as R  # noqa: PLC0415
    from ..errors import InputError, UnknownUserError  # noqa: PLC0415
    from ..inputs import check_query  # noqa: PLC0415
    from ..retrieval.access import access_log  # noqa: PLC0415
    from ..retrieval.state import state_for  # noqa: PLC0415
    from ..retrieval.tokens import counter_of, shared_counter  # noqa: PLC0415

    cfg = tree.config.recall
    tcfg = config or tiering_config(tree)
    q = check_query(query, tree.config.limits)
    b = cfg.budget if budget is None else budget
    if not isinstance(b, int) or isinstance(b, bool) or b < 1:
        raise InputError("budget must be a positive integer")
    counter = shared_counter(model) if model else counter_of(tree, cfg.model)
    qvec = tree.embedder.embed([q])[0]
    route = R._route(tree, q, qvec)  # the engine's router choice, reused as is
    now = tree.clock.now()
    with tree._lock:
        st = tree._state(user_id)
        if st.version == 0:
            raise UnknownUserError(f"no data stored for user {user_id!r}")
        tstate = tiers_of(tree, user_id, now, tcfg)

        def full() -> RetrievalState:
            # Share the engine's own per-user state cache: tier 3 is plain recall.
            with R._STATES_LOCK:
                cache = R._STATES.setdefault(tree, {})
            return state_for(cache, user_id, st.graph, st.version)

        out = search_tiers(tstate, st.graph, full, q, qvec, route, registry=tree.registry, counter=counter,
                           budget=b, now=now, cfg=cfg, tcfg=tcfg, levels=levels)
    access_log(tree, cfg.access_flush_every).record(user_id, out.recall.node_ids, now)
    return out
