"""A claim line takes budget only when it is worth more per token than the evidence it
displaces, as far as the question asks for evidence.

Pure parts (the evidence rate, the packer's claim price) and recalls over a tree built
directly, with the real packaged embedder and the real tokenizer.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from personatree.config import RecallConfig
from personatree.graph import MemoryGraph
from personatree.retrieval.engine import recall_state
from personatree.retrieval.margin import evidence_rate
from personatree.retrieval.packing import Option, pack
from personatree.retrieval.state import RetrievalState
from personatree.retrieval.tokens import shared_counter
from personatree.types import Edge, EdgeKind, Level, Node, Provenance, Route

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=120)

RUNS = [
    "I ran the Berlin marathon in 3:41 last weekend.",
    "Running every morning clears my head before work.",
    "I bought new trail shoes for my morning runs.",
    "My knee felt fine on the long run along the river.",
    "I joined a running club that meets on Thursdays.",
    "I ran ten kilometres in the rain this morning.",
    "My sister ran the half marathon with me in May.",
    "I keep a log of every run in a spreadsheet.",
]
PATTERN = "Runs most mornings and races marathons (8 mentions, Jan–Apr 2024)"
CLAIM = "Is an active, outdoorsy person who loves running"


def test_evidence_rate_is_the_value_per_token_of_the_last_line_that_fits() -> None:
    assert evidence_rate([(0.9, 10, ()), (0.5, 10, ()), (0.2, 10, ())], 20) == pytest.approx(0.05)
    # a line too long for what is left is skipped, a shorter one after it still fits
    assert evidence_rate([(0.9, 10, ()), (0.6, 30, ()), (0.3, 5, ())], 20) == pytest.approx(0.06)
    # a header is paid by the first line under it, and counts in that line's rate
    dated = [(0.9, 10, ("d1",)), (0.6, 10, ("d2",)), (0.3, 10, ("d2",))]
    assert evidence_rate(dated, 35, {"d1": 5, "d2": 5}) == pytest.approx(0.04)
    # evidence that leaves room to spare displaces nothing
    assert evidence_rate([(0.9, 10, ()), (0.5, 10, ())], 100) == 0.0
    assert evidence_rate([], 100) == 0.0
    assert evidence_rate([(0.9, 50, ())], 20) == 0.0


def _options() -> dict[str, Option]:
    leaves = {f"l{i}": Option(f"l{i}", 0, 0.5 - 0.05 * i, 0.5 - 0.05 * i, 10) for i in range(5)}
    return {"m": Option("m", 1, 0.7, 0.7, 30), **leaves}


def test_a_claim_priced_at_the_evidence_rate_leaves_the_evidence_its_room() -> None:
    # At λ alone the claim (0.7 for 30 tokens) beats every leaf and takes most of the
    # budget; three leaves (1.35 for the same 30 tokens) are worth more.
    cheap = pack(_options(), {}, 40)
    assert "m" in cheap.node_ids
    rate = evidence_rate([(o.value, o.tokens, ()) for o in _options().values() if o.rank == 0], 40)
    priced = pack(_options(), {}, 40, claim_rate=rate)
    assert priced.node_ids == ["l0", "l1", "l2", "l3"]
    # with room to spare nothing is displaced: the claim comes too
    roomy = pack(_options(), {}, 200, claim_rate=evidence_rate([(0.5, 10, ())] * 5, 200))
    assert "m" in roomy.node_ids


@pytest.fixture(scope="module")
def vectors(embedder) -> dict:
    texts = RUNS + [PATTERN, CLAIM]
    return dict(zip(texts, embedder.embed(texts)))


@pytest.fixture(scope="module")
def counter():
    return shared_counter("gpt-4o-mini")


def _tree(vectors: dict) -> MemoryGraph:
    g = MemoryGraph("u")
    g.add_node(
        Node("r0", "u", Level.ROOT, "personality", CLAIM, {}, T0, T0 + timedelta(days=90), 2.0,
             n_support=2, embedding=vectors[CLAIM])
    )
    g.add_node(
        Node("m0", "u", Level.MID, "routine", PATTERN, {}, T0, T0 + timedelta(days=90), 2.0,
             n_support=8, embedding=vectors[PATTERN])
    )
    g.add_edge(Edge("m0", "r0", EdgeKind.SUPPORT, 0.8, 0.5, "", T0))
    for i, text in enumerate(RUNS):
        at = T0 + timedelta(days=12 * i)
        g.add_node(
            Node(f"l{i}", "u", Level.LEAF, "event", text, {}, at, at, 0.4, embedding=vectors[text],
                 provenance=(Provenance(f"o{i}", 0, 0, at, "s"),))
        )
        g.add_edge(Edge(f"l{i}", "m0", EdgeKind.SUPPORT, 0.8, 0.5, "", at))
    return g


def _recall(state, query, qvec, route, counter, budget, levels=None):
    return recall_state(state, query, qvec, route, registry=None, counter=counter, budget=budget,
                        now=NOW, cfg=RecallConfig(), levels=levels)


def _shown_leaves(rec) -> set[str]:
    return {i.node_id for i in rec.items if i.level is Level.LEAF}


@pytest.mark.parametrize("budget", [60, 90, 120])
def test_an_evidence_question_shows_the_evidence_leaves_only_would(vectors, counter, embedder, budget) -> None:
    # A question about one episode that the router reads as half about a pattern:
    # the pattern line would push out evidence worth more than it, so the full tree
    # shows the evidence that recall without claims shows.
    g = _tree(vectors)
    state = RetrievalState(g).refresh(g, 1)
    q = "When did I run the Berlin marathon and how long did it take?"
    qvec = embedder.embed([q])[0]
    route = Route(Level.MID, {Level.LEAF: 0.45, Level.MID: 0.55, Level.ROOT: 0.0})
    full = _recall(state, q, qvec, route, counter, budget)
    leaves = _recall(state, q, qvec, route, counter, budget, (Level.LEAF,))
    assert full.tokens <= budget
    assert _shown_leaves(full) >= _shown_leaves(leaves)
    assert all(i.level is Level.LEAF for i in full.items)


def test_a_question_about_the_person_still_gets_the_claim_first(vectors, counter, embedder) -> None:
    g = _tree(vectors)
    state = RetrievalState(g).refresh(g, 1)
    q = "What kind of person am I?"
    qvec = embedder.embed([q])[0]
    route = Route(Level.ROOT, {Level.LEAF: 0.01, Level.MID: 0.02, Level.ROOT: 0.97})
    rec = _recall(state, q, qvec, route, counter, 60)
    assert rec.items[0].node_id == "r0"
