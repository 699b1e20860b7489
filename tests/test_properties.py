"""Property tests over random sequences of observe / forget / consolidate / rebuild."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree import FixedClock, HashingEmbedder, PersonaTree
from personatree.confidence import decayed_logit
from personatree.render import node_confidence

from .conftest import T0

POOL = [
    "I love hiking in the mountains.",
    "I really enjoy hiking on weekends.",
    "Hiking is my favourite thing to do.",
    "I stopped hiking after my knee injury.",
    "I don't like hiking anymore.",
    "I'm allergic to peanuts.",
    "I go for a run every morning.",
    "I usually run before work.",
    "My sister Lena lives in Berlin.",
    "Work has been really stressful lately.",
    "I prefer quiet hotels.",
    "I want to run a half marathon next year.",
]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("observe"), st.lists(st.sampled_from(POOL), min_size=1, max_size=3), st.integers(0, 60)),
        st.tuples(st.just("forget"), st.integers(0, 1000), st.booleans()),
        st.tuples(st.just("consolidate"), st.integers(0, 60), st.just(0)),
        st.tuples(st.just("rebuild"), st.just(0), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)

EMB = HashingEmbedder(128)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_random_sequences_keep_invariants_and_rebuild_reproduces(seq) -> None:
    clock = FixedClock(T0)
    with tempfile.TemporaryDirectory() as tmp:
        tree = PersonaTree.open(Path(tmp) / "m.db", embedder=EMB, clock=clock)
        try:
            day = 0
            for op, a, b in seq:
                if op == "observe":
                    day += int(b) % 7 + 1
                    clock.set(T0 + timedelta(days=day))
                    tree.observe("u", [{"role": "user", "content": " ".join(a)}])
                elif op == "forget" and tree.users():
                    nodes = sorted(n.id for n in tree.nodes("u"))
                    if nodes:
                        tree.forget("u", nodes[a % len(nodes)], cascade=b)
                elif op == "consolidate" and tree.users():
                    tree.consolidate("u", now=clock.now())
                elif op == "rebuild" and tree.users():
                    assert tree.rebuild("u").equal
                if tree.users():
                    g = tree.graph("u")
                    g.check()
                    for n in g.nodes():
                        assert 0.0 < node_confidence(n, tree.registry, clock.now()) < 1.0
            if tree.users():
                assert tree.rebuild("u").equal
                assert tree.rebuild("u").equal
        finally:
            tree.close()


@settings(max_examples=60, deadline=None)
@given(st.floats(-6, 6), st.sampled_from(["state", "preference", "fact", "event"]),
       st.integers(0, 400), st.integers(0, 400))
def test_node_confidence_decays_monotonically_toward_prior(logit, stype, d1, d2) -> None:
    from personatree.schema import SchemaRegistry

    reg = SchemaRegistry.load()
    st_ = reg[stype]
    a, b = sorted((d1, d2))
    la = decayed_logit(logit, st_.prior_logit, st_.half_life_days, a)
    lb = decayed_logit(logit, st_.prior_logit, st_.half_life_days, b)
    assert abs(lb - st_.prior_logit) <= abs(la - st_.prior_logit) + 1e-12
