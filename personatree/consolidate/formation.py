"""The graph steps that create nodes: a mid from a cluster, roots from promotable mids.

The decisions are the pure functions of :mod:`~personatree.consolidate.mids`,
:mod:`~personatree.consolidate.promote` and :mod:`~personatree.stance`; this module
builds the nodes and edges on the planner's scratch graph.

Stance (:mod:`personatree.stance`) is part of a pattern: a mid is formed from one
stance side only, a *changed* mid (:func:`~personatree.consolidate.conflicts.is_changed`)
is never promoted, and a root abstracts over two or more unchanged mids of one side.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Mapping, Sequence

import numpy as np

from ..config import ConfidenceConfig, ConsolidationConfig
from ..confidence import evidence_weight
from ..graph import MemoryGraph
from ..insertion import add_evidence
from ..ports import Embedder, Judge
from ..render import node_confidence
from ..schema import SchemaRegistry
from ..speakers import leaf_speaker, same_speaker, speaker_attributes, speaker_key
from ..stance import node_group, node_stance, pattern_stance
from ..text import about_listener
from ..types import Edge, EdgeKind, Level, Node
from .bounds import mid_span
from .mids import (
    choose_mid_type, cohesion, evidence_logit, evidence_span, mid_id, support_psi, unit,
)
from .conflicts import is_changed
from .plan import ClusterReport, NewMid, Promotion
from .promote import Criteria, choose_root_type, group_by_similarity, promotable, root_id, root_psi

__all__ = ["type_vectors", "form_mid", "promote_mids", "stance_side"]

_VECTORS: dict[tuple[str, str, Level], dict[str, np.ndarray]] = {}
_VECTORS_LOCK = threading.Lock()


def type_vectors(embedder: Embedder | None, registry: SchemaRegistry, level: Level) -> dict[str, np.ndarray]:
    """Unit mean embedding of each ``level`` type's examples (cached per embedder and registry)."""
    if embedder is None:
        return {}
    types = [t for t in registry.types_at(level) if t.examples]
    key = (embedder.name, repr([(t.name, t.examples) for t in types]), level)
    with _VECTORS_LOCK:
        if key not in _VECTORS:
            out: dict[str, np.ndarray] = {}
            for t in types:
                out[t.name] = unit(embedder.embed(list(t.examples)).mean(axis=0))
            _VECTORS[key] = out
        return _VECTORS[key]


def _reject(index: int, rnd: int, nodes: Sequence[Node], coh: float, note: str) -> tuple[
        ClusterReport, None, np.ndarray]:
    return ClusterReport(index, rnd, tuple(sorted(n.id for n in nodes)), coh, None, note), None, np.empty(0, int)


