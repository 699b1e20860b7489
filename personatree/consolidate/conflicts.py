"""Stance and change over time on the planner's scratch graph.

A pattern has one stance (:mod:`personatree.stance`), and the graph is the record of
how it has held up: conflict edges, dated at their leaves, are the evidence against it.
The steps here keep that record the same whichever way the history arrived:

* :func:`separate_stances` repairs mids supported by both sides (a tree written
  before stance was part of a pattern, or imported from one);
* :func:`record_conflicts` offers a bulk pass's later leaves to its new mids, as live
  insertion offers a new leaf to existing mids, so importing a history and
  consolidating once records the conflicts that consolidating every session records;
* :func:`retract_changed` takes *changed* mids (latest conflict newer than latest
  support) off their roots and removes roots left asserting fewer than
  ``min_root_mids`` patterns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

import numpy as np

from ..config import ConfidenceConfig, ConsolidationConfig, InsertionConfig
from ..confidence import evidence_weight
from ..graph import MemoryGraph
from ..insertion import add_evidence, refresh_change, stance_checked
from ..ports import Judge
from ..render import node_confidence
from ..schema import SchemaRegistry
from ..speakers import leaf_speaker, same_speaker, speaker_key
from ..stance import node_group, node_stance, pattern_stance
from ..text import about_listener
from ..types import Edge, EdgeKind, Level, Node
from .mids import evidence_logit
from .plan import NewMid, Prune

__all__ = ["record_conflicts", "separate_stances", "retract_changed", "is_changed"]


def record_conflicts(
    g: MemoryGraph,
    mids: Sequence[NewMid],
    leaves: Sequence[Node],
    vectors: np.ndarray,
    now: datetime,
    registry: SchemaRegistry,
    confidence: ConfidenceConfig,
    judge: Judge,
    insertion: InsertionConfig,
    *,
    per_mid: int = 256,
) -> list[NewMid]:
    """Record the pass's later leaves that contradict its new mids, as live insertion would.

    Live insertion offers each new leaf to the existing mids near it; in a bulk pass the
    mids did not exist yet when their later leaves arrived. So every leaf of the pass
    that came after a new mid's first evidence, is κ-compatible with it, does not speak
    of the listener only (:func:`~personatree.text.about_listener`), at least
    ``similarity_floor`` similar and not already on it, is offered to it now: the judge
    validates the pairs in one batch and the stance rule of
    :func:`~personatree.insertion.stance_checked` applies, so an opposite stance on the
    mid's topic is a conflict whatever the judge said. Each conflict (ψ ≤ −θ_conflict)
    becomes a conflict edge dated at the leaf; the mid's logit is then replayed over
    its support and conflict evidence in time order, and ``changed_at`` /
    ``changed_by`` are written. At most ``per_mid`` nearest later leaves are offered to
    one mid, which bounds the judge's work.

    Returns
    -------
    list of NewMid
        ``mids`` with their confidence after the conflicts.
    """
    if not mids or not leaves:
        return list(mids)
    firsts = np.array([n.t_first.timestamp() for n in leaves])
    pairs: list[tuple[Node, Node, float]] = []
    for made in mids:
        mid = g.node(made.id)
        if mid.embedding is None:
            continue
        who = speaker_key(g, mid)
        sims = vectors @ np.asarray(mid.embedding, dtype=np.float32)
        hits = np.flatnonzero((sims >= insertion.similarity_floor) & (firsts > mid.t_first.timestamp()))
        hits = hits[np.argsort(-sims[hits], kind="stable")][:per_mid]
        for i in hits.tolist():
            leaf = leaves[i]
            if (leaf.id in g and g.edge(leaf.id, mid.id) is None
                    and registry.kappa(leaf.schema_type, Level.LEAF, mid.schema_type)
                    and not about_listener(leaf.content) and same_speaker(leaf_speaker(leaf), who)):
                # One person's statement never contradicts another's pattern.
                pairs.append((leaf, mid, float(sims[i])))
    verdicts = judge.validate(pairs) if pairs else []
    hit: set[str] = set()
    for (leaf, mid, sim), v in zip(pairs, verdicts):
        psi, _, reason = stance_checked(leaf, mid, sim, v.psi, v.label, v.reason, insertion)
        if psi > -insertion.theta_conflict:
            continue
        w = evidence_weight(psi, confidence.gamma)
        g.add_edge(Edge(leaf.id, mid.id, EdgeKind.CONFLICT, float(psi), float(w),
                        f"consolidation: {reason}", leaf.t_first))
        hit.add(mid.id)
    out: list[NewMid] = []
    for made in mids:
        if made.id not in hit:
            out.append(made)
            continue
        mid = g.node(made.id)
        _replay_evidence(g, mid, registry, confidence)
        refresh_change(g, mid.id)
        out.append(NewMid(made.id, made.schema_type, made.content, made.member_ids, mid.logit,
                          node_confidence(mid, registry, now), made.cluster))
    return out


def _replay_evidence(g: MemoryGraph, mid: Node, registry: SchemaRegistry, confidence: ConfidenceConfig) -> None:
    """Rebuild a new mid's logit, counts and ``t_last`` from its edges, in time order."""
    times, weights = [], []
    n_sup = n_con = 0
    for kind in (EdgeKind.SUPPORT, EdgeKind.CONFLICT):
        for child in g.children(mid.id, kind):
            e = g.edge(child, mid.id)
            assert e is not None
            times.append(g.node(child).t_first)
            weights.append(e.weight)
            n_sup += kind is EdgeKind.SUPPORT
            n_con += kind is EdgeKind.CONFLICT
    st = registry[mid.schema_type]
    mid.logit = evidence_logit(st.prior_logit, st.half_life_days, times, weights, confidence.clip)
    mid.n_support, mid.n_conflict = n_sup, n_con
    mid.t_last = max(times)


