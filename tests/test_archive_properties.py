"""Property: after any consolidation, every acknowledged observation that the user has
not deleted is still reachable by recall, whatever the schedule.

Hypothesis draws schedules of observe batches (with gaps of days to years between them,
so orphans go stale), deletions of observations, and consolidations at random times,
with a small leaf cap so that patterns are trimmed. After each consolidation a query
made of an observation's own words must bring it back (its made-up code word is in the
context), and no deleted observation may come back. Runs on SQLite; the PostgreSQL run
is slow-marked (a fresh schema per example).
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree.embedders import HashingEmbedder
from personatree.ports import Store
from personatree.schema import SchemaRegistry
from personatree.store import SQLiteStore
from tests.pg_fixtures import drop_schema, fresh_schema_url, server_url

from .test_archive import T0, _TEMPLATES, code_words, make_tree

_CODES = code_words(2000, seed=11)

Step = tuple[Any, ...]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("observe"), st.integers(1, 9), st.integers(0, 240)),  # batch size, days since the last
        st.tuples(st.just("consolidate"), st.integers(0, 400)),  # days after the latest observation
        st.tuples(st.just("delete"), st.integers(0, 10**6)),  # which acknowledged observation
    ),
    min_size=1,
    max_size=8,
)


def run_schedule(store: Store, hashing: HashingEmbedder, registry: SchemaRegistry, schedule: list[Step]) -> None:
    tree = make_tree(store, hashing, registry, k_leaves=3)
    live: dict[str, tuple[str, str]] = {}  # observation id -> (text, code)
    deleted: dict[str, tuple[str, str]] = {}
    clock, n = T0, 0
    try:
        for step in [*schedule, ("consolidate", 1)]:
            if step[0] == "observe":
                _, size, gap = step
                clock += timedelta(days=gap)
                batch = []
                for _ in range(size):
                    code = _CODES[n]
                    text = _TEMPLATES[n % len(_TEMPLATES)].format(code)
                    batch.append({"messages": [{"role": "user", "content": text}], "at": clock.isoformat(),
                                  "session_id": f"s{n // 3}", "observation_id": f"o{n}"})
                    live[f"o{n}"] = (text, code)
                    clock += timedelta(hours=1)
                    n += 1
                tree.observe_many("ana", batch)
            elif step[0] == "delete" and live:
                oid = sorted(live)[step[1] % len(live)]
                tree.delete_observation("ana", oid)
                deleted[oid] = live.pop(oid)
            elif step[0] == "consolidate" and n:
                tree.consolidate("ana", now=clock + timedelta(days=step[1]))
                for oid, (text, code) in live.items():
                    assert code in tree.recall("ana", text, budget=300).text, (oid, text)
                for oid, (text, code) in deleted.items():
                    assert code not in tree.recall("ana", text, budget=300).text, (oid, text)
    finally:
        tree.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps)
def test_every_observation_stays_recallable_on_sqlite(
    hashing: HashingEmbedder, registry: SchemaRegistry, schedule: list[Step]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_schedule(SQLiteStore(Path(tmp) / "p.db"), hashing, registry, schedule)


def _postgres() -> tuple[Store, Callable[[], None]]:
    from personatree.store.postgres import PostgresStore

    url = fresh_schema_url(server_url(), "archive")
    return PostgresStore(url), lambda: drop_schema(url)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=steps)
def test_every_observation_stays_recallable_on_postgres(
    hashing: HashingEmbedder, registry: SchemaRegistry, schedule: list[Step]
) -> None:
    store, drop = _postgres()
    try:
        run_schedule(store, hashing, registry, schedule)
    finally:
        drop()
