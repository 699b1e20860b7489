"""Crash safety: SIGKILL a writer at random points, many times; nothing acknowledged is lost.

A child process writes to a real SQLite file in a loop — ``observe_many`` batches, and
in the second test ``consolidate`` passes between them — and appends the ids of every
observation whose call *returned* to an acknowledgement file (flushed and fsynced after
the call returns). The parent kills it with SIGKILL at a random point, either

* from outside, after a random delay (a random point anywhere: Python, the embedder,
  the judge, SQLite), or
* from inside SQLite: a progress handler on the child's connection SIGKILLs the process
  after a random number of virtual-machine steps, i.e. in the middle of a statement or
  a transaction (reads, the commit's inserts, the WAL append).

A third campaign runs a writer and a consolidator side by side on the same users, on
SQLite and on PostgreSQL, and kills both (at least 100 kills in all), so consolidations
die while rebasing onto the writer's commits and writers die holding their user's turn.

After every kill the parent opens the file and checks: ``integrity_check()`` is empty,
each user's tree loads and passes ``MemoryGraph.check()``, every acknowledged
observation is stored, every stored observation has its journal entry, and every leaf
cites a stored observation. The number of kills survived is printed.

Children use the ``HashingEmbedder`` with the real offline judge: start-up is what a
kill costs, and loading the sentence-transformers model would dominate it.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from personatree import FixedClock, PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.embedders import HashingEmbedder
from personatree.judge import OfflineJudge
from personatree.schema import SchemaRegistry
from personatree.store import SQLiteStore, open_store
from personatree.types import Level

from .pg_fixtures import pg_server_url, pg_url  # noqa: F401 - fixtures

from .conftest import T0


def announce(request: pytest.FixtureRequest, message: str) -> None:
    """Print past pytest's output capture, so the figure shows in every run."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print("\n" + message, flush=True)

USERS = ("ana", "bo")
KILLS: dict[str, int] = {}

CHILD = textwrap.dedent(
    r'''
    import os, random, signal, sys
    from datetime import datetime, timedelta, timezone
    from personatree import FixedClock, PersonaTree
    from personatree.config import PersonaTreeConfig
    from personatree.embedders import HashingEmbedder
    from personatree.judge import OfflineJudge
    from personatree.schema import SchemaRegistry
    from personatree.store import SQLiteStore

    db, ack_path, mode, seed, inner = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    rng = random.Random(seed)
    T0 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    store = SQLiteStore(db, busy_timeout_s=30)
    emb, reg = HashingEmbedder(256), SchemaRegistry.load()
    tree = PersonaTree(store, config=PersonaTreeConfig(), registry=reg, embedder=emb,
                       judge=OfflineJudge(emb, reg), clock=FixedClock(T0 + timedelta(days=400)))
    if inner:
        # Die inside SQLite after a random number of VM steps (every 20 instructions).
        budget = [rng.randint(1, inner)]
        def die():
            budget[0] -= 1
            if budget[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            return 0
        store._conn().set_progress_handler(die, 20)
    texts = ["I love spicy food.", "I run every Sunday morning.", "My sister Mia lives in Oslo.",
             "I'm allergic to peanuts.", "I hate waking up early.", "Spicy curry is my favourite dish.",
             "I go swimming every Sunday.", "I want to learn Spanish this year."]
    if mode == "consolidate":
        import personatree.consolidate  # noqa: F401 - load before "ready", so kills land in the work
    ack = open(ack_path, "a", encoding="utf-8")
    print("ready", flush=True)
    step = 0
    while True:
        uid = rng.choice(["ana", "bo"])
        items = []
        for _ in range(rng.randint(1, 12)):
            n = rng.randrange(10**9)
            items.append({"messages": rng.choice(texts) + f" (note {n})", "observation_id": f"{seed}-{step}-{n}",
                          "at": T0 + timedelta(minutes=rng.randrange(60 * 24 * 300)),
                          "session_id": f"s{rng.randrange(20)}"})
        if rng.random() < 0.2 and step:
            items.append(dict(items[0]))  # a redelivery inside the batch
        reports = tree.observe_many(uid, items, batch_size=rng.choice([1, 3, 64]))
        # Acknowledge only after the call returned, durably.
        ack.write("".join(f"{uid}\t{r.observation_id}\n" for r in reports))
        ack.flush()
        os.fsync(ack.fileno())
        step += 1
        if mode == "consolidate" and step % 2 == 0:
            print("C", flush=True)
            tree.consolidate(uid)
            print("c", flush=True)
    '''
)


