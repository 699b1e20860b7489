"""HMO priority S_m and importance: pure functions and their must-show properties."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from personatree.tiering.config import TieringConfig
from personatree.tiering.header import (
    NodeHeader,
    age_days,
    offline_importance,
    persona_term,
    priorities,
    priority,
    recall_strength,
)
from personatree.types import Level

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)
imp = st.floats(0.0, 1.0)
sim = st.floats(-1.0, 1.0)
count = st.integers(0, 1000)
days = st.floats(0.0, 3650.0)


def test_defaults_are_the_hmo_ones() -> None:
    c = TieringConfig()
    assert (c.S, c.K, c.H, c.alpha, c.beta, c.tau, c.tiers) == (5, 50, 200, 1.0, 1.0, 0.10, True)


def test_never_recalled_node_has_a_positive_finite_score() -> None:
    # g(0) = ln 2, not ln 1 = 0: fresh nodes are still ranked by importance, persona and age.
    assert recall_strength(0) == math.log(2.0)
    s = priority(0.5, 0.3, 0, 10.0)
    assert math.isfinite(s) and s > 0.0
    assert priority(0.9, 0.3, 0, 10.0) > priority(0.1, 0.3, 0, 10.0)


@given(imp, sim, count, st.floats(0.1, 3650.0))
def test_more_recalls_flatten_the_decay(i: float, s: float, c: int, dt: float) -> None:
    lam = 0.02
    # A node of no importance and opposite persona has priority 0 at any age: nothing decays.
    assume(priority(i, s, c, 0.0, lam=lam) > 0.0)
    kept = priority(i, s, c, dt, lam=lam) / priority(i, s, c, 0.0, lam=lam)
    kept_more = priority(i, s, c + 1, dt, lam=lam) / priority(i, s, c + 1, 0.0, lam=lam)
    assert kept_more > kept
    assert priority(i, s, c + 1, dt, lam=lam) > priority(i, s, c, dt, lam=lam)


@given(imp, sim, count, days, st.floats(0.01, 365.0))
def test_older_falls(i: float, s: float, c: int, dt: float, extra: float) -> None:
    assume(priority(i, s, c, 0.0) > 0.0)
    assert priority(i, s, c, dt + extra) < priority(i, s, c, dt)


@given(imp, sim, sim, count, days)
def test_higher_persona_similarity_rises(i: float, s1: float, s2: float, c: int, dt: float) -> None:
    lo, hi = sorted((s1, s2))
    if hi - lo > 1e-6 and dt < 1000:  # far beyond that both underflow towards 0
        assert priority(i, hi, c, dt) > priority(i, lo, c, dt)


@given(imp, sim, count, days)
def test_score_is_never_negative(i: float, s: float, c: int, dt: float) -> None:
    # Sim enters as (1 + cos)/2: a negative base would make older nodes rise.
    assert priority(i, s, c, dt) >= 0.0
    assert 0.0 <= persona_term(s) <= 1.0


def test_negative_age_counts_as_now() -> None:
    assert priority(0.5, 0.0, 1, -5.0) == priority(0.5, 0.0, 1, 0.0)
    assert age_days(NOW + timedelta(days=1), NOW) == 0.0


def test_vectorised_matches_scalar() -> None:
    rng = np.random.default_rng(0)
    i, s = rng.random(50), rng.uniform(-1, 1, 50)
    c, d = rng.integers(0, 20, 50), rng.uniform(0, 400, 50)
    vec = priorities(i, s, c, d, alpha=0.7, beta=1.3, lam=0.05)
    ref = [priority(a, b, int(x), y, alpha=0.7, beta=1.3, lam=0.05) for a, b, x, y in zip(i, s, c, d)]
    assert np.allclose(vec, ref)


def test_header_uses_the_later_of_evidence_and_access() -> None:
    h_old = NodeHeader("n", 0.5, 0.2, 3, NOW - timedelta(days=60))
    h_new = NodeHeader("n", 0.5, 0.2, 3, NOW - timedelta(days=1))
    assert h_new.score(NOW) > h_old.score(NOW)


@given(st.floats(0.0, 1.0), st.integers(0, 100))
def test_offline_importance_orders_levels_and_stays_in_range(conf: float, n: int) -> None:
    leaf, mid, root = (offline_importance(lv, conf, n) for lv in (Level.LEAF, Level.MID, Level.ROOT))
    assert 0.0 <= leaf < mid < root <= 1.0
    assert offline_importance(Level.MID, conf, n + 1) > offline_importance(Level.MID, conf, n)
    assert offline_importance(Level.MID, min(1.0, conf + 0.1), n) >= offline_importance(Level.MID, conf, n)
