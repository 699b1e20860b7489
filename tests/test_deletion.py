"""Deletion that is real.

* ``forget`` removes the node, its embedding, its cache entries and every summary
  derived only from it (parents keep the rest of their evidence);
* ``delete_user`` + ``vacuum`` leaves none of the user's bytes in the SQLite file or
  its write-ahead log (checked by scanning the raw bytes);
* deleting an observation removes what was extracted from it.

Uses the real packaged embedder and offline judge on real SQLite files; mids and roots
are seeded by a committed change (standing in for consolidation).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from personatree import PersonaTree
from personatree.errors import StoreError, UnknownNodeError, UnknownUserError
from personatree.governance import (
    delete_observation,
    derived_leaves,
    erase_user,
    forget,
    node_cache_namespace,
    plan_observation_deletion,
    supports_observation_deletion,
)
from personatree.ports import ChangeSet
from personatree.types import Edge, EdgeKind, Level, Node

from .helpers import T0, Parts, open_tree

NOW = T0 + timedelta(days=30)


def seed(tree: PersonaTree, user_id: str) -> None:
    """A mid under a root (what consolidation would build), for leaves to attach to."""
    mid_text, root_text = "Ana loves spicy food", "Ana enjoys bold, intense flavours"
    mv, rv = tree.embedder.embed([mid_text, root_text])

    def work(graph: Any) -> tuple[ChangeSet, None]:
        mid = Node("md_spicy", user_id, Level.MID, "preference", mid_text, {}, T0, T0, 0.4, 1, 0, mv)
        root = Node("rt_bold", user_id, Level.ROOT, "value", root_text, {}, T0, T0, 0.5, 1, 0, rv)
        edge = Edge("md_spicy", "rt_bold", EdgeKind.SUPPORT, 0.8, 0.48, "seeded", T0)
        for n in (mid, root):
            graph.add_node(n)
        graph.add_edge(edge)
        return ChangeSet(user_id, upsert_nodes=[mid, root], upsert_edges=[edge]), None

    tree._transact(user_id, work)


@pytest.fixture()
def tree(tmp_path: Path, parts: Parts) -> PersonaTree:
    t = open_tree(tmp_path / "del.db", parts, NOW)
    yield t
    t.close()


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file()}


def _found(path: Path, needles: list[bytes]) -> list[tuple[str, bytes]]:
    """Which needles occur in the database file, its -wal or -shm."""
    return [(name, n) for name, blob in _files(path).items() for n in needles if n in blob]


SUPPORT = "I really love spicy food, the hotter the better."


# -- forget ------------------------------------------------------------------------------


def test_forget_removes_node_embedding_caches_and_sole_derived_summaries(tree: PersonaTree) -> None:
    seed(tree, "ana")
    rep = tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1))
    leaf = rep.decisions[0].leaf_id
    assert rep.decisions[0].action == "attach"
    # The seeded mid's own support (n_support=1) is not a node: make the leaf its only child.
    g = tree.graph("ana")
    assert g.children("md_spicy") == [leaf] and g.children("rt_bold") == ["md_spicy"]
    vectors = {n.id: np.asarray(n.embedding, dtype="<f4").tobytes() for n in g.nodes()}
    for nid in (leaf, "md_spicy", "rt_bold"):
        tree.store.cache_put(node_cache_namespace(nid), "llm", f"cached text of {nid}", user_id="ana")
    tree.store.cache_put("llm", "unrelated", "kept", user_id="ana")
    tree.store.vacuum()
    path = tree.store.path
    assert _found(path, [vectors[leaf]]), "the leaf's embedding should be on disk before the forget"

    report = forget(tree, "ana", leaf)
    # The mid was derived only from the leaf, and the root only from the mid: all three go.
    assert set(report.removed) == {leaf, "md_spicy", "rt_bold"}
    assert tree.store.counts("ana")["nodes"] == 0 and tree.store.counts("ana")["edges"] == 0
    for nid in report.removed:
        with pytest.raises(UnknownNodeError):
            tree.node("ana", nid)
        assert tree.store.cache_get(node_cache_namespace(nid), "llm", user_id="ana") is None
    assert tree.store.cache_get("llm", "unrelated", user_id="ana") == "kept"
    assert all(len(tree.graph("ana").index(lv)) == 0 for lv in Level)
    # The observation stays in the log (forget removes what was learned, not what was said).
    assert tree.store.counts("ana")["observations"] == 1
    tree.store.vacuum()
    assert not _found(path, list(vectors.values())), "an embedding of a forgotten node is still on disk"


def test_forget_keeps_parents_with_other_evidence(tree: PersonaTree) -> None:
    seed(tree, "ana")
    a = tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1)).decisions[0]
    b = tree.observe("ana", "Spicy curry is my favourite dish.", at=T0 + timedelta(days=2)).decisions[0]
    assert a.action == b.action == "attach"
    before = tree.node("ana", "md_spicy")
    report = forget(tree, "ana", a.leaf_id)
    assert report.removed == (a.leaf_id,)
    after = tree.node("ana", "md_spicy")
    assert after.n_support == before.n_support - 1 and after.logit < before.logit
    assert tree.graph("ana").children("md_spicy") == [b.leaf_id]
    assert "rt_bold" in tree.graph("ana")


def test_forget_claim_keeps_evidence_unless_cascade(tree: PersonaTree) -> None:
    seed(tree, "ana")
    leaf = tree.observe("ana", SUPPORT, at=T0 + timedelta(days=1)).decisions[0].leaf_id
    report = tree.forget("ana", "md_spicy")
    # The claim goes (and the root derived only from it); the evidence stays, as an orphan.
    assert set(report.removed) == {"md_spicy", "rt_bold"}
    assert tree.graph("ana").parent(leaf) is None
    seed(tree, "bo")
    leaf_b = tree.observe("bo", SUPPORT, at=T0 + timedelta(days=1)).decisions[0].leaf_id
    report = tree.forget("bo", "rt_bold", cascade=True)
    assert set(report.removed) == {leaf_b, "md_spicy", "rt_bold"}
    assert tree.store.counts("bo")["nodes"] == 0


def test_forget_is_replayed_by_rebuild(tree: PersonaTree) -> None:
    reps = tree.observe_many("ana", [{"messages": t, "at": T0 + timedelta(hours=i)} for i, t in enumerate(
        ["I'm allergic to peanuts.", "My sister Mia lives in Oslo.", "I run every Sunday morning."])])
    gone = reps[1].decisions[0].leaf_id
    tree.forget("ana", gone)
    rebuilt = tree.rebuild("ana")
    assert rebuilt.equal and gone not in tree.graph("ana")


# -- delete_user ---------------------------------------------------------------------------

SECRET = {
    "user": "zq-user-7731",
    "text": "My pet Quetzalcoatlus is named Bartholomew-Xylo.",
    "session": "sess-xyzzy-4242",
    "meta": "plover-9981",
    "cache": "cached-fnord-5150",
}


def _fill_secret_user(tree: PersonaTree) -> list[bytes]:
    uid = SECRET["user"]
    tree.observe(uid, [{"role": "user", "content": SECRET["text"], "name": "Bartholomew"},
                       {"role": "assistant", "content": "What a pet!"}],
                 at=T0, session_id=SECRET["session"], metadata={"tag": SECRET["meta"]})
    tree.observe(uid, "I'm allergic to peanuts and I work at Zorblatt Industries.", at=T0 + timedelta(days=1),
                 session_id=SECRET["session"])
    seed(tree, uid)
    tree.store.cache_put("llm", "prompt-1", SECRET["cache"], user_id=uid)
    vectors = [np.asarray(n.embedding, dtype="<f4").tobytes() for n in tree.graph(uid).nodes()
               if n.embedding is not None]
    return [s.encode() for s in SECRET.values()] + [b"Zorblatt", b"Bartholomew"] + vectors


@pytest.mark.parametrize("how", ["delete_user+vacuum", "erase_user"])
def test_delete_user_leaves_no_bytes_behind(tree: PersonaTree, how: str) -> None:
    tree.observe("other", "I live in Lisbon and love sardines.", at=T0)
    needles = _fill_secret_user(tree)
    path = tree.store.path
    # Not vacuous: before deletion every distinctive string is on disk (file or WAL).
    found_before = {n for _, n in _found(path, needles)}
    assert found_before == set(needles)
    if how == "erase_user":
        erase_user(tree, SECRET["user"])
    else:
        tree.delete_user(SECRET["user"])
        tree.store.vacuum()
    assert SECRET["user"] not in tree.users()
    assert tree.store.counts(SECRET["user"]) == {
        "users": 0, "observations": 0, "nodes": 0, "edges": 0, "journal": 0, "archive": 0, "cache": 0}
    leftovers = _found(path, needles)
    assert not leftovers, f"user bytes still on disk: {leftovers}"
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "vacuum should truncate the WAL"
    # Other users are untouched and the store is healthy.
    assert _found(path, [b"Lisbon"]) and tree.users() == ["other"]
    assert tree.store.integrity_check() == []
    with pytest.raises(UnknownUserError):
        tree.export(SECRET["user"])
    with pytest.raises(UnknownUserError):
        tree.delete_user(SECRET["user"])


def test_deleted_user_is_gone_for_other_processes_caches(tmp_path: Path, parts: Parts) -> None:
    # A second PersonaTree (as another app instance would) had the user cached.
    a, b = open_tree(tmp_path / "m.db", parts, NOW), open_tree(tmp_path / "m.db", parts, NOW)
    try:
        a.observe("ana", SUPPORT, at=T0)
        assert b.nodes("ana")
        a.delete_user("ana")
        with pytest.raises(UnknownUserError):
            b.nodes("ana")
        with pytest.raises(UnknownUserError):
            b.export("ana")
    finally:
        a.close()
        b.close()


# -- deleting an observation ---------------------------------------------------------------


def test_plan_observation_deletion_removes_what_was_extracted(tree: PersonaTree) -> None:
    seed(tree, "ana")
    keep = tree.observe("ana", "Spicy curry is my favourite dish.", at=T0 + timedelta(days=1))
    gone = tree.observe("ana", "I really love spicy food. My sister Mia lives in Oslo.", at=T0 + timedelta(days=2))
    assert len(gone.decisions) == 2
    g = tree.graph("ana")
    assert set(derived_leaves(g, gone.observation_id)) == set(gone.leaf_ids)
    mid_before = g.node("md_spicy").n_support
    res = plan_observation_deletion(g, gone.observation_id, tree.config.confidence)
    assert set(res.removed) == set(gone.leaf_ids)
    assert not derived_leaves(g, gone.observation_id)
    # The mid keeps the other observation's support and loses exactly the deleted one's.
    assert g.node("md_spicy").n_support == mid_before - sum(d.action == "attach" for d in gone.decisions)
    assert keep.leaf_ids[0] in g and g.parent(keep.leaf_ids[0]) == "md_spicy"
    g.check()


def test_delete_observation_refuses_cleanly_without_store_support(tree: PersonaTree) -> None:
    if supports_observation_deletion():
        pytest.skip("ChangeSet.delete_observations exists; the full test below covers it")
    rep = tree.observe("ana", SUPPORT, at=T0)
    before = (tree.store.counts(), tree.store.checksum("ana"))
    with pytest.raises(StoreError, match="delete_observations"):
        delete_observation(tree, "ana", rep.observation_id)
    assert (tree.store.counts(), tree.store.checksum("ana")) == before


@pytest.mark.xfail(not supports_observation_deletion(), strict=True, reason=(
    "blocked: ChangeSet has no delete_observations field, so no store can remove a log row "
    "in the same transaction as the derived nodes (see the report for the exact additions)"))
def test_delete_observation_removes_log_row_and_derived_nodes(tree: PersonaTree) -> None:
    seed(tree, "ana")
    keep = tree.observe("ana", "Spicy curry is my favourite dish.", at=T0 + timedelta(days=1))
    text = "I really love spicy food. My pen pal Quimby-Zed lives in Oslo."
    gone = tree.observe("ana", text, at=T0 + timedelta(days=2))
    result = delete_observation(tree, "ana", gone.observation_id)
    assert result.log_deleted and set(result.removed) == set(gone.leaf_ids)
    assert tree.store.existing_observations("ana", [gone.observation_id]) == set()
    assert [o.id for o in tree.store.observations("ana")] == [keep.observation_id]
    for nid in gone.leaf_ids:
        assert nid not in tree.graph("ana")
    # Rebuild from the log does not bring it back, and the bytes leave the file.
    assert tree.rebuild("ana").nodes == len(tree.graph("ana"))
    assert all(nid not in tree.graph("ana") for nid in gone.leaf_ids)
    tree.store.vacuum()
    assert not _found(tree.store.path, [b"Quimby-Zed"])
    with pytest.raises(UnknownNodeError):
        delete_observation(tree, "ana", gone.observation_id)
