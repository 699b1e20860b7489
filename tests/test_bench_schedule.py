"""The benchmark's consolidation schedules and its tree-size summary (pure functions)."""

from __future__ import annotations

import pytest

from personatree_bench.runner import tree_size
from personatree_bench.systems import consolidation_due, parse_schedule


def test_parse_schedule_names() -> None:
    assert parse_schedule("session") == ("every", 1)
    assert parse_schedule("every-4") == ("every", 4)
    assert parse_schedule("once") == parse_schedule("end") == ("once", 0)
    assert parse_schedule(" None ") == ("none", 0)
    for bad in ("every-0", "every-", "every-x", "nightly", ""):
        with pytest.raises(ValueError):
            parse_schedule(bad)


def due(schedule: str, sessions: int, last: int, min_turns: int = 1) -> list[int]:
    """The sessions (1-based) after which a stream of ``sessions`` one-turn sessions consolidates."""
    out, since_s, since_t = [], 0, 0
    for i in range(1, sessions + 1):
        since_s, since_t = since_s + 1, since_t + 1
        if consolidation_due(parse_schedule(schedule), since_s, since_t, i == last, min_turns):
            out.append(i)
            since_s = since_t = 0
    return out


def test_schedules_consolidate_when_they_say() -> None:
    assert due("session", 5, 5) == [1, 2, 3, 4, 5]
    assert due("every-2", 5, 5) == [2, 4, 5]  # and always after the last session
    assert due("once", 5, 5) == [5]
    assert due("none", 5, 5) == []
    assert due("session", 5, 5, min_turns=2) == [2, 4, 5]


def test_tree_size_per_100_turns() -> None:
    rows = [
        {"turns": 200, "leaves": 100, "mids": 10, "roots": 2, "archived": 90, "profile_tokens": 300},
        {"turns": 300, "leaves": 150, "mids": 20, "roots": 3, "archived": 140, "profile_tokens": 500},
    ]
    size = tree_size(rows)
    assert size["leaves_per_100_turns"] == 50.0 and size["archived_per_100_turns"] == 46.0
    assert size["tree_nodes_per_100_turns"] == 50.0 + 6.0 + 1.0
    assert size["profile_tokens_mean"] == 400.0 and size["conversations"] == 2
    assert tree_size([]) == {}
