"""The LangGraph ``BaseStore`` adapter, checked against LangGraph's own ``InMemoryStore``.

LangGraph publishes no conformance suite for stores, so its reference store is the
oracle: the same operations go to both, and get / filter search / list_namespaces
must agree. Semantic search is personatree's own (the reference store has no index
here), so it is checked for the right top hit instead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from personatree import PersonaTree
from personatree.integrations.langgraph import PersonaTreeStore, default_text_of

ITEMS = [
    (("memories", "maya"), "allergy", {"content": "I am severely allergic to peanuts.", "rank": 1, "kind": "fact"}),
    (("memories", "maya"), "hobby", {"content": "I love hiking in the mountains on Saturdays.", "rank": 2,
                                     "kind": "preference"}),
    (("memories", "maya"), "sister", {"content": "My sister Lena calls me every Sunday.", "rank": 3,
                                      "kind": "relationship", "meta": {"source": "chat"}}),
    (("prefs", "maya"), "food", {"food": "likes spicy ramen", "rank": 4}),
    (("memories", "bob"), "music", {"content": "I play the cello in an orchestra.", "rank": 5, "kind": "fact"}),
]


def _filled(path: Path, embedder: Any) -> tuple[PersonaTreeStore, InMemoryStore, Any]:
    tree = PersonaTree.open(path, embedder=embedder)
    ours, ref = PersonaTreeStore(tree), InMemoryStore()
    ours.batch([PutOp(ns, key, value) for ns, key, value in ITEMS])
    for ns, key, value in ITEMS:
        ref.put(ns, key, value)
    return ours, ref, tree


@pytest.fixture()
def stores(tmp_path: Path, embedder: Any) -> Any:
    """A fresh pair, for tests that change the stored items."""
    ours, ref, tree = _filled(tmp_path / "lg.db", embedder)
    yield ours, ref, tree
    tree.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Any:
    """One pair for the read-mostly tests (each writes only to its own namespaces)."""
    ours, ref, tree = _filled(tmp_path_factory.mktemp("lg") / "lg.db", embedder)
    yield ours, ref, tree
    tree.close()


def summary(items: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return sorted((tuple(i.namespace), i.key, i.value) for i in items)


def test_get_put_update_delete_match_the_reference(stores: Any) -> None:
    ours, ref, tree = stores
    for ns, key, value in ITEMS:
        got = ours.get(ns, key)
        assert got is not None and got.value == value and got.namespace == ns and got.key == key
        assert got.created_at == got.updated_at
    assert ours.get(("memories", "maya"), "missing") is None
    assert ours.get(("memories", "nobody"), "allergy") is None

    for s in (ours, ref):
        s.put(("memories", "maya"), "hobby", {"content": "I swim every morning now.", "rank": 9})
        s.delete(("memories", "maya"), "allergy")
        s.delete(("memories", "maya"), "never-existed")
    for ns, key, _ in ITEMS:
        a, b = ours.get(ns, key), ref.get(ns, key)
        assert (a is None) == (b is None) and (a is None or a.value == b.value)
    updated = ours.get(("memories", "maya"), "hobby")
    assert updated.updated_at > updated.created_at

    # Every put is evidence in the user's tree; a delete forgets the evidence it gave.
    contents = [n.content for n in tree.nodes("maya", "leaf")]
    assert any("swim" in c for c in contents) and not any("peanuts" in c for c in contents)
    # The state survives a new adapter over the same store (it lives in the log, not in memory).
    again = PersonaTreeStore(tree)
    assert again.get(("memories", "maya"), "allergy") is None
    assert again.get(("memories", "maya"), "hobby").value["rank"] == 9
    # A put after a delete brings the key back as a new item.
    again.put(("memories", "maya"), "allergy", {"content": "I can eat peanuts again."})
    assert ours.get(("memories", "maya"), "allergy").value == {"content": "I can eat peanuts again."}


FILTERS = [
    (("memories",), None),
    (("memories", "maya"), None),
    ((), None),
    ((), {"kind": "fact"}),
    (("memories",), {"rank": {"$gt": 1, "$lte": 3}}),
    ((), {"rank": {"$ne": 4}}),
    ((), {"meta": {"source": "chat"}}),
    (("prefs",), {"food": "likes spicy ramen"}),
    (("nothing",), None),
]


def test_filter_search_matches_the_reference(shared: Any) -> None:
    ours, ref, _ = shared
    for prefix, flt in FILTERS:
        got = ours.search(prefix, filter=flt, limit=50)
        want = ref.search(prefix, filter=flt, limit=50)
        assert summary(got) == summary(want), (prefix, flt)
        assert all(i.score is None for i in got)


def test_pagination_and_list_namespaces_match_the_reference(shared: Any) -> None:
    ours, ref, _ = shared
    pages = [ours.search((), limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert summary([i for p in pages for i in p]) == summary(ref.search((), limit=50))
    for kwargs in ({}, {"prefix": ("memories",)}, {"suffix": ("maya",)}, {"prefix": ("*", "maya")},
                   {"max_depth": 1}, {"limit": 1, "offset": 1}):
        assert ours.list_namespaces(**kwargs) == ref.list_namespaces(**kwargs), kwargs


def test_semantic_search_ranks_by_the_tree_evidence(shared: Any) -> None:
    ours, _, _ = shared
    hits = ours.search(("memories", "maya"), query="Which foods are dangerous for me?", limit=3)
    assert hits[0].key == "allergy" and hits[0].score is not None
    assert {h.key for h in hits} == {"allergy", "hobby", "sister"}  # other users never leak in
    assert [h.score for h in hits] == sorted([h.score for h in hits], reverse=True)
    outdoors = ours.search(("memories",), query="outdoor sports in the mountains", limit=1)
    assert [h.key for h in outdoors] == ["hobby"]
    filtered = ours.search(("memories",), query="music", filter={"kind": "fact"}, limit=5)
    assert [h.key for h in filtered][0] == "music" and {h.key for h in filtered} == {"music", "allergy"}


def test_batch_reads_see_the_state_before_its_writes(shared: Any) -> None:
    ours, ref, _ = shared
    ns = ("memories", "kim")
    ops = [PutOp(ns, "new", {"content": "I started learning Japanese."}), GetOp(ns, "new"),
           SearchOp(("memories",), filter={"rank": 1}), ListNamespacesOp(match_conditions=(
               MatchCondition("prefix", ("prefs",)),)), PutOp(ns, "new", {"content": "I study Japanese daily."})]
    got, want = ours.batch(ops), ref.batch(ops)
    assert got[1] is None and want[1] is None
    assert summary(got[2]) == summary(want[2]) and got[3] == want[3]
    assert ours.get(ns, "new").value == ref.get(ns, "new").value == {"content": "I study Japanese daily."}


def test_async_api(shared: Any) -> None:
    ours, _, _ = shared

    async def main() -> None:
        await ours.aput(("memories", "ana"), "k", {"content": "I live in Porto."})
        item = await ours.aget(("memories", "ana"), "k")
        assert item is not None and item.value["content"] == "I live in Porto."
        hits = await ours.asearch(("memories", "ana"), query="Where do I live?")
        assert hits[0].key == "k"
        assert ("memories", "ana") in await ours.alist_namespaces(prefix=("memories",))
        await ours.adelete(("memories", "ana"), "k")
        assert await ours.aget(("memories", "ana"), "k") is None

    asyncio.run(main())


def test_mapping_options_and_unsupported_ttl(tmp_path: Path, embedder: Any) -> None:
    tree = PersonaTree.open(tmp_path / "map.db", embedder=embedder)
    try:
        first = PersonaTreeStore(tree, user_index=0)
        first.put(("u1", "memories"), "a", {"content": "I like jazz."})
        assert tree.users() == ["u1"]
        custom = PersonaTreeStore(tree, user_of=lambda ns: f"team-{ns[1]}")
        custom.put(("org", "blue", "notes"), "a", {"note": "Prefers async standups."})
        assert "team-blue" in tree.users()
        # No claims yet: the block holds at most this team's recent evidence, never u1's.
        assert "jazz" not in custom.profile(("org", "blue", "notes"))
        assert "standups" in custom.recall(("org", "blue", "notes"), "How does the team like to meet?")
        with pytest.raises(NotImplementedError):
            first.put(("u1", "memories"), "b", {"content": "x"}, ttl=5)
        # index=False: stored and readable, but never evidence.
        first.put(("u1", "memories"), "secret", {"content": "internal bookkeeping"}, index=False)
        assert first.get(("u1", "memories"), "secret").value == {"content": "internal bookkeeping"}
        assert not any("bookkeeping" in n.content for n in tree.nodes("u1", "leaf"))
        assert default_text_of({"food": "ramen", "n": 2}) == "food: ramen\nn: 2"
        assert default_text_of({"memory": " I like tea. "}) == "I like tea."
    finally:
        tree.close()
