"""Whether a pattern has changed, read from its dated support and contradictions.

The pure function first (:func:`personatree.timeline.timeline`), then the graph
reading (:func:`node_timeline`) on small graphs built directly, then the confidence a
changed pattern is shown with. None of it depends on meaning: no embedder.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from personatree.confidence import sigmoid
from personatree.graph import MemoryGraph
from personatree.timeline import Dated, node_timeline, shown_logit, timeline
from personatree.types import Edge, EdgeKind, Level, Node, Provenance

T = datetime(2024, 3, 1, 12, tzinfo=timezone.utc)


def day(n: int) -> datetime:
    return T + timedelta(days=n)


def test_latest_contradiction_after_the_support_is_a_change() -> None:
    tl = timeline(
        "m",
        [Dated("a", day(0)), Dated("b", day(30)), Dated("c", day(60))],
        [Dated("x", day(100), -0.4), Dated("y", day(90), -0.3)],
    )
    assert tl.changed and tl.contradicted
    assert (tl.support_first, tl.support_last) == (day(0), day(60))
    assert (tl.conflict_first, tl.conflict_last) == (day(90), day(100))
    # Changed since the first contradiction after the last support; the latest is x.
    assert tl.since == day(90) and tl.latest_conflict == "x"
    assert [c.node_id for c in tl.conflicts] == ["x", "y"]
    assert [c.node_id for c in tl.after_support] == ["x", "y"]


def test_support_after_a_contradiction_is_not_a_change() -> None:
    tl = timeline("m", [Dated("a", day(0)), Dated("c", day(60))], [Dated("x", day(30), -0.4)])
    assert not tl.changed and tl.contradicted
    assert tl.since is None and tl.latest_conflict == "x"
    assert tl.after_support == ()


def test_a_contradiction_in_the_same_instant_as_support_is_a_nuance() -> None:
    tl = timeline("m", [Dated("a", day(5))], [Dated("x", day(5))])
    assert not tl.changed


def test_no_evidence_no_change() -> None:
    tl = timeline("m", [], [])
    assert not tl.changed and not tl.contradicted and tl.latest_conflict is None


def test_contradictions_only_is_a_change_since_the_first() -> None:
    tl = timeline("m", [], [Dated("x", day(3)), Dated("y", day(9))])
    assert tl.changed and tl.since == day(3) and tl.latest_conflict == "y"


def test_a_recorded_change_counts_when_the_edges_no_longer_tell() -> None:
    # The contradicting leaf left the tree; the writer's mark on the node remains.
    tl = timeline("m", [Dated("a", day(0))], [], changed_at=day(40).isoformat(), changed_by="gone")
    assert tl.changed and tl.since == day(40) and tl.latest_conflict == "gone"
    # A mark older than the latest support is stale: support came back since.
    assert not timeline("m", [Dated("a", day(50))], [], changed_at=day(40)).changed
    # An unreadable mark is ignored, not an error.
    assert not timeline("m", [Dated("a", day(0))], [], changed_at="not a date").changed


@given(
    st.lists(st.integers(0, 400), max_size=8),
    st.lists(st.integers(0, 400), max_size=8),
)
def test_changed_iff_latest_contradiction_is_newest(sup: list[int], con: list[int]) -> None:
    tl = timeline(
        "m",
        [Dated(f"s{i}", day(d)) for i, d in enumerate(sup)],
        [Dated(f"c{i}", day(d), -0.1) for i, d in enumerate(con)],
    )
    assert tl.changed == (bool(con) and (not sup or max(con) > max(sup)))
    if tl.changed:
        assert tl.since is not None and all(c.at >= tl.since for c in tl.after_support)
        assert tl.latest_conflict is not None
    assert tl.n_support == len(sup) and tl.n_conflict == len(con)


def test_shown_logit_of_a_changed_pattern_keeps_no_support_above_the_prior() -> None:
    tl = timeline("m", [Dated("a", day(0))], [Dated("x", day(9), -0.5), Dated("y", day(10), -0.25)])
    # Strong stored belief: shown from the prior, less every contradiction since.
    assert math.isclose(shown_logit(3.0, 0.0, tl), -0.75)
    assert sigmoid(shown_logit(3.0, 0.0, tl)) < 0.5
    # Already below the prior: it only goes lower.
    assert math.isclose(shown_logit(-1.0, 0.0, tl), -1.75)
    # Unknown prior (NaN) reads as even odds.
    assert math.isclose(shown_logit(3.0, float("nan"), tl), -0.75)
    # Not changed: the stored logit, whose conflicts were applied where recorded.
    same = timeline("m", [Dated("a", day(20))], [Dated("x", day(9), -0.5)])
    assert shown_logit(3.0, 0.0, same) == 3.0


def _node(nid: str, level: Level, at: datetime) -> Node:
    prov = (Provenance(f"o-{nid}", 0, 0, at, "s"),) if level is Level.LEAF else ()
    return Node(nid, "u", level, "preference", nid, {}, at, at, 0.0, provenance=prov)


def _graph() -> MemoryGraph:
    g = MemoryGraph("u")
    g.add_node(_node("m1", Level.MID, day(0)))
    g.add_node(_node("m2", Level.MID, day(0)))
    g.add_node(_node("r", Level.ROOT, day(0)))
    for i, d in enumerate((0, 10, 20)):
        g.add_node(_node(f"a{i}", Level.LEAF, day(d)))
        g.add_edge(Edge(f"a{i}", "m1", EdgeKind.SUPPORT, 0.8, 0.5, "", day(d)))
    g.add_node(_node("b0", Level.LEAF, day(5)))
    g.add_edge(Edge("b0", "m2", EdgeKind.SUPPORT, 0.8, 0.5, "", day(5)))
    g.add_node(_node("stop", Level.LEAF, day(40)))
    g.add_edge(Edge("stop", "m1", EdgeKind.CONFLICT, -0.7, -0.42, "stopped", day(40)))
    g.add_edge(Edge("m1", "r", EdgeKind.SUPPORT, 0.9, 0.5, "", day(20)))
    g.add_edge(Edge("m2", "r", EdgeKind.SUPPORT, 0.9, 0.5, "", day(20)))
    return g


def test_node_timeline_reads_the_conflict_edges_of_a_mid() -> None:
    g = _graph()
    tl = node_timeline(g, "m1")
    assert tl.changed and tl.since == day(40) and tl.latest_conflict == "stop"
    assert tl.support_last == day(20) and tl.n_support == 3
    assert tl.conflicts[0].weight == -0.42
    assert not node_timeline(g, "m2").changed


def test_a_root_reads_the_evidence_of_its_patterns() -> None:
    g = _graph()
    tl = node_timeline(g, "r")
    assert tl.changed and tl.latest_conflict == "stop" and tl.n_support == 4
    # New support on the other pattern, after the stop: the claim holds again.
    g.add_node(_node("b1", Level.LEAF, day(50)))
    g.add_edge(Edge("b1", "m2", EdgeKind.SUPPORT, 0.8, 0.5, "", day(50)))
    tl = node_timeline(g, "r")
    assert not tl.changed and tl.contradicted and tl.latest_conflict == "stop"


def test_a_statement_against_one_pattern_and_for_another_of_the_claim_is_against() -> None:
    # "I stopped hiking after my injury" contradicts the hiking pattern and supports
    # an injury pattern; under one claim, it must not count as support of the claim.
    g = _graph()
    g.add_edge(Edge("stop", "m2", EdgeKind.SUPPORT, 0.6, 0.4, "", day(40)))
    tl = node_timeline(g, "r")
    assert tl.changed and tl.latest_conflict == "stop" and tl.support_last == day(20)


def test_a_recorded_change_on_a_pattern_reaches_its_root() -> None:
    g = _graph()
    g.remove_edge("stop", "m1")
    assert not node_timeline(g, "r").changed
    g.node("m1").attributes.update(changed_at=day(45).isoformat(), changed_by="stop")
    tl = node_timeline(g, "r")
    assert tl.changed and tl.since == day(45) and tl.latest_conflict == "stop"


def test_a_leaf_has_an_empty_timeline() -> None:
    tl = node_timeline(_graph(), "a0")
    assert not tl.changed and not tl.contradicted
