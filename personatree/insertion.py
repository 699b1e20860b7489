"""Validator-gated conservative insertion (ARCHITECTURE.md, "conservative insertion").

A new leaf is offered to the mids it may support (κ = 1), most similar first. The
judge labels each pair with ψ ∈ [−1, 1]; the match is ``κ·(a·ψ + b·sim)``.

* **attach** when the best support match reaches ``θ_attach`` *and* ψ reaches
  ``min_support_psi`` — with ``b < θ_attach`` (enforced by the config) similarity
  alone can never attach a leaf;
* **conflict** when ψ ≤ −θ_conflict: a conflict edge and negative evidence on that
  mid, and no attachment (a contradiction never deletes anything);
* **orphan** otherwise, until consolidation has enough context.

Stance is checked after the judge (:func:`~personatree.stance.guard_psi`): a leaf of the
opposite stance to a mid on its topic (similarity ≥ ``stance_topic_similarity``, and a
word of the mid's topic in the leaf) is a conflict with it even when the judge called
it support, and one off its topic is at most unrelated, so no judge — offline or
LLM — can put both stances into one pattern's support. A mid whose latest conflict is
newer than its latest support is *changed*: :func:`refresh_change` writes
``attributes["changed_at"]`` / ``["changed_by"]`` from its edges.

:func:`plan_insertions` is pure (it reads the graph and returns decisions);
:func:`apply_decision` mutates a graph and reports which nodes and edges changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Sequence

import numpy as np

from .confidence import days_between, evidence_weight, update_logit
from .config import ConfidenceConfig, InsertionConfig
from .graph import MemoryGraph
from .index import top_k
from .ports import Judge
from .schema import SchemaRegistry
from .speakers import leaf_speaker, same_speaker, speaker_key
from .stance import guard_psi, latest_change, node_stance, side_of
from .text import (
    about_listener, content_lemmas, is_topic_claim, share_a_topic, stance_reading, strip_summary_suffix, tokenize,
)
from .text.scope import takes_side_on
from .types import CandidateScore, Edge, EdgeKind, LeafDecision, Level, Node

__all__ = [
    "candidates_for", "plan_insertions", "apply_decision", "add_evidence", "Touched", "stance_checked",
    "names_topic", "refresh_change",
]


@dataclass(slots=True)
class Touched:
    """Nodes and edges a mutation created or changed (what a commit must write)."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)


def candidates_for(
    graph: MemoryGraph,
    leaf: Node,
    registry: SchemaRegistry,
    config: InsertionConfig,
) -> list[tuple[Node, float]]:
    """κ-compatible mids for a leaf, most similar first, above the similarity floor.

    Parameters
    ----------
    graph : MemoryGraph
        The user's tree.
    leaf : Node
        The new leaf (with an embedding).
    registry : SchemaRegistry
        For κ.
    config : InsertionConfig
        ``candidates`` and ``similarity_floor``.

    Returns
    -------
    list of (Node, float)
        At most ``config.candidates`` mids of the leaf's speaker
        (:mod:`personatree.speakers`) with their cosine similarity; none for a leaf
        that speaks of the listener only (:func:`~personatree.text.about_listener`).
    """
    index = graph.index(Level.MID)
    if leaf.embedding is None or len(index) == 0 or about_listener(leaf.content):
        # A line about the listener supports and contradicts none of the speaker's patterns.
        return []
    scores = index.scores(leaf.embedding)
    ids = index.ids
    who = leaf_speaker(leaf)
    out: list[tuple[Node, float]] = []
    # Rank everything, then filter by κ: κ-compatible mids are a large share of all
    # mids, so scanning the ranked list stops early in practice. Another speaker's
    # pattern is no candidate: one person's statement neither supports nor contradicts
    # another's habit.
    for i in top_k(scores, len(ids)):
        sim = float(scores[i])
        if sim < config.similarity_floor:
            break
        mid = graph.node(ids[i])
        if registry.kappa(leaf.schema_type, Level.LEAF, mid.schema_type) and same_speaker(who, speaker_key(graph, mid)):
            out.append((mid, sim))
            if len(out) >= config.candidates:
                break
    return out


