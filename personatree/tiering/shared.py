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

* written through on every commit of the engine that changes the tree's content
  (observe, consolidation, forget, imports) and deleted with the user
  (:func:`write_through`, an engine commit hook);
* an entry carries the store version it was built from and that version's
  *content version*, and is served only when the store's content version is still
  that one: a stale entry is never served, it is rebuilt. Recall's access
  statistics (its write-behind flushes of recall counts, ``stats_only`` commits, from any process, with
  or without a hot tier) moves the version but not the content version, so it
  neither makes entries stale nor makes a writer re-rank;
* the drift gate: a writer ranks the tree against the persona vector anchored in
  Redis, and re-anchors (a full re-rank) when ‖P_new − P_anchor‖₂ ≥ τ;
* Redis down: recall is in-process tiering over the store's tree, with a
  :class:`HotTierWarning`; Redis flushed: the entry is missing and is rebuilt.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..config import TieringConfig
from ..engine.caches import Slot
from ..engine.core import Engine, EngineLike, engine_of
from ..errors import ConfigError, StoreError, UnknownUserError
from ..graph import MemoryGraph
from ..retrieval.access import access_log
from ..retrieval.prelude import RecallQuery, prepare_recall, user_state
from ..retrieval.state import RetrievalState
from ..types import Level, Node
from .entries import (build_entry, entry_graph, entry_indexes, entry_lex, entry_states, entry_tiers, fingerprint,
                      tier1_ids)
from .entry_memo import Decoded, EntryMemo
from .entry_profile import profile_data
from .hot import HotIndex
from .search import TieredResult, could_fill, search_deep, search_hot, search_request, tiered_recall
from .tiers import TierState, tier_state

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import HotEntry, RedisHot

