"""A user's shared hot-tier entry: built from the tree, and the hot indexes rebuilt from it.

An entry (:class:`~personatree.hot_redis.HotEntry`) holds the tier lists, each hot
member's closure, those nodes and the support edges among them, and ``lex``: the
text analysis of the tier-1 and tier-1+2 retrieval states
(:func:`~personatree.retrieval.lex_snapshot.lexical_snapshot`). A process that never
loaded the user rebuilds the hot sub-trees from the entry exactly as
:class:`~personatree.tiering.hot.HotIndex` builds them from the whole tree, and
their retrieval states from ``lex`` without tokenizing a word: that analysis is
most of what indexing ~1,200 nodes costs, and the writer pays it once per version
instead of every reader on every request. An entry without a usable ``lex``
(another release's analysis, an older entry) is indexed from the text: slower,
the same answer.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import orjson

from ..config import TieringConfig
from ..engine.core import Engine
from ..graph import MemoryGraph
from ..ports import TokenCounter
from ..collector import paused_gc
from ..retrieval.lexical import token_memo
from ..retrieval.lex_snapshot import lexical_snapshot, restore_state
from ..retrieval.state import RetrievalState
from ..types import EdgeKind
from .entry_bound import bound_data
from .header import NodeHeader
from .hot import HotIndex, closure, sub_tree
from .tiers import TierState

if TYPE_CHECKING:  # pragma: no cover
    from ..hot_redis import EntryRows, HotEntry

__all__ = ["fingerprint", "build_entry", "entry_tiers", "entry_graph", "entry_indexes", "entry_index", "entry_states",
           "entry_lex", "tier1_ids"]


def fingerprint(engine: Engine, tcfg: TieringConfig) -> str:
    """What an entry's tiers depend on besides the tree: sizes, weights, gate, embedder."""
    keys = ("S", "K", "H", "top_roots", "alpha", "beta", "lam", "tau", "strong_mid", "hot_children")
    data = {k: getattr(tcfg, k) for k in keys} | {"embedder": engine.embedder.name, "dim": engine.embedder.dim}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def build_entry(graph: MemoryGraph, tstate: TierState, tcfg: TieringConfig, version: int, fp: str,
                known: Mapping[str, Sequence[str]] | None = None,
                counter: TokenCounter | None = None) -> "HotEntry":
    """The entry of ``tstate``'s tiers over ``graph`` at store ``version`` (without
    ``lex``; with ``bound``, see :mod:`~personatree.tiering.entry_bound`).

    Parameters
    ----------
    graph : MemoryGraph
        The user's whole tree at ``version``.
    tstate : TierState
    tcfg : TieringConfig
    version : int
    fp : str
        :func:`fingerprint` of the configuration the tiers were ranked under.
    known : mapping, optional
        Closures computed already over a tree of the same content and under the same
        fingerprint (a promotion's prior entry): used as they are.
    counter : TokenCounter, optional
        The counter recall uses by default: the ``bound`` then also holds each
        node's line cost in its tokens.

    Returns
    -------
    HotEntry
    """
    from ..hot_redis import HotEntry  # noqa: PLC0415

    members = list(dict.fromkeys(tstate.tier1 + tuple(tstate.tier2)))
    known = known or {}
    closures = {x: tuple(known[x]) if x in known else closure(graph, x, tcfg.hot_children) for x in members}
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
    entry = HotEntry(graph.user_id, version, tiers, gate, tstate.anchor, [graph.node(y) for y in ids], edges, cold)
    held1 = {y for x in tier1_ids(entry) for y in closures[x]}
    entry.bound = bound_data(entry.nodes, held1, counter)
    return entry


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


def tier1_ids(entry: "HotEntry") -> tuple[str, ...]:
    """Tier 1's members in an entry (roots, pivotal nodes, recent leaves; no repeats)."""
    t = entry.tiers
    return tuple(dict.fromkeys(t["roots"] + t["pivotal"] + t["recent"]))


