"""The async API under concurrency: 50 tasks at once over several users lose nothing and
end with the trees, recalls and searches a sync tree fed the same observations gives.

Real parts: the offline judge and SQLite files in ``tmp_path``; the concurrency test uses
the hashing embedder (contention, not semantics, is under test there, and its vectors do
not depend on the batch a text was embedded in), the others the packaged embedder.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from personatree import AsyncPersonaTree, PersonaTree, UnknownUserError
from personatree.aio import ClosedError
from personatree.embedders import HashingEmbedder
from personatree.errors import ConfigError, QueryError
from personatree.judge import OfflineJudge
from personatree.schema import SchemaRegistry

from .helpers import T0, Parts, open_tree

USERS = ("ines", "tomas", "mei", "oskar", "lea")
# Written for this test: first-person facts of several kinds, so leaves are extracted.
FACTS = (
    "I started learning the cello last winter and practise every evening.",
    "My sister lives in Porto and I visit her twice a year.",
    "I am allergic to peanuts, so I always check the labels.",
    "I work night shifts at the hospital pharmacy.",
    "I prefer tea over coffee, especially green tea in the morning.",
    "I have been training for a half marathon since March.",
)
QUERIES = ("what instrument does the user play?", "where does the family live?", "what should I avoid cooking?")


def _items(user: str) -> list[dict[str, Any]]:
    """The user's observations: the facts, each with its own time (order-free content)."""
    return [{"messages": [{"role": "user", "content": f"{fact} ({user})"}],
             "at": T0 + timedelta(hours=i + 1), "session_id": f"s{i}"}
            for i, fact in enumerate(FACTS)]


def _seed(user: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"My name is {user.title()} and I live in a small town."}],
            "at": T0, "session_id": "s-seed"}


def _tree_view(tree: PersonaTree, user: str) -> dict[str, Any]:
    """What must match between the sync and async runs: nodes, observations, reads."""
    nodes = sorted((n.id, n.level.value, n.schema_type, n.content) for n in tree.nodes(user))
    obs = sorted(o["id"] for o in tree.export(user)["observations"])
    recalls = [tree.recall(user, q, budget=200).text for q in QUERIES]
    # Every node, so that ties (ordered by insertion, which concurrency changes) cannot
    # push different nodes past a cut-off.
    hits = [sorted((-round(h.score, 6), h.node_id) for h in tree.search(user, q, k=100)) for q in QUERIES]
    return {"nodes": nodes, "observations": obs, "recalls": recalls, "hits": hits}


@pytest.fixture(scope="module")
def hashed(hashing: HashingEmbedder, registry: SchemaRegistry) -> Parts:
    """The hashing embedder with the real offline judge built on it."""
    return Parts(hashing, registry, OfflineJudge(hashing, registry))


def test_fifty_concurrent_tasks_lose_nothing_and_match_sync(tmp_path: Path, hashed: Parts) -> None:
    parts = hashed
    sync = open_tree(tmp_path / "sync.db", parts, T0 + timedelta(days=1))
    wrapped = open_tree(tmp_path / "async.db", parts, T0 + timedelta(days=1))
    for user in USERS:
        sync.observe_many(user, [_seed(user), *_items(user)])
        wrapped.observe_many(user, [_seed(user)])

    async def scenario() -> tuple[list[Any], list[Any]]:
        async with AsyncPersonaTree(wrapped, max_threads=6) as atree:
            writes = [atree.observe(u, item["messages"], at=item["at"], session_id=item["session_id"])
                      for u in USERS for item in _items(u)]
            # Reads of users that exist already, racing the writes of the same users.
            reads: list[Any] = []
            for i in range(20):
                user, query = USERS[i % len(USERS)], QUERIES[i % len(QUERIES)]
                reads.append(atree.recall(user, query, budget=150) if i % 2 else atree.search(user, query, k=3))
            tasks = writes + reads
            assert len(tasks) == 50
            results = await asyncio.gather(*tasks)
            after = await asyncio.gather(*(atree.stats(u) for u in USERS))
            return list(results), list(after)

    results, after = asyncio.run(scenario())
    reports = results[:30]
    assert all(r.observation_id for r in reports) and len({r.observation_id for r in reports}) == 30
    assert all(r is not None for r in results[30:])
    assert [s["observations"] for s in after] == [1 + len(FACTS)] * len(USERS)

    reopened = open_tree(tmp_path / "async.db", parts, T0 + timedelta(days=1))  # what reached the file
    for user in USERS:
        expected, got = _tree_view(sync, user), _tree_view(reopened, user)
        assert got["observations"] == expected["observations"]
        assert got["nodes"] == expected["nodes"] and len(got["nodes"]) >= len(FACTS)
        assert got["recalls"] == expected["recalls"]
        assert got["hits"] == expected["hits"]
    stored = {r.observation_id for r in reports}
    assert stored <= {oid for u in USERS for oid in _tree_view(reopened, u)["observations"]}
    sync.close()
    reopened.close()


