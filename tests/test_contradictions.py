"""Contradictions never delete: a conflict lowers confidence, is kept as evidence, and
``explain`` shows both sides.

The first tests use the real packaged embedder and offline judge on a real SQLite file
(a mid is seeded, standing in for consolidation). The property test scripts the
validator's ψ (the Judge port, a ``ScriptedJudge`` over the hashing embedder) to reach
every mix of support and conflict.
"""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree import FixedClock, PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.schema import SchemaRegistry
from personatree.store import MemoryStore
from personatree.types import EdgeKind, Level

from .conftest import ScriptedJudge
from .helpers import T0, Parts, open_tree, seed_mid

NOW = T0 + timedelta(days=30)


@pytest.fixture()
def tree(tmp_path: Path, parts: Parts) -> PersonaTree:
    t = open_tree(tmp_path / "c.db", parts, NOW)
    seed_mid(t, "ana", "md_spicy", "Ana loves spicy food")
    yield t
    t.close()


SUPPORT = "I really love spicy food, the hotter the better."
CONFLICT = "I hate spicy food, it makes me sick."


def test_conflict_lowers_confidence_and_is_kept(tree: PersonaTree) -> None:
    sup = tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1))
    assert sup.decisions[0].action == "attach"
    before = tree.confidence("ana", "md_spicy", at=NOW)
    n_before = tree.node("ana", "md_spicy")
    rep = tree.observe("ana", CONFLICT, at=T0 + timedelta(days=2))
    assert [d.action for d in rep.decisions] == ["conflict"]
    assert rep.decisions[0].target == "md_spicy"
    after = tree.confidence("ana", "md_spicy", at=NOW)
    assert after < before
    mid = tree.node("ana", "md_spicy")
    assert mid.n_conflict == n_before.n_conflict + 1 and mid.n_support == n_before.n_support
    # Kept: the contradicting leaf, its conflict edge, the supporting leaf and both observations.
    g = tree.graph("ana")
    leaf = rep.decisions[0].leaf_id
    edge = g.edge(leaf, "md_spicy")
    assert edge is not None and edge.kind is EdgeKind.CONFLICT and edge.psi < 0 and edge.reason
    assert sup.decisions[0].leaf_id in g and leaf in g
    assert g.parent(sup.decisions[0].leaf_id) == "md_spicy"
    assert tree.store.counts("ana")["observations"] == 2
    g.check()


def test_explain_shows_both_sides(tree: PersonaTree) -> None:
    tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1))
    tree.observe("ana", CONFLICT, at=T0 + timedelta(days=2))
    ex = tree.explain("ana", "md_spicy")
    assert [s.content for s in ex.support] == [SUPPORT]
    assert [s.content for s in ex.conflicts] == [CONFLICT]
    assert ex.conflicts[0].edge_psi is not None and ex.conflicts[0].edge_psi < 0
    verbatim = {m.content for o in ex.observations for m in o.messages}
    assert {SUPPORT, CONFLICT} <= verbatim
    text = ex.render()
    assert "supported by:" in text and "contradicted by:" in text
    # The contradiction is newer than the support: the pattern has changed, so the
    # current state leads, and the contradiction is listed before the support.
    assert text.startswith("[mid:preference] now:")
    against, support = text.index("contradicted by:"), text.index("supported by:")
    assert against < text.index(CONFLICT, against) < support < text.index(SUPPORT, support)
    # The export (the transparency view) carries the conflict too.
    exported = tree.export("ana")
    assert any(e["kind"] == "conflict" and e["dst"] == "md_spicy" for e in exported["edges"])


def test_many_conflicts_never_delete(tree: PersonaTree) -> None:
    tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1))
    lines = [CONFLICT, "I can't stand spicy dishes anymore.", "Spicy food is awful, I avoid it.",
             "I no longer eat anything spicy.", "I hate chili peppers."]
    for i, text in enumerate(lines * 2):
        tree.observe("ana", text, at=T0 + timedelta(days=2 + i), session_id=f"s{i}")
    g = tree.graph("ana")
    mid = g.node("md_spicy")
    conflicts = list(g.conflicts_of("md_spicy"))
    assert mid.n_conflict == len(conflicts) >= 5
    assert abs(mid.logit) <= tree.config.confidence.clip
    assert 0.0 < tree.confidence("ana", "md_spicy", at=NOW) < 0.5
    # Nothing was deleted: every observation's leaves are still there.
    cited = {p.observation_id for n in g.nodes(Level.LEAF) for p in n.provenance}
    assert cited == {o.id for o in tree.store.observations("ana")}
    assert not [e for e in tree.store.events("ana") if e.kind == "forget"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(psis=st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=15))
def test_property_evidence_only_accumulates(hashing: Any, registry: SchemaRegistry, psis: list[float]) -> None:
    """For any sequence of validator scores: nodes and edges only accumulate, each
    conflict lowers the logit (unless already at the floor), confidence stays in (0, 1),
    and the conflict count equals the kept conflict edges."""
    judge = ScriptedJudge(hashing)
    cfg = PersonaTreeConfig()
    tree = PersonaTree(MemoryStore(), config=cfg, registry=registry, embedder=hashing, judge=judge,
                       clock=FixedClock(NOW))
    seed_mid(tree, "u", "md", "I like spicy food")
    nodes, edges = 1, 0
    for i, psi in enumerate(psis):
        judge.default_psi = psi
        before = tree.node("u", "md")
        rep = tree.observe("u", f"preference: I like spicy food {i}", at=T0 + timedelta(minutes=i),
                           session_id="s")
        assert judge.calls, "the mid must be offered as a candidate"
        g = tree.graph("u")
        mid = g.node("md")
        assert len(g) == nodes + 1
        n_edges = sum(1 for _ in g.edges())
        assert n_edges >= edges
        nodes, edges = len(g), n_edges
        if psi <= -cfg.insertion.theta_conflict:
            assert rep.decisions[0].action == "conflict"
            assert mid.logit < before.logit or math.isclose(before.logit, -cfg.confidence.clip)
        assert mid.n_conflict == sum(1 for _ in g.conflicts_of("md"))
        assert mid.n_support == 1 + len(g.children("md"))
        assert 0.0 < tree.confidence("u", "md", at=NOW) < 1.0
        g.check()
