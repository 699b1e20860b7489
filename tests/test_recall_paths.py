"""Recall over trees built directly: the budget, no repeats, real support paths, routing.

Property test (hypothesis) over random trees, queries and budgets, with the real
packaged embedder (sentences embedded once per module) and the real tokenizer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree.config import RecallConfig
from personatree.graph import MemoryGraph
from personatree.retrieval.engine import recall_state
from personatree.ports import TokenCounter
from personatree.retrieval.render import CLAIMS_HEADER, EVIDENCE_HEADER
from personatree.retrieval.result import Recall
from personatree.retrieval.router import default_router
from personatree.retrieval.state import RetrievalState
from personatree.retrieval.tokens import shared_counter
from personatree.types import Edge, EdgeKind, Level, Node, Provenance, Route

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
DATE_LINE = re.compile(r"^\d{4}-\d{2}-\d{2}:$")
NOW = T0 + timedelta(days=200)

LEAVES = [
    "I went hiking at Mount Tam with my sister Anna.",
    "Hiking in the mountains makes me feel alive.",
    "We hiked the Dipsea trail on Saturday.",
    "I started a pottery class on Tuesday.",
    "My dog Max is a golden retriever.",
    "I'm allergic to peanuts.",
    "I ran the Berlin marathon in 3:41.",
    "Running every morning clears my head.",
    "I skipped my run because my knee hurt.",
    "My mom called me from Lisbon.",
    "I cooked spicy Thai curry for my friends.",
    "Crowded trains make me anxious.",
    "I've been sleeping badly since the move.",
    "I volunteered at the animal shelter on Sunday.",
    "I finished reading Dune on the plane.",
    "My boss praised the quarterly report.",
    "I want to learn Portuguese this year.",
    "We adopted a kitten named Luna in May.",
    "I prefer tea over coffee in the evening.",
    "Corinne went to the NAMI support group yesterday.",
]
MIDS = [
    ("preference", "Loves hiking (3 mentions, Jan–Mar 2024)"),
    ("routine", "Runs most mornings (4 mentions)"),
    ("relationship", "Close to family in Lisbon"),
    ("state", "Stressed and sleeping badly lately"),
    ("goal", "Wants to learn languages"),
]
ROOTS = [
    ("personality", "Is an outdoorsy, active person"),
    ("value", "Family matters most to them"),
    ("boundary", "Has a peanut allergy"),
]
QUERIES = [
    "When did I go hiking with Anna?",
    "What kind of person am I?",
    "How often do I run?",
    "What's my dog's name?",
    "What matters most to me?",
    "Have I been stressed lately?",
    "Would I enjoy a trip to the Alps?",
    "Where does my mom live?",
    "Do I have any allergies?",
]


class Vectors(dict):
    """Embeddings by text, with a short repr (hypothesis prints fixture arguments)."""

    def __repr__(self) -> str:
        return f"<{len(self)} vectors>"


@pytest.fixture(scope="module")
def vectors(embedder) -> Vectors:
    texts = LEAVES + [m[1] for m in MIDS] + [r[1] for r in ROOTS] + QUERIES
    return Vectors(zip(texts, embedder.embed(texts)))


@pytest.fixture(scope="module")
def router(embedder):
    return default_router(embedder)


@pytest.fixture(scope="module")
def counter():
    return shared_counter("gpt-4o-mini")


def build(
    vectors: dict[str, np.ndarray],
    leaf_parent: list[int | None],
    mid_parent: list[int | None],
    n_roots: int,
    seed: int = 0,
    turns: int = 3,
) -> MemoryGraph:
    """A tree with len(leaf_parent) leaves (parent index or None) over len(mid_parent) mids."""
    rng = np.random.default_rng(seed)
    g = MemoryGraph("u")
    for i in range(n_roots):
        t, c = ROOTS[i % len(ROOTS)]
        g.add_node(
            Node(
                f"r{i}",
                "u",
                Level.ROOT,
                t,
                c,
                {},
                T0,
                T0 + timedelta(days=30 * i + 1),
                float(rng.uniform(-1, 3)),
                n_support=2,
                embedding=vectors[c],
            )
        )
    for i, p in enumerate(mid_parent):
        t, c = MIDS[i % len(MIDS)]
        g.add_node(
            Node(
                f"m{i}",
                "u",
                Level.MID,
                t,
                c,
                {},
                T0,
                T0 + timedelta(days=10 * i),
                float(rng.uniform(-1, 3)),
                n_support=3,
                n_conflict=i % 2,
                embedding=vectors[c],
            )
        )
        if p is not None and n_roots:
            g.add_edge(Edge(f"m{i}", f"r{p % n_roots}", EdgeKind.SUPPORT, 0.8, 0.5, "", T0))
    for i, p in enumerate(leaf_parent):
        c = LEAVES[i % len(LEAVES)]
        at = T0 + timedelta(days=int(rng.integers(0, 180)))
        prov = (Provenance(f"o{i // turns}", i % turns, 0, at, "s"),)
        g.add_node(
            Node(
                f"l{i}",
                "u",
                Level.LEAF,
                "event",
                c,
                {"speaker": "Sam" if i % 2 else None},
                at,
                at,
                0.4,
                embedding=vectors[c],
                provenance=prov,
            )
        )
        if p is not None and mid_parent:
            g.add_edge(Edge(f"l{i}", f"m{p % len(mid_parent)}", EdgeKind.SUPPORT, 0.8, 0.5, "", at))
    return g


def check_recall(g: MemoryGraph, rec, budget: int, counter, levels=None) -> None:
    assert rec.tokens <= budget
    assert counter.count(rec.text) == rec.tokens
    ids = rec.node_ids
    assert len(ids) == len(set(ids)), "a node was shown twice"
    if levels:
        assert all(i.level in levels for i in rec.items)
    seen: dict[str, int] = {}
    body = [
        ln
        for ln in rec.text.split("\n")
        if ln and ln not in (CLAIMS_HEADER, EVIDENCE_HEADER) and not DATE_LINE.match(ln)
    ]
    assert len(body) == len(rec.items)
    for line, item in zip(body, rec.items):
        assert line.startswith("  " * item.depth + "- ") and not line.startswith(
            "  " * (item.depth + 1)
        )
        if item.parent is None:
            assert item.depth == 0
        else:
            # shown under its real support parent, which was rendered just above its block
            assert g.parent(item.node_id) == item.parent
            assert item.parent in seen and item.depth == seen[item.parent] + 1
        if item.level is not Level.LEAF:
            # a claim shows exactly its real support path below it: every chosen child is nested
            for c in g.children(item.node_id):
                if c in ids:
                    assert next(i for i in rec.items if i.node_id == c).parent == item.node_id
        seen[item.node_id] = item.depth


def recall(
    state: RetrievalState,
    query: str,
    qvec: np.ndarray | None,
    route: Route,
    counter: TokenCounter,
    budget: int,
    levels: tuple[Level, ...] | None = None,
) -> Recall:
    """:func:`recall_state` with this module's fixed settings: no registry, the clock at
    ``NOW`` and the default :class:`RecallConfig`."""
    return recall_state(
        state,
        query,
        qvec,
        route,
        registry=None,
        counter=counter,
        budget=budget,
        now=NOW,
        cfg=RecallConfig(),
        levels=levels,
    )


tree_shapes = st.integers(min_value=0, max_value=5).flatmap(
    lambda n_mids: st.tuples(
        st.lists(st.one_of(st.none(), st.integers(0, 4)), max_size=24),
        st.just([None] * 0)
        if n_mids == 0
        else st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n_mids, max_size=n_mids),
        st.integers(0, 3),
    )
)


@given(
    shape=tree_shapes,
    qi=st.integers(0, len(QUERIES) - 1),
    budget=st.integers(1, 400),
    use_vec=st.booleans(),
    levels=st.sampled_from([None, (Level.LEAF,), (Level.MID, Level.ROOT)]),
    seed=st.integers(0, 5),
)
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_budget_no_repeats_real_paths(
    vectors, router, counter, shape, qi, budget, use_vec, levels, seed
) -> None:
    leaf_parent, mid_parent, n_roots = shape
    g = build(vectors, leaf_parent, mid_parent, n_roots, seed)
    q = QUERIES[qi]
    qvec = vectors[q] if use_vec else None
    route = router.route_vector(q, vectors[q])
    state = RetrievalState(g).refresh(g, 1)
    rec = recall(state, q, qvec, route, counter, budget, levels)
    check_recall(g, rec, budget, counter, levels)


def full_tree(vectors) -> MemoryGraph:
    return build(
        vectors,
        [0, 0, 0, None, None, 4, 1, 1, 1, 2, None, 3, 3, None, None, None, 4, None, None, None],
        [0, 0, 1, 0, None],
        3,
    )


def test_routed_level_shapes_the_context(vectors, router, counter) -> None:
    g = full_tree(vectors)
    state = RetrievalState(g).refresh(g, 1)

    def run(q: str, budget: int = 120):
        rec = recall(state, q, vectors[q], router.route_vector(q, vectors[q]), counter, budget)
        check_recall(g, rec, budget, counter)
        return rec

    fact = run("What's my dog's name?", 40)
    assert fact.route.level is Level.LEAF
    assert fact.items[0].node_id == "l4" and "Max" in fact.text
    insight = run("What kind of person am I?", 60)
    assert insight.route.level is Level.ROOT
    assert insight.items[0].level is Level.ROOT
    assert insight.level_shares()[Level.ROOT] > 0
    # the deepest views come only with budget: a roomy budget shows the path down to evidence
    deep = run("What kind of person am I?", 400)
    assert max(i.depth for i in deep.items) == 2
    assert any(e.action.startswith("chose") for e in deep.trace)


def test_state_refresh_is_incremental_and_matches_a_fresh_build(vectors, router, counter) -> None:
    g = full_tree(vectors)
    state = RetrievalState(g).refresh(g, 1)
    q = "When did I go hiking with Anna?"
    route = router.route_vector(q, vectors[q])
    before = recall(state, q, vectors[q], route, counter, 200)
    assert state.refresh(g, 1) is state and state.version == 1
    g.remove_node("l0")
    g.add_node(
        Node(
            "l99",
            "u",
            Level.LEAF,
            "event",
            "Anna and I went hiking at Mount Tam again.",
            {},
            NOW,
            NOW,
            0.4,
            embedding=vectors[LEAVES[0]],
            provenance=(Provenance("o99", 0, 0, NOW, "s"),),
        )
    )
    state.refresh(g, 2)
    fresh = RetrievalState(g).refresh(g, 2)
    a = recall(state, q, vectors[q], route, counter, 200)
    b = recall(fresh, q, vectors[q], route, counter, 200)
    assert (
        a.text == b.text
        and "l0" in before.node_ids
        and "l0" not in a.node_ids
        and "l99" in a.node_ids
    )


def test_lexical_only_and_empty_cases(vectors, router, counter) -> None:
    g = full_tree(vectors)
    state = RetrievalState(g).refresh(g, 1)
    route = Route(Level.LEAF, {Level.LEAF: 1.0, Level.MID: 0.0, Level.ROOT: 0.0})
    rec = recall(state, "Berlin marathon", None, route, counter, 60)
    assert "Berlin marathon" in rec.text
    empty = MemoryGraph("u")
    empty_state = RetrievalState(empty).refresh(empty, 1)
    rec = recall(empty_state, "anything", vectors[QUERIES[0]], route, counter, 50)
    assert rec.text == "" and rec.tokens == 0 and rec.items == ()
