"""Tenant isolation: no API call for one user ever returns, counts, explains, exports,
changes or deletes another user's data — on every store (memory, SQLite, PostgreSQL).

A hypothesis property drives two users whose ids are chosen to trip naive code (SQL
``LIKE`` wildcards, quotes, case, prefixes of each other) and whose statements carry
marker words unique to each. Every public read of user A is walked recursively and
must contain none of user B's markers or ids; every write for A must leave B's
checksum and row counts unchanged.

Uses the ``HashingEmbedder`` (with the real offline judge): isolation does not depend
on semantics, and the property runs many examples per store.
"""

from __future__ import annotations

import dataclasses
import itertools
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from personatree import FixedClock, PersonaTree
from personatree.config import PersonaTreeConfig
from personatree.errors import UnknownNodeError, UnknownUserError
from personatree.judge import OfflineJudge
from personatree.schema import SchemaRegistry
from personatree.store import open_store

from .conftest import T0

try:  # The PostgreSQL fixtures start a real server for the session (skips when unavailable).
    from tests.pg_fixtures import pg_server_url, pg_url  # noqa: F401
    HAVE_PG_FIXTURES = True
except ImportError:  # pragma: no cover - older trees without the PostgreSQL store
    HAVE_PG_FIXTURES = False

NOW = T0 + timedelta(days=120)

# Pairs of ids that naive SQL or string handling would confuse.
TRICKY_IDS = [
    "ana", "ana%", "an_", "ANA", "anä", "a'na", "ana'; DROP TABLE nodes;--", "ana\\", "ana/../bo",
    "%", "_", "ana ana", "ána", "ana\u200b", "用户", "ana*", "[ana]",
]

TEMPLATES = [
    "My friend {m} loves spicy food.",
    "I visited {m} last summer and loved it.",
    "I run every Sunday with {m}.",
    "I'm allergic to {m} berries.",
    "My sister {m} lives in Oslo.",
    "I want to learn {m} this year.",
]

STORES = ["memory", "sqlite"] + (["postgres"] if HAVE_PG_FIXTURES else [])


@pytest.fixture(scope="module")
def judge(hashing: Any, registry: SchemaRegistry) -> OfflineJudge:
    return OfflineJudge(hashing, registry)


@pytest.fixture(params=STORES)
def tree(request: pytest.FixtureRequest, tmp_path: Path, hashing: Any, registry: SchemaRegistry,
         judge: OfflineJudge) -> Iterator[PersonaTree]:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = str(tmp_path / "tenants.db")
    else:
        url = request.getfixturevalue("pg_url")
    t = PersonaTree(open_store(url), config=PersonaTreeConfig(), registry=registry, embedder=hashing,
                    judge=judge, clock=FixedClock(NOW))
    yield t
    t.close()


