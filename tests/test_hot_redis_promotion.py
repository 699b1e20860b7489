"""A promotion's entry write reuses its prior entry, and writes what a build from scratch writes.

Real redis-server and SQLite, the writer/reader pair of ``tests/test_hot_redis.py``.
A tier-3 answer promotes hits into tier 2 and owes Redis a new entry of the same
content. The writer takes what the promotion leaves as it was from the prior entry
(the members' closures, the nodes' and edges' encoded rows, tier 1's text analysis;
tiers 1+2's re-read only where the promotion changed it) instead of computing and
encoding it again. Checked with an oracle: every
entry built that way is built and encoded from scratch as well, and the two must be
equal, field by field (the text analysis: restored, it is the state the entry's
text gives), also after the worker's recall counts have reached the store
(the prior's rows then hold older counts than the tree).
"""

from __future__ import annotations

from typing import Any

import personatree.hot_redis as hot_redis
import personatree.tiering.shared as shared
from personatree.api import PersonaTree
from personatree.hot_redis import HOT_FIELDS, decode_entry
from tests.redis_fixtures import redis_server  # noqa: F401 - fixture
from tests.test_hot_redis import CFG, QUESTIONS, _db, stores  # noqa: F401 - fixture
from tests.test_hot_redis_lex import _assert_exact_lex

# Fields that depend on the write only (``eid``) or are checked on their own (``lex``).
_OWN = {"eid", "lex"}


def test_a_promotion_writes_what_a_build_from_scratch_writes(stores, redis_server, monkeypatch) -> None:
    writer, _ = stores
    seen: dict[str, int] = {"reused": 0, "patched": 0}
    real_build, real_encode, real_patch = shared.build_entry, hot_redis.encode_entry, shared.patch_snapshot

    def build(graph: Any, tstate: Any, tcfg: Any, version: int, fp: str, known: Any = None,
              counter: Any = None) -> Any:
        got = real_build(graph, tstate, tcfg, version, fp, known=known, counter=counter)
        if known:
            scratch = real_build(graph, tstate, tcfg, version, fp, counter=counter)
            assert got.tiers == scratch.tiers and got.bound == scratch.bound and got.heads == scratch.heads
            assert [n.id for n in got.nodes] == [n.id for n in scratch.nodes] and got.edges == scratch.edges
        return got

    def encode(entry: Any, prior: Any = None) -> dict[str, bytes]:
        got = real_encode(entry, prior)
        if prior is not None:
            seen["reused"] += 1
            scratch = real_encode(entry)
            assert {k: v for k, v in got.items() if k not in _OWN} == {k: v for k, v in scratch.items() if k not in _OWN}
            _assert_exact_lex(entry)  # the patched analysis is the one the entry's text gives
        return got

    def patch(*args: Any) -> Any:
        got = real_patch(*args)
        seen["patched"] += got is not None
        return got

    monkeypatch.setattr(shared, "build_entry", build)
    monkeypatch.setattr(hot_redis, "encode_entry", encode)
    monkeypatch.setattr(shared, "patch_snapshot", patch)
    # Every recall's counts reach the store at once: the prior entry's rows hold older ones.
    cfg = CFG.model_copy(update={"recall": CFG.recall.model_copy(update={"access_flush_every": 1})})
    reader = PersonaTree.open(_db(writer), cfg, embedder=writer.engine.embedder, hot=redis_server.url)
    try:
        far = ["Which quantum chromodynamics textbook do you recommend?", "What's the capital of Mongolia?"]
        for q in QUESTIONS + far + QUESTIONS:
            reader.recall("sam", q, budget=80)
            reader.hot.writer.drain()
        assert reader.hot.writer.failed == 0
        assert reader.hot.answered[3] and seen["reused"] >= 1 and seen["patched"] >= 1, seen
        entry = decode_entry("sam", reader.hot.client.get("sam", HOT_FIELDS) or {})
        assert entry.gate["promotions"] > 0
        _assert_exact_lex(entry)
    finally:
        reader.close()
