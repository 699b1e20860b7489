"""The binary snapshot format: read back exactly, refused when it is not this format.

A state read back from its snapshot must hold what a fresh build holds, including
what the first search derives from when each leaf was said (the update test's leaf
facts); a snapshot an earlier release wrote (format 2: one JSON document and the
archive's rows; format 3: this layout without the standing statements) is rebuilt,
never read; and the parts of the layout (typed arrays,
packed BM25 postings, maps decoded on lookup) read back what was written.
"""

from __future__ import annotations

import sqlite3
import struct
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import personatree.retrieval.prelude as prelude
from personatree.retrieval.lazy_archive import LazyArchive
from personatree.retrieval.lexical import BM25Index, tokenize
from personatree.retrieval.packed_maps import ABSENT, PackedMap, grouped
from personatree.retrieval.snapshot import fingerprint
from personatree.retrieval.snapshot_layout import pack, unpack
from personatree.retrieval.state import RetrievalState
from personatree.retrieval.updates import LeafFacts, kth_largest, later_statements, leaf_facts
from personatree.types import Level
from tests.test_retrieval_snapshot import (
    _answers, _assert_change_alike, _bm25_sample, _fields, _items, _open, _read_and_built, _refusing, _snapshot_row, _state, _with_snapshot,
    _without_snapshot,
)


def _canonical(codes: np.ndarray) -> list[int]:
    # Session codes matter only by which rows share one: renumbered by first row.
    seen: dict[int, int] = {}
    return [seen.setdefault(int(c), len(seen)) for c in codes]


def _same_facts(a: LeafFacts, b: LeafFacts) -> None:
    assert np.array_equal(a.at, b.at) and a.at.dtype == b.at.dtype
    assert np.array_equal(a.side, b.side) and np.array_equal(a.change, b.change)
    assert np.array_equal(a.gone, b.gone) and np.array_equal(a.updaters, b.updaters)
    assert _canonical(a.session) == _canonical(b.session)
    assert a.reach.keys() == b.reach.keys() and all(np.array_equal(a.reach[w], b.reach[w]) for w in a.reach)


def _rebuilt_facts(st: RetrievalState) -> LeafFacts:
    memo, st.updates_memo = st.updates_memo, None
    try:
        return leaf_facts(st)
    finally:
        st.updates_memo = memo


def test_a_state_read_back_has_the_leaf_facts_a_build_computes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, built = _read_and_built(tmp_path)
    with _refusing(monkeypatch):
        st = _state(read)
    ref = _state(built)
    assert st.updates_memo is not None and st.updates_memo[0] is st.arrays[Level.LEAF]
    facts = st.updates_memo[1]
    _same_facts(facts, leaf_facts(ref))
    _same_facts(facts, _rebuilt_facts(st))  # and what the state's own maps give
    assert facts.updaters.size  # the store has statements that can update others
    assert facts.reach  # and changes that reach others by their kind
    leaves = list(st.arrays[Level.LEAF].ids)
    cfg = read.engine.config.recall
    for start in range(0, len(leaves), 25):
        assert later_statements(st, leaves[start:start + 25], cfg) == later_statements(ref, leaves[start:start + 25], cfg)
    assert _answers(read) == _answers(built)
    read.close()
    built.close()


def test_a_change_of_content_makes_the_leaf_facts_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, built = _read_and_built(tmp_path)
    with _refusing(monkeypatch):
        restored = _state(read)
    old = restored.updates_memo
    _state(built)
    for tree in (read, built):  # a later session that changes what the first ones said
        tree.observe("ana", "I stopped drinking green tea and moved away from Porto.", session_id="later",
                     observation_id="late")
    st, ref = _state(read), _state(built)
    assert st is restored and st.arrays[Level.LEAF] is not old[0]  # type: ignore[index]
    facts = leaf_facts(st)
    assert facts is not old[1]  # type: ignore[index]
    _same_facts(facts, leaf_facts(ref))
    late = [x for x in st.arrays[Level.LEAF].ids if st.turn_of[x].startswith("late#")]
    newest = facts.at[~facts.gone].max()
    assert late and all(facts.at[st.arrays[Level.LEAF].row[x]] == newest for x in late)
    assert _fields(st) == _fields(ref)
    leaves = list(st.arrays[Level.LEAF].ids)
    cfg = read.engine.config.recall
    assert later_statements(st, leaves[:30], cfg) == later_statements(ref, leaves[:30], cfg)
    assert _answers(read) == _answers(built)
    read.close()
    built.close()


