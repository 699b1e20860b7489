"""SQLite-specific behaviour: WAL and fsync settings, migrations, real deletion,
several writer processes, bounded lock waits, URLs."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.synchronize
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from personatree.errors import ConfigError, MigrationError, StoreBusyError, StoreError
from personatree.ports import ChangeSet, JournalEvent
from personatree.store import MemoryStore, SQLiteStore, latest_version, open_store
from personatree.store.migrate import Migration, available_migrations, migrate, split_sql
from personatree.types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance

T0 = datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc)


def _obs(user: str, oid: str, text: str) -> Observation:
    return Observation(oid, user, "s1", T0, (Message("user", text),), {"note": text})


def _node(user: str, nid: str, content: str, level: Level = Level.LEAF) -> Node:
    prov = (Provenance("o1", 0, 0, T0, "s1"),) if level is Level.LEAF else ()
    return Node(nid, user, level, "preference", content, {"topic": content}, T0, T0, 0.3,
                n_support=1, embedding=np.ones(4, dtype=np.float32) / 2, provenance=prov)


def _change(user: str, i: int, tag: str, expected: int | None = None) -> ChangeSet:
    return ChangeSet(
        user,
        observations=[_obs(user, f"{tag}-o{i}", f"{tag} says {i}")],
        upsert_nodes=[_node(user, f"{tag}-n{i}", f"{tag} node {i}")],
        events=[JournalEvent("observe", {"observation_id": f"{tag}-o{i}"}, T0)],
        expected_version=expected,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


# -- settings --------------------------------------------------------------------------------


def test_wal_full_sync_and_foreign_keys(db: Path) -> None:
    with SQLiteStore(db) as store:
        raw = sqlite3.connect(db)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file
        raw.close()
        conn = store._conn()  # per-connection settings of the store's own connection
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert store.integrity_check() == []


def test_data_survives_reopen(db: Path) -> None:
    with SQLiteStore(db) as store:
        store.commit(_change("u", 0, "a"))
        store.set_meta("k", "v")
    with SQLiteStore(db) as store:
        assert store.version("u") == 1
        assert [o.id for o in store.observations("u")] == ["a-o0"]
        assert store.get_meta("k") == "v"
        assert len(store.load_graph("u")[0]) == 1


def test_closed_store_refuses(db: Path) -> None:
    store = SQLiteStore(db)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.users()


def test_bad_busy_timeout() -> None:
    with pytest.raises(ConfigError):
        SQLiteStore("x.db", busy_timeout_s=0)


# -- migrations --------------------------------------------------------------------------------


def test_shipped_migrations_are_numbered() -> None:
    steps = available_migrations()
    assert [m.version for m in steps] == list(range(1, len(steps) + 1))
    assert latest_version() == len(steps) >= 1
    assert all(split_sql(m.sql) for m in steps)


def test_migrations_idempotent_on_reopen(db: Path) -> None:
    for _ in range(3):
        with SQLiteStore(db) as store:
            assert store.schema_version() == latest_version()
    raw = sqlite3.connect(db)
    rows = raw.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    raw.close()
    assert rows == [(m.version, m.name) for m in available_migrations()]


def test_later_migration_applies_once_and_failure_rolls_back(db: Path) -> None:
    SQLiteStore(db).close()
    extra = [*available_migrations(), Migration(latest_version() + 1, "extra", "CREATE TABLE extra (x INTEGER);")]
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrate(conn, extra) == latest_version() + 1
    assert migrate(conn, extra) == latest_version() + 1  # nothing pending: a no-op
    broken = [*extra, Migration(len(extra) + 1, "broken", "CREATE TABLE ok_part (x);\nCREATE TABLE extra (x);")]
    with pytest.raises(MigrationError, match="failed"):
        migrate(conn, broken)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(extra)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'ok_part'").fetchone()[0] == 0
    with pytest.raises(MigrationError, match="numbered"):
        migrate(conn, [extra[-1]])
    conn.close()


def test_content_version_migration_starts_it_at_the_version(db: Path) -> None:
    # A file written before the content version existed: its users' entries elsewhere
    # were keyed by the version, so the content version starts equal to it.
    conn = sqlite3.connect(db, isolation_level=None)
    before = [m for m in available_migrations() if m.name != "content_version"]
    assert len(before) == latest_version() - 1
    migrate(conn, before)
    conn.execute("INSERT INTO users (user_id, version, obs_seq, event_seq, created_at, updated_at) "
                 "VALUES ('u', 7, 0, 0, '2024-01-01', '2024-01-01')")
    conn.close()
    with SQLiteStore(db) as store:
        assert store.versions("u") == (7, 7)


def test_newer_store_raises_migration_error(db: Path) -> None:
    SQLiteStore(db).close()
    raw = sqlite3.connect(db)
    raw.execute(f"PRAGMA user_version = {latest_version() + 1}")
    raw.commit()
    raw.close()
    with pytest.raises(MigrationError, match="newer than this library"):
        SQLiteStore(db)


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not sqlite " * 100)
    with pytest.raises(StoreError, match="not a usable"):
        SQLiteStore(path)


def test_split_sql_keeps_triggers_whole() -> None:
    script = "-- a; comment\nCREATE TABLE a (x);\nCREATE TRIGGER t BEFORE UPDATE ON a BEGIN SELECT 1; SELECT 2; END;\n"
    parts = split_sql(script)
    assert len(parts) == 2 and parts[1].endswith("END;")


def test_observation_log_is_append_only_in_sql(db: Path) -> None:
    with SQLiteStore(db) as store:
        store.commit(_change("u", 0, "a"))
    raw = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("UPDATE observations SET messages = '[]'")
    raw.close()


def test_integrity_check_reports_dangling_edges(db: Path) -> None:
    with SQLiteStore(db) as store:
        store.commit(_change("u", 0, "a"))
        raw = sqlite3.connect(db)  # foreign keys are off by default on a raw connection
        raw.execute("INSERT INTO edges VALUES ('u', 'a-n0', 'ghost', 'support', 0.5, 0.3, '', '2024')")
        raw.commit()
        raw.close()
        problems = store.integrity_check()
    assert any("missing node" in p for p in problems)
    assert any("foreign_key_check" in p for p in problems)


# -- real deletion ------------------------------------------------------------------------------


def test_delete_user_and_vacuum_leave_no_bytes(db: Path) -> None:
    secret = {
        "user": "zed-user-7731",
        "obs": "I keep my passport in the blue drawer 9931",
        "node": "purple-giraffe-secret-42",
        "cache": "cached-llm-answer-5577",
        "session": "session-kappa-0042",
        "event": "journal-payload-8813",
    }
    keep = "bob-keeps-this-string-1234"
    with SQLiteStore(db) as store:
        u = secret["user"]
        store.commit(ChangeSet(
            u,
            observations=[Observation("o1", u, secret["session"], T0, (Message("user", secret["obs"]),), {})],
            upsert_nodes=[_node(u, "leaf", secret["node"]), _node(u, "mid", secret["node"] + "-mid", Level.MID)],
            upsert_edges=[Edge("leaf", "mid", EdgeKind.SUPPORT, 0.9, 0.5, secret["node"], T0)],
            events=[JournalEvent("observe", {"note": secret["event"]}, T0)],
        ))
        store.cache_put("llm", "prompt-hash", secret["cache"], user_id=u)
        store.commit(_change("bob", 0, keep))
        store.delete_user(u)
        store.vacuum()
        blob = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
        assert keep.encode() in blob  # the scan does see stored text
        for value in secret.values():
            assert value.encode() not in blob, value
        assert store.integrity_check() == []
        assert store.users() == ["bob"]


# -- concurrency --------------------------------------------------------------------------------


def _writer(path: str, tag: str, n: int, barrier: "mp.synchronize.Barrier") -> None:
    store = SQLiteStore(path, busy_timeout_s=30.0)
    barrier.wait(timeout=60)  # start writing together, so the writers really contend
    try:
        for i in range(n):
            store.commit(_change(f"user-{tag}", i, tag))
            store.commit(_change("shared", i, tag))  # expected_version=None: never stale
    finally:
        store.close()


def test_two_processes_write_one_file(db: Path) -> None:
    SQLiteStore(db).close()  # migrate once up front; the writers also race on open
    n = 50
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(db), tag, n, barrier)) for tag in ("p", "q")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    with SQLiteStore(db) as store:
        assert store.integrity_check() == []
        assert store.users() == ["shared", "user-p", "user-q"]
        for tag in ("p", "q"):
            assert store.version(f"user-{tag}") == n
            assert [o.seq for o in store.observations(f"user-{tag}")] == list(range(1, n + 1))
        shared = store.observations("shared")
        assert store.version("shared") == 2 * n
        assert [o.seq for o in shared] == list(range(1, 2 * n + 1))
        assert {o.id for o in shared} == {f"{t}-o{i}" for t in ("p", "q") for i in range(n)}
        assert len(store.load_graph("shared")[0]) == 2 * n
        assert [e.seq for e in store.events("shared")] == list(range(1, 2 * n + 1))


def _forked_commit(store: SQLiteStore) -> None:
    store.commit(_change("child", 0, "c"))  # must open its own connection, not the parent's


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_store_object_survives_fork(db: Path) -> None:
    store = SQLiteStore(db)
    store.commit(_change("parent", 0, "p"))
    child = mp.get_context("fork").Process(target=_forked_commit, args=(store,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert store.users() == ["child", "parent"]  # the parent's connection still works
    assert store.integrity_check() == []
    store.close()


def test_held_write_lock_gives_bounded_busy_error(db: Path) -> None:
    store = SQLiteStore(db, busy_timeout_s=0.2)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with pytest.raises(StoreBusyError, match="busy_timeout_s"):
            store.commit(_change("u", 0, "a"))
        elapsed = time.monotonic() - start
        assert 0.15 <= elapsed < 2.0
        assert store.users() == []  # WAL: reads still work while a writer holds the lock
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.commit(_change("u", 0, "a")) == 1  # and the store recovers
    store.close()


def test_threads_share_a_store(db: Path) -> None:
    import threading

    store = SQLiteStore(db)
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            for i in range(10):
                store.commit(_change("shared", i, tag))
                store.load_graph("shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.version("shared") == 30 and store.integrity_check() == []
    store.close()


# -- URLs ------------------------------------------------------------------------------------


def test_open_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///rel.db") as s:
        assert isinstance(s, SQLiteStore) and s.path == Path("rel.db")
    assert (tmp_path / "rel.db").exists()
    absolute = tmp_path / "sub" / "abs.db"
    with open_store(f"sqlite:///{absolute}") as s:  # sqlite:////abs/path
        assert s.path == absolute
    with open_store(str(tmp_path / "plain.db")) as s:
        assert isinstance(s, SQLiteStore)
    with open_store(tmp_path / "pathobj.db") as s:
        assert isinstance(s, SQLiteStore)


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        ("mysql://host/db", "'mysql'"),
        ("ftp://x", "'ftp'"),
        ("", "non-empty"),
        ("sqlite://", "sqlite:///"),
        ("sqlite:///:memory:", "memory://"),
        ("memory://somewhere", "no path"),
    ],
)
def test_open_store_rejects(url: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        open_store(url)


def test_time_text_sorts_like_time(db: Path) -> None:
    with SQLiteStore(db) as store:
        for i, delta in enumerate([timedelta(0), timedelta(microseconds=1), timedelta(days=400)]):
            o = Observation(f"o{i}", "u", "s", T0 + delta, (Message("user", "x"),))
            store.commit(ChangeSet("u", observations=[o]))
    raw = sqlite3.connect(db)
    ats = [r[0] for r in raw.execute("SELECT at FROM observations ORDER BY at")]
    raw.close()
    assert [datetime.fromisoformat(a) for a in ats] == sorted(datetime.fromisoformat(a) for a in ats)
    assert all(len(a) == len(ats[0]) for a in ats)
