"""Clusters stay patterns at any scale: oversized clusters are halved before they form a
mid, near-duplicate merges keep cohesion and stance, and splitting a giant is linear."""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest

from personatree.config import ConsolidationConfig
from personatree.consolidate import Consolidator
from personatree.consolidate.bounds import mergeable
from personatree.consolidate.estimator import bisect
from personatree.consolidate.mids import cohesion, size_cap, union_cohesion, unit
from personatree.consolidate.synthetic import SyntheticLeaf, build_graph, noise_leaves, planted_leaves
from personatree.judge import OfflineJudge
from personatree.types import Level, Node

from .conftest import T0


def _templated(n: int, seed: int) -> list[SyntheticLeaf]:
    """``n`` short diary lines from a few templates: under the hashing embedder they
    are one dense blob, the case where HDBSCAN returns one giant cluster."""
    rng = np.random.default_rng(seed)
    acts = ["went to the gym", "cooked pasta", "read a novel", "watched a film", "walked the dog",
            "called my mum", "played tennis", "worked late", "went swimming", "baked bread"]
    how = ["with a friend", "alone", "with my partner", "after work", "in the morning", "at the weekend"]
    end = ["and it was nice", "and I felt tired", "which was fun", "and it was fine", "", "as usual"]
    return [SyntheticLeaf(f"Today I {acts[rng.integers(len(acts))]} {how[rng.integers(len(how))]} "
                          f"{end[rng.integers(len(end))]} {i % 97}", "event",
                          T0 + timedelta(minutes=int(i * 525600 / n)), f"s{i // 3}", -1) for i in range(n)]


def test_size_cap_grows_with_cohesion_and_union_cohesion_is_exact() -> None:
    caps = [size_cap(c, 0.4, 0.7, 60, 500) for c in (0.3, 0.4, 0.55, 0.7, 0.95)]
    assert caps == sorted(caps) and caps[0] == caps[1] == 60 and caps[-1] == caps[-2] == 500
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 16)) + 2.0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a, b = x[:12], x[12:]
    got = union_cohesion(unit(a.sum(0)), 12, cohesion(a), unit(b.sum(0)), 18, cohesion(b))
    assert got == pytest.approx(cohesion(x), abs=1e-5)


def test_bisect_is_linear_deterministic_and_uses_both_sides() -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(3000, 32)) + 3.0 * np.eye(32)[0],
                        rng.normal(size=(3000, 32)) + 3.0 * np.eye(32)[1]]).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    start = time.perf_counter()
    labels = bisect(x)
    assert time.perf_counter() - start < 2.0  # no n×n matrix for 6,000 rows
    assert (bisect(x) == labels).all() and set(labels.tolist()) == {0, 1}
    agree = max((labels[:3000] == 0).mean() + (labels[3000:] == 1).mean(),
                (labels[:3000] == 1).mean() + (labels[3000:] == 0).mean()) / 2
    assert agree > 0.95


def _mid(nid: str, vec: np.ndarray, n: int, coh: float, stance: str) -> Node:
    return Node(id=nid, user_id="u", level=Level.MID, schema_type="preference", content=nid,
                attributes={"cohesion": coh, "stance": stance}, t_first=T0, t_last=T0, logit=1.0,
                n_support=n, embedding=unit(vec))


def test_merges_keep_stance_sides_apart_and_refuse_loose_unions() -> None:
    v = np.ones(8, dtype=np.float32)
    assert mergeable(_mid("a", v, 5, 0.8, "positive"), _mid("b", v, 5, 0.8, "neutral"), 0.9)
    assert not mergeable(_mid("a", v, 5, 0.8, "positive"), _mid("b", v, 5, 0.8, "stopped"), 0.9)
    # Centroids apart (cosine 0.5): the union would be far looser than either mid.
    w = np.zeros(8, dtype=np.float32)
    w[:2] = 1.0
    u = np.zeros(8, dtype=np.float32)
    u[1:3] = 1.0
    assert not mergeable(_mid("a", w, 40, 0.6, "positive"), _mid("b", u, 40, 0.6, "positive"), 0.9)
    assert mergeable(_mid("a", w, 40, 0.6, "positive"), _mid("b", u, 40, 0.6, "positive"), None)


def test_three_hundred_mixed_leaves_make_only_single_topic_patterns(embedder, registry) -> None:
    leaves = planted_leaves(8, 30, T0, seed=3, span_days=120.0) + noise_leaves(60, T0, seed=3)
    g = build_graph("u", leaves, registry, embedder=embedder)
    cfg = ConsolidationConfig()
    plan = Consolidator(cfg, registry, OfflineJudge(embedder, registry), embedder=embedder).plan(
        g, T0 + timedelta(days=130))
    label = {n.id: n.attributes["planted"] for n in g.nodes(Level.LEAF)}
    assert plan.new_mids
    for m in plan.new_mids:
        topics = {label[i] for i in m.member_ids}
        assert len(topics) == 1 and -1 not in topics, (m.content, topics)
        assert len(m.member_ids) <= cfg.max_cluster_size


def test_a_dense_blob_of_thousands_is_split_into_bounded_patterns(hashing, registry) -> None:
    g = build_graph("u", _templated(2500, seed=0), registry, embedder=hashing)
    cfg = ConsolidationConfig(max_exact=1000, loose_cluster_size=30, max_cluster_size=150)
    start = time.perf_counter()
    plan = Consolidator(cfg, registry, OfflineJudge(hashing, registry), embedder=hashing).plan(
        g, T0 + timedelta(days=366))
    assert time.perf_counter() - start < 90
    assert plan.method == "knn" and plan.new_mids
    assert max(len(m.member_ids) for m in plan.new_mids) <= 150
    assert any("split" in c.note for c in plan.clusters)


@pytest.mark.slow
def test_twelve_thousand_templated_leaves_never_form_a_giant_pattern(hashing, registry) -> None:
    g = build_graph("u", _templated(12_000, seed=1), registry, embedder=hashing)
    cfg = ConsolidationConfig(max_exact=2000)
    start = time.perf_counter()
    plan = Consolidator(cfg, registry, OfflineJudge(hashing, registry), embedder=hashing).plan(
        g, T0 + timedelta(days=366))
    assert time.perf_counter() - start < 150
    assert max(len(m.member_ids) for m in plan.new_mids) <= cfg.max_cluster_size
