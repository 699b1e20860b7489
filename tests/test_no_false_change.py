"""A hard week is no change of mind about what the person enjoys.

Chat is full of upbeat and rueful remarks that are close in meaning to any of the
person's patterns ("staying positive helps in tough times") or tell how one episode
went ("I had a rough match on Saturday"). Neither takes a side on the pattern's topic,
so neither may contradict it: the pattern keeps its support, is not shown as changed,
and the remarks stay leaves that recall can find. A later statement that does take the
other side ("I can't stand tennis any more") still contradicts it. Live (consolidate,
then observe) and bulk (observe a history, consolidate once) alike; sentences of our
own."""

from __future__ import annotations

from datetime import timedelta

import pytest

from personatree.types import EdgeKind, Level

from .conftest import T0
from .helpers import open_tree

OWN = [
    "I love playing tennis, it's my favourite sport.",
    "I really enjoy tennis, especially doubles with friends.",
    "Tennis is the sport I love most.",
    "I love tennis, I could play it every day.",
    "I really enjoy a good game of tennis on the weekend.",
    "Playing tennis is my favourite thing to do outdoors.",
]
REMARKS = [
    "Staying positive makes such a difference when things get tough.",
    "I had a rough tennis match on Saturday, my serve was terrible.",
    "Work has been exhausting this month, honestly.",
]
CHANGE = "I can't stand tennis any more since the elbow surgery."


def _at(i: int):
    return T0 + timedelta(days=5 * i, hours=3)


def _items(texts: list[str], start: int) -> list[dict]:
    return [{"messages": [{"role": "user", "content": t}], "at": _at(start + i), "session_id": f"s{start + i}"}
            for i, t in enumerate(texts)]


def _tennis_mids(g):
    return [m for m in g.nodes(Level.MID) if "tennis" in m.content.lower()]


@pytest.mark.parametrize("path", ["bulk", "live"])
def test_remarks_of_a_hard_week_contradict_no_pattern(path, parts, tmp_path) -> None:
    tree = open_tree(tmp_path / "m.db", parts, _at(0))
    if path == "bulk":
        tree.observe_many("ana", _items(OWN + REMARKS, 0))
    else:
        tree.observe_many("ana", _items(OWN, 0))
        tree.consolidate("ana", now=_at(len(OWN)))
        for item in _items(REMARKS, len(OWN)):
            tree.observe("ana", item["messages"], at=item["at"], session_id=item["session_id"])
    tree.consolidate("ana", now=_at(len(OWN) + len(REMARKS) + 1))
    g = tree.graph("ana")
    g.check()
    mids = _tennis_mids(g)
    assert mids, "the person's tennis formed no pattern"
    remark_ids = {n.id for n in g.nodes(Level.LEAF) if n.content in REMARKS}
    assert len(remark_ids) == len(REMARKS), "a remark was lost"
    conflicts = [e for e in g.edges() if e.kind is EdgeKind.CONFLICT]
    assert not conflicts, [(g.node(e.src).content, g.node(e.dst).content) for e in conflicts]
    assert all("changed_at" not in m.attributes for m in mids)
    assert "rough tennis match" in tree.recall("ana", "How did Saturday's match go?", budget=400).text

    # A side taken on tennis still contradicts the pattern.
    n = len(OWN) + len(REMARKS) + 2
    tree.observe("ana", [{"role": "user", "content": CHANGE}], at=_at(n), session_id=f"s{n}")
    tree.consolidate("ana", now=_at(n + 1))
    g = tree.graph("ana")
    change = next(x for x in g.nodes(Level.LEAF) if x.content == CHANGE)
    assert any(e.kind is EdgeKind.CONFLICT and e.src == change.id for e in g.edges())
    tree.close()