def _reader(stream: Any, lines: "queue.Queue[str]") -> None:
    for line in iter(stream.readline, ""):
        lines.put(line.strip())


def _run_child(db: Path, ack: Path, mode: str, seed: int, rng: random.Random) -> str:
    """Start a writer, kill it at a random point, return how it died."""
    inner = rng.choice([0, 0, 2_000, 20_000]) if mode == "observe" else rng.choice([0, 0, 5_000, 50_000])
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(ack), mode, str(seed), str(inner)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert first == "ready", first
        if inner:
            how = "inside-sqlite"
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is None:  # the budget outlived the run: kill from outside instead
                proc.send_signal(signal.SIGKILL)
                how = "outside"
        else:
            how = "outside"
            if mode == "consolidate":
                # Wait for a pass to start, then kill somewhere inside it.
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        if lines.get(timeout=1) == "C":
                            how = "during-consolidation"
                            break
                    except queue.Empty:
                        if proc.poll() is not None:
                            break
                time.sleep(rng.uniform(0.0, 0.4))
            else:
                time.sleep(rng.uniform(0.02, 0.7))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == -signal.SIGKILL, f"writer died on its own ({proc.returncode}):\n{err[-3000:]}"
    return how


@pytest.fixture(scope="module")
def verifier_parts(registry: SchemaRegistry) -> tuple[HashingEmbedder, OfflineJudge]:
    emb = HashingEmbedder(256)
    return emb, OfflineJudge(emb, registry)


def _verify(db: Path | str, ack: Path, parts: tuple[HashingEmbedder, OfflineJudge], registry: SchemaRegistry,
            context: str) -> int:
    """All post-crash checks; returns how many observations are stored."""
    emb, judge = parts
    acked: dict[str, set[str]] = {u: set() for u in USERS}
    if ack.exists():
        for line in ack.read_text(encoding="utf-8").splitlines():
            uid, oid = line.split("\t")
            acked[uid].add(oid)
    store = open_store(str(db))
    tree = PersonaTree(store, config=PersonaTreeConfig(), registry=registry, embedder=emb, judge=judge,
                       clock=FixedClock(T0))
    total = 0
    try:
        problems = store.integrity_check()
        assert problems == [], f"{context}: {problems}"
        for uid in USERS:
            stored = {o.id for o in store.observations(uid)}
            missing = acked[uid] - stored
            assert not missing, f"{context}: {len(missing)} acknowledged observations of {uid} lost"
            total += len(stored)
            if store.version(uid) == 0:
                assert not stored
                continue
            graph = tree.graph(uid)
            graph.check()
            journaled = {str(e.payload["observation_id"]) for e in store.events(uid) if e.kind == "observe"}
            assert stored <= journaled, f"{context}: observations without their journal entry"
            for leaf in graph.nodes(Level.LEAF):
                assert {p.observation_id for p in leaf.provenance} <= stored, f"{context}: leaf of a lost write"
    finally:
        tree.close()
    return total


def _campaign(tmp_path: Path, mode: str, kills: int, seed: int, parts: Any, registry: SchemaRegistry,
              request: pytest.FixtureRequest) -> None:
    db, ack = tmp_path / "crash.db", tmp_path / "acked.tsv"
    rng = random.Random(seed)
    ways: dict[str, int] = {}
    stored = 0
    for i in range(kills):
        child_seed = seed * 1000 + i
        how = _run_child(db, ack, mode, child_seed, rng)
        ways[how] = ways.get(how, 0) + 1
        stored = _verify(db, ack, parts, registry, f"{mode} kill {i + 1} (seed {child_seed}, {how})")
    KILLS[mode] = KILLS.get(mode, 0) + kills
    message = (f"crash safety [{mode}]: survived {kills} SIGKILLs {ways}; "
               f"{stored} observations stored, all acknowledged ones present")
    announce(request, message)
    assert stored > 0, "the writers never got anything done; the kill timing is off"