def separate_stances(g: MemoryGraph, registry: SchemaRegistry, confidence: ConfidenceConfig) -> list[str]:
    """Repair mids whose support holds both stance sides (made by an older version, or
    imported from one): the pattern keeps its own side, and each supporting leaf of the
    other side becomes a conflict when it came after the pattern's first evidence of its
    own side, else an orphan for clustering to place.

    The pattern's side is its recorded ``stance`` when it has one, else the side of most
    of its supporting leaves (ties: the side of the earliest). The support weight the
    leaf lent is taken back and, for a conflict, negative evidence of the same size is
    added, as live insertion would have done.

    Returns
    -------
    list of str
        Ids of the mids repaired (sorted).
    """
    repaired: list[str] = []
    for mid in sorted(g.nodes(Level.MID), key=lambda n: n.id):
        kids = sorted((g.node(c) for c in g.children(mid.id)), key=lambda n: (n.t_first, n.id))
        sides = [node_group(k) for k in kids]
        if len(set(sides)) < 2:
            continue
        if "stance" in mid.attributes:
            own = node_group(mid)
        else:
            pos = sum(1 for x in sides if x > 0)
            own = 1 if pos * 2 > len(sides) else -1 if pos * 2 < len(sides) else sides[0]
        first = min(k.t_first for k, x in zip(kids, sides) if x == own)
        for leaf, side in zip(kids, sides):
            if side == own:
                continue
            e = g.remove_edge(leaf.id, mid.id)
            mid.logit = max(-confidence.clip, min(confidence.clip, mid.logit - e.weight))
            mid.n_support = max(0, mid.n_support - 1)
            if leaf.t_first > first:
                psi = -(abs(e.psi) or 0.5)
                w = add_evidence(mid, psi, leaf.t_first, registry, confidence)
                g.add_edge(Edge(leaf.id, mid.id, EdgeKind.CONFLICT, psi, w,
                                f"consolidation: {node_stance(leaf)} against the pattern", leaf.t_first))
        mid.attributes["stance"] = pattern_stance(node_stance(g.node(c)) for c in g.children(mid.id))
        refresh_change(g, mid.id)
        repaired.append(mid.id)
    return repaired


def is_changed(mid: Node) -> bool:
    """Whether a mid's latest evidence reverses or ends it (``changed_at`` is set)."""
    return bool(mid.attributes.get("changed_at"))


def retract_changed(
    g: MemoryGraph, now: datetime, cfg: ConsolidationConfig, registry: SchemaRegistry,
    confidence: ConfidenceConfig,
) -> list[Prune]:
    """Keep roots from asserting what their mids no longer support.

    Every mid's changed state is refreshed from its edges. A changed mid leaves its
    root, and the root takes back the evidence the mid lent it (a negative ψ of the
    same size, at the time of the change). A root then left with fewer than
    ``min_root_mids`` supporting mids, or below θ_prune, is removed; its mids stay as
    local patterns (ARCHITECTURE.md: pruned roots keep their mids).

    Returns
    -------
    list of Prune
    """
    from ..types import utc

    for mid in sorted(g.nodes(Level.MID), key=lambda n: n.id):
        refresh_change(g, mid.id)
    touched: set[str] = set()
    for mid in sorted(g.nodes(Level.MID), key=lambda n: n.id):
        root_id_ = g.parent(mid.id)
        if root_id_ is None or not is_changed(mid):
            continue
        e = g.remove_edge(mid.id, root_id_)
        root = g.node(root_id_)
        at = utc(datetime.fromisoformat(str(mid.attributes["changed_at"])))
        if e.psi > 0:
            add_evidence(root, -e.psi, at, registry, confidence)
        root.n_support = max(0, root.n_support - 1)
        touched.add(root_id_)
    out: list[Prune] = []
    for root in sorted(g.nodes(Level.ROOT), key=lambda n: n.id):
        kids = tuple(sorted(g.children(root.id)))
        conf = node_confidence(root, registry, now)
        if len(kids) < cfg.min_root_mids or (root.id in touched and conf < cfg.theta_prune):
            g.remove_node(root.id)
            out.append(Prune(root.id, conf, kids))
    return out
