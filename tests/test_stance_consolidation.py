"""Stance as part of a pattern: opposite stances of one topic never share a pattern's
support, on the live path (consolidate, then observe) and the bulk path (observe a
history, consolidate once), and a pattern whose latest evidence reverses it is changed,
never promoted, and asserted by no root."""

from __future__ import annotations

from datetime import timedelta
from typing import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree import FixedClock, PersonaTree
from personatree.config import ConsolidationConfig, InsertionConfig, PersonaTreeConfig
from personatree.graph import MemoryGraph
from personatree.insertion import plan_insertions
from personatree.stance import (
    group_of, guard_psi, latest_change, node_group, node_stance, pattern_stance, stance_of,
)
from personatree.store import open_store
from personatree.types import EdgeKind, LeafDraft, Level, Node, Observation, Provenance

from .conftest import T0, ScriptedJudge
from .helpers import open_tree

# Our own sentences: three statements of liking a food, then three of disliking it.
LIKES = [
    "I really love sushi, it's my favourite thing to eat.",
    "We had sushi again on Friday night and I loved every bite.",
    "Sushi is honestly the best meal there is, I adore it.",
]
DISLIKES = [
    "I hate sushi now, the raw fish makes me queasy.",
    "Honestly I can't stand sushi anymore.",
    "Please don't ever order sushi for me again, I dislike it.",
]


def _at(i: int):
    return T0 + timedelta(days=9 * i, hours=3)


def _item(i: int, text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}], "at": _at(i), "session_id": f"s{i}"}


def assert_single_stance(g: MemoryGraph) -> None:
    """No mid's or root's support holds both stance sides."""
    for level in (Level.MID, Level.ROOT):
        for node in g.nodes(level):
            sides = {node_group(g.node(c)) for c in g.children(node.id)}
            assert len(sides) <= 1, (node.content, sides)
            if sides:
                assert sides == {node_group(node)}, (node.content, node.attributes.get("stance"))


def _sushi_report(g: MemoryGraph) -> dict[str, tuple[int, int, bool]]:
    out = {}
    for mid in g.nodes(Level.MID):
        out[node_stance(mid)] = (len(g.children(mid.id)), len(g.conflicts_of(mid.id)),
                                 bool(mid.attributes.get("changed_at")))
    return out


# -- pure functions ---------------------------------------------------------------------


def test_stance_is_read_from_attributes_and_derived_when_absent() -> None:
    assert stance_of({"stance": "Started"}) == "started"
    assert stance_of({"stance": "bogus", "polarity": -1}) == "negative"
    assert stance_of({"polarity": 1, "cessation": True}) == "stopped"
    assert stance_of({"polarity": 1}) == "positive"
    assert stance_of({}) == "neutral" and stance_of(None) == "neutral"
    assert [group_of(s) for s in ("positive", "started", "neutral", "negative", "stopped")] == [1, 1, 1, -1, -1]
    assert pattern_stance(["neutral", "neutral"]) == "neutral"
    assert pattern_stance(["stopped", "negative", "stopped"]) == "stopped"


def test_guard_turns_an_opposite_support_into_a_conflict_and_a_neutral_one_into_nothing() -> None:
    assert guard_psi("negative", "positive", 0.9, 0.35) == (-0.9, "opposite stance (negative vs positive)")
    assert guard_psi("stopped", "positive", 0.1, 0.35)[0] == -0.35
    assert guard_psi("negative", "positive", -0.8, 0.35) == (-0.8, "")  # the judge's own conflict stays
    assert guard_psi("neutral", "stopped", 0.7, 0.35)[0] == 0.0
    assert guard_psi("neutral", "positive", 0.7, 0.35) == (0.7, "")


def test_a_pattern_is_changed_only_while_its_latest_conflict_is_its_latest_evidence() -> None:
    s = [(_at(0), "a"), (_at(1), "b")]
    assert latest_change(s, []) is None
    assert latest_change(s, [(_at(2), "c")]) == (_at(2), "c")
    assert latest_change(s + [(_at(3), "d")], [(_at(2), "c")]) is None


# -- the sushi sequence, both orders of consolidation, real embedder ----------------------


