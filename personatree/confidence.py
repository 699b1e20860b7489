"""Confidence in log-odds with schema-dependent decay (ARCHITECTURE.md, "confidence").

All functions are pure: they take the stored state and a time and return values.
With ℓ the logit, ℓ₀ the schema prior, h the schema half-life and Δt the time since
the last update::

    ℓ ← ℓ₀ + (ℓ − ℓ₀)·2^(−Δt/h) + Σ wᵢ,   wᵢ = ψᵢ·γ,   clipped to [−L, L]
    confidence = σ(ℓ)

``h = None`` (or infinity) means the schema never decays (identity, allergies).
Decay is applied lazily from ``t_last``, so reading a node at time ``t`` is a pure
function of its stored state and ``t``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Iterable

from .errors import InputError

__all__ = [
    "sigmoid",
    "logit_of",
    "decay_factor",
    "decayed_logit",
    "evidence_weight",
    "update_logit",
    "confidence_at",
    "days_between",
]

_SECONDS_PER_DAY = 86400.0


def sigmoid(logit: float) -> float:
    """The logistic function σ(ℓ) = 1 / (1 + e^(−ℓ)), computed without overflow.

    Parameters
    ----------
    logit : float
        Log-odds.

    Returns
    -------
    float
        Probability in (0, 1) for any finite input.
    """
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    z = math.exp(logit)
    return z / (1.0 + z)


def logit_of(p: float) -> float:
    """Inverse of :func:`sigmoid`: log(p / (1 − p)).

    Parameters
    ----------
    p : float
        Probability strictly between 0 and 1.

    Returns
    -------
    float
        Log-odds.
    """
    if not 0.0 < p < 1.0:
        raise InputError(f"probability must be in (0, 1), got {p}")
    return math.log(p / (1.0 - p))


def days_between(earlier: datetime, later: datetime) -> float:
    """Elapsed days from ``earlier`` to ``later``, never negative.

    Clock skew or out-of-order replays must not *grow* a logit away from its prior,
    so a negative gap counts as zero.
    """
    return max(0.0, (later - earlier).total_seconds() / _SECONDS_PER_DAY)


def decay_factor(dt_days: float, half_life_days: float | None) -> float:
    """The factor 2^(−Δt/h) by which the distance to the prior shrinks.

    Parameters
    ----------
    dt_days : float
        Elapsed time in days (negative values are treated as 0).
    half_life_days : float or None
        Schema half-life; ``None`` or ``inf`` means no decay.

    Returns
    -------
    float
        A factor in (0, 1].
    """
    if half_life_days is None or math.isinf(half_life_days) or dt_days <= 0.0:
        return 1.0
    return 2.0 ** (-dt_days / half_life_days)


def decayed_logit(
    logit: float, prior: float, half_life_days: float | None, dt_days: float
) -> float:
    """ℓ₀ + (ℓ − ℓ₀)·2^(−Δt/h): the logit after ``dt_days`` of decay toward the prior.

    Parameters
    ----------
    logit : float
        Stored logit at the last update.
    prior : float
        Schema prior ℓ₀.
    half_life_days : float or None
        Schema half-life (``None``: no decay).
    dt_days : float
        Days since the last update.

    Returns
    -------
    float
        The decayed logit; it lies between ``prior`` and ``logit``.
    """
    return prior + (logit - prior) * decay_factor(dt_days, half_life_days)


def evidence_weight(psi: float, gamma: float) -> float:
    """wᵢ = ψᵢ·γ: positive for support, negative for conflict.

    Parameters
    ----------
    psi : float
        Validator score in [−1, 1] (clamped).
    gamma : float
        Evidence scale.
    """
    return max(-1.0, min(1.0, psi)) * gamma


def update_logit(
    logit: float,
    prior: float,
    half_life_days: float | None,
    dt_days: float,
    weights: Iterable[float] = (),
    clip: float = 8.0,
) -> float:
    """One full update: decay toward the prior, add evidence, clip to [−L, L].

    Parameters
    ----------
    logit : float
        Stored logit at the last update.
    prior : float
        Schema prior ℓ₀.
    half_life_days : float or None
        Schema half-life (``None``: no decay).
    dt_days : float
        Days since the last update.
    weights : iterable of float
        Evidence weights wᵢ = ψᵢ·γ.
    clip : float
        L, the bound on |ℓ|.

    Returns
    -------
    float
        The new logit, in [−clip, clip].
    """
    value = decayed_logit(logit, prior, half_life_days, dt_days) + math.fsum(weights)
    return max(-clip, min(clip, value))


def confidence_at(
    logit: float, prior: float, half_life_days: float | None, t_last: datetime, now: datetime
) -> float:
    """σ of the lazily decayed logit: the confidence of a node read at ``now``.

    Parameters
    ----------
    logit : float
        Stored logit at ``t_last``.
    prior : float
        Schema prior ℓ₀.
    half_life_days : float or None
        Schema half-life.
    t_last : datetime
        Time of the last update.
    now : datetime
        Time of reading.

    Returns
    -------
    float
        Confidence in (0, 1).
    """
    return sigmoid(decayed_logit(logit, prior, half_life_days, days_between(t_last, now)))
