"""The tree kept in a user's retrieval snapshot: read back exactly, or not used.

A new process whose first read of a user is a recall takes the tree from the
snapshot's columns instead of the node and edge rows. Every check compares that tree
with the one the rows give (node by node, with the recall statistics written since,
in the same order, with the same parent and child orders) and the answers with those
of a process that read the rows.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import personatree.retrieval.prelude as prelude
from personatree.api import PersonaTree
from personatree.graph import MemoryGraph
from personatree.retrieval.snapshot import encode
from personatree.retrieval.snapshot_codec import decode_tree, tree_version, unpack_snapshot
from personatree.retrieval.snapshot_layout import pack, unpack
from personatree.store.codec.records import decode_edge, decode_node, encode_edge, encode_node
from personatree.store.codec.tree_columns import pack_tree, unpack_tree
from personatree.store.sqlite.reads import SQLiteReads
from personatree.types import Edge, EdgeKind, Level, Node, Provenance
from tests.pg_fixtures import drop_schema, fresh_schema_url, pg_server_url  # noqa: F401
from tests.test_retrieval_snapshot import (
    QUERIES, _answers, _items, _open, _refusing, _state, _with_snapshot, _without_snapshot,
)

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)


def _rows_tree(tree: PersonaTree) -> MemoryGraph:
    nodes, edges = tree.store.load_graph("ana")
    return MemoryGraph.from_parts("ana", nodes, edges)


def _same_tree(a: MemoryGraph, b: MemoryGraph) -> None:
    assert [n.id for n in a.nodes()] == [n.id for n in b.nodes()]
    for x, y in zip(a.nodes(), b.nodes()):
        assert x.same_state(y, atol=0.0), x.id
        assert (x.recall_count, x.t_access, x.attributes) == (y.recall_count, y.t_access, y.attributes), x.id
        assert x.embedding is None or (x.embedding.dtype == np.float32 and not x.embedding.flags.writeable)
    for u in b.nx:
        assert list(a.nx.successors(u)) == list(b.nx.successors(u))
        assert list(a.nx.predecessors(u)) == list(b.nx.predecessors(u))
    assert {(e.src, e.dst): e for e in a.edges()} == {(e.src, e.dst): e for e in b.edges()}
    for lv in Level:
        assert a.index(lv).ids == b.index(lv).ids
        assert np.array_equal(a.index(lv).matrix, b.index(lv).matrix)


def _refused(*args: object, **kwargs: object) -> None:
    raise AssertionError("the state was built, not read from its snapshot")


class _Spy:
    """Counts calls of a store method (and can refuse them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: Any, name: str, refuse: bool = False) -> None:
        real = getattr(store, name)
        self.calls = 0

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if refuse:
                raise AssertionError(f"{name} was called")
            return real(*args, **kwargs)

        monkeypatch.setattr(store, name, spy)


def _kept(path: Path) -> None:
    # A consolidated user whose snapshot a recall in a second process built and kept;
    # that process's close flushed its recall statistics (a newer version).
    _with_snapshot(path, 40)


def test_a_restart_takes_the_tree_from_the_snapshot_with_the_statistics_written_since(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    _kept(path)
    reference = _open(_without_snapshot(path, tmp_path / "ref.db"))
    answers = _answers(reference)
    reference.close()
    tree = _open(path)
    rows = _Spy(monkeypatch, tree.store, "load_graph_with_version", refuse=True)
    stats = _Spy(monkeypatch, tree.store, "recall_stats")
    with _refusing(monkeypatch):
        first = tree.recall("ana", "Where does Jonas live?", budget=400)
    assert rows.calls == 0 and stats.calls == 1
    monkeypatch.undo()
    held = tree.engine.trees["ana"].graph
    assert sum(n.recall_count for n in held.nodes()) > 0  # the statistics the close flushed
    _same_tree(held, _rows_tree(tree))
    assert (tuple(first.node_ids), first.text) == answers[0]
    assert _answers(tree)[1:] == answers[1:]
    tree.close()


def test_a_tree_consolidated_session_by_session_comes_back_as_its_rows_give_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Live use: a consolidation after every session moves leaves between patterns,
    # archives some and adds conflicts, so edges are added and removed in many orders.
    path = tmp_path / "m.db"
    tree = _open(path)
    for start in range(0, 48, 8):
        tree.observe_many("ana", _items(start, 8))
        tree.consolidate("ana")
    tree.observe("ana", "I stopped drinking green tea, it keeps me awake.")
    tree.consolidate("ana")
    tree.close()
    tree = _open(path)
    answers = _answers(tree)  # read from the rows, built, and kept
    tree.close()
    tree = _open(path)
    rows = _Spy(monkeypatch, tree.store, "load_graph_with_version", refuse=True)
    first = tree.recall("ana", QUERIES[0], budget=400)
    assert rows.calls == 0
    monkeypatch.undo()
    assert (tuple(first.node_ids), first.text) == answers[0]
    held = tree.engine.trees["ana"].graph
    assert len(list(held.nodes(Level.MID))) > 0
    _same_tree(held, _rows_tree(tree))
    tree.close()


def test_a_snapshot_with_no_statistics_since_reads_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 30))
    tree.consolidate("ana")
    tree.close()
    tree = _open(path)
    _state(tree)  # built and kept without a recall: no statistics to flush
    tree.close()
    tree = _open(path)
    stats = _Spy(monkeypatch, tree.store, "recall_stats", refuse=True)
    rows = _Spy(monkeypatch, tree.store, "load_graph_with_version", refuse=True)
    with _refusing(monkeypatch):
        tree.recall("ana", "What do I drink?", budget=400)
    assert stats.calls == rows.calls == 0
    monkeypatch.undo()
    _same_tree(tree.engine.trees["ana"].graph, _rows_tree(tree))
    tree.close()