def plan_insertions(
    graph: MemoryGraph,
    leaves: Sequence[Node],
    judge: Judge,
    registry: SchemaRegistry,
    config: InsertionConfig,
) -> list[LeafDecision]:
    """Decide attach / conflict / orphan for each leaf, validating in one batch.

    The graph is only read. Leaves need not be in the graph yet.

    Parameters
    ----------
    graph : MemoryGraph
    leaves : sequence of Node
    judge : Judge
        Supplies ψ through ``validate``.
    registry : SchemaRegistry
    config : InsertionConfig

    Returns
    -------
    list of LeafDecision
        One per leaf, in order.
    """
    cands = [candidates_for(graph, leaf, registry, config) for leaf in leaves]
    pairs = [(leaf, mid, sim) for leaf, cs in zip(leaves, cands) for mid, sim in cs]
    verdicts = judge.validate(pairs) if pairs else []
    decisions: list[LeafDecision] = []
    pos = 0
    for leaf, cs in zip(leaves, cands):
        scored: list[CandidateScore] = []
        for mid, sim in cs:
            v = verdicts[pos]
            pos += 1
            psi, label, reason = stance_checked(leaf, mid, sim, v.psi, v.label, v.reason, config)
            kappa = 1.0  # candidates_for kept only κ = 1
            match = kappa * (config.a * psi + config.b * sim)
            scored.append(CandidateScore(mid.id, sim, psi, match, label, reason))
        support = [c for c in scored if c.psi >= config.min_support_psi and c.match >= config.theta_attach]
        conflict = [c for c in scored if c.psi <= -config.theta_conflict]
        if support:
            best = max(support, key=lambda c: (c.match, c.node_id))
            decisions.append(LeafDecision(leaf.id, leaf.content, leaf.schema_type, "attach", best.node_id, tuple(scored)))
        elif conflict:
            worst = min(conflict, key=lambda c: (c.psi, c.node_id))
            decisions.append(LeafDecision(leaf.id, leaf.content, leaf.schema_type, "conflict", worst.node_id, tuple(scored)))
        else:
            decisions.append(LeafDecision(leaf.id, leaf.content, leaf.schema_type, "orphan", None, tuple(scored)))
    return decisions


def stance_checked(
    leaf: Node, mid: Node, sim: float, psi: float, label: str, reason: str, config: InsertionConfig,
) -> tuple[float, str, str]:
    """The judge's verdict on (leaf, mid) after the stance rule.

    Opposite stances on one topic are a conflict whatever the judge said: the leaf is
    at least ``stance_topic_similarity`` similar to the mid, names its topic
    (:func:`names_topic`), takes its side with more than a feeling (a like or
    dislike, an idiom, a stop or a start, a denial: see
    :func:`~personatree.text.stance.stance_reading`) and takes it *on* that topic
    (:func:`side_on_topic`). Otherwise an opposite-stance leaf is at most unrelated,
    never support: it is about something else ("Staying positive helps in tough times"
    is close to any upbeat pattern of the person's, and says nothing against their
    stretching routine; "The lifeguard yelled 'No diving!'" denies diving, not
    the lifeguard), or it tells how one episode felt or went ("I had a rough game last
    week", "we didn't reach the summit" are no change of mind about basketball), or it
    is a denial beside a claim that takes no side ("I shouldn't have phoned Grandpa"
    under "Often talks about Grandpa": :func:`~personatree.text.is_topic_claim`; a stop
    or a dislike still is a change). A conflict the judge itself found stands either way.

    Returns
    -------
    (float, str, str)
        ψ, label and reason.
    """
    new_psi, why = guard_psi(node_stance(leaf), node_stance(mid), psi, config.theta_conflict)
    if not why:
        return psi, label, reason
    if new_psi < 0 and sim < config.stance_topic_similarity:
        return min(psi, 0.0), "unrelated", f"{why}, off topic (similarity {sim:.2f})"
    if new_psi < 0 and not names_topic(leaf, mid):
        return min(psi, 0.0), "unrelated", f"{why}, off topic (no word of its topic)"
    if new_psi < 0 and _tells_an_episode(leaf.content):
        return min(psi, 0.0), "unrelated", f"{why}, a feeling about an episode"
    if new_psi < 0 and not side_on_topic(leaf, mid):
        return min(psi, 0.0), "unrelated", f"{why}, its side is taken on something else"
    if new_psi < 0 and is_topic_claim(mid.content) and _reading(leaf.content)[1] == "negation":
        # "I shouldn't have phoned Grandpa" beside "Often talks about Grandpa": the
        # claim says only that he comes up, and he does again; the side its members
        # lean to is not what it claims, and a denial is no change of mind.
        return min(psi, 0.0), "unrelated", f"{why}, a denial beside a topic that takes no side"
    return new_psi, "conflict" if new_psi < 0 else "unrelated", why


@lru_cache(maxsize=1 << 14)
def _reading(text: str) -> tuple[str, str]:
    # The stance a leaf's words read (label, source). A consolidation pass asks it of
    # one leaf against many mids.
    return stance_reading(text)


def _tells_an_episode(text: str) -> bool:
    # How one time felt or went, no side taken.
    return _reading(text)[1] in ("affect", "episode")


def side_on_topic(leaf: Node, mid: Node) -> bool:
    """Whether ``leaf`` takes its stance's side on ``mid``'s topic in one clause, with
    more than a feeling (:func:`~personatree.text.scope.takes_side_on`): "I packed my
    wellies, no gloves" denies gloves, not the wellies; "there was no queue, but the
    ferry smelled awful" denies nothing of the ferry.

    A stance its words do not carry (the words read another side or none: a judge
    read it from more than the words) is taken as given.

    Parameters
    ----------
    leaf, mid : Node

    Returns
    -------
    bool
    """
    side = side_of(node_stance(leaf))
    if side_of(_reading(leaf.content)[0]) != side:
        return True
    return takes_side_on(leaf.content, content_lemmas(tokenize(_topic_text(mid))), side)


