"""The confidence math of DESIGN.md, as pure functions."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from personatree.confidence import (
    confidence_at,
    decay_factor,
    decayed_logit,
    evidence_weight,
    logit_of,
    sigmoid,
    update_logit,
)

from .conftest import T0

logits = st.floats(-8, 8, allow_nan=False)
halves = st.one_of(st.none(), st.floats(0.01, 10_000))
days = st.floats(0, 100_000, allow_nan=False)


def test_formula_matches_design() -> None:
    # ℓ ← ℓ₀ + (ℓ − ℓ₀)·2^(−Δt/h) + Σ ψγ, clipped.
    got = update_logit(3.0, 0.5, 10.0, 10.0, [0.8 * 0.6, -0.2 * 0.6], clip=6.0)
    assert got == pytest.approx(0.5 + 2.5 * 0.5 + 0.48 - 0.12)
    assert update_logit(5.0, 0.0, None, 1e9, [3.0], clip=6.0) == 6.0
    assert update_logit(-5.0, 0.0, None, 0.0, [-3.0], clip=6.0) == -6.0


def test_sigmoid_and_logit_are_inverse() -> None:
    for p in (0.01, 0.3, 0.5, 0.77, 0.999):
        assert sigmoid(logit_of(p)) == pytest.approx(p)
    assert sigmoid(-800) > 0.0 or sigmoid(-800) == 0.0  # no overflow error
    with pytest.raises(ValueError):
        logit_of(1.0)


@given(logits, logits, halves, days, days)
def test_decay_moves_monotonically_toward_prior(logit: float, prior: float, h, d1: float, d2: float) -> None:
    a, b = sorted((d1, d2))
    la, lb = decayed_logit(logit, prior, h, a), decayed_logit(logit, prior, h, b)
    # Never overshoots the prior and never moves away from it as time passes.
    assert abs(lb - prior) <= abs(la - prior) + 1e-12
    assert min(logit, prior) - 1e-9 <= la <= max(logit, prior) + 1e-9


@given(logits, logits, halves, days, st.lists(st.floats(-1, 1), max_size=20))
def test_confidence_stays_in_open_unit_interval(logit, prior, h, dt, psis) -> None:
    ws = [evidence_weight(p, 0.6) for p in psis]
    new = update_logit(logit, prior, h, dt, ws, clip=6.0)
    assert -6.0 <= new <= 6.0
    assert 0.0 < sigmoid(new) < 1.0


def test_no_decay_without_half_life_and_half_at_half_life() -> None:
    assert decay_factor(1e6, None) == 1.0
    assert decay_factor(1e6, math.inf) == 1.0
    assert decay_factor(7.0, 7.0) == pytest.approx(0.5)
    assert decay_factor(-3.0, 7.0) == 1.0  # clock skew never grows a logit


def test_confidence_at_is_lazy_and_pure() -> None:
    c1 = confidence_at(3.0, 0.0, 30.0, T0, T0 + timedelta(days=30))
    c2 = confidence_at(3.0, 0.0, 30.0, T0, T0 + timedelta(days=30))
    assert c1 == c2 == pytest.approx(sigmoid(1.5))
    assert confidence_at(3.0, 0.0, 30.0, T0, T0 - timedelta(days=5)) == pytest.approx(sigmoid(3.0))


def test_evidence_weight_clamps_psi() -> None:
    assert evidence_weight(2.0, 0.5) == 0.5
    assert evidence_weight(-2.0, 0.5) == -0.5