def form_mid(
    g: MemoryGraph,
    nodes: Sequence[Node],
    vectors: np.ndarray,
    index: int,
    rnd: int,
    now: datetime,
    cfg: ConsolidationConfig,
    registry: SchemaRegistry,
    judge: Judge,
    confidence: ConfidenceConfig,
    mid_vectors: Mapping[str, np.ndarray],
) -> tuple[ClusterReport, NewMid | None, np.ndarray]:
    """Turn one cluster into a mid on ``g`` if it passes the gates.

    Returns
    -------
    (ClusterReport, NewMid or None, ndarray)
        The report, the new mid (None if rejected) and the positions in ``nodes`` of
        the leaves that joined it.
    """
    side = stance_side(nodes)
    if side is not None:
        # Both stances in one cluster: the planner splits by stance first, so this only
        # guards other callers. The larger side stays (ties: the +1 side).
        nodes = [nodes[i] for i in side.tolist()]
        vectors = vectors[side]
    centroid = unit(vectors.mean(axis=0))
    mt, count = choose_mid_type([n.schema_type for n in nodes], registry, centroid, mid_vectors)
    if mt is None or count < cfg.n_min:
        return _reject(index, rnd, nodes, cohesion(vectors), f"no mid type accepts {cfg.n_min} of its leaves")
    # A line about the listener ("I love how your garden turned out") is no evidence of
    # the speaker's patterns: it stays an orphan leaf, for recall only.
    ok = np.array([registry.kappa(n.schema_type, Level.LEAF, mt) and not about_listener(n.content)
                   for n in nodes])
    own = int(ok.sum())
    if own < cfg.n_min:
        return _reject(index, rnd, nodes, cohesion(vectors), f"only {own} leaves of the type speak of the speaker")
    centroid = unit(vectors[ok].mean(axis=0))
    keep = np.flatnonzero(ok & (vectors @ centroid >= cfg.member_similarity))
    if keep.shape[0] < cfg.n_min:
        return _reject(index, rnd, nodes, cohesion(vectors), f"only {keep.shape[0]} leaves near the centroid")
    coh = cohesion(vectors[keep])
    if coh < cfg.min_cohesion:
        return _reject(index, rnd, nodes, coh, f"cohesion {coh:.2f} < {cfg.min_cohesion}")
    members = [nodes[i] for i in keep.tolist()]
    centroid = unit(vectors[keep].mean(axis=0))
    psi = support_psi(vectors[keep], centroid)
    weights = [evidence_weight(float(p), confidence.gamma) for p in psi]
    st = registry[mt]
    logit = evidence_logit(st.prior_logit, st.half_life_days, [n.t_first for n in members], weights, confidence.clip)
    summary = judge.summarize(members, Level.MID, mt)
    if summary.attributes.get("named") is False:
        # The judge found no topic its members share: a loose cluster, not a pattern.
        return _reject(index, rnd, nodes, coh, "its leaves share no topic to name a pattern by")
    sessions, days = evidence_span(members)
    attrs = {**dict(summary.attributes), "origin": "consolidation", "cohesion": round(coh, 6),
             "sessions": sessions, "days": days, "stance": pattern_stance(node_stance(n) for n in members),
             **speaker_attributes([leaf_speaker(n) for n in members])}
    new_id = mid_id(g.user_id, [n.id for n in members])
    if new_id in g:  # the same founders formed a mid before that was since forgotten
        new_id = mid_id(g.user_id, [n.id for n in members] + [now.isoformat()])
    mid = Node(
        id=new_id, user_id=g.user_id, level=Level.MID, schema_type=mt, content=summary.content,
        attributes=attrs, t_first=min(n.t_first for n in members), t_last=max(n.t_last for n in members),
        logit=logit, n_support=len(members), embedding=centroid,
    )
    g.add_node(mid)
    for leaf, p, w in zip(members, psi.tolist(), weights):
        g.add_edge(Edge(leaf.id, mid.id, EdgeKind.SUPPORT, float(p), float(w), f"consolidation: cluster {index}", now))
    conf = node_confidence(mid, registry, now)
    report = ClusterReport(index, rnd, tuple(sorted(n.id for n in nodes)), coh, mid.id,
                           f"{len(members)} of {len(nodes)} leaves form a {mt} mid")
    return report, NewMid(mid.id, mt, mid.content, tuple(sorted(n.id for n in members)), logit, conf, index), (
        keep if side is None else side[keep])


def stance_side(nodes: Sequence[Node]) -> np.ndarray | None:
    """Positions of the members of the larger stance side, or None when all share one.

    Ties go to the +1 side (neutral mentions count with it, see :mod:`personatree.stance`).
    """
    groups = np.array([node_group(n) for n in nodes], dtype=np.int64)
    if groups.size == 0 or (groups == groups[0]).all():
        return None
    pos = int((groups > 0).sum())
    keep = 1 if pos >= groups.size - pos else -1
    return np.flatnonzero(groups == keep)