__all__ = ["HotTierWarning", "SharedTier", "attach_hot", "shared_tier", "fingerprint", "build_entry",
           "entry_graph", "entry_states", "entry_tiers", "versions", "write_through", "shared_recall"]


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
        Recalls and profiles answered from the store because Redis could not be
        reached.
    profiles : int
        Profile blocks rendered from Redis (:mod:`~personatree.tiering.shared_profile`).
    memo : EntryMemo
        The entries this process decoded last, with their hot indexes.
    writes, refused : int
        Entries written; replacements refused because Redis held a newer version.
    """

    client: "RedisHot"
    config: TieringConfig | None = None
    answered: dict[int, int] = field(default_factory=lambda: {1: 0, 2: 0, 3: 0})
    rebuilt: int = 0
    fallbacks: int = 0
    profiles: int = 0
    memo: EntryMemo = field(default_factory=EntryMemo)
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


def attached_tier(tree: EngineLike) -> SharedTier:
    """The engine's shared hot tier.

    Raises
    ------
    ConfigError
        If no hot tier is attached.
    """
    tier = shared_tier(tree)
    if tier is None:
        raise ConfigError("no hot tier attached: open the tree with hot='redis://...'")
    return tier


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
             content: int, replace_newer: bool = False, prior: "HotEntry | None" = None,
             indexes: tuple[HotIndex | None, HotIndex] | None = None) -> None:
    # Write the entry of ``tstate`` with its lex (see _lex for ``prior`` and ``indexes``).
    tcfg = tier.tiering(engine)
    from ..hot_redis import HotTierUnavailable, encode_entry  # noqa: PLC0415

    entry = build_entry(graph, tstate, tcfg, version, fingerprint(engine, tcfg))
    entry.content_version = content
    entry.prof, entry.quotes = profile_data(graph, tstate, {n.id for n in entry.nodes})
    entry.lex = _lex(entry, graph, tstate, tcfg, prior, indexes)
    fields = encode_entry(entry)
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


def _lex(entry: "HotEntry", graph: MemoryGraph, tstate: TierState, tcfg: TieringConfig,
         prior: "HotEntry | None", indexes: tuple[HotIndex | None, HotIndex] | None) -> dict[str, Any]:
    # The entry's lex. The hot indexes the tiers were just searched with (``indexes``
    # rebuilt from ``prior``, the entry they came from, or the in-process ones of a
    # rebuild in tstate.cache) are brought to the entry's members the way in-process
    # tiering updates them after a promotion: only the promoted and demoted members'
    # nodes are re-indexed. Without them, the entry's sub-trees are indexed afresh.
    if indexes is None:
        c1, c12 = tstate.cache.get("t1"), tstate.cache.get("t12")
        if isinstance(c12, HotIndex):
            indexes = (c1 if isinstance(c1, HotIndex) else None, c12)
    if indexes is None and prior is not None and "t12" in prior.lex:
        indexes = entry_indexes(prior, tcfg, tier1=False)
    if indexes is None:
        return entry_lex(*entry_indexes(entry, tcfg))
    h1, h12 = indexes
    ids1 = tier1_ids(entry)
    h12.sync(graph, h12.graph_key, ids1 + tuple(entry.tiers["tier2"]), tcfg.hot_children,
             (h12.graph_key, tstate.membership))
    out = entry_lex(None, h12)
    if h1 is not None and set(h1.members) == set(ids1):
        out |= entry_lex(h1, h12)
    elif prior is not None and tier1_ids(prior) == ids1 and "t1" in prior.lex:
        out["t1"] = prior.lex["t1"]  # a promotion moves nodes into tier 2 only
    else:
        out |= entry_lex(entry_indexes(entry, tcfg)[0], h12)
    return out


def _warn(user_id: str, exc: Exception) -> None:
    warnings.warn(f"hot tier skipped for user {user_id!r}, the store answers: {exc}", HotTierWarning, stacklevel=3)


def versions(engine: Engine, user_id: str) -> tuple[int, int]:
    """The user's store version and content version, in one lookup.

    The content version moves with every commit but those of recall statistics
    only (``stats_only``, see :class:`~personatree.ports.ChangeSet`); entries are checked against it. A
    store without ``versions`` gives its version for both.
    """
    read = getattr(engine.store, "versions", None)
    if read is None:
        v = engine.store.version(user_id)
        return v, v
    got: tuple[int, int] = read(user_id)
    return got


def write_through(engine: Engine, tier: SharedTier, user_id: str, version: int) -> None:
    """The commit hook: re-rank the user's tiers at ``version`` and write the entry.

    ``version`` 0 (the user was deleted) removes the entry. A commit that left the
    content version (an access flush) writes nothing when the entry holds that
    content already: readers keep being served it, and the access counts reach
    the tiers with the next content change. Called under the engine's lock and the
    user's write turn, so one user's entries are written in commit order; Redis
    refuses an older one anyway. Redis down: a warning, and readers find the entry
    stale.
    """
    from ..hot_redis import HotTierUnavailable, decode_gate  # noqa: PLC0415

    tcfg = tier.tiering(engine)
    try:
        if version == 0:
            tier.client.delete(user_id)
            return
        now_v, content = versions(engine, user_id)
        if now_v != version:
            return  # moved on already: that commit's own hook writes it
        held_cv, gate_raw, anchor_raw = tier.client.fields(user_id, "cv", "gate", "anchor")
        gate, anchor = decode_gate(gate_raw, anchor_raw)
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        return
    if held_cv is not None and int(held_cv) == content and gate.get("fingerprint") == fingerprint(engine, tcfg):
        return
    st = engine.trees.get(user_id)
    if st is None or st.version != version:
        st = engine.state(user_id)
        if st.version != version:
            return
    tstate = _rank(engine, st.graph, version, engine.clock.now(), tcfg, gate, anchor)
    _publish(engine, tier, st.graph, tstate, version, content)


# -- recall ----------------------------------------------------------------------------


def _current(engine: Engine, tier: SharedTier, user_id: str, content: int, tcfg: TieringConfig
             ) -> tuple[Decoded | None, "HotEntry | None"]:
    # (the decoded entry if it may be served, whatever entry Redis held); raises
    # HotTierUnavailable. When this process decoded the user's entry before, only
    # its id is read first: the same id is the same entry, decoded and indexed here.
    from ..hot_redis import HOT_FIELDS, decode_entry  # noqa: PLC0415

    d = None
    if tier.memo.eid_of(user_id) is not None:
        probe = tier.client.get(user_id, ("eid",))
        if not probe:
            return None, None
        d = tier.memo.get(user_id, probe.get("eid"))
    if d is None:
        fields = tier.client.get(user_id, HOT_FIELDS)
        if not fields:
            return None, None
        try:
            entry = decode_entry(user_id, fields)
        except StoreError:
            return None, None
        d = Decoded(entry.eid or b"", entry, entry_graph(entry))
    entry = d.entry
    ok = entry.content_version == content and entry.gate.get("fingerprint") == fingerprint(engine, tcfg)
    if ok and entry.eid is not None:
        tier.memo.put(user_id, d)
    return (d if ok else None), entry


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
    tier = attached_tier(engine)
    tcfg = tier.tiering(engine)
    req = prepare_recall(engine, query, budget=budget, model=model, levels=levels)
    version, content = versions(engine, user_id)
    if version == 0:
        raise UnknownUserError(f"no data stored for user {user_id!r}")
    try:
        d, held = _current(engine, tier, user_id, content, tcfg)
    except HotTierUnavailable as exc:
        _warn(user_id, exc)
        tier.fallbacks += 1
        return tiered_recall(engine, user_id, query, budget=budget, model=model, levels=levels, config=tcfg)
    out, indexes = _from_entry(engine, tier, d, req, tcfg) if d is not None else (None, None)
    if out is None:
        out = _from_store(engine, tier, user_id, req, tcfg, held, d.entry if d is not None else None, indexes)
    tier.answered[out.tier] += 1
    access_log(engine, req.cfg.access_flush_every).record(user_id, out.recall.node_ids, req.now)
    return out


def _full(engine: Engine, user_id: str) -> Callable[[], RetrievalState]:
    def full() -> RetrievalState:
        with engine.lock:
            return user_state(engine, user_id, engine.existing_state(user_id))

    return full


def _from_entry(engine: Engine, tier: SharedTier, d: Decoded, req: RecallQuery,
                tcfg: TieringConfig) -> tuple[TieredResult | None, tuple[HotIndex | None, HotIndex] | None]:
    # Tiers 1 and 2 from the entry (None when the tree must be read: tier 3), and the
    # hot indexes if they were built (kept with the decoded entry for the next request).
    entry, g = d.entry, d.graph
    t = entry.tiers
    with_t1 = True
    if not (tcfg.claims_suffice and req.route.level is not Level.LEAF):  # search_hot's bounds, first
        if not _could_suffice(g, None, req, tcfg):
            return None, None
        with_t1 = _could_suffice(g, {y for x in tier1_ids(entry) for y in t["closures"][x]}, req, tcfg)
    if d.t12 is None or (with_t1 and d.t1 is None):
        h1, d.t12 = entry_indexes(entry, tcfg, g, with_t1)
        d.t1 = d.t1 or h1
    h1, h12 = d.t1, d.t12
    t1 = h1.state if h1 is not None and h1.state is not None else RetrievalState(MemoryGraph(entry.user_id))
    assert h12.state is not None
    got = search_hot(t1, h12.state, _full(engine, entry.user_id), req, tcfg)
    return (got if isinstance(got, TieredResult) else None), (h1, h12)


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
                held: "HotEntry | None", entry: "HotEntry | None",
                indexes: tuple[HotIndex | None, HotIndex] | None = None) -> TieredResult:
    # Tier 3 over the store's tree, or a whole tiered search when the entry was not
    # current (then the entry is rebuilt); promotions are written back.
    with engine.lock:
        st = engine.existing_state(user_id)
        full = _full(engine, user_id)
        now_v, content = versions(engine, user_id)
        # The content version of the tree just loaded (None: a commit came in since).
        loaded = content if now_v == st.version else None
        if entry is not None and entry.content_version == loaded:
            entry.heads = _cold_heads(tier, user_id, entry.version)
            tstate = entry_tiers(entry)
            out = search_deep(tstate, st.graph, full, req, tcfg)
            if out.promoted:
                tier.memo.drop(user_id)  # the write below updates its hot indexes in place
                _publish(engine, tier, st.graph, tstate, st.version, loaded, prior=entry, indexes=indexes)
            return out
        tier.rebuilt += 1
        tier.memo.drop(user_id)
        gate = held.gate if held is not None else {}
        anchor = held.anchor if held is not None else None
        tstate = _rank(engine, st.graph, st.version, req.now, tcfg, gate, anchor)
        out = search_request(tstate, st.graph, full, req, tcfg)
        if loaded is not None:  # else the newer commit's writer, or the next reader, writes it
            _publish(engine, tier, st.graph, tstate, st.version, loaded,
                     replace_newer=held is not None and held.version > st.version)
        return out