def _format_2(st: RetrievalState) -> bytes:
    """The snapshot an earlier release wrote: one JSON document, then the archive's rows."""
    said = st.leaf_said
    rows = st._archive_rows
    row_ids, matrix = rows if rows is not None else ([], np.zeros((0, 0), np.float32))
    doc = orjson.dumps({
        "format": "2", "turn_of": [list(st.turn_of), list(st.turn_of.values())],
        "turn_leaves": dict(st.turn_leaves), "turn_seq": dict(st.turn_seq),
        "turn_session": [list(st.turn_session), list(st.turn_session.values())],
        "dispositions": sorted(st.dispositions), "changes": sorted(st.changes),
        "said": [list(said), [s[0] for s in said.values()], [s[1] for s in said.values()],
                 [s[2] for s in said.values()]],
        "mid": st.bm25[Level.MID].parts(), "root": st.bm25[Level.ROOT].parts(), "turns": st.turns.parts(),
        "archive": list(st.archive), "archive_digests": [], "archive_rows": [list(row_ids), 0],
    })
    head = struct.pack("<4sQ", b"PTS2", len(doc))
    return head + doc + b"\0" * (-(len(head) + len(doc)) % 16) + np.asarray(matrix, np.float32).tobytes()


def _put(path: Path, data: bytes) -> None:
    raw = sqlite3.connect(path)
    raw.execute("UPDATE retrieval_snapshots SET fingerprint = ?, data = ?", (fingerprint(), data))
    raw.commit()
    raw.close()


def test_a_snapshot_of_another_format_is_rebuilt_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    _with_snapshot(path, 30)
    reference = _open(_without_snapshot(path, tmp_path / "ref.db"))
    expected, answers = _fields(_state(reference)), _answers(reference)
    reference.close()
    raw = sqlite3.connect(path)
    current = bytes(raw.execute("SELECT data FROM retrieval_snapshots").fetchone()[0])
    raw.close()
    doc, arrays = unpack(b"PTS7", current)
    built_one = _open(path)
    old = _format_2(_state(built_one))
    built_one.close()
    others = {
        "format 2": old,
        "format 2 under the new magic": b"PTS7" + old[4:],
        "format 3 (no standing statements)": pack(
            b"PTS3", {**{k: v for k, v in doc.items() if k != "standing"}, "format": "3"}, arrays
        ),
        "format 4 (no judged links)": pack(
            b"PTS4", {**{k: v for k, v in doc.items() if k != "judged"}, "format": "4"}, arrays
        ),
        "format 5 (no tree)": pack(
            b"PTS5", {**{k: v for k, v in doc.items() if k != "tree"}, "format": "5"},
            {k: v for k, v in arrays.items() if not k.startswith("tree.")},
        ),
        "the new layout tagged with another format": pack(b"PTS7", {**doc, "format": "2"}, arrays),
        "an array past the end": current[: len(current) - 64],
    }
    for name, data in others.items():
        _put(path, data)
        assert _snapshot_row(path) is not None
        builds: list[int] = []
        real = prelude.state_for

        def counting(*args: Any, **kwargs: Any) -> RetrievalState:
            builds.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(prelude, "state_for", counting)
        tree = _open(path)
        got = _fields(_state(tree))
        assert builds == [1], name  # built, not read
        assert got == {**expected, "version": got["version"]}, name
        assert _answers(tree) == answers, name
        tree.close()
        monkeypatch.undo()
        raw = sqlite3.connect(path)
        kept = bytes(raw.execute("SELECT data FROM retrieval_snapshots").fetchone()[0])
        raw.close()
        assert kept[:4] == b"PTS7" and kept != data, name  # replaced by the build
        tree = _open(path)
        with _refusing(monkeypatch):
            assert _fields(_state(tree)) == {**expected, "version": tree.store.version("ana")}, name
        tree.close()