def strings(value: Any, _depth: int = 0) -> Iterator[str]:
    """Every string inside a result (dataclasses, mappings, sequences), recursively."""
    if _depth > 50:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Enum):
        yield str(value.value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from strings(getattr(value, f.name), _depth + 1)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(k, _depth + 1)
            yield from strings(v, _depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings(v, _depth + 1)
    elif isinstance(value, datetime) or value is None:
        return
    elif hasattr(value, "__dict__") and not callable(value):
        yield from strings(vars(value), _depth + 1)


def leaked(result: Any, forbidden: set[str]) -> set[str]:
    text = "\x1f".join(strings(result))
    return {f for f in forbidden if f in text}


_counter = itertools.count()
TRIED: dict[str, int] = {}


@st.composite
def scenario(draw: st.DrawFn) -> dict[str, Any]:
    a, b = draw(st.lists(st.sampled_from(TRICKY_IDS), min_size=2, max_size=2, unique=True))
    n = next(_counter)
    # The same suffix on both ids keeps wildcard ids (an_, ana%) matching each other.
    ids = (f"{a}-{n}", f"{b}-{n}")
    plans = []
    for who in ("A", "B"):
        picks = draw(st.lists(st.sampled_from(range(len(TEMPLATES))), min_size=1, max_size=6))
        plans.append([(i, f"Zq{who}{n}x{j}") for j, i in enumerate(picks)])
    order = draw(st.permutations([0] * len(plans[0]) + [1] * len(plans[1])))
    return {"ids": ids, "plans": plans, "order": order,
            "consolidate": draw(st.booleans()), "forget": draw(st.booleans())}


def _observe_all(tree: PersonaTree, sc: dict[str, Any]) -> tuple[list[set[str]], list[set[str]]]:
    pos = [0, 0]
    obs_ids: list[set[str]] = [set(), set()]
    for k, who in enumerate(sc["order"]):
        tmpl, marker = sc["plans"][who][pos[who]]
        pos[who] += 1
        rep = tree.observe(sc["ids"][who], TEMPLATES[tmpl].format(m=marker),
                           at=T0 + timedelta(days=k), session_id=f"s{k // 3}")
        obs_ids[who].add(rep.observation_id)
    markers = [{m for _, m in plan} for plan in sc["plans"]]
    return markers, obs_ids


def _check(tree: PersonaTree, sc: dict[str, Any]) -> None:
    (ua, ub) = sc["ids"]
    markers, obs_ids = _observe_all(tree, sc)
    b_nodes = {n.id for n in tree.nodes(ub)}
    b_sum, b_counts = tree.store.checksum(ub), tree.store.counts(ub)
    forbidden = markers[1] | obs_ids[1] | b_nodes
    if ub not in ua:
        forbidden.add(ub)

    def clean(what: str, result: Any) -> None:
        bad = leaked(result, forbidden)
        assert not bad, f"{what} for {ua!r} shows {ub!r}'s data: {sorted(bad)[:5]}"

    def b_untouched(what: str) -> None:
        assert tree.store.checksum(ub) == b_sum and tree.store.counts(ub) == b_counts, f"{what} changed {ub!r}"

    if sc["consolidate"]:
        tree.consolidate(ua, now=NOW)
        b_untouched("consolidate")
    a_nodes = tree.nodes(ua)
    clean("nodes", a_nodes)
    for n in a_nodes:
        clean("node", tree.node(ua, n.id))
        clean("explain", tree.explain(ua, n.id))
    b_text = " ".join(TEMPLATES[i].format(m=m) for i, m in sc["plans"][1])
    clean("search", tree.search(ua, b_text, k=50))
    clean("recall", tree.recall(ua, b_text, budget=4000))
    clean("export", tree.export(ua))
    clean("render", tree.render(ua))
    clean("graph", [tree.graph(ua).nodes(), list(tree.graph(ua).edges())])
    stats = tree.stats(ua)
    assert stats["observations"] == len(obs_ids[0]) == tree.store.counts(ua)["observations"]
    assert stats["leaves"] + stats["mids"] + stats["roots"] == len(a_nodes)
    clean("store.observations", tree.store.observations(ua))
    clean("store.events", tree.store.events(ua))
    # Another user's node ids do not resolve for this user, and writes through them fail.
    for bid in sorted(b_nodes)[:3]:
        for call in (tree.node, tree.explain, tree.forget):
            with pytest.raises(UnknownNodeError):
                call(ua, bid)
    assert not tree.store.observations(ua, sorted(obs_ids[1]))
    assert tree.store.existing_observations(ua, sorted(obs_ids[1])) == set()
    b_untouched("reads")
    if sc["forget"] and a_nodes:
        tree.forget(ua, a_nodes[0].id, cascade=True)
        b_untouched("forget")
    tree.delete_user(ua)
    b_untouched("delete_user")
    with pytest.raises(UnknownUserError):
        tree.nodes(ua)
    assert ua not in tree.users() and ub in tree.users()
    tree.delete_user(ub)  # keep the shared store small across examples


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(sc=scenario())
def test_no_call_for_one_user_touches_another(tree: PersonaTree, sc: dict[str, Any]) -> None:
    _check(tree, sc)
    key = type(tree.store).__name__
    TRIED[key] = TRIED.get(key, 0) + 1


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(sc=scenario())
def test_no_call_for_one_user_touches_another_long(tree: PersonaTree, sc: dict[str, Any]) -> None:
    _check(tree, sc)


def test_user_listing_and_global_counts_are_exact(tree: PersonaTree) -> None:
    # Users whose ids are LIKE patterns of each other are still counted separately.
    ids = ["an_", "ana", "ana%", "ANA"]
    for i, uid in enumerate(ids):
        for j in range(i + 1):
            tree.observe(uid, f"I visited museum {j} in Rome.", at=T0 + timedelta(hours=j))
    assert tree.users() == sorted(ids)
    for i, uid in enumerate(ids):
        assert tree.stats(uid)["observations"] == i + 1
        assert tree.store.counts(uid)["observations"] == i + 1
    assert tree.store.counts()["observations"] == sum(range(1, len(ids) + 1))
