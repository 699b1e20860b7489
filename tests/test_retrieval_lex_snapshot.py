"""A retrieval state rebuilt from a snapshot of its text analysis equals one built from the text.

Real tree (SQLite, the packaged embedder): the snapshot goes through JSON, as it does
through Redis, and the restored state must hold the same indexes and answer every
query with the same text. A snapshot of other nodes, or of another analysis, is
refused.
"""

from __future__ import annotations

from datetime import datetime, timezone

import orjson
import pytest

from personatree.api import PersonaTree
from personatree.retrieval.prelude import prepare_recall
from personatree.retrieval.lex_snapshot import lexical_snapshot, restore_state
from personatree.retrieval.state import RetrievalState
from personatree.types import Level
from tests.helpers import seed_mid
from tests.test_tiering_api import TALK

MORE = [
    ("2024-04-02T10:00:00", "s6", "I quit smoking last year and started running instead. I always hate crowded gyms."),
    ("2024-04-09T10:00:00", "s7", "These days I work from home on Fridays; I used to commute every day. "
     "I'm saving up for an electric bike."),
]
QUERIES = ["What is my dog's name?", "Do I still smoke?", "How do I get to work?", "What kind of person am I?",
           "What did I do in March 2024?"]


@pytest.fixture()
def tree(tmp_path, embedder):
    t = PersonaTree.open(tmp_path / "s.db", embedder=embedder)
    t.observe_many("sam", [{"messages": text, "at": at, "session_id": s} for at, s, text in TALK + MORE])
    now = datetime(2024, 4, 10, tzinfo=timezone.utc)
    seed_mid(t, "sam", "m-dog", "Loves dogs and takes Max to the beach", logit=2.0, t_first=now, t_last=now)
    yield t
    t.close()


def _fields(st: RetrievalState) -> dict:
    return {
        "mid": st.bm25[Level.MID].documents(), "root": st.bm25[Level.ROOT].documents(),
        "turns": st.turns.documents(), "turn_of": st.turn_of, "turn_leaves": st.turn_leaves,
        "turn_seq": st.turn_seq, "turn_session": st.turn_session, "session_turns": st.session_turns,
        "dispositions": st.dispositions, "changes": st.changes, "reach": st.reach, "standing": st.standing,
        "said": st.leaf_said, "sig": st._sig,
        "nodes": list(st.nodes), "parent": st.parent, "children": st.children,
        "rows": {lv: a.ids for lv, a in st.arrays.items()},
        "disposition_rows": st.disposition_rows.tolist(), "change_rows": st.change_rows.tolist(),
        "judged": st.judged,
    }


def test_restored_state_equals_the_built_one(tree) -> None:
    g = tree.graph("sam")
    built = RetrievalState(g).refresh(g, 1)
    assert built.changes and built.dispositions and built.standing and built.bm25[Level.MID].documents()  # all parts exercised
    snap = orjson.loads(orjson.dumps(lexical_snapshot(built)))
    restored = restore_state(g, 1, snap)
    assert restored is not None
    assert _fields(restored) == _fields(built)
    for q in QUERIES:
        req = prepare_recall(tree.engine, q, budget=120, model=None, levels=None)
        assert req.run(restored).text == req.run(built).text, q


def test_snapshot_of_other_nodes_or_analysis_is_refused(tree) -> None:
    g = tree.graph("sam")
    snap = orjson.loads(orjson.dumps(lexical_snapshot(RetrievalState(g).refresh(g, 1))))
    tree.observe("sam", "My sister Anna moved to Denver.", at="2024-04-20T10:00:00", session_id="s8")
    assert restore_state(tree.graph("sam"), 2, snap) is None  # a leaf it never analysed
    assert restore_state(g, 1, snap | {"fp": "another"}) is None
    assert restore_state(g, 1, {k: v for k, v in snap.items() if k != "turns"}) is None


def test_a_patched_snapshot_is_the_snapshot_of_the_new_nodes(tree) -> None:
    # Sub-trees that gain and lose nodes (a promotion's), leaves of one turn split
    # between them: the patched snapshot restores the state the new nodes' text gives.
    import random

    from personatree.retrieval.lex_snapshot import patch_snapshot
    from personatree.tiering.hot import sub_tree

    g = tree.graph("sam")
    ids = [n.id for n in g.nodes()]
    turns: dict[str, int] = {}
    for n in g.nodes(Level.LEAF):
        turns[n.provenance[0].observation_id] = turns.get(n.provenance[0].observation_id, 0) + 1
    assert max(turns.values()) >= 2  # some turn has several leaves
    rng = random.Random(7)
    for _ in range(25):
        before = [x for x in ids if rng.random() < 0.6]
        after = [x for x in ids if rng.random() < 0.6]
        old = sub_tree(g, before)
        snap = orjson.loads(orjson.dumps(lexical_snapshot(RetrievalState(old).refresh(old, 1))))
        patched = patch_snapshot(snap, before, g, after)
        assert patched is not None
        new = sub_tree(g, after)
        restored = restore_state(new, 2, orjson.loads(orjson.dumps(patched)))
        assert restored is not None
        assert _fields(restored) == _fields(RetrievalState(new).refresh(new, 2))


def test_a_snapshot_of_another_analysis_is_not_patched(tree) -> None:
    from personatree.retrieval.lex_snapshot import patch_snapshot

    g = tree.graph("sam")
    ids = [n.id for n in g.nodes()]
    snap = lexical_snapshot(RetrievalState(g).refresh(g, 1)) | {"fp": "another"}
    assert patch_snapshot(snap, ids, g, ids[:3]) is None
    assert patch_snapshot(None, ids, g, ids) is None


def test_a_phrasing_added_to_the_change_patterns_changes_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    # No probe text need flip for a new phrasing: the patterns are part of the digest,
    # so a snapshot made before an edit of the lexicon is refused after it.
    import re

    from personatree.retrieval import lex_snapshot

    before = lex_snapshot.analysis_fingerprint()
    widened = re.compile(lex_snapshot.CHANGE_OF_STATE_RE.pattern + "|handed back my keys")
    lex_snapshot.analysis_fingerprint.cache_clear()
    monkeypatch.setattr(lex_snapshot, "CHANGE_OF_STATE_RE", widened)
    try:
        assert lex_snapshot.analysis_fingerprint() != before
    finally:
        lex_snapshot.analysis_fingerprint.cache_clear()
