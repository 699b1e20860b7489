"""A memory of several people: each pattern and claim is one speaker's, on every path.

Two friends both talk about their evening runs in one memory (a conversation recorded
with each message's name). Their lines are close in meaning, but one person's habit is
not the other's: no pattern's support mixes their lines, no claim rests on both
people's patterns, one person's "I stopped running" contradicts only their own
pattern, and each pattern says whose it is. Live (consolidation after the first
sessions, then one line at a time) and bulk (a history, consolidated once).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from personatree.graph import MemoryGraph
from personatree.retrieval.render import node_line
from personatree.speakers import common_speaker, leaf_speaker, node_speaker, speaker_attributes, speaker_prefix
from personatree.tiering.line_bound import line_bytes
from personatree.types import Edge, EdgeKind, Level, Node

from .conftest import T0
from .helpers import open_tree

# Our own sentences: two people's running, said in turns.
ANA = [
    "I go for a run every evening after work.",
    "Every evening after work I head out for a run.",
    "I run most evenings once work is done.",
    "An evening run after work is part of my routine.",
    "I go out running every evening after my shift.",
    "Most evenings I run for half an hour after work.",
]
BEN = [
    "I go running every evening after work.",
    "Every evening after work I go for a run.",
    "I run every evening once I finish work.",
    "My routine is an evening run after work.",
    "I head out for a run every evening after the office.",
    "Most evenings I go for a run after work.",
]
BEN_STOPS = "I stopped running in the evenings, my shins can't take it any more."


def _at(i: int):
    return T0 + timedelta(days=5 * i, hours=3)


def _item(text: str, who: str, i: int) -> dict:
    return {"messages": [{"role": "user", "content": text, "name": who}], "at": _at(i), "session_id": f"s{i}"}


def _history() -> list[dict]:
    out = []
    for i, (a, b) in enumerate(zip(ANA, BEN)):
        out += [_item(a, "Ana", 2 * i), _item(b, "Ben", 2 * i + 1)]
    return out


def _assert_one_speaker_each(g: MemoryGraph) -> None:
    mids = list(g.nodes(Level.MID))
    assert {node_speaker(g, m) for m in mids} == {"Ana", "Ben"}, [(m.content, node_speaker(g, m)) for m in mids]
    for mid in mids:
        kids = g.children(mid.id, EdgeKind.SUPPORT) + g.children(mid.id, EdgeKind.CONFLICT)
        said = {leaf_speaker(g.node(k)) for k in kids}
        assert said == {mid.attributes["speaker"]}, (mid.content, said)
    for root in g.nodes(Level.ROOT):
        assert len({node_speaker(g, g.node(m)) for m in g.children(root.id)}) == 1


@pytest.mark.parametrize("path", ["bulk", "live"])
def test_two_peoples_runs_make_two_peoples_patterns(path, parts, tmp_path) -> None:
    tree = open_tree(tmp_path / "m.db", parts, _at(0))
    history = _history()
    if path == "bulk":
        tree.observe_many("chat", history)
    else:
        tree.observe_many("chat", history[:8])
        tree.consolidate("chat", now=_at(8))
        for item in history[8:]:
            tree.observe("chat", item["messages"], at=item["at"], session_id=item["session_id"])
        tree.consolidate("chat", now=_at(12))
    stop = tree.observe("chat", [{"role": "user", "content": BEN_STOPS, "name": "Ben"}], at=_at(13),
                        session_id="s13")
    tree.consolidate("chat", now=_at(14))
    g = tree.graph("chat")
    g.check()
    _assert_one_speaker_each(g)
    # Ben's stop contradicts Ben's running only.
    stop_leaf = stop.decisions[0].leaf_id
    against = [e.dst for e in g.edges(EdgeKind.CONFLICT) if e.src == stop_leaf]
    assert against and all(g.node(m).attributes["speaker"] == "Ben" for m in against)
    # Each pattern says whose it is.
    text = tree.render("chat")
    assert "Ana: " in text and "Ben: " in text
    tree.close()


def _node(nid: str, level: Level, speaker: str | None = None) -> Node:
    attrs = {"speaker": speaker} if speaker else {}
    return Node(nid, "u", level, "preference" if level is not Level.LEAF else "event", f"text {nid}", attrs,
                T0, T0, 0.0, embedding=np.ones(4, dtype=np.float32) / 2)


def test_a_pattern_without_a_speaker_is_its_evidences_most_frequent_one() -> None:
    g = MemoryGraph("u")
    mid = _node("m", Level.MID)
    g.add_node(mid)
    for i, who in enumerate(["Ana", "Ben", "Ana", None]):
        leaf = _node(f"l{i}", Level.LEAF, who)
        g.add_node(leaf)
        g.add_edge(Edge(leaf.id, mid.id, EdgeKind.SUPPORT, 0.8, 0.8, "test", T0))
    assert node_speaker(g, mid) == "Ana"
    mid.attributes["speaker"] = "Ben"
    assert node_speaker(g, mid) == "Ben"
    lone = _node("m2", Level.MID)
    g.add_node(lone)
    assert node_speaker(g, lone) is None


def test_speaker_helpers() -> None:
    assert common_speaker(["Ana", "Ana"]) == "Ana" and common_speaker(["Ana", None]) is None
    assert speaker_attributes(["Ana", "Ana"]) == {"speaker": "Ana"} and speaker_attributes([None]) == {}
    assert speaker_prefix(_node("a", Level.MID, "Ana")) == "Ana: "
    assert speaker_prefix(_node("b", Level.LEAF, "user")) == "" and speaker_prefix(_node("c", Level.MID)) == ""
    # The line and its byte bound both carry the name.
    mid = _node("m", Level.MID, "Anastasia")
    assert "Anastasia: text m" in node_line(mid, 0.5)
    assert line_bytes(mid) >= len(node_line(mid, 0.5).encode())
