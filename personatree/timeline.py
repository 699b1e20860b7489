"""When a pattern held and whether it still does, read from its evidence (pure).

A pattern (mid) or claim (root) is supported by dated evidence and contradicted by
dated counter-evidence (conflict edges carry the leaf, and the leaf its date). It is
*changed* when its latest counter-evidence is newer than its latest support: the
person last said something that reverses or ends it ("I stopped hiking" after months
of hiking). That is computed on read, from the graph as it stands, so it holds for
every path that recorded the conflict (live insertion, consolidation, import) and
needs no stored flag; a ``changed_at`` / ``changed_by`` pair in a node's attributes,
when a writer recorded one, is used only where the edges no longer tell (the
contradicting leaf left the tree).

A claim (root) has no conflict edges of its own: its evidence is that of its
patterns, so its timeline is the union of theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping

from .graph import MemoryGraph
from .types import EdgeKind, Level, Node, utc

__all__ = [
    "Dated",
    "Timeline",
    "timeline",
    "node_timeline",
    "shown_logit",
    "said_at",
]


@dataclass(frozen=True, slots=True)
class Dated:
    """One piece of evidence: a leaf, when it was stated and its weight on the claim.

    Attributes
    ----------
    node_id : str
        The leaf.
    at : datetime
        When the person said it (the leaf's observation time).
    weight : float
        The evidence weight its edge applied to the claim's logit (conflicts < 0).
    """

    node_id: str
    at: datetime
    weight: float = 0.0


@dataclass(frozen=True, slots=True)
class Timeline:
    """The dated evidence of one pattern or claim, and whether it has changed.

    Attributes
    ----------
    node_id : str
    support_first, support_last : datetime or None
        Span of the supporting evidence still in the tree.
    n_support : int
        Dated supporting leaves seen.
    conflict_first, conflict_last : datetime or None
        Span of the contradicting evidence.
    n_conflict : int
        Dated contradicting leaves seen.
    conflicts : tuple of Dated
        Contradicting leaves, newest first (ties by id).
    changed : bool
        The latest contradiction is newer than the latest support.
    since : datetime or None
        When it changed: the first contradiction after the last support.
    latest_conflict : str or None
        The newest contradicting leaf (``None`` when only attributes tell of a change).
    """

    node_id: str
    support_first: datetime | None
    support_last: datetime | None
    n_support: int
    conflict_first: datetime | None
    conflict_last: datetime | None
    n_conflict: int
    conflicts: tuple[Dated, ...]
    changed: bool
    since: datetime | None
    latest_conflict: str | None

    @property
    def contradicted(self) -> bool:
        """Whether any contradicting evidence is known (changed or not)."""
        return bool(self.conflicts) or self.changed

    @property
    def after_support(self) -> tuple[Dated, ...]:
        """The contradictions newer than the last support, newest first."""
        if self.support_last is None:
            return self.conflicts
        return tuple(c for c in self.conflicts if c.at > self.support_last)


def _as_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, str) and value:
        try:
            return utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def timeline(
    node_id: str,
    support: Iterable[Dated],
    conflicts: Iterable[Dated],
    *,
    changed_at: Any = None,
    changed_by: Any = None,
) -> Timeline:
    """The timeline of one pattern from its dated support and contradictions.

    Parameters
    ----------
    node_id : str
    support : iterable of Dated
        Supporting leaves.
    conflicts : iterable of Dated
        Contradicting leaves.
    changed_at : datetime or ISO string, optional
        A change a writer recorded on the node (used when no contradicting leaf
        newer than the support is left to tell it).
    changed_by : str, optional
        The leaf that writer named as the change.

    Returns
    -------
    Timeline
    """
    sup = sorted(support, key=lambda d: d.at)
    con = sorted(conflicts, key=lambda d: (d.at, d.node_id), reverse=True)
    s_first = sup[0].at if sup else None
    s_last = sup[-1].at if sup else None
    c_first = con[-1].at if con else None
    c_last = con[0].at if con else None
    # Strictly newer: a reversal stated in the same breath as support is a nuance.
    changed = c_last is not None and (s_last is None or c_last > s_last)
    since = None
    latest = con[0].node_id if con else None
    if changed:
        since = min(c.at for c in con if s_last is None or c.at > s_last)
    else:
        at = _as_time(changed_at)
        if at is not None and (s_last is None or at > s_last):
            changed, since = True, at
            if isinstance(changed_by, str) and changed_by:
                latest = changed_by
    return Timeline(
        node_id, s_first, s_last, len(sup), c_first, c_last, len(con), tuple(con),
        changed, since, latest,
    )


def said_at(node: Node) -> datetime:
    """When a leaf's statement was made: its observation's time, else its first time."""
    return node.provenance[0].at if node.provenance else node.t_first


def _leaf_time(graph: MemoryGraph, leaf_id: str) -> datetime:
    return said_at(graph.node(leaf_id))


def _evidence(graph: MemoryGraph, mid_id: str) -> tuple[list[Dated], list[Dated]]:
    support = [
        Dated(c, _leaf_time(graph, c), e.weight)
        for c in graph.children(mid_id)
        if (e := graph.edge(c, mid_id)) is not None
    ]
    conflicts = [
        Dated(c, _leaf_time(graph, c), e.weight)
        for c in graph.conflicts_of(mid_id)
        if (e := graph.edge(c, mid_id)) is not None
    ]
    return support, conflicts


def node_timeline(graph: MemoryGraph, node_id: str) -> Timeline:
    """The timeline of a mid (its leaves) or root (the leaves of its mids).

    A leaf has no timeline of its own: it gets an empty, unchanged one.

    Parameters
    ----------
    graph : MemoryGraph
    node_id : str

    Returns
    -------
    Timeline

    Raises
    ------
    UnknownNodeError
    """
    node = graph.node(node_id)
    support: list[Dated] = []
    conflicts: list[Dated] = []
    attrs: Mapping[str, Any] = node.attributes
    changed_at, changed_by = attrs.get("changed_at"), attrs.get("changed_by")
    if node.level is Level.MID:
        support, conflicts = _evidence(graph, node_id)
    elif node.level is Level.ROOT:
        for mid in graph.children(node_id):
            s, c = _evidence(graph, mid)
            support += s
            conflicts += c
        if changed_at is None:
            # The newest change a writer recorded on one of its patterns.
            marks = [
                (t, graph.node(m).attributes.get("changed_by"))
                for m in graph.children(node_id)
                if (t := _as_time(graph.node(m).attributes.get("changed_at"))) is not None
            ]
            if marks:
                changed_at, changed_by = max(marks, key=lambda x: x[0])
    # A leaf counted both ways (a writer that recorded a conflict and support for the
    # same statement) is read as the contradiction it was recorded as.
    against = {c.node_id for c in conflicts}
    support = [s for s in support if s.node_id not in against]
    return timeline(node_id, support, conflicts, changed_at=changed_at, changed_by=changed_by)


def shown_logit(logit: float, prior: float, tl: Timeline) -> float:
    """The log-odds a pattern is shown with: for a changed one, the belief it still holds.

    Evidence before a reversal says what *was*, not what *is*; so a changed pattern
    keeps none of its support above the prior, and every contradiction since its last
    support counts against it (with the weight its edge carried). A pattern that is
    contradicted but not changed is shown as stored: its conflicts already lowered
    its logit where they were recorded.

    Parameters
    ----------
    logit : float
        The node's logit read now (decayed).
    prior : float
        Its schema prior (log-odds); NaN when unknown (read as 0).
    tl : Timeline

    Returns
    -------
    float
    """
    if not tl.changed:
        return logit
    base = min(logit, 0.0 if math.isnan(prior) else prior)
    return base + sum(min(0.0, c.weight) for c in tl.after_support)
