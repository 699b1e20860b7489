"""A process keeps a bounded number of users in memory, and drops a deleted one at once.

A server meets many users; each one's tree and the retrieval and tier state built
over it stay in memory only for the ``config.resident_users`` most recently read.
Whoever is dropped is read back from the store when next met, with the same answers.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from personatree.api import PersonaTree
from personatree.clock import FixedClock
from personatree.config import PersonaTreeConfig
from personatree.embedders import HashingEmbedder
from personatree.errors import PersonaTreeError
from personatree.retrieval.prelude import _STATES
from personatree.tiering.search import _TIERS, tiers_of

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
TOPICS = ["I water the tomatoes on my balcony every evening.", "My brother Teo fixes old radios.",
          "I take the night train to Vienna twice a year.", "Our choir rehearses on Thursdays.",
          "I keep a jar of pickled lemons in the fridge."]


def _open(path: Path, resident: int | None) -> PersonaTree:
    cfg = PersonaTreeConfig(resident_users=resident)
    return PersonaTree.open(path, cfg, embedder=HashingEmbedder(64), clock=FixedClock(T0 + timedelta(days=30)))


def _fill(tree: PersonaTree, users: list[str]) -> None:
    for k, uid in enumerate(users):
        tree.observe_many(uid, [{"messages": f"{TOPICS[(i + k) % 5]} Note {i} of {uid}.",
                                 "observation_id": f"{uid}-o{i}", "session_id": f"s{i // 3}",
                                 "at": T0 + timedelta(hours=5 * i)} for i in range(9)])


def _ask(tree: PersonaTree, uid: str) -> tuple[tuple[str, ...], str]:
    r = tree.recall(uid, "What do I keep in the fridge?", budget=300)
    return tuple(r.node_ids), r.text


def test_only_the_most_recently_read_users_stay_and_the_others_come_back_alike(tmp_path: Path) -> None:
    users = ["ana", "ben", "cy", "dee"]
    unbounded = _open(tmp_path / "all.db", None)
    _fill(unbounded, users)
    expected = {u: _ask(unbounded, u) for u in users}
    assert unbounded.engine.resident == users  # None: every user met stays
    unbounded.close()

    tree = _open(tmp_path / "two.db", 2)
    _fill(tree, users)
    engine = tree.engine
    for u in users:
        assert _ask(tree, u) == expected[u]
        tiers_of(tree, u)
    states = engine.caches.get(_STATES, dict)
    tiers = engine.caches.get(_TIERS, dict)
    assert engine.resident == ["cy", "dee"]
    assert set(engine.trees) == set(states) == set(tiers) == {"cy", "dee"}
    # A dropped user is read back when met again, answers unchanged, and the least
    # recently read one leaves in its place.
    assert _ask(tree, "ana") == expected["ana"]
    assert engine.resident == ["dee", "ana"] and set(states) == {"dee", "ana"}
    # Nothing stored was touched: every user is still all there.
    assert sorted(tree.users()) == users
    tree.close()


def test_a_deleted_user_leaves_the_process_memory(tmp_path: Path) -> None:
    tree = _open(tmp_path / "m.db", 8)
    _fill(tree, ["ana", "ben"])
    _ask(tree, "ana")
    tiers_of(tree, "ana")
    tree.delete_user("ana")
    engine = tree.engine
    assert "ana" not in engine.trees and "ana" not in engine.resident
    assert "ana" not in engine.caches.get(_STATES, dict) and "ana" not in engine.caches.get(_TIERS, dict)
    assert _ask(tree, "ben")[1]
    tree.close()


@pytest.mark.parametrize("bad", [0, -3, "many"])
def test_a_bad_bound_is_a_typed_error(bad: object) -> None:
    with pytest.raises((PersonaTreeError, ValueError)):
        PersonaTreeConfig(resident_users=bad)  # type: ignore[arg-type]
