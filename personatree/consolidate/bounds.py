"""Growth bounds of a consolidation pass: prune, stale orphans, leaf cap, merges.

The bounds are on the *tree* (what is clustered, scored, tiered, summarized into the
profile and rendered as patterns), never on the memory: a leaf that a trim or a stale-
orphan deletion takes out of the tree moves to the user's archive
(:func:`archived_leaves`, written by the plan's apply step), where recall still finds
it by meaning and by words and shows it as verbatim evidence. What a trim saves is the
structure: clustering and insertion candidates, hot tiers, the profile, mid summaries
and the rendered tree stay the size of the bounded tree. Only ``forget``,
``delete_observation`` and ``delete_user`` remove evidence from the archive.

Each step mutates the *scratch copy* the planner works on and returns report entries;
the decisions themselves are small pure functions (:func:`is_stale`, :func:`trim_split`,
:func:`merged_logit`).

Decay is *not* written: confidence decays lazily from ``t_last`` (ARCHITECTURE.md), so
every decision here reads confidence at ``now`` and the stored logits stay as they are.
Rewriting a logit to ``now`` would either decay it twice on the next read or, if
``t_last`` moved to ``now``, falsify the evidence span that root promotion relies on;
and leaving stored state alone keeps a second pass at the same ``now`` a no-op.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Sequence

import numpy as np

from ..confidence import days_between, decayed_logit
from ..graph import MemoryGraph
from ..ports import Judge
from ..render import node_confidence
from ..schema import SchemaRegistry
from ..speakers import same_speaker, speaker_key
from ..types import Edge, EdgeKind, Level, Node
from ..stance import node_group, node_stance, pattern_stance
from ..text import strip_summary_suffix
from .mids import evidence_span, merge_span, union_cohesion, unit
from .plan import Deletion, Merge, Prune, Trim

__all__ = [
    "is_stale", "trim_split", "merged_logit", "prune_roots", "activity_time", "delete_stale_orphans",
    "trim_mids", "merge_mids", "mid_span", "mergeable", "archived_leaves", "ARCHIVED_FROM",
]

#: Attribute of an archived leaf naming the mid it supported when it left the tree, so
#: that forgetting that mid with its evidence (``cascade``) also forgets this leaf.
ARCHIVED_FROM = "archived_from"


def archived_leaves(
    graph: MemoryGraph, node_ids: Sequence[str], trims: Sequence[Trim] = (),
) -> list[Node]:
    """Copies of the leaves among ``node_ids`` about to leave ``graph``, for the archive.

    Parameters
    ----------
    graph : MemoryGraph
        The tree before the removal.
    node_ids : sequence of str
        Nodes a plan deletes (mids and roots among them are not archived: their
        evidence is, and their counts live on in what they merged into).
    trims : sequence of Trim
        The plan's leaf-cap trims. A leaf trimmed from a mid the same plan formed (or
        merged into) had no parent in ``graph``; the trim names the mid it supported.

    Returns
    -------
    list of Node
        Each leaf as it was, with :data:`ARCHIVED_FROM` set to the mid it supported
        (if any).
    """
    trimmed_from = {leaf: t.mid_id for t in trims for leaf in t.removed_ids}
    out: list[Node] = []
    for nid in node_ids:
        if nid not in graph or graph.node(nid).level is not Level.LEAF:
            continue
        leaf = graph.node(nid).copy()
        parent = trimmed_from.get(nid) or graph.parent(nid)
        if parent is not None:
            leaf.attributes[ARCHIVED_FROM] = parent
        out.append(leaf)
    return out


def is_stale(t_last: datetime, now: datetime, t_orphan_days: float) -> bool:
    """Whether an orphan last touched at ``t_last`` is older than ``t_orphan_days`` at ``now``."""
    return days_between(t_last, now) > t_orphan_days


def trim_split(leaves: Sequence[Node], k: int) -> tuple[list[Node], list[Node]]:
    """Keep the ``k`` most recent leaves (ties by id); return (kept, removed).

    Recent evidence is what explains a pattern *now*; the counts of the removed ones
    survive on the mid.
    """
    ordered = sorted(leaves, key=lambda n: (n.t_first, n.id), reverse=True)
    return ordered[:k], ordered[k:]


def merged_logit(
    a: float, a_last: datetime, b: float, b_last: datetime, prior: float,
    half_life_days: float | None, clip: float,
) -> tuple[float, datetime]:
    """Evidence of two mids summed in log-odds: both decayed to the later ``t_last``,
    then ℓ₀ + (ℓa − ℓ₀) + (ℓb − ℓ₀), clipped."""
    t = max(a_last, b_last)
    la = decayed_logit(a, prior, half_life_days, days_between(a_last, t))
    lb = decayed_logit(b, prior, half_life_days, days_between(b_last, t))
    return max(-clip, min(clip, prior + (la - prior) + (lb - prior))), t


def mid_span(graph: MemoryGraph, mid: Node) -> tuple[list[str], list[str]]:
    """Distinct sessions and days of a mid's evidence: remembered ones plus current leaves."""
    leaves = [graph.node(c) for c in graph.children(mid.id)]
    s, d = evidence_span(leaves)
    return (merge_span(mid.attributes.get("sessions", []), s),
            merge_span(mid.attributes.get("days", []), d))


