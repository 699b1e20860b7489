"""Readable text views of a user's tree (for people: the demo, the CLI and notebooks).

A changed pattern or claim (its latest evidence reverses or ends it, see
:mod:`personatree.timeline`) is shown as changed: the span its support covered, the
date it changed, the latest statement first and the older pattern after it, with
the confidence that it still holds.
"""

from __future__ import annotations

from datetime import datetime

from .confidence import confidence_at, logit_of, sigmoid
from .graph import MemoryGraph
from .schema import SchemaRegistry
from .speakers import speaker_prefix
from .timeline import Timeline, node_timeline, shown_logit
from .types import EdgeKind, Level, Node

__all__ = ["node_confidence", "shown_confidence", "format_span", "change_text", "tree_text"]


def node_confidence(node: Node, registry: SchemaRegistry, now: datetime) -> float:
    """Confidence of ``node`` read at ``now`` (lazy decay from ``t_last``)."""
    st = registry[node.schema_type]
    return confidence_at(node.logit, st.prior_logit, st.half_life_days, node.t_last, now)


def shown_confidence(
    node: Node, registry: SchemaRegistry, now: datetime, tl: Timeline | None
) -> float:
    """The confidence a node is shown with: for a changed claim, the belief it still holds.

    Parameters
    ----------
    node : Node
    registry : SchemaRegistry
    now : datetime
    tl : Timeline or None
        The node's timeline (:func:`personatree.timeline.node_timeline`); ``None``
        or unchanged: the stored confidence read at ``now``.

    Returns
    -------
    float
    """
    conf = node_confidence(node, registry, now)
    if tl is None or not tl.changed:
        return conf
    prior = registry[node.schema_type].prior_logit
    logit = logit_of(conf) if 0.0 < conf < 1.0 else node.logit
    return sigmoid(shown_logit(logit, prior, tl))


_MAX_QUOTE_CHARS = 90


def quote(text: str, limit: int = _MAX_QUOTE_CHARS) -> str:
    """``text`` in double quotes, cut at a word boundary with "…" past ``limit`` chars."""
    t = " ".join(text.split())
    if len(t) > limit:
        cut = t[:limit].rsplit(" ", 1)[0].rstrip(",;:")
        t = cut + "…"
    return f'"{t}"'


def change_text(content: str, tl: Timeline | None, latest: Node | None) -> str:
    """A claim's text with its change or latest contradiction, current state first.

    ``now: "<latest statement>" (date); before: <claim>`` for a changed claim,
    ``<claim>; contradicted <date>: "<statement>"`` for one contradicted and then
    supported again, ``content`` unchanged otherwise.
    """
    if tl is None or not tl.contradicted:
        return content
    if tl.changed:
        now = f'now: {quote(latest.content)} ({latest.t_first:%Y-%m-%d}); ' if latest else ""
        return f"{now}before: {content}"
    if latest is not None:
        return f"{content}; contradicted {latest.t_first:%Y-%m-%d}: {quote(latest.content)}"
    return content


def format_span(first: datetime, last: datetime) -> str:
    """``2024-03-02`` for one day, ``2024-03-02..2024-06-18`` otherwise."""
    a, b = f"{first:%Y-%m-%d}", f"{last:%Y-%m-%d}"
    return a if a == b else f"{a}..{b}"


def _line(node: Node, registry: SchemaRegistry, now: datetime, graph: MemoryGraph | None = None) -> str:
    tl = node_timeline(graph, node.id) if graph is not None and node.level is not Level.LEAF else None
    conf = shown_confidence(node, registry, now, tl)
    counts = f" +{node.n_support}" if node.level is not Level.LEAF else ""
    if node.n_conflict:
        counts += f"/-{node.n_conflict}"
    span = format_span(node.t_first, node.t_last)
    limit = 110
    text = node.content
    if tl is not None and tl.contradicted:
        nid = tl.latest_conflict
        latest = graph.node(nid) if graph is not None and nid is not None and nid in graph else None
        if tl.changed:
            if tl.support_first is not None and tl.support_last is not None:
                span = format_span(tl.support_first, tl.support_last)
            if tl.since is not None:
                span += f", changed {tl.since:%Y-%m-%d}"
            limit = 220  # the current state leads the line: keep room for the old one
        # A mid lists its contradictions below it; a root has none of its own to list.
        if tl.changed or node.level is Level.ROOT:
            text = change_text(text, tl, latest)
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"[{node.schema_type} {conf:.2f}{counts} {span}] {speaker_prefix(node)}{text}"


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
        Orphan leaves (supporting and contradicting nothing) listed before "... and N earlier".

    Returns
    -------
    str
    """
    out: list[str] = []

    def conf(n: Node) -> float:
        return shown_confidence(n, registry, now, node_timeline(graph, n.id))

    def leaves_of(mid_id: str, pad: str) -> None:
        kids = sorted((graph.node(c) for c in graph.children(mid_id)), key=lambda n: n.t_first)
        against = sorted((graph.node(c) for c in graph.conflicts_of(mid_id)),
                         key=lambda n: (n.t_first, n.id), reverse=True)
        tl = node_timeline(graph, mid_id)

        def conflicts() -> None:
            for c in against:
                out.append(f"{pad}✗─ {_line(c, registry, now)}  (conflicts)")

        if tl.changed:
            conflicts()  # the current state first, newest first
        for leaf in kids[:max_leaves_per_parent]:
            out.append(f"{pad}├─ {_line(leaf, registry, now)}")
        if len(kids) > max_leaves_per_parent:
            out.append(f"{pad}└─ ... and {len(kids) - max_leaves_per_parent} more")
        if not tl.changed:
            conflicts()

    roots = sorted(graph.nodes(Level.ROOT), key=conf, reverse=True)
    mids = list(graph.nodes(Level.MID))
    leaves = list(graph.nodes(Level.LEAF))
    out.append(f"{len(roots)} roots, {len(mids)} mids, {len(leaves)} leaves")
    for root in roots:
        out.append(f"● {_line(root, registry, now, graph)}")
        for mid_id in graph.children(root.id):
            out.append(f"  ◆ {_line(graph.node(mid_id), registry, now, graph)}")
            leaves_of(mid_id, "    ")
    loose = sorted((m for m in mids if graph.parent(m.id) is None), key=conf, reverse=True)
    if loose:
        out.append("patterns not yet part of a claim:")
        for mid in loose:
            out.append(f"  ◆ {_line(mid, registry, now, graph)}")
            leaves_of(mid.id, "    ")
    # A leaf that only conflicts is listed beside the pattern it contradicts, not again here.
    contradicting = {e.src for e in graph.edges(EdgeKind.CONFLICT)}
    orphans = sorted((n for n in leaves if graph.parent(n.id) is None and n.id not in contradicting),
                     key=lambda n: n.t_first)
    if orphans:
        out.append(f"orphan evidence ({len(orphans)}):")
        for leaf in orphans[-max_orphans:]:
            out.append(f"  · {_line(leaf, registry, now)}")
        if len(orphans) > max_orphans:
            out.append(f"  ... and {len(orphans) - max_orphans} earlier")
    return "\n".join(out)
