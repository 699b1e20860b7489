"""The flat baselines and the shared instruments, with the hashing embedder (no model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import numpy as np
import pytest

from personatree_bench.resources import CachedEmbedder, CachedTokenCounter
from personatree_bench.systems import (
    DenseSystem,
    FlatIndex,
    FusionSystem,
    RecencySystem,
    build_systems,
    interaction,
    item_node_ids,
    render_turn,
)
from personatree_bench.types import Conversation, Turn
from personatree.embedders import HashingEmbedder
from personatree.retrieval.tokens import WordCounter

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)
TEXTS = [
    ("Ana", "I adopted a puppy called Miso last weekend."),
    ("Ben", "I have been learning to play the cello."),
    ("Ana", "Work has been busy, lots of meetings this week."),
    ("Ben", "My cello teacher says I am improving quickly."),
    ("Ana", "We went hiking in the Alps in July."),
    ("Ben", "The weather was terrible yesterday."),
]


def turns() -> list[Turn]:
    return [Turn(f"D{1 + i // 3}:{i % 3 + 1}", who, text, T0 + timedelta(days=i // 3, minutes=i),
                 f"c/session_{1 + i // 3}") for i, (who, text) in enumerate(TEXTS)]


@pytest.fixture()
def index() -> FlatIndex:
    return FlatIndex(HashingEmbedder(512), CachedTokenCounter(WordCounter()))


def test_dense_ranks_the_matching_turn_first(index: FlatIndex) -> None:
    dense = DenseSystem(index)
    dense.ingest("c", turns())
    assert dense.ranked("c", "What is the name of Ana's puppy Miso?", None, 1) == ["D1:1"]
    ctx = dense.retrieve("c", "Who plays the cello?", None, 40)
    assert ctx.tokens <= 40 and ctx.turn_ids[0] in {"D1:2", "D2:1"}
    assert ctx.text.splitlines()[0] == render_turn(next(t for t in turns() if t.id == ctx.turn_ids[0]))


def test_fusion_uses_lexical_matches(index: FlatIndex) -> None:
    fusion = FusionSystem(index)
    fusion.ingest("c", turns())
    top = fusion.ranked("c", "hiking Alps", None, 2)
    assert top[0] == "D2:2"
    # BM25 only lists turns that share a word with the query
    assert set(index.bm25_order("c", "cello")) == {"D1:2", "D2:1"}


def test_recency_takes_the_latest_turns_that_fit(index: FlatIndex) -> None:
    rec = RecencySystem(index)
    rec.ingest("c", turns())
    ctx = rec.retrieve("c", "anything", None, 30)
    assert ctx.turn_ids[-1] == "D2:3"  # rendered oldest first, ending with the latest
    assert list(ctx.turn_ids) == [t.id for t in turns()][-len(ctx.turn_ids):]
    assert ctx.tokens <= 30
    assert rec.ranked("c", "x", None, 2) == ["D2:3", "D2:2"]
    early = rec.retrieve("c", "x", turns()[2].at, 1000)
    assert early.turn_ids == ("D1:1", "D1:2", "D1:3")  # nothing after the question time


@pytest.mark.parametrize("budget", [0, 1, 7, 25, 60, 10_000])
def test_no_baseline_exceeds_its_budget(index: FlatIndex, budget: int) -> None:
    for system in (DenseSystem(index), FusionSystem(index), RecencySystem(index)):
        system.ingest("c", turns())
        ctx = system.retrieve("c", "cello puppy hiking", None, budget)
        assert ctx.tokens <= budget
        assert WordCounter().count(ctx.text) <= budget or budget == 10_000


def test_checkpoints_and_drop(index: FlatIndex) -> None:
    dense, rec = DenseSystem(index), RecencySystem(index)
    dense.ingest("c", turns())
    pts = dense.checkpoints("c")
    assert [n for n, _ in pts] == [3, 6] and pts[1][1] > pts[0][1] > 0
    assert rec.checkpoints("c") == [(3, 0), (6, 0)]
    dense.drop("c")
    with pytest.raises(KeyError):
        index.get("c")


def test_interaction_shape() -> None:
    t = turns()[0]
    item = interaction("conv-1", t)
    assert item == {
        "messages": [{"role": "user", "content": t.text, "name": "Ana"}],
        "at": t.at, "session_id": "c/session_1", "observation_id": "conv-1:D1:1",
        "metadata": {"turn_id": "D1:1"},
    }
    a = Turn("d0:1", "assistant", "Here is the code.", T0, "s", "assistant")
    assert interaction("x", a)["messages"] == [{"role": "assistant", "content": "Here is the code."}]


def test_item_node_ids_accepts_several_shapes() -> None:
    assert item_node_ids(SimpleNamespace(node_id="n1")) == ["n1"]
    assert item_node_ids(SimpleNamespace(node_ids=("a", "b"))) == ["a", "b"]
    assert item_node_ids(SimpleNamespace(nodes=[SimpleNamespace(id="m")])) == ["m"]


def test_cached_embedder_matches_the_base() -> None:
    base = HashingEmbedder(64)
    cached = CachedEmbedder(base)
    texts = ["a b", "c d", "a b"]
    assert np.allclose(cached.embed(texts), base.embed(texts))
    assert np.allclose(cached.embed(["c d"]), base.embed(["c d"]))
    assert cached.embed([]).shape == (0, 64)
    assert cached.name == base.name and cached.dim == 64


def test_cached_counter() -> None:
    c = CachedTokenCounter(WordCounter())
    assert c.count("one two three") == WordCounter().count("one two three")
    assert c.count("") == 0


def test_build_systems_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown systems"):
        build_systems(["dense", "magic"], HashingEmbedder(8), WordCounter())
    built = build_systems(["dense", "dense+bm25", "recency"], HashingEmbedder(8), WordCounter())
    assert [s.name for s in built] == ["dense", "dense+bm25", "recency"]
    assert built[0].index is built[1].index  # one shared index, embedded once


def test_conversation_sessions_split_on_change() -> None:
    conv = Conversation("c", tuple(turns()))
    assert [(s, len(ts)) for s, ts in conv.sessions()] == [("c/session_1", 3), ("c/session_2", 3)]