def test_the_layout_reads_back_its_arrays_and_refuses_what_does_not_fit() -> None:
    arrays = {"f": np.arange(7, dtype=np.float32).reshape(7, 1), "d": np.array([0.1, 2.5e9]),
              "b": np.array([-1, 0, 1], np.int8), "i": np.arange(5, dtype=np.int32),
              "l": np.array([2 ** 40], np.int64), "empty": np.zeros((0, 3), np.float32)}
    data = pack(b"TEST", {"x": [1, "a"]}, arrays)
    doc, got = unpack(b"TEST", data)
    assert doc == {"x": [1, "a"]}
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and np.array_equal(got[k], v) and not got[k].flags.writeable
    with pytest.raises(ValueError):
        unpack(b"PTS5", data)  # another magic
    with pytest.raises(ValueError):
        unpack(b"TEST", data[:-8])  # the last array cut short
    with pytest.raises(ValueError):
        pack(b"TEST", {}, {"o": np.array(["text"], dtype=object)})  # only plain numbers
    size = struct.unpack_from("<Q", data, 4)[0]
    payload = data[12 + size + (-(12 + size) % 16):]
    body = orjson.loads(data[12:12 + size])
    body["arrays"]["f"][0] = "O"  # a type that is not one of the plain numeric ones
    bad = orjson.dumps(body)
    with pytest.raises(KeyError):
        unpack(b"TEST", struct.pack("<4sQ", b"TEST", len(bad)) + bad + b"\0" * (-(12 + len(bad)) % 16) + payload)


def test_kth_largest_is_the_partition_value_with_repeats() -> None:
    rng = np.random.default_rng(3)
    for _ in range(400):
        n, cols, k = int(rng.integers(0, 30)), int(rng.integers(0, 5)), int(rng.integers(1, 5))
        values = rng.integers(-2, 3, size=(n, cols)).astype(np.float32)
        values[rng.random((n, cols)) < 0.3] = -np.inf
        want = np.partition(values, n - k, axis=0)[n - k] if n >= k else np.full(cols, -np.inf)
        before = values.copy()
        assert np.array_equal(kth_largest(values, k), want)
        assert np.array_equal(values, before)  # not overwritten unless asked
        assert np.array_equal(kth_largest(values.copy(), k, overwrite=True), want)


def test_bm25_packed_round_trip_and_keep_changing_alike() -> None:
    a = _bm25_sample()
    doc, arrays = a.packed()
    b = BM25Index.from_packed(orjson.loads(orjson.dumps(doc)), arrays)
    assert b.parts() == a.parts()
    b = BM25Index.from_packed(orjson.loads(orjson.dumps(doc)), arrays)
    _assert_change_alike(a, b)  # the packed postings become dicts on the first change
    for broken in ({**arrays, "rows": arrays["rows"] + 1000}, {**arrays, "offsets": arrays["offsets"][::-1]},
                   {**arrays, "dl": arrays["dl"][:3]}):
        with pytest.raises(ValueError):
            BM25Index.from_packed(doc, broken)


def test_a_packed_map_reads_like_the_dict_it_stands_for() -> None:
    keys = ["a", "b", "c", "d"]
    at = {k: i for i, k in enumerate(keys)}
    held = {3: "three", 1: "one"}  # a map over part of the table, in its own order
    m: PackedMap[str] = PackedMap(keys, at, lambda i: held.get(i, ABSENT), [3, 1])
    want = {"d": "three", "b": "one"}
    assert list(m) == list(want) and len(m) == 2 and dict(m.items()) == want and m.as_dict() == want
    assert m["d"] == "three" and m.get("a") is None and m.get("zz", 5) == 5
    assert "b" in m and "a" not in m and 3 not in m
    with pytest.raises(KeyError):
        m["a"]
    whole: PackedMap[int] = PackedMap(keys, at, lambda i: i * 10)
    assert whole.as_dict() == {"a": 0, "b": 10, "c": 20, "d": 30} and whole.keys() == set(keys)
    members, bounds, order = grouped(np.array([2, -1, 0, 2, 0]), 3)
    assert order == [2, 0] and bounds.tolist() == [0, 2, 2, 4]
    assert members.tolist() == [2, 4, 0, 3]