def entry_indexes(entry: "HotEntry", tcfg: TieringConfig, graph: MemoryGraph | None = None,
                  tier1: bool = True) -> tuple[HotIndex | None, HotIndex]:
    """The hot indexes over tier 1 and tiers 1+2, rebuilt from an entry alone.

    The same sub-trees, in the same node order, as
    :func:`~personatree.tiering.search.hot_states` builds from the whole tree; their
    retrieval states come from the entry's ``lex`` when it has a usable one.

    Parameters
    ----------
    entry : HotEntry
    tcfg : TieringConfig
    graph : MemoryGraph, optional
        :func:`entry_graph` of the entry, when the caller has it already.
    tier1 : bool
        ``False`` skips tier 1 (for a query it cannot suffice): ``None`` in its place.

    Returns
    -------
    (HotIndex or None, HotIndex)
    """
    g = entry_graph(entry) if graph is None else graph
    t = entry.tiers
    closures = {x: tuple(c) for x, c in t["closures"].items()}
    t1 = tier1_ids(entry)
    key = (entry.version, id(g))
    version = (key, t.get("membership", 0))
    lex = entry.lex if isinstance(entry.lex, dict) else {}
    out: list[HotIndex | None] = []
    with token_memo():  # what lex lacks, tier 1 and 1+2 share: tokenized once
        for name, whole, ids in (("t1", False, t1 if tier1 else None), ("t12", True, t1 + tuple(t["tier2"]))):
            if ids is None:
                out.append(None)
                continue
            members = {x: closures[x] for x in dict.fromkeys(ids)}
            snap = lex.get(name)

            def restore(sub: MemoryGraph, snap: Any = snap) -> RetrievalState | None:
                return restore_state(sub, version, snap) if snap is not None else None

            # Tiers 1+2's sub-tree is the entry's graph itself (build_entry wrote it in
            # closure order): indexed as is, not copied.
            out.append(HotIndex.from_closures(g, key, members, tcfg.hot_children, version, whole=whole,
                                              restore=restore))
    hot12 = out[1]
    assert hot12 is not None
    return out[0], hot12


def entry_index(entry: "HotEntry", tcfg: TieringConfig, name: str, *, graph: MemoryGraph | None = None,
                rows: "EntryRows | None" = None) -> HotIndex:
    """One hot index of :func:`entry_indexes`, built alone: tier 1's (``"t1"``) from
    the entry's rows, decoding only its sub-tree's nodes, or tiers 1+2's (``"t12"``)
    over the entry's whole graph.

    The same sub-tree, node order and retrieval state as :func:`entry_indexes` gives
    (and so as :func:`~personatree.tiering.search.hot_states` builds from the tree).

    Parameters
    ----------
    entry : HotEntry
    tcfg : TieringConfig
    name : {"t1", "t12"}
    graph : MemoryGraph, optional
        :func:`entry_graph` of the entry (needed for ``"t12"``, or without ``rows``).
    rows : EntryRows, optional
        The entry's nodes, decoded on demand.

    Returns
    -------
    HotIndex

    Raises
    ------
    StoreError
        If ``rows`` lack a node of the sub-tree.
    """
    t = entry.tiers
    ids = tier1_ids(entry) + (tuple(t["tier2"]) if name == "t12" else ())
    members = {x: tuple(t["closures"][x]) for x in dict.fromkeys(ids)}
    if name == "t12" or rows is None:
        g = entry_graph(entry) if graph is None else graph
        sub = g if name == "t12" else hot_graph_of(g, members)
    else:
        sub = rows.graph(y for cl in members.values() for y in cl)
    key = (entry.version, id(graph if graph is not None else sub))
    snap = entry.lex.get(name) if isinstance(entry.lex, dict) else None

    def restore(s: MemoryGraph) -> RetrievalState | None:
        return restore_state(s, (key, t.get("membership", 0)), snap) if snap is not None else None

    with paused_gc():
        return HotIndex.from_closures(sub, key, members, tcfg.hot_children, (key, t.get("membership", 0)),
                                      whole=True, restore=restore)


def hot_graph_of(graph: MemoryGraph, members: dict[str, tuple[str, ...]]) -> MemoryGraph:
    """The sub-tree of ``graph`` over the members' closures (in closure order), as
    :class:`~personatree.tiering.hot.HotIndex` lays one out."""
    return sub_tree(graph, dict.fromkeys(y for cl in members.values() for y in cl))


def entry_states(entry: "HotEntry", tcfg: TieringConfig, graph: MemoryGraph | None = None,
                 tier1: bool = True) -> tuple[RetrievalState, RetrievalState]:
    """Retrieval states over tier 1 and tiers 1+2 (:func:`entry_indexes`).

    ``tier1=False`` leaves tier 1's state empty (for a query it cannot suffice).
    """
    h1, h12 = entry_indexes(entry, tcfg, graph, tier1)
    g = h12.sub
    assert h12.state is not None and g is not None
    s1 = h1.state if h1 is not None and h1.state is not None else RetrievalState(MemoryGraph(entry.user_id))
    return s1, h12.state


def entry_lex(h1: HotIndex | None, h12: HotIndex) -> dict[str, Any]:
    """The ``lex`` of an entry from its hot indexes (tier 1's left out when absent)."""
    out: dict[str, Any] = {}
    for name, hot in (("t1", h1), ("t12", h12)):
        if hot is not None and hot.state is not None:
            out[name] = lexical_snapshot(hot.state)
    return out
