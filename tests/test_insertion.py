"""Validator-gated insertion on a graph: attach, conflict, orphan; κ and the ψ gate."""

from __future__ import annotations

import numpy as np
import pytest

from personatree.config import ConfidenceConfig, InsertionConfig
from personatree.confidence import sigmoid
from personatree.graph import MemoryGraph
from personatree.insertion import Touched, apply_decision, plan_insertions
from personatree.types import EdgeKind, Level, Node, Provenance

from .conftest import T0, ScriptedJudge


def node(embedder, nid: str, level: Level, stype: str, text: str, logit: float = 0.0) -> Node:
    vec = embedder.embed([text])[0]
    prov = (Provenance("obs", 0, 0, T0, "s1"),) if level is Level.LEAF else ()
    return Node(nid, "u", level, stype, text, {}, T0, T0, logit, embedding=vec, provenance=prov)


def run(graph, leaves, judge, registry, cfg=InsertionConfig()):
    decisions = plan_insertions(graph, leaves, judge, registry, cfg)
    touched = Touched()
    for leaf, d in zip(leaves, decisions):
        apply_decision(graph, leaf, d, registry, cfg, ConfidenceConfig(), touched)
    graph.check()
    return decisions


def test_support_attaches_and_raises_confidence(hashing, registry) -> None:
    g = MemoryGraph("u")
    g.add_node(node(hashing, "m", Level.MID, "preference", "I love hiking in the mountains"))
    leaf = node(hashing, "l", Level.LEAF, "preference", "I love hiking in the mountains a lot")
    judge = ScriptedJudge(hashing, {(leaf.content, "I love hiking in the mountains"): 0.9})
    [d] = run(g, [leaf], judge, registry)
    assert d.action == "attach" and d.target == "m"
    assert g.parent("l") == "m" and g.node("m").n_support == 1
    assert g.node("m").logit == pytest.approx(0.9 * ConfidenceConfig().gamma)


def test_conflict_records_edge_and_negative_evidence_without_attaching(hashing, registry) -> None:
    g = MemoryGraph("u")
    g.add_node(node(hashing, "m", Level.MID, "preference", "I love hiking in the mountains", logit=1.0))
    leaf = node(hashing, "l", Level.LEAF, "preference", "I stopped hiking in the mountains")
    judge = ScriptedJudge(hashing, {(leaf.content, "I love hiking in the mountains"): -0.8})
    [d] = run(g, [leaf], judge, registry)
    assert d.action == "conflict" and d.target == "m"
    assert g.parent("l") is None
    assert g.conflicts_of("m") == ["l"]
    e = g.edge("l", "m")
    assert e.kind is EdgeKind.CONFLICT and e.weight < 0
    assert g.node("m").logit < 1.0 and g.node("m").n_conflict == 1
    assert sigmoid(g.node("m").logit) < sigmoid(1.0)


def test_similarity_alone_never_attaches(hashing, registry) -> None:
    # Identical text (similarity 1.0) but the validator says unrelated: the leaf stays an orphan.
    g = MemoryGraph("u")
    g.add_node(node(hashing, "m", Level.MID, "preference", "I love hiking"))
    leaf = node(hashing, "l", Level.LEAF, "preference", "I love hiking")
    for psi in (0.0, 0.1, 0.29):
        judge = ScriptedJudge(hashing, {("I love hiking", "I love hiking"): psi})
        d = plan_insertions(g, [leaf], judge, registry, InsertionConfig())[0]
        assert d.action == "orphan"
        assert d.candidates[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_schema_incompatible_candidate_is_never_offered(hashing, registry) -> None:
    g = MemoryGraph("u")
    # A fact leaf may only support fact mids; a preference mid with the same text is off limits.
    g.add_node(node(hashing, "m", Level.MID, "preference", "I live in Lisbon"))
    leaf = node(hashing, "l", Level.LEAF, "fact", "I live in Lisbon")
    judge = ScriptedJudge(hashing, default_psi=1.0)
    [d] = run(g, [leaf], judge, registry)
    assert d.action == "orphan" and d.candidates == ()
    assert judge.calls == []  # the validator was not even asked


def test_best_support_wins_and_conflicts_are_kept(hashing, registry) -> None:
    g = MemoryGraph("u")
    g.add_node(node(hashing, "a", Level.MID, "preference", "I love hiking trails"))
    g.add_node(node(hashing, "b", Level.MID, "preference", "I love hiking mountains"))
    g.add_node(node(hashing, "c", Level.MID, "preference", "I hate hiking"))
    leaf = node(hashing, "l", Level.LEAF, "preference", "I love hiking mountains and trails")
    judge = ScriptedJudge(hashing, {
        (leaf.content, "I love hiking trails"): 0.6,
        (leaf.content, "I love hiking mountains"): 0.9,
        (leaf.content, "I hate hiking"): -0.9,
    })
    [d] = run(g, [leaf], judge, registry, InsertionConfig(similarity_floor=-1.0))
    assert d.action == "attach" and d.target == "b"
    assert g.conflicts_of("c") == ["l"]


def test_no_candidates_means_orphan(hashing, registry) -> None:
    g = MemoryGraph("u")
    leaf = node(hashing, "l", Level.LEAF, "event", "I went to Porto")
    [d] = run(g, [leaf], ScriptedJudge(hashing), registry)
    assert d.action == "orphan" and g.orphans()[0].id == "l"
    assert np.isclose(np.linalg.norm(g.node("l").embedding), 1.0)
