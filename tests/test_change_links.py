"""A change told in other words than what it ends, linked by a judge that reads changes.

"Passed my clay tools on to my niece and sold the wheel" ends a pottery habit, at
cosine 0.33 with the habit and with no word any rule reads as a change: recall's own
rules do not link it. With an LLM judge (a scripted model behind litellm's
``mock_response``: nothing leaves the process) the link is read at insertion, kept on
the leaf, and recall shows the change with the habit, live and after an import, and
after reopening the store.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from personatree import FixedClock, PersonaTree
from personatree.change_links import UPDATES, Statements, earlier_candidates, link_changes, stacked
from personatree.config import InsertionConfig, RecallConfig
from personatree.graph import MemoryGraph
from personatree.judge import LLMJudge, OfflineJudge
from personatree.retrieval.state import LevelArrays
from personatree.specific import common_direction, specific_similarity
from personatree.retrieval.updates import LeafFacts, judged_links, update_chains
from personatree.types import Level, Node, Provenance

from .conftest import T0
from .helpers import OWN_LIFE, PLEASANTRIES
from .test_llm_judge_fakes import ScriptedModel

MODEL = "openai/gpt-4o-mini"
HABIT = [
    "Tuesday evenings I throw bowls on the wheel at the community studio.",
    "Trimmed and glazed four new bowls at the studio tonight.",
    "The studio kiln finally fired my big serving platter.",
]
CHANGE = "Passed my clay tools on to my niece and sold the wheel."
QUESTION = "Would a ceramics workshop voucher make a good birthday gift for me?"


def _judge(embedder, registry, model: ScriptedModel, **kw) -> LLMJudge:
    return LLMJudge(kw.pop("spec", MODEL), embedder=embedder, registry=registry,
                    offline=OfflineJudge(embedder, registry), completion=model, sleep=lambda s: None,
                    timeout_s=0.05, **kw)


def _open(path, embedder, judge) -> PersonaTree:
    return PersonaTree.open(path, embedder=embedder, judge=judge, clock=FixedClock(T0 + timedelta(days=60)))


def _history() -> list[dict]:
    texts = HABIT + [CHANGE]
    return [{"messages": [{"role": "user", "content": t}, {"role": "assistant", "content": "Nice!"}],
             "at": T0 + timedelta(days=7 * i), "session_id": f"s{i}", "observation_id": f"o{i}"}
            for i, t in enumerate(texts)]


def _leaf_of(tree: PersonaTree, user: str, text: str) -> Node:
    return next(n for n in tree.graph(user).nodes(Level.LEAF) if n.content == text)


def _ingest(tree: PersonaTree, user: str, path: str) -> None:
    if path == "live":
        for item in _history():
            tree.observe(user, item["messages"], at=item["at"], session_id=item["session_id"],
                         observation_id=item["observation_id"])
            tree.consolidate(user)
    else:
        tree.observe_many(user, _history())
        tree.consolidate(user)


@pytest.mark.parametrize("path", ["live", "bulk"])
def test_a_judge_links_a_change_told_in_other_words_and_recall_shows_it(tmp_path, embedder, registry,
                                                                        path) -> None:
    model = ScriptedModel()
    tree = _open(tmp_path / "m.db", embedder, _judge(embedder, registry, model))
    try:
        _ingest(tree, "ana", path)
        change = _leaf_of(tree, "ana", CHANGE)
        wheel = _leaf_of(tree, "ana", HABIT[0])
        assert change.attributes[UPDATES] == [wheel.id]
        assert "update" in {c["op"] for c in model.calls}
        rec = tree.recall("ana", QUESTION, budget=300)
        shown = {i.node_id: i for i in rec.items}
        assert wheel.id in shown and change.id in shown
        assert shown[change.id].reason.split(": ", 1)[-1].startswith("a later statement that changes")
        assert CHANGE in rec.text
    finally:
        tree.close()
    # Read back in a new process's way: from the store (and its snapshot).
    again = _open(tmp_path / "m.db", embedder, _judge(embedder, registry, ScriptedModel()))
    try:
        assert _leaf_of(again, "ana", CHANGE).attributes[UPDATES] == [wheel.id]
        assert CHANGE in again.recall("ana", QUESTION, budget=300).text
        exported = {n["id"]: n for n in again.export("ana")["nodes"]}
        assert exported[change.id]["attributes"][UPDATES] == [wheel.id]
    finally:
        again.close()


def test_without_a_judge_that_reads_changes_nothing_is_linked(tmp_path, embedder, registry) -> None:
    # The same history with the update operation answered offline, and with the
    # offline judge: no link, no update request; recall's own rules do not link it.
    model = ScriptedModel()
    spec = {"extract": MODEL, "validate": MODEL, "update": "offline"}
    for judge in (_judge(embedder, registry, model, spec=spec), None):
        tree = PersonaTree.open(tmp_path / f"m{judge is None}.db", embedder=embedder, judge=judge,
                                clock=FixedClock(T0 + timedelta(days=60)))
        try:
            _ingest(tree, "ana", "bulk")
            assert UPDATES not in _leaf_of(tree, "ana", CHANGE).attributes
            rec = tree.recall("ana", QUESTION, budget=300)
            assert not any("a later statement that changes" in i.reason for i in rec.items)
        finally:
            tree.close()
    assert "update" not in {c["op"] for c in model.calls}


def test_a_failed_update_request_links_nothing_and_is_recorded(tmp_path, embedder, registry) -> None:
    model = ScriptedModel(failures={"update": ["invalid"] * 3})
    judge = _judge(embedder, registry, model)
    tree = _open(tmp_path / "m.db", embedder, judge)
    try:
        _ingest(tree, "ana", "bulk")
        assert UPDATES not in _leaf_of(tree, "ana", CHANGE).attributes
        assert judge.stats().fallbacks.get("update", 0) >= 1
        assert len(tree.nodes("ana", "leaf")) == 4  # nothing else is lost
    finally:
        tree.close()


def test_answers_out_of_range_are_dropped(embedder, registry) -> None:
    model = ScriptedModel(failures={"update": ['{"links": [{"group": 0, "changes": [7, 0, 0]}, '
                                               '{"group": 5, "changes": [0]}]}']})
    judge = _judge(embedder, registry, model)
    vecs = embedder.embed([HABIT[0], CHANGE])
    early, late = (Node(f"l{i}", "u", Level.LEAF, "event", t, {}, T0 + timedelta(days=i), T0 + timedelta(days=i),
                        0.0, embedding=v, provenance=(Provenance(f"o{i}", 0, 0, T0 + timedelta(days=i), f"s{i}"),))
                   for i, (t, v) in enumerate(zip([HABIT[0], CHANGE], vecs)))
    assert judge.updates([(late, [early])]) == [[0]]
    assert judge.updates([(late, [])]) == [[]]


# -- the pure parts ---------------------------------------------------------------------------


def _node(i: int, vec: np.ndarray, day: int, session: str, speaker: str | None = None) -> Node:
    at = T0 + timedelta(days=day)
    return Node(f"l{i}", "u", Level.LEAF, "event", f"s{i}", {"speaker": speaker} if speaker else {}, at, at, 0.0,
                embedding=vec, provenance=(Provenance(f"o{i}", 0, 0, at, session),))


def test_earlier_candidates_are_said_before_in_another_session_by_the_same_speaker() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=8)
    vecs = [(base + rng.normal(scale=0.5, size=8)) for _ in range(8)]
    vecs = [(v / np.linalg.norm(v)).astype(np.float32) for v in vecs]
    nodes = [
        _node(0, vecs[0], 1, "a"), _node(1, vecs[1], 2, "b"), _node(2, vecs[2], 3, "c", "Bo"),
        _node(3, vecs[3], 9, "d"),  # said after the new one
        _node(4, vecs[4], 5, "e"),  # the new one's session
        _node(5, -vecs[5], 4, "f"),  # far in meaning
    ]
    leaf = _node(6, vecs[6], 5, "e")
    rows = Statements.of(nodes + [leaf])
    cos = np.stack([n.embedding for n in nodes + [leaf]]) @ leaf.embedding
    got = earlier_candidates(rows, leaf, cos, len(nodes), InsertionConfig(update_floor=0.0))
    sims = {n.id: float(n.embedding @ leaf.embedding) for n in nodes[:2]}
    assert [n.id for n in got] == sorted(sims, key=lambda x: -sims[x])
    assert earlier_candidates(rows, leaf, cos, len(nodes),
                              InsertionConfig(update_floor=0.0, update_candidates=1)) == got[:1]
    # Only the rows before it may be shown.
    assert earlier_candidates(rows, leaf, cos, 1, InsertionConfig(update_floor=0.0)) == [nodes[0]]
    assert earlier_candidates(rows, leaf, cos, 0, InsertionConfig(update_floor=0.0)) == []


def test_a_judged_link_is_followed_whatever_the_cosine() -> None:
    # Two orthogonal statements: no rule of recall links them, the judge's reading does.
    e = np.eye(4, dtype=np.float32)
    old, new = _node(0, e[0], 1, "a"), _node(1, e[1], 20, "b")
    arr = LevelArrays(["l0", "l1"], np.stack([e[0], e[1]]), {"l0": 0, "l1": 1})
    gone = np.zeros(2, bool)
    facts = LeafFacts(np.array([1.0, 20.0]), np.zeros(2, np.int8), np.zeros(2, bool), gone, np.array([0, 1]),
                      judged_links(arr, {new.id: (old.id,)}, gone))
    assert update_chains(arr, facts, ["l0"], RecallConfig()) == {"l1": ["l0"]}
    # A link to a statement said later (a judge's mistake) is not followed.
    facts = LeafFacts(np.array([30.0, 20.0]), np.zeros(2, np.int8), np.zeros(2, bool), gone, np.array([0, 1]),
                      judged_links(arr, {new.id: (old.id,)}, gone))
    assert update_chains(arr, facts, ["l0"], RecallConfig()) == {}


def test_specific_similarity_is_the_cosine_of_the_centred_vectors() -> None:
    rng = np.random.default_rng(1)
    rows = rng.normal(loc=0.6, size=(30, 8))
    new = rng.normal(loc=0.6, size=(4, 8))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    mean = common_direction([rows, new])
    got = specific_similarity(rows @ new.T, rows, new, mean)
    rc, nc = rows - mean, new - mean
    want = (rc @ nc.T) / (np.linalg.norm(rc, axis=1)[:, None] * np.linalg.norm(nc, axis=1)[None, :])
    np.testing.assert_allclose(got, want, atol=1e-4)
    # All the rows lean one way: taking that out spreads their similarities apart.
    assert np.ptp(got) > np.ptp(rows @ new.T)
    # A vector that is all common direction has none of its own left: 0, not a NaN.
    m = np.array([1.0, 0.0, 0.0, 0.0])
    one = np.array([[0.0, 0.0, 1.0, 0.0]])
    assert specific_similarity(np.array([[0.0]]), m[None, :], one, m)[0, 0] == 0.0


def test_common_direction_is_shrunk_when_the_statements_are_few() -> None:
    e = np.eye(3)
    assert np.allclose(common_direction([e[:1], e[:1]]), e[0] * 2 / 34)
    many = np.tile(e[1], (3200, 1)).astype(np.float32)
    assert np.allclose(common_direction([many, e[1:2]]), e[1] * 3201 / 3233)


class _Shown:
    """A judge that reads changes, links nothing and keeps what it was shown."""

    judges_updates = True

    def __init__(self) -> None:
        self.shown: list[list[str]] = []

    def updates(self, groups):  # noqa: ANN001, ANN201
        self.shown.extend([n.content for n in earlier] for _, earlier in groups)
        return [[] for _ in groups]


SMALL_TALK = PLEASANTRIES + OWN_LIFE[:3]
POTTERY = OWN_LIFE[3]
GAVE_UP = "Passed my apron and tools to a friend and cancelled the membership."


@pytest.mark.parametrize("specific", [True, False])
def test_the_habit_a_change_ends_is_shown_ahead_of_small_talk(embedder, specific) -> None:
    texts = SMALL_TALK + [POTTERY, GAVE_UP]
    leaves = [_node(i, v, i, f"s{i}") for i, v in enumerate(embedder.embed(texts))]
    for leaf, text in zip(leaves, texts):
        leaf.content = text
    judge = _Shown()
    link_changes(MemoryGraph("u"), leaves, judge, InsertionConfig(update_candidates=4, update_specific=specific))
    shown = judge.shown[-1]
    # By plain cosine the pleasantries come first; with what they share taken out,
    # the pottery habit is among the four shown.
    assert (POTTERY in shown) is specific
    assert len(shown) == 4


def test_link_changes_links_within_one_call_and_leaves_the_graph_alone(embedder, registry) -> None:
    judge = _judge(embedder, registry, ScriptedModel())
    vecs = embedder.embed(HABIT + [CHANGE])
    leaves = [_node(i, v, 7 * i, f"s{i}") for i, v in enumerate(vecs)]
    for leaf, text in zip(leaves, HABIT + [CHANGE]):
        leaf.content = text
    g = MemoryGraph("u")
    assert link_changes(g, leaves, judge, InsertionConfig()) == 1
    assert leaves[3].attributes[UPDATES] == ["l0"]
    assert len(g) == 0
    assert link_changes(g, leaves, OfflineJudge(embedder, registry), InsertionConfig()) == 0
    # Archived statements are shown like the tree's; one embedded at another width is not.
    del leaves[3].attributes[UPDATES]
    odd = _node(9, np.ones(3, np.float32) / np.sqrt(3), 1, "s9")
    odd.content = "Sold the wheel I used to throw on."
    archived = stacked([odd, *leaves[:3]], embedder.dim)
    assert [n.id for n in archived[0].nodes] == ["l0", "l1", "l2"]
    assert link_changes(g, leaves[3:], judge, InsertionConfig(), archived=archived) == 1
    assert leaves[3].attributes[UPDATES] == ["l0"]


def test_the_update_schema_allows_only_the_ids_shown(embedder, registry) -> None:
    import jsonschema

    from personatree.judge.jobs import update_job
    from personatree.judge.parsing import UpdateAnswer
    from personatree.judge.prompts import load_prompt
    from personatree.judge.wire import update_schema

    schema = update_schema([2, 3])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"links": [{"group": 0, "changes": [1]}, {"group": 1, "changes": []}]}, schema)
    for bad in ({"links": [{"group": 0, "changes": [2]}]}, {"links": [{"group": 2, "changes": []}]}, {"links": []}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    vecs = embedder.embed(HABIT[:2] + [CHANGE])
    nodes = [_node(i, v, 7 * i, f"s{i}") for i, v in enumerate(vecs)]
    job = update_job(load_prompt("update"), [(nodes[2], nodes[:2])], [0])
    assert "<data>" in job.messages[1]["content"] and "You read what one person said" in job.messages[0]["content"]
    assert job.check(UpdateAnswer.model_validate({"links": [{"group": 0, "changes": [1, 1, 5]}]})) == {0: [1]}


# -- links that outlive the tree's bounds ---------------------------------------------------------


def _archiving_tree(path, embedder, registry, model: ScriptedModel) -> PersonaTree:
    # A year-long orphan bound cut to a day: the four statements form no pattern, and a
    # pass after a later, unrelated session moves them all to the archive.
    from personatree.config import ConsolidationConfig, PersonaTreeConfig

    config = PersonaTreeConfig(consolidation=ConsolidationConfig(t_orphan_days=1.0))
    return PersonaTree.open(path, config=config, embedder=embedder,
                            judge=_judge(embedder, registry, model), clock=FixedClock(T0 + timedelta(days=90)))


@pytest.mark.parametrize("reopen", [False, True])
def test_a_link_is_followed_after_both_statements_are_archived(tmp_path, embedder, registry, reopen,
                                                               monkeypatch) -> None:
    from tests.test_retrieval_snapshot import _refusing

    tree = _archiving_tree(tmp_path / "m.db", embedder, registry, ScriptedModel())
    try:
        tree.observe_many("ana", _history())
        change = _leaf_of(tree, "ana", CHANGE)
        wheel = _leaf_of(tree, "ana", HABIT[0])
        assert change.attributes[UPDATES] == [wheel.id]
        tree.consolidate("ana")
        later = T0 + timedelta(days=80)
        tree.observe("ana", [{"role": "user", "content": "Borrowed a thick detective novel from the library."}],
                     at=later, session_id="s-late", observation_id="o-late")
        tree.consolidate("ana", now=later)
        tree.consolidate("ana", now=later)
        archived = set(tree.store.archive_ids("ana"))
        assert {change.id, wheel.id} <= archived
        tree.recall("ana", QUESTION, budget=300)  # the retrieval state, and its snapshot, built
        if reopen:
            # A new process reads the state back from its snapshot (the archive
            # unread): the links of archived leaves come with it.
            tree.close()
            tree = _archiving_tree(tmp_path / "m.db", embedder, registry, ScriptedModel())
            with _refusing(monkeypatch):
                rec = tree.recall("ana", QUESTION, budget=300)
        else:
            rec = tree.recall("ana", QUESTION, budget=300)
        shown = {i.node_id: i for i in rec.items}
        assert wheel.id in shown and change.id in shown
        assert shown[change.id].reason.split(": ", 1)[-1].startswith("a later statement that changes")
    finally:
        tree.close()


def test_a_change_is_linked_to_a_habit_the_tree_already_archived(tmp_path, embedder, registry) -> None:
    # The habit is told (once: no pattern holds it), leaves the tree (archived), and
    # only then ended: the judge is shown the archived statements as the tree's.
    model = ScriptedModel()
    tree = _archiving_tree(tmp_path / "m.db", embedder, registry, model)
    try:
        history = _history()
        tree.observe_many("ana", history[:1])
        wheel = _leaf_of(tree, "ana", HABIT[0])
        tree.consolidate("ana")
        quiet = T0 + timedelta(days=40)
        tree.observe("ana", [{"role": "user", "content": "Borrowed a thick detective novel from the library."}],
                     at=quiet, session_id="s-late", observation_id="o-late")
        tree.consolidate("ana", now=quiet)
        tree.consolidate("ana", now=quiet)
        assert wheel.id in set(tree.store.archive_ids("ana"))
        end = T0 + timedelta(days=50)
        tree.observe("ana", history[3]["messages"], at=end, session_id="s-end", observation_id="o-end")
        change = _leaf_of(tree, "ana", CHANGE)
        assert change.attributes[UPDATES] == [wheel.id]
        rec = tree.recall("ana", QUESTION, budget=300)
        shown = {i.node_id: i for i in rec.items}
        assert wheel.id in shown and change.id in shown
        assert shown[change.id].reason.split(": ", 1)[-1].startswith("a later statement that changes")
    finally:
        tree.close()