@pytest.mark.parametrize("path", ["bulk", "live"])
def test_the_sushi_sequence_records_the_change_on_both_paths(path, parts, tmp_path) -> None:
    tree = open_tree(tmp_path / "m.db", parts, _at(0))
    items = [_item(i, t) for i, t in enumerate(LIKES + DISLIKES)]
    if path == "bulk":
        tree.observe_many("ana", items)
    else:
        tree.observe_many("ana", items[:3])
        tree.consolidate("ana", now=_at(2) + timedelta(hours=1))
        assert [node_stance(m) for m in tree.graph("ana").nodes(Level.MID)] == ["positive"]
        for it in items[3:]:
            report = tree.observe("ana", it["messages"], at=it["at"], session_id=it["session_id"])
            assert [d.action for d in report.decisions] == ["conflict"]
    tree.consolidate("ana", now=_at(5) + timedelta(hours=1))
    g = tree.graph("ana")
    g.check()
    assert_single_stance(g)
    report = _sushi_report(g)
    # The liking pattern keeps its three supports, holds the three later dislikes as
    # conflicts and is changed; the dislikes form their own pattern.
    assert report["positive"] == (3, 3, True)
    assert report["negative"][0] == 3 and not report["negative"][2]
    liking = next(m for m in g.nodes(Level.MID) if node_stance(m) == "positive")
    assert liking.n_conflict == 3 and liking.attributes["changed_by"] in g
    assert tree.explain("ana", liking.id) is not None
    # No claim asserts the old stance.
    assert not any(node_group(r) > 0 for r in g.nodes(Level.ROOT))
    tree.close()


def test_bulk_and_live_give_the_same_patterns_and_rebuild_replays_them(parts, tmp_path) -> None:
    graphs = []
    for path in ("bulk", "live"):
        tree = open_tree(tmp_path / f"{path}.db", parts, _at(0))
        items = [_item(i, t) for i, t in enumerate(LIKES + DISLIKES)]
        if path == "live":
            tree.observe_many("ana", items[:3])
            tree.consolidate("ana", now=_at(2) + timedelta(hours=1))
            items = items[3:]
        tree.observe_many("ana", items)
        tree.consolidate("ana", now=_at(5) + timedelta(hours=1))
        graphs.append(_sushi_report(tree.graph("ana")))
        assert tree.rebuild("ana").equal
        tree.close()
    assert graphs[0] == graphs[1]


# -- the insertion guard: a judge that says "support" to everything -----------------------


class StanceJudge(ScriptedJudge):
    """The scripted judge, with leaves whose stance is given as a ``stance|type: text`` prefix."""

    def extract(self, observations: Sequence[Observation]) -> list[list[LeafDraft]]:
        out: list[list[LeafDraft]] = []
        for o in observations:
            drafts = []
            for turn, m in enumerate(o.messages):
                if m.role != "user":
                    continue
                head, _, text = m.content.partition(":")
                stance, _, kind = head.partition("|")
                vec = self._embedder.embed([text.strip()])[0]
                drafts.append(LeafDraft(text.strip(), kind.strip(), {"stance": stance.strip()},
                                        Provenance(o.id, turn, 0, o.at, o.session_id), vec))
            out.append(drafts)
        return out


def _node(nid: str, level: Level, stance: str, vec: np.ndarray, at=T0, content: str | None = None) -> Node:
    return Node(id=nid, user_id="u", level=level, schema_type="preference", content=content or nid,
                attributes={"stance": stance}, t_first=at, t_last=at, logit=0.0, embedding=vec)


def test_an_opposite_stance_is_a_conflict_even_when_the_judge_says_support(hashing, registry) -> None:
    vec = hashing.embed(["likes sushi a lot"])[0]
    g = MemoryGraph("u")
    g.add_node(_node("md_like", Level.MID, "positive", vec, content="Enjoys sushi"))
    judge = ScriptedJudge(hashing, default_psi=1.0)
    said = {"negative": "I really dislike sushi now.", "neutral": "Sushi for lunch at the office.",
            "positive": "I love sushi."}
    leaves = [_node(f"lf_{s}", Level.LEAF, s, vec, T0 + timedelta(days=1), content=said[s]) for s in said]
    got = {d.leaf_id: d.action for d in plan_insertions(g, leaves, judge, registry, InsertionConfig())}
    assert got == {"lf_negative": "conflict", "lf_neutral": "attach", "lf_positive": "attach"}
    g.add_node(_node("md_stop", Level.MID, "stopped", hashing.embed(["stopped going to the gym"])[0]))
    gym = _node("lf_gym", Level.LEAF, "neutral", hashing.embed(["stopped going to the gym"])[0])
    (d,) = plan_insertions(g, [gym], judge, registry, InsertionConfig())
    assert d.action == "orphan"  # a neutral mention does not support a stopped pattern


