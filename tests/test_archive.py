"""Bounding the tree never removes an observation from recall.

Consolidation keeps at most K leaves per pattern and drops orphans older than
T_orphan from the *tree*; those leaves move to the user's archive, where recall still
finds them. Only forget, delete_observation and delete_user remove evidence.

The bulk-import case is the one that used to lose evidence: a long history observed in
one go and consolidated once. Every observation here carries a made-up code word of its
own, so "recall brings it back" is exact: the code word is in the rendered context.
The HashingEmbedder is enough where lexical and dense matches on the same words are
what is tested; the slow variant runs the real packaged embedder.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from personatree import FixedClock, PersonaTree
from personatree.config import ConsolidationConfig, PersonaTreeConfig
from personatree.consolidate.bounds import ARCHIVED_FROM
from personatree.embedders import HashingEmbedder
from personatree.judge import OfflineJudge
from personatree.portability import import_export
from personatree.ports import Store
from personatree.retrieval.prelude import user_state as _user_state
from personatree.schema import SchemaRegistry
from personatree.store import MemoryStore, SQLiteStore
from personatree.types import Level

T0 = datetime(2021, 5, 3, 8, 0, tzinfo=timezone.utc)
_SYLLABLES = ("ka", "lo", "mi", "ren", "tus", "vo", "zel", "pra", "nim", "dor", "quo", "bex", "fip", "sar")
# Templated, near-identical sentences: what a diary import looks like, and what makes
# consolidation trim and delete the most.
_TEMPLATES = (
    "I had lunch at the {} place today",
    "My neighbour mentioned a book called {}",
    "On my walk I passed a sign for {}",
    "Work was busy, the new project is named {}",
    "I bought a small plant labelled {}",
)


def code_words(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct made-up words (no real word shares their tokens)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(4))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def stream(n: int, *, days: float = 3 * 365, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` one-sentence observations evenly over ``days``, in sessions of three."""
    return [
        {
            "messages": [{"role": "user", "content": _TEMPLATES[i % len(_TEMPLATES)].format(w)}],
            "at": (T0 + timedelta(days=i * days / n)).isoformat(),
            "session_id": f"s{i // 3}",
            "observation_id": f"o{i}",
            "metadata": {"code": w},
        }
        for i, w in enumerate(code_words(n, seed))
    ]


def text_of(item: dict[str, Any]) -> str:
    return str(item["messages"][0]["content"])


def code_of(item: dict[str, Any]) -> str:
    return str(item["metadata"]["code"])


def recalled(tree: PersonaTree, user: str, item: dict[str, Any], budget: int = 300) -> bool:
    """Whether a query made of the observation's own words brings it back."""
    return code_of(item) in tree.recall(user, text_of(item), budget=budget).text


def make_tree(store: Store, embedder: Any, registry: SchemaRegistry, *, k_leaves: int = 50) -> PersonaTree:
    config = PersonaTreeConfig(consolidation=ConsolidationConfig(k_leaves=k_leaves))
    judge = OfflineJudge(embedder, registry)
    return PersonaTree(store, config=config, registry=registry, embedder=embedder, judge=judge,
                       clock=FixedClock(T0 + timedelta(days=4 * 365)))


def _bulk(store: Store, embedder: Any, registry: SchemaRegistry, n: int) -> tuple[PersonaTree, list[dict[str, Any]]]:
    """``n`` observations over three years, observed at once, consolidated once."""
    tree = make_tree(store, embedder, registry, k_leaves=5)
    items = stream(n)
    tree.observe_many("ana", items)
    tree.consolidate("ana", now=T0 + timedelta(days=3 * 365 + 5))
    return tree, items


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory, hashing: HashingEmbedder,
         registry: SchemaRegistry) -> Iterator[tuple[PersonaTree, list[dict[str, Any]]]]:
    """300 observations on SQLite, shared by the tests that only read."""
    tree, items = _bulk(SQLiteStore(tmp_path_factory.mktemp("archive") / "bulk.db"), hashing, registry, 300)
    yield tree, items
    tree.close()


