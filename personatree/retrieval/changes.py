"""What recall carries with a contradicted claim, and which statement is current.

A claim (mid or root) with contradicting evidence is never shown without its most
recent contradiction; when that contradiction changed the claim (it is newer than
the claim's last support, :mod:`personatree.timeline`), what the person said around
the change (the injury behind "I stopped hiking") comes too, when it is close in
meaning to the change. And among the statements of one pattern, the newest stance
is preferred: the latest contradiction of a changed pattern is worth at least as
much to a query as the older statements it supersedes, so that it reaches even a
small context first.

Pure apart from reading the retrieval state (the graph's conflict edges, the leaf
matrix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..timeline import Timeline, node_timeline, said_at, timeline
from ..types import Level
from .state import RetrievalState
from .updates import leaf_facts

__all__ = ["CONTEXT_COSINE", "Carry", "carry_of", "context_leaf", "newest_stance"]

#: A statement counts as the context of a change when its cosine with the changing
#: statement reaches this (MiniLM puts statements about one event at 0.5 and above,
#: and unrelated statements of the same weeks well below).
CONTEXT_COSINE = 0.5


@dataclass(frozen=True, slots=True)
class Carry:
    """What a claim brings with it into the context.

    Attributes
    ----------
    claim : str
    timeline : Timeline
    latest : str or None
        Its most recent contradicting leaf still in the state.
    context : str or None
        A statement made around the change (only for a changed claim).
    """

    claim: str
    timeline: Timeline
    latest: str | None
    context: str | None

    @property
    def mark(self) -> str:
        """How ``latest`` is introduced under the claim (a key of ``CONFLICT_MARKS``)."""
        return "now" if self.timeline.changed else "contradicts"


def context_leaf(
    state: RetrievalState, tl: Timeline, latest: str, floor: float = CONTEXT_COSINE
) -> str | None:
    """The statement closest in meaning to a change, said between the last support and it.

    Parameters
    ----------
    state : RetrievalState
    tl : Timeline
        The changed claim's timeline.
    latest : str
        The contradicting leaf that changed it.
    floor : float
        Minimum cosine with ``latest``.

    Returns
    -------
    str or None
        A leaf id other than ``latest`` and the claim's own support, or ``None``.
    """
    arr = state.arrays.get(Level.LEAF)
    node = state.nodes.get(latest)
    if arr is None or not arr.ids or node is None or node.embedding is None:
        return None
    # Compared as the POSIX seconds the state keeps of every leaf (exact to the
    # microsecond, so ordered as the times are), as arrays over the leaf rows: the
    # close leaves can be thousands, and an archived one need not be read from the
    # store for its time.
    end = said_at(node).timestamp()
    start = tl.support_last.timestamp() if tl.support_last is not None else None
    sims = arr.matrix @ node.embedding
    facts = leaf_facts(state)
    # Strictly above the floor: the floor is where the search starts, not a match.
    close = sims > floor
    own = arr.row.get(latest)
    if own is not None:
        close[own] = False
    at = facts.at
    untimed = np.flatnonzero(close & facts.gone)
    if untimed.size:
        # Rows without a time in the state (none in practice): their node's, if any.
        at = at.copy()
        for row in untimed.tolist():
            x = arr.ids[row]
            at[row] = said_at(state.nodes[x]).timestamp() if x in state.nodes else np.inf
    close &= at <= end
    if start is not None:
        close &= at > start
    rows = np.flatnonzero(close)
    if not rows.size:
        return None
    top = sims[rows].max()
    # The closest; among equally close ones the smallest id.
    return min(arr.ids[int(r)] for r in rows[sims[rows] == top])


def _timeline(state: RetrievalState, claim: str, cache: dict[str, Timeline]) -> Timeline:
    """The claim's timeline, cached; a claim nothing contradicts gets an empty one.

    Most claims have no contradiction, and reading every supporting leaf of each
    candidate claim on every recall would cost more than the rest of the scoring.
    A mid counts every contradiction recorded against it (``n_conflict``, kept by
    every writer of conflict edges and surviving pruning), so a mid whose count is
    zero and that carries no change mark has none, and a root none of whose
    patterns has one has none either: those are settled without a graph walk.
    """
    tl = cache.get(claim)
    if tl is not None:
        return tl
    node = state.nodes[claim]
    mids = [node] if node.level is Level.MID else [
        state.nodes[m] for m in state.children.get(claim, ()) if m in state.nodes
    ]
    if "changed_at" in node.attributes or any(
        m.n_conflict > 0 or "changed_at" in m.attributes for m in mids
    ):
        tl = node_timeline(state.graph, claim)
    else:
        tl = timeline(claim, (), ())
    cache[claim] = tl
    return tl


def carry_of(state: RetrievalState, claim: str, cache: dict[str, Timeline]) -> Carry:
    """The timeline of ``claim`` and what it carries (cached in ``cache`` per recall).

    Parameters
    ----------
    state : RetrievalState
    claim : str
        A mid or root id of the state.
    cache : dict
        Claim id → Timeline, filled as claims are asked for.

    Returns
    -------
    Carry
    """
    tl = _timeline(state, claim, cache)
    latest = next((c.node_id for c in tl.conflicts if c.node_id in state.nodes), None)
    context = context_leaf(state, tl, latest) if tl.changed and latest is not None else None
    return Carry(claim, tl, latest, context)


def newest_stance(
    state: RetrievalState, leaves: Iterable[str], cache: dict[str, Timeline]
) -> dict[str, list[str]]:
    """The older statements each changed pattern's newest stance supersedes.

    Parameters
    ----------
    state : RetrievalState
    leaves : iterable of str
        Candidate leaves (scored for the query).
    cache : dict
        Claim id → Timeline (shared with :func:`carry_of`).

    Returns
    -------
    dict of str to list of str
        Latest contradicting leaf of a changed pattern → the candidate leaves among
        its pattern's support: recall values the newer stance at no less than the
        best of them.
    """
    out: dict[str, list[str]] = {}
    for x in leaves:
        mid = state.parent.get(x)
        node = state.nodes.get(mid) if mid is not None else None
        if node is None or node.level is not Level.MID:
            continue
        tl = _timeline(state, node.id, cache)
        if not tl.changed:
            continue
        latest = next((c.node_id for c in tl.conflicts if c.node_id in state.nodes), None)
        if latest is not None and latest != x:
            out.setdefault(latest, []).append(x)
    return out
