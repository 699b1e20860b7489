"""Consolidation on seeded synthetic users (real embedder, offline judge) and end to end
through the PersonaTree API on a real SQLite file."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from personatree import FixedClock, PersonaTree, StaleStateError
from personatree.config import ConsolidationConfig
from personatree.consolidate import (
    ConsolidationPlan,
    Consolidator,
    apply_plan,
    apply_user_plan,
    consolidate_user,
)
from personatree.consolidate.apply import apply_rebased
from personatree.consolidate.bounds import merge_mids
from personatree.consolidate.formation import promote_mids, type_vectors
from personatree.consolidate.mids import unit
from personatree.consolidate.synthetic import SyntheticLeaf, build_graph, noise_leaves, planted_leaves
from personatree.graph import MemoryGraph
from personatree.judge import OfflineJudge
from personatree.types import EdgeKind, Level, Node

from .conftest import T0

NOW = T0 + timedelta(days=120)


@pytest.fixture(scope="module")
def judge(embedder, registry) -> OfflineJudge:
    return OfflineJudge(embedder, registry)


def consolidator(registry, judge, embedder, **cfg) -> Consolidator:
    return Consolidator(ConsolidationConfig(**cfg), registry, judge, embedder=embedder)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_patterns_come_back_as_mids_and_noise_stays_orphaned(seed, registry, embedder, judge) -> None:
    leaves = planted_leaves(8, 12, T0, seed=seed) + noise_leaves(60, T0, seed=seed)
    g = build_graph("u", leaves, registry, embedder=embedder)
    c = consolidator(registry, judge, embedder)
    plan = c.plan(g, NOW)
    planted = {n.id: n.attributes["planted"] for n in g.nodes(Level.LEAF)}
    got = dict(zip(c.leaf_ids_, c.labels_.tolist()))
    ids = [i for i, lab in planted.items() if lab >= 0]
    assert adjusted_rand_score([planted[i] for i in ids], [got[i] for i in ids]) >= 0.9
    in_mids = {leaf for m in plan.new_mids for leaf in m.member_ids}
    assert not any(planted[i] < 0 for i in in_mids), "noise joined a mid"
    assert set(ids) <= in_mids, "a planted leaf stayed orphaned"
    apply_plan(g, plan, registry, c.config)
    g.check()
    assert all(g.parent(i) is None for i, lab in planted.items() if lab < 0)
    for mid in g.nodes(Level.MID):
        assert 0.5 < np.mean([g.edge(k, mid.id).psi for k in g.children(mid.id)]) <= 1.0
        assert all(g.edge(k, mid.id).reason.startswith("consolidation: cluster") for k in g.children(mid.id))


def test_a_burst_makes_no_root_but_the_same_mentions_spread_over_weeks_do(registry, embedder, judge) -> None:
    burst = planted_leaves(1, 20, T0, seed=4, span_days=0.0, sessions=1)
    spread = planted_leaves(1, 20, T0, seed=4, span_days=42.0)
    at = T0 + timedelta(days=45)
    # One pattern never makes a root by default (a root abstracts over two or more);
    # allowing single-pattern roots isolates the temporal criteria under test.
    for leaves, want_root in ((burst, False), (spread, True)):
        g = build_graph("u", leaves, registry, embedder=embedder)
        plan = consolidator(registry, judge, embedder, min_root_mids=1).plan(g, at)
        assert len(plan.new_mids) == 1 and plan.new_mids[0].confidence >= 0.7
        assert bool(plan.promotions) is want_root, plan.describe()
        assert not consolidator(registry, judge, embedder).plan(g, at).promotions


@pytest.mark.parametrize("claim, joins", [("Engaged with quiet hotels", True), ("Engaged with spreadsheets", False)])
def test_a_pattern_joins_a_root_only_when_the_judge_reads_it_as_support(claim, joins, registry, embedder,
                                                                         judge) -> None:
    # A root of every root type, as near the pattern as a root can be (its vector is the
    # pattern's): one whose claim is about something else must not take the pattern.
    leaves = planted_leaves(1, 20, T0, seed=4, span_days=42.0)
    g = build_graph("u", leaves, registry, embedder=embedder)
    c = consolidator(registry, judge, embedder, min_root_mids=1)
    apply_plan(g, consolidator(registry, judge, embedder, min_root_mids=2).plan(g, NOW), registry, c.config)
    (mid,) = g.nodes(Level.MID)
    roots = [Node(id=f"root_{t.name}", user_id="u", level=Level.ROOT, schema_type=t.name, content=claim,
                  attributes={"stance": mid.attributes["stance"]}, t_first=T0, t_last=T0, logit=1.0, n_support=2,
                  embedding=np.asarray(mid.embedding, dtype=np.float32))
             for t in registry.types_at(Level.ROOT)]
    for r in roots:
        g.add_node(r)
    (promotion,) = promote_mids(g, NOW, c.config, registry, judge, c.confidence,
                                type_vectors(embedder, registry, Level.ROOT))
    assert promotion.new is not joins
    assert (promotion.root_id in {r.id for r in roots}) is joins


def test_consolidating_twice_changes_nothing_the_second_time(registry, embedder, judge) -> None:
    leaves = planted_leaves(5, 10, T0, seed=7) + noise_leaves(30, T0, seed=7)
    g = build_graph("u", leaves, registry, embedder=embedder)
    c = consolidator(registry, judge, embedder, k_leaves=6, min_root_mids=1)
    first = c.plan(g, NOW)
    assert first.new_mids and first.trims and first.promotions
    apply_plan(g, first, registry, c.config)
    second = c.plan(g, NOW)
    assert second.is_empty(), second.describe()
    assert apply_plan(g, second, registry, c.config).is_empty()


def test_plan_round_trips_through_json_and_reads_well(registry, embedder, judge) -> None:
    g = build_graph("u", planted_leaves(3, 8, T0, seed=1), registry, embedder=embedder)
    plan = consolidator(registry, judge, embedder).plan(g, NOW, base_version=7)
    again = ConsolidationPlan.from_json(plan.to_json())
    assert again == plan and again.base_version == 7
    text = plan.describe()
    assert "new patterns" in text and "mentions" in text
    with pytest.raises(AttributeError):
        plan.now = NOW  # type: ignore[misc]


def test_plan_never_mutates_the_graph_and_a_changed_graph_refuses_it(registry, embedder, judge) -> None:
    g = build_graph("u", planted_leaves(2, 8, T0, seed=2), registry, embedder=embedder)
    before = g.copy()
    plan = consolidator(registry, judge, embedder).plan(g, NOW)
    assert g.same_as(before)
    g.remove_node(next(iter(g.nodes(Level.LEAF))).id)
    with pytest.raises(StaleStateError):
        apply_plan(g, plan, registry, ConsolidationConfig())


def test_growth_bounds_prune_delete_and_cap(registry, embedder, judge) -> None:
    # One stale orphan that nothing later corroborates (an old mention of a current
    # pattern would join it: a pass offers orphans to clustering before they go stale).
    old = [type(x)(x.content, "event", x.at, x.session_id, -1)
           for x in noise_leaves(1, T0 - timedelta(days=500), seed=3)]
    leaves = old + planted_leaves(2, 30, T0, seed=3)
    g = build_graph("u", leaves, registry, embedder=embedder)
    c = consolidator(registry, judge, embedder, k_leaves=10)
    plan = c.plan(g, NOW)
    apply_plan(g, plan, registry, c.config)
    assert [d.node_id for d in plan.deletions] == [n.id for n in build_graph("u", leaves, registry, embedder=embedder)
                                                   .nodes(Level.LEAF)][:1]
    for mid in g.nodes(Level.MID):
        assert len(g.children(mid.id)) <= 10 and mid.n_support >= 28  # counts survive the cap
    # a root that decays below θ_prune is pruned; its mids survive, loose
    much_later = NOW + timedelta(days=365 * 30)
    prune_cfg = dict(theta_prune=0.6, t_orphan_days=365 * 40)
    plan2 = consolidator(registry, judge, embedder, **prune_cfg).plan(g, much_later)
    if any(r.schema_type == "personality" for r in g.nodes(Level.ROOT)):
        assert plan2.prunes
    mids_before = {m.id for m in g.nodes(Level.MID)}
    apply_plan(g, plan2, registry, ConsolidationConfig(**prune_cfg))
    assert {m.id for m in g.nodes(Level.MID)} == mids_before


def test_near_duplicate_mids_are_merged_with_their_counts(registry, embedder, judge) -> None:
    g = build_graph("u", planted_leaves(1, 12, T0, seed=5), registry, embedder=embedder)
    c = consolidator(registry, judge, embedder)
    apply_plan(g, c.plan(g, NOW), registry, c.config)
    (mid,) = list(g.nodes(Level.MID))
    # a second, near-identical pattern formed later (as if from a separate pass)
    g2 = build_graph("u", planted_leaves(1, 12, T0 + timedelta(days=1), seed=6), registry, embedder=embedder)
    for leaf in g2.nodes(Level.LEAF):
        g.add_node(leaf.copy())
    plan = consolidator(registry, judge, embedder, merge_similarity=0.9).plan(g, NOW)
    assert plan.merges and plan.merges[0].keeper_id == mid.id
    (second,) = plan.new_mids
    before = mid.n_support
    apply_plan(g, plan, registry, ConsolidationConfig(merge_similarity=0.9))
    assert [m.id for m in g.nodes(Level.MID)] == [mid.id]
    want = before + len(second.member_ids)
    assert g.node(mid.id).n_support == want and len(g.children(mid.id)) == want


# Two passes over one liking, told in other words each time (our own lines).
_BREAD_FIRST = ("I love baking sourdough bread on Sunday mornings.",
                "Baking bread at home is one of my favourite things.",
                "I really enjoy baking rye loaves for my neighbours.")
_BREAD_LATER = ("I love baking banana bread when it rains outside.",
                "Baking flatbread for dinner parties is something I really enjoy.",
                "I adore baking soda bread with my kids.")
_BUNS_LATER = ("I love baking cinnamon buns when it rains.",
               "Baking cakes for birthdays is something I really enjoy.",
               "I adore baking little lemon tarts.")


def _two_passes(first, later, registry, embedder, judge):
    def leaves(lines, day, session):
        return [SyntheticLeaf(x, "preference", T0 + timedelta(days=day + i), session, 0)
                for i, x in enumerate(lines)]

    g = build_graph("u", leaves(first, 0, "s0"), registry, embedder=embedder)
    c = consolidator(registry, judge, embedder)
    apply_plan(g, c.plan(g, T0 + timedelta(days=5)), registry, c.config)
    (mid,) = list(g.nodes(Level.MID))
    for leaf in build_graph("u", leaves(later, 30, "s1"), registry, embedder=embedder).nodes(Level.LEAF):
        g.add_node(leaf.copy())
    plan = c.plan(g, T0 + timedelta(days=40))
    apply_plan(g, plan, registry, c.config)
    g.check()
    return g, mid, plan, c.config


def test_a_claim_formed_again_in_a_later_pass_joins_the_first_pattern(registry, embedder, judge) -> None:
    g, mid, plan, cfg = _two_passes(_BREAD_FIRST, _BREAD_LATER, registry, embedder, judge)
    # The second pass formed the same claim from other words: one pattern, not two lines
    # reading "Enjoys baking bread", although the two are further apart than a near-duplicate.
    (merge,) = plan.merges
    assert merge.keeper_id == mid.id and merge.similarity < cfg.merge_similarity
    (kept,) = list(g.nodes(Level.MID))
    assert kept.id == mid.id and kept.content.startswith("Enjoys baking bread (6 mentions")
    assert kept.n_support == 6 and len(g.children(mid.id)) == 6


def test_patterns_with_claims_of_their_own_stay_apart(registry, embedder, judge) -> None:
    g, mid, plan, _ = _two_passes(_BREAD_FIRST, _BUNS_LATER, registry, embedder, judge)
    assert not plan.merges
    assert sorted(m.content.split(" (")[0] for m in g.nodes(Level.MID)) == ["Enjoys baking", "Enjoys baking bread"]


def test_the_same_claim_merges_only_where_the_union_could_form_a_pattern(registry, judge) -> None:
    # Two patterns without leaves (the summary stays as it is), centroids at cosine 0.5:
    # far from a near-duplicate, so only the claim rule can merge them.
    w, u = np.zeros(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    w[:2], u[1:3] = 1.0, 1.0

    def merges(second_claim: str, formable) -> int:
        g = MemoryGraph("u")
        for nid, vec, claim in (("m1", w, "Enjoys baking bread"), ("m2", u, second_claim)):
            g.add_node(Node(id=nid, user_id="u", level=Level.MID, schema_type="preference",
                            content=f"{claim} (3 mentions, Mar 2024)", t_first=T0, t_last=T0, logit=1.0,
                            attributes={"cohesion": 0.6, "stance": "positive"}, n_support=3,
                            embedding=unit(vec)))
        return len(merge_mids(g, registry, judge, 0.92, 4.0, formable=formable)[0])

    assert merges("Enjoys baking bread", lambda n, coh: True) == 1
    # The union (cohesion 0.46, from the two centroids, sizes and cohesions) under a
    # higher floor: apart.
    assert merges("Enjoys baking bread", lambda n, coh: coh >= 0.5) == 0
    assert merges("Enjoys baking bread", None) == 0
    assert merges("Enjoys baking", lambda n, coh: True) == 0


# -- end to end through PersonaTree on SQLite -----------------------------------------------


@pytest.fixture()
def tree(db_path, embedder):
    t = PersonaTree.open(db_path, embedder=embedder, clock=FixedClock(NOW))
    yield t
    t.close()


def feed(tree: PersonaTree, user: str, seed: int) -> int:
    leaves = planted_leaves(3, 8, T0, seed=seed)
    items = [{"messages": [{"role": "user", "content": s.content}], "at": s.at, "session_id": s.session_id}
             for s in leaves]
    tree.observe_many(user, items)
    return len(items)


def test_tree_consolidation_is_idempotent_and_rebuild_replays_it(tree) -> None:
    n = feed(tree, "ana", seed=11)
    first = tree.consolidate("ana")
    assert first.new_mids, first.describe()
    version = tree.store.version("ana")
    second = tree.consolidate("ana")
    assert second.is_empty() and tree.store.version("ana") == version
    kinds = [e.kind for e in tree.store.events("ana")]
    assert kinds.count("consolidate") == 1
    assert tree.rebuild("ana").equal
    assert len(tree.store.observations("ana")) == n


def test_a_plan_made_before_a_concurrent_observe_is_applied_around_the_new_leaf(tree) -> None:
    feed(tree, "ana", seed=12)
    plan = consolidate_user(tree, "ana", dry_run=True)
    assert not plan.is_empty() and plan.base_states
    rep = tree.observe("ana", "I bought a new kettle today.", at=NOW, session_id="late")
    new_leaf = rep.decisions[0].leaf_id
    moved = tree.store.version("ana")
    apply_user_plan(tree, plan)
    g = tree.graph("ana")
    g.check()
    assert g.parent(new_leaf) is None  # the writer's leaf is not swept into the old plan
    assert {m.id for m in plan.new_mids} <= {n.id for n in g.nodes(Level.MID)}
    event = [e for e in tree.store.events("ana") if e.kind == "consolidate"][-1]
    assert event.payload["rebased_from"] == plan.base_version and event.payload["dropped_parts"] == 0
    assert tree.store.version("ana") == moved + 1
    # the recorded diff replays the pass exactly as it was applied
    assert tree.rebuild("ana").equal


def test_a_plan_made_without_node_states_is_refused_after_a_concurrent_write(tree) -> None:
    feed(tree, "ana", seed=12)
    plan = consolidate_user(tree, "ana", dry_run=True)
    bare = ConsolidationPlan.from_dict({**plan.to_dict(), "base_states": []})
    tree.observe("ana", "I bought a new kettle today.", at=NOW, session_id="late")
    before = (tree.store.version("ana"), tree.graph("ana"))
    with pytest.raises(StaleStateError):
        apply_user_plan(tree, bare)
    assert tree.store.version("ana") == before[0] and tree.graph("ana").same_as(before[1])
    assert not any(e.kind == "consolidate" for e in tree.store.events("ana"))
    # planning again on the new tree works
    assert not tree.consolidate("ana").is_empty()


def test_a_concurrent_write_drops_only_the_part_of_the_plan_it_touched(tree) -> None:
    from personatree.consolidate.rebase import plan_parts

    feed(tree, "ana", seed=12)
    plan = consolidate_user(tree, "ana", dry_run=True)
    parts = [p for p in plan_parts(plan) if any(m.id in p for m in plan.new_mids)]
    assert len(parts) >= 2, plan.describe()
    # Another writer forgets one leaf the first cluster would have taken.
    victim_mid = next(m for m in plan.new_mids if m.id in parts[0])
    tree.forget("ana", victim_mid.member_ids[0])
    applied, _ = apply_rebased(tree, plan)
    assert applied.dropped_parts == 1 and applied.rebased_from == plan.base_version
    g = tree.graph("ana")
    g.check()
    assert victim_mid.id not in g and victim_mid.member_ids[0] not in g  # not re-created by the plan
    assert all(g.parent(x) is None for x in victim_mid.member_ids[1:])  # left for the next pass
    kept = [m for m in plan.new_mids if m.id not in parts[0]]
    assert kept and all(m.id in g and set(g.children(m.id)) == set(m.member_ids) for m in kept)
    # the next pass picks up what was left
    again = tree.consolidate("ana")
    assert again.rebased_from is None and any(set(m.member_ids) <= set(victim_mid.member_ids) for m in again.new_mids)
    tree.graph("ana").check()


def test_a_plan_whose_every_part_was_touched_is_refused_whole(tree) -> None:
    feed(tree, "ana", seed=12)
    plan = consolidate_user(tree, "ana", dry_run=True)
    for m in plan.new_mids:
        tree.forget("ana", m.member_ids[0])
    before = (tree.store.version("ana"), tree.graph("ana"))
    with pytest.raises(StaleStateError, match="every part"):
        apply_user_plan(tree, plan)
    assert tree.store.version("ana") == before[0] and tree.graph("ana").same_as(before[1])


def test_support_edges_go_leaf_to_mid_and_mid_to_root(tree) -> None:
    feed(tree, "bo", seed=13)
    tree.consolidate("bo")
    g = tree.graph("bo")
    g.check()
    for e in g.edges(EdgeKind.SUPPORT):
        assert g.node(e.src).level.rank + 1 == g.node(e.dst).level.rank
