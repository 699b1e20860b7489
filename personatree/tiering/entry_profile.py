"""What a shared hot-tier entry holds for the profile block beyond tier 1's nodes.

Rendering tier 1 (:func:`~personatree.tiering.profile.render_profile`) reads each
claim's timeline: its evidence over *all* its leaves (the span, the counts, whether
it changed and its latest contradiction), where an entry keeps only a few children
per claim. The writer computes those timelines from the whole tree and keeps them
with the statements they quote (:func:`profile_data`), so a process that never
loaded the user renders the block the in-process profile renders.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..graph import MemoryGraph
from ..timeline import Dated, Timeline, node_timeline
from ..types import Level, Node
from .tiers import TierState

__all__ = ["encode_timeline", "decode_timeline", "profile_claims", "profile_data"]


def _t(x: datetime | None) -> str | None:
    return None if x is None else x.isoformat()


def _d(x: Any) -> datetime | None:
    return None if x is None else datetime.fromisoformat(str(x))


def encode_timeline(tl: Timeline) -> list[Any]:
    """A timeline as JSON-ready data (inverse: :func:`decode_timeline`)."""
    return [tl.node_id, _t(tl.support_first), _t(tl.support_last), tl.n_support, _t(tl.conflict_first),
            _t(tl.conflict_last), tl.n_conflict, [[c.node_id, c.at.isoformat(), c.weight] for c in tl.conflicts],
            tl.changed, _t(tl.since), tl.latest_conflict]


def decode_timeline(raw: list[Any]) -> Timeline:
    """Inverse of :func:`encode_timeline`.

    Raises
    ------
    ValueError, TypeError, IndexError
        If ``raw`` is not an encoded timeline.
    """
    conflicts = tuple(Dated(str(c[0]), datetime.fromisoformat(str(c[1])), float(c[2])) for c in raw[7])
    return Timeline(str(raw[0]), _d(raw[1]), _d(raw[2]), int(raw[3]), _d(raw[4]), _d(raw[5]), int(raw[6]),
                    conflicts, bool(raw[8]), _d(raw[9]), None if raw[10] is None else str(raw[10]))


def profile_claims(graph: MemoryGraph, tstate: TierState) -> list[str]:
    """The tier-1 claims the profile may show (roots, then pivotal mids and roots)."""
    ids = [x for x in tstate.roots if x in graph]
    ids += [x for x in tstate.pivotal if x in graph and graph.node(x).level is not Level.LEAF]
    return list(dict.fromkeys(ids))


def profile_data(graph: MemoryGraph, tstate: TierState, held: set[str]) -> tuple[dict[str, Any], list[Node]]:
    """The entry's ``prof`` (each tier-1 claim's timeline over ``graph``) and the
    statements those timelines quote that are not among ``held`` (the entry's nodes).

    Parameters
    ----------
    graph : MemoryGraph
        The user's whole tree.
    tstate : TierState
    held : set of str

    Returns
    -------
    (dict, list of Node)
    """
    timelines = {x: node_timeline(graph, x) for x in profile_claims(graph, tstate)}
    quotes = {tl.latest_conflict: graph.node(tl.latest_conflict) for tl in timelines.values()
              if tl.latest_conflict is not None and tl.latest_conflict in graph and tl.latest_conflict not in held}
    return {"timelines": {x: encode_timeline(tl) for x, tl in timelines.items()}}, list(quotes.values())
