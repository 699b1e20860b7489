"""Tiered recall and the profile through a real PersonaTree (the tree is never changed)."""

from __future__ import annotations

import pytest

from personatree.api import PersonaTree
from personatree.errors import InputError, UnknownUserError
from personatree.retrieval import Recall
from personatree.retrieval.access import access_log
from personatree.tiering import Profile, TieringConfig, profile_user, tiered_recall, tiers_of

TALK = [
    ("2024-03-02T10:00:00", "s1", "I went hiking with my sister Anna at Mount Tam."),
    ("2024-03-09T10:00:00", "s2", "My dog Max is a golden retriever and he loves the beach."),
    ("2024-03-16T10:00:00", "s3", "I ran the Berlin marathon in 3 hours 41 minutes!"),
    ("2024-03-23T10:00:00", "s4", "Crowded trains make me anxious, so I cycle to work."),
    ("2024-03-30T10:00:00", "s5", "I'm allergic to peanuts, so I always check labels."),
]
CFG = TieringConfig(S=1, K=1, H=1, top_roots=1, sufficient_fill=0.0, sufficient_cosine=0.5)


@pytest.fixture()
def tree(tmp_path, embedder):
    t = PersonaTree.open(tmp_path / "m.db", embedder=embedder)
    t.observe_many("sam", [{"messages": text, "at": at, "session_id": s} for at, s, text in TALK])
    yield t
    t.close()


def test_tiered_recall_answers_like_recall_and_changes_nothing(tree) -> None:
    before = tree.graph("sam")
    out = tiered_recall(tree, "sam", "What is my dog's name?", budget=80, config=CFG)
    assert isinstance(out.recall, Recall) and out.recall.tokens <= 80
    assert "Max" in out.recall.text and out.tier in (1, 2, 3)
    recent = tiered_recall(tree, "sam", "Do I have any food allergies?", budget=80, config=CFG)
    assert recent.tier == 1 and "peanuts" in recent.recall.text  # last session is tier 1
    assert tree.graph("sam").same_as(before)
    assert access_log(tree, 32).pending("sam")  # accesses are recorded like plain recall
    with pytest.raises(InputError):
        tiered_recall(tree, "sam", "x", budget=0)
    with pytest.raises(UnknownUserError):
        tiered_recall(tree, "nobody", "hello")


def test_tier_state_follows_the_version(tree) -> None:
    with tree._lock:
        a = tiers_of(tree, "sam", config=CFG)
        assert tiers_of(tree, "sam", config=CFG) is a
    tree.observe("sam", "My mom lives in Lisbon now.", at="2024-04-02T10:00:00", session_id="s6")
    with tree._lock:
        b = tiers_of(tree, "sam", config=CFG)
    assert b.version != (None,) and any("Lisbon" in tree.node("sam", x).content for x in b.recent)


def test_profile_user(tree) -> None:
    p = profile_user(tree, "sam", budget=60, config=CFG)
    assert isinstance(p, Profile) and p.tokens <= 60
    assert "peanuts" in p.text and p.items
