"""The offline level router: data, cross-validated accuracy, routing and caching."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

from personatree.retrieval.router import Router, cue_features, default_router, load_examples
from personatree.types import Level


@pytest.fixture(scope="module")
def router(embedder) -> Router:
    return default_router(embedder)


def test_examples_are_plentiful_and_varied() -> None:
    ex = load_examples()
    counts = Counter(ex.labels)
    assert all(counts[lv] >= 60 for lv in Level), counts
    assert len(set(ex.questions)) == len(ex.questions), "duplicate example questions"
    text = " ".join(ex.questions).lower()
    for cue in (
        "when did",
        "what did",
        "where",
        "lately",
        "how often",
        "have i been",
        "do i usually",
        "why do i",
        "what kind of person",
        "would i enjoy",
        "what matters",
    ):
        assert cue in text, cue
    assert {"preference", "routine", "value", "boundary"} <= set(ex.hints)


def test_cross_validated_accuracy(router: Router) -> None:
    acc = router.cross_validate(folds=5, seed=0)
    print(
        f"\nrouter 5-fold cross-validated accuracy: {acc:.3f} on {len(router.examples.questions)} examples"
    )
    assert acc >= 0.75


@pytest.mark.parametrize(
    ("query", "level"),
    [
        ("When did Priya fly to Nairobi?", Level.LEAF),
        ("What was the name of the hotel we stayed at in Kyoto?", Level.LEAF),
        ("On 3 May 2021, which train did I take?", Level.LEAF),
        ("How often do I play tennis these days?", Level.MID),
        ("Have I been drinking more coffee lately?", Level.MID),
        ("Why do I get so defensive around my brother?", Level.ROOT),
        ("What kind of person would you say I am?", Level.ROOT),
        ("What matters most to me when choosing a job?", Level.ROOT),
    ],
)
def test_routes_clear_questions(router: Router, query: str, level: Level) -> None:
    route = router.route(query)
    assert route.level is level, route
    assert abs(sum(route.probabilities.values()) - 1.0) < 1e-6
    assert max(route.probabilities, key=route.probabilities.__getitem__) is route.level


def test_schema_hints_match_whole_words(router: Router) -> None:
    assert "routine" in router.route("How often do I usually go swimming?").schema_types
    assert "preference" in router.route("Can you recommend a restaurant for tonight?").schema_types
    # "son" must not fire inside "person" or "dissonance"
    assert "relationship" not in router.schema_types(
        "What kind of person shows cognitive dissonance?"
    )


def test_route_vector_equals_route(router: Router, embedder) -> None:
    q = "Where did I leave my keys?"
    a = router.route(q)
    b = router.route_vector(q, embedder.embed([q])[0])
    assert a.level is b.level
    assert all(abs(a.probabilities[k] - b.probabilities[k]) < 1e-5 for k in Level)


def test_cue_features_fire() -> None:
    assert cue_features("why do I do this").sum() > 0
    assert cue_features("zzz").sum() == 0
    assert cue_features("how often").dtype == np.float32


def test_default_router_is_cached_and_refits_fast(embedder, tmp_path) -> None:
    assert default_router(embedder) is default_router(embedder)
    Router(embedder, cache_dir=tmp_path).fit()  # fills the vector cache
    t0 = time.perf_counter()
    r = Router(embedder, cache_dir=tmp_path).fit()
    took = time.perf_counter() - t0
    print(f"\nrouter fit with cached example vectors: {took * 1000:.0f} ms")
    assert took < 2.0
    assert r.route("Why am I like this?").level is Level.ROOT
