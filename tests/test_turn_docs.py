"""Recall's turn documents kept in the store: a new process reuses them, never stale ones."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from personatree.api import PersonaTree
from personatree.clock import FixedClock
from personatree.embedders import HashingEmbedder
from personatree.retrieval.prelude import user_state
from personatree.retrieval.turn_memo import TurnDocument, TurnMemo, turn_digest
from personatree.store import SQLiteStore, latest_version

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
LINES = [
    "I adopted a grey cat called Miso from the shelter.",
    "My brother Jonas moved to Porto for a job at a bakery.",
    "I always take the night train when I visit my parents.",
    "We painted the kitchen a pale green last weekend.",
    "I am allergic to hazelnuts, so I check every label.",
    "Jonas sent me photos of the Porto bridges at dusk.",
    "I signed up for a pottery course on Thursday evenings.",
    "Miso knocked my coffee off the desk this morning.",
]
QUERIES = ["Where does Jonas live?", "What pet do I have?", "What food am I allergic to?"]


def _open(path: Path) -> PersonaTree:
    return PersonaTree.open(path, embedder=HashingEmbedder(64), clock=FixedClock(T0 + timedelta(days=30)))


def _fill(path: Path) -> None:
    tree = _open(path)
    tree.observe_many("ana", [{"messages": t, "observation_id": f"o{i}", "session_id": f"s{i // 3}",
                              "at": T0 + timedelta(hours=i)} for i, t in enumerate(LINES)])
    tree.close()


def _answers(tree: PersonaTree) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(r.node_ids), r.text) for r in (tree.recall("ana", q, budget=300) for q in QUERIES)]


def _memo(tree: PersonaTree) -> TurnMemo:
    with tree.engine.lock:
        st = user_state(tree, "ana", tree.engine.state("ana"))
    assert st.memo is not None
    return st.memo


def _rows(path: Path) -> dict[str, str]:
    raw = sqlite3.connect(path)
    try:
        return dict(raw.execute("SELECT turn, digest FROM turn_docs WHERE user_id = 'ana'").fetchall())
    finally:
        raw.close()


def _drop_snapshots(path: Path) -> None:
    # These tests are about the turn documents: a new process must build its state
    # (with them), not read the snapshot of the last build (test_retrieval_snapshot).
    raw = sqlite3.connect(path)
    raw.execute("DELETE FROM retrieval_snapshots")
    raw.commit()
    raw.close()


def _without_docs(src: Path, dst: Path) -> None:
    # The same store with no stored documents: what every recall computed before.
    raw = sqlite3.connect(src)
    raw.execute(f"VACUUM INTO '{dst}'")
    raw.close()
    raw = sqlite3.connect(dst)
    raw.execute("DELETE FROM turn_docs")
    raw.commit()
    raw.close()


def test_a_new_process_reuses_the_stored_documents(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    first = _open(path)
    before = _answers(first)
    memo = _memo(first)
    assert memo.hits == 0 and memo.misses == len(LINES)
    first.close()
    assert set(_rows(path)) == {f"o{i}#0" for i in range(len(LINES))}
    _drop_snapshots(path)
    again = _open(path)
    assert _answers(again) == before
    memo = _memo(again)
    assert memo.hits == len(LINES) and memo.misses == 0
    again.close()


def test_documents_are_never_used_for_a_changed_turn(tmp_path: Path) -> None:
    path, bare = tmp_path / "m.db", tmp_path / "bare.db"
    _fill(path)
    tree = _open(path)
    _answers(tree)  # stores every turn's document
    leaf = next(n for n in tree.engine.state("ana").graph.nodes() if "hazelnuts" in n.content)
    tree.forget("ana", leaf.id)
    tree.observe("ana", "Jonas now lives in Lisbon, he left Porto.", observation_id="o99", at=T0 + timedelta(days=2))
    tree.close()
    stored = _rows(path)
    _without_docs(path, bare)
    fresh, reference = _open(path), _open(bare)
    assert _answers(fresh) == _answers(reference)
    memo = _memo(fresh)
    # The edited turn and the new one were computed again; the others were reused.
    assert memo.misses >= 1 and memo.hits >= len(LINES) - 2
    fresh.close()
    reference.close()
    assert _rows(path).keys() >= stored.keys() - {"o4#0"}


def test_a_tampered_digest_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    tree = _open(path)
    before = _answers(tree)
    tree.close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE turn_docs SET digest = 'x', doc = '[0, [\"zebra\"], []]'")
    raw.execute("DELETE FROM retrieval_snapshots")
    raw.commit()
    raw.close()
    again = _open(path)
    assert _answers(again) == before
    assert _memo(again).hits == 0
    again.close()


def test_deleting_an_observation_or_a_user_removes_its_documents(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    tree = _open(path)
    _answers(tree)
    tree.delete_observation("ana", "o1")
    assert "o1#0" not in _rows(path) and "o2#0" in _rows(path)
    checksum = tree.store.checksum("ana")
    _answers(tree)
    assert tree.store.checksum("ana") == checksum  # derived rows are not the user's data
    assert "turn_docs" not in tree.export("ana")
    tree.delete_user("ana")
    assert _rows(path) == {}
    tree.close()


def test_a_store_from_before_the_documents_opens_and_fills_them(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _fill(path)
    # Turn the file back into schema version 3: the migration only added the table.
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE retrieval_snapshots")
    raw.execute("DROP TABLE turn_docs")
    raw.execute("ALTER TABLE users DROP COLUMN content_version")  # schema 6's, applied again below
    raw.execute("DELETE FROM schema_version WHERE version >= 4")
    raw.execute("PRAGMA user_version = 3")
    raw.commit()
    raw.close()
    tree = _open(path)
    assert tree.store.schema_version() == latest_version() >= 4
    assert len(_answers(tree)[0][0]) > 0
    tree.close()
    assert len(_rows(path)) == len(LINES)


def test_memo_rows_round_trip_and_refuse_other_inputs() -> None:
    writes: list[tuple[dict[str, tuple[str, str]], list[str]]] = []
    memo = TurnMemo({}, lambda docs, drops: writes.append((docs, drops)) or True)
    doc = TurnDocument(["cat", "miso"], 3, ["lf_1"])
    memo.put("o1#0", "d1", doc)
    assert memo.get("o1#0", "d1") == doc and memo.get("o1#0", "d2") is None
    memo.drop("o1#0")
    memo.flush()
    assert writes == [({}, ["o1#0"])]
    refused = TurnMemo({}, lambda docs, drops: False)
    refused.put("o2#0", "d", doc)
    refused.flush()
    refused.flush()
    assert refused.get("o2#0", "d") == doc  # still pending, still served in this process


def test_the_digest_covers_content_and_order(hashing: HashingEmbedder) -> None:
    from personatree.types import Level, Node, Provenance

    def leaf(i: int, text: str) -> Node:
        return Node(f"l{i}", "u", Level.LEAF, "event", text, {}, T0, T0, 0.0,
                    provenance=(Provenance("o", 0, i, T0, "s"),))

    a, b = leaf(0, "I like tea."), leaf(1, "I hate coffee.")
    base = turn_digest([a, b], lambda n: "")
    assert turn_digest([b, a], lambda n: "") != base
    assert turn_digest([a, leaf(1, "I hate tea.")], lambda n: "") != base
    assert turn_digest([a, b], lambda n: "Ana") != base
    assert turn_digest([a, b], lambda n: "") == base


def test_sqlite_store_put_is_a_cache_write(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    assert store.put_turn_docs("nobody", {"o#0": ("d", "[]")}) is False  # no such user: dropped
    assert store.turn_docs("nobody") == {}
    store.close()
