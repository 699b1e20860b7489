"""One contract suite for every Store implementation.

Each test runs against every factory in ``STORE_FACTORIES`` (in-memory fake, SQLite,
PostgreSQL), so the stores cannot drift apart. The PostgreSQL store gets a fresh schema
in the session's server (``tests/pg_fixtures.py``) for every test.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree.errors import InputError, StaleStateError, StoreError
from personatree.ports import ChangeSet, JournalEvent, Store
from personatree.store import MemoryStore, SQLiteStore
from personatree.types import Edge, EdgeKind, Level, Message, Node, Observation, Provenance
from tests.pg_fixtures import drop_schema, fresh_schema_url, server_url

T0 = datetime(2024, 3, 1, 9, 30, 15, 123456, tzinfo=timezone.utc)

StoreFactory = Callable[[Path], Store]


def _postgres(tmp: Path) -> Store:
    from personatree.store.postgres import PostgresStore

    return PostgresStore(fresh_schema_url(server_url(), "contract"), busy_timeout_s=5.0)


STORE_FACTORIES: dict[str, StoreFactory] = {
    "memory": lambda tmp: MemoryStore(),
    "sqlite": lambda tmp: SQLiteStore(tmp / "contract.db", busy_timeout_s=5.0),
    "postgres": _postgres,
}


def _dispose(s: Store) -> None:
    s.close()
    schema = getattr(s, "schema", None)
    if schema is not None:  # a PostgreSQL schema of this test
        drop_schema(f"{server_url()}{'&' if '?' in server_url() else '?'}schema={schema}")


@pytest.fixture(params=sorted(STORE_FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = STORE_FACTORIES[request.param](tmp_path)
    yield s
    _dispose(s)


# -- builders ------------------------------------------------------------------------------


def obs(user: str, oid: str, text: str = "I love hiking", at: datetime = T0, **meta: object) -> Observation:
    return Observation(
        id=oid,
        user_id=user,
        session_id="s1",
        at=at,
        messages=(Message("user", text), Message("assistant", "Nice!", name="bot")),
        metadata=dict(meta),
    )


def node(user: str, nid: str, level: Level = Level.LEAF, *, content: str = "I love hiking",
         dim: int | None = 8, seed: int = 0) -> Node:
    emb = None
    if dim is not None:
        v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
        emb = v / np.linalg.norm(v)
    prov = (Provenance("o1", 0, 1, T0, "s1"),) if level is Level.LEAF else ()
    return Node(
        id=nid,
        user_id=user,
        level=level,
        schema_type="preference",
        content=content,
        attributes={"polarity": 1, "negated": False, "topic": "hiking", "time": None,
                    "entities": ["trail"], "type_score": 0.8125},
        t_first=T0,
        t_last=T0 + timedelta(days=2, microseconds=7),
        logit=0.4054651081081644,
        n_support=2,
        n_conflict=1,
        embedding=emb,
        provenance=prov,
        recall_count=3,
        t_access=T0 + timedelta(hours=1),
    )


def edge(src: str, dst: str, kind: EdgeKind = EdgeKind.SUPPORT, psi: float = 0.8) -> Edge:
    return Edge(src=src, dst=dst, kind=kind, psi=psi, weight=psi * 0.6, reason="same topic", at=T0)


def event(kind: str = "observe", **payload: object) -> JournalEvent:
    return JournalEvent(kind=kind, payload=dict(payload), at=T0)


def snapshot(s: Store, user: str) -> tuple[dict[str, int], str, int]:
    """Everything a refused call must leave unchanged."""
    return s.counts(user), s.checksum(user), s.version(user)


def assert_same_nodes(got: list[Node], want: list[Node]) -> None:
    assert [n.id for n in got] == [n.id for n in want]
    for g, w in zip(got, want):
        assert g.same_state(w), (g, w)
        assert g.recall_count == w.recall_count and g.t_access == w.t_access


def seed_user(s: Store, user: str) -> None:
    s.commit(ChangeSet(
        user,
        observations=[obs(user, "o1")],
        upsert_nodes=[node(user, "leaf1"), node(user, "mid1", Level.MID, seed=1)],
        upsert_edges=[edge("leaf1", "mid1")],
        events=[event(observation_id="o1")],
    ))


# -- empty store -----------------------------------------------------------------------------


def test_empty_store_reads(store: Store) -> None:
    assert store.users() == []
    assert store.version("nobody") == 0
    assert store.observations("nobody") == []
    assert store.existing_observations("nobody", ["a"]) == set()
    assert store.load_graph("nobody") == ([], [])
    assert store.events("nobody") == []
    assert store.get_meta("missing") is None


def test_implements_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    for name in ("users", "version", "existing_observations", "observations", "load_graph",
                 "events", "commit", "delete_user", "get_meta", "set_meta", "close",
                 "cache_get", "cache_put", "cache_delete", "counts", "checksum",
                 "integrity_check", "vacuum", "load_graph_with_version"):
        assert callable(getattr(store, name)), name


# -- observations ------------------------------------------------------------------------------


def test_observation_round_trip_and_seq(store: Store) -> None:
    items = [obs("u", f"o{i}", f"message {i}", T0 + timedelta(minutes=i), n=i, tags=["x"]) for i in range(5)]
    store.commit(ChangeSet("u", observations=items[:3]))
    store.commit(ChangeSet("u", observations=items[3:]))
    got = store.observations("u")
    assert got == [replace(o, seq=i + 1) for i, o in enumerate(items)]
    assert store.observations("u", ["o4", "o0", "missing"]) == [replace(items[0], seq=1), replace(items[4], seq=5)]
    assert store.existing_observations("u", ["o1", "o9"]) == {"o1"}


def test_observation_append_is_idempotent(store: Store) -> None:
    first = obs("u", "o1", "original")
    v1 = store.commit(ChangeSet("u", observations=[first, obs("u", "o1", "dup in batch")]))
    # Same id again (even with other content): skipped, the log is never rewritten.
    v2 = store.commit(ChangeSet("u", observations=[obs("u", "o1", "changed"), obs("u", "o2")]))
    assert (v1, v2) == (1, 2)
    got = store.observations("u")
    assert [(o.id, o.seq) for o in got] == [("o1", 1), ("o2", 2)]
    assert got[0].messages[0].content == "original"
    assert store.counts("u")["observations"] == 2


# -- nodes and edges ---------------------------------------------------------------------------


def test_node_and_edge_round_trip(store: Store) -> None:
    nodes = [node("u", "leaf1"), node("u", "leaf2", dim=None), node("u", "mid1", Level.MID, seed=2),
             node("u", "root1", Level.ROOT, seed=3)]
    edges = [edge("leaf1", "mid1"), edge("leaf2", "mid1", EdgeKind.CONFLICT, -0.7), edge("mid1", "root1")]
    store.commit(ChangeSet("u", upsert_nodes=nodes, upsert_edges=edges))
    got_nodes, got_edges = store.load_graph("u")
    assert_same_nodes(got_nodes, nodes)
    assert got_edges == edges
    emb = got_nodes[0].embedding
    assert emb is not None and emb.dtype == np.float32 and np.array_equal(emb, nodes[0].embedding)
    assert got_nodes[1].embedding is None
    assert got_nodes[0].t_last.microsecond == 123463  # microseconds survive exactly


def test_upsert_updates_in_place_and_keeps_order(store: Store) -> None:
    store.commit(ChangeSet("u", upsert_nodes=[node("u", "a"), node("u", "b"), node("u", "m", Level.MID)],
                           upsert_edges=[edge("a", "m")]))
    changed = node("u", "a", content="I love long hikes")
    changed.logit, changed.n_support = 1.25, 5
    store.commit(ChangeSet("u", upsert_nodes=[changed], upsert_edges=[edge("a", "m", psi=0.95)]))
    nodes, edges = store.load_graph("u")
    assert [n.id for n in nodes] == ["a", "b", "m"]  # first-insertion order survives an update
    assert nodes[0].same_state(changed)
    assert edges == [edge("a", "m", psi=0.95)]


def test_deletes(store: Store) -> None:
    store.commit(ChangeSet(
        "u",
        upsert_nodes=[node("u", "a"), node("u", "b"), node("u", "m", Level.MID), node("u", "r", Level.ROOT)],
        upsert_edges=[edge("a", "m"), edge("b", "m", EdgeKind.CONFLICT, -0.5), edge("m", "r")],
    ))
    store.commit(ChangeSet("u", delete_edges=[("b", "m"), ("nope", "m")]))
    assert [(e.src, e.dst) for e in store.load_graph("u")[1]] == [("a", "m"), ("m", "r")]
    store.commit(ChangeSet("u", delete_nodes=["m", "unknown"]))
    nodes, edges = store.load_graph("u")
    assert [n.id for n in nodes] == ["a", "b", "r"]
    assert edges == []  # incident edges went with the node
    assert store.integrity_check() == []


def test_deletes_apply_before_upserts(store: Store) -> None:
    store.commit(ChangeSet("u", upsert_nodes=[node("u", "a"), node("u", "m", Level.MID)],
                           upsert_edges=[edge("a", "m")]))
    # Replacing a node in one change: delete + upsert of the same id leaves it present.
    store.commit(ChangeSet("u", delete_nodes=["m"], upsert_nodes=[node("u", "m", Level.MID, seed=9)],
                           delete_edges=[("a", "m")], upsert_edges=[edge("a", "m", psi=0.5)]))
    nodes, edges = store.load_graph("u")
    assert [n.id for n in nodes] == ["a", "m"]
    assert edges == [edge("a", "m", psi=0.5)]


def test_edge_to_missing_node_writes_nothing(store: Store) -> None:
    seed_user(store, "u")
    before = snapshot(store, "u")
    with pytest.raises(StoreError, match="does not exist"):
        store.commit(ChangeSet("u", observations=[obs("u", "o2")], upsert_nodes=[node("u", "x")],
                               upsert_edges=[edge("x", "ghost")], events=[event()]))
    assert snapshot(store, "u") == before
    assert store.integrity_check() == []


def test_events_round_trip(store: Store) -> None:
    evs = [event(observation_id="o1"), event("forget", node_id="n1"),
           event("consolidate", plan={"mids": 2, "ids": ["a", "b"]}, ratio=0.5)]
    store.commit(ChangeSet("u", events=evs[:1]))
    store.commit(ChangeSet("u", events=evs[1:]))
    assert store.events("u") == [replace(e, seq=i + 1) for i, e in enumerate(evs)]


# -- versions ------------------------------------------------------------------------------------


def test_version_increments_per_commit(store: Store) -> None:
    assert store.commit(ChangeSet("u", events=[event()])) == 1
    assert store.commit(ChangeSet("u", events=[event()])) == 2
    assert store.version("u") == 2
    assert store.version("other") == 0
    # An empty change set writes nothing and does not bump the version.
    assert store.commit(ChangeSet("u")) == 2
    assert store.commit(ChangeSet("fresh")) == 0
    assert store.users() == ["u"]


def test_recall_statistics_commits_leave_the_content_version(store: Store) -> None:
    versions = getattr(store, "versions")
    assert versions("u") == (0, 0)
    n = node("u", "n")
    assert store.commit(ChangeSet("u", upsert_nodes=[n])) == 1
    assert versions("u") == (1, 1)
    seen = replace(n, recall_count=3, t_access=T0 + timedelta(days=1))
    assert store.commit(ChangeSet("u", upsert_nodes=[seen], stats_only=True, expected_version=1)) == 2
    assert versions("u") == (2, 1)  # the version moved (writers notice), the content did not
    assert store.load_graph("u")[0][0].recall_count == 3
    assert store.commit(ChangeSet("u", events=[event()])) == 3
    assert versions("u") == (3, 3)
    # A change that does more than that is content, whatever it says.
    assert store.commit(ChangeSet("u", upsert_nodes=[seen], events=[event()], stats_only=True)) == 4
    assert versions("u") == (4, 4)
    # A user's first commit is content whatever it says; deletion resets both.
    assert store.commit(ChangeSet("w", upsert_nodes=[node("w", "n")], stats_only=True)) == versions("w")[1] >= 1
    store.delete_user("u")
    assert versions("u") == (0, 0)


def test_expected_version(store: Store) -> None:
    assert store.commit(ChangeSet("u", events=[event()], expected_version=0)) == 1
    assert store.commit(ChangeSet("u", events=[event()], expected_version=1)) == 2
    before = snapshot(store, "u")
    with pytest.raises(StaleStateError, match="version 2"):
        store.commit(ChangeSet("u", observations=[obs("u", "o1")], upsert_nodes=[node("u", "n")],
                               events=[event()], expected_version=1))
    assert snapshot(store, "u") == before
    with pytest.raises(StaleStateError):
        store.commit(ChangeSet("new-user", events=[event()], expected_version=3))
    assert store.users() == ["u"]


def test_load_graph_with_version(store: Store) -> None:
    seed_user(store, "u")
    nodes, edges, version = store.load_graph_with_version("u")
    assert (len(nodes), len(edges), version) == (2, 1, 1)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        lambda: ChangeSet("u", upsert_nodes=[node("u", "n", content="bad \ud800 surrogate")]),
        lambda: ChangeSet("u", upsert_nodes=[replace(node("u", "n"), logit=math.nan)]),
        lambda: ChangeSet("u", upsert_nodes=[node("someone-else", "n")]),
        lambda: ChangeSet("u", upsert_nodes=[replace(node("u", "n"), attributes={"s": {1, 2}})]),
        lambda: ChangeSet("u", upsert_nodes=[replace(node("u", "n"), embedding=np.full(4, np.inf))]),
        lambda: ChangeSet("u", observations=[obs("u", "")]),
        lambda: ChangeSet("u", observations=[obs("other", "o9")]),
        lambda: ChangeSet("u", observations=[replace(obs("u", "o9"), at="yesterday")]),  # type: ignore[arg-type]
        lambda: ChangeSet("u", events=[event(obj=object())]),
        lambda: ChangeSet("u", delete_edges=["ab"]),  # type: ignore[list-item]
        lambda: ChangeSet("u", events=[event()], expected_version=-1),
        lambda: ChangeSet("", events=[event()]),
    ],
)
def test_bad_change_is_refused_and_writes_nothing(store: Store, bad: Callable[[], ChangeSet]) -> None:
    seed_user(store, "u")
    before = snapshot(store, "u"), store.counts()
    with pytest.raises(InputError):
        store.commit(bad())
    assert (snapshot(store, "u"), store.counts()) == before


def test_bad_read_arguments(store: Store) -> None:
    with pytest.raises(InputError):
        store.observations("u", "o1")  # a bare str would iterate characters
    with pytest.raises(InputError):
        store.version(42)  # type: ignore[arg-type]


# -- copies ------------------------------------------------------------------------------------


def test_callers_cannot_mutate_stored_state(store: Store) -> None:
    n = node("u", "n")
    o = obs("u", "o1", tags=["a"])
    store.commit(ChangeSet("u", observations=[o], upsert_nodes=[n]))
    n.attributes["topic"] = "mutated after commit"
    o.metadata["tags"].append("mutated")  # type: ignore[attr-defined]
    loaded = store.load_graph("u")[0][0]
    assert loaded.attributes["topic"] == "hiking"
    loaded.attributes["topic"] = "mutated after read"
    loaded.attributes["entities"].append("x")
    assert store.load_graph("u")[0][0].attributes["entities"] == ["trail"]
    assert store.observations("u")[0].metadata == {"tags": ["a"]}
    assert loaded.embedding is not None and not loaded.embedding.flags.writeable


# -- deletion and isolation --------------------------------------------------------------------


def test_delete_user_removes_everything_and_only_that(store: Store) -> None:
    seed_user(store, "alice")
    seed_user(store, "bob")  # same node and observation ids: tenants must not collide
    store.cache_put("llm", "k", "alice's answer", user_id="alice")
    store.cache_put("llm", "k", "bob's answer", user_id="bob")
    store.cache_put("llm", "shared", "global")
    bob_before = snapshot(store, "bob")
    store.delete_user("alice")
    assert store.users() == ["bob"]
    assert store.version("alice") == 0
    assert store.counts("alice") == {"users": 0, "observations": 0, "nodes": 0, "edges": 0,
                                     "journal": 0, "archive": 0, "cache": 0}
    assert store.observations("alice") == [] and store.load_graph("alice") == ([], [])
    assert store.events("alice") == []
    assert store.cache_get("llm", "k", user_id="alice") is None
    assert snapshot(store, "bob") == bob_before
    assert store.cache_get("llm", "k", user_id="bob") == "bob's answer"
    assert store.cache_get("llm", "shared") == "global"
    store.delete_user("alice")  # idempotent
    store.vacuum()
    assert store.integrity_check() == []
    # A deleted user starts afresh (with a version it never had before).
    assert store.commit(ChangeSet("alice", events=[event()], expected_version=0)) > 1
    assert store.events("alice") == [replace(event(), seq=1)]


def test_versions_never_repeat_for_a_user_id(store: Store) -> None:
    """A cache holding (user, version) must never mistake a re-created user for the old one."""
    seen: list[int] = []
    for _ in range(3):
        for _ in range(2):
            seen.append(store.commit(ChangeSet("u", events=[event()])))
        store.delete_user("u")
        assert store.version("u") == 0
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    # Other users are unaffected and keep counting from where they are.
    assert store.commit(ChangeSet("v", events=[event()])) >= 1


def test_tenant_isolation_of_reads(store: Store) -> None:
    seed_user(store, "alice")
    store.commit(ChangeSet("bob", observations=[obs("bob", "o2")], upsert_nodes=[node("bob", "bob-node")]))
    assert store.existing_observations("alice", ["o2"]) == set()
    assert store.observations("alice", ["o2"]) == []
    assert {n.user_id for n in store.load_graph("alice")[0]} == {"alice"}
    assert [n.id for n in store.load_graph("bob")[0]] == ["bob-node"]


# -- meta and caches ---------------------------------------------------------------------------


def test_meta_round_trip(store: Store) -> None:
    store.set_meta("embedder", "all-MiniLM-L6-v2")
    store.set_meta("embedder", "other-model ✓")
    assert store.get_meta("embedder") == "other-model ✓"
    assert store.counts()["meta"] == 1


def test_cache_round_trip(store: Store) -> None:
    assert store.cache_get("llm", "k") is None
    store.cache_put("llm", "k", '{"answer": 1}')
    store.cache_put("llm", "k", '{"answer": 2}')
    store.cache_put("llm", "k", "scoped", user_id="u")
    store.cache_put("llm", "k2", "x")
    store.cache_put("watermark", "k", "7")
    assert store.cache_get("llm", "k") == '{"answer": 2}'
    assert store.cache_get("llm", "k", user_id="u") == "scoped"
    assert store.cache_delete("llm", "k") == 1
    assert store.cache_get("llm", "k") is None
    assert store.cache_delete("llm") == 1  # the rest of the unscoped namespace
    assert store.cache_get("watermark", "k") == "7"
    assert store.cache_get("llm", "k", user_id="u") == "scoped"
    assert store.users() == []  # caches alone do not make a user


# -- text ----------------------------------------------------------------------------------------


def test_unicode_round_trip(store: Store) -> None:
    texts = ["我喜欢徒步 🥾🏔️", "emoji 👩‍👩‍👧‍👦 family", "RTL שלום עולם", "nul\x00inside", "ünïcödé"]
    user = "用户-👤"
    o = Observation("obs-🙂", user, "séance", T0, tuple(Message("user", t) for t in texts), {"ключ": "значение 🔑"})
    n = replace(node(user, "узел-🌳", content=texts[0]), attributes={"emoji": "🎉", "list": texts})
    store.commit(ChangeSet(user, observations=[o], upsert_nodes=[n], events=[event("observe", note="📝")]))
    assert store.observations(user) == [replace(o, seq=1)]
    assert store.load_graph(user)[0][0].same_state(n)
    assert store.events(user)[0].payload == {"note": "📝"}
    assert store.users() == [user]


_EXAMPLE = itertools.count()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60),
       key=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20))
def test_any_text_round_trips(store: Store, text: str, key: str) -> None:
    user = f"u{next(_EXAMPLE)}-{key}"  # the store outlives examples: a fresh user each time
    n = replace(node(user, key, content=text), attributes={key: text})
    store.commit(ChangeSet(user, observations=[obs(user, key, text)], upsert_nodes=[n]))
    assert store.load_graph(user)[0][-1].same_state(n)
    assert store.observations(user, [key])[0].messages[0].content == text
    store.cache_put(key, text, text, user_id=user)
    assert store.cache_get(key, text, user_id=user) == text


def test_times_are_normalised_to_utc(store: Store) -> None:
    plus2 = timezone(timedelta(hours=2))
    local = datetime(2024, 3, 1, 11, 30, 15, 123456, tzinfo=plus2)
    store.commit(ChangeSet("u", observations=[obs("u", "o1", at=local)]))
    got = store.observations("u")[0].at
    assert got == T0 and got.tzinfo == timezone.utc


# -- across stores -----------------------------------------------------------------------------


def test_every_store_holds_the_same_data(tmp_path: Path) -> None:
    """The same change sets give equal reads and equal checksums in every store."""
    stores = [f(tmp_path) for f in STORE_FACTORIES.values()]
    from personatree.store.postgres import PostgresStore

    # PostgreSQL again with float4[] embeddings instead of pgvector: same data either way.
    stores.append(PostgresStore(fresh_schema_url(server_url(), "contract"), vector=False))
    changes = [
        ChangeSet("u", observations=[obs("u", "o1"), obs("u", "o2", "😀")],
                  upsert_nodes=[node("u", "a"), node("u", "m", Level.MID, seed=4)],
                  upsert_edges=[edge("a", "m")], events=[event(observation_id="o1")]),
        ChangeSet("u", observations=[obs("u", "o1")], upsert_nodes=[node("u", "b", content="x")],
                  upsert_edges=[edge("b", "m", EdgeKind.CONFLICT, -0.6)], delete_nodes=["zzz"]),
        ChangeSet("u", delete_nodes=["a"], events=[event("forget", node_id="a")]),
    ]
    try:
        for s in stores:
            for c in changes:
                s.commit(c)
        ref = stores[0]
        for s in stores[1:]:
            assert s.checksum("u") == ref.checksum("u")
            assert s.observations("u") == ref.observations("u")
            assert s.events("u") == ref.events("u")
            assert s.counts("u") == ref.counts("u")
            nodes, edges = s.load_graph("u")
            ref_nodes, ref_edges = ref.load_graph("u")
            assert_same_nodes(nodes, ref_nodes)
            assert edges == ref_edges
    finally:
        for s in stores:
            _dispose(s)


# -- the archive ---------------------------------------------------------------------------


def test_archive_keeps_leaves_that_leave_the_tree(store: Store) -> None:
    a, b = node("ana", "a", seed=1), node("ana", "b", seed=2)
    store.commit(ChangeSet("ana", observations=[obs("ana", "o1")], upsert_nodes=[a, b]))
    v = store.commit(ChangeSet("ana", delete_nodes=["a", "b"], archive_nodes=[a, b]))
    assert store.version("ana") == v
    nodes, _ = store.load_graph("ana")
    assert nodes == []  # out of the tree...
    assert store.archive_ids("ana") == ["a", "b"]  # ...not out of the memory
    assert_same_nodes(store.archive("ana"), [a, b])
    assert_same_nodes(store.archive("ana", ["b", "missing"]), [b])
    assert store.archive("ana", []) == [] and store.archive_ids("bob") == []


def test_unarchive_and_upsert_take_leaves_out_of_the_archive(store: Store) -> None:
    a, b, c = node("ana", "a", seed=1), node("ana", "b", seed=2), node("ana", "c", seed=3)
    store.commit(ChangeSet("ana", observations=[obs("ana", "o1")], archive_nodes=[a, b, c]))
    store.commit(ChangeSet("ana", unarchive=["a"]))
    assert store.archive_ids("ana") == ["b", "c"]
    # A node is in the tree or in the archive, never both: upserting it moves it back.
    store.commit(ChangeSet("ana", upsert_nodes=[b]))
    assert store.archive_ids("ana") == ["c"]
    assert [n.id for n in store.load_graph("ana")[0]] == ["b"]
    # Forgetting wins over archiving in one change.
    store.commit(ChangeSet("ana", archive_nodes=[a], unarchive=["a"]))
    assert store.archive_ids("ana") == ["c"]


def test_archive_refuses_non_leaves_and_goes_with_the_user(store: Store) -> None:
    with pytest.raises(InputError):
        store.commit(ChangeSet("ana", archive_nodes=[node("ana", "m", Level.MID)]))
    assert store.version("ana") == 0
    store.commit(ChangeSet("ana", observations=[obs("ana", "o1")], archive_nodes=[node("ana", "a")]))
    store.commit(ChangeSet("bob", observations=[obs("bob", "o1")], archive_nodes=[node("bob", "a")]))
    store.delete_user("ana")
    assert store.archive_ids("ana") == [] and store.archive("ana") == []
    assert store.archive_ids("bob") == ["a"]  # other users keep theirs


def test_turn_docs_round_trip_and_go_with_their_observation(store: Store) -> None:
    store.commit(ChangeSet("u", observations=[obs("u", "o1"), obs("u", "o10"), obs("u", "o2")]))
    docs = {"o1#0": ("d1", '[1,["hike"],[]]'), "o1#1": ("d2", "[1,[],[]]"), "o10#0": ("d3", "[2,[],[]]"),
            "o2#0": ("d4", '[3,["nul\\u0000"],[]]')}
    assert store.put_turn_docs("u", docs) is True  # type: ignore[attr-defined]
    assert store.turn_docs("u") == docs  # type: ignore[attr-defined]
    assert store.put_turn_docs("u", {"o2#0": ("d5", "[3,[],[]]")}, ["o1#1"]) is True  # type: ignore[attr-defined]
    assert store.turn_docs("u") == {"o1#0": docs["o1#0"], "o10#0": docs["o10#0"],  # type: ignore[attr-defined]
                                    "o2#0": ("d5", "[3,[],[]]")}
    assert store.put_turn_docs("nobody", {"o#0": ("d", "[]")}) is False  # type: ignore[attr-defined]
    # Deleting an observation removes its turns' documents, and only its own ("o1" is
    # a prefix of "o10" but not of its turn keys).
    store.commit(ChangeSet("u", delete_observations=["o1"]))
    assert set(store.turn_docs("u")) == {"o10#0", "o2#0"}  # type: ignore[attr-defined]
    store.delete_user("u")
    assert store.turn_docs("u") == {}  # type: ignore[attr-defined]


def test_retrieval_snapshots_hold_one_version_and_go_with_every_commit(store: Store) -> None:
    snap = store.retrieval_snapshot  # type: ignore[attr-defined]
    put = store.put_retrieval_snapshot  # type: ignore[attr-defined]
    assert put("u", 1, "f", b"x") is False  # no such user: dropped
    v = store.commit(ChangeSet("u", observations=[obs("u", "o1")]))
    assert snap("u") is None
    assert put("u", v + 1, "f", b"later") is False  # not the user's version: refused
    assert put("u", v - 1, "f", b"earlier") is False
    blob = bytes(range(256)) * 3  # every byte value, NUL included
    assert put("u", v, "code-1", blob) is True
    assert snap("u") == (v, "code-1", blob)
    assert put("u", v, "code-2", b"again") is True  # replaced
    assert snap("u") == (v, "code-2", b"again")
    assert store.commit(ChangeSet("u")) == v  # an empty change set writes nothing
    assert snap("u") == (v, "code-2", b"again")
    store.commit(ChangeSet("u", observations=[obs("u", "o2")]))
    assert snap("u") is None  # any commit of the user deletes it
    v = store.version("u")
    assert put("u", v, "f", b"y") is True
    store.commit(ChangeSet("bob", observations=[obs("bob", "o1")]))
    assert snap("u") == (v, "f", b"y")  # another user's commit does not
    # A commit of recall statistics only keeps it, re-tagged to the new version; the
    # same flag on a change that does more is not honoured.
    seen = node("u", "n1")
    v = store.commit(ChangeSet("u", upsert_nodes=[seen]))
    assert snap("u") is None and put("u", v, "f", b"z") is True
    seen.recall_count += 2
    v2 = store.commit(ChangeSet("u", upsert_nodes=[seen], stats_only=True))
    assert v2 == v + 1 and snap("u") == (v2, "f", b"z")
    v3 = store.commit(ChangeSet("u", upsert_nodes=[seen], observations=[obs("u", "o3")], stats_only=True))
    assert snap("u") is None
    assert put("u", v3, "f", b"z") is True
    assert "retrieval_snapshots" not in store.counts("u")
    store.delete_user("u")
    assert snap("u") is None
    with pytest.raises(InputError):
        put("bob", store.version("bob"), "f", "not bytes")
