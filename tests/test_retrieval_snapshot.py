"""A user's built retrieval state kept in the store: read back identical, never stale.

Every check compares a state read from a snapshot with one built from scratch on a
copy of the same store without the snapshot, field by field and by recall answers,
after observe, consolidate, forget and delete_observation between processes.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import personatree.retrieval.prelude as prelude
from personatree.api import PersonaTree
from personatree.clock import FixedClock
from personatree.config import ConsolidationConfig, PersonaTreeConfig
from personatree.embedders import HashingEmbedder
from personatree.retrieval.access import access_log
from personatree.retrieval.lazy_archive import LazyArchive, signature_digest
from personatree.retrieval.lexical import BM25Index
from personatree.retrieval.prelude import user_state
from personatree.retrieval.snapshot import fingerprint
from personatree.retrieval.state import RetrievalState
from personatree.store import SQLiteStore, latest_version
from personatree.types import Level
from tests.pg_fixtures import drop_schema, fresh_schema_url, pg_server_url  # noqa: F401

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
SUBJECTS = ["my sister Ana", "Jonas", "the cat Miso", "my boss", "our neighbour"]
ACTS = ["went hiking in the hills", "cooked a spicy curry", "moved to Porto", "started pottery classes",
        "hates crowded trains", "always drinks green tea", "stopped eating meat", "visited the museum"]
QUERIES = ["Where does Jonas live?", "What do I drink?", "What did we cook?", "Who went hiking?",
           "What classes did I start?"]


def _items(start: int, n: int) -> list[dict[str, Any]]:
    return [{"messages": f"I think {SUBJECTS[i % 5]} {ACTS[(i * 3) % 8]} on day {i}. "
             + ("I'm still getting over a sprained ankle." if i % 9 == 4 else "I love it."),
             "observation_id": f"o{i}", "session_id": f"s{i // 4}", "at": T0 + timedelta(hours=7 * i)}
            for i in range(start, start + n)]


def _open(url: str | Path) -> PersonaTree:
    cfg = PersonaTreeConfig(consolidation=ConsolidationConfig(k_leaves=3))
    return PersonaTree.open(url, cfg, embedder=HashingEmbedder(64), clock=FixedClock(T0 + timedelta(days=60)))


def _state(tree: PersonaTree) -> RetrievalState:
    with tree.engine.lock:
        return user_state(tree, "ana", tree.engine.state("ana"))


def _sigs(st: RetrievalState) -> list[tuple[str, Any]]:
    # A state read back holds the signatures of the tree and of the archived leaves
    # the tree does not hold as digests, until a refresh settles them (the archive's
    # when a change makes it read the archive): compared as digests, in order.
    if isinstance(st.archive, LazyArchive):
        tree = ([(k, (lv, d)) for k, (lv, d) in st.archive.tree_digests.items()]
                if st.archive.tree_digests is not None else
                [(k, (v[0], signature_digest(v))) for k, v in st._sig.items()])  # type: ignore[index]
        return tree + [(k, (Level.LEAF, d)) for k, d in st.archive.digests.items()]
    return [(k, (v[0], signature_digest(v))) for k, v in st._sig.items()]  # type: ignore[index]


def _fields(st: RetrievalState) -> dict[str, Any]:
    # Everything a search reads, in the order it is held (row order breaks ties).
    return {
        "version": st.version, "sig": _sigs(st), "archive": list(st.archive),
        "turn_of": list(st.turn_of.items()), "turn_leaves": list(st.turn_leaves.items()),
        "turn_seq": list(st.turn_seq.items()), "dispositions": sorted(st.dispositions),
        "changes": sorted(st.changes), "reach": sorted(st.reach.items()), "standing": sorted(st.standing),
        "said": list(st.leaf_said.items()),
        "sessions": {k: sorted(v) for k, v in st.session_turns.items()},
        "turn_session": sorted(st.turn_session.items()),
        "bm25": [st.bm25[lv].parts() for lv in (Level.MID, Level.ROOT)], "turns": st.turns.parts(),
        "nodes": list(st.nodes), "parent": sorted(st.parent.items()),
        "children": sorted((k, v) for k, v in st.children.items()),
        "rows": {lv: (a.ids, a.matrix.tobytes()) for lv, a in st.arrays.items()},
        "disposition_rows": st.disposition_rows.tolist(), "change_rows": st.change_rows.tolist(),
        "standing_rows": st.standing_rows.tolist(), "judged": sorted(st.judged.items()),
    }


def _answers(tree: PersonaTree) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(r.node_ids), r.text) for r in (tree.recall("ana", q, budget=400) for q in QUERIES)]


class _refusing:
    """A block in which a state can only come from a snapshot: building one fails."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._mp = monkeypatch

    def __enter__(self) -> None:
        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("the state was built, not read from its snapshot")

        self._mp.setattr(prelude, "state_for", refuse)

    def __exit__(self, *exc: object) -> None:
        self._mp.undo()


