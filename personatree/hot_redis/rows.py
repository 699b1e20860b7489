"""An entry's nodes decoded on demand: the sub-tree a request needs, not all of them.

Most requests are answered by tier 1, whose sub-tree is about two thirds of an
entry's nodes; tiers 1+2 need them all only when tier 1 did not suffice. The rows
of an entry (``rows``, ``emb``, ``edges``, see :mod:`personatree.hot_redis.entry`)
are parsed once, and a node is decoded the first time a sub-tree asks for it (each
node object is shared by every sub-tree built from the same rows, as the hot
indexes built from one tree share its nodes).
"""

from __future__ import annotations

from typing import Any, Iterable

import orjson

from ..errors import StoreError
from ..collector import paused_gc
from ..graph import MemoryGraph
from ..store.codec import decode_edge, decode_node
from ..store.codec.values import encode_optional_time
from ..types import Edge, EdgeKind, Node

__all__ = ["EntryRows"]

# Columns of an entry row (the store's node row without user id and embedding): the
# recall statistics, which move without the content version.
_RECALLS, _ACCESS = 11, 12


class EntryRows:
    """The nodes and support edges of one entry, decoded when first asked for.

    Parameters
    ----------
    user_id : str
    rows, emb, edges : bytes
        The entry's fields of those names.

    Raises
    ------
    StoreError
        If the fields are not an entry's rows (the caller treats it as missing).
    """

    def __init__(self, user_id: str, rows: bytes, emb: bytes, edges: bytes) -> None:
        self.user_id = user_id
        try:
            self._rows: list[list[Any]] = orjson.loads(rows)
            self._blob: list[tuple[int, int] | None] = []
            at = 0
            for row in self._rows:
                dim = row[-1]
                if dim is None:
                    self._blob.append(None)
                else:
                    self._blob.append((at, at + 4 * int(dim)))
                    at += 4 * int(dim)
            self.order: list[str] = [str(r[0]) for r in self._rows]
            self._edge_rows: dict[str, list[Any]] = {str(r[0]): r for r in orjson.loads(edges)}
        except (ValueError, TypeError, IndexError, orjson.JSONDecodeError) as exc:
            raise StoreError(f"unreadable hot-tier entry for user {user_id!r}: {type(exc).__name__}: {exc}") from exc
        if at != len(emb):
            raise StoreError(f"unreadable hot-tier entry for user {user_id!r}: embedding block size")
        self._emb = emb
        self._at = {x: i for i, x in enumerate(self.order)}
        self._nodes: dict[str, Node] = {}
        self._edges: dict[str, Edge | None] = {}

    @property
    def emb(self) -> bytes:
        """The entry's embedding block (one float32 row per node with an embedding)."""
        return self._emb

    def __len__(self) -> int:
        return len(self.order)

    def node(self, node_id: str) -> Node:
        """The entry's node ``node_id``.

        Raises
        ------
        StoreError
            If the entry does not hold it, or its row is unreadable.
        """
        got = self._nodes.get(node_id)
        if got is not None:
            return got
        i = self._at.get(node_id)
        if i is None:
            raise StoreError(f"hot-tier entry of user {self.user_id!r} lacks node {node_id!r}")
        row, span = self._rows[i], self._blob[i]
        blob = None if span is None else self._emb[span[0]:span[1]]
        try:
            got = decode_node([self.user_id, *row[:-1], blob, row[-1]])
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise StoreError(f"unreadable hot-tier node {node_id!r}: {exc}") from exc
        self._nodes[node_id] = got
        return got

    def stored(self, node: Node) -> tuple[list[Any], bytes | None] | None:
        """The entry's encoded row and embedding of ``node``, when it holds that node.

        For an entry of the same content version as ``node``'s tree: a node then
        differs from its stored row at most in its recall statistics (the contract
        of a ``stats_only`` commit), which are set from ``node``, so the row is what
        encoding ``node`` gives, without encoding it.

        Returns
        -------
        (list, bytes or None) or None
            The row (a copy, as in the ``rows`` field) and its embedding bytes.
        """
        i = self._at.get(node.id)
        if i is None:
            return None
        row, span = list(self._rows[i]), self._blob[i]
        row[_RECALLS] = node.recall_count
        row[_ACCESS] = encode_optional_time(node.t_access, "node.t_access")
        return row, (None if span is None else self._emb[span[0]:span[1]])

    def stored_edge(self, edge: Edge) -> list[Any] | None:
        """The entry's encoded row of support edge ``edge``, when it holds that edge."""
        raw = self._edge_rows.get(edge.src)
        return raw if raw is not None and raw[1] == edge.dst else None

    def parent_edge(self, node_id: str) -> Edge | None:
        """The support edge from ``node_id`` to its parent, when the entry holds one."""
        if node_id not in self._edges:
            raw = self._edge_rows.get(node_id)
            try:
                e = None if raw is None else decode_edge([self.user_id, *raw])
            except (ValueError, TypeError, IndexError, KeyError) as exc:
                raise StoreError(f"unreadable hot-tier edge of {node_id!r}: {exc}") from exc
            self._edges[node_id] = e if e is not None and e.kind is EdgeKind.SUPPORT else None
        return self._edges[node_id]

    def graph(self, ids: Iterable[str]) -> MemoryGraph:
        """The sub-tree over ``ids``, in that order, with the support edges among them
        (added in the same order as the nodes, as a hot sub-tree adds them).

        Raises
        ------
        StoreError
            If the entry does not hold one of ``ids``.
        """
        keep = list(dict.fromkeys(ids))
        g = MemoryGraph(self.user_id)
        with paused_gc():
            for x in keep:
                g.add_node(self.node(x))
            for x in keep:
                e = self.parent_edge(x)
                if e is not None and e.dst in g:
                    g.add_edge(e)
        return g

    def nodes(self) -> list[Node]:
        """Every node of the entry, in its order."""
        with paused_gc():
            return [self.node(x) for x in self.order]

    def edges(self) -> list[Edge]:
        """Every support edge of the entry, in node order."""
        return [e for x in self.order if (e := self.parent_edge(x)) is not None]
