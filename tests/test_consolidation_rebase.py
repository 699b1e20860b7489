"""Rebasing a consolidation plan onto writes that landed while it was planned (pure parts).

A plan is made on a tree; then a "writer" changes the tree the way ``observe`` and
``forget`` do; :func:`rebase_plan` must keep exactly the parts the writes left valid,
replay the writer's new evidence on a mid the plan rewrites, and drop the rest.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from personatree.config import ConfidenceConfig, ConsolidationConfig, InsertionConfig
from personatree.consolidate import Consolidator, apply_plan
from personatree.consolidate.plan import ConsolidationPlan, PlanDiff
from personatree.consolidate.rebase import base_states, base_written, plan_parts, rebase_plan
from personatree.consolidate.state import graph_diff, graph_digest
from personatree.consolidate.synthetic import build_graph, planted_leaves
from personatree.graph import MemoryGraph
from personatree.insertion import Touched, add_evidence, apply_decision
from personatree.judge import OfflineJudge
from personatree.types import CandidateScore, Edge, EdgeKind, LeafDecision, Level, Node

from .conftest import T0

NOW = T0 + timedelta(days=120)
CONF = ConfidenceConfig()


@pytest.fixture(scope="module")
def consolidated(registry, embedder) -> MemoryGraph:
    """A tree with mids: two planted patterns, consolidated once."""
    g = build_graph("u", planted_leaves(2, 8, T0, seed=5), registry, embedder=embedder)
    c = Consolidator(ConsolidationConfig(), registry, OfflineJudge(embedder, registry), embedder=embedder)
    apply_plan(g, c.plan(g, NOW), registry, c.config)
    assert sum(1 for _ in g.nodes(Level.MID)) == 2
    return g


def _plan(before: MemoryGraph, after: MemoryGraph) -> ConsolidationPlan:
    de, dn, un, ue = graph_diff(before, after)
    plan = ConsolidationPlan(user_id=before.user_id, now=NOW, base_version=1, digest=graph_digest(before),
                             seed=0, method="none", diff=PlanDiff(de, dn, un, ue))
    return replace(plan, base_states=base_states(before, plan), base_written=base_written(before, plan))


def _attach(g: MemoryGraph, mid_id: str, tag: str, registry) -> str:
    """What observe does for a leaf that supports ``mid_id``: a new leaf, an edge, evidence."""
    mid = g.node(mid_id)
    leaf = Node(id=f"lf_new_{tag}", user_id=g.user_id, level=Level.LEAF, schema_type="event",
                content=f"new evidence {tag}", attributes={}, t_first=NOW, t_last=NOW,
                logit=registry["event"].prior_logit, embedding=mid.embedding)
    cand = CandidateScore(mid_id, 0.9, 0.8, 0.8, "support", "test")
    apply_decision(g, leaf, LeafDecision(leaf.id, leaf.content, "event", "attach", mid_id, (cand,)),
                   registry, InsertionConfig(), CONF, Touched())
    return leaf.id


def test_new_evidence_on_a_mid_the_plan_rewrites_is_replayed_on_top(consolidated, registry) -> None:
    s0 = consolidated.copy()
    k, other = sorted(m.id for m in s0.nodes(Level.MID))
    planned = s0.copy()
    planned.node(k).logit += 0.5  # the plan rewrites k (as a merge into it would) ...
    planned.node(k).n_support += 3
    planned.node(other).logit -= 0.25  # ... and, in another part, the other mid
    plan = _plan(s0, planned)
    assert len(plan_parts(plan)) == 2
    s1 = s0.copy()
    leaf = _attach(s1, k, "a", registry)  # a writer adds evidence to k meanwhile
    out = rebase_plan(plan, s1, 2, registry, CONF)
    assert out.dropped_parts == 0 and out.rebased_from == 1 and out.base_version == 2
    written = {s.id: s for s in out.diff.upsert_nodes}
    expect = planned.node(k).copy()
    add_evidence(expect, s1.edge(leaf, k).psi, NOW, registry, CONF)
    assert written[k].n_support == planned.node(k).n_support + 1
    assert written[k].logit == pytest.approx(expect.logit) and written[k].t_last == expect.t_last.isoformat()
    # applied on the current tree: both sides' evidence is there, the writer's leaf stays put
    apply_plan(s1, replace(out, digest=graph_digest(s1)), registry, ConsolidationConfig())
    s1.check()
    assert s1.parent(leaf) == k and s1.node(k).n_support == planned.node(k).n_support + 1


def test_a_forget_under_a_rewritten_mid_drops_its_part_only(consolidated, registry) -> None:
    s0 = consolidated.copy()
    k, other = sorted(m.id for m in s0.nodes(Level.MID))
    planned = s0.copy()
    planned.node(k).logit += 0.5
    planned.node(other).logit -= 0.25
    plan = _plan(s0, planned)
    s1 = s0.copy()
    s1.remove_node(s1.children(k)[0])  # evidence withdrawn: not a replayable change
    s1.node(k).n_support -= 1
    out = rebase_plan(plan, s1, 2, registry, CONF)
    assert out.dropped_parts == 1
    assert [s.id for s in out.diff.upsert_nodes] == [other]


def test_a_leaf_the_plan_clusters_that_gained_a_parent_meanwhile_drops_its_cluster(registry, embedder) -> None:
    g = build_graph("u", planted_leaves(2, 8, T0, seed=6), registry, embedder=embedder)
    c = Consolidator(ConsolidationConfig(), registry, OfflineJudge(embedder, registry), embedder=embedder)
    raw = c.plan(g, NOW)
    plan = replace(raw, base_states=base_states(g, raw), base_written=base_written(g, raw))
    assert len(plan.new_mids) == 2
    s1 = g.copy()
    # Another consolidation pass clustered one of the leaves first.
    first = plan.new_mids[0]
    s1.add_node(Node(id="md_other", user_id="u", level=Level.MID, schema_type=first.schema_type,
                     content="another pass", attributes={}, t_first=NOW, t_last=NOW, logit=0.0))
    s1.add_edge(Edge(first.member_ids[0], "md_other", EdgeKind.SUPPORT, 0.9, 1.0, "other pass", NOW))
    out = rebase_plan(plan, s1, 2, registry, CONF)
    assert out.dropped_parts == 1 and [m.id for m in out.new_mids] == [plan.new_mids[1].id]
    apply_plan(s1, replace(out, digest=graph_digest(s1)), registry, c.config)
    s1.check()
    assert s1.parent(first.member_ids[0]) == "md_other"  # never re-clustered
    assert all(s1.parent(x) is None for x in first.member_ids[1:])


def test_plans_keep_their_base_states_through_json(consolidated, registry) -> None:
    s0 = consolidated.copy()
    planned = s0.copy()
    for m in list(planned.nodes(Level.MID)):
        m.logit += 0.1
    plan = _plan(s0, planned)
    assert plan.base_states and plan.base_written
    assert ConsolidationPlan.from_json(plan.to_json()) == plan
