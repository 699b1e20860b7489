"""The hot sub-tree of a tier and its retrieval state, kept in step incrementally.

A tier is searched over a sub-tree holding its nodes, their support ancestors and
a few support children per claim (:func:`hot_graph`).
Building that sub-tree and indexing it from scratch costs ~0.1 s at a few thousand
nodes, and a promotion changes one or two of its members: rebuilding on every
promotion made a tier-3 fall-through cost more than the search it saved. Here each
member's *closure* (its support path and the children shown under each claim on
it) is reference-counted, so a promotion or demotion adds or removes only the
nodes its member brings, and the retrieval state re-indexes only those.

The sub-tree is rebuilt from scratch when the user's tree itself changed (a new
graph version): nodes, edges and the children worth showing may all differ then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable

from ..graph import MemoryGraph
from ..retrieval.state import RetrievalState
from ..types import EdgeKind, Level

__all__ = ["HotIndex", "closure", "hot_graph", "sub_tree"]


def closure(graph: MemoryGraph, node_id: str, children: int) -> tuple[str, ...]:
    """A member's share of a hot sub-tree: its support path and, under each claim on
    it, up to ``children`` support children (the most recent evidence first: what a
    person would cite).

    Parameters
    ----------
    graph : MemoryGraph
    node_id : str
    children : int

    Returns
    -------
    tuple of str
        Node ids, without repeats (empty when ``node_id`` is not in ``graph``).
    """
    if node_id not in graph:
        return ()
    keep: dict[str, None] = {}
    for y in graph.support_path(node_id):
        keep[y] = None
    if children > 0:
        for y in list(keep):
            if graph.node(y).level is Level.LEAF:
                continue
            kids = graph.children(y)
            kids.sort(key=lambda k: graph.node(k).t_first, reverse=True)
            for k in kids[:children]:
                keep[k] = None
    return tuple(keep)


def hot_graph(graph: MemoryGraph, ids: Iterable[str], children: int = 8) -> MemoryGraph:
    """A sub-tree over ``ids``: plus their support ancestors and up to ``children``
    support children per claim, with the support edges among them.

    Node objects are shared with ``graph`` (read-only here), so building it costs no
    copies; its own embedding index makes scoring proportional to its size.
    """
    keep: dict[str, None] = {}
    for x in ids:
        keep.update(dict.fromkeys(closure(graph, x, children)))
    return sub_tree(graph, keep)


def sub_tree(graph: MemoryGraph, keep: Iterable[str]) -> MemoryGraph:
    """The nodes ``keep`` of ``graph`` (in that order) with the support edges among them."""
    ids = list(keep)
    sub = MemoryGraph(graph.user_id)
    for y in ids:
        sub.add_node(graph.node(y))
    for y in ids:
        _link(graph, sub, y, up_only=True)
    return sub


def _link(graph: MemoryGraph, sub: MemoryGraph, y: str, *, up_only: bool) -> None:
    # The support edge to a parent in the sub-tree and, for a node added later, the
    # edges from its children already there.
    p = graph.parent(y)
    if p is not None and p in sub and sub.edge(y, p) is None:
        e = graph.edge(y, p)
        if e is not None and e.kind is EdgeKind.SUPPORT:
            sub.add_edge(e)
    if up_only or graph.node(y).level is Level.LEAF:
        return
    for c in graph.children(y):
        if c in sub and sub.edge(c, y) is None:
            e = graph.edge(c, y)
            if e is not None:
                sub.add_edge(e)


@dataclass(slots=True)
class HotIndex:
    """A reference-counted hot sub-tree over a set of member ids, with its state.

    Attributes
    ----------
    graph_key : hashable
        The user's tree version the sub-tree was built from.
    children : int
        Support children per claim it shows.
    members : dict
        Member id → its :func:`closure`.
    counts : dict
        Sub-tree node id → how many members' closures hold it.
    sub : MemoryGraph or None
        The sub-tree (node objects shared with the user's tree, read only).
    state : RetrievalState or None
        The sub-tree's retrieval state.
    rebuilds, updates : int
        Builds from scratch and incremental updates so far.
    """

    graph_key: Hashable = None
    children: int = -1
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    sub: MemoryGraph | None = None
    state: RetrievalState | None = None
    version: Hashable = None
    rebuilds: int = 0
    updates: int = 0

    def sync(
        self, graph: MemoryGraph, graph_key: Hashable, ids: Iterable[str], children: int, version: Hashable
    ) -> RetrievalState:
        """The retrieval state over ``ids``' sub-tree of ``graph``, brought up to date.

        Parameters
        ----------
        graph : MemoryGraph
            The user's whole tree (read only).
        graph_key : hashable
            Identifies ``graph`` at its current version; a new key rebuilds.
        ids : iterable of str
            The tier's members.
        children : int
            Support children shown under each claim.
        version : hashable
            Key of the returned state (changes with membership).

        Returns
        -------
        RetrievalState
        """
        wanted = dict.fromkeys(ids)
        if self.state is None or graph_key != self.graph_key or children != self.children:
            self._build(graph, graph_key, wanted, children, version)
        elif version != self.version:
            self._update(graph, wanted, children, version)
        assert self.state is not None
        return self.state

    @classmethod
    def from_closures(
        cls, graph: MemoryGraph, graph_key: Hashable, members: dict[str, tuple[str, ...]], children: int,
        version: Hashable, *, whole: bool = False,
        restore: Callable[[MemoryGraph], RetrievalState | None] | None = None,
    ) -> "HotIndex":
        """A hot index over closures computed elsewhere (a shared hot tier).

        ``graph`` need hold only the closures' nodes and the support edges among
        them: the sub-tree, its node order and so its retrieval state are then the
        ones :meth:`sync` builds from the whole tree, so both answer alike.

        Parameters
        ----------
        graph : MemoryGraph
            Holds at least every node of every closure.
        graph_key, children, version
            As for :meth:`sync`.
        members : dict
            Member id → its :func:`closure` in the whole tree, in tier order.
        whole : bool
            ``graph`` is exactly the sub-tree (the closures' nodes in closure order,
            with the support edges among them): used as is, not copied.
        restore : callable, optional
            Given the sub-tree, its retrieval state rebuilt from a snapshot of its
            text analysis, or ``None`` to index it from the text.

        Returns
        -------
        HotIndex
        """
        hot = cls()
        hot._adopt(graph, graph_key, dict(members), children, version, whole=whole, restore=restore)
        return hot

    def _build(
        self, graph: MemoryGraph, graph_key: Hashable, wanted: dict[str, None], children: int, version: Hashable
    ) -> None:
        self._adopt(graph, graph_key, {x: closure(graph, x, children) for x in wanted}, children, version)

    def _adopt(
        self, graph: MemoryGraph, graph_key: Hashable, members: dict[str, tuple[str, ...]], children: int,
        version: Hashable, whole: bool = False,
        restore: Callable[[MemoryGraph], RetrievalState | None] | None = None,
    ) -> None:
        self.members = members
        self.counts = {}
        for cl in self.members.values():
            for y in cl:
                self.counts[y] = self.counts.get(y, 0) + 1
        sub = graph if whole else sub_tree(graph, self.counts)
        self.sub, self.graph_key, self.children, self.version = sub, graph_key, children, version
        # A fresh state: the old one indexes another graph version's node objects.
        restored = restore(sub) if restore is not None else None
        self.state = restored if restored is not None else RetrievalState(sub).refresh(sub, version)
        self.rebuilds += 1

    def _update(self, graph: MemoryGraph, wanted: dict[str, None], children: int, version: Hashable) -> None:
        sub, counts = self.sub, self.counts
        assert sub is not None and self.state is not None
        changed: dict[str, None] = {}  # ordered, so indexing order never depends on the hash seed
        for x in [m for m in self.members if m not in wanted]:
            for y in self.members.pop(x):
                counts[y] -= 1
                if counts[y] == 0:
                    del counts[y]
                    sub.remove_node(y)
                    changed[y] = None
        added: list[str] = []
        for x in wanted:
            if x in self.members:
                continue
            cl = self.members[x] = closure(graph, x, children)
            for y in cl:
                if counts.get(y, 0) == 0:
                    sub.add_node(graph.node(y))
                    added.append(y)
                counts[y] = counts.get(y, 0) + 1
        for y in added:
            _link(graph, sub, y, up_only=False)
        changed.update(dict.fromkeys(added))
        self.version = version
        self.state.refresh(sub, version, changed=changed)
        self.updates += 1
