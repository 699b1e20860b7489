"""The data behind the tree view: a pure function from a user's tree to JSON-ready values.

Kept apart from the HTML so that it can be tested (and reused by other front ends)
without a browser: every confidence is read at one ``now`` that the caller passes in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..export_format import encode_time
from ..graph import MemoryGraph
from ..render import shown_confidence
from ..schema import SchemaRegistry
from ..timeline import node_timeline
from ..types import EdgeKind, Level, Node, Observation

__all__ = ["view_payload"]

#: Characters of one message kept in the page; a chat export can hold pasted documents,
#: and the page must stay small enough to open anywhere.
MAX_MESSAGE_CHARS = 1200


def _node_json(
    graph: MemoryGraph, n: Node, registry: SchemaRegistry, now: datetime, conflicts_with: list[str]
) -> dict[str, Any]:
    # A pattern whose latest evidence reverses it is shown as changed, with the belief
    # it still holds and the statement that changed it, as recall and the profile show it.
    tl = node_timeline(graph, n.id) if n.level is not Level.LEAF else None
    changed = tl if tl is not None and tl.changed else None
    return {
        "id": n.id,
        "level": n.level.value,
        "type": n.schema_type,
        "content": n.content,
        "conf": round(shown_confidence(n, registry, now, tl), 4),
        "changed": encode_time(changed.since) if changed is not None and changed.since is not None else None,
        "now": (changed.latest_conflict if changed is not None and changed.latest_conflict is not None
                and changed.latest_conflict in graph else None),
        "n_support": n.n_support,
        "n_conflict": n.n_conflict,
        "t_first": encode_time(n.t_first),
        "t_last": encode_time(n.t_last),
        "parent": graph.parent(n.id),
        # Children sorted by time so that evidence reads as a story.
        "children": [c for c in sorted(graph.children(n.id), key=lambda c: graph.node(c).t_first)],
        "conflicts": [c for c in sorted(graph.conflicts_of(n.id), key=lambda c: graph.node(c).t_first)],
        "conflicts_with": conflicts_with,
        "provenance": [
            {"obs": p.observation_id, "turn": p.turn, "at": encode_time(p.at), "session": p.session_id}
            for p in n.provenance
        ],
        "reason": _edge_reason(graph, n.id),
    }


def _edge_reason(graph: MemoryGraph, node_id: str) -> str | None:
    parent = graph.parent(node_id)
    if parent is None:
        return None
    e = graph.edge(node_id, parent)
    return e.reason if e is not None else None


def _obs_json(o: Observation) -> dict[str, Any]:
    return {
        "at": encode_time(o.at),
        "session": o.session_id,
        "messages": [
            {"role": m.name or m.role,
             "content": m.content if len(m.content) <= MAX_MESSAGE_CHARS
             else m.content[: MAX_MESSAGE_CHARS - 1] + "…"}
            for m in o.messages
        ],
    }


def view_payload(
    graph: MemoryGraph,
    registry: SchemaRegistry,
    now: datetime,
    observations: Iterable[Observation] = (),
    *,
    title: str | None = None,
) -> dict[str, Any]:
    """Everything the page needs, as JSON-ready data.

    Parameters
    ----------
    graph : MemoryGraph
        The user's tree.
    registry : SchemaRegistry
        Schema types (priors and half-lives, for the confidence read at ``now``).
    now : datetime
        When confidences are read.
    observations : iterable of Observation
        The observations behind the leaves (their verbatim text is shown as evidence).
    title : str, optional
        Page title; default ``"memory of <user>"``.

    Returns
    -------
    dict
        ``{"user", "title", "generated", "counts", "nodes", "order", "observations"}``
        where ``order`` lists roots, loose mids and orphan leaves, each best first.
    """
    # One pass over the edges: which patterns each leaf contradicts.
    against: dict[str, list[str]] = {}
    for e in graph.edges(EdgeKind.CONFLICT):
        against.setdefault(e.src, []).append(e.dst)
    nodes = {n.id: _node_json(graph, n, registry, now, against.get(n.id, [])) for n in graph.nodes()}

    def by_conf(ids: Sequence[str]) -> list[str]:
        return sorted(ids, key=lambda i: (-nodes[i]["conf"], -nodes[i]["n_support"], i))

    roots = by_conf([n.id for n in graph.nodes(Level.ROOT)])
    loose = by_conf([n.id for n in graph.nodes(Level.MID) if graph.parent(n.id) is None])
    # A leaf that only conflicts is still shown beside the pattern it contradicts, not as an orphan.
    orphans = sorted(
        (n.id for n in graph.nodes(Level.LEAF) if graph.parent(n.id) is None and not nodes[n.id]["conflicts_with"]),
        key=lambda i: nodes[i]["t_first"],
    )
    obs: Mapping[str, dict[str, Any]] = {o.id: _obs_json(o) for o in observations}
    counts = {lv.value: sum(1 for _ in graph.nodes(lv)) for lv in Level}
    counts["conflicts"] = sum(len(v) for v in against.values())
    counts["orphans"] = len(orphans)
    return {
        "user": graph.user_id,
        "title": title or f"memory of {graph.user_id}",
        "generated": encode_time(now),
        "counts": counts,
        "nodes": nodes,
        "order": {"roots": roots, "loose_mids": loose, "orphans": orphans},
        "observations": dict(obs),
    }