@pytest.fixture()
def fresh(hashing: HashingEmbedder, registry: SchemaRegistry) -> tuple[PersonaTree, list[dict[str, Any]]]:
    """A smaller bulk import of its own, for the tests that delete."""
    return _bulk(MemoryStore(), hashing, registry, 150)


def test_bulk_import_consolidated_once_keeps_every_observation_recallable(bulk: Any) -> None:
    tree, items = bulk
    graph = tree.graph("ana")
    archived = tree.store.archive_ids("ana")
    # The bounds did bound the tree: most leaves left it (stale orphans, trims)...
    assert len(archived) > len(items) / 2
    assert sum(1 for _ in graph.nodes(Level.LEAF)) + len(archived) == len(items)
    assert not set(archived) & {n.id for n in graph.nodes()}
    # ...and every observation is still brought back by its own words.
    sample = random.Random(1).sample(items, 40)
    missed = [code_of(i) for i in sample if not recalled(tree, "ana", i)]
    assert missed == []


def test_archived_leaves_are_rows_of_the_dense_leaf_matrix(bulk: Any) -> None:
    tree, _ = bulk
    with tree._lock:
        state = _user_state(tree, "ana", tree._state("ana"))
    leaves = state.arrays[Level.LEAF]
    archive = tree.store.archive("ana")
    assert {n.id for n in archive} <= set(leaves.row)
    assert leaves.matrix.shape[0] == len(leaves.ids)
    # Dense search alone finds an archived leaf from its own vector: its row is its
    # embedding, and nothing in the tree or the archive is closer.
    for n in archive[:25]:
        cos = leaves.matrix @ np.asarray(n.embedding, dtype=np.float32)
        assert leaves.ids[int(np.argmax(cos))] == n.id
    # Archived leaves are evidence without structure: no parent, no children.
    assert not any(n.id in state.parent or n.id in state.children for n in archive)


def test_recall_shows_archived_evidence_as_verbatim_leaves(bulk: Any) -> None:
    tree, items = bulk
    archived = set(tree.store.archive_ids("ana"))
    item = next(i for i in items if _leaf_of(tree, i) in archived)
    leaf = _leaf_of(tree, item)
    r = tree.recall("ana", text_of(item), budget=300)
    shown = [x for x in r.items if x.node_id == leaf]
    assert shown, r.text
    assert shown[0].level is Level.LEAF and shown[0].parent is None
    assert shown[0].sources == ((item["observation_id"], 0),)
    assert text_of(item) in r.text  # verbatim


def test_forget_removes_an_archived_leaf_from_recall_and_rebuild(fresh: Any) -> None:
    tree, items = fresh
    archived = set(tree.store.archive_ids("ana"))
    item = next(i for i in items if _leaf_of(tree, i) in archived)
    leaf = _leaf_of(tree, item)
    assert recalled(tree, "ana", item)
    report = tree.forget("ana", leaf)
    assert report.removed == (leaf,)
    assert leaf not in tree.store.archive_ids("ana")
    assert not recalled(tree, "ana", item)
    assert tree.store.events("ana")[-1].kind == "forget"
    tree.rebuild("ana")
    assert leaf not in tree.store.archive_ids("ana") and leaf not in tree.graph("ana")
    assert not recalled(tree, "ana", item)


def _leaf_of(tree: PersonaTree, item: dict[str, Any]) -> str | None:
    """The id of the (only) leaf extracted from an item, in the tree or the archive."""
    oid = item["observation_id"]
    for n in [*tree.graph("ana").nodes(Level.LEAF), *tree.store.archive("ana")]:
        if n.provenance and n.provenance[0].observation_id == oid:
            return n.id
    return None


