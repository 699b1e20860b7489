"""Several processes (app instances) writing through ``PersonaTree`` to one store.

Four spawned processes observe, at the same time, for one shared user and for a user
of their own, against one PostgreSQL and, separately, one SQLite file. Afterwards:
no observation is lost or duplicated, the journal matches the log, every tree passes
its invariant check, the store is healthy, and everything finished within a bound
(a hung process fails the test instead of hanging CI).

Also here: a second ``PersonaTree`` instance notices writes made through the first
(its cache is keyed by the store's per-user version), including a delete and
re-creation of the user with the same number of commits.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from pathlib import Path
from typing import Any, Iterator

import pytest

from personatree.api import PersonaTree
from personatree.embedders import HashingEmbedder
from personatree.errors import StaleStateError
from personatree.types import Level
from tests.pg_fixtures import pg_server_url, pg_url  # noqa: F401 - fixtures

N_PROCS = 4
JOIN_TIMEOUT_S = 150.0


def _worker(urls: list[str], tag: str, n: int, barrier: Any, results: Any) -> None:
    """For each store in turn: observe ``n`` interactions, alternating between the
    shared user and this worker's own. One process serves every store, so the costly
    interpreter start happens once per worker, not once per store."""
    for k, url in enumerate(urls):
        try:
            tree = PersonaTree.open(url, embedder=HashingEmbedder(64))
            barrier.wait(timeout=120)  # start together, so the writers really contend
            give_ups = 0
            t0 = time.perf_counter()
            try:
                for i in range(n):
                    user = "shared" if i % 2 == 0 else f"own-{tag}"
                    text = f"{tag} message {i}: I like hiking and I drink {i % 5} coffees a day."
                    try:
                        tree.observe(user, text, observation_id=f"{tag}-{i}", session_id=f"s-{tag}")
                    except StaleStateError:
                        # Writers of one user wait their turn: a caller never sees this.
                        # Count it (the parent asserts 0) and retry the same id, which
                        # is idempotent, so the data check below still runs.
                        give_ups += 1
                        tree.observe(user, text, observation_id=f"{tag}-{i}", session_id=f"s-{tag}")
            finally:
                tree.close()
            results.put((k, tag, "ok", give_ups, time.perf_counter() - t0))
        except BaseException:  # noqa: BLE001 - report anything to the parent
            results.put((k, tag, "error", traceback.format_exc(), 0.0))
            barrier.abort()  # do not leave the others waiting
            return


def _run_processes(urls: list[str], n: int) -> list[list[tuple[str, str, Any, float]]]:
    """Run the workers over ``urls``; per store, the (tag, status, give-ups, seconds) rows."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(N_PROCS)
    results = ctx.Queue()
    tags = [f"p{i}" for i in range(N_PROCS)]
    procs = [ctx.Process(target=_worker, args=(urls, tag, n, barrier, results), daemon=True) for tag in tags]
    deadline = time.monotonic() + JOIN_TIMEOUT_S * len(urls)
    for p in procs:
        p.start()
    out: list[list[tuple[str, str, Any, float]]] = [[] for _ in urls]
    try:
        for _ in range(len(procs) * len(urls)):
            k, *row = results.get(timeout=max(0.1, deadline - time.monotonic()))
            out[k].append(tuple(row))  # type: ignore[arg-type]
            if row[1] != "ok":
                break
        for p in procs:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
    except Exception as exc:  # queue.Empty: someone hung
        raise AssertionError(f"processes did not finish within the bound (deadlock?): {out}") from exc
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
    errors = [r[2] for rows in out for r in rows if r[1] != "ok"]
    assert not errors, errors[0]
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return out


def _check_store(url: str, n: int, results: list[tuple[str, str, Any, float]]) -> None:
    errors = [r[2] for r in results if r[1] != "ok"]
    assert not errors, errors[0]
    assert sum(r[2] for r in results) == 0, f"callers saw StaleStateError: {results}"
    tags = sorted(r[0] for r in results)
    expected: dict[str, set[str]] = {"shared": set()}
    for tag in tags:
        expected[f"own-{tag}"] = set()
        for i in range(n):
            expected["shared" if i % 2 == 0 else f"own-{tag}"].add(f"{tag}-{i}")
    tree = PersonaTree.open(url, embedder=HashingEmbedder(64))
    try:
        store = tree.store
        assert store.users() == sorted(expected)
        for user, ids in expected.items():
            logged = store.observations(user)
            assert {o.id for o in logged} == ids, f"lost or extra observations for {user}"
            assert [o.seq for o in logged] == list(range(1, len(ids) + 1))  # gap-free log
            events = store.events(user)
            assert sorted(e.payload["observation_id"] for e in events if e.kind == "observe") == sorted(ids)
            graph = tree.graph(user)
            graph.check()  # the tree invariants
            cited = {p.observation_id for node in graph.nodes() for p in node.provenance}
            assert cited <= ids and cited, user
        assert store.integrity_check() == []
    finally:
        tree.close()