def test_a_store_without_recall_stats_reads_the_rows_and_the_snapshot_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    _kept(path)  # counts were flushed after the build: they must be read apart
    reference = _open(_without_snapshot(path, tmp_path / "ref.db"))
    answers = _answers(reference)
    reference.close()
    tree = _open(path)
    monkeypatch.delattr(SQLiteReads, "recall_stats")
    rows = _Spy(monkeypatch, tree.store, "load_graph_with_version")
    snapshots = _Spy(monkeypatch, tree.store, "retrieval_snapshot")
    monkeypatch.setattr(prelude, "state_for", _refused)  # the state still comes from the snapshot
    first = tree.recall("ana", "Where does Jonas live?", budget=400)
    assert rows.calls == 1 and snapshots.calls == 1
    monkeypatch.undo()
    assert (tuple(first.node_ids), first.text) == answers[0]
    tree.close()


def test_after_a_change_the_rows_are_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    _kept(path)
    tree = _open(path)
    tree.observe("ana", "Jonas moved again, to Lisbon this time.")  # deletes the snapshot
    tree.close()
    tree = _open(path)
    rows = _Spy(monkeypatch, tree.store, "load_graph_with_version")
    tree.recall("ana", "Where does Jonas live?", budget=400)
    assert rows.calls == 1
    tree.close()


def _put(path: Path, data: bytes) -> None:
    raw = sqlite3.connect(path)
    raw.execute("UPDATE retrieval_snapshots SET data = ?", (data,))
    raw.commit()
    raw.close()


def test_a_tree_the_snapshot_does_not_describe_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    _kept(path)
    reference = _open(_without_snapshot(path, tmp_path / "ref.db"))
    answers = _answers(reference)
    reference.close()
    raw = sqlite3.connect(path)
    current = bytes(raw.execute("SELECT data FROM retrieval_snapshots").fetchone()[0])
    raw.close()
    doc, arrays = unpack(b"PTS7", current)
    ends = arrays["tree.ends"].copy()
    ends[0, 1] = len(doc["tree"]["ids"])  # an edge to no node
    swapped = arrays["tree.ends"].copy()
    swapped[:, [0, 1]] = swapped[:, [1, 0]]  # every edge reversed: not a tree
    tree_doc = doc["tree"]
    bad = {
        "an edge to no node": pack(b"PTS7", doc, {**arrays, "tree.ends": ends}),
        "edges the other way": pack(b"PTS7", doc, {**arrays, "tree.ends": swapped}),
        "one content too few": pack(b"PTS7", {**doc, "tree": {**tree_doc, "content": tree_doc["content"][1:]}}, arrays),
        "a tree of another user's ids": pack(
            b"PTS7", {**doc, "tree": {**tree_doc, "ids": [f"x{i}" for i in range(len(tree_doc["ids"]))]}}, arrays),
        "no version": pack(b"PTS7", {**doc, "tree": {k: v for k, v in tree_doc.items() if k != "version"}}, arrays),
    }
    for name, data in bad.items():
        _put(path, data)
        tree = _open(path)
        rows = _Spy(monkeypatch, tree.store, "load_graph_with_version")
        snapshots = _Spy(monkeypatch, tree.store, "retrieval_snapshot")
        assert _answers(tree) == answers, name
        assert rows.calls == 1, name
        assert snapshots.calls == 1, name  # read once, for the tree and for the state
        monkeypatch.undo()
        tree.close()


