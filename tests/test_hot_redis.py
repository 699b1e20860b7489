"""The shared Redis hot tier on a real Redis (Debian's redis-server on 127.0.0.1).

Each test starts its own server (tests/redis_fixtures.py). A *writer* tree observes
and consolidates; a *reader* tree opened on the same SQLite file is a stateless app
server that has never loaded the user. Checked: the reader answers from Redis
without reading the tree, with the answer in-process tiering gives; entries follow
the store's version (a writer without the hot tier makes the entry stale, and a
stale entry is never served); deletion and forgetting leave none of the text in
Redis (every key SCANned and DUMPed); Redis stopped mid-run falls back to the store
with a warning and the same answer, and the tier is rebuilt when Redis is back.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

from personatree.api import PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.embedders import HashingEmbedder
from personatree.hot_redis import HOT_FIELDS, RedisHot, decode_entry
from personatree.store.codec import encode_node
from personatree.tiering import TieringConfig, tiered_recall
from personatree.tiering.shared import HotTierWarning
from tests.redis_fixtures import RedisServer, redis_server  # noqa: F401 - fixture
from tests.test_tiering_api import TALK  # the same five sessions as in-process tiering's tests

# Small tiers, so that some questions are answered by tier 1, some by tier 2 and some
# only by the whole tree.
TIERS = TieringConfig(S=1, K=1, H=1, top_roots=1, sufficient_fill=0.0, sufficient_cosine=0.5)
CFG = PersonaTreeConfig(tiering=TIERS)
QUESTIONS = ["Do I have any food allergies?", "What is my dog's name?", "How fast was my marathon?",
             "Who did I go hiking with?", "How do I get to work?"]


def _open(db: Path, embedder: Any, hot: str | None) -> PersonaTree:
    return PersonaTree.open(db, CFG, embedder=embedder, hot=hot)


@pytest.fixture()
def stores(tmp_path: Path, embedder: Any, redis_server: RedisServer) -> Iterator[tuple[PersonaTree, PersonaTree]]:
    """(writer, reader) on one SQLite file and one Redis; the writer observed TALK."""
    db = tmp_path / "m.db"
    writer = _open(db, embedder, redis_server.url)
    writer.observe_many("sam", [{"messages": text, "at": at, "session_id": s} for at, s, text in TALK])
    reader = _open(db, embedder, redis_server.url)
    yield writer, reader
    reader.close()
    writer.close()


def _in_process(db: Path, embedder: Any, questions: list[str], budget: int = 80) -> list[tuple[str, int]]:
    # The same questions, in order, through in-process tiering in a tree that loads the
    # user (its accesses reach the store only when it closes, after the answers).
    plain = _open(db, embedder, None)
    try:
        out = [tiered_recall(plain, "sam", q, budget=budget, config=TIERS) for q in questions]
        return [(o.recall.text, o.tier) for o in out]
    finally:
        plain.close()


def _db(tree: PersonaTree) -> Path:
    return Path(tree.store.path)  # type: ignore[attr-defined]


def test_reader_answers_from_redis_like_in_process_tiering(stores, embedder, redis_server) -> None:
    writer, reader = stores
    # A question tiers 1 and 2 answer never reads the tree.
    assert "peanuts" in reader.recall("sam", QUESTIONS[0], budget=80).text
    assert reader.hot is not None and reader.hot.answered[1] == 1
    assert reader.engine.trees == {}
    reader.hot.answered[1] = 0
    got = [reader.recall("sam", q, budget=80).text for q in QUESTIONS]
    want = _in_process(_db(writer), embedder, QUESTIONS)
    assert got == [w[0] for w in want]
    tiers = [w[1] for w in want]
    assert 1 in tiers and 3 in tiers  # both kinds of answer were compared
    hot = reader.hot
    assert hot is not None
    assert hot.answered[1] + hot.answered[2] == sum(t < 3 for t in tiers)
    assert hot.answered[3] == tiers.count(3) and hot.rebuilt == 0


def test_entry_follows_the_store_version_and_is_never_served_stale(stores, embedder) -> None:
    writer, reader = stores
    client = writer.hot.client
    assert client.version("sam") == writer.store.version("sam")
    reader.recall("sam", "Do I have any food allergies?", budget=80)
    # A writer without the hot tier: the store moves on, Redis does not.
    bare = _open(_db(writer), embedder, None)
    bare.observe("sam", "I'm allergic to shellfish as well, since last year.", at="2024-04-02T10:00:00",
                 session_id="s6")
    bare.close()
    assert client.version("sam") < writer.store.version("sam")
    got = reader.recall("sam", "Do I have any food allergies?", budget=80)
    assert "shellfish" in got.text  # the stale entry was not served
    assert reader.hot.rebuilt == 1
    reader.hot.writer.drain()  # the rebuilt entry is written after the answer
    assert client.version("sam") == writer.store.version("sam")  # and it was rebuilt
    assert got.text == _in_process(_db(writer), embedder, ["Do I have any food allergies?"])[0][0]


def test_access_flushes_leave_the_entry_current(stores, embedder) -> None:
    writer, reader = stores
    client = writer.hot.client
    built = client.get("sam", HOT_FIELDS)
    # A process without the hot tier recalls the user; its access counts are flushed
    # (a commit of the store) when it closes.
    plain = _open(_db(writer), embedder, None)
    before = plain.store.version("sam")
    plain.recall("sam", "What is my dog's name?", budget=80)
    plain.close()
    assert writer.store.version("sam") == before + 1  # the counts were written
    got = reader.recall("sam", "Do I have any food allergies?", budget=80)
    assert "peanuts" in got.text
    assert reader.hot.rebuilt == 0 and reader.hot.answered[1] == 1  # served from Redis, not found stale
    assert client.get("sam", HOT_FIELDS) == built  # nor rewritten
    # The reader's own flush does not make it re-rank and rewrite the entry either.
    writes = reader.hot.writes
    reader.close()
    assert writer.store.version("sam") == before + 2 and reader.hot.writes == writes
    assert client.get("sam", HOT_FIELDS) == built
    # A content change still does.
    writer.observe("sam", "My dog Max turned five today.", at="2024-04-03T10:00:00", session_id="s6")
    assert client.version("sam") == writer.store.version("sam")


def test_no_stale_read_after_consolidation(stores, embedder) -> None:
    writer, reader = stores
    more = [("2024-04-%02dT10:00:00" % (d + 1), f"c{d}", f"I went climbing at the bouldering gym again, session {d}.")
            for d in range(8)]
    writer.observe_many("sam", [{"messages": t, "at": at, "session_id": s} for at, s, t in more])
    q = "Do I go climbing?"
    before = reader.recall("sam", q, budget=120)
    plan = writer.consolidate("sam", now="2024-05-01T00:00:00")
    assert plan.new_mids  # the tree changed: a pattern formed
    client = writer.hot.client
    assert client.version("sam") == writer.store.version("sam")
    entry = decode_entry("sam", client.get("sam", HOT_FIELDS) or {})
    live = {n.id for n in writer.graph("sam").nodes()}
    assert {n.id for n in entry.nodes} <= live  # nothing consolidation removed is served
    after = reader.recall("sam", q, budget=120)
    assert after.text == _in_process(_db(writer), embedder, [q], 120)[0][0]
    assert reader.hot.rebuilt == 0  # written through, not found stale
    assert before.node_ids != after.node_ids or before.text == after.text


def _dumps(url: str) -> bytes:
    r = redis.Redis.from_url(url)
    out = b"".join((r.dump(k) or b"") + k for k in r.scan_iter(count=100))
    r.close()
    return out


def test_delete_and_forget_leave_no_text_in_redis(stores, redis_server) -> None:
    writer, reader = stores
    reader.recall("sam", "What is my dog's name?", budget=80)
    reader.hot.writer.drain()
    assert b"golden retriever" in _dumps(redis_server.url)  # DUMP shows the text (no compression)
    dog = next(n.id for n in writer.graph("sam").nodes() if "golden retriever" in n.content)
    writer.forget("sam", dog)
    assert b"golden retriever" not in _dumps(redis_server.url)
    writer.delete_user("sam")
    dumped = _dumps(redis_server.url)
    for _, _, text in TALK:
        for word in ("Mount Tam", "Berlin marathon", "peanuts", "Crowded trains"):
            if word in text:
                assert word.encode() not in dumped, word
    assert b"sam" not in dumped


def test_a_write_racing_a_deletion_elsewhere_leaves_no_text_in_redis(stores, redis_server) -> None:
    # The reader rebuilds a missing entry and writes it after its answer; the user is
    # deleted by another tree between that entry's build and its put.
    import threading

    writer, reader = stores
    writer.hot.client.delete("sam")
    at_put, go = threading.Event(), threading.Event()
    real_put = reader.hot.client.put

    def put(user_id, version, fields):
        at_put.set()
        assert go.wait(30)
        return real_put(user_id, version, fields)

    reader.hot.client.put = put  # type: ignore[method-assign]
    reader.recall("sam", "What is my dog's name?", budget=80)
    assert at_put.wait(30)
    writer.delete_user("sam")
    assert b"golden retriever" not in _dumps(redis_server.url)
    go.set()
    reader.hot.writer.drain()
    dumped = _dumps(redis_server.url)
    assert b"golden retriever" not in dumped and b"sam" not in dumped
    assert reader.hot.writer.failed == 0 and reader.hot.taken_back == 1


def test_redis_stopped_mid_run_falls_back_and_rebuilds(stores, embedder, redis_server) -> None:
    writer, reader = stores
    q = "Who did I go hiking with?"
    served = reader.recall("sam", q, budget=80)
    reader.hot.writer.drain()
    redis_server.stop()
    with pytest.warns(HotTierWarning):
        fallback = reader.recall("sam", q, budget=80)
    assert fallback.text == served.text and reader.hot.fallbacks == 1
    with pytest.warns(HotTierWarning):  # a write succeeds; only its copy in Redis is skipped
        writer.observe("sam", "My sister Anna moved to Denver in May.", at="2024-04-05T10:00:00",
                       session_id="s7")
    redis_server.start()  # same port, empty: as if flushed
    for tree in (writer, reader):
        tree.hot.client._down_until = 0.0  # do not wait out the retry pause in a test
    with warnings.catch_warnings():
        warnings.simplefilter("error", HotTierWarning)
        got = reader.recall("sam", q, budget=80)
        assert reader.hot.rebuilt == 1  # the flushed entry is rebuilt from the store
        reader.hot.writer.drain()
        assert writer.hot.client.version("sam") == writer.store.version("sam")
        again = reader.recall("sam", q, budget=80)
    assert reader.hot.rebuilt == 1
    # As in-process tiering over the tree with the write in it (the first answer's
    # promotions change the second, in both).
    assert [got.text, again.text] == [t for t, _ in _in_process(_db(writer), embedder, [q, q])]


def test_ttl_lets_inactive_users_fall_out(tmp_path, embedder, redis_server) -> None:
    client = RedisHot(redis.Redis.from_url(redis_server.url), ttl_s=1)
    tree = PersonaTree.open(tmp_path / "t.db", CFG, embedder=embedder, hot=client)
    tree.observe("sam", TALK[1][2], at=TALK[1][0], session_id="s2")
    assert client.version("sam") == tree.store.version("sam")
    time.sleep(2.2)
    assert client.version("sam") is None
    assert "Max" in tree.recall("sam", "What is my dog's name?", budget=80).text  # rebuilt on demand
    tree.hot.writer.drain()
    assert client.version("sam") == tree.store.version("sam")
    tree.close()


# -- two processes observing the same user at once ------------------------------------


def _observer(db: str, url: str, tag: str, n: int, barrier: Any, results: Any) -> None:
    try:
        tree = PersonaTree.open(db, CFG, embedder=HashingEmbedder(64), hot=url)
        barrier.wait(timeout=120)
        for i in range(n):
            tree.observe("sam", f"{tag} note {i}: I practised the piano for {i + 10} minutes today.",
                         observation_id=f"{tag}-{i}", session_id=f"{tag}-{i % 3}")
        tree.close()
        results.put((tag, "ok"))
    except BaseException:  # noqa: BLE001 - report anything to the parent
        results.put((tag, traceback.format_exc()))
        barrier.abort()


@pytest.mark.slow
def test_concurrent_observes_from_two_processes_leave_redis_consistent(tmp_path, redis_server) -> None:
    db = str(tmp_path / "p.db")
    PersonaTree.open(db, CFG, embedder=HashingEmbedder(64)).close()
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_observer, args=(db, redis_server.url, t, 25, barrier, results), daemon=True)
             for t in ("a", "b")]
    for p in procs:
        p.start()
    got = [results.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(30)
    assert all(r[1] == "ok" for r in got), got
    tree = PersonaTree.open(db, CFG, embedder=HashingEmbedder(64), hot=redis_server.url)
    try:
        assert len(tree.store.observations("sam")) == 50
        client = tree.hot.client
        entry = decode_entry("sam", client.get("sam", HOT_FIELDS) or {})
        assert entry.version == tree.store.version("sam")  # the last commit's entry
        graph = tree.graph("sam")
        for n in entry.nodes:  # every node as the store holds it now
            assert encode_node(n, "sam") == encode_node(graph.node(n.id), "sam")
        q = "How long did I practise the piano?"
        served = tree.recall("sam", q, budget=80)
        assert tree.hot.rebuilt == 0
        with tree._lock:
            want = tiered_recall(tree, "sam", q, budget=80, config=TIERS)
        assert served.text == want.recall.text
    finally:
        tree.close()


def test_drift_gate_decides_the_re_rank(stores, redis_server) -> None:
    from datetime import datetime, timezone

    from personatree.hot_redis import decode_gate
    from tests.helpers import seed_mid

    writer, _ = stores
    now = datetime.now(timezone.utc)  # the writer's clock: the claims are strong now
    client = writer.hot.client

    def gate() -> tuple[dict, Any]:
        return decode_gate(*client.fields("sam", "gate", "anchor"))

    # A strong pattern gives the tree a persona vector: the first anchor, a re-rank.
    seed_mid(writer, "sam", "m-dogs", "Loves dogs and takes Max to the beach", logit=2.5, t_first=now, t_last=now)
    g1, a1 = gate()
    assert a1 is not None
    # A leaf that hardly moves the persona: ranked against the same anchor.
    writer.observe("sam", "I bought Max a new blue collar.", at="2024-04-01T10:00:00", session_id="s6")
    g2, a2 = gate()
    assert g2["reranks"] == g1["reranks"] and g2["lazy_updates"] == g1["lazy_updates"] + 1
    assert a2 is not None and a2.tobytes() == a1.tobytes()
    # A second strong claim far from the first moves P by more than τ: re-anchored.
    seed_mid(writer, "sam", "m-run", "Trains for marathons and tracks every race time", logit=2.5,
             t_first=now, t_last=now)
    g3, a3 = gate()
    assert g3["reranks"] == g2["reranks"] + 1 and a3.tobytes() != a2.tobytes()
