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
it load the tree from the store for tier 3, and its promotions are written back
after the answer (recall itself: :mod:`~personatree.tiering.shared_read`; this
module attaches the tier and writes entries).

Kept true:

* written through on every commit of the engine that changes the tree's content
  (observe, consolidation, forget, imports) and deleted with the user
  (:func:`write_through`, an engine commit hook);
* an entry carries the store version it was built from and that version's
  *content version*, and is served only when the store's content version is still
  that one: a stale entry is never served, it is rebuilt. Recall's access
  statistics (its write-behind flushes of recall counts, ``stats_only`` commits,
  from any process, with or without a hot tier) move the version but not the
  content version, so they neither make entries stale nor make a writer re-rank;
* the drift gate: a writer ranks the tree against the persona vector anchored in
  Redis, and re-anchors (a full re-rank) when ‖P_new − P_anchor‖₂ ≥ τ;
* Redis down: recall is in-process tiering over the store's tree, with a
  :class:`HotTierWarning`; Redis flushed: the entry is missing and is rebuilt.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import TieringConfig
from ..engine.caches import Slot
from ..engine.core import Engine, EngineLike, engine_of
from ..errors import ConfigError
from ..graph import MemoryGraph
from ..retrieval.lex_snapshot import patch_snapshot
from ..retrieval.tokens import counter_of
from .entries import build_entry, entry_indexes, entry_lex, fingerprint, tier1_ids
from .entry_memo import EntryMemo
from .entry_profile import profile_data
from .hot import HotIndex
from .tiers import TierState, tier_state
from .write_behind import WriteBehind

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import EntryRows, HotEntry, RedisHot

__all__ = ["HotTierWarning", "SharedTier", "attach_hot", "shared_tier", "attached_tier", "fingerprint", "build_entry",
           "versions", "write_through"]


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
    writer : WriteBehind
        Entry writes owed by recalls, run after their answers (promotions, rebuilds).
    direct : int
        Recalls sent to the store without decoding the entry (no hot tier could
        answer them: see :mod:`~personatree.tiering.entry_bound`).
    writes, refused : int
        Entries written; replacements refused because Redis held a newer version.
    taken_back : int
        Entries removed again just after their write, because the store's content
        had moved on from theirs meanwhile (the user deleted, or changed, by
        another process).
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
    writer: WriteBehind = field(default_factory=WriteBehind)
    direct: int = 0
    taken_back: int = 0

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
    elif isinstance(hot, RedisHot):
        client = hot
    else:
        raise ConfigError(f"hot must be a redis:// URL or a RedisHot, got {type(hot).__name__}")
    tier = SharedTier(client, config)
    engine.on_close(tier.writer.drain)  # before the client closes
    if isinstance(hot, str):
        engine.on_close(client.close)
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
             indexes: tuple[HotIndex | None, HotIndex] | None = None, rows: "EntryRows | None" = None) -> None:
    # Write the entry of ``tstate`` with its lex (see _lex for ``prior`` and ``indexes``).
    # A prior entry of this content and configuration (a promotion's) lends what a
    # promotion leaves as it was: the members' closures, the nodes' and edges' rows
    # (``rows``), tiers 1+2's text analysis; only what the promoted members bring is
    # computed and encoded. The fields are the ones a build from scratch gives.
    tcfg = tier.tiering(engine)
    from ..hot_redis import HotTierUnavailable, encode_entry  # noqa: PLC0415

    fp = fingerprint(engine, tcfg)
    same = prior is not None and prior.content_version == content and prior.gate.get("fingerprint") == fp
    known = prior.tiers.get("closures") if same and prior is not None else None
    entry = build_entry(graph, tstate, tcfg, version, fp, known=known,
                        counter=counter_of(engine, engine.config.recall.model))
    entry.content_version = content
    entry.prof, entry.quotes = profile_data(graph, tstate, {n.id for n in entry.nodes})
    entry.lex = _lex(entry, graph, tstate, tcfg, prior, indexes, rows if same else None)
    fields = encode_entry(entry, rows if same else None)
    try:
        if replace_newer:
            # The store's version is below the entry's only when the user was deleted
            # and written again: that entry is of data that no longer exists.
            tier.client.delete(graph.user_id)
        if not tier.client.put(graph.user_id, version, fields):
            tier.refused += 1
            return
        tier.writes += 1
        # Building took a while, and another process may have deleted the user (or
        # changed the tree) meanwhile, after its own Redis delete: an entry of content
        # the store no longer holds is taken back, so a deletion never leaves the
        # user's text in Redis behind it. (Recall statistics moving the version alone
        # leave the entry current.)
        if versions(engine, graph.user_id)[1] != content:
            if tier.client.delete_if(graph.user_id, fields["eid"]):
                tier.taken_back += 1
    except HotTierUnavailable as exc:
        _warn(graph.user_id, exc)


def _lex(entry: "HotEntry", graph: MemoryGraph, tstate: TierState, tcfg: TieringConfig,
         prior: "HotEntry | None", indexes: tuple[HotIndex | None, HotIndex] | None,
         rows: "EntryRows | None" = None) -> dict[str, Any]:
    # The entry's lex. A prior entry of this content (``rows``: a promotion's) has its
    # analysis patched: tier 1 is the same, and tiers 1+2 re-read only the nodes and
    # turns the promotion changed (patch_snapshot). Otherwise the hot indexes the
    # tiers were just searched with (``indexes`` rebuilt from ``prior``, the entry
    # they came from, or the in-process ones of a rebuild in tstate.cache) are
    # brought to the entry's members the way in-process tiering updates them after a
    # promotion: only the promoted and demoted members' nodes are re-indexed.
    # Without them, the entry's sub-trees are indexed afresh.
    if rows is not None and prior is not None and tier1_ids(prior) == tier1_ids(entry) and "t1" in prior.lex:
        t12 = patch_snapshot(prior.lex.get("t12"), rows.order, graph, [n.id for n in entry.nodes])
        if t12 is not None:
            return {"t1": prior.lex["t1"], "t12": t12}
    if indexes is None:
        c1, c12 = tstate.cache.get("t1"), tstate.cache.get("t12")
        if isinstance(c12, HotIndex):
            indexes = (c1 if isinstance(c1, HotIndex) else None, c12)
    if indexes is None and prior is not None and prior.nodes and "t12" in prior.lex:
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
        if content != version and user_id not in engine.trees:
            # Recall statistics added without the tree (a stateless worker's flush):
            # the entry, current or not, is left to the next reader.
            return
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
