"""Tier 1 (hot), tier 2 (buffer) and tier 3 (archive) of one user's tree.

* Tier 1: the leaves of the last ``S`` sessions, the top ``top_roots`` roots and the
  top ``K`` other nodes by priority S_m ("pivotal"); always rendered as the profile.
* Tier 2: the next ``H`` nodes by S_m.
* Tier 3: everything else, and the raw observation log behind it.

Tiers are a *cache over* the tree, never a change to it: a :class:`TierState` holds
node ids, headers and scores, and promotion or demotion only moves ids between its
lists. It is keyed by graph version and carries the anchored persona vector: on a
new version, a drift ≥ τ re-ranks every node; otherwise only the nodes the change
touched, and the current tier 1/2 members, are re-scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Hashable, Iterable

import numpy as np

from ..graph import MemoryGraph
from ..render import node_confidence
from ..types import Level, Node
from ..config import TieringConfig
from .header import NodeHeader, age_days, header_of, priorities
from .persona import drift, graph_persona

__all__ = ["TierState", "tier_state", "rank_all", "select_tiers", "recent_session_leaves", "promote",
           "rescore"]


@dataclass(slots=True)
class TierState:
    """The tiers of one user's tree at one graph version.

    Attributes
    ----------
    user_id : str
    version : hashable
        Graph version the tiers were brought up to.
    anchor : ndarray or None
        Persona vector P at the last full re-rank (Sim is measured against it).
    headers : dict
        Node id → :class:`NodeHeader` (every node with a header).
    scores : dict
        Node id → S_m at ``scored_at`` (tier-3 scores may be stale; see module doc).
    recent, roots, pivotal : tuple of str
        The three parts of tier 1.
    tier2 : list of str
        Tier 2, best first.
    scored_at : datetime
    reranks : int
        Full re-ranks so far (the first build counts).
    lazy_updates : int
        Versions absorbed without a re-rank.
    promotions, demotions : int
        Tier-3 → tier-2 moves on access, and tier-2 → tier-3 moves they caused.
    membership : int
        Bumped whenever tier 1 or 2 changes (keys the hot retrieval states).
    """

    user_id: str
    version: Hashable
    anchor: np.ndarray | None
    headers: dict[str, NodeHeader]
    scores: dict[str, float]
    recent: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    pivotal: tuple[str, ...] = ()
    tier2: list[str] = field(default_factory=list)
    scored_at: datetime | None = None
    reranks: int = 0
    lazy_updates: int = 0
    promotions: int = 0
    demotions: int = 0
    membership: int = 0
    last_drift: float = 0.0
    sig: dict[str, Hashable] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def tier1(self) -> tuple[str, ...]:
        """Tier 1 ids: roots, pivotal nodes, then recent-session leaves (no repeats)."""
        return tuple(dict.fromkeys(self.roots + self.pivotal + self.recent))

    @property
    def hot(self) -> set[str]:
        """Tier 1 ∪ tier 2."""
        return set(self.tier1) | set(self.tier2)

    def tier_of(self, node_id: str) -> int:
        """1, 2 or 3."""
        if node_id in set(self.tier1):
            return 1
        return 2 if node_id in set(self.tier2) else 3


def _signature(n: Node) -> Hashable:
    # What S_m depends on: level, evidence (logit, support, time) and access statistics.
    # (content stands in for the embedding: a reload gives new arrays for the same text)
    return (n.level, n.logit, n.n_support, n.t_last, n.t_access, n.recall_count, n.schema_type, n.content)


def _headers(nodes: Iterable[Node], registry: Any, now: datetime, persona: np.ndarray | None) -> dict[str, NodeHeader]:
    return {n.id: header_of(n, node_confidence(n, registry, now), persona) for n in nodes}


def rescore(headers: Iterable[NodeHeader], now: datetime, cfg: TieringConfig) -> dict[str, float]:
    """S_m of each header at ``now`` (one vectorised pass)."""
    hs = list(headers)
    if not hs:
        return {}
    s = priorities(np.fromiter((h.importance for h in hs), np.float64, len(hs)),
                   np.fromiter((h.persona_sim for h in hs), np.float64, len(hs)),
                   np.fromiter((h.recall_count for h in hs), np.float64, len(hs)),
                   np.fromiter((age_days(h.t_last, now) for h in hs), np.float64, len(hs)),
                   alpha=cfg.alpha, beta=cfg.beta, lam=cfg.lam)
    return {h.node_id: float(v) for h, v in zip(hs, s)}


def rank_all(graph: MemoryGraph, registry: Any, now: datetime, cfg: TieringConfig,
             persona: np.ndarray | None) -> tuple[dict[str, NodeHeader], dict[str, float]]:
    """Headers and S_m of every node (the full re-rank)."""
    headers = _headers(graph.nodes(), registry, now, persona)
    return headers, rescore(headers.values(), now, cfg)


def recent_session_leaves(graph: MemoryGraph, sessions: int) -> tuple[str, ...]:
    """Leaves of the ``sessions`` most recent sessions (by their latest leaf), oldest first."""
    if sessions <= 0:
        return ()
    latest: dict[str, datetime] = {}
    members: dict[str, list[Node]] = {}
    for n in graph.nodes(Level.LEAF):
        if not n.provenance:
            continue
        sid = n.provenance[0].session_id
        members.setdefault(sid, []).append(n)
        if sid not in latest or n.t_first > latest[sid]:
            latest[sid] = n.t_first
    keep = sorted(latest, key=lambda s: latest[s], reverse=True)[:sessions]
    leaves = [n for s in keep for n in members[s]]
    leaves.sort(key=lambda n: (n.t_first, n.id))
    return tuple(n.id for n in leaves)


def select_tiers(graph: MemoryGraph, scores: dict[str, float], cfg: TieringConfig,
                 pool: Iterable[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], list[str]]:
    """(recent, roots, pivotal, tier2) from scores.

    Parameters
    ----------
    graph : MemoryGraph
    scores : dict
        S_m per node id.
    cfg : TieringConfig
    pool : iterable of str, optional
        Candidates for pivotal and tier 2 (default: every scored node); a lazy update
        passes the current tier 1/2 plus the touched nodes.
    """
    recent = recent_session_leaves(graph, cfg.S)
    root_ids = [n.id for n in graph.nodes(Level.ROOT) if n.id in scores]
    roots = tuple(sorted(root_ids, key=lambda x: (-scores[x], x))[: cfg.top_roots])
    taken = set(recent) | set(roots)
    cands = [x for x in (scores if pool is None else pool) if x in scores and x not in taken and x in graph]
    cands.sort(key=lambda x: (-scores[x], x))
    pivotal = tuple(cands[: cfg.K])
    tier2 = cands[cfg.K: cfg.K + cfg.H]
    return recent, roots, pivotal, tier2


def tier_state(graph: MemoryGraph, registry: Any, now: datetime, cfg: TieringConfig, version: Hashable,
               prev: TierState | None = None) -> TierState:
    """The tiers of ``graph`` at ``version``, updated from ``prev`` when possible.

    A full re-rank happens on the first build and whenever ‖P_new − P_anchor‖₂ ≥ τ;
    otherwise (lazy update) only nodes whose header inputs changed, plus the current
    tier 1 and 2 members, are re-scored, Sim still measured against the anchor.

    Parameters
    ----------
    graph : MemoryGraph
    registry : SchemaRegistry
    now : datetime
    cfg : TieringConfig
    version : hashable
    prev : TierState, optional
        The previous state of the same user (``None``: build from scratch).

    Returns
    -------
    TierState
        ``prev`` itself when the version is unchanged.
    """
    if prev is not None and prev.version == version and version is not None and prev.user_id == graph.user_id:
        return prev
    p_new = graph_persona(graph, registry, now, strong_mid=cfg.strong_mid)
    new_sig = {n.id: _signature(n) for n in graph.nodes()}
    if prev is None or prev.user_id != graph.user_id or drift(p_new, prev.anchor) >= cfg.tau:
        headers, scores = rank_all(graph, registry, now, cfg, p_new)
        recent, roots, pivotal, tier2 = select_tiers(graph, scores, cfg)
        st = TierState(graph.user_id, version, p_new, headers, scores, recent, roots, pivotal, tier2, now,
                       sig=new_sig)
        if prev is not None and prev.user_id == graph.user_id:
            st.reranks, st.lazy_updates = prev.reranks, prev.lazy_updates
            st.promotions, st.demotions, st.membership = prev.promotions, prev.demotions, prev.membership + 1
            st.cache = prev.cache
        st.reranks += 1
        st.last_drift = drift(p_new, prev.anchor) if prev is not None else float("inf")
        return st
    # Lazy: re-score only what changed, against the anchored persona.
    touched = [nid for nid, s in new_sig.items() if prev.sig.get(nid) != s]
    headers = {k: v for k, v in prev.headers.items() if k in new_sig}
    headers.update(_headers((graph.node(x) for x in touched), registry, now, prev.anchor))
    hot = [x for x in dict.fromkeys(prev.tier1 + tuple(prev.tier2)) if x in new_sig]  # ordered, not a set
    scores = {k: v for k, v in prev.scores.items() if k in new_sig}
    scores.update(rescore((headers[x] for x in dict.fromkeys(hot + touched)), now, cfg))
    recent, roots, pivotal, tier2 = select_tiers(graph, scores, cfg, pool=dict.fromkeys(hot + touched))
    changed = (recent, roots, pivotal, tier2) != (prev.recent, prev.roots, prev.pivotal, prev.tier2)
    prev.demotions += len(set(prev.tier2) - set(tier2) - set(recent + roots + pivotal))
    prev.version, prev.headers, prev.scores, prev.sig = version, headers, scores, new_sig
    prev.recent, prev.roots, prev.pivotal, prev.tier2 = recent, roots, pivotal, tier2
    prev.scored_at = now
    prev.lazy_updates += 1
    prev.last_drift = drift(p_new, prev.anchor)
    if changed:
        prev.membership += 1
    return prev


def promote(state: TierState, graph: MemoryGraph, node_ids: Iterable[str], registry: Any, now: datetime,
            cfg: TieringConfig) -> list[str]:
    """Score tier-3 hits on access and promote those that beat tier 2's weakest.

    A hit is scored as if its recall had been recorded (C_m + 1, touched ``now``);
    tier 2 is re-scored at ``now`` so both sides are read at the same time. Each
    promotion past ``H`` demotes tier 2's weakest node to tier 3. Only the state's id
    lists change: the tree is never touched.

    Returns
    -------
    list of str
        Ids promoted into tier 2.
    """
    hot = state.hot
    hits = [x for x in dict.fromkeys(node_ids) if x not in hot and x in graph]
    if not hits:
        return []
    t2 = rescore((state.headers[x] for x in state.tier2 if x in state.headers), now, cfg)
    state.scores.update(t2)
    promoted: list[str] = []
    for x in hits:
        n = graph.node(x)
        h = state.headers.get(x) or header_of(n, node_confidence(n, registry, now), state.anchor)
        h = NodeHeader(x, h.importance, h.persona_sim, h.recall_count + 1, now)
        state.headers[x] = h
        s = state.scores[x] = h.score(now, alpha=cfg.alpha, beta=cfg.beta, lam=cfg.lam)
        if cfg.H <= 0:
            continue
        if len(state.tier2) < cfg.H:
            state.tier2.append(x)
            promoted.append(x)
            continue
        weakest = min(state.tier2, key=lambda y: (state.scores.get(y, 0.0), y))
        if s > state.scores.get(weakest, 0.0):
            state.tier2.remove(weakest)
            state.tier2.append(x)
            state.demotions += 1
            promoted.append(x)
    if promoted:
        state.tier2.sort(key=lambda y: (-state.scores.get(y, 0.0), y))
        state.promotions += len(promoted)
        state.membership += 1
    return promoted