def test_an_opposite_stance_off_the_topic_is_neither_support_nor_conflict(hashing, registry) -> None:
    # As close as can be and a side taken, but on something else: the leaf names
    # nothing of the pattern's topic, so it does not contradict the pattern.
    vec = hashing.embed(["likes sushi a lot"])[0]
    g = MemoryGraph("u")
    g.add_node(_node("md_like", Level.MID, "positive", vec, content="Enjoys sushi"))
    judge = ScriptedJudge(hashing, default_psi=1.0)
    leaf = _node("lf_hard", Level.LEAF, "negative", vec, T0 + timedelta(days=1),
                 content="I dislike crowded places these days.")
    (d,) = plan_insertions(g, [leaf], judge, registry, InsertionConfig())
    assert d.action == "orphan"
    # The same leaf with a word of the topic contradicts the pattern.
    on_topic = _node("lf_sushi", Level.LEAF, "negative", vec, T0 + timedelta(days=1),
                     content="I dislike sushi these days.")
    (d,) = plan_insertions(g, [on_topic], judge, registry, InsertionConfig())
    assert d.action == "conflict"


@pytest.mark.parametrize(
    ("content", "action"),
    [("We got there late and the waiter called out 'No sushi left tonight!'", "orphan"),
     ("I walked past the sushi bar, no queue outside for once.", "orphan"),
     # Its denial names nothing of sushi; the clause that does only tells a feeling.
     ("I checked my bag twice, there was no receipt in it, but the sushi still tasted awful.", "orphan"),
     ("Sushi? I can't stand it anymore.", "conflict")],
)
def test_a_side_taken_in_another_clause_is_no_conflict(content, action, hashing, registry) -> None:
    # The sentence names the topic and denies something, but its denial is someone
    # else's words or about another thing; a side taken on the topic, even by a
    # pronoun ("it"), still is a conflict.
    vec = hashing.embed(["likes sushi a lot"])[0]
    g = MemoryGraph("u")
    g.add_node(_node("md_like", Level.MID, "positive", vec, content="Enjoys sushi"))
    leaf = _node("lf", Level.LEAF, "negative", vec, T0 + timedelta(days=1), content=content)
    (d,) = plan_insertions(g, [leaf], ScriptedJudge(hashing, default_psi=1.0), registry, InsertionConfig())
    assert d.action == action, d


def test_a_bad_episode_is_no_change_of_mind_unless_the_judge_finds_one(hashing, registry) -> None:
    # How one meal felt is not a side taken on sushi: never support, and a conflict
    # only when the judge itself says so.
    vec = hashing.embed(["likes sushi a lot"])[0]
    g = MemoryGraph("u")
    g.add_node(_node("md_like", Level.MID, "positive", vec, content="Enjoys sushi"))
    leaf = _node("lf_meal", Level.LEAF, "negative", vec, T0 + timedelta(days=1),
                 content="The sushi at the station was awful last night.")
    (d,) = plan_insertions(g, [leaf], ScriptedJudge(hashing, default_psi=1.0), registry, InsertionConfig())
    assert d.action == "orphan"
    (d,) = plan_insertions(g, [leaf], ScriptedJudge(hashing, default_psi=-0.9), registry, InsertionConfig())
    assert d.action == "conflict"
    # A denial beside the feeling is a side taken, whatever the judge says.
    banned = _node("lf_banned", Level.LEAF, "negative", vec, T0 + timedelta(days=2),
                   content="I got food poisoning badly and the doctor says no sushi for a while.")
    (d,) = plan_insertions(g, [banned], ScriptedJudge(hashing, default_psi=1.0), registry, InsertionConfig())
    assert d.action == "conflict"


@pytest.mark.parametrize(
    ("content", "action"),
    [("I realised I shouldn't have rung Grandpa so late.", "orphan"),
     ("I promised Grandpa I would never sell the boat.", "orphan"),
     ("I stopped ringing Grandpa after the argument.", "conflict"),
     ("I can't stand Grandpa's endless lectures these days.", "conflict")],
)
def test_a_denial_is_no_change_beside_a_claim_that_takes_no_side(content, action, hashing, registry) -> None:
    # "Often talks about Grandpa" rests on lines that lean to liking him, but it claims
    # only that he comes up: a denial in a line naming him is him coming up again,
    # whatever the judge says, while a stop or a dislike is a change.
    vec = hashing.embed(["talks about grandpa a lot"])[0]
    stance = "stopped" if "stopped" in content else "negative"
    judge = ScriptedJudge(hashing, default_psi=1.0)
    for claim, expected in (("Often talks about Grandpa", action), ("Enjoys ringing Grandpa", "conflict")):
        # The same line contradicts a claim that takes the side.
        g = MemoryGraph("u")
        g.add_node(_node("md", Level.MID, "positive", vec, content=f"{claim} (5 mentions, May 2024)"))
        leaf = _node("lf", Level.LEAF, stance, vec, T0 + timedelta(days=1), content=content)
        (d,) = plan_insertions(g, [leaf], judge, registry, InsertionConfig())
        assert d.action == expected, (claim, d)


# -- property: no pattern's support ever mixes stances, live or bulk ----------------------


