"""Pure parts of consolidation: distance, clustering, mid gates, promotion criteria, plan JSON."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from personatree.confidence import update_logit
from personatree.consolidate.clustering import ClusterParams, cluster_leaves
from personatree.consolidate.distance import (
    DistanceWeights,
    max_distance,
    mixed_distance,
    pair_distance,
    type_mismatch,
)
from personatree.consolidate.mids import choose_mid_type, cohesion, evidence_logit, mid_id
from personatree.consolidate.promote import Criteria, choose_root_type, group_by_similarity, promotable, root_psi
from personatree.consolidate.bounds import delete_stale_orphans, is_stale, merged_logit, trim_split
from personatree.graph import MemoryGraph
from personatree.types import Level, Node

from .conftest import T0


def blobs(n_clusters: int, per: int, noise: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around random centres plus uniform noise; labels −1 for noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim))
    x = np.repeat(centres, per, axis=0) / np.sqrt(dim) + rng.normal(scale=0.25 / np.sqrt(dim), size=(n_clusters * per, dim))
    x = np.vstack([x, rng.normal(size=(noise, dim))])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32), np.concatenate([np.repeat(np.arange(n_clusters), per), -np.ones(noise, int)])


def test_type_mismatch_is_zero_on_the_diagonal_one_for_kappa_incompatible(registry) -> None:
    types = ["event", "fact", "preference"]
    m = type_mismatch(types, registry)
    assert np.allclose(np.diag(m), 0.0) and np.allclose(m, m.T)
    assert m[1, 2] == 1.0  # a fact and a preference can never support one mid
    assert 0.0 < m[0, 2] < 1.0  # an event and a preference can both feed a preference mid


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.integers(0, 10_000))
def test_dense_and_pairwise_distances_agree_and_stay_in_bounds(n, seed) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    codes = rng.integers(0, 3, n)
    days = rng.uniform(0, 400, n)
    mm = np.array([[0, 0.5, 1], [0.5, 0, 1], [1, 1, 0]], dtype=np.float32)
    w = DistanceWeights(1.0, 0.3, 0.1, 180.0)
    d = mixed_distance(x, codes, days, mm, w)
    r, c = np.triu_indices(n, 1)
    assert np.allclose(d[r, c], pair_distance(x, codes, days, mm, w, r, c), atol=1e-5)
    assert np.allclose(np.diag(d), 0.0)
    assert d.min() >= 0.0 and d.max() <= max_distance(w) + 1e-6


def test_exact_and_knn_paths_find_the_same_clusters() -> None:
    x, truth = blobs(12, 15, 60, 32, seed=3)
    codes = np.zeros(len(x), dtype=np.int64)
    days = np.zeros(len(x))
    mm = np.zeros((1, 1), dtype=np.float32)
    w = DistanceWeights()
    exact, m1 = cluster_leaves(x, codes, days, mm, w, ClusterParams(3, 3, max_exact=10_000))
    knn, m2 = cluster_leaves(x, codes, days, mm, w, ClusterParams(3, 3, max_exact=100, reduced_dim=8))
    assert (m1, m2) == ("exact", "knn")
    planted = truth >= 0
    assert adjusted_rand_score(truth[planted], exact[planted]) > 0.95
    assert adjusted_rand_score(exact, knn) > 0.95
    # clusters are numbered by first member, so the numbering is stable
    firsts = [int(np.flatnonzero(exact == k)[0]) for k in range(exact.max() + 1)]
    assert firsts == sorted(firsts)


def test_too_few_points_are_all_noise() -> None:
    x, _ = blobs(1, 2, 0, 8, seed=1)
    labels, method = cluster_leaves(x, np.zeros(2, int), np.zeros(2), np.zeros((1, 1), np.float32),
                                    DistanceWeights(), ClusterParams(3, 3))
    assert method == "none" and (labels == -1).all()


def test_one_lone_pattern_is_still_found() -> None:
    # With a single dense group HDBSCAN has no split to select; the fallback finds it.
    x, truth = blobs(1, 12, 0, 16, seed=5)
    labels, _ = cluster_leaves(x, np.zeros(12, int), np.zeros(12), np.zeros((1, 1), np.float32),
                               DistanceWeights(), ClusterParams(3, 3))
    assert (labels == 0).all()


def test_cohesion_is_the_mean_pairwise_cosine() -> None:
    x, _ = blobs(2, 5, 3, 8, seed=2)
    s = x @ x.T
    n = len(x)
    assert cohesion(x) == pytest.approx((s.sum() - np.trace(s)) / (n * (n - 1)), abs=1e-6)
    assert cohesion(x[:1]) == 1.0


def test_mid_type_is_the_one_accepting_most_members(registry) -> None:
    assert choose_mid_type(["preference"] * 4, registry) == ("preference", 4)
    # facts only feed fact mids; one stray preference does not change that
    assert choose_mid_type(["fact", "fact", "fact", "preference"], registry) == ("fact", 3)
    assert choose_mid_type(["event"] * 3, registry)[1] == 3  # any type events may feed
    assert choose_mid_type([], registry) == (None, 0)


def test_evidence_logit_replays_like_one_by_one_attachment() -> None:
    times = [T0 + timedelta(days=d) for d in (10, 0, 30)]
    weights = [0.4, 0.5, 0.3]
    got = evidence_logit(0.0, 21.0, times, weights, 6.0)
    want = 0.0
    want = update_logit(want, 0.0, 21.0, 0, [0.5], 6.0)
    want = update_logit(want, 0.0, 21.0, 10, [0.4], 6.0)
    want = update_logit(want, 0.0, 21.0, 20, [0.3], 6.0)
    assert got == pytest.approx(want)


def test_mid_ids_do_not_depend_on_member_order() -> None:
    assert mid_id("u", ["b", "a"]) == mid_id("u", ["a", "b"]) != mid_id("v", ["a", "b"])


CRIT = Criteria(theta_c=0.7, n_root=5, t_root_days=14.0, min_sessions=2, min_days=2)


def test_promotion_needs_confidence_support_coverage_and_several_sessions() -> None:
    later = T0 + timedelta(days=30)
    assert promotable(0.9, 8, T0, later, 4, 4, CRIT) == (True, "")
    assert not promotable(0.6, 8, T0, later, 4, 4, CRIT)[0]
    assert not promotable(0.9, 4, T0, later, 4, 4, CRIT)[0]
    assert not promotable(0.9, 8, T0, T0 + timedelta(days=2), 4, 4, CRIT)[0]
    ok, why = promotable(0.99, 20, T0, later, 1, 1, CRIT)
    assert not ok and "sessions" in why  # one burst, however long ago it started


def test_root_type_is_kappa_allowed(registry) -> None:
    rt = choose_root_type("fact", registry)
    assert rt is not None and registry.kappa("fact", Level.MID, rt)


def test_similarity_groups_are_connected_components() -> None:
    v = np.array([[1, 0], [0.99, 0.141], [0, 1], [0.141, 0.99], [-1, 0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert group_by_similarity(v, 0.9) == [[0, 1], [2, 3], [4]]
    assert root_psi(0.95) == pytest.approx(0.9) and root_psi(0.3) == 0.0


def test_growth_helpers() -> None:
    assert is_stale(T0, T0 + timedelta(days=400), 365) and not is_stale(T0, T0 + timedelta(days=10), 365)
    leaves = [Node(f"l{i}", "u", Level.LEAF, "event", "x", {}, T0 + timedelta(days=i), T0 + timedelta(days=i), 0.0)
              for i in range(5)]
    kept, removed = trim_split(leaves, 2)
    assert [n.id for n in kept] == ["l4", "l3"] and len(removed) == 3
    logit, t = merged_logit(2.0, T0, 1.0, T0 + timedelta(days=1), 0.0, None, 6.0)
    assert logit == pytest.approx(3.0) and t == T0 + timedelta(days=1)
    assert merged_logit(5.0, T0, 5.0, T0, 0.0, None, 6.0)[0] == 6.0


def test_knn_labels_match_hdbscans_public_sparse_path() -> None:
    from personatree.consolidate.clustering import _hdbscan, _labels_from_graph, knn_mutual_reachability

    x, _ = blobs(8, 12, 40, 24, seed=9)
    n = len(x)
    params = ClusterParams(3, 3, max_exact=100, reduced_dim=8)
    graph = knn_mutual_reachability(x, np.zeros(n, int), np.zeros(n), np.zeros((1, 1), np.float32),
                                    DistanceWeights(), params)
    ours = _labels_from_graph(graph, params)
    public = _hdbscan(graph, params, 1)
    assert adjusted_rand_score(ours, public) == 1.0 and ((ours < 0) == (public < 0)).all()


def test_orphans_age_on_the_users_activity_not_the_wall_clock() -> None:
    def leaf(i: int, day: int) -> Node:
        t = T0 + timedelta(days=day)
        return Node(f"l{i}", "u", Level.LEAF, "event", f"x{i}", {}, t, t, 0.0)

    # A user silent for three years keeps everything: nothing could have corroborated it.
    g = MemoryGraph("u")
    for i, day in enumerate((0, 10, 20)):
        g.add_node(leaf(i, day))
    assert delete_stale_orphans(g, T0 + timedelta(days=3 * 365), 365) == []
    assert len(g) == 3
    # Once they are active again, an orphan a year older than their latest evidence goes.
    g.add_node(leaf(3, 3 * 365))
    gone = delete_stale_orphans(g, T0 + timedelta(days=3 * 365), 365)
    assert [d.node_id for d in gone] == ["l0", "l1", "l2"] and len(g) == 1
