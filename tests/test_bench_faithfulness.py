"""The faithfulness harness: scenario files are checked, stitching keeps time in order, and
the measures give the known answer on tiny hand-made cases (so each can fail)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from personatree_bench.faithfulness import (
    context_measures,
    format_faithfulness,
    graph_measures,
    leaf_stance,
    run_faithfulness,
    stance_side,
)
from personatree_bench.scenarios import (
    KINDS,
    Scenario,
    ScenarioError,
    Statement,
    default_scenarios_path,
    load_scenarios,
    parse_scenario,
    parse_scenarios,
)
from personatree_bench.stitch import speaker_stream, stitch, stitch_all
from personatree_bench.types import Conversation, Turn
from personatree.errors import InputError, PersonaTreeError
from personatree.graph import MemoryGraph
from personatree.types import Edge, EdgeKind, Level, Node, Provenance

T0 = datetime(2024, 1, 1, 10, tzinfo=timezone.utc)


def _raw(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "tea", "split": "tune", "kind": "stance_flip", "topic": "green tea",
        "statements": [{"text": "Green tea every afternoon keeps me going.", "stance": "positive"},
                       {"text": "I brewed a lovely pot of sencha today.", "stance": "positive"}],
        "change": {"text": "The taste of green tea makes me gag these days.", "stance": "negative"},
        "question": "What should I offer them when they visit?",
    }
    base.update(over)
    return base


def _host(sessions: int = 14, *, gap_days: int = 7) -> Conversation:
    """Two speakers, two turns each per session, one session a week."""
    turns: list[Turn] = []
    for s in range(sessions):
        start = T0 + timedelta(days=gap_days * s)
        for i, (who, text) in enumerate([("Lena", f"Lena talks about week {s} at the garage."),
                                         ("Omar", f"Omar mentions the bakery in week {s}."),
                                         ("Lena", f"Lena fixed a bicycle chain in week {s}."),
                                         ("Omar", f"Omar baked rye loaves in week {s}.")]):
            turns.append(Turn(f"D{s + 1}:{i + 1}", who, text, start + timedelta(minutes=i), f"h/session_{s + 1}"))
    return Conversation("h", tuple(turns), (), {"speaker_a": "Lena", "speaker_b": "Omar"})


# -- scenario files ------------------------------------------------------------------------


def test_packaged_scenarios_cover_both_splits_and_every_kind() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 40
    assert {s.split for s in scenarios} == {"tune", "heldout"}
    assert {s.kind for s in scenarios} == set(KINDS)
    for split in ("tune", "heldout"):
        assert {s.kind for s in load_scenarios(split=split)} == set(KINDS)
    assert len(load_scenarios(limit=1)) == 2  # one of each split


def test_the_second_held_out_set_is_held_out_and_covers_every_kind() -> None:
    path = default_scenarios_path().with_name("faithfulness_fresh.json")
    fresh = load_scenarios(path)
    assert len(fresh) >= 21 and {s.split for s in fresh} == {"heldout"}
    assert {s.kind for s in fresh} == set(KINDS)
    packaged = {s.change.text for s in load_scenarios()} | {t.text for s in load_scenarios() for t in s.statements}
    assert not packaged & ({s.change.text for s in fresh} | {t.text for s in fresh for t in s.statements})


def test_the_second_tuning_set_is_for_tuning_and_shares_no_sentence_with_the_others() -> None:
    path = default_scenarios_path()
    tune2 = load_scenarios(path.with_name("faithfulness_tune2.json"))
    assert len(tune2) >= 28 and {s.split for s in tune2} == {"tune"}
    assert {s.kind for s in tune2} == set(KINDS)
    others = load_scenarios() + load_scenarios(path.with_name("faithfulness_fresh.json"))

    def sentences(xs: Any) -> set[str]:
        return {s.change.text for s in xs} | {t.text for s in xs for t in s.statements}

    assert not sentences(tune2) & sentences(others)
    assert not {s.id for s in tune2} & {s.id for s in others}


def test_the_third_tuning_set_is_for_tuning_and_shares_no_sentence_with_the_others() -> None:
    path = default_scenarios_path()
    tune3 = load_scenarios(path.with_name("faithfulness_tune3.json"))
    assert len(tune3) >= 20 and {s.split for s in tune3} == {"tune"}
    assert {s.kind for s in tune3} == set(KINDS)
    others = load_scenarios()
    for name in ("faithfulness_tune2.json", "faithfulness_fresh.json"):
        others += load_scenarios(path.with_name(name))

    def sentences(xs: Any) -> set[str]:
        return {s.change.text for s in xs} | {t.text for s in xs for t in s.statements}

    assert not sentences(tune3) & sentences(others)
    assert not {s.id for s in tune3} & {s.id for s in others}


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"change": None}, "change"),
        ({"statements": [{"text": "Only one.", "stance": "positive"}]}, "statements"),
        ({"split": "test"}, "split"),
        ({"kind": "weather"}, "kind"),
        ({"question": "  "}, "question"),
        ({"change": {"text": "Still love it.", "stance": "positive"}}, "change.stance"),
        ({"statements": [{"text": "A.", "stance": "keen"}, {"text": "B.", "stance": "positive"}]},
         "statements[0].stance"),
        ({"id": ""}, "id"),
    ],
)
def test_a_broken_scenario_raises_a_typed_error_naming_the_field(over: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(_raw(**over))
    assert err.value.field == field
    assert isinstance(err.value, InputError) and isinstance(err.value, PersonaTreeError)


def test_a_scenario_file_is_checked_whole(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="appears twice"):
        parse_scenarios({"scenarios": [_raw(), _raw()]})
    with pytest.raises(ScenarioError, match="unknown format"):
        parse_scenarios({"format": "other/1", "scenarios": [_raw()]})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        load_scenarios(bad)
    # A broken scenario is reported even when the split that holds it is not asked for.
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"scenarios": [_raw(), _raw(id="b", split="heldout", kind=None)]}))
    with pytest.raises(ScenarioError) as err:
        load_scenarios(mixed, split="tune")
    assert err.value.scenario == "b"


# -- stitching ------------------------------------------------------------------------------


def test_stitching_keeps_dates_ordered_and_only_the_host_speaker() -> None:
    scenario = parse_scenario(_raw())
    case = stitch(scenario, _host(), "Lena", start=2, first=1, case_id="c1")
    turns = case.conversation.turns
    assert all(a.at <= b.at for a, b in zip(turns, turns[1:]))
    assert {t.speaker for t in turns} == {"Lena"}
    ids = [t.id for t in turns if t.id in case.labels]
    assert ids == ["S1", "S2", "CHANGE"]  # in scenario order
    (q,) = case.conversation.questions
    assert q.evidence == ("CHANGE",) and q.text == scenario.question
    assert all(t.at < q.at for t in turns)
    by_id = {t.id: t for t in turns}
    # Each scenario turn sits in a session of its own, strictly between two host sessions.
    for tid in ids:
        t = by_id[tid]
        assert t.session.startswith("c1/scenario-")
        before = [h for h in turns if h.at < t.at and h.id not in case.labels]
        after = [h for h in turns if h.at > t.at and h.id not in case.labels]
        assert before and after and before[-1].session != after[0].session
    # The first host session was left out (first=1), and the statements are weeks apart.
    assert "D1:1" not in by_id and "D2:1" in by_id
    assert by_id["S2"].at - by_id["S1"].at >= timedelta(days=14)
    assert by_id["CHANGE"].at - by_id["S2"].at >= timedelta(days=21)


def test_stitching_into_a_short_host_raises() -> None:
    with pytest.raises(ScenarioError, match="sessions"):
        stitch(parse_scenario(_raw()), _host(sessions=5), "Lena", start=1, case_id="c")
    assert len(speaker_stream(_host(sessions=5), "Omar")) == 5


def test_stitch_all_is_deterministic_and_alternates_speakers() -> None:
    scenarios = [parse_scenario(_raw(id=f"s{i}")) for i in range(3)]
    hosts = [_host(), _host(sessions=16)]
    a, b = stitch_all(scenarios, hosts, seed=4), stitch_all(scenarios, hosts, seed=4)
    assert [c.conversation.turns for c in a] == [c.conversation.turns for c in b]
    assert [c.host for c in a] == ["h/Lena", "h/Lena", "h/Omar"]
    # A scenario lands at the same place whatever else is stitched with it.
    alone = stitch_all(scenarios[:1], hosts, seed=4)[0]
    assert alone.conversation.meta["start"] == a[0].conversation.meta["start"]


# -- measures -------------------------------------------------------------------------------


def test_context_measures() -> None:
    assert context_measures(["x", "CHANGE", "S1"], ["S1", "S2"], "CHANGE") == (True, False)
    assert context_measures(["x", "S2"], ["S1", "S2"], "CHANGE") == (False, True)
    assert context_measures(["x"], ["S1", "S2"], "CHANGE") == (False, False)


def test_leaf_stance_prefers_the_recorded_stance() -> None:
    assert leaf_stance({"stance": "Stopped", "polarity": 1}) == "stopped"
    assert leaf_stance({"stance": "neutral", "polarity": 1}) is None
    assert leaf_stance({"cessation": True, "polarity": -1}) == "stopped"
    assert leaf_stance({"polarity": -1}) == "negative"
    assert leaf_stance({}) is None
    assert stance_side("stopped") == stance_side("negative") == "-"
    assert stance_side("started") == stance_side("positive") == "+"
    assert stance_side("changed") == "~" and stance_side(None) is None


def _node(uid: str, nid: str, level: Level, obs: str | None = None, **attrs: Any) -> Node:
    prov = (Provenance(obs, 0, 0, T0, "s"),) if obs else ()
    return Node(nid, uid, level, "preference", f"text of {nid}", dict(attrs), T0, T0, 0.0, provenance=prov)


def _edge(src: str, dst: str, kind: EdgeKind = EdgeKind.SUPPORT) -> Edge:
    return Edge(src, dst, kind, 0.9 if kind is EdgeKind.SUPPORT else -0.9, 0.5, "test", T0)


def _graph(change_in_mid: bool, conflict: bool) -> MemoryGraph:
    g = MemoryGraph("u")
    g.add_node(_node("u", "old1", Level.LEAF, "u:S1", polarity=1))
    g.add_node(_node("u", "old2", Level.LEAF, "u:S2", polarity=1))
    g.add_node(_node("u", "new", Level.LEAF, "u:CHANGE", polarity=-1))
    g.add_node(_node("u", "host", Level.LEAF, "u:D1:1", polarity=-1))
    g.add_node(_node("u", "mid", Level.MID))
    g.add_node(_node("u", "root", Level.ROOT))
    for leaf in ("old1", "old2", "host") + (("new",) if change_in_mid else ()):
        g.add_edge(_edge(leaf, "mid"))
    g.add_edge(_edge("mid", "root"))
    if conflict:
        g.add_edge(_edge("new", "mid", EdgeKind.CONFLICT))
    return g


def test_graph_measures_find_mixing_and_conflicts() -> None:
    labels = {"u:S1": "old", "u:S2": "old", "u:CHANGE": "new"}
    mixed = graph_measures(_graph(change_in_mid=True, conflict=False), labels)
    assert mixed["mixed_stance"] and mixed["mixed_labels"] and not mixed["conflict"]
    assert mixed["pattern_formed"] and mixed["change_leaves"] == 1
    assert "text of mid" in mixed["mixed_patterns"]
    clean = graph_measures(_graph(change_in_mid=False, conflict=True), labels)
    # The host leaf's negative polarity is about another topic: it mixes nothing.
    assert not clean["mixed_stance"] and not clean["mixed_labels"]
    assert clean["conflict"] and clean["pattern_formed"]
    # A leaf the judge read as negative inside an all-old pattern mixes by stance only.
    g = _graph(change_in_mid=False, conflict=False)
    g.node("old2").attributes["stance"] = "stopped"
    only_stance = graph_measures(g, labels)
    assert only_stance["mixed_stance"] and not only_stance["mixed_labels"]


# -- a tiny end-to-end run whose answers are known ------------------------------------------


class _Words:
    """Counts words: budgets here need no model tokenizer, only a fixed, known cost."""

    def count(self, text: str) -> int:
        return len(text.split())


def _known_cases(sessions: int = 14) -> list[Any]:
    host = _host(sessions)
    change = "The taste of green tea makes me gag these days."
    # The question repeats the change's words: flat dense must put the change first.
    updating = parse_scenario(_raw(id="update", question=f"Lena said: {change}"))
    # The question repeats the first statement's words and the budget holds one turn:
    # flat dense must show that old statement alone.
    staling = parse_scenario(_raw(id="stale", split="heldout",
                                  question="Lena said: Green tea every afternoon keeps me going."))
    return [stitch(updating, host, "Lena", start=1, case_id="c-update"),
            stitch(staling, host, "Lena", start=1, case_id="c-stale")]


def test_measures_on_a_run_with_known_answers(hashing: Any) -> None:
    # 16 words hold one rendered turn: date, speaker and the sentence.
    result = run_faithfulness(_known_cases(), budgets=[16], paths=[], embedder=hashing, counter=_Words())
    by_case = {r.scenario: r for r in result.contexts}
    assert by_case["update"].update and not by_case["update"].stale
    assert by_case["stale"].stale and not by_case["stale"].update
    assert result.summary["dense"]["tune"]["update@16"] == 1.0
    assert result.summary["dense"]["heldout"]["stale@16"] == 1.0
    assert result.summary["dense"]["all"]["n"] == 2
    assert "| flat dense | tuning | 1 | 1.000 | 0.000 |" in format_faithfulness(result)


def test_the_tree_paths_record_the_graph(hashing: Any, tmp_path: Path) -> None:
    result = run_faithfulness(_known_cases(sessions=8)[:1], budgets=[200], paths=["live", "bulk"], dense=False,
                              embedder=hashing, counter=_Words())
    assert result.systems == ["personatree-live", "personatree-bulk"]
    assert [g.system for g in result.graphs] == result.systems
    assert all(g.change_leaves >= 1 for g in result.graphs)  # the change became evidence
    assert {r.system for r in result.contexts} == set(result.systems)
    saved = json.loads(result.save(tmp_path / "f.json").read_text())
    assert saved["format"] == "personatree.bench.faithfulness/1"
    assert saved["summary"]["personatree-bulk"]["tune"]["n"] == 1
    assert len(saved["graphs"]) == 2 and len(saved["contexts"]) == 2
    with pytest.raises(ValueError, match="unknown paths"):
        run_faithfulness([], paths=["weekly"], embedder=hashing)


def test_scenario_dataclasses_are_plain_values() -> None:
    s = Scenario("x", "tune", "diet", "bread", (Statement("a", "positive"),) * 2, Statement("b", "stopped"), "q")
    assert s == Scenario("x", "tune", "diet", "bread", (Statement("a", "positive"),) * 2, Statement("b", "stopped"),
                         "q")


def test_labelled_changes_answer_from_the_labels_only_among_the_statements_shown(embedder, registry) -> None:
    from datetime import datetime, timezone

    from personatree.types import Level, Node, Provenance
    from personatree_bench.labelled_changes import LabelledChanges

    at = datetime(2024, 1, 1, tzinfo=timezone.utc)

    def node(obs: str) -> Node:
        return Node(f"l-{obs}", "u", Level.LEAF, "event", obs, {}, at, at, 0.0,
                    provenance=(Provenance(obs, 0, 0, at, "s"),))

    judge = LabelledChanges({"c:9": frozenset({"c:1", "c:2"})}, embedder, registry)
    assert judge.judges_updates and judge.name == "offline+labelled-changes"
    got = judge.updates([(node("c:9"), [node("c:2"), node("c:5"), node("c:1")]), (node("c:5"), [node("c:1")])])
    assert got == [[0, 2], []]
