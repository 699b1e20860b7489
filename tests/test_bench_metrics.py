"""Pure metric and packing functions of the benchmark harness."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from personatree_bench.metrics import (
    QueryRecord,
    aggregate,
    evidence_recall,
    growth_per_100_turns,
    hit,
    percentile,
    summarize,
)
from personatree_bench.packing import lexical_tokens, pack_best_first, pack_recent, rrf


def rec(system: str = "s", gold: tuple[str, ...] = ("a",), shown: tuple[str, ...] = (), *, cat: str = "1",
        adv: bool = False, mode: str = "budget", value: int = 500, tokens: int = 10, seconds: float = 0.01,
        qid: str = "q") -> QueryRecord:
    return QueryRecord(system, "c", qid, cat, adv, mode, value, gold, shown, tokens, seconds)


def test_evidence_recall_and_hit() -> None:
    assert evidence_recall(["a", "b"], ["b", "c"]) == 0.5
    assert evidence_recall(["a", "a", "b"], ["a", "b"]) == 1.0
    assert evidence_recall([], ["a"]) is None
    assert evidence_recall(["a"], []) == 0.0
    assert hit(["a", "b"], ["b"]) == 1.0
    assert hit(["a"], ["x"]) == 0.0
    assert hit([], ["x"]) is None


def test_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([5], 95) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95.0


def test_growth_per_100_turns() -> None:
    assert growth_per_100_turns([(100, 50), (200, 150), (300, 250)]) == pytest.approx(100.0)
    assert growth_per_100_turns([(10, 5), (20, 5)]) == pytest.approx(0.0)
    assert growth_per_100_turns([(10, 5)]) is None
    assert growth_per_100_turns([(10, 5), (10, 9)]) is None
    # two conversations pooled, each restarting at zero, still give the common slope
    pts = [(0, 0), (100, 30), (200, 60), (0, 0), (100, 30)]
    assert growth_per_100_turns(pts) == pytest.approx(30.0)


def test_aggregate() -> None:
    rs = [rec(gold=("a", "b"), shown=("a",), tokens=100, seconds=0.010),
          rec(gold=("a",), shown=("a",), tokens=200, seconds=0.020),
          rec(gold=(), shown=("a",), tokens=300, seconds=0.030)]
    agg = aggregate(rs)
    assert agg["n"] == 3 and agg["scored"] == 2
    assert agg["recall"] == pytest.approx(0.75)
    assert agg["hit"] == pytest.approx(1.0)
    assert agg["tokens_p50"] == 200.0
    assert agg["latency_p50_ms"] == pytest.approx(20.0)
    empty = aggregate([])
    assert empty["n"] == 0 and empty["recall"] is None


def test_summarize_separates_adversarial_and_keeps_every_category() -> None:
    rs = [
        rec("x", ("a",), ("a",), cat="1"),
        rec("x", ("a",), (), cat="12"),
        rec("x", ("a",), ("a",), cat="5", adv=True),
        rec("x", ("a",), ("a",), mode="topk", value=5),
        rec("y", ("a",), (), cat="1"),
    ]
    s = summarize(rs)
    entry = s["x"]["budget"][500]
    assert entry["overall"]["recall"] == pytest.approx(0.5)  # adversarial excluded
    assert entry["adversarial"]["recall"] == 1.0 and entry["adversarial"]["n"] == 1
    assert list(entry["categories"]) == ["1", "5", "12"]  # numeric ids sorted as numbers
    assert s["x"]["topk"][5]["overall"]["recall"] == 1.0
    assert s["y"]["budget"][500]["overall"]["recall"] == 0.0


def test_rrf() -> None:
    assert rrf([["a", "b", "c"], ["b", "c", "a"]]) == ["b", "a", "c"]
    assert rrf([["a"], []]) == ["a"]
    assert rrf([["a", "b"], ["c"]], k=1)[0] in {"a", "c"}
    assert rrf([]) == []


def test_lexical_tokens() -> None:
    assert lexical_tokens("What did Corinne do at the NAMI support group?") == [
        "corinne", "nami", "support", "group"]


def test_packing() -> None:
    costs = {"a": 5, "b": 8, "c": 3, "d": 1}
    assert pack_best_first(["a", "b", "c", "d"], costs, 10) == ["a", "c", "d"]  # b skipped, smaller ones fill
    assert pack_best_first(["a"], costs, 4) == []
    assert pack_recent(["a", "b", "c", "d"], costs, 12) == ["d", "c", "b"]
    assert pack_recent(["a", "b", "c", "d"], costs, 3) == ["d"]  # truncates: stops at the first misfit


@given(st.lists(st.integers(min_value=1, max_value=50), max_size=30), st.integers(min_value=0, max_value=200))
def test_packing_never_exceeds_the_budget(sizes: list[int], budget: int) -> None:
    keys = [f"k{i}" for i in range(len(sizes))]
    costs = dict(zip(keys, sizes))
    for chosen in (pack_best_first(keys, costs, budget), pack_recent(keys, costs, budget)):
        assert sum(costs[k] for k in chosen) <= budget
        assert len(set(chosen)) == len(chosen)


@given(st.lists(st.lists(st.sampled_from("abcdefg"), unique=True, max_size=7), max_size=4))
def test_rrf_is_a_permutation_of_the_union(rankings: list[list[str]]) -> None:
    fused = rrf(rankings)
    assert sorted(fused) == sorted({x for r in rankings for x in r})
    assert len(fused) == len(set(fused))