def prune_roots(graph: MemoryGraph, registry: SchemaRegistry, now: datetime, theta: float) -> list[Prune]:
    """Remove roots whose confidence at ``now`` is below ``theta``; their mids stay, loose."""
    out: list[Prune] = []
    for root in sorted(graph.nodes(Level.ROOT), key=lambda n: n.id):
        conf = node_confidence(root, registry, now)
        if conf < theta:
            mids = tuple(sorted(graph.children(root.id)))
            graph.remove_node(root.id)
            out.append(Prune(root.id, conf, mids))
    return out


def activity_time(graph: MemoryGraph, now: datetime) -> datetime:
    """The clock orphans age on: the user's latest evidence, or ``now`` if earlier.

    Orphans age with the user's own activity, not the wall clock: a user who comes
    back after a year away has not had a year in which their orphans could have been
    corroborated, so nothing of theirs goes stale while they are silent.
    """
    latest = max((n.t_last for n in graph.nodes(Level.LEAF)), default=now)
    return min(now, latest)


def delete_stale_orphans(graph: MemoryGraph, now: datetime, t_orphan_days: float) -> list[Deletion]:
    """Delete orphan leaves older than ``t_orphan_days`` (the observation log keeps them).

    Age is measured against :func:`activity_time`, not ``now``.
    """
    ref = activity_time(graph, now)
    out: list[Deletion] = []
    for leaf in sorted(graph.orphans(Level.LEAF), key=lambda n: n.id):
        if is_stale(leaf.t_last, ref, t_orphan_days):
            graph.remove_node(leaf.id)
            out.append(Deletion(leaf.id, days_between(leaf.t_last, ref)))
    return out


def trim_mids(graph: MemoryGraph, k: int) -> list[Trim]:
    """Keep at most ``k`` supporting leaves per mid; the mid remembers the rest's span."""
    out: list[Trim] = []
    for mid in sorted(graph.nodes(Level.MID), key=lambda n: n.id):
        kids = [graph.node(c) for c in graph.children(mid.id)]
        if len(kids) <= k:
            continue
        sessions, days = mid_span(graph, mid)
        mid.attributes["sessions"], mid.attributes["days"] = sessions, days
        _, removed = trim_split(kids, k)
        for leaf in removed:
            graph.remove_node(leaf.id)
        out.append(Trim(mid.id, tuple(sorted(n.id for n in removed))))
    return out


def _absorb(graph: MemoryGraph, keeper: Node, gone: Node, registry: SchemaRegistry,
            judge: Judge, clip: float) -> tuple[int, list[Prune]]:
    """Move ``gone``'s children and evidence into ``keeper`` and delete ``gone``."""
    moved = 0
    for kind in (EdgeKind.SUPPORT, EdgeKind.CONFLICT):
        for child in sorted(graph.children(gone.id, kind)):
            e = graph.remove_edge(child, gone.id)
            if graph.edge(child, keeper.id) is None and not (
                kind is EdgeKind.SUPPORT and graph.parent(child) is not None
            ):
                graph.add_edge(Edge(child, keeper.id, e.kind, e.psi, e.weight, e.reason, e.at))
                moved += 1
    kept_sessions, kept_days = mid_span(graph, keeper)  # now includes the moved leaves
    sessions = merge_span(kept_sessions, gone.attributes.get("sessions", []))
    days = merge_span(kept_days, gone.attributes.get("days", []))
    st = registry[keeper.schema_type]
    keeper.logit, keeper.t_last = merged_logit(
        keeper.logit, keeper.t_last, gone.logit, gone.t_last, st.prior_logit, st.half_life_days, clip)
    keeper.t_first = min(keeper.t_first, gone.t_first)
    if keeper.embedding is not None and gone.embedding is not None:
        mixed = keeper.embedding * max(1, keeper.n_support) + gone.embedding * max(1, gone.n_support)
        graph.set_embedding(keeper.id, unit(mixed))
    coh = _merged_cohesion(keeper, gone)
    if coh is not None:
        keeper.attributes["cohesion"] = round(coh, 6)
    keeper.attributes["stance"] = pattern_stance([node_stance(keeper), node_stance(gone)])
    keeper.n_support += gone.n_support
    keeper.n_conflict += gone.n_conflict
    keeper.attributes["sessions"], keeper.attributes["days"] = sessions, days
    prunes: list[Prune] = []
    root = graph.parent(gone.id)
    if root is not None:
        e = graph.remove_edge(gone.id, root)
        if graph.parent(keeper.id) is None:
            graph.add_edge(Edge(keeper.id, root, e.kind, e.psi, e.weight, e.reason, e.at))
        elif not graph.children(root):
            graph.remove_node(root)
            prunes.append(Prune(root, 0.0, ()))
    graph.remove_node(gone.id)
    leaves = [graph.node(c) for c in graph.children(keeper.id)]
    if leaves:
        summary = judge.summarize(leaves, Level.MID, keeper.schema_type)
        attrs = summary.attributes
        if attrs.get("named") is False:
            # The judge names no topic all of them share: the keeper keeps its claim,
            # with the summary's suffix (the merged count and span).
            suffix = summary.content[len(strip_summary_suffix(summary.content)):]
            keeper.content = strip_summary_suffix(keeper.content) + suffix
            attrs = {k: v for k, v in attrs.items() if k in ("mentions", "members", "span")}
        else:
            keeper.content = summary.content
        keeper.attributes.update({k: v for k, v in attrs.items() if k not in _OWN_ATTRIBUTES})
    return moved, prunes


