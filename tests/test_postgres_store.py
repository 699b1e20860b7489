"""PostgreSQL-specific behaviour: URLs, migrations, embedding column types, NUL-safe
text, advisory locks, optimistic versions across instances, fork safety, and the
``migrate`` copy between SQLite and PostgreSQL (the shared semantics are in
``test_store_contract.py``)."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from personatree.errors import ConfigError, MigrationError, StaleStateError, StoreBusyError, StoreError
from personatree.ports import ChangeSet, JournalEvent
from personatree.store import MemoryStore, SQLiteStore, open_store
from personatree.types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance
from tests.pg_fixtures import drop_schema, fresh_schema_url, pg_server_url, pg_url  # noqa: F401

psycopg = pytest.importorskip("psycopg")

from personatree.store.pg.text import esc, unesc  # noqa: E402
from personatree.store.postgres import (  # noqa: E402
    PostgresStore,
    latest_pg_version,
    split_url,
)

T0 = datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc)


def _node(user: str, nid: str, dim: int | None = 8, seed: int = 0, level: Level = Level.LEAF) -> Node:
    emb = None
    if dim is not None:
        emb = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    prov = (Provenance("o1", 0, 0, T0, "s1"),) if level is Level.LEAF else ()
    return Node(nid, user, level, "preference", f"content of {nid}", {"k": nid}, T0, T0, 0.25,
                n_support=1, embedding=emb, provenance=prov)


def _change(user: str, i: int, expected: int | None = None) -> ChangeSet:
    return ChangeSet(
        user,
        observations=[Observation(f"o{i}", user, "s1", T0, (Message("user", f"message {i}"),))],
        upsert_nodes=[_node(user, f"n{i}", seed=i)],
        events=[JournalEvent("observe", {"observation_id": f"o{i}"}, T0)],
        expected_version=expected,
    )


@pytest.fixture
def store(pg_url: str):
    s = PostgresStore(pg_url, busy_timeout_s=2.0)
    yield s
    s.close()


# -- URLs and opening ----------------------------------------------------------------------------


def test_split_url_and_masking() -> None:
    assert split_url("postgres://u:pw@h:5/db?schema=s&sslmode=disable") == (
        "postgresql://u:pw@h:5/db?sslmode=disable", "s")
    assert split_url("postgresql+psycopg://h/db") == ("postgresql://h/db", None)
    with pytest.raises(ConfigError):
        split_url("mysql://h/db")


def test_open_store_urls(pg_url: str) -> None:
    with open_store(pg_url) as s:
        assert isinstance(s, PostgresStore) and s.schema == split_url(pg_url)[1]
        assert s.schema_version() == latest_pg_version()
    with open_store(pg_url.replace("postgresql://", "postgres://", 1)) as s:
        assert isinstance(s, PostgresStore)


def test_unreachable_server_is_a_clean_error_without_password(tmp_path: Path) -> None:
    url = f"postgresql://me:secret@/db?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreError) as info:
        PostgresStore(url, busy_timeout_s=1.0)
    assert "secret" not in str(info.value) and "***" in str(info.value)


def test_repr_masks_the_password(pg_url: str) -> None:
    # The test server trusts local connections, so any password is accepted.
    with PostgresStore(pg_url.replace("postgres:@", "postgres:secret@", 1)) as s:
        assert "secret" not in repr(s) and "secret" not in s.url and "***" in s.url


def test_bad_parameters(pg_url: str) -> None:
    with pytest.raises(ConfigError):
        PostgresStore(pg_url, busy_timeout_s=0)
    with pytest.raises(ConfigError):
        PostgresStore(pg_url, pool_size=0)


def test_closed_store_refuses(store: PostgresStore) -> None:
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.users()


# -- migrations -----------------------------------------------------------------------------------


def test_migrations_apply_once_and_concurrent_openers_agree(pg_server_url: str) -> None:
    url = fresh_schema_url(pg_server_url)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            PostgresStore(url).close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
        with PostgresStore(url) as s, s._conn() as conn:
            rows = conn.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
            assert [r[0] for r in rows] == list(range(1, latest_pg_version() + 1))
            assert s.integrity_check() == []
    finally:
        drop_schema(url)


def test_newer_schema_is_refused(store: PostgresStore, pg_url: str) -> None:
    with store._conn() as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, 'future')", (latest_pg_version() + 1,))
    with pytest.raises(MigrationError, match="newer"):
        PostgresStore(pg_url)
    assert any("schema version" in p for p in store.integrity_check())


# -- embeddings -------------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", [None, False])
def test_embedding_column_types_round_trip_exactly(pg_server_url: str, vector: bool | None) -> None:
    url = fresh_schema_url(pg_server_url)
    try:
        with PostgresStore(url, vector=vector) as s:
            assert s.embedding_type == ("vector" if vector is None else "real[]")
            special = np.array([0.0, -0.0, 1e-38, -3.4e38, np.pi, 1 / 3, 7.0, -1.5], dtype=np.float32)
            nodes = [_node("u", "a", dim=384, seed=1), _node("u", "b", dim=None), _node("u", "c", dim=8)]
            nodes[2].embedding = special
            s.commit(ChangeSet("u", upsert_nodes=nodes))
            got = s.load_graph("u")[0]
            assert got[0].embedding is not None and got[0].embedding.tobytes() == nodes[0].embedding.tobytes()
            assert got[1].embedding is None
            assert got[2].embedding is not None and got[2].embedding.tobytes() == special.tobytes()
            with s._conn() as conn:
                typ = conn.execute("SELECT pg_typeof(embedding)::text FROM nodes WHERE id = 'a'").fetchone()
            assert typ is not None and typ[0] == ("public.vector" if vector is None else "real[]")
            # The database's own view agrees with ours (pgvector / array functions).
            with s._conn() as conn:
                fn = "public.vector_dims(embedding)" if vector is None else "cardinality(embedding)"
                assert conn.execute(f"SELECT {fn} FROM nodes WHERE id = 'a'").fetchone() == (384,)
    finally:
        drop_schema(url)


def test_vector_column_supports_server_side_similarity(store: PostgresStore) -> None:
    """The pgvector column is a real vector: distances computed by PostgreSQL match numpy."""
    nodes = [_node("u", f"n{i}", seed=i) for i in range(5)]
    store.commit(ChangeSet("u", upsert_nodes=nodes))
    q = nodes[0].embedding
    assert q is not None
    with store._conn() as conn:
        conn.execute("SET search_path TO {}, public".format(psycopg.sql.Identifier(store.schema).as_string(conn)))
        rows = conn.execute(
            "SELECT id, embedding <=> (SELECT embedding FROM nodes WHERE id = 'n0') FROM nodes ORDER BY 2"
        ).fetchall()
    mat = np.stack([n.embedding for n in nodes])
    cos = 1 - (mat @ q) / (np.linalg.norm(mat, axis=1) * np.linalg.norm(q))
    assert [r[0] for r in rows] == [f"n{i}" for i in np.argsort(cos)]
    assert np.allclose([r[1] for r in rows], np.sort(cos), atol=1e-5)


# -- text --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(["a", "0", "\x00", "\ufffe", "é", "🙂"]), max_size=12) | st.text())
def test_nul_escape_round_trips(text: str) -> None:
    enc = esc(text)
    assert "\x00" not in enc
    assert unesc(enc) == text


def test_nul_in_ids_and_content(store: PostgresStore) -> None:
    user = "u\x00ser\ufffe"
    n = _node(user, "id\x00\ufffe0")
    n.content = "a\x00b\ufffe0c"
    o = Observation("o\x00", user, "s\x00", T0, (Message("user", "x\x00y"),))
    store.commit(ChangeSet(user, observations=[o], upsert_nodes=[n], events=[JournalEvent("k\x00", {}, T0)]))
    assert store.users() == [user]
    assert store.load_graph(user)[0][0].same_state(n)
    assert store.observations(user)[0].id == "o\x00"
    assert store.existing_observations(user, ["o\x00", "o"]) == {"o\x00"}
    assert store.events(user)[0].kind == "k\x00"
    store.set_meta("m\x00", "v\x00")
    assert store.get_meta("m\x00") == "v\x00"
    assert store.checksum(user) == _sqlite_twin(store, user)


def _sqlite_twin(store: PostgresStore, user: str) -> str:
    mem = MemoryStore()
    nodes, edges = store.load_graph(user)
    mem.commit(ChangeSet(user, observations=store.observations(user), upsert_nodes=nodes, upsert_edges=edges,
                         events=store.events(user)))
    return mem.checksum(user)


# -- locks and versions ------------------------------------------------------------------------------


def test_writer_waits_for_the_users_lock_and_times_out(store: PostgresStore, pg_url: str) -> None:
    store.commit(_change("u", 0))
    conninfo, schema = split_url(pg_url)
    with psycopg.connect(conninfo) as other:  # another instance mid-commit for "u"
        other.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (0x5054_0001, "u"))
        t0 = time.monotonic()
        with pytest.raises(StoreBusyError, match="busy_timeout_s"):
            store.commit(_change("u", 1))
        assert 1.5 < time.monotonic() - t0 < 10
        store.commit(_change("v", 0))  # other users are not blocked
        other.rollback()
    assert store.commit(_change("u", 1)) == 2


def test_stale_write_from_another_instance_is_refused(store: PostgresStore, pg_url: str) -> None:
    with PostgresStore(pg_url) as other:
        v = store.commit(_change("u", 0))
        assert other.version("u") == v
        other.commit(_change("u", 1, expected=v))
        with pytest.raises(StaleStateError):
            store.commit(_change("u", 2, expected=v))
        assert [o.id for o in store.observations("u")] == ["o0", "o1"]


def test_concurrent_threads_keep_log_and_versions_gap_free(store: PostgresStore) -> None:
    def write(tag: str) -> None:
        for i in range(15):
            store.commit(_change("u", 1000 * int(tag) + i))

    threads = [threading.Thread(target=write, args=(str(t),)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert store.version("u") == 60
    assert [o.seq for o in store.observations("u")] == list(range(1, 61))
    assert [e.seq for e in store.events("u")] == list(range(1, 61))
    assert store.integrity_check() == []


def test_lock_user_excludes_other_jobs_not_commits(store: PostgresStore, pg_url: str) -> None:
    with PostgresStore(pg_url) as other:
        with store.lock_user("u"):
            with pytest.raises(StoreBusyError):
                with other.lock_user("u", timeout_s=0):
                    pass
            with pytest.raises(StoreBusyError, match="0.3 s"):
                with other.lock_user("u", timeout_s=0.3):
                    pass
            with other.lock_user("someone-else", timeout_s=0):
                pass
            assert other.commit(_change("u", 0)) == 1  # commits are not blocked by jobs
        with other.lock_user("u", timeout_s=0):  # released
            pass


def _hold_lock_and_die(url: str, ready: "mp.synchronize.Event") -> None:
    import os

    s = PostgresStore(url)
    cm = s.lock_user("u")
    cm.__enter__()
    ready.set()
    time.sleep(0.5)
    os._exit(0)  # crash while holding the lock


def test_lock_user_is_released_when_the_holder_dies(store: PostgresStore, pg_url: str) -> None:
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=_hold_lock_and_die, args=(pg_url, ready))
    p.start()
    assert ready.wait(60)
    with pytest.raises(StoreBusyError):
        with store.lock_user("u", timeout_s=0):
            pass
    p.join(30)
    with store.lock_user("u", timeout_s=10):  # the session ended, the lock went with it
        pass


def _child_commit(store: PostgresStore, q: "mp.Queue[object]") -> None:
    try:
        q.put(store.commit(_change("u", 99)))
    except BaseException as exc:  # noqa: BLE001
        q.put(repr(exc))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_forked_child_uses_its_own_connections(store: PostgresStore) -> None:
    store.commit(_change("u", 0))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_commit, args=(store, q))
    p.start()
    got = q.get(timeout=60)
    p.join(30)
    assert got == 2
    # The parent's pooled connections survived the child.
    assert store.commit(_change("u", 1)) == 3
    assert store.integrity_check() == []


def test_integrity_check_reports_problems(store: PostgresStore) -> None:
    store.commit(_change("u", 0))
    assert store.integrity_check() == []
    with store._conn() as conn:
        conn.execute("UPDATE users SET obs_seq = 0")
        conn.execute("DELETE FROM store_state")
    problems = store.integrity_check()
    assert any("observation counter" in p for p in problems)
    assert any("store_state" in p for p in problems)


def test_vacuum(store: PostgresStore) -> None:
    store.commit(_change("u", 0))
    store.delete_user("u")
    store.vacuum()
    store.vacuum(full=True)
    assert store.counts()["nodes"] == 0


# -- migrate (copy between stores) ------------------------------------------------------------------


def _populate_with_api(url: str) -> None:
    from personatree.api import PersonaTree
    from personatree.embedders import HashingEmbedder

    with PersonaTree.open(url, embedder=HashingEmbedder(64)) as tree:
        for user in ("alice", "bob", "用户 🙂"):
            for i in range(6):
                tree.observe(user, f"I love hiking {i}. I am allergic to nuts. I live in Oslo.",
                             observation_id=f"{user}-{i}", at=datetime(2024, 1, 1 + i, tzinfo=timezone.utc))
        tree.store.set_meta("embedder", "hashing-64")
        tree.store.cache_put("llm", "prompt-1", '{"answer": 1}')
        tree.store.cache_put("llm", "prompt-2", "alice's answer", user_id="alice")


def _app() -> typer.Typer:
    from personatree.cli.migrate import register

    app = typer.Typer()

    @app.command()
    def _noop() -> None:  # a second command, so that "migrate" is a subcommand as in the CLI
        pass

    register(app)
    return app


def test_migrate_sqlite_to_postgres_verified_and_resumable(tmp_path: Path, pg_url: str) -> None:
    src_url = f"sqlite:///{tmp_path / 'a.db'}"
    _populate_with_api(src_url)
    runner = CliRunner()
    res = runner.invoke(_app(), ["migrate", "--from", src_url, "--to", pg_url, "--json"])
    assert res.exit_code == 0, res.output
    import json

    report = json.loads(res.output)
    assert report["ok"] and [u["status"] for u in report["users"]] == ["copied"] * 3
    with SQLiteStore(tmp_path / "a.db") as a, PostgresStore(pg_url) as b:
        assert b.users() == a.users()
        for user in a.users():
            assert b.checksum(user) == a.checksum(user)
            assert b.counts(user) == a.counts(user)
            assert b.observations(user) == a.observations(user)
        assert {k: v for k, v in a.counts().items()} == b.counts()
        assert b.get_meta("embedder") == "hashing-64"
        assert b.cache_get("llm", "prompt-2", user_id="alice") == "alice's answer"
    # Again: nothing to do, everything verified and skipped.
    res = runner.invoke(_app(), ["migrate", "--from", src_url, "--to", pg_url])
    assert res.exit_code == 0, res.output
    assert "skipped" in res.output and "verified" in res.output
    # And back to a fresh SQLite file: the round trip keeps every checksum.
    back = tmp_path / "back.db"
    res = runner.invoke(_app(), ["migrate", "--from", pg_url, "--to", str(back), "--json"])
    assert res.exit_code == 0, res.output
    with SQLiteStore(tmp_path / "a.db") as a, SQLiteStore(back) as c:
        assert [a.checksum(u) for u in a.users()] == [c.checksum(u) for u in c.users()]


def test_migrate_refuses_conflicting_user_unless_overwrite(tmp_path: Path, pg_url: str) -> None:
    src_url = f"sqlite:///{tmp_path / 'a.db'}"
    _populate_with_api(src_url)
    with PostgresStore(pg_url) as b:
        b.commit(_change("alice", 0))  # different data under the same user id
    runner = CliRunner()
    res = runner.invoke(_app(), ["migrate", "--from", src_url, "--to", pg_url])
    assert res.exit_code == 1
    assert "different data" in res.output
    res = runner.invoke(_app(), ["migrate", "--from", src_url, "--to", pg_url, "--overwrite", "--user", "alice"])
    assert res.exit_code == 0, res.output
    with SQLiteStore(tmp_path / "a.db") as a, PostgresStore(pg_url) as b:
        assert b.checksum("alice") == a.checksum("alice")


def test_copy_store_between_any_stores(tmp_path: Path) -> None:
    from personatree.store.copy import copy_store

    src = SQLiteStore(tmp_path / "x.db")
    src.commit(ChangeSet("u", upsert_nodes=[_node("u", "a"), _node("u", "m", level=Level.MID)],
                         upsert_edges=[Edge("a", "m", EdgeKind.SUPPORT, 0.8, 0.5, "r", T0)]))
    dst = MemoryStore()
    report = copy_store(src, dst)
    assert report.ok and dst.checksum("u") == src.checksum("u")
    src.close()
