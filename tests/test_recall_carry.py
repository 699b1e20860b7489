"""The packer's companions: a node shown only with what it carries, within the budget.

Pure: options are built by hand (no embedder, no graph).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from personatree.retrieval.packing import Companion, Option, pack


def _options(carry_tokens: int = 12) -> dict[str, Option]:
    return {
        # A claim that must come with its latest contradiction "c".
        "r": Option("r", 1, 0.9, 0.9, 20, companions=(Companion("c", 0.1, carry_tokens),)),
        "c": Option("c", 0, 0.2, 0.2, 10),
        "x": Option("x", 0, 0.5, 0.5, 10),
        "y": Option("y", 0, 0.4, 0.4, 10),
    }


def test_a_claim_brings_its_companion_and_pays_for_it() -> None:
    res = pack(_options(), {}, budget=100, lam=0.0, seeds=["r", "x", "y"])
    first = res.taken[0]
    assert first.node_ids == ("r", "c") and first.carried == ("c",)
    assert first.tokens == 20 + 12
    assert sorted(res.node_ids) == ["c", "r", "x", "y"]


def test_when_the_pair_does_not_fit_the_companion_is_shown_instead() -> None:
    # 25 tokens: the claim (20) with its contradiction (12) does not fit; the
    # contradiction on its own (10) does, and wins over the claim alone.
    res = pack(_options(), {}, budget=25, lam=0.0, seeds=["r"])
    assert res.node_ids == ["c"]
    assert any(s.node_ids == ("r",) for s in res.left_out)


def test_a_companion_already_shown_is_not_paid_twice() -> None:
    opts = _options()
    opts["c"] = Option("c", 0, 0.95, 0.95, 10)  # relevant on its own: taken first
    res = pack(opts, {}, budget=30, lam=0.0, seeds=["c", "r"])
    assert [s.node_ids for s in res.taken] == [("c",), ("r",)]
    assert sum(s.tokens for s in res.taken) == 30


def test_an_expanded_claim_brings_its_companion_too() -> None:
    opts = {
        "root": Option("root", 2, 0.9, 0.9, 20),
        "mid": Option("mid", 1, 0.3, 0.6, 15, companions=(Companion("c", 0.0, 9),)),
        "c": Option("c", 0, 0.1, 0.1, 8),
    }
    res = pack(opts, {"root": ["mid"]}, budget=100, lam=0.0, seeds=["root"])
    assert res.taken[1].kind == "expand" and res.taken[1].node_ids == ("mid", "c")


@given(
    budget=st.integers(1, 120),
    carry=st.integers(1, 40),
    values=st.lists(st.floats(0.01, 1.0), min_size=4, max_size=4),
)
def test_the_budget_holds_and_no_claim_is_shown_without_its_companion(
    budget: int, carry: int, values: list[float]
) -> None:
    opts = {
        "r": Option("r", 1, values[0], values[0], 20, companions=(Companion("c", 0.05, carry),)),
        "c": Option("c", 0, values[1], values[1], 10),
        "x": Option("x", 0, values[2], values[2], 10),
        "y": Option("y", 0, values[3], values[3], 10),
    }
    res = pack(opts, {}, budget=budget, lam=0.0005, seeds=["r", "x", "y", "c"])
    assert sum(s.tokens for s in res.taken) <= budget
    ids = res.node_ids
    assert len(ids) == len(set(ids))
    if "r" in ids:
        assert "c" in ids and ids.index("c") <= ids.index("r") + 1