@pytest.mark.timeout(600)
def test_sigkill_during_observe_many(tmp_path: Path, verifier_parts: Any, registry: SchemaRegistry,
                                     request: pytest.FixtureRequest) -> None:
    _campaign(tmp_path, "observe", 20, 9001, verifier_parts, registry, request)
    # The journal survived the kills in step with the tree: replaying it recreates exactly
    # the stored nodes and edges. (Node ids and structure, not ``equal``: the offline judge
    # may type a content-free fragment differently when it is extracted in another batch.)
    emb, judge = verifier_parts
    tree = PersonaTree(SQLiteStore(tmp_path / "crash.db"), config=PersonaTreeConfig(), registry=registry,
                       embedder=emb, judge=judge, clock=FixedClock(T0))
    try:
        for uid in tree.users():
            before = tree.graph(uid)
            tree.rebuild(uid)
            after = tree.graph(uid)
            assert {n.id for n in before.nodes()} == {n.id for n in after.nodes()}, uid
            assert {(e.src, e.dst, e.kind) for e in before.edges()} == {(e.src, e.dst, e.kind) for e in after.edges()}
    finally:
        tree.close()


@pytest.mark.timeout(600)
def test_sigkill_during_consolidation(tmp_path: Path, verifier_parts: Any, registry: SchemaRegistry,
                                      request: pytest.FixtureRequest) -> None:
    pytest.importorskip("personatree.consolidate")
    _campaign(tmp_path, "consolidate", 10, 4242, verifier_parts, registry, request)
    # After all the kills, consolidation and rebuild still work on the survivors' data.
    emb, judge = verifier_parts
    tree = PersonaTree(SQLiteStore(tmp_path / "crash.db"), config=PersonaTreeConfig(), registry=registry,
                       embedder=emb, judge=judge, clock=FixedClock(T0))
    try:
        for uid in tree.users():
            tree.consolidate(uid)
            tree.graph(uid).check()
    finally:
        tree.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("mode,kills", [("observe", 150), ("consolidate", 60)])
def test_sigkill_many_times(tmp_path: Path, verifier_parts: Any, registry: SchemaRegistry,
                            request: pytest.FixtureRequest, mode: str, kills: int) -> None:
    if mode == "consolidate":
        pytest.importorskip("personatree.consolidate")
    _campaign(tmp_path, mode, kills, int(os.environ.get("PERSONATREE_CRASH_SEED", "77")), verifier_parts,
              registry, request)


# -- a writer and a consolidator side by side, both killed -----------------------------------

PAIR_CHILD = textwrap.dedent(
    r'''
    import os, random, signal, sys, time
    from datetime import datetime, timedelta, timezone
    from personatree import FixedClock, PersonaTree
    from personatree.config import PersonaTreeConfig
    from personatree.embedders import HashingEmbedder
    from personatree.errors import StaleStateError, UnknownUserError
    from personatree.judge import OfflineJudge
    from personatree.schema import SchemaRegistry
    from personatree.store import open_store

    url, ack_path, role, seed, inner = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    rng = random.Random(seed)
    T0 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    store = open_store(url, busy_timeout_s=30)
    emb, reg = HashingEmbedder(256), SchemaRegistry.load()
    tree = PersonaTree(store, config=PersonaTreeConfig(busy_timeout_s=30), registry=reg, embedder=emb,
                       judge=OfflineJudge(emb, reg), clock=FixedClock(T0 + timedelta(days=400)))
    if inner:
        # Die inside SQLite after a random number of VM steps (every 20 instructions).
        budget = [rng.randint(1, inner)]
        def die():
            budget[0] -= 1
            if budget[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            return 0
        store._conn().set_progress_handler(die, 20)
    texts = ["I love spicy food.", "I run every Sunday morning.", "My sister Mia lives in Oslo.",
             "I'm allergic to peanuts.", "Spicy curry is my favourite dish.", "I go swimming every Sunday."]
    if role == "consolidator":
        import personatree.consolidate  # noqa: F401 - load before "ready", so kills land in the work
    print("ready", flush=True)
    if role == "consolidator":
        while True:
            uid = rng.choice(["ana", "bo"])
            print("C", flush=True)
            try:
                tree.consolidate(uid)
                print("c", flush=True)
            except UnknownUserError:
                time.sleep(0.02)
            except StaleStateError:
                print("s", flush=True)
    ack = open(ack_path, "a", encoding="utf-8")
    step = 0
    while True:
        uid = rng.choice(["ana", "bo"])
        items = []
        for _ in range(rng.randint(1, 6)):
            n = rng.randrange(10**9)
            items.append({"messages": rng.choice(texts) + f" (note {n})", "observation_id": f"{seed}-{step}-{n}",
                          "at": T0 + timedelta(minutes=rng.randrange(60 * 24 * 300)),
                          "session_id": f"s{rng.randrange(20)}"})
        reports = tree.observe_many(uid, items, batch_size=rng.choice([1, 3, 64]))
        ack.write("".join(f"{uid}\t{r.observation_id}\n" for r in reports))
        ack.flush()
        os.fsync(ack.fileno())
        step += 1
        time.sleep(0.01)  # a chatting user, not a bulk import: the tree stays small
    '''
)


