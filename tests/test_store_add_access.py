"""``add_access``: recall counts added without the tree, on every store.

The same contract on the memory, SQLite and PostgreSQL stores (the fixture of
``tests/test_store_contract.py``): counts add up, ``t_access`` only moves forward,
nodes no longer in the tree are skipped, the commit is one of recall statistics only
(the version moves, the content version and the retrieval snapshot stay), and a
malformed bump writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from personatree.errors import InputError
from personatree.ports import ChangeSet, Store
from tests.test_store_contract import T0, node, obs, store  # noqa: F401 - fixture


def test_counts_add_up_and_only_the_statistics_move(store: Store) -> None:
    add = store.add_access  # type: ignore[attr-defined]
    versions = store.versions  # type: ignore[attr-defined]
    assert add("u", {"a": (1, T0)}) is None  # unknown user: nothing written
    a, b = replace(node("u", "a"), t_access=None), node("u", "b")
    base = a.recall_count
    v = store.commit(ChangeSet("u", observations=[obs("u", "o1")], upsert_nodes=[a, b]))
    assert store.put_retrieval_snapshot("u", v, "f", b"snap")  # type: ignore[attr-defined]
    later = T0 + timedelta(days=2)
    assert add("u", {"a": (2, later), "gone": (5, later)}) == v + 1
    assert versions("u") == (v + 1, v)  # the version moved, the content version did not
    assert store.retrieval_snapshot("u") == (v + 1, "f", b"snap")  # type: ignore[attr-defined]
    got = {n.id: n for n in store.load_graph("u")[0]}
    assert got["a"].recall_count == base + 2 and got["a"].t_access == later
    assert got["b"].recall_count == b.recall_count and got["b"].t_access == b.t_access
    assert add("u", {"a": (3, T0)}) == v + 2  # an earlier time does not move t_access back
    got = {n.id: n for n in store.load_graph("u")[0]}
    assert got["a"].recall_count == base + 5 and got["a"].t_access == later
    assert add("u", {"gone": (1, T0)}) is None and store.version("u") == v + 2  # no node left: no commit
    for bad in ({"a": (0, T0)}, {"a": (True, T0)}, {"a": (1, "yesterday")}, {"": (1, T0)}):
        with pytest.raises(InputError):
            add("u", bad)
    assert store.version("u") == v + 2


def test_recall_stats_are_the_recalled_nodes_at_the_version_read(store: Store) -> None:
    stats = store.recall_stats  # type: ignore[attr-defined]
    assert stats("u") == (0, {})  # unknown user
    a, b = replace(node("u", "a"), recall_count=0, t_access=None), replace(node("u", "b"), recall_count=0, t_access=None)
    v = store.commit(ChangeSet("u", observations=[obs("u", "o1")], upsert_nodes=[a, b]))
    assert stats("u") == (v, {})  # never recalled: nothing to read
    later = T0 + timedelta(days=3)
    v = store.add_access("u", {"b": (2, later)})  # type: ignore[attr-defined]
    version, got = stats("u")
    assert version == v and set(got) == {"b"} and got["b"][0] == 2
    (stored,) = [n for n in store.load_graph("u")[0] if n.id == "b"]
    assert stored.t_access == later and isinstance(got["b"][1], str)
    store.commit(ChangeSet("u", archive_nodes=[replace(b, recall_count=2)], delete_nodes=["b"]))
    assert stats("u")[1] == {}  # archived leaves are not the tree's
