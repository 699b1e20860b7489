"""``MemoryGraph``: one user's typed evidence tree over a networkx ``DiGraph``.

Edges point from child to parent (evidence → claim). Every mutation checks the
invariants, so the graph can never hold an invalid tree:

* ``support`` edges go leaf → mid or mid → root, never anything else;
* a node has at most one support parent (the support edges form a forest);
* ``conflict`` edges go leaf → mid only, and may be many;
* at most one edge between a pair of nodes; no cycles (implied by the strictly
  rising levels, and checked anyway by :meth:`check`).

The graph also keeps one exact embedding index per level, so that the per-user
embedding matrix stays in step with the nodes.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator

import networkx as nx
from networkx.classes.reportviews import (
    DiDegreeView,
    InDegreeView,
    InEdgeView,
    OutDegreeView,
    OutEdgeView,
)

from .errors import InvariantError, UnknownNodeError
from .index import EmbeddingIndex
from .types import Edge, EdgeKind, Level, Node

__all__ = ["MemoryGraph"]

_NEXT = {Level.LEAF: Level.MID, Level.MID: Level.ROOT}


def _statement_key(content: str) -> str:
    return " ".join(content.lower().split()).rstrip(".!?…")


def _fresh(view: Callable[[nx.DiGraph], object]) -> Any:
    """A property that makes ``view`` of the graph on each use instead of caching it."""
    return property(lambda graph: view(graph))


class _DiGraph(nx.DiGraph):
    """A networkx ``DiGraph`` that keeps no view of itself.

    networkx caches its edge and degree views on the graph, and each view refers back
    to the graph: a reference cycle, so a tree the engine drops would wait for a full
    collection of the cyclic garbage collector, whole, however long that takes to
    come. Views made fresh on each use (a few attribute sets) leave a dropped tree to
    reference counting, which frees it at once.
    """

    edges = _fresh(OutEdgeView)
    out_edges = _fresh(OutEdgeView)
    in_edges = _fresh(InEdgeView)
    degree = _fresh(DiDegreeView)
    in_degree = _fresh(InDegreeView)
    out_degree = _fresh(OutDegreeView)


class MemoryGraph:
    """A typed evidence tree for one user.

    Parameters
    ----------
    user_id : str
        The owner; every node added must belong to this user.
    """

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        self._g = _DiGraph()
        self._index: dict[Level, EmbeddingIndex] = {lv: EmbeddingIndex() for lv in Level}
        # (session id, normalised statement) -> leaf id, to recognise a repeated statement.
        self._statement_ids: dict[tuple[str, str], str] = {}
        # Leaves loaded in bulk whose statements are not in that map yet: a process that
        # only reads (a recall after a restart) never needs it, so it is made on first use,
        # before any change, hence exactly as adding the leaves one by one makes it.
        self._unkeyed: list[Node] = []

    @classmethod
    def from_parts(cls, user_id: str, nodes: Iterable[Node], edges: Iterable[Edge]) -> "MemoryGraph":
        """The graph that adding ``nodes`` then ``edges`` one by one makes, built in bulk.

        Every rule of :meth:`add_node` and :meth:`add_edge` is checked, in the same
        order and with the same errors, on plain dicts and sets, and the embedding
        indexes are filled one matrix at a time: loading a stored tree of 10⁴ nodes
        one call at a time costs several recalls.

        Parameters
        ----------
        user_id : str
        nodes : iterable of Node
            In insertion order.
        edges : iterable of Edge
            In insertion order.

        Returns
        -------
        MemoryGraph

        Raises
        ------
        InvariantError, UnknownNodeError
            As the first failing :meth:`add_node` or :meth:`add_edge` would.
        """
        g = cls(user_id)
        by_id: dict[str, Node] = {}
        rows: dict[Level, tuple[list[str], list[object]]] = {lv: ([], []) for lv in Level}
        unkeyed = g._unkeyed
        for node in nodes:
            nid, level = node.id, node.level
            if node.user_id != user_id:
                raise InvariantError(f"node {nid!r} belongs to {node.user_id!r}, not {user_id!r}")
            if nid in by_id:
                raise InvariantError(f"node {nid!r} exists already")
            by_id[nid] = node
            if node.embedding is not None:
                ids, vecs = rows[level]
                ids.append(nid)
                vecs.append(node.embedding)
            if level is Level.LEAF and node.provenance:
                unkeyed.append(node)
        # What add_nodes_from / add_edges_from make (dicts of the graph's factories,
        # one data dict shared by both directions of an edge), without their
        # per-item checks: the ids are distinct strings, checked above.
        G = g._g
        G._node.update({k: {"node": n} for k, n in by_id.items()})
        G._succ.update({k: {} for k in by_id})
        G._pred.update({k: {} for k in by_id})
        for lv, (ids, vecs) in rows.items():
            if ids:
                g._index[lv].fill(ids, vecs)  # type: ignore[arg-type]
        parent: dict[str, str] = {}
        succ, pred = G._succ, G._pred
        support, leaf, mid = EdgeKind.SUPPORT, Level.LEAF, Level.MID
        for edge in edges:
            s, d = edge.src, edge.dst
            src, dst = by_id.get(s), by_id.get(d)
            if src is None or dst is None:
                missing = s if src is None else d
                raise UnknownNodeError(f"no node {missing!r} for user {user_id!r}")
            if s == d:
                raise InvariantError(f"self-loop on {s!r}")
            out = succ[s]
            if d in out:  # the adjacency so far holds exactly the edges checked so far
                raise InvariantError(f"an edge {s!r} -> {d!r} exists already")
            if s in succ[d]:
                raise InvariantError(f"edge {s!r} -> {d!r} would close a cycle")
            if edge.kind is support:
                if _NEXT.get(src.level) is not dst.level:
                    raise InvariantError(
                        f"support edges go leaf->mid or mid->root, not {src.level.value}->{dst.level.value}"
                    )
                if s in parent:
                    raise InvariantError(f"{s!r} already supports {parent[s]!r}")
                parent[s] = d
            elif src.level is not leaf or dst.level is not mid:
                raise InvariantError(f"conflict edges go leaf->mid, not {src.level.value}->{dst.level.value}")
            data = {"edge": edge}
            out[d] = data
            pred[d][s] = data
        nx._clear_cache(G)
        return g

    @property
    def _statements(self) -> dict[tuple[str, str], str]:
        if self._unkeyed:
            ids = self._statement_ids
            for node in self._unkeyed:
                ids.setdefault((node.provenance[0].session_id, _statement_key(node.content)), node.id)
            self._unkeyed = []
        return self._statement_ids

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._g.number_of_nodes()

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._g

    @property
    def nx(self) -> nx.DiGraph:
        """A read-only view of the underlying networkx graph (node attr ``node``, edge attr ``edge``)."""
        return nx.graphviews.subgraph_view(self._g)

    def node(self, node_id: str) -> Node:
        """The node with this id.

        Raises
        ------
        UnknownNodeError
        """
        try:
            return self._g.nodes[node_id]["node"]
        except KeyError:
            raise UnknownNodeError(f"no node {node_id!r} for user {self.user_id!r}") from None

    def nodes(self, level: Level | None = None) -> Iterator[Node]:
        """All nodes, or those of one level, in insertion order."""
        # The graph's own dicts, not a networkx view: a restart walks every node of
        # a big tree several times.
        for data in self._g._node.values():
            node = data["node"]
            if level is None or node.level is level:
                yield node

    def edges(self, kind: EdgeKind | None = None) -> Iterator[Edge]:
        """All edges, or those of one kind."""
        for out in self._g._succ.values():  # in the order networkx's edge view gives
            for data in out.values():
                e = data["edge"]
                if kind is None or e.kind is kind:
                    yield e

    def edge_sequence(self) -> list[Edge]:
        """Every edge, in an order that rebuilds this graph exactly.

        Adding the nodes in :meth:`nodes` order and then the edges in this order (as
        :meth:`from_parts` does) gives each node's parents and each node's children in
        the order they have here: the order edges were added in, as far as it shows.
        :meth:`edges` lists them parent lists first, which can reorder a node's
        children (and with them the ties of anything that walks them).

        Returns
        -------
        list of Edge
        """
        succ, pred = self._g._succ, self._g._pred
        pairs = [(u, v) for u, out in succ.items() for v in out]
        # Each pair must come after the one before it in its source's parent list and
        # in its target's child list; a topological order of those constraints (the
        # order the edges were added in is one) rebuilds both lists.
        waiting = dict.fromkeys(pairs, 0)
        then: dict[tuple[str, str], list[tuple[str, str]]] = {p: [] for p in pairs}
        for chains in ((((u, v) for v in out) for u, out in succ.items()),
                       (((u, v) for u in into) for v, into in pred.items())):
            for chain in chains:
                prev = None
                for pair in chain:
                    if prev is not None:
                        then[prev].append(pair)
                        waiting[pair] += 1
                    prev = pair
        ready = deque(p for p in pairs if not waiting[p])
        order: list[Edge] = []
        while ready:
            pair = ready.popleft()
            order.append(succ[pair[0]][pair[1]]["edge"])
            for nxt in then[pair]:
                waiting[nxt] -= 1
                if not waiting[nxt]:
                    ready.append(nxt)
        if len(order) != len(pairs):  # cannot happen: the adding order satisfies them all
            raise InvariantError("the graph's adjacency orders contradict each other")
        return order

    def edge(self, src: str, dst: str) -> Edge | None:
        """The edge from ``src`` to ``dst``, if any."""
        data = self._g.get_edge_data(src, dst)
        return None if data is None else data["edge"]

    def index(self, level: Level) -> EmbeddingIndex:
        """The embedding index of one level (read it, do not mutate it)."""
        return self._index[level]

    def parent(self, node_id: str) -> str | None:
        """The support parent of a node, or ``None``."""
        self.node(node_id)
        for _, dst, e in self._g.out_edges(node_id, data="edge"):
            if e.kind is EdgeKind.SUPPORT:
                return dst
        return None

    def children(self, node_id: str, kind: EdgeKind = EdgeKind.SUPPORT) -> list[str]:
        """Ids of the nodes with a ``kind`` edge into ``node_id``."""
        self.node(node_id)
        return [src for src, _, e in self._g.in_edges(node_id, data="edge") if e.kind is kind]

    def conflicts_of(self, node_id: str) -> list[str]:
        """Ids of the leaves that conflict with ``node_id``."""
        return self.children(node_id, EdgeKind.CONFLICT)

    def support_path(self, node_id: str) -> list[str]:
        """The node and its support ancestors, from the node up to its root."""
        path = [node_id]
        nxt = self.parent(node_id)
        while nxt is not None:
            path.append(nxt)
            nxt = self.parent(nxt)
        return path

    def subtree(self, node_id: str) -> list[str]:
        """The node and all its support descendants (breadth-first)."""
        out = [node_id]
        frontier = [node_id]
        while frontier:
            nxt: list[str] = []
            for n in frontier:
                nxt.extend(self.children(n))
            out.extend(nxt)
            frontier = nxt
        return out

    def find_statement(self, session_id: str, content: str) -> str | None:
        """The leaf that already records ``content`` in session ``session_id``, if any.

        Statements are compared case- and whitespace-insensitively, ignoring final
        punctuation, so "I love tea." and "i love tea" are the same evidence.
        """
        return self._statements.get((session_id, _statement_key(content)))

    def orphans(self, level: Level = Level.LEAF) -> list[Node]:
        """Nodes of ``level`` that support nothing yet."""
        return [n for n in self.nodes(level) if self.parent(n.id) is None]

    # -- mutating ---------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Add a node.

        Raises
        ------
        InvariantError
            If the id exists already or the node belongs to another user.
        """
        if node.user_id != self.user_id:
            raise InvariantError(f"node {node.id!r} belongs to {node.user_id!r}, not {self.user_id!r}")
        if node.id in self._g:
            raise InvariantError(f"node {node.id!r} exists already")
        self._g.add_node(node.id, node=node)
        if node.embedding is not None:
            self._index[node.level].add(node.id, node.embedding)
        if node.level is Level.LEAF and node.provenance:
            self._statements.setdefault((node.provenance[0].session_id, _statement_key(node.content)), node.id)

    def set_embedding(self, node_id: str, vector) -> None:  # type: ignore[no-untyped-def]
        """Replace a node's embedding and keep the index in step."""
        n = self.node(node_id)
        n.embedding = vector
        self._index[n.level].add(node_id, vector)

    def remove_node(self, node_id: str) -> list[Edge]:
        """Remove a node and its incident edges; its children become orphans.

        Returns
        -------
        list of Edge
            The edges that were removed with it.
        """
        n = self.node(node_id)
        removed = [e for _, _, e in self._g.in_edges(node_id, data="edge")]
        removed += [e for _, _, e in self._g.out_edges(node_id, data="edge")]
        self._g.remove_node(node_id)
        self._index[n.level].remove(node_id)
        if n.level is Level.LEAF and n.provenance:
            key = (n.provenance[0].session_id, _statement_key(n.content))
            if self._statements.get(key) == node_id:
                del self._statements[key]
        return removed

    def add_edge(self, edge: Edge) -> None:
        """Add a support or conflict edge, enforcing the tree invariants.

        Raises
        ------
        UnknownNodeError
            If an end does not exist.
        InvariantError
            If the edge would break a level rule, give a second support parent,
            duplicate an edge or close a cycle.
        """
        src, dst = self.node(edge.src), self.node(edge.dst)
        if edge.src == edge.dst:
            raise InvariantError(f"self-loop on {edge.src!r}")
        if self._g.has_edge(edge.src, edge.dst):
            raise InvariantError(f"an edge {edge.src!r} -> {edge.dst!r} exists already")
        if self._g.has_edge(edge.dst, edge.src):
            raise InvariantError(f"edge {edge.src!r} -> {edge.dst!r} would close a cycle")
        if edge.kind is EdgeKind.SUPPORT:
            if _NEXT.get(src.level) is not dst.level:
                raise InvariantError(
                    f"support edges go leaf->mid or mid->root, not {src.level.value}->{dst.level.value}"
                )
            if self.parent(edge.src) is not None:
                raise InvariantError(f"{edge.src!r} already supports {self.parent(edge.src)!r}")
        else:
            if src.level is not Level.LEAF or dst.level is not Level.MID:
                raise InvariantError(
                    f"conflict edges go leaf->mid, not {src.level.value}->{dst.level.value}"
                )
        self._g.add_edge(edge.src, edge.dst, edge=edge)

    def remove_edge(self, src: str, dst: str) -> Edge:
        """Remove the edge ``src`` → ``dst`` and return it.

        Raises
        ------
        UnknownNodeError
            If there is no such edge.
        """
        data = self._g.get_edge_data(src, dst)
        if data is None:
            raise UnknownNodeError(f"no edge {src!r} -> {dst!r}")
        self._g.remove_edge(src, dst)
        return data["edge"]

    # -- whole-graph ------------------------------------------------------------------

    def check(self) -> None:
        """Verify every invariant over the whole graph.

        Raises
        ------
        InvariantError
            Describing the first violation found.
        """
        for n in self.nodes():
            if n.user_id != self.user_id:
                raise InvariantError(f"node {n.id!r} belongs to another user")
            parents = [e for _, _, e in self._g.out_edges(n.id, data="edge") if e.kind is EdgeKind.SUPPORT]
            if len(parents) > 1:
                raise InvariantError(f"{n.id!r} has {len(parents)} support parents")
            if (n.embedding is not None) != (n.id in self._index[n.level]):
                raise InvariantError(f"index out of step for {n.id!r}")
        for e in self.edges():
            s, d = self.node(e.src), self.node(e.dst)
            if e.kind is EdgeKind.SUPPORT and _NEXT.get(s.level) is not d.level:
                raise InvariantError(f"bad support edge {e.src!r} -> {e.dst!r}")
            if e.kind is EdgeKind.CONFLICT and (s.level is not Level.LEAF or d.level is not Level.MID):
                raise InvariantError(f"bad conflict edge {e.src!r} -> {e.dst!r}")
        if not nx.is_directed_acyclic_graph(self._g):
            raise InvariantError("the graph has a cycle")
        if sum(len(ix) for ix in self._index.values()) != sum(
            1 for n in self.nodes() if n.embedding is not None
        ):
            raise InvariantError("index holds rows for missing nodes")

    def copy(self) -> "MemoryGraph":
        """A deep-enough copy: new node objects (embeddings shared read-only), same edges."""
        out = MemoryGraph(self.user_id)
        for n in self.nodes():
            out.add_node(n.copy())
        for e in self.edges():
            out._g.add_edge(e.src, e.dst, edge=e)
        return out

    def same_as(self, other: "MemoryGraph") -> bool:
        """Whether two graphs hold the same nodes (same state) and the same edges."""
        if set(self._g.nodes) != set(other._g.nodes):
            return False
        for n in self.nodes():
            if not n.same_state(other.node(n.id)):
                return False
        mine = {(e.src, e.dst, e.kind, round(e.psi, 6), e.at) for e in self.edges()}
        theirs = {(e.src, e.dst, e.kind, round(e.psi, 6), e.at) for e in other.edges()}
        return mine == theirs