def _pair_round(url: str, ack: Path, seed: int, rng: random.Random, sqlite: bool) -> str:
    """Start a writer and a consolidator on the same users, kill both inside a pass."""
    inner = rng.choice([0, 0, 0, 20_000]) if sqlite else 0
    procs = {
        role: subprocess.Popen(
            [sys.executable, "-c", PAIR_CHILD, url, str(ack), role, str(seed * 2 + k), str(inner if k == 0 else 0)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k, role in enumerate(("writer", "consolidator"))
    }
    lines: dict[str, "queue.Queue[str]"] = {}
    for role, proc in procs.items():
        lines[role] = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines[role]), daemon=True).start()
    how = "outside"
    try:
        for role in procs:
            first = lines[role].get(timeout=90)
            assert first == "ready", (role, first)
        # Let the writer get going and some passes finish (so the tree grows mids), then
        # wait for a pass to start and kill both inside it.
        time.sleep(rng.uniform(0.05, 0.6))
        finish = rng.choice([0, 0, 1])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and procs["consolidator"].poll() is None:
            try:
                line = lines["consolidator"].get(timeout=0.5)
            except queue.Empty:
                continue
            if line in ("c", "s"):
                finish -= 1
            elif line == "C" and finish <= 0:
                how = "during-consolidation"
                break
        time.sleep(rng.uniform(0.0, 0.3))
        if procs["writer"].poll() is not None:
            how += "+inside-sqlite"
        order = list(procs.values())
        rng.shuffle(order)
        for proc in order:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            time.sleep(rng.uniform(0.0, 0.05))
        for proc in procs.values():
            proc.wait(timeout=30)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for role, proc in procs.items():
        err = proc.stderr.read() if proc.stderr else ""
        assert proc.returncode == -signal.SIGKILL, f"{role} died on its own ({proc.returncode}):\n{err[-3000:]}"
    return how


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend,rounds", [("sqlite", 28), ("postgres", 24)])
def test_sigkill_writer_and_consolidator_side_by_side(tmp_path: Path, verifier_parts: Any, registry: SchemaRegistry,
                                                      request: pytest.FixtureRequest, backend: str,
                                                      rounds: int) -> None:
    """Two kills per round (the writer and a consolidation running beside it on the same
    users), every check after each round; locks held by a killed process must not
    outlive it (the next round's writers would wait on them)."""
    pytest.importorskip("personatree.consolidate")
    url = str(tmp_path / "pair.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    ack = tmp_path / "acked.tsv"
    seed = int(os.environ.get("PERSONATREE_CRASH_SEED", "31"))
    rng = random.Random(seed)
    ways: dict[str, int] = {}
    stored = 0
    start = time.monotonic()
    for i in range(rounds):
        how = _pair_round(url, ack, seed * 1000 + i, rng, backend == "sqlite")
        ways[how] = ways.get(how, 0) + 1
        stored = _verify(url, ack, verifier_parts, registry, f"{backend} round {i + 1} ({how})")
    emb, judge = verifier_parts
    tree = PersonaTree(open_store(url), config=PersonaTreeConfig(), registry=registry, embedder=emb, judge=judge,
                       clock=FixedClock(T0))
    try:
        mids = sum(sum(1 for _ in tree.graph(u).nodes(Level.MID)) for u in tree.users())
    finally:
        tree.close()
    announce(request, f"crash safety [writer+consolidator, {backend}]: survived {2 * rounds} SIGKILLs "
                      f"in {time.monotonic() - start:.0f} s {ways}; {stored} observations stored, all acknowledged "
                      f"ones present; {mids} mids formed")
    assert stored > 0 and mids > 0, "the children never got anything done; the kill timing is off"