def test_forgetting_a_pattern_with_its_evidence_forgets_its_archived_leaves(
    fresh: Any, hashing: HashingEmbedder, registry: SchemaRegistry
) -> None:
    tree, items = fresh
    # A tighter leaf cap on the next pass trims every pattern of the first one.
    tight = make_tree(tree.store, hashing, registry, k_leaves=2)
    plan = tight.consolidate("ana", now=T0 + timedelta(days=3 * 365 + 6))
    assert plan.counts()["trimmed_leaves"] > 0
    now_trimmed = {x for t in plan.trims for x in t.removed_ids}
    trimmed = [n for n in tree.store.archive("ana") if n.id in now_trimmed]
    assert {n.id for n in trimmed} == now_trimmed
    assert all(ARCHIVED_FROM in n.attributes for n in trimmed)
    mid = trimmed[0].attributes[ARCHIVED_FROM]
    gone = {n.id for n in trimmed if n.attributes[ARCHIVED_FROM] == mid}
    by_obs = {i["observation_id"]: i for i in items}
    victims = [by_obs[n.provenance[0].observation_id] for n in trimmed if n.id in gone]
    assert all(recalled(tree, "ana", v) for v in victims)
    tree.forget("ana", mid, cascade=True)
    assert not gone & set(tree.store.archive_ids("ana"))
    assert not any(recalled(tree, "ana", v) for v in victims)
    # Other patterns' archived evidence stays.
    assert {n.id for n in trimmed} - gone <= set(tree.store.archive_ids("ana"))


def test_delete_observation_removes_archived_evidence(fresh: Any) -> None:
    tree, items = fresh
    archived = set(tree.store.archive_ids("ana"))
    item = next(i for i in items if _leaf_of(tree, i) in archived)
    leaf = _leaf_of(tree, item)
    assert recalled(tree, "ana", item)
    res = tree.delete_observation("ana", item["observation_id"])
    assert leaf in res.removed and res.log_deleted
    assert leaf not in tree.store.archive_ids("ana")
    assert not recalled(tree, "ana", item)


def test_delete_user_removes_the_archive(fresh: Any) -> None:
    tree, _ = fresh
    assert tree.store.archive_ids("ana")
    tree.delete_user("ana")
    assert tree.store.archive_ids("ana") == [] and tree.store.archive("ana") == []


def test_rebuild_keeps_the_archive(bulk: Any) -> None:
    tree, items = bulk
    before = sorted(tree.store.archive_ids("ana"))
    report = tree.rebuild("ana")
    assert report.equal
    assert sorted(tree.store.archive_ids("ana")) == before
    assert all(recalled(tree, "ana", i) for i in random.Random(2).sample(items, 15))


def test_export_and_import_carry_the_archive(bulk: Any, hashing: HashingEmbedder, registry: SchemaRegistry) -> None:
    tree, items = bulk
    data = tree.export("ana")
    assert len(data["archive"]) == len(tree.store.archive_ids("ana"))
    other = make_tree(MemoryStore(), hashing, registry, k_leaves=5)
    import_export(other, data)
    assert other.store.archive_ids("ana") == tree.store.archive_ids("ana")
    sample = random.Random(3).sample(items, 15)
    assert all(recalled(other, "ana", i) for i in sample)


@pytest.mark.slow
def test_bulk_import_with_the_real_embedder(tmp_path: Path, embedder: Any, registry: SchemaRegistry) -> None:
    # The case as reported: 900 observations over three years, consolidated once.
    tree = make_tree(SQLiteStore(tmp_path / "real.db"), embedder, registry)
    items = stream(900, seed=7)
    tree.observe_many("ana", items)
    sample = random.Random(4).sample(items, 60)
    tree.consolidate("ana", now=T0 + timedelta(days=3 * 365 + 5))
    assert len(tree.store.archive_ids("ana")) > 300
    assert [code_of(i) for i in sample if not recalled(tree, "ana", i)] == []
    tree.close()


