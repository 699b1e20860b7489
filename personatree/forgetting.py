"""Forgetting a node: remove it and whatever was derived only from it.

Pure over a :class:`~personatree.graph.MemoryGraph`: the function mutates the graph
it is given and returns what changed, so the caller can commit exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import ConfidenceConfig
from .graph import MemoryGraph
from .types import Edge, EdgeKind, Node

__all__ = ["ForgetResult", "forget_node"]


@dataclass(slots=True)
class ForgetResult:
    """What a forget removed and changed."""

    removed: list[str] = field(default_factory=list)
    changed: dict[str, Node] = field(default_factory=dict)
    removed_edges: list[tuple[str, str]] = field(default_factory=list)


def _undo(parent: Node, edge: Edge, clip: float) -> None:
    # Withdraw the evidence this edge contributed; decay since then is not undone,
    # which errs toward the prior (the conservative direction).
    parent.logit = max(-clip, min(clip, parent.logit - edge.weight))
    if edge.kind is EdgeKind.SUPPORT:
        parent.n_support = max(0, parent.n_support - 1)
    else:
        parent.n_conflict = max(0, parent.n_conflict - 1)


def forget_node(
    graph: MemoryGraph, node_id: str, confidence: ConfidenceConfig, *, cascade: bool = False
) -> ForgetResult:
    """Remove ``node_id``; withdraw its evidence from its parents; drop derived summaries.

    Parameters
    ----------
    graph : MemoryGraph
        Mutated in place.
    node_id : str
        The node to forget.
    confidence : ConfidenceConfig
        For the logit clip.
    cascade : bool
        Also remove everything below the node (its whole support subtree). Without it,
        a forgotten mid's or root's children stay as orphans: the evidence remains,
        only the claim goes.

    Returns
    -------
    ForgetResult

    Notes
    -----
    A parent left with no supporting children was derived only from what was
    forgotten, so it is removed too, recursively up the path.
    """
    result = ForgetResult()
    targets = graph.subtree(node_id) if cascade else [node_id]
    # Remove deepest first so that parents see their children go one by one.
    for nid in reversed(targets):
        if nid not in graph:
            continue
        parents = []
        for e in list(graph.nx.out_edges(nid, data="edge")):
            edge: Edge = e[2]
            parent = graph.node(edge.dst)
            _undo(parent, edge, confidence.clip)
            result.changed[parent.id] = parent
            if edge.kind is EdgeKind.SUPPORT:
                parents.append(parent.id)
        for e in graph.remove_node(nid):
            result.removed_edges.append((e.src, e.dst))
        result.removed.append(nid)
        result.changed.pop(nid, None)
        # Walk up: a parent with no support left was derived only from this node.
        stack = parents
        while stack:
            pid = stack.pop()
            if pid not in graph or graph.children(pid):
                continue
            grand = graph.parent(pid)
            if grand is not None:
                up = graph.edge(pid, grand)
                if up is not None:
                    _undo(graph.node(grand), up, confidence.clip)
                    result.changed[grand] = graph.node(grand)
                stack.append(grand)
            for e in graph.remove_node(pid):
                result.removed_edges.append((e.src, e.dst))
            result.removed.append(pid)
            result.changed.pop(pid, None)
    for nid in result.removed:
        result.changed.pop(nid, None)
    return result