def test_row_facts_equal_leaf_facts_for_leaves_without_a_session_and_rows_without_a_leaf() -> None:
    from personatree.graph import MemoryGraph
    from personatree.retrieval.snapshot_codec import _row_facts
    from personatree.retrieval.state import LevelArrays

    leaves = ["a", "b", "c", "d"]  # the leaf table, in turn_of order
    sessions = ["s1", "", "s2"]
    at = np.array([5.0, 1.0, 3.0, 2.0])
    side = np.array([1, 0, -1, 1], np.int8)
    sess = np.array([0, 1, 1, 0], np.int32)  # b and c have no session: each its own
    ids = ["c", "x", "a", "b", "d"]  # leaf rows; "x" has no leaf
    row_leaf = np.array([leaves.index(x) if x in leaves else -1 for x in ids], np.int32)
    got_at, got_side, got_gone, got_session = _row_facts({"row_leaf": row_leaf}, at, side, sess, sessions, len(ids))
    st = RetrievalState(MemoryGraph("u"))
    st.arrays[Level.LEAF] = LevelArrays(ids, np.zeros((len(ids), 2), np.float32), {x: i for i, x in enumerate(ids)})
    st.leaf_said = {x: (float(at[i]), int(side[i]), sessions[int(sess[i])]) for i, x in enumerate(leaves)}
    st.change_rows = np.array([2], np.int64)
    change = np.zeros(len(ids), bool)
    change[2] = True
    _same_facts(LeafFacts(got_at, got_side, change, got_gone, got_session), leaf_facts(st))
    assert got_session[0] != got_session[3] and got_session[2] == got_session[4] and got_session[1] == -1


def test_settled_signatures_keep_a_signature_only_where_its_digest_still_holds() -> None:
    from personatree.retrieval.lazy_archive import CHANGED, settled_signatures, signature_digest
    from personatree.types import Level as Lv

    t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    old = {"a": (Lv.LEAF, "x", t, "", "o1#0"), "m": (Lv.MID, "pattern", t, "", "m"),
           "gone": (Lv.MID, "p2", t, "", "gone")}
    now = {"a": old["a"], "m": (Lv.MID, "pattern, reworded", t, "", "m")}
    got = settled_signatures({k: (v[0], signature_digest(v)) for k, v in old.items()}, now.get)
    assert list(got) == ["a", "m", "gone"]
    assert got["a"] == old["a"]  # unchanged: its signature now
    # Changed or gone: equal to no signature, of the level it had (a mid is dropped as a mid).
    assert got["m"] != now["m"] and got["m"][0] is Lv.MID and got["gone"][0] is Lv.MID  # type: ignore[index]
    assert got["m"] != CHANGED and got["m"][1] == CHANGED[1]  # type: ignore[index]


def test_a_tree_node_changed_behind_a_restored_state_is_indexed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tree's signatures are held as digests: a node whose content differs at the
    # next refresh is dropped and indexed again, as a built state does it.
    read, built = _read_and_built(tmp_path)
    with _refusing(monkeypatch):
        st = _state(read)
    ref = _state(built)
    assert st.archive.tree_digests is not None  # type: ignore[attr-defined]
    for s in (st, ref):
        mid = sorted(n.id for n in s.graph.nodes(Level.MID))[0]
        s.graph.node(mid).content = "I now keep bees on the roof terrace."
        s.refresh(s.graph, ("edited", 1))
    assert not isinstance(st.archive, LazyArchive)  # a change: the archive was read
    assert _fields(st) == _fields(ref)
    bees = tokenize("bees roof terrace")
    assert st.bm25[Level.MID].search(bees, 3) == ref.bm25[Level.MID].search(bees, 3) != []
    read.close()
    built.close()