def test_leaves_trimmed_from_a_pattern_formed_in_the_same_pass_name_it(
    hashing: HashingEmbedder, registry: SchemaRegistry
) -> None:
    # A bulk import forms its patterns and trims them in one pass: before it, the
    # trimmed leaves had no parent, so only the plan's trims can say which mid they
    # supported (and forgetting that mid with its evidence must reach them).
    tree = make_tree(MemoryStore(), hashing, registry, k_leaves=5)
    tree.observe_many("ana", stream(150))
    plan = tree.consolidate("ana", now=T0 + timedelta(days=3 * 365 + 5))
    formed = {m.id for m in plan.new_mids}
    trimmed_from = {x: t.mid_id for t in plan.trims for x in t.removed_ids}
    assert trimmed_from and set(trimmed_from.values()) & formed
    archive = {n.id: n for n in tree.store.archive("ana")}
    assert {x: archive[x].attributes.get(ARCHIVED_FROM) for x in trimmed_from} == trimmed_from
    mid = next(m for m in trimmed_from.values() if m in formed)
    tree.forget("ana", mid, cascade=True)
    assert not {x for x, m in trimmed_from.items() if m == mid} & set(tree.store.archive_ids("ana"))


def test_an_archived_leaf_is_found_by_id_explain_search_and_counts(bulk: Any) -> None:
    tree, items = bulk
    archived = set(tree.store.archive_ids("ana"))
    item = next(i for i in items if _leaf_of(tree, i) in archived)
    leaf = _leaf_of(tree, item)
    assert leaf is not None
    node = tree.node("ana", leaf)
    assert node.id == leaf and node.content == text_of(item)
    ex = tree.explain("ana", leaf)
    assert ex.archived and [s.node_id for s in ex.path] == [leaf]
    assert [o.id for o in ex.observations] == [item["observation_id"]]
    assert "archived" in ex.render() and text_of(item) in ex.render()
    hits = tree.search("ana", text_of(item), k=3)
    assert hits[0].node_id == leaf and hits[0].archived
    assert all(not h.archived for h in tree.search("ana", text_of(item), k=3, level="mid"))
    counts = tree.store.counts("ana")
    assert counts["archive"] == len(archived) == tree.stats("ana")["archived_leaves"]
    assert tree.store.counts()["archive"] >= len(archived)
    # A tree node never reports itself archived.
    in_tree = next(iter(tree.graph("ana").nodes(Level.LEAF)))
    assert not tree.explain("ana", in_tree.id).archived


def test_the_checksum_covers_the_archive(fresh: Any) -> None:
    tree, items = fresh
    archived = tree.store.archive_ids("ana")
    before = tree.store.checksum("ana")
    # Forgetting an archived leaf changes only the archive (and the journal): the
    # digest must see it.
    tree.forget("ana", archived[0])
    assert tree.store.checksum("ana") != before


def test_a_long_import_offers_its_old_leaves_to_clustering_before_they_go_stale(
    hashing: HashingEmbedder, registry: SchemaRegistry
) -> None:
    # Three years observed at once and consolidated once: the first two years are
    # older than T_orphan (365 days) against the latest activity. They were never
    # offered to clustering, so they must form patterns like the last year's, not go
    # to the archive unseen (consolidating after every session would have clustered
    # them while they were recent).
    tree = make_tree(MemoryStore(), hashing, registry)
    items = stream(150)
    tree.observe_many("ana", items)
    plan = tree.consolidate("ana", now=T0 + timedelta(days=3 * 365 + 5))
    by_id = {n.id: n for n in [*tree.graph("ana").nodes(Level.LEAF), *tree.store.archive("ana")]}
    latest = max(n.t_last for n in by_id.values())
    old = {i for i, n in by_id.items() if (latest - n.t_last).days > 365}
    clustered = {m for mid in plan.new_mids for m in mid.member_ids}
    assert len(old) > len(by_id) / 2
    assert len(clustered & old) >= len(clustered) / 3
    # What did not form a pattern still goes stale (into the archive, not away).
    assert {d.node_id for d in plan.deletions} <= old - clustered