def _without_snapshot(src: Path, dst: Path) -> Path:
    raw = sqlite3.connect(src)
    raw.execute(f"VACUUM INTO '{dst}'")
    raw.close()
    raw = sqlite3.connect(dst)
    raw.execute("DELETE FROM retrieval_snapshots")
    raw.commit()
    raw.close()
    return dst


def _snapshot_row(path: Path) -> tuple[int, str] | None:
    raw = sqlite3.connect(path)
    try:
        row = raw.execute("SELECT version, fingerprint FROM retrieval_snapshots WHERE user_id = 'ana'").fetchone()
        return None if row is None else (int(row[0]), str(row[1]))
    finally:
        raw.close()


def _check_restart(path: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process reads the state back; it equals a build from scratch."""
    row = _snapshot_row(path)
    assert row is not None
    reference = _open(_without_snapshot(path, tmp / f"ref-{row[0]}.db"))
    expected, answers = _fields(_state(reference)), _answers(reference)
    reference.close()
    tree = _open(path)
    with _refusing(monkeypatch):
        got = _fields(_state(tree))
    assert got == expected
    assert _answers(tree) == answers
    tree.close()


def _fresh_build_then_restart(path: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The next process builds from scratch (no valid snapshot) and keeps its build...
    tree = _open(path)
    with tree.engine.lock:
        version = tree.engine.state("ana").version
    assert _snapshot_row(path) is None or _snapshot_row(path)[0] != version  # type: ignore[index]
    _answers(tree)
    assert _snapshot_row(path) == (version, fingerprint())
    tree.close()  # recall statistics are flushed: the snapshot follows the version
    assert _snapshot_row(path) is not None
    # ...which the one after reads back.
    _check_restart(path, tmp, monkeypatch)


def _with_snapshot(path: Path, n: int) -> None:
    # A store of ``n`` consolidated interactions whose retrieval snapshot is kept (a
    # recall in a later process builds and stores it).
    tree = _open(path)
    tree.observe_many("ana", _items(0, n))
    tree.consolidate("ana")
    tree.close()
    tree = _open(path)
    _answers(tree)
    tree.close()


def test_a_restart_reads_the_state_a_fresh_build_makes_after_every_kind_of_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 60))
    tree.consolidate("ana")
    assert tree.store.archive_ids("ana")  # the bounds archived leaves: they are in the state too
    tree.close()
    _fresh_build_then_restart(path, tmp_path, monkeypatch)
    for change in ("observe", "consolidate", "forget", "delete_observation"):
        tree = _open(path)
        _answers(tree)  # a state cached in this process, refreshed by the change below
        if change == "observe":
            tree.observe_many("ana", _items(60, 12))
        elif change == "consolidate":
            tree.consolidate("ana")
        elif change == "forget":
            leaf = next(n for n in tree.graph("ana").nodes(Level.LEAF))
            tree.forget("ana", leaf.id)
        else:
            tree.delete_observation("ana", "o5")
        assert _snapshot_row(path) is None  # the commit took the snapshot with it
        tree.close()
        _fresh_build_then_restart(path, tmp_path, monkeypatch)


def test_a_snapshot_of_other_data_or_other_code_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 30))
    _answers(tree)
    old = tree.store.retrieval_snapshot("ana")
    assert old is not None
    tree.observe_many("ana", _items(30, 5))
    tree.close()
    # The snapshot of the previous version relabelled as the current one: its leaves
    # are not the tree's, so it is rebuilt, not served.
    store = SQLiteStore(path)
    version = store.version("ana")
    assert store.put_retrieval_snapshot("ana", version, old[1], old[2]) is True
    store.close()
    reference = _open(_without_snapshot(path, tmp_path / "ref.db"))
    expected, answers = _fields(_state(reference)), _answers(reference)
    reference.close()
    tree = _open(path)
    assert _fields(_state(tree)) == expected and _answers(tree) == answers
    assert tree.store.retrieval_snapshot("ana")[2] != old[2]  # type: ignore[index]  # replaced by the build
    tree.close()
    # Another code fingerprint, or an unreadable one: rebuilt too.
    for code, data in (("another-release", old[2]), (fingerprint(), b"{not json")):
        raw = sqlite3.connect(path)
        raw.execute("UPDATE retrieval_snapshots SET fingerprint = ?, data = ?", (code, data))
        raw.commit()
        raw.close()
        tree = _open(path)
        got = _fields(_state(tree))
        assert got == {**expected, "version": got["version"]}  # closes flushed recall statistics
        assert _snapshot_row(path) == (got["version"], fingerprint())  # replaced by the build
        tree.close()


def test_a_store_from_before_snapshots_opens_and_keeps_one(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 10))
    tree.close()
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE retrieval_snapshots")
    raw.execute("ALTER TABLE users DROP COLUMN content_version")  # schema 6's, applied again below
    raw.execute("DELETE FROM schema_version WHERE version >= 5")
    raw.execute("PRAGMA user_version = 4")
    raw.commit()
    raw.close()
    tree = _open(path)
    assert tree.store.schema_version() == latest_version() >= 5
    assert _answers(tree)[0][1]
    assert _snapshot_row(path) is not None
    tree.close()


def test_snapshots_are_derived_and_go_with_the_user(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 10))
    tree.close()
    tree = _open(path)
    checksum = tree.store.checksum("ana")
    _answers(tree)
    assert tree.store.retrieval_snapshot("ana") is not None
    assert tree.store.checksum("ana") == checksum
    assert "retrieval_snapshots" not in tree.export("ana")
    tree.delete_user("ana")
    assert tree.store.retrieval_snapshot("ana") is None
    tree.close()


def test_a_postgres_restart_reads_the_same_state(pg_server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    url = fresh_schema_url(pg_server_url, "snapshot")
    try:
        tree = _open(url)
        tree.observe_many("ana", _items(0, 40))
        tree.consolidate("ana")
        tree.close()
        tree = _open(url)
        expected, answers = _fields(_state(tree)), _answers(tree)  # built, and kept
        tree.close()
        tree = _open(url)
        with _refusing(monkeypatch):
            got = _fields(_state(tree))
        # The same state; the close before flushed recall statistics (a new version
        # whose snapshot was kept).
        assert got == {**expected, "version": got["version"]} and _answers(tree) == answers
        tree.observe("ana", "Jonas moved again, to Lisbon this time.")
        assert tree.store.retrieval_snapshot("ana") is None
        tree.close()
    finally:
        drop_schema(url)


def _bm25_sample() -> BM25Index:
    # 40 documents with shared, rare and no terms, two of them removed.
    a = BM25Index()
    for i in range(40):
        a.add(f"d{i}", [f"t{i % 7}", f"u{i % 3}", "common"] + ([] if i % 5 else ["rare"]))
    a.remove("d3")
    a.remove("d17")
    a.add("empty", [])
    return a


def _assert_change_alike(a: BM25Index, b: BM25Index) -> None:
    # ``b``, restored from ``a``, ranks as ``a`` does before and after the same changes.
    queries = [["t1", "rare"], ["common"], ["u2", "t6", "nothing"]]
    assert [b.search(q, 10) for q in queries] == [a.search(q, 10) for q in queries]
    for ix in (a, b):
        ix.remove("d8")
        ix.remove("empty")
        ix.add("d40", ["t1", "t1", "rare"])
        ix.add("d5", ["common"])
    assert b.parts() == a.parts()
    assert [b.search(q, 10) for q in queries] == [a.search(q, 10) for q in queries]


def test_bm25_parts_round_trip_and_keep_changing_alike() -> None:
    a = _bm25_sample()
    b = BM25Index.from_parts(a.parts())
    _assert_change_alike(a, b)  # the restored index inverts its postings on its first change
    with pytest.raises(ValueError):
        BM25Index.from_parts({**a.parts(), "dl": [1]})


def test_a_state_read_back_changes_exactly_like_a_built_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same store twice, one copy with its snapshot and one without: the state
    # read back and the state built take the same observe and forget, in a process
    # that keeps them cached, and stay identical.
    path = tmp_path / "m.db"
    _with_snapshot(path, 40)
    built_path = _without_snapshot(path, tmp_path / "built.db")
    read, built = _open(path), _open(built_path)
    assert read.store.retrieval_snapshot("ana") is not None
    assert built.store.retrieval_snapshot("ana") is None
    with _refusing(monkeypatch):
        _state(read)
    _state(built)
    for tree in (read, built):
        tree.observe_many("ana", _items(40, 6))
        leaf = sorted(n.id for n in tree.graph("ana").nodes(Level.LEAF))[3]
        tree.forget("ana", leaf)
    assert _fields(_state(read)) == _fields(_state(built))
    assert _answers(read) == _answers(built)
    read.close()
    built.close()


def _read_and_built(tmp_path: Path) -> tuple[PersonaTree, PersonaTree]:
    # One store twice: with its snapshot (read back) and without it (built).
    path = tmp_path / "m.db"
    tree = _open(path)
    tree.observe_many("ana", _items(0, 60))
    tree.consolidate("ana")
    assert tree.store.archive_ids("ana")
    tree.close()
    tree = _open(path)
    _answers(tree)  # builds and keeps the snapshot
    tree.close()
    built_path = _without_snapshot(path, tmp_path / "built.db")
    return _open(path), _open(built_path)


def test_a_state_read_back_reads_only_the_archived_leaves_a_recall_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, built = _read_and_built(tmp_path)
    reads: list[list[str] | None] = []
    real = read.store.archive

    def counting(user_id: str, ids: Any = None) -> Any:
        reads.append(None if ids is None else list(ids))
        return real(user_id, ids)

    monkeypatch.setattr(read.store, "archive", counting)
    with _refusing(monkeypatch):
        st = _state(read)
    assert isinstance(st.archive, LazyArchive) and reads == []
    # Searched all the same: every archived leaf is a row of the leaf matrix and a
    # document of the turn index.
    assert set(st.archive) <= set(st.arrays[Level.LEAF].ids)
    one = read.recall("ana", QUERIES[1], budget=120)
    assert one.text == built.recall("ana", QUERIES[1], budget=120).text
    assert 0 < sum(len(r or ()) for r in reads) < len(st.archive)  # only what it scored and showed
    assert _answers(read) == _answers(built)
    assert None not in reads  # never the whole archive
    # Recall statistics flushed (a commit that changes no content): still unread,
    # still the same answers as the state that was built.
    for _ in range(3):
        assert _answers(read) == _answers(built)
    for tree in (read, built):
        access_log(tree.engine, 32).flush()
    assert read.store.versions("ana")[0] > read.store.versions("ana")[1]
    assert _answers(read) == _answers(built)
    assert isinstance(_state(read).archive, LazyArchive) and None not in reads
    # A change of content: the archive is read once, and the state then changes
    # exactly as the built one does.
    for tree in (read, built):
        tree.observe_many("ana", _items(60, 8))
        tree.consolidate("ana")
        tree.delete_observation("ana", "o7")
    assert _fields(_state(read)) == _fields(_state(built))
    assert _answers(read) == _answers(built)
    read.close()
    built.close()


def test_an_archived_leaf_another_process_removes_during_a_recall_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, built = _read_and_built(tmp_path)
    with _refusing(monkeypatch):
        _state(read)
    version = read.store.version("ana")
    gone = sorted({n.provenance[0].observation_id for n in read.store.archive("ana")})
    other = _open(tmp_path / "m.db")  # another process: removes every archived leaf's turn
    for tree in (other, built):
        for obs in gone:
            tree.delete_observation("ana", obs)
    other.close()
    # This recall reads the user's version before the other process's commits land
    # (it goes on from the state it holds), then fails to read an archived leaf.
    real = read.store.version
    calls: list[int] = []

    def first_stale(user_id: str) -> int:
        calls.append(1)
        return version if len(calls) == 1 else real(user_id)

    missed: list[str] = []
    lookup = LazyArchive.__getitem__

    def noting(self: LazyArchive, key: str) -> Any:
        try:
            return lookup(self, key)
        except KeyError:
            missed.append(key)
            raise

    monkeypatch.setattr(read.store, "version", first_stale)
    monkeypatch.setattr(LazyArchive, "__getitem__", noting)
    got = read.recall("ana", QUERIES[1], budget=400)
    assert missed and len(calls) >= 2  # found gone, then read again
    assert got.text == built.recall("ana", QUERIES[1], budget=400).text
    read.close()
    built.close()