def test_a_postgres_restart_takes_the_tree_from_the_snapshot(
        pg_server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    url = fresh_schema_url(pg_server_url, "snapshot_tree")
    try:
        _with_snapshot(url, 40)  # type: ignore[arg-type]
        from_rows = _open(url)
        with from_rows.engine.lock:
            from_rows.engine.state("ana")  # the tree read from its rows first
        answers = _answers(from_rows)
        from_rows.close()
        tree = _open(url)
        rows = _Spy(monkeypatch, tree.store, "load_graph_with_version", refuse=True)
        stats = _Spy(monkeypatch, tree.store, "recall_stats")
        assert _answers(tree) == answers
        assert rows.calls == 0 and stats.calls == 1
        monkeypatch.undo()
        _same_tree(tree.engine.trees["ana"].graph, _rows_tree(tree))
        tree.close()
    finally:
        drop_schema(url)


# -- the columns ---------------------------------------------------------------------


def _prov(i: int, k: int) -> Provenance:
    return Provenance(f"o{i}", k, k + 1, T0 + timedelta(hours=i, minutes=k), f"s{i % 3}")


def _odd_tree() -> tuple[list[Node], list[Edge]]:
    # Values the rows normalise: a tuple in the attributes, a naive time, no embedding,
    # several provenance entries, an access time on one node only.
    rng = np.random.default_rng(3)

    def vec() -> np.ndarray:
        v = rng.normal(size=8).astype(np.float32)
        return v / np.linalg.norm(v)

    leaves = [
        Node(f"l{i}", "ana", Level.LEAF, "preference", f"I like thing {i}.", {"stance": "positive", "tags": ("a", i)},
             T0 + timedelta(days=i), T0 + timedelta(days=i), 0.5 + i, 1, 0, vec() if i != 2 else None,
             tuple(_prov(i, k) for k in range(1 + i % 3)), recall_count=i % 2,
             t_access=(T0 + timedelta(days=9)).replace(tzinfo=None) if i == 1 else None)
        for i in range(5)
    ]
    mid = Node("m", "ana", Level.MID, "preference", "Likes things", {"n": 1.5}, T0, T0 + timedelta(days=4), 1.25, 4, 1,
               vec())
    root = Node("r", "ana", Level.ROOT, "values", "Values things", {}, T0, T0, 2.0, 1, 0, None)
    at = T0 + timedelta(days=5)
    edges = [Edge(f"l{i}", "m", EdgeKind.SUPPORT, 0.9, 0.9, "same topic", at) for i in (3, 0, 1)]
    edges += [Edge("l4", "m", EdgeKind.CONFLICT, -0.8, -0.8, "opposite stance", at),
              Edge("m", "r", EdgeKind.SUPPORT, 0.7, 0.7, "abstracts", at)]
    return [*leaves, mid, root], edges


def test_columns_read_back_what_the_rows_read_back() -> None:
    nodes, edges = _odd_tree()
    shared_ids = [n.id for n in nodes if n.level is Level.LEAF and n.embedding is not None]
    matrix = np.stack([n.embedding for n in nodes if n.id in shared_ids]).astype(np.float32)
    doc, arrays = pack_tree(nodes, edges, "ana", {x: i for i, x in enumerate(shared_ids)})
    got_nodes, got_edges = unpack_tree(doc, arrays, "ana", matrix)
    want_nodes = [decode_node(encode_node(n, "ana")) for n in nodes]
    assert [n.id for n in got_nodes] == [n.id for n in want_nodes]
    for x, y in zip(got_nodes, want_nodes):
        assert x.same_state(y, atol=0.0)
        assert (x.recall_count, x.t_access, x.attributes) == (y.recall_count, y.t_access, y.attributes)
        assert x.level is y.level
    assert got_edges == [decode_edge(encode_edge(e, "ana")) for e in edges]
    assert got_nodes[0].attributes["tags"] == ["a", 0]  # a tuple comes back a list, as from a row
    # Newer statistics replace the columns' own: a node not listed was never recalled.
    later = T0 + timedelta(days=30)
    fresh, _ = unpack_tree(doc, arrays, "ana", matrix, {"l3": (7, "2024-05-31T09:00:00.000000+00:00")})
    assert [(n.recall_count, n.t_access) for n in fresh] == [
        (7, later) if n.id == "l3" else (0, None) for n in fresh]


def test_columns_that_describe_no_tree_are_refused() -> None:
    nodes, edges = _odd_tree()
    doc, arrays = pack_tree(nodes, edges, "ana")
    n = len(nodes)
    level = arrays["level"].copy()
    level[0] = 3
    emb = arrays["emb"].copy()
    emb[0] = 0  # a shared row, with no shared matrix
    count = arrays["prov_count"].copy()
    count[0] += 1
    times = arrays["stamps"].copy()
    times[1, 0] = len(doc["times"])  # a first time past the table
    for bad_doc, bad in (
        (doc, {**arrays, "level": level}),
        (doc, {**arrays, "emb": emb}),
        (doc, {**arrays, "prov_count": count}),
        (doc, {**arrays, "stamps": times}),
        (doc, {**arrays, "logit": arrays["logit"][:-1]}),
        ({**doc, "attributes": doc["attributes"][:-1]}, arrays),
        ({**doc, "ids": [*doc["ids"][:-1], 5]}, arrays),
        ({**doc, "reasons": []}, arrays),
    ):
        with pytest.raises(ValueError):
            unpack_tree(bad_doc, bad, "ana")
    assert len(unpack_tree(doc, arrays, "ana")[0]) == n


def test_a_snapshot_without_a_tree_gives_none() -> None:
    without = ({"tree_rows": 0}, {"leaf_matrix": np.zeros((0, 4), np.float32)})
    assert tree_version(without) is None
    with pytest.raises(ValueError):
        decode_tree(without, "ana")
    with pytest.raises(ValueError):
        unpack_snapshot(b"PTS5" + b"\0" * 20)


def test_the_edge_sequence_rebuilds_every_parent_and_child_order() -> None:
    for seed in range(25):
        rng = random.Random(seed)
        leaves = [Node(f"l{i}", "ana", Level.LEAF, "event", f"leaf {i}", {}, T0, T0, 0.0) for i in range(12)]
        mids = [Node(f"m{i}", "ana", Level.MID, "preference", f"mid {i}", {}, T0, T0, 0.0) for i in range(4)]
        roots = [Node(f"r{i}", "ana", Level.ROOT, "values", f"root {i}", {}, T0, T0, 0.0) for i in range(2)]
        nodes = [*leaves, *mids, *roots]
        rng.shuffle(nodes)
        pairs = [(x.id, rng.choice(mids).id, EdgeKind.SUPPORT) for x in leaves if rng.random() < 0.8]
        pairs += [(x.id, rng.choice(roots).id, EdgeKind.SUPPORT) for x in mids if rng.random() < 0.7]
        for x in leaves:
            for m in rng.sample(mids, 2):
                if not any(p[0] == x.id and p[1] == m.id for p in pairs) and rng.random() < 0.5:
                    pairs.append((x.id, m.id, EdgeKind.CONFLICT))
        rng.shuffle(pairs)
        g = MemoryGraph("ana")
        for node in nodes:
            g.add_node(node)
        for src, dst, kind in pairs:
            g.add_edge(Edge(src, dst, kind, 0.5, 0.5, "", T0))
        rebuilt = MemoryGraph.from_parts("ana", list(g.nodes()), g.edge_sequence())
        for u in g.nx:
            assert list(rebuilt.nx.successors(u)) == list(g.nx.successors(u)), seed
            assert list(rebuilt.nx.predecessors(u)) == list(g.nx.predecessors(u)), seed
        assert sorted(g.edge_sequence(), key=lambda e: (e.src, e.dst)) == sorted(g.edges(), key=lambda e: (e.src, e.dst))


def test_a_tree_the_columns_cannot_hold_leaves_them_out(tmp_path: Path) -> None:
    # The snapshot is a cache: a node the store would refuse (a value that is not
    # JSON) leaves the tree out of it, and the next process reads the rows.
    tree = _open(tmp_path / "m.db")
    tree.observe_many("ana", _items(0, 12))
    state = _state(tree)  # built from scratch
    assert tree_version(unpack_snapshot(encode(state))) == state.version
    next(iter(state.graph.nodes())).attributes["odd"] = {1, 2}
    kept = unpack_snapshot(encode(state))
    assert tree_version(kept) is None
    tree.close()
