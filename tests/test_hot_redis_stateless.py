"""A stateless worker on the shared hot tier: what it reads, and what it writes, of a user.

Real redis-server and SQLite, the writer/reader pair of ``tests/test_hot_redis.py``.
A query no hot tier could answer goes to the store without the entry being decoded
(decided from its embeddings and ``bound``), with the answer in-process tiering
gives; the bound says what the decoded entry's nodes say; the worker's access
flushes add the counts in the store without loading the tree and leave the entry
current; promotions are written after the answer, and the worker's next request
for the user sees them.
"""

from __future__ import annotations

from personatree.api import PersonaTree
from personatree.config import PersonaTreeConfig, RecallConfig
from personatree.hot_redis import HOT_FIELDS, decode_entry
from personatree.retrieval.prelude import prepare_recall
from personatree.tiering.entry_bound import bound_could
from personatree.tiering.line_bound import counter_name
from personatree.types import Level
from personatree.tiering.shared_read import _could_suffice
from personatree.tiering.entries import entry_graph, tier1_ids
from tests.redis_fixtures import redis_server  # noqa: F401 - fixture
from tests.test_hot_redis import QUESTIONS, TIERS, _db, _in_process, stores  # noqa: F401 - fixture

# Questions far from everything the user said: no hot tier could answer them.
FAR = ["Which quantum chromodynamics textbook do you recommend?", "What's the capital of Mongolia?"]


def test_a_query_no_hot_tier_could_answer_goes_to_the_store_undecoded(stores, embedder) -> None:
    writer, reader = stores
    got = [reader.recall("sam", q, budget=80).text for q in FAR + QUESTIONS]
    assert got == [t for t, _ in _in_process(_db(writer), embedder, FAR + QUESTIONS)]
    hot = reader.hot
    assert hot is not None and hot.direct >= len(FAR) and hot.rebuilt == 0


def test_the_bound_says_what_the_entry_s_nodes_say(stores) -> None:
    writer, reader = stores
    fields = writer.hot.client.get("sam", HOT_FIELDS + ("bound",)) or {}
    entry = decode_entry("sam", fields)
    g = entry_graph(entry)
    held1 = {y for x in tier1_ids(entry) for y in entry.tiers["closures"][x]}
    for fill in (0.0, 0.05, 0.3):
        tcfg = TIERS.model_copy(update={"sufficient_fill": fill})
        for q, levels in [(q, None) for q in FAR + QUESTIONS] + [(QUESTIONS[0], (Level.MID, Level.ROOT))]:
            req = prepare_recall(reader.engine, q, budget=80, model=None, levels=levels)
            want = (_could_suffice(g, None, req, tcfg), _could_suffice(g, held1, req, tcfg))
            got = bound_could(entry.bound, fields["emb"], req.qvec, tcfg.sufficient_cosine,
                              tcfg.sufficient_fill * 80, req.levels, req.counter)
            assert got == want, (q, fill)
    # The costs are in the tokens of the counter recall uses, named; another counter
    # reads the costs in bytes, which bound any tokenizer.
    assert entry.bound["tok_by"] == counter_name(req.counter)
    assert all(t < b for t, b in zip(entry.bound["tok"], entry.bound["cost"]))


def test_access_flushes_of_a_stateless_worker_do_not_load_the_tree(stores, embedder, redis_server) -> None:
    writer, _ = stores
    cfg = PersonaTreeConfig(tiering=TIERS, recall=RecallConfig(access_flush_every=2))
    worker = PersonaTree.open(_db(writer), cfg, embedder=embedder, hot=redis_server.url)
    try:
        client = writer.hot.client
        built = client.get("sam", HOT_FIELDS)
        before = writer.store.version("sam")
        q = QUESTIONS[0]  # answered by tier 1
        shown = worker.recall("sam", q, budget=80).node_ids
        worker.recall("sam", q, budget=80)  # the second recall flushes
        assert worker.hot.answered[1] == 2 and worker.engine.trees == {}  # never loaded
        assert writer.store.version("sam") == before + 1 and writer.store.versions("sam")[1] < before + 1
        counts = {n.id: n.recall_count for n in writer.store.load_graph("sam")[0]}
        assert all(counts[x] >= 2 for x in shown if x in counts)
        assert client.get("sam", HOT_FIELDS) == built  # the entry is still current, not rewritten
        worker.recall("sam", q, budget=80)
        assert worker.hot.rebuilt == 0 and worker.hot.answered[1] == 3
    finally:
        worker.close()


def test_promotions_are_written_after_the_answer_and_seen_next(stores, embedder) -> None:
    writer, reader = stores
    got = [reader.recall("sam", q, budget=80).text for q in QUESTIONS + QUESTIONS]
    assert got == [t for t, _ in _in_process(_db(writer), embedder, QUESTIONS + QUESTIONS)]
    hot = reader.hot
    assert hot is not None and hot.answered[3] and hot.writer.failed == 0
    hot.writer.drain()
    assert hot.writer.pending() == 0 and hot.writes >= 1
    entry = decode_entry("sam", hot.client.get("sam", HOT_FIELDS) or {})
    assert entry.gate["promotions"] > 0


def test_a_caller_holding_the_engine_lock_does_not_wait_on_the_writer(stores) -> None:
    _, reader = stores
    with reader._lock:  # the writes owed cannot run meanwhile: recall must not wait for them
        for q in QUESTIONS + QUESTIONS:
            reader.recall("sam", q, budget=80)
        assert reader.hot is not None and reader.hot.answered[3]
    reader.hot.writer.drain()
    assert reader.hot.writer.failed == 0 and reader.hot.writer.pending() == 0