def promote_mids(
    g: MemoryGraph,
    now: datetime,
    cfg: ConsolidationConfig,
    registry: SchemaRegistry,
    judge: Judge,
    confidence: ConfidenceConfig,
    root_vectors: Mapping[str, np.ndarray],
) -> list[Promotion]:
    """Promote every loose mid that meets the criteria: join the most similar existing
    root of its root type, stance side and speaker that the judge reads it as support of
    (:meth:`~personatree.ports.Judge.validate`), or form new roots from similarity groups of
    at least ``min_root_mids`` mids of one root type, one stance side and one speaker
    (:mod:`personatree.speakers`: a claim is about one person).

    A changed mid (:func:`is_changed`) is never promoted: its latest evidence says the
    pattern no longer holds.
    """
    crit = Criteria.from_config(cfg)
    ready: list[tuple[Node, float, str]] = []
    for mid in sorted(g.nodes(Level.MID), key=lambda n: (n.t_first, n.id)):
        if g.parent(mid.id) is not None or mid.embedding is None or is_changed(mid):
            continue
        conf = node_confidence(mid, registry, now)
        sessions, days = mid_span(g, mid)
        ok, _ = promotable(conf, mid.n_support, mid.t_first, mid.t_last, len(sessions), len(days), crit)
        rt = choose_root_type(mid.schema_type, registry, mid.embedding, root_vectors) if ok else None
        if rt is not None:
            ready.append((mid, conf, rt))
    out: list[Promotion] = []
    fresh: dict[tuple[str, int, str], list[tuple[Node, float]]] = {}
    roots = sorted((r for r in g.nodes(Level.ROOT) if r.embedding is not None), key=lambda n: n.id)
    # Each root's speaker, read once; re-read only for a root that gains a pattern.
    root_who = {r.id: speaker_key(g, r) for r in roots}
    for mid, conf, rt in ready:
        who = speaker_key(g, mid)  # a mid ready to promote has evidence: a name or None
        near: list[tuple[float, Node]] = []
        for r in roots:
            sim = float(np.asarray(r.embedding) @ np.asarray(mid.embedding))
            if (r.schema_type == rt and node_group(r) == node_group(mid) and sim >= cfg.root_similarity
                    and same_speaker(root_who[r.id], who)):
                near.append((sim, r))
        near.sort(key=lambda x: (-x[0], x[1].id))
        # A root's claim was written for the patterns it has: a new one joins it only
        # when the judge reads it as support of that claim, as a leaf joins a pattern.
        verdicts = judge.validate([(mid, r, sim) for sim, r in near]) if near else []
        best = next((r for (_, r), v in zip(near, verdicts) if v.label == "support"), None)
        if best is None:
            fresh.setdefault((rt, node_group(mid), who if isinstance(who, str) else ""), []).append((mid, conf))
            continue
        psi = root_psi(conf)
        w = add_evidence(best, psi, mid.t_last, registry, confidence)
        g.add_edge(Edge(mid.id, best.id, EdgeKind.SUPPORT, psi, w, "consolidation: joins a similar root", now))
        root_who[best.id] = speaker_key(g, best)  # a root that named nobody names this mid's speaker now
        out.append(Promotion(best.id, rt, best.content, (mid.id,), False, node_confidence(best, registry, now)))
    for rt, side, speaker in sorted(fresh):
        mids = fresh[(rt, side, speaker)]
        vecs = np.stack([np.asarray(m.embedding, dtype=np.float32) for m, _ in mids])
        for grp in group_by_similarity(vecs, cfg.root_similarity):
            if len(grp) < cfg.min_root_mids:
                continue  # a root abstracts over patterns; it never copies one
            members = [mids[i] for i in grp]
            psis = [root_psi(c) for _, c in members]
            weights = [evidence_weight(p, confidence.gamma) for p in psis]
            st = registry[rt]
            logit = evidence_logit(st.prior_logit, st.half_life_days, [m.t_last for m, _ in members],
                                   weights, confidence.clip)
            nodes = [m for m, _ in members]
            summary = judge.summarize(nodes, Level.ROOT, rt)
            if summary.attributes.get("named") is False:
                continue
            stance = pattern_stance(node_stance(m) for m in nodes)
            root = Node(
                id=root_id(g.user_id, rt, [m.id for m in nodes], now), user_id=g.user_id, level=Level.ROOT,
                schema_type=rt, content=summary.content,
                attributes={**dict(summary.attributes), "origin": "consolidation", "stance": stance,
                            **({"speaker": speaker} if speaker else {})},
                t_first=min(m.t_first for m in nodes), t_last=max(m.t_last for m in nodes), logit=logit,
                n_support=len(nodes), embedding=unit(vecs[grp].mean(axis=0)),
            )
            conf = node_confidence(root, registry, now)
            if conf < cfg.theta_prune:  # it would be pruned by the next pass: do not churn
                continue
            g.add_node(root)
            for (m, _), p, w in zip(members, psis, weights):
                g.add_edge(Edge(m.id, root.id, EdgeKind.SUPPORT, p, w, f"consolidation: promoted to {rt}", now))
            out.append(Promotion(root.id, rt, root.content, tuple(m.id for m in nodes), True, conf))
    return out
