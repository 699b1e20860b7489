"""MemoryGraph enforces the tree invariants on every mutation."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from personatree.errors import InvariantError, UnknownNodeError
from personatree.graph import MemoryGraph
from personatree.types import Edge, EdgeKind, Level, Node

from .conftest import T0


def mk(nid: str, level: Level, user: str = "u", vec: bool = True) -> Node:
    emb = None
    if vec:
        rng = np.random.default_rng(abs(hash(nid)) % 2**32)
        v = rng.normal(size=8).astype(np.float32)
        emb = v / np.linalg.norm(v)
    return Node(nid, user, level, "preference", nid, {}, T0, T0, 0.0, embedding=emb)


def edge(src: str, dst: str, kind: EdgeKind = EdgeKind.SUPPORT) -> Edge:
    return Edge(src, dst, kind, 0.5 if kind is EdgeKind.SUPPORT else -0.5, 0.3, "test", T0)


@pytest.fixture()
def g() -> MemoryGraph:
    g = MemoryGraph("u")
    for nid, lv in [("l1", Level.LEAF), ("l2", Level.LEAF), ("m1", Level.MID), ("m2", Level.MID), ("r1", Level.ROOT)]:
        g.add_node(mk(nid, lv))
    return g


def test_support_levels(g: MemoryGraph) -> None:
    g.add_edge(edge("l1", "m1"))
    g.add_edge(edge("m1", "r1"))
    assert g.support_path("l1") == ["l1", "m1", "r1"]
    assert g.subtree("r1") == ["r1", "m1", "l1"]
    for bad in [("l2", "r1"), ("m2", "l1"), ("r1", "m2"), ("l2", "l1")]:
        with pytest.raises(InvariantError):
            g.add_edge(edge(*bad))
    g.check()


def test_single_support_parent(g: MemoryGraph) -> None:
    g.add_edge(edge("l1", "m1"))
    with pytest.raises(InvariantError, match="already supports"):
        g.add_edge(edge("l1", "m2"))
    # conflicts may be many, and coexist with a support parent
    g.add_edge(edge("l1", "m2", EdgeKind.CONFLICT))
    g.add_edge(edge("l2", "m1", EdgeKind.CONFLICT))
    assert g.conflicts_of("m1") == ["l2"]
    assert [n.id for n in g.orphans()] == ["l2"]


def test_conflicts_only_leaf_to_mid(g: MemoryGraph) -> None:
    with pytest.raises(InvariantError):
        g.add_edge(edge("m1", "r1", EdgeKind.CONFLICT))


def test_other_user_and_duplicates_rejected(g: MemoryGraph) -> None:
    with pytest.raises(InvariantError):
        g.add_node(mk("x", Level.LEAF, user="someone-else"))
    with pytest.raises(InvariantError):
        g.add_node(mk("l1", Level.LEAF))
    with pytest.raises(UnknownNodeError):
        g.add_edge(edge("nope", "m1"))


def test_remove_node_orphans_children_and_updates_index(g: MemoryGraph) -> None:
    g.add_edge(edge("l1", "m1"))
    assert "m1" in g.index(Level.MID)
    removed = g.remove_node("m1")
    assert [(e.src, e.dst) for e in removed] == [("l1", "m1")]
    assert g.parent("l1") is None and "m1" not in g.index(Level.MID)
    g.check()


def test_copy_is_independent(g: MemoryGraph) -> None:
    g.add_edge(edge("l1", "m1"))
    c = g.copy()
    assert c.same_as(g)
    c.node("m1").logit = 2.0
    assert g.node("m1").logit == 0.0 and not c.same_as(g)


def test_a_dropped_graph_is_freed_by_reference_counting() -> None:
    g = MemoryGraph("u")
    for nid, lv in [("l1", Level.LEAF), ("m1", Level.MID), ("r1", Level.ROOT)]:
        g.add_node(mk(nid, lv))
    g.add_edge(edge("l1", "m1"))
    g.add_edge(edge("m1", "r1"))
    # Every read that networkx answers with a view of the graph, on the graph itself.
    list(g.edges()), g.parent("l1"), g.children("m1"), g.conflicts_of("m1"), g.subtree("r1")
    inner = g._g
    list(inner.edges), list(inner.in_edges("m1")), list(inner.out_edges("m1")), dict(inner.degree)
    dict(inner.in_degree), dict(inner.out_degree)
    ref = weakref.ref(inner)
    del inner
    gc.disable()  # nothing but reference counting may free it
    try:
        del g
        assert ref() is None
    finally:
        gc.enable()


ops = st.lists(
    st.tuples(st.sampled_from(["add", "edge", "conflict", "remove"]), st.integers(0, 11), st.integers(0, 11)),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_random_mutations_keep_invariants(seq) -> None:
    levels = [Level.LEAF] * 6 + [Level.MID] * 4 + [Level.ROOT] * 2
    g = MemoryGraph("u")
    for op, a, b in seq:
        try:
            if op == "add":
                g.add_node(mk(f"n{a}", levels[a]))
            elif op == "edge":
                g.add_edge(edge(f"n{a}", f"n{b}"))
            elif op == "conflict":
                g.add_edge(edge(f"n{a}", f"n{b}", EdgeKind.CONFLICT))
            else:
                g.remove_node(f"n{a}")
        except (InvariantError, UnknownNodeError):
            pass
        g.check()
        for n in g.nodes():
            path = g.support_path(n.id)
            assert [g.node(x).level.rank for x in path] == sorted(g.node(x).level.rank for x in path)


edge_lists = st.lists(
    st.tuples(st.sampled_from([EdgeKind.SUPPORT, EdgeKind.CONFLICT]), st.integers(0, 11), st.integers(0, 11)),
    max_size=40,
)


def _built_one_by_one(nodes: list[Node], edges: list[Edge]) -> MemoryGraph | str:
    g = MemoryGraph("u")
    try:
        for n in nodes:
            g.add_node(n)
        for e in edges:
            g.add_edge(e)
    except (InvariantError, UnknownNodeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return g


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 13), max_size=14), edge_lists)
def test_a_graph_built_in_bulk_is_the_graph_built_one_by_one(picks: list[int], pairs) -> None:
    levels = [Level.LEAF] * 6 + [Level.MID] * 4 + [Level.ROOT] * 2 + [Level.LEAF] * 2
    # Ids 12 and 13 repeat ids 0 and 1 (a duplicate), and 11 has no embedding.
    nodes = [mk(f"n{p % 12}", levels[p], vec=p != 11) for p in picks]
    edges = [edge(f"n{a}", f"n{b}", kind) for kind, a, b in pairs]
    want = _built_one_by_one(nodes, edges)
    try:
        got: MemoryGraph | str = MemoryGraph.from_parts("u", nodes, edges)
    except (InvariantError, UnknownNodeError) as exc:
        got = f"{type(exc).__name__}: {exc}"
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert got.same_as(want)
    assert [n.id for n in got.nodes()] == [n.id for n in want.nodes()]
    assert [(e.src, e.dst) for e in got.edges()] == [(e.src, e.dst) for e in want.edges()]
    for lv in Level:
        assert got.index(lv).ids == want.index(lv).ids
        assert got.index(lv).matrix.tobytes() == want.index(lv).matrix.tobytes()
    got.check()
    got.add_node(mk("extra", Level.LEAF))  # the bulk-filled index still grows
    assert got.index(Level.LEAF).ids[-1] == "extra"


def test_a_tree_loaded_in_bulk_finds_repeated_statements_as_one_built_node_by_node() -> None:
    from dataclasses import replace

    from personatree.types import Provenance

    def said(nid: str, text: str, session: str) -> Node:
        return replace(mk(nid, Level.LEAF), content=text,
                       provenance=(Provenance(f"o-{nid}", 0, 0, T0, session),))

    leaves = [said("a", "I love tea.", "s1"), said("b", "i  love TEA", "s1"), said("c", "I love tea", "s2"),
              said("d", "We moved to Braga!", "s1")]
    bulk = MemoryGraph.from_parts("u", leaves, [])
    one = MemoryGraph("u")
    for n in leaves:
        one.add_node(n)
    asks = [("s1", "I love tea"), ("s2", "i love tea."), ("s1", "we moved to braga"), ("s3", "I love tea")]

    def found(g: MemoryGraph) -> list[str | None]:
        return [g.find_statement(s, t) for s, t in asks]

    assert found(bulk) == found(one) == ["a", "c", "d", None]
    # Changes before the first lookup, then after it: the two stay alike.
    fresh = MemoryGraph.from_parts("u", leaves, [])
    for g in (fresh, one, bulk):
        g.remove_node("a")
        g.add_node(said("e", "I LOVE tea", "s1"))
    assert found(fresh) == found(one) == found(bulk)
