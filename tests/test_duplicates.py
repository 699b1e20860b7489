"""Duplicates: an observation delivered twice adds its evidence once (ingestion is
idempotent on the observation id), and never creates a second set of leaves.

Uses the real packaged embedder and offline judge, on real SQLite files; a mid is
seeded (standing in for consolidation) so that "support once" is observable as the
mid's support count.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree import PersonaTree
from personatree.store import SQLiteStore

from .helpers import T0, Parts, open_tree, seed_mid

NOW = T0 + timedelta(days=10)


@pytest.fixture()
def tree(tmp_path: Path, parts: Parts) -> PersonaTree:
    t = open_tree(tmp_path / "dup.db", parts, NOW)
    seed_mid(t, "ana", "md_spicy", "Ana loves spicy food")
    yield t
    t.close()


STATEMENT = "I really love spicy food, the hotter the better."


def _state(tree: PersonaTree) -> tuple[int, int, int, str]:
    mid = tree.node("ana", "md_spicy")
    return mid.n_support, len(tree.nodes("ana", "leaf")), tree.store.counts("ana")["observations"], \
        tree.store.checksum("ana")


def test_same_observation_twice_in_a_session_supports_once(tree: PersonaTree) -> None:
    first = tree.observe("ana", STATEMENT, at=T0 + timedelta(hours=1), session_id="s1")
    assert first.attached == 1 and not first.duplicate
    after_first = _state(tree)
    assert after_first[0] == 2  # seeded support 1 + this statement
    again = tree.observe("ana", STATEMENT, at=T0 + timedelta(hours=1), session_id="s1")
    assert again.duplicate and again.decisions == () and again.observation_id == first.observation_id
    # Nothing at all changed: same support, same leaves, same log, same bytes.
    assert _state(tree) == after_first


def test_idempotence_is_keyed_by_observation_id(tree: PersonaTree) -> None:
    # A retry may re-send an edited payload with the same id (e.g. a re-rendered message):
    # the first delivery wins and the id is never ingested twice.
    tree.observe("ana", STATEMENT, at=T0, session_id="s1", observation_id="msg-42")
    before = _state(tree)
    rep = tree.observe("ana", "Spicy curry is my favourite dish.", at=T0 + timedelta(hours=3),
                       session_id="s1", observation_id="msg-42")
    assert rep.duplicate and _state(tree) == before
    assert tree.store.observations("ana", ["msg-42"])[0].messages[0].content == STATEMENT


def test_duplicate_within_one_batch_is_stored_once(tree: PersonaTree) -> None:
    item = {"messages": STATEMENT, "at": T0, "session_id": "s1", "observation_id": "o-1"}
    reports = tree.observe_many("ana", [item, item, dict(item)])
    assert len(reports) == 3
    assert tree.store.counts("ana")["observations"] == 1
    assert tree.node("ana", "md_spicy").n_support == 2
    assert len(tree.nodes("ana", "leaf")) == len(reports[0].decisions)


def test_duplicate_within_one_batch_is_reported_as_duplicate(tree: PersonaTree) -> None:
    item = {"messages": STATEMENT, "at": T0, "session_id": "s1", "observation_id": "o-1"}
    reports = tree.observe_many("ana", [item, item])
    assert [r.duplicate for r in reports] == [False, True]


class RacingStore(SQLiteStore):
    """A real SQLite store whose duplicate check waits until every racer has made it,
    so concurrent redeliveries interleave the same way on every run."""

    def __init__(self, path: Path, racers: int) -> None:
        super().__init__(path)
        self.barrier = threading.Barrier(racers, timeout=10)
        self.waited = threading.local()

    def existing_observations(self, user_id: str, ids: Sequence[str]) -> set[str]:
        found = super().existing_observations(user_id, ids)
        # Only each racer's first check meets the barrier; the re-check made inside the
        # guarded transaction runs one racer at a time.
        if "race" in ids and not getattr(self.waited, "done", False):
            self.waited.done = True
            self.barrier.wait()
        return found


def _race(tmp_path: Path, parts: Parts, racers: int = 3) -> tuple[PersonaTree, list[Any]]:
    store = RacingStore(tmp_path / "race.db", racers)
    tree = open_tree(store, parts, NOW)
    seed_mid(tree, "ana", "md_spicy", "Ana loves spicy food")
    results: list[Any] = []

    def deliver() -> None:
        try:
            results.append(tree.observe("ana", STATEMENT, at=T0, session_id="s1", observation_id="race"))
        except BaseException as exc:  # pragma: no cover - reported by the assertions
            results.append(exc)

    threads = [threading.Thread(target=deliver) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return tree, results


def test_concurrent_redelivery_is_stored_once(tmp_path: Path, parts: Parts) -> None:
    tree, results = _race(tmp_path, parts)
    try:
        assert all(not isinstance(r, BaseException) for r in results), results
        assert tree.store.counts("ana")["observations"] == 1
        assert tree.node("ana", "md_spicy").n_support == 2  # seeded 1 + once
        assert len(tree.nodes("ana", "leaf")) == 1
        assert tree.store.integrity_check() == []
    finally:
        tree.close()


def test_concurrent_redelivery_journals_and_reports_once(tmp_path: Path, parts: Parts) -> None:
    tree, results = _race(tmp_path, parts)
    try:
        assert sum(1 for e in tree.store.events("ana") if e.kind == "observe") == 1
        assert sorted(r.duplicate for r in results) == [False, True, True]
    finally:
        tree.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.integers(0, 3), min_size=1, max_size=7))
def test_any_redelivery_order_gives_the_same_tree(tmp_path: Path, parts: Parts, order: list[int]) -> None:
    # Property: delivering a set of observations with arbitrary repeats yields exactly the
    # tree of delivering each once (in first-seen order).
    texts = [STATEMENT, "Spicy curry is my favourite dish.", "I hate spicy food, it makes me sick.",
             "My sister Mia lives in Oslo."]
    items = [{"messages": texts[i], "at": T0 + timedelta(hours=i), "session_id": "s1"} for i in range(4)]
    once = list(dict.fromkeys(order))
    a = open_tree("memory://", parts, NOW)
    b = open_tree("memory://", parts, NOW)
    try:
        for t in (a, b):
            seed_mid(t, "ana", "md_spicy", "Ana loves spicy food")
        for i in order:
            a.observe_many("ana", [items[i]])
        b.observe_many("ana", [items[i] for i in once])
        # same_as compares embeddings to 1e-5: the model's floats depend slightly on how
        # texts were batched, so byte-equal checksums are not expected here.
        assert a.graph("ana").same_as(b.graph("ana"))
        assert [o.id for o in a.store.observations("ana")] == [o.id for o in b.store.observations("ana")]
        assert a.store.counts("ana") == b.store.counts("ana")
    finally:
        a.close()
        b.close()


def test_same_statement_in_two_observations_of_a_session_supports_once(tree: PersonaTree) -> None:
    tree.observe("ana", STATEMENT, at=T0 + timedelta(hours=1), session_id="s1")
    tree.observe("ana", STATEMENT, at=T0 + timedelta(hours=2), session_id="s1")
    assert tree.node("ana", "md_spicy").n_support == 2
    assert len(tree.nodes("ana", "leaf")) == 1
