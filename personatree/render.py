"""Readable text views of a user's tree (for people: the demo, the CLI and notebooks)."""

from __future__ import annotations

from datetime import datetime

from .confidence import confidence_at
from .graph import MemoryGraph
from .schema import SchemaRegistry
from .types import Level, Node

__all__ = ["node_confidence", "format_span", "tree_text"]


def node_confidence(node: Node, registry: SchemaRegistry, now: datetime) -> float:
    """Confidence of ``node`` read at ``now`` (lazy decay from ``t_last``)."""
    st = registry[node.schema_type]
    return confidence_at(node.logit, st.prior_logit, st.half_life_days, node.t_last, now)


def format_span(first: datetime, last: datetime) -> str:
    """``2024-03-02`` for one day, ``2024-03-02..2024-06-18`` otherwise."""
    a, b = f"{first:%Y-%m-%d}", f"{last:%Y-%m-%d}"
    return a if a == b else f"{a}..{b}"


def _line(node: Node, registry: SchemaRegistry, now: datetime) -> str:
    conf = node_confidence(node, registry, now)
    counts = f" +{node.n_support}" if node.level is not Level.LEAF else ""
    if node.n_conflict:
        counts += f"/-{node.n_conflict}"
    text = node.content if len(node.content) <= 110 else node.content[:107] + "..."
    return f"[{node.schema_type} {conf:.2f}{counts} {format_span(node.t_first, node.t_last)}] {text}"


def tree_text(
    graph: MemoryGraph,
    registry: SchemaRegistry,
    now: datetime,
    *,
    max_leaves_per_parent: int = 5,
    max_orphans: int = 15,
) -> str:
    """The tree as indented text: roots, their mids, their leaves; then loose mids and orphans.

    Parameters
    ----------
    graph : MemoryGraph
    registry : SchemaRegistry
    now : datetime
        Time at which confidences are read.
    max_leaves_per_parent : int
        Leaves listed under each mid before "... and N more".
    max_orphans : int
        Orphan leaves listed before "... and N more".

    Returns
    -------
    str
    """
    out: list[str] = []

    def conf(n: Node) -> float:
        return node_confidence(n, registry, now)

    def leaves_of(mid_id: str, pad: str) -> None:
        kids = sorted((graph.node(c) for c in graph.children(mid_id)), key=lambda n: n.t_first)
        for leaf in kids[:max_leaves_per_parent]:
            out.append(f"{pad}├─ {_line(leaf, registry, now)}")
        if len(kids) > max_leaves_per_parent:
            out.append(f"{pad}└─ ... and {len(kids) - max_leaves_per_parent} more")
        for c in graph.conflicts_of(mid_id):
            out.append(f"{pad}✗─ {_line(graph.node(c), registry, now)}  (conflicts)")

    roots = sorted(graph.nodes(Level.ROOT), key=conf, reverse=True)
    mids = list(graph.nodes(Level.MID))
    leaves = list(graph.nodes(Level.LEAF))
    out.append(f"{len(roots)} roots, {len(mids)} mids, {len(leaves)} leaves")
    for root in roots:
        out.append(f"● {_line(root, registry, now)}")
        for mid_id in graph.children(root.id):
            out.append(f"  ◆ {_line(graph.node(mid_id), registry, now)}")
            leaves_of(mid_id, "    ")
    loose = sorted((m for m in mids if graph.parent(m.id) is None), key=conf, reverse=True)
    if loose:
        out.append("patterns not yet part of a claim:")
        for mid in loose:
            out.append(f"  ◆ {_line(mid, registry, now)}")
            leaves_of(mid.id, "    ")
    orphans = sorted((n for n in leaves if graph.parent(n.id) is None), key=lambda n: n.t_first)
    if orphans:
        out.append(f"orphan evidence ({len(orphans)}):")
        for leaf in orphans[-max_orphans:]:
            out.append(f"  · {_line(leaf, registry, now)}")
        if len(orphans) > max_orphans:
            out.append(f"  ... and {len(orphans) - max_orphans} earlier")
    return "\n".join(out)
