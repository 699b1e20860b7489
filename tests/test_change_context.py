"""What was said around a change: the statement closest to it between the claim's last
support and the change, over the leaf rows as arrays.

Compared with the statement-by-statement definition on random trees, ties, equal
times and rows without a recorded time included.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from personatree.graph import MemoryGraph
from personatree.retrieval.changes import CONTEXT_COSINE, context_leaf
from personatree.retrieval.state import RetrievalState
from personatree.timeline import Timeline, said_at
from personatree.types import Level, Node, Provenance

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _reference(state: RetrievalState, tl: Timeline, latest: str, floor: float = CONTEXT_COSINE) -> str | None:
    # The definition, one statement at a time.
    arr = state.arrays[Level.LEAF]
    node = state.nodes[latest]
    end = said_at(node).timestamp()
    start = tl.support_last.timestamp() if tl.support_last is not None else None
    sims = arr.matrix @ node.embedding
    best, best_cos = None, floor
    for row in np.flatnonzero(sims >= floor):
        x = arr.ids[int(row)]
        if x == latest:
            continue
        hit = state.leaf_said.get(x)
        if hit is not None:
            at = hit[0]
        elif x in state.nodes:
            at = said_at(state.nodes[x]).timestamp()
        else:
            continue
        if at > end or (start is not None and at <= start):
            continue
        c = float(sims[row])
        if c > best_cos or (c == best_cos and best is not None and x < best):
            best, best_cos = x, c
    return best


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _state(seed: int, n: int = 60) -> RetrievalState:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=8)
    g = MemoryGraph("u")
    for i in range(n):
        # Near one direction, so that many rows pass the floor; some share a vector
        # (equal cosines) and some share a time.
        vec = _unit(base + rng.normal(scale=0.9, size=8)) if i % 7 else _unit(base)
        at = T0 + timedelta(days=int(rng.integers(0, 40)))
        g.add_node(Node(f"l{i:03d}", "u", Level.LEAF, "event", f"statement {i}", {}, at, at, 0.0,
                        embedding=vec, provenance=(Provenance(f"o{i}", 0, 0, at, f"s{i}"),)))
    return RetrievalState(g).refresh(g, 1)


def _timeline(last_support: datetime | None) -> Timeline:
    return Timeline("m", None, last_support, 0, None, None, 0, (), True, None, None)


@pytest.mark.parametrize("seed", range(12))
def test_the_statement_around_a_change_is_the_closest_one_between_support_and_change(seed: int) -> None:
    state = _state(seed)
    pick = random.Random(seed)
    ids = list(state.arrays[Level.LEAF].ids)
    for _ in range(15):
        latest = pick.choice(ids)
        start = None if pick.random() < 0.3 else T0 + timedelta(days=pick.randrange(0, 30))
        floor = pick.choice([CONTEXT_COSINE, 0.2, 0.8])
        tl = _timeline(start)
        assert context_leaf(state, tl, latest, floor) == _reference(state, tl, latest, floor)


def test_a_row_without_a_recorded_time_is_read_from_its_node() -> None:
    state = _state(3)
    ids = list(state.arrays[Level.LEAF].ids)
    latest = max(ids, key=lambda x: state.leaf_said[x][0])
    expected = _reference(state, _timeline(None), latest, 0.2)
    assert expected is not None
    # The state forgets the time of the expected answer: the node still has it.
    state.own_maps()
    del state.leaf_said[expected]
    state.updates_memo = None
    assert context_leaf(state, _timeline(None), latest, 0.2) == expected
    # Said after the change, it no longer qualifies.
    node = state.nodes[expected]
    later = said_at(state.nodes[latest]) + timedelta(days=1)
    state.nodes[expected] = replace(node, provenance=(replace(node.provenance[0], at=later),))
    assert context_leaf(state, _timeline(None), latest, 0.2) == _reference(state, _timeline(None), latest, 0.2)
    assert context_leaf(state, _timeline(None), latest, 0.2) != expected