def _stance_tree(db: str, hashing, registry) -> PersonaTree:
    store = open_store(db)
    cfg = PersonaTreeConfig(consolidation=ConsolidationConfig(t_root_days=1.0, n_root=3))
    # A judge that calls every pair support: only the stance rule keeps sides apart.
    return PersonaTree(store, config=cfg, registry=registry, embedder=hashing,
                       judge=StanceJudge(hashing, default_psi=1.0), clock=FixedClock(T0))


def _run(tree: PersonaTree, stances: Sequence[str], cut: int) -> MemoryGraph:
    items = [{"messages": [{"role": "user", "content": f"{s}|preference: {_TEXTS[i % len(_TEXTS)]}"}],
              "at": T0 + timedelta(days=4 * i), "session_id": f"s{i}"} for i, s in enumerate(stances)]
    if cut:
        tree.observe_many("u", items[:cut])
        tree.consolidate("u", now=T0 + timedelta(days=4 * cut))
    for it in items[cut:]:
        tree.observe("u", it["messages"], at=it["at"], session_id=it["session_id"])
    tree.consolidate("u", now=T0 + timedelta(days=4 * len(items)))
    return tree.graph("u")


# One topic in close words: under the hashing embedder these are one cohesive cluster.
_TEXTS = [f"we had sushi for dinner with friends down at the harbour {w}"
          for w in ("tonight", "again", "today", "yesterday")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stances=st.lists(st.sampled_from(["positive", "negative", "neutral", "stopped", "started"]),
                        min_size=3, max_size=9),
       cut=st.integers(min_value=0, max_value=9), path=st.sampled_from(["bulk", "live"]))
def test_no_pattern_support_mixes_stances_on_either_path(stances, cut, path, hashing, registry) -> None:
    tree = _stance_tree("memory://", hashing, registry)
    g = _run(tree, stances, min(cut, len(stances)) if path == "live" else len(stances))
    g.check()
    assert_single_stance(g)
    for mid in g.nodes(Level.MID):
        assert g.parent(mid.id) is None or not mid.attributes.get("changed_at")
        for c in g.conflicts_of(mid.id):
            assert node_group(g.node(c)) != node_group(mid) or g.node(c).attributes["stance"] == "neutral"
    for root in g.nodes(Level.ROOT):
        assert len(g.children(root.id)) >= 2
    tree.close()


@pytest.mark.parametrize("cut", [6, 3])
def test_the_property_setup_forms_patterns_on_both_sides(cut, hashing, registry) -> None:
    """The property above is not vacuous: its sentences do form patterns, one per side."""
    tree = _stance_tree("memory://", hashing, registry)
    g = _run(tree, ["positive", "neutral", "positive", "negative", "stopped", "negative"], cut)
    assert sorted(node_group(m) for m in g.nodes(Level.MID)) == [-1, 1]
    liking = next(m for m in g.nodes(Level.MID) if node_group(m) > 0)
    assert len(g.conflicts_of(liking.id)) == 3 and liking.attributes["changed_at"]
    tree.close()


def test_a_mixed_pattern_from_an_older_tree_is_repaired_by_the_next_pass(hashing, registry) -> None:
    """A tree written before stance was part of a pattern (or imported from one) holds a
    mid supported by both sides; one pass leaves it one side with the rest as conflicts."""
    from personatree.consolidate import Consolidator, apply_plan
    from personatree.types import Edge

    g = MemoryGraph("u")
    vec = hashing.embed([_TEXTS[0]])[0]
    mid = Node(id="md_old", user_id="u", level=Level.MID, schema_type="preference", content="Loves sushi",
               attributes={"polarity": 1}, t_first=_at(0), t_last=_at(5), logit=3.0, n_support=6, embedding=vec)
    g.add_node(mid)
    for i, s in enumerate(["positive", "positive", "neutral", "negative", "negative", "stopped"]):
        g.add_node(_node(f"lf_{i}", Level.LEAF, s, vec, _at(i)))
        g.add_edge(Edge(f"lf_{i}", "md_old", EdgeKind.SUPPORT, 0.8, 0.8, "old", _at(i)))
    c = Consolidator(ConsolidationConfig(), registry, ScriptedJudge(hashing), embedder=hashing)
    apply_plan(g, c.plan(g, _at(6)), registry, c.config)
    g.check()
    assert_single_stance(g)
    old = g.node("md_old")
    assert sorted(g.children("md_old")) == ["lf_0", "lf_1", "lf_2"]
    assert sorted(g.conflicts_of("md_old")) == ["lf_3", "lf_4", "lf_5"]
    assert old.n_support == 3 and old.n_conflict == 3 and old.logit < 3.0
    assert old.attributes["stance"] == "positive" and old.attributes["changed_by"] == "lf_5"
