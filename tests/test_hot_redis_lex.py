"""Redis entries carry their hot sub-trees' text analysis (``lex``), and it is exact.

Real redis-server and SQLite. Every entry written (by a commit, by a reader's
promotion) must carry a ``lex`` that restores, and the states restored from it must
equal the ones indexing the entry's text gives; an entry without one still answers,
indexed from the text. A worker keeps the entries it decoded, and uses one again only
while Redis holds that same entry.
"""

from __future__ import annotations

from dataclasses import replace

from personatree.hot_redis import HOT_FIELDS, decode_entry
from personatree.retrieval.lex_snapshot import restore_state
from personatree.tiering.entries import entry_indexes
from tests.redis_fixtures import redis_server  # noqa: F401 - fixture
from tests.test_hot_redis import QUESTIONS, TIERS, _db, _in_process, stores  # noqa: F401 - fixture
from tests.test_retrieval_lex_snapshot import _fields


def _entry(tree):
    return decode_entry("sam", tree.hot.client.get("sam", HOT_FIELDS) or {})


def _assert_exact_lex(entry) -> None:
    assert set(entry.lex) == {"t1", "t12"}
    from_lex = entry_indexes(entry, TIERS)
    from_text = entry_indexes(replace(entry, lex={}), TIERS)
    for name, a, b in zip(("t1", "t12"), from_lex, from_text):
        assert a is not None and b is not None and a.sub is not None
        assert restore_state(a.sub, "v", entry.lex[name]) is not None, name  # used, not re-indexed
        assert _fields(a.state) == _fields(b.state), name


def test_written_and_promoted_entries_carry_exact_lex(stores) -> None:
    writer, reader = stores
    _assert_exact_lex(_entry(writer))  # written through by the writer's commit
    before = reader.hot.writes
    for q in QUESTIONS:
        reader.recall("sam", q, budget=80)
    reader.hot.writer.drain()
    assert reader.hot.answered[3] and reader.hot.writes > before  # a tier-3 answer promoted and wrote back
    entry = _entry(reader)
    assert entry.gate["promotions"] > 0
    _assert_exact_lex(entry)


def test_entry_without_lex_answers_alike(stores, embedder) -> None:
    writer, reader = stores
    client = writer.hot.client
    client.client.hdel(client.key("sam"), "lex")
    got = [reader.recall("sam", q, budget=80).text for q in QUESTIONS]
    assert got == [t for t, _ in _in_process(_db(writer), embedder, QUESTIONS)]
    assert reader.hot.rebuilt == 0


def test_a_worker_reuses_the_entry_it_decoded_until_it_changes(stores) -> None:
    writer, reader = stores
    q = QUESTIONS[0]
    first = reader.recall("sam", q, budget=80)
    second = reader.recall("sam", q, budget=80)
    assert reader.hot.memo.hits == 1 and second.text == first.text and reader.hot.answered[1] == 2
    writer.observe("sam", "I'm allergic to shellfish as well, since last year.", at="2024-04-02T10:00:00",
                   session_id="s6")
    third = reader.recall("sam", q, budget=80)
    assert reader.hot.memo.hits == 1 and "shellfish" in third.text  # a new entry, decoded afresh
    assert reader.hot.rebuilt == 0
