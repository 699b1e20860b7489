"""Recall through the public API: budget, levels, caching, access bumps, the CLI command."""

from __future__ import annotations

import json

import pytest

from personatree.api import PersonaTree
from personatree.errors import InputError, QueryError, UnknownUserError
from personatree.retrieval import Recall, recall_user
from personatree.retrieval.access import access_log
from personatree.types import Level

TALK = [
    (
        "2024-03-02T10:00:00",
        "I went hiking with my sister Anna at Mount Tam. The view of the bay was stunning.",
    ),
    ("2024-03-09T10:00:00", "My dog Max is a golden retriever and he loves the beach."),
    ("2024-03-16T10:00:00", "I ran the Berlin marathon in 3 hours 41 minutes!"),
    ("2024-03-23T10:00:00", "Crowded trains make me anxious, so I cycle to work."),
    ("2024-03-30T10:00:00", "I'm allergic to peanuts, so I always check labels."),
]


@pytest.fixture()
def tree(tmp_path, embedder):
    t = PersonaTree.open(tmp_path / "m.db", embedder=embedder)
    t.observe_many("sam", [{"messages": text, "at": at} for at, text in TALK])
    yield t
    t.close()


def test_recall_returns_budgeted_context(tree) -> None:
    rec = tree.recall("sam", "What is my dog's name?", budget=60)
    assert isinstance(rec, Recall)
    assert rec.tokens <= 60 and rec.budget == 60
    assert "Max" in rec.text
    assert rec.route.level is Level.LEAF
    assert all(s[0].startswith("obs") or s[0] for s in rec.sources)
    assert json.loads(json.dumps(rec.to_dict()))["tokens"] == rec.tokens


def test_levels_restrict_and_budget_validates(tree) -> None:
    rec = tree.recall("sam", "What kind of person am I?", budget=200, levels=["leaf"])
    assert rec.items and all(i.level is Level.LEAF for i in rec.items)
    with pytest.raises(InputError):
        tree.recall("sam", "anything", budget=0)
    with pytest.raises(QueryError):
        tree.recall("sam", "   ")
    with pytest.raises(UnknownUserError):
        tree.recall("nobody", "hello")


def test_cache_follows_writes(tree) -> None:
    assert "Lisbon" not in tree.recall("sam", "Where does my mom live?", budget=200).text
    tree.observe("sam", "My mom lives in Lisbon now.", at="2024-04-02T10:00:00")
    assert "Lisbon" in tree.recall("sam", "Where does my mom live?", budget=200).text


def test_access_is_written_behind_and_flushed_on_close(tmp_path, embedder) -> None:
    path = tmp_path / "a.db"
    t = PersonaTree.open(path, embedder=embedder)
    t.observe_many("sam", [{"messages": text, "at": at} for at, text in TALK])
    version = t.store.version("sam")
    rec = recall_user(t, "sam", "Berlin marathon time", budget=80)
    used = rec.node_ids[0]
    assert access_log(t, 32).pending("sam")[used] == 1
    assert t.store.version("sam") == version, "a recall must not write synchronously"
    assert t.node("sam", used).recall_count == 0
    t.close()
    t2 = PersonaTree.open(path, embedder=embedder)
    try:
        n = t2.node("sam", used)
        assert n.recall_count == 1 and n.t_access is not None
    finally:
        t2.close()


def test_access_flushes_every_n_recalls(tree) -> None:
    log = access_log(tree, 32)
    log.every = 3
    for _ in range(3):
        rec = tree.recall("sam", "Berlin marathon time", budget=80)
    assert log.pending("sam") == {}
    assert tree.node("sam", rec.node_ids[0]).recall_count == 3


def test_cli_recall_json(tmp_path, embedder) -> None:
    from typer.testing import CliRunner

    from personatree.cli import app

    path = tmp_path / "c.db"
    t = PersonaTree.open(path, embedder=embedder)
    t.observe_many("sam", [{"messages": text, "at": at} for at, text in TALK])
    t.close()
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "recall",
            "sam",
            "What is my dog's name?",
            "--budget",
            "50",
            "--json",
            "--store",
            str(path),
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["tokens"] <= 50 and "Max" in data["text"]
    res = runner.invoke(app, ["recall", "sam", "What is my dog's name?", "--store", str(path)])
    assert res.exit_code == 0 and "route: leaf" in res.output


def test_advice_queries_reach_stated_constraints_that_share_no_words(tmp_path, embedder) -> None:
    """A request for advice brings back the user's standing constraint from among
    unrelated chatter, at a budget of a few lines (the disposition retriever)."""
    from personatree.config import PersonaTreeConfig, RecallConfig

    chatter = [
        "Our team shipped the billing dashboard for the hospital client last sprint.",
        "The cathedral roof took forty years to restore after the fire.",
        "The warehouse ships parcels to four countries every Tuesday.",
        "The ticket office moved to the second floor of the station.",
        "The quarterly report shows revenue up in every region except the north.",
        "The old lighthouse was turned into a small maritime museum.",
        "The new bakery chain opened twelve stores across the city this spring.",
        "Coffee prices rose sharply after the drought in Brazil.",
        "The conference in Chicago drew four thousand attendees.",
        "Our landlord repainted the hallway a pale shade of green.",
        "The museum cafe is closed on Mondays for cleaning.",
        "The train to the airport now leaves every ten minutes.",
    ]
    turns = [{"messages": text, "at": f"2024-04-{1 + i % 28:02d}T10:00:00"} for i, text in enumerate(chatter)]
    turns.insert(7, {"messages": "I keep to a strict nut-free and egg-free diet because of severe allergies.",
                     "at": "2024-03-01T10:00:00"})
    query = "Can you suggest a few bakeries or brunch spots in Chicago I should try this weekend?"
    off = PersonaTreeConfig(recall=RecallConfig(disposition_weight=0.0, disposition_boost=1.0))
    shown = {}
    for name, cfg in (("on", PersonaTreeConfig()), ("off", off)):
        with PersonaTree.open(tmp_path / f"{name}.db", cfg, embedder=embedder) as t:
            t.observe_many("sam", turns)
            rec = t.recall("sam", query, budget=60)
            assert rec.tokens <= 60
            shown[name] = "nut-free" in rec.text
    assert shown["on"], "the stated diet should reach a 60-token context for a food recommendation"
    assert not shown["off"], "without the disposition retriever the diet loses to chatter (the test's premise)"