def test_coroutines_return_what_sync_returns(tmp_path: Path, parts: Parts) -> None:
    sync = open_tree(tmp_path / "a.db", parts, T0 + timedelta(days=1))
    sync.observe_many("ines", _items("ines"))
    leaf = sync.nodes("ines", level="leaf")[0]

    async def run() -> dict[str, Any]:
        atree = AsyncPersonaTree(sync)
        out = {
            "users": await atree.users(),
            "stats": await atree.stats("ines"),
            "explain": (await atree.explain("ines", leaf.id)).render(),
            "profile": (await atree.profile("ines", budget=120)).text,
            "node": (await atree.node("ines", leaf.id)).content,
            "export": len((await atree.export("ines"))["nodes"]),
        }
        with pytest.raises(UnknownUserError):
            await atree.recall("nobody", "anything")
        with pytest.raises(QueryError):
            await atree.search("ines", "   ")
        plan = await atree.consolidate("ines", dry_run=True)
        out["plan"] = type(plan).__name__
        await atree.aclose()
        assert atree.closed
        with pytest.raises(ClosedError):
            await atree.stats("ines")
        await atree.aclose()  # idempotent
        return out

    out = asyncio.run(run())
    again = open_tree(tmp_path / "a.db", parts, T0 + timedelta(days=1))
    assert out["users"] == again.users() == ["ines"]
    assert out["stats"] == again.stats("ines")
    assert out["explain"] == again.explain("ines", leaf.id).render()
    assert out["profile"] == again.profile("ines", budget=120).text
    assert out["node"] == leaf.content
    assert out["export"] == len(again.export("ines")["nodes"])
    assert out["plan"] == "ConsolidationPlan"
    again.close()


def test_pool_is_bounded_and_open_and_import_work(tmp_path: Path, parts: Parts) -> None:
    source = open_tree(tmp_path / "src.db", parts, T0 + timedelta(days=1))
    source.observe_many("mei", _items("mei"))
    doc = source.export("mei")
    source.close()
    active, peak, guard = [0], [0], threading.Lock()

    def busy() -> None:
        with guard:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with guard:
            active[0] -= 1

    async def run() -> tuple[int, int]:
        async with await AsyncPersonaTree.open(tmp_path / "new.db", embedder=parts.embedder,
                                               judge=parts.judge, max_threads=3) as atree:
            # The loop stays free while the pool is saturated.
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                for _ in range(5):
                    await asyncio.sleep(0.01)
                    ticks += 1

            await asyncio.gather(tick(), *(atree.run(busy) for _ in range(12)))
            report = await atree.import_export(doc)
            assert report.user_id == "mei" and report.observations == len(FACTS)
            return ticks, len(await atree.nodes("mei"))

    ticks, n = asyncio.run(run())
    assert peak[0] == 3 and ticks == 5 and n >= len(FACTS)
    with open_tree(tmp_path / "x.db", parts, T0) as plain, pytest.raises(ConfigError):
        AsyncPersonaTree(plain, max_threads=0)