@pytest.fixture(params=["sqlite", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One store URL that several clients open."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        yield request.getfixturevalue("pg_url")


def _prepare(url: str) -> None:
    # Migrate once up front, so the timed part measures observing, not schema creation.
    PersonaTree.open(url, embedder=HashingEmbedder(64)).close()


def _four_processes(tmp_path: Path, pg_url: str, n: int) -> None:
    urls = [f"sqlite:///{tmp_path / 'shared.db'}", pg_url]
    for url in urls:
        _prepare(url)
    per_store = _run_processes(urls, n)
    for url, results in zip(urls, per_store):
        assert len(results) == N_PROCS
        _check_store(url, n, results)


def test_four_processes_same_and_different_users(tmp_path: Path, pg_url: str) -> None:
    """One SQLite file, then one PostgreSQL, each shared by the same four processes."""
    _four_processes(tmp_path, pg_url, 24)


@pytest.mark.slow
def test_four_processes_longer_run(tmp_path: Path, pg_url: str) -> None:
    _four_processes(tmp_path, pg_url, 200)


def test_second_instance_notices_writes(shared_url: str) -> None:
    a = PersonaTree.open(shared_url, embedder=HashingEmbedder(64))
    b = PersonaTree.open(shared_url, embedder=HashingEmbedder(64))
    try:
        a.observe("u", "I love hiking in the Alps.", observation_id="o1")
        a.observe("u", "I drink tea every morning.", observation_id="o2")
        assert {n.content for n in b.graph("u").nodes()} >= {"I love hiking in the Alps."}
        before = len(b.graph("u"))
        a.observe("u", "I moved to Oslo last year.", observation_id="o3")
        assert len(b.graph("u")) > before  # b's cached tree was reloaded
        # Delete and re-create with the same number of commits: the versions differ,
        # so b cannot mistake the new tree for the one it cached.
        a.delete_user("u")
        a.observe("u", "I collect vinyl records.", observation_id="x1")
        a.observe("u", "I play the cello.", observation_id="x2")
        a.observe("u", "I am vegetarian.", observation_id="x3")
        contents = {n.content for n in b.graph("u").nodes()}
        assert "I love hiking in the Alps." not in contents
        assert "I collect vinyl records." in contents
    finally:
        a.close()
        b.close()


# -- a writer and a consolidator on one user -------------------------------------------------

_TOPICS = ("I love spicy food and hot curry", "I run along the river every Sunday morning",
           "My sister lives in Oslo near the harbour", "I play chess online with friends at night")


def _busy_writer(url: str, seconds: float, ready: Any, done: Any, results: Any) -> None:
    """Observe at full speed for ``seconds`` or until ``done``; report the acknowledged ids."""
    try:
        tree = PersonaTree.open(url, embedder=HashingEmbedder(64))
        acked: list[str] = []
        ready.set()
        stop = time.monotonic() + seconds
        i = 0
        try:
            while time.monotonic() < stop and not done.is_set():
                items = [{"messages": f"{_TOPICS[(i + k) % 4]} (note {i}-{k}).", "observation_id": f"w-{i}-{k}",
                          "session_id": f"s{i % 7}"} for k in range(2)]
                acked.extend(r.observation_id for r in tree.observe_many("busy", items))
                i += 1
        finally:
            tree.close()
        results.put(("ok", acked))
    except BaseException:  # noqa: BLE001 - report anything to the parent
        ready.set()
        results.put(("error", traceback.format_exc()))


def test_consolidation_applies_while_another_process_writes_the_same_user(shared_url: str) -> None:
    tree = PersonaTree.open(shared_url, embedder=HashingEmbedder(64))
    try:
        tree.observe_many("busy", [{"messages": f"{_TOPICS[i % 4]} (seed {i}).", "observation_id": f"seed-{i}",
                                    "session_id": f"s{i % 5}"} for i in range(60)])
        ctx = mp.get_context("spawn")
        ready, done, results = ctx.Event(), ctx.Event(), ctx.Queue()
        writer = ctx.Process(target=_busy_writer, args=(shared_url, 30.0, ready, done, results), daemon=True)
        writer.start()
        try:
            assert ready.wait(90)
            outcomes, rebased = [], 0
            # Passes run for at least 6 s, and on (up to 25 s) until one has overlapped a
            # write: on a loaded machine the two processes can take turns for a while.
            start = time.monotonic()
            while writer.is_alive():
                elapsed = time.monotonic() - start
                if elapsed > 25.0 or (elapsed > 6.0 and rebased):
                    break
                before = tree.store.version("busy")
                try:
                    plan = tree.consolidate("busy")
                except StaleStateError:
                    outcomes.append("stale")
                    continue
                outcomes.append("applied")
                rebased += plan.rebased_from is not None and plan.base_version > before
            done.set()
            status, payload = results.get(timeout=120)
            writer.join(30)
        finally:
            if writer.is_alive():
                writer.terminate()
                writer.join(5)
        assert status == "ok", payload
        assert outcomes and outcomes.count("stale") == 0, outcomes
        assert len(payload) > 20, "the writer barely wrote: the test did not exercise contention"
        assert rebased >= 1, f"no pass overlapped a write ({outcomes})"
        stored = {o.id for o in tree.store.observations("busy")}
        assert set(payload) <= stored, "an acknowledged observation was lost"
        graph = tree.graph("busy")
        graph.check()
        assert any(True for _ in graph.nodes(Level.MID)), "consolidation formed nothing"
        assert tree.store.integrity_check() == []
    finally:
        tree.close()
