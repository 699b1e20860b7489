"""The shared hot tier: every user's tiers 1 and 2 in Redis, for stateless app servers.

In-process tiering (:mod:`personatree.tiering.search`) saves nothing to a process
that has not loaded the user: it must read the whole tree from the store and index
it first. Here each user's tiers live in Redis as one entry
(:mod:`personatree.hot_redis`) built from one store version of the tree: the tier
lists, each hot member's closure, those nodes (texts, embeddings, provenance,
confidence state) and the support edges among them. A recall in any process
reads the entry, rebuilds the hot sub-trees from it exactly as
:class:`~personatree.tiering.hot.HotIndex` builds them from the whole tree, and
searches tier 1, then tiers 1+2, with the same sufficiency rules
(:func:`~personatree.tiering.search.search_hot`); only when neither suffices does
it load the tree from the store for tier 3 (:func:`search_deep`), and its
promotions are written back.

Kept true:

* written through on every commit of the engine (observe, consolidation, forget,
  access flushes, imports) and deleted with the user (:func:`write_through`, an
  engine commit hook);
* an entry carries the store version it was built from, and is served only when
  the store is still at that version: a stale entry is never served, it is rebuilt;
* the drift gate: a writer ranks the tree against the persona vector anchored in
  Redis, and re-anchors (a full re-rank) when ‖P_new − P_anchor‖₂ ≥ τ;
* Redis down: recall is in-process tiering over the store's tree, with a
  :class:`HotTierWarning`; Redis flushed: the entry is missing and is rebuilt.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import orjson

from ..config import TieringConfig
from ..engine.caches import Slot
from ..engine.core import Engine, EngineLike, engine_of
from ..errors import ConfigError, StoreError, UnknownUserError
from ..graph import MemoryGraph
from ..retrieval.access import access_log
from ..retrieval.lexical import token_memo
from ..retrieval.prelude import RecallQuery, prepare_recall, user_state
from ..retrieval.state import RetrievalState
from ..types import EdgeKind, Level, Node
from .header import NodeHeader
from .hot import HotIndex, closure
from .search import TieredResult, could_fill, search_deep, search_hot, search_request, tiered_recall
from .tiers import TierState, tier_state

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import HotEntry, RedisHot

__all__ = ["HotTierWarning", "SharedTier", "attach_hot", "shared_tier", "fingerprint", "build_entry",
           "entry_graph", "entry_states", "entry_tiers", "write_through", "shared_recall"]


class HotTierWarning(UserWarning):
    """The Redis hot tier could not be used; the answer came from the store."""


@dataclass(slots=True)
class SharedTier:
    """An engine's link to the shared hot tier, and what it has done so far.

    Attributes
    ----------
    client : RedisHot
    config : TieringConfig or None
        Tier sizes and rules (default: the engine's ``config.tiering``).
    answered : dict
        Recalls answered per tier (1, 2 from Redis; 3 from the store's tree).
    rebuilt : int
        Recalls that found no current entry (missing, stale or unreadable) and
        rebuilt it from the store.
    fallbacks : int
        Recalls answered from the store because Redis could not be reached.
    writes, refused : int
        Entries written; replacements refused because Redis held a newer version.
    """

    client: "RedisHot"
    config: TieringConfig | None = None
    answered: dict[int, int] = field(default_factory=lambda: {1: 0, 2: 0, 3: 0})
    rebuilt: int = 0
    fallbacks: int = 0
    writes: int = 0
    refused: int = 0

    def tiering(self, engine: Engine) -> TieringConfig:
        """The tiering configuration in force."""
        return self.config or engine.config.tiering


_SHARED: Slot[list[SharedTier]] = Slot("tiering.shared")


def attach_hot(tree: EngineLike, hot: "str | RedisHot", config: TieringConfig | None = None) -> SharedTier:
    """Serve ``tree``'s recalls through the shared hot tier and write it through.

    Parameters
    ----------
    tree : Engine or PersonaTree
    hot : str or RedisHot
        A ``redis://`` URL, or a client.
    config : TieringConfig, optional
        Overrides ``config.tiering``.

    Returns
    -------
    SharedTier

    Raises
    ------
    ConfigError
        If redis-py is missing (the ``redis`` extra) or the URL is not a Redis URL.
    """
    engine = engine_of(tree)
    try:
        from ..hot_redis import RedisHot  # noqa: PLC0415 - only with a hot tier
    except ImportError as exc:
        raise ConfigError(f"a Redis hot tier needs redis-py: pip install 'personatree[redis]' ({exc})") from None
    if isinstance(hot, str):
        try:
            client = RedisHot.from_url(hot)
        except ValueError as exc:
            raise ConfigError(f"hot must be a redis:// URL: {exc}") from None
        engine.on_close(client.close)
    elif isinstance(hot, RedisHot):
        client = hot
    else:
        raise ConfigError(f"hot must be a redis:// URL or a RedisHot, got {type(hot).__name__}")
    tier = SharedTier(client, config)
    engine.caches.get(_SHARED, list)[:] = [tier]
    engine.on_commit(lambda user_id, version: write_through(engine, tier, user_id, version))
    return tier


def shared_tier(tree: EngineLike) -> SharedTier | None:
    """The engine's shared hot tier, or ``None``."""
    tiers = engine_of(tree).caches.get(_SHARED, list)
    return tiers[0] if tiers else None


def fingerprint(engine: Engine, tcfg: TieringConfig) -> str:
    """What an entry's tiers depend on besides the tree: sizes, weights, gate, embedder."""
    keys = ("S", "K", "H", "top_roots", "alpha", "beta", "lam", "tau", "strong_mid", "hot_children")
    data = {k: getattr(tcfg, k) for k in keys} | {"embedder": engine.embedder.name, "dim": engine.embedder.dim}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


# -- entries ---------------------------------------------------------------------------


def build_entry(graph: MemoryGraph, tstate: TierState, tcfg: TieringConfig, version: int, fp: str) -> "HotEntry":
    """The entry of ``tstate``'s tiers over ``graph`` at store ``version``.

    Parameters
    ----------
    graph : MemoryGraph
        The user's whole tree at ``version``.
    tstate : TierState
    tcfg : TieringConfig
    version : int
    fp : str
        :func:`fingerprint` of the configuration the tiers were ranked under.

    Returns
    -------
    HotEntry
    """
    from ..hot_redis import HotEntry  # noqa: PLC0415

    members = list(dict.fromkeys(tstate.tier1 + tuple(tstate.tier2)))
    closures = {x: closure(graph, x, tcfg.hot_children) for x in members}
    ids = dict.fromkeys(y for cl in closures.values() for y in cl)
    edges = []
    for y in ids:
        p = graph.parent(y)
        e = graph.edge(y, p) if p is not None and p in ids else None
        if e is not None and e.kind is EdgeKind.SUPPORT:
            edges.append(e)
    hot = set(members)
    heads = {x: tstate.headers[x] for x in members if x in tstate.headers}
    cold = {x: _head(h) for x, h in tstate.headers.items() if x not in hot and x in graph}
    tiers = {
        "recent": list(tstate.recent), "roots": list(tstate.roots), "pivotal": list(tstate.pivotal),
        "tier2": list(tstate.tier2), "closures": {x: list(c) for x, c in closures.items()},
        "headers": {x: _head(h) for x, h in heads.items()},
        "scores": {x: tstate.scores[x] for x in members if x in tstate.scores},
        "membership": tstate.membership,
    }
    gate = {"fingerprint": fp, "reranks": tstate.reranks, "lazy_updates": tstate.lazy_updates,
            "promotions": tstate.promotions, "demotions": tstate.demotions}
    return HotEntry(graph.user_id, version, tiers, gate, tstate.anchor, [graph.node(y) for y in ids], edges, cold)


def _head(h: NodeHeader) -> list[object]:
    return [h.importance, h.persona_sim, h.recall_count, h.t_last.isoformat()]


def entry_tiers(entry: "HotEntry") -> TierState:
    """The :class:`TierState` an entry was built from: its lists, every header it
    holds (hot members' and, when read, ``heads``) and the hot members' S_m; what
    tier 3's promotions need, as in-process."""
    t, g = entry.tiers, entry.gate
    headers = {x: NodeHeader(x, float(h[0]), float(h[1]), int(h[2]), datetime.fromisoformat(h[3]))
               for x, h in (entry.heads | t["headers"]).items()}
    return TierState(entry.user_id, entry.version, entry.anchor, headers, {k: float(v) for k, v in t["scores"].items()},
                     tuple(t["recent"]), tuple(t["roots"]), tuple(t["pivotal"]), list(t["tier2"]),
                     reranks=int(g.get("reranks", 0)), lazy_updates=int(g.get("lazy_updates", 0)),
                     promotions=int(g.get("promotions", 0)), demotions=int(g.get("demotions", 0)),
                     membership=int(t.get("membership", 0)))


def entry_graph(entry: "HotEntry") -> MemoryGraph:
    """The entry's nodes and support edges as a graph (the tier 1+2 sub-tree's nodes,
    in its order)."""
    g = MemoryGraph(entry.user_id)
    for n in entry.nodes:
        g.add_node(n)
    for e in entry.edges:
        g.add_edge(e)
    return g


def entry_states(entry: "HotEntry", tcfg: TieringConfig, graph: MemoryGraph | None = None,
                 tier1: bool = True) -> tuple[RetrievalState, RetrievalState]:
    """Retrieval states over tier 1 and tiers 1+2, rebuilt from an entry alone.

    The same sub-trees, in the same node order, as
    :func:`~personatree.tiering.search.hot_states` builds from the whole tree.
    ``tier1=False`` leaves tier 1's state empty (for a query it cannot suffice).
    """
    g = entry_graph(entry) if graph is None else graph
    t = entry.tiers
    closures = {x: tuple(c) for x, c in t["closures"].items()}
    t1 = tuple(dict.fromkeys(t["roots"] + t["pivotal"] + t["recent"]))
    key = (entry.version, id(g))
    out = []
    with token_memo():  # tier 1's texts are tier 1+2's too: tokenized once
        for whole, ids in ((False, t1 if tier1 else ()), (True, t1 + tuple(t["tier2"]))):
            members = {x: closures[x] for x in dict.fromkeys(ids)}
            # Tiers 1+2's sub-tree is the entry's graph itself (build_entry wrote it in
            # closure order): indexed as is, not copied.
            hot = HotIndex.from_closures(g, key, members, tcfg.hot_children, (key, t.get("membership", 0)),
                                         whole=whole)
            assert hot.state is not None
            out.append(hot.state)
    return out[0], out[1]


def _could_suffice(g: MemoryGraph, ids: set[str] | None, req: RecallQuery, tcfg: TieringConfig) -> bool:
    # could_suffice's bound over the entry's graph (restricted to ``ids``), before any
    # retrieval state is built: a query no hot tier can answer goes to the store
    # without indexing them.
    if req.qvec is None:
        return False
    close: list[Node] = []
    for lv in Level:
        if req.levels and lv not in req.levels:
            continue
        ix = g.index(lv)
        if ix.ids:
            rows = np.flatnonzero(ix.matrix @ req.qvec >= tcfg.sufficient_cosine)
            close.extend(g.node(ix.ids[int(r)]) for r in rows if ids is None or ix.ids[int(r)] in ids)
    return could_fill(close, tcfg.sufficient_fill * req.budget)


def _rank(engine: Engine, graph: MemoryGraph, version: int, now: datetime, tcfg: TieringConfig,
          gate: dict[str, Any], anchor: np.ndarray | None) -> TierState:
    # The drift gate against the persona anchored in Redis: below τ the tree is ranked
    # against that anchor (scores stay comparable with the tiers readers were
    # served); at τ or more, tier_state re-anchors and re-ranks.
    seed = None
    if anchor is not None and gate.get("fingerprint") == fingerprint(engine, tcfg):
        seed = TierState(graph.user_id, None, anchor, {}, {}, reranks=int(gate.get("reranks", 0)),
                         lazy_updates=int(gate.get("lazy_updates", 0)))
    return tier_state(graph, engine.registry, now, tcfg, version, seed)


def _publish(engine: Engine, tier: SharedTier, graph: MemoryGraph, tstate: TierState, version: int,
             replace_newer: bool = False) -> None:
    tcfg = tier.tiering(engine)
    from ..hot_redis import HotTierUnavailable, encode_entry  # noqa: PLC0415

    fields = encode_entry(build_entry(graph, tstate, tcfg, version, fingerprint(engine, tcfg)))
    try:
        if replace_newer:
            # The store's version is below the entry's only when the user was deleted
            # and written again: that entry is of data that no longer exists.
            tier.client.delete(graph.user_id)
        if tier.client.put(graph.user_id, version, fields):
            tier.writes += 1
        else:
            tier.refused += 1
    except HotTierUnavailable as exc:
        _warn(graph.user_id, exc)


def _warn(user_id: str, exc: Exception) -> None:
    warnings.warn(f"hot tier skipped for user {user_id!r}, the store answers: {exc}", HotTierWarning, stacklevel=3)


def write_through(engine: Engine, tier: SharedTier, user_id: str, version: int) -> None:
    """The commit hook: re-rank the user's tiers at ``version`` and write the entry.

    ``version`` 0 (the user was deleted) removes the entry. Called under the
    engine's lock and the user's write turn, so one user's entries are written in
    commit order; Redis refuses an older one anyway. Redis down: a warning, and
    readers find the entry stale.
    """
    from ..hot_redis import HotTierUnavailable, decode_gate  # noqa: PLC0415

    try:
        if version == 0:
            tier.client.delete(user_id)
            return
        gate, anchor = decode_gate(*tier.client.fields(user_id, "gate", "anchor"))
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        return
    st = engine.trees.get(user_id)
    if st is None or st.version != version:
        st = engine.state(user_id)
        if st.version != version:
            return  # moved on already: that commit's own hook writes it
    tstate = _rank(engine, st.graph, version, engine.clock.now(), tier.tiering(engine), gate, anchor)
    _publish(engine, tier, st.graph, tstate, version)


# -- recall ----------------------------------------------------------------------------


def _current(engine: Engine, tier: SharedTier, user_id: str, version: int, tcfg: TieringConfig
             ) -> tuple["HotEntry | None", "HotEntry | None"]:
    # (the entry if it may be served, whatever entry Redis held); raises HotTierUnavailable.
    from ..hot_redis import HOT_FIELDS, decode_entry  # noqa: PLC0415

    fields = tier.client.get(user_id, HOT_FIELDS)
    if not fields:
        return None, None
    try:
        entry = decode_entry(user_id, fields)
    except StoreError:
        return None, None
    ok = entry.version == version and entry.gate.get("fingerprint") == fingerprint(engine, tcfg)
    return (entry if ok else None), entry


def shared_recall(
    tree: EngineLike,
    user_id: str,
    query: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    levels: Sequence[Level] | None = None,
) -> TieredResult:
    """Tiered recall through the shared hot tier: same arguments and answer rules as
    :func:`~personatree.tiering.search.tiered_recall`.

    Tiers 1 and 2 are searched from the user's current Redis entry without reading
    the tree; the tree is loaded from the store only for tier 3, or to rebuild a
    missing or stale entry. Redis unreachable: in-process tiered recall, with a
    :class:`HotTierWarning`.

    Raises
    ------
    UnknownUserError, QueryError, InputError, ConfigError
        ConfigError if no hot tier is attached.
    """
    from ..hot_redis import HotTierUnavailable  # noqa: PLC0415

    engine = engine_of(tree)
    tier = shared_tier(engine)
    if tier is None:
        raise ConfigError("no hot tier attached: open the tree with hot='redis://...'")
    tcfg = tier.tiering(engine)
    req = prepare_recall(engine, query, budget=budget, model=model, levels=levels)
    version = engine.store.version(user_id)
    if version == 0:
        raise UnknownUserError(f"no data stored for user {user_id!r}")
    try:
        entry, held = _current(engine, tier, user_id, version, tcfg)
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        tier.fallbacks += 1
        return tiered_recall(engine, user_id, query, budget=budget, model=model, levels=levels, config=tcfg)
    out = _from_entry(engine, tier, entry, req, tcfg) if entry is not None else None
    if out is None:
        out = _from_store(engine, tier, user_id, req, tcfg, held, entry)
    tier.answered[out.tier] += 1
    access_log(engine, req.cfg.access_flush_every).record(user_id, out.recall.node_ids, req.now)
    return out


def _full(engine: Engine, user_id: str) -> Callable[[], RetrievalState]:
    def full() -> RetrievalState:
        with engine.lock:
            return user_state(engine, user_id, engine.existing_state(user_id))

    return full


def _from_entry(engine: Engine, tier: SharedTier, entry: "HotEntry", req: RecallQuery,
                tcfg: TieringConfig) -> TieredResult | None:
    # Tiers 1 and 2 from the entry; None when the tree must be read (tier 3).
    g = entry_graph(entry)
    t = entry.tiers
    with_t1 = True
    if not (tcfg.claims_suffice and req.route.level is not Level.LEAF):  # search_hot's bounds, first
        if not _could_suffice(g, None, req, tcfg):
            return None
        members = dict.fromkeys(t["roots"] + t["pivotal"] + t["recent"])
        with_t1 = _could_suffice(g, {y for x in members for y in t["closures"][x]}, req, tcfg)
    t1, t12 = entry_states(entry, tcfg, g, with_t1)
    got = search_hot(t1, t12, _full(engine, entry.user_id), req, tcfg)
    return got if isinstance(got, TieredResult) else None


def _cold_heads(tier: SharedTier, user_id: str, version: int) -> dict[str, object]:
    # The tier-3 headers of the entry at ``version`` (empty if it changed meanwhile or
    # Redis went away: promotions then score their hits afresh).
    from ..hot_redis import HotTierUnavailable, decode_heads  # noqa: PLC0415

    try:
        got = tier.client.get(user_id, ("heads",))
    except HotTierUnavailable:
        return {}
    if not got or int(got["v"]) != version:
        return {}
    return decode_heads(got.get("heads"))


def _from_store(engine: Engine, tier: SharedTier, user_id: str, req: RecallQuery, tcfg: TieringConfig,
                held: "HotEntry | None", entry: "HotEntry | None") -> TieredResult:
    # Tier 3 over the store's tree, or a whole tiered search when the entry was not
    # current (then the entry is rebuilt); promotions are written back.
    with engine.lock:
        st = engine.existing_state(user_id)
        full = _full(engine, user_id)
        if entry is not None and entry.version == st.version:
            entry.heads = _cold_heads(tier, user_id, entry.version)
            tstate = entry_tiers(entry)
            out = search_deep(tstate, st.graph, full, req, tcfg)
            if out.promoted:
                _publish(engine, tier, st.graph, tstate, st.version)
            return out
        tier.rebuilt += 1
        gate = held.gate if held is not None else {}
        anchor = held.anchor if held is not None else None
        tstate = _rank(engine, st.graph, st.version, req.now, tcfg, gate, anchor)
        out = search_request(tstate, st.graph, full, req, tcfg)
        _publish(engine, tier, st.graph, tstate, st.version,
                 replace_newer=held is not None and held.version > st.version)
        return out