# Attributes that consolidation computes and a summary must not overwrite.
_OWN_ATTRIBUTES = frozenset({"sessions", "days", "stance", "cohesion", "changed_at", "changed_by", "origin"})


def _merged_cohesion(a: Node, b: Node) -> float | None:
    """Cohesion of two mids' members together, from their centroids, sizes and cohesions
    (None when either mid lacks an embedding or a recorded cohesion)."""
    ca, cb = a.attributes.get("cohesion"), b.attributes.get("cohesion")
    if a.embedding is None or b.embedding is None or ca is None or cb is None:
        return None
    return union_cohesion(np.asarray(a.embedding), max(1, a.n_support), float(ca),
                          np.asarray(b.embedding), max(1, b.n_support), float(cb))


def mergeable(a: Node, b: Node, ratio: float | None, *,
              formable: Callable[[int, float], bool] | None = None) -> bool:
    """Whether two mids of one type may merge: same stance side (a pattern and its
    reversal stay apart, joined only by conflict evidence); with ``formable``, a union
    of known cohesion whose size (mentions) and cohesion pass it; and, with ``ratio``, a
    union that keeps ``ratio`` of the smaller cohesion (two broad mids have close
    centroids without being one pattern)."""
    if node_group(a) != node_group(b):
        return False
    if ratio is None and formable is None:
        return True
    joint = _merged_cohesion(a, b)
    if formable is not None and (joint is None
                                 or not formable(max(1, a.n_support) + max(1, b.n_support), joint)):
        return False
    if ratio is None or joint is None:
        return True
    base = min(float(a.attributes["cohesion"]), float(b.attributes["cohesion"]))
    return base <= 0 or joint >= ratio * base


def merge_mids(
    graph: MemoryGraph, registry: SchemaRegistry, judge: Judge, threshold: float, clip: float,
    *, max_rounds: int = 10, ratio: float | None = None, formable: Callable[[int, float], bool] | None = None,
) -> tuple[list[Merge], list[Prune]]:
    """Merge mids of one type whose embeddings have cosine ≥ ``threshold``, until none are left.

    Only mids of one speaker that are :func:`mergeable` merge: never two stance sides
    of one topic, and with ``ratio`` only when the union stays as cohesive as
    coalescing requires.

    With ``formable`` (a test of a union's size and cohesion, the gates a cluster
    passes to form a mid), two such mids whose claims read the same merge at any
    similarity when their union passes it: one pattern formed twice, typically by two
    passes over a topic the person kept coming back to, which a reader would otherwise
    be shown as two identical claims.

    The older mid (by t_first, then id) keeps its id; children move, counts and evidence
    add up, the span is united and the summary is redone. Repeated until no pair is left,
    because a merged mid's centroid moves (so a second pass finds nothing).
    """
    merges: list[Merge] = []
    prunes: list[Prune] = []
    for _ in range(max_rounds):
        found = False
        by_type: dict[str, list[Node]] = {}
        for m in graph.nodes(Level.MID):
            if m.embedding is not None:
                by_type.setdefault(m.schema_type, []).append(m)
        for stype in sorted(by_type):
            mids = sorted(by_type[stype], key=lambda n: (n.t_first, n.id))
            if len(mids) < 2:
                continue
            vecs = np.stack([np.asarray(m.embedding, dtype=np.float32) for m in mids])
            sims = vecs @ vecs.T
            # Two people's patterns never merge, however alike (:mod:`personatree.speakers`).
            who = [speaker_key(graph, m) for m in mids]
            claims = [strip_summary_suffix(m.content) for m in mids]
            absorbed: set[int] = set()
            for i in range(len(mids)):
                if i in absorbed:
                    continue
                for j in range(i + 1, len(mids)):
                    if j in absorbed or not same_speaker(who[i], who[j]):
                        continue
                    # Below the near-duplicate similarity only the same claim may merge,
                    # and only into a union that could form a mid.
                    near = bool(sims[i, j] >= threshold)
                    if not near and (formable is None or claims[i] != claims[j]):
                        continue
                    if not mergeable(mids[i], mids[j], ratio, formable=None if near else formable):
                        continue
                    moved, pr = _absorb(graph, mids[i], mids[j], registry, judge, clip)
                    claims[i] = strip_summary_suffix(mids[i].content)  # the summary was redone
                    merges.append(Merge(mids[i].id, mids[j].id, float(sims[i, j]), moved))
                    prunes.extend(pr)
                    absorbed.add(j)
                    found = True
        if not found:
            break
    return merges, prunes
