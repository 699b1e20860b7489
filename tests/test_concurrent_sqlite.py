"""Several processes on one SQLite file: no corruption, no lost acknowledged write, and
busy handling with a bounded wait and a clear ``StoreBusyError`` beyond it.

Writer processes each ingest into their own user and into one shared user at the same
time (so commits race on the same version counter), acknowledging every observation
id after its call returns; a reader process exports concurrently. Afterwards the file
passes ``integrity_check()``, every tree passes ``MemoryGraph.check()`` and every
acknowledged id is stored exactly once.

Processes use the ``HashingEmbedder`` with the real offline judge (start-up cost and
contention, not semantics, are under test).
"""

from __future__ import annotations

import json
import sqlite3
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
from personatree.errors import StoreBusyError
from personatree.judge import OfflineJudge
from personatree.schema import SchemaRegistry
from personatree.store import SQLiteStore

from .conftest import T0


def announce(request: pytest.FixtureRequest, message: str) -> None:
    """Print past pytest's output capture, so the figure shows in every run."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print("\n" + message, flush=True)

WRITER = textwrap.dedent(
    r'''
    import json, os, sys, time
    from datetime import datetime, timedelta, timezone
    from personatree import FixedClock, PersonaTree
    from personatree.config import PersonaTreeConfig
    from personatree.embedders import HashingEmbedder
    from personatree.errors import StaleStateError
    from personatree.judge import OfflineJudge
    from personatree.schema import SchemaRegistry
    from personatree.store import SQLiteStore

    db, ack_path, me, rounds, start_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    T0 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    emb, reg = HashingEmbedder(256), SchemaRegistry.load()
    tree = PersonaTree(SQLiteStore(db, busy_timeout_s=60), config=PersonaTreeConfig(), registry=reg, embedder=emb,
                       judge=OfflineJudge(emb, reg), clock=FixedClock(T0))
    texts = ["I love spicy food", "I run every Sunday", "My sister lives in Oslo", "I'm allergic to peanuts"]
    stale = 0
    while time.time() < start_at:  # start together, so the writers really overlap
        time.sleep(0.005)
    with open(ack_path, "a", encoding="utf-8") as ack:
        for r in range(rounds):
            for uid in (me, "shared"):
                items = [{"messages": f"{texts[(r + k) % 4]} with {me} item {r}-{k}.",
                          "observation_id": f"{me}-{uid}-{r}-{k}", "at": T0 + timedelta(minutes=r * 10 + k)}
                         for k in range(3)]
                while True:
                    try:
                        reports = tree.observe_many(uid, items)
                        break
                    except StaleStateError:
                        # Writers of one user take turns, so this must not happen; the
                        # parent asserts the count is 0 (a retry here keeps data whole).
                        stale += 1
                ack.write("".join(f"{uid}\t{x.observation_id}\n" for x in reports))
                ack.flush()
                os.fsync(ack.fileno())
    print(json.dumps({"stale_retries": stale}))
    '''
)

READER = textwrap.dedent(
    r'''
    import json, sys, time
    from personatree.errors import UnknownUserError
    from personatree.store import SQLiteStore
    db, until = sys.argv[1], float(sys.argv[2])
    store = SQLiteStore(db, busy_timeout_s=60)
    reads = 0
    while time.time() < until:
        for uid in store.users():
            nodes, edges, version = store.load_graph_with_version(uid)
            ids = {n.id for n in nodes}
            # A snapshot never shows an edge without both of its ends.
            assert all(e.src in ids and e.dst in ids for e in edges), "torn read"
            store.observations(uid)
            reads += 1
    print(json.dumps({"reads": reads}))
    '''
)


@pytest.fixture(scope="module")
def parts(registry: SchemaRegistry) -> tuple[HashingEmbedder, OfflineJudge]:
    emb = HashingEmbedder(256)
    return emb, OfflineJudge(emb, registry)


def _tree(path: Path, parts: Any, registry: SchemaRegistry, busy: float = 10.0) -> PersonaTree:
    emb, judge = parts
    return PersonaTree(SQLiteStore(path, busy_timeout_s=busy), config=PersonaTreeConfig(), registry=registry,
                       embedder=emb, judge=judge, clock=FixedClock(T0))


def _concurrent_run(tmp_path: Path, parts: Any, registry: SchemaRegistry, writers: int, rounds: int,
                    request: pytest.FixtureRequest) -> None:
    db = tmp_path / "shared.db"
    SQLiteStore(db).close()  # create and migrate once, before the race
    start_at = time.time() + 3.0
    procs = []
    for w in range(writers):
        ack = tmp_path / f"ack{w}.tsv"
        procs.append((ack, subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(ack), f"w{w}", str(rounds), str(start_at)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db), str(start_at + 8)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stale = 0
    for _, p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        stale += json.loads(out.strip().splitlines()[-1])["stale_retries"]
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, err[-3000:]
    reads = json.loads(out.strip().splitlines()[-1])["reads"]

    acked: dict[str, list[str]] = {}
    for ack, _ in procs:
        for line in ack.read_text(encoding="utf-8").splitlines():
            uid, oid = line.split("\t")
            acked.setdefault(uid, []).append(oid)
    tree = _tree(db, parts, registry)
    try:
        assert tree.store.integrity_check() == []
        for uid, ids in acked.items():
            stored = [o.id for o in tree.store.observations(uid)]
            assert len(stored) == len(set(stored)), f"{uid}: an observation stored twice"
            assert set(ids) <= set(stored), f"{uid}: {len(set(ids) - set(stored))} acknowledged writes lost"
            tree.graph(uid).check()
            observe_events = [e for e in tree.store.events(uid) if e.kind == "observe"]
            assert len(observe_events) == len(stored)
        assert len(acked["shared"]) == writers * rounds * 3
        assert stale == 0, f"writers of one user saw StaleStateError {stale} times instead of waiting their turn"
    finally:
        tree.close()
    message = (f"concurrent sqlite: {writers} writers x {rounds} rounds, {sum(map(len, acked.values()))} "
               f"acknowledged writes all present; {stale} stale retries; {reads} concurrent snapshot reads")
    announce(request, message)


@pytest.mark.timeout(600)
def test_concurrent_writers_lose_nothing(tmp_path: Path, parts: Any, registry: SchemaRegistry,
                                         request: pytest.FixtureRequest) -> None:
    _concurrent_run(tmp_path, parts, registry, writers=3, rounds=12, request=request)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_concurrent_writers_lose_nothing_long(tmp_path: Path, parts: Any, registry: SchemaRegistry,
                                              request: pytest.FixtureRequest) -> None:
    _concurrent_run(tmp_path, parts, registry, writers=6, rounds=60, request=request)


def _hold_write_lock(path: Path, seconds: float, ready: threading.Event) -> None:
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        ready.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_busy_beyond_the_wait_is_a_clear_error_and_writes_nothing(tmp_path: Path, parts: Any,
                                                                 registry: SchemaRegistry) -> None:
    db = tmp_path / "busy.db"
    tree = _tree(db, parts, registry, busy=0.5)
    try:
        tree.observe("ana", "I love spicy food.", at=T0)
        before = (tree.store.counts(), tree.store.checksum("ana"))
        ready = threading.Event()
        holder = threading.Thread(target=_hold_write_lock, args=(db, 4.0, ready))
        holder.start()
        assert ready.wait(10)
        started = time.monotonic()
        with pytest.raises(StoreBusyError, match="busy_timeout_s") as info:
            tree.observe("ana", "I run every Sunday.", at=T0)
        waited = time.monotonic() - started
        holder.join()
        # Bounded: it waited about the configured 0.5 s, not the holder's 4 s.
        assert 0.4 <= waited < 3.0, waited
        assert "locked" in str(info.value)
        assert (tree.store.counts(), tree.store.checksum("ana")) == before
        # The memory is usable right after, and the failed call can simply be retried.
        rep = tree.observe("ana", "I run every Sunday.", at=T0)
        assert not rep.duplicate and tree.store.integrity_check() == []
    finally:
        tree.close()


def test_busy_within_the_wait_succeeds(tmp_path: Path, parts: Any, registry: SchemaRegistry) -> None:
    db = tmp_path / "busy.db"
    tree = _tree(db, parts, registry, busy=10.0)
    try:
        tree.observe("ana", "I love spicy food.", at=T0)
        ready = threading.Event()
        holder = threading.Thread(target=_hold_write_lock, args=(db, 0.8, ready))
        holder.start()
        assert ready.wait(10)
        started = time.monotonic()
        rep = tree.observe("ana", "I run every Sunday.", at=T0)
        waited = time.monotonic() - started
        holder.join()
        assert not rep.duplicate and waited >= 0.5, waited
        assert tree.store.counts("ana")["observations"] == 2
    finally:
        tree.close()
