"""Frozen node states, the graph digest, and the diff between two graphs (pure helpers)."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

import numpy as np

from ..export_format import embedding_text, encode_time
from ..graph import MemoryGraph
from ..types import Edge, Level, Node, Provenance, utc

__all__ = ["NodeState", "graph_digest", "graph_diff"]


def _time(text: str | None) -> datetime | None:
    return None if text is None else utc(datetime.fromisoformat(text))


@dataclass(frozen=True, slots=True)
class NodeState:
    """The full stored state of one node as immutable JSON-friendly values.

    ``attributes`` and ``provenance`` are canonical JSON text; ``embedding`` is base64
    of little-endian float32 (or None).
    """

    id: str
    level: str
    schema_type: str
    content: str
    attributes: str
    t_first: str
    t_last: str
    logit: float
    n_support: int
    n_conflict: int
    provenance: str
    recall_count: int
    t_access: str | None
    embedding: str | None

    @classmethod
    def of(cls, n: Node) -> "NodeState":
        """Capture a node (times and the embedding encoded as an export writes them)."""
        return cls(
            n.id, n.level.value, n.schema_type, n.content,
            json.dumps(n.attributes, sort_keys=True, ensure_ascii=False),
            encode_time(n.t_first), encode_time(n.t_last), float(n.logit), int(n.n_support),
            int(n.n_conflict), json.dumps([p.to_dict() for p in n.provenance]), int(n.recall_count),
            None if n.t_access is None else encode_time(n.t_access), embedding_text(n.embedding),
        )

    def vector(self) -> np.ndarray | None:
        """The embedding as a float32 array."""
        if self.embedding is None:
            return None
        return np.frombuffer(base64.b64decode(self.embedding), dtype="<f4").astype(np.float32)

    def to_node(self, user_id: str) -> Node:
        """A new :class:`Node` with this state."""
        return Node(
            id=self.id, user_id=user_id, level=Level(self.level), schema_type=self.schema_type,
            content=self.content, attributes=json.loads(self.attributes),
            t_first=utc(datetime.fromisoformat(self.t_first)), t_last=utc(datetime.fromisoformat(self.t_last)),
            logit=self.logit, n_support=self.n_support, n_conflict=self.n_conflict, embedding=self.vector(),
            provenance=tuple(Provenance.from_dict(p) for p in json.loads(self.provenance)),
            recall_count=self.recall_count, t_access=_time(self.t_access),
        )

    def write_into(self, node: Node) -> None:
        """Overwrite ``node``'s evidence state with this one (same id).

        The embedding is not set here (the caller keeps the index in step), and the
        recall counters are kept: consolidation never changes them, and recall may
        have moved them (write-behind) since the plan was made.
        """
        fresh = self.to_node(node.user_id)
        node.schema_type, node.content, node.attributes = fresh.schema_type, fresh.content, fresh.attributes
        node.t_first, node.t_last, node.logit = fresh.t_first, fresh.t_last, fresh.logit
        node.n_support, node.n_conflict = fresh.n_support, fresh.n_conflict
        node.provenance = fresh.provenance

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {f: getattr(self, f) for f in self.__slots__}  # type: ignore[attr-defined]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "NodeState":
        """Inverse of :meth:`to_dict`."""
        return cls(**{f: d[f] for f in cls.__slots__})  # type: ignore[attr-defined]


def graph_digest(graph: MemoryGraph) -> str:
    """SHA-256 of everything consolidation reads: node states (without embeddings, which
    never change in place) and edges. Recall counters are left out: they do not affect
    a plan, and any write of them moves the store version anyway."""
    h = hashlib.sha256(graph.user_id.encode())
    for n in sorted(graph.nodes(), key=lambda n: n.id):
        h.update(json.dumps([
            n.id, n.level.value, n.schema_type, n.content, n.t_first.isoformat(), n.t_last.isoformat(),
            repr(float(n.logit)), n.n_support, n.n_conflict, n.embedding is not None,
        ]).encode())
    for e in sorted(graph.edges(), key=lambda e: (e.src, e.dst)):
        h.update(json.dumps([e.src, e.dst, e.kind.value, repr(float(e.weight)), e.at.isoformat()]).encode())
    return h.hexdigest()


def _edge_key(e: Edge) -> tuple[Any, ...]:
    return (e.kind, e.psi, e.weight, e.reason, e.at)


def graph_diff(
    before: MemoryGraph, after: MemoryGraph
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], tuple[NodeState, ...], tuple[Edge, ...]]:
    """What turns ``before`` into ``after``: (delete_edges, delete_nodes, upsert_nodes, upsert_edges).

    Orders are deterministic (node ids in ``after``'s insertion order, edges sorted).
    """
    delete_nodes = tuple(sorted(n.id for n in before.nodes() if n.id not in after))
    upsert: list[NodeState] = []
    for n in after.nodes():
        if n.id not in before or not n.same_state(before.node(n.id)):
            upsert.append(NodeState.of(n))
    old = {(e.src, e.dst): e for e in before.edges()}
    new = {(e.src, e.dst): e for e in after.edges()}
    delete_edges = tuple(sorted(k for k in old if k not in new))
    # Edges that change kind (a support that became a conflict) go first: applying them
    # frees the leaf's one support slot before any new support edge of that leaf is added.
    upsert_edges = tuple(
        new[k] for k in sorted(new, key=lambda k: (not (k in old and old[k].kind != new[k].kind), k))
        if k not in old or _edge_key(old[k]) != _edge_key(new[k])
    )
    return delete_edges, delete_nodes, tuple(upsert), upsert_edges