def _topic_text(mid: Node) -> str:
    # The topic the mid's claim names, or its claim when it has none.
    topic = mid.attributes.get("topic") if mid.attributes else None
    return topic if isinstance(topic, str) and topic.strip() else strip_summary_suffix(mid.content)


def names_topic(leaf: Node, mid: Node) -> bool:
    """Whether ``leaf`` names ``mid``'s topic: a content word (by lemma) of the topic
    the mid's claim names (``attributes["topic"]``), or of its claim when it has none,
    is among the leaf's ("I can't stand sushi now" names "Enjoys sushi"'s topic).

    Parameters
    ----------
    leaf, mid : Node

    Returns
    -------
    bool
    """
    return share_a_topic(_topic_text(mid), leaf.content)


def refresh_change(graph: MemoryGraph, mid_id: str) -> bool:
    """Write whether ``mid_id`` is changed (latest conflict newer than latest support).

    Times are the leaves' own (``t_first``; the edge time when the leaf left the
    tree), so a conflict recorded by consolidation reads the same as one recorded live.
    Sets or clears ``attributes["changed_at"]`` (ISO) and ``["changed_by"]`` (leaf id).

    Returns
    -------
    bool
        Whether the attributes changed.
    """
    def when(child: str) -> datetime:
        e = graph.edge(child, mid_id)
        return graph.node(child).t_first if child in graph else e.at  # type: ignore[union-attr]

    supports = [(when(c), c) for c in graph.children(mid_id, EdgeKind.SUPPORT)]
    conflicts = [(when(c), c) for c in graph.children(mid_id, EdgeKind.CONFLICT)]
    mid = graph.node(mid_id)
    change = latest_change(supports, conflicts)
    before = (mid.attributes.get("changed_at"), mid.attributes.get("changed_by"))
    if change is None:
        mid.attributes.pop("changed_at", None)
        mid.attributes.pop("changed_by", None)
    else:
        mid.attributes["changed_at"], mid.attributes["changed_by"] = change[0].isoformat(), change[1]
    return before != (mid.attributes.get("changed_at"), mid.attributes.get("changed_by"))


def add_evidence(
    node: Node, psi: float, at: datetime, registry: SchemaRegistry, config: ConfidenceConfig
) -> float:
    """Decay ``node`` to ``at`` and add one piece of evidence ψ; returns the weight applied.

    Out-of-order evidence (``at`` before ``t_last``) is added without decay and does
    not move ``t_last`` back.
    """
    weight = evidence_weight(psi, config.gamma)
    st = registry[node.schema_type]
    node.logit = update_logit(
        node.logit, st.prior_logit, st.half_life_days, days_between(node.t_last, at), [weight], config.clip
    )
    if at > node.t_last:
        node.t_last = at
    if psi > 0:
        node.n_support += 1
    elif psi < 0:
        node.n_conflict += 1
    return weight


def apply_decision(
    graph: MemoryGraph,
    leaf: Node,
    decision: LeafDecision,
    registry: SchemaRegistry,
    config: InsertionConfig,
    confidence: ConfidenceConfig,
    touched: Touched,
) -> None:
    """Add ``leaf`` to the graph and carry out ``decision`` (edges and evidence).

    Every conflicting candidate (ψ ≤ −θ_conflict) gets a conflict edge and negative
    evidence, also when the leaf attaches elsewhere: counter-evidence is kept.
    """
    at = leaf.t_first
    graph.add_node(leaf)
    touched.nodes[leaf.id] = leaf
    for c in decision.candidates:
        is_target = decision.action == "attach" and c.node_id == decision.target
        is_conflict = c.psi <= -config.theta_conflict
        if not (is_target or is_conflict):
            continue
        mid = graph.node(c.node_id)
        weight = add_evidence(mid, c.psi, at, registry, confidence)
        kind = EdgeKind.SUPPORT if is_target else EdgeKind.CONFLICT
        edge = Edge(leaf.id, mid.id, kind, float(c.psi), float(weight), c.reason, at)
        graph.add_edge(edge)
        touched.edges.append(edge)
        if is_target and mid.attributes.get("stance") == "neutral" and node_stance(leaf) != "neutral":
            mid.attributes["stance"] = node_stance(leaf)  # a stated stance names a neutral pattern
        refresh_change(graph, mid.id)
        touched.nodes[mid.id] = mid


def leaf_embedding_or_none(vec: np.ndarray | None) -> np.ndarray | None:
    """Normalise a possibly missing embedding to float32 unit norm."""
    if vec is None:
        return None
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    n = float(np.linalg.norm(v))
    return v if n == 0.0 else v / n
