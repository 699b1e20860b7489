"""The stance of a piece of evidence toward its topic, as data (pure functions).

Every leaf says something *about* a topic and takes a stance toward it: "I love sushi"
(positive), "I can't stand sushi" (negative), "I stopped hiking" (stopped), "I took up
climbing" (started), "Went hiking today" (neutral). A pattern (mid) has one stance,
and evidence of the opposite stance on the same topic is a conflict with it, never
support, on every path (live insertion, consolidation, rebuild, import).

The stance is read from ``attributes["stance"]`` when the judge wrote one, else
derived from the older attributes ``polarity`` (−1/0/+1) and ``cessation``
(a cessation is a stop: "I used to love hiking" is a stance against hiking *now*).

Sides
-----
A stance has a *side*: positive and started are +1, negative and stopped are −1,
neutral is 0. Patterns group evidence by :func:`group_of`, where a neutral mention
counts with the +1 side: "Went hiking today" is evidence of *doing* it, so it
supports "Enjoys hiking" and a neutral pattern ("Goes hiking on weekends"), and is
not evidence for "Stopped hiking" or "Dislikes hiking". It is not taken as a
*conflict* with a −1 pattern either: a bare mention after "I stopped hiking" may be
about someone else or the past, and a conflict lowers confidence, so only a stated
opposite stance does that.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Protocol, Sequence, get_args

__all__ = [
    "STANCES", "StanceName", "stance_of", "side_of", "group_of", "node_stance", "node_group",
    "opposed", "may_support", "pattern_stance", "guard_psi", "latest_change",
]

StanceName = Literal["positive", "negative", "neutral", "stopped", "started"]

#: Every stance a leaf or pattern can carry, and its side.
STANCES: dict[str, int] = {"positive": 1, "started": 1, "neutral": 0, "negative": -1, "stopped": -1}

# Each name typed as its literal, to hand back a checked string as a StanceName.
_NAMES: dict[str, StanceName] = {name: name for name in get_args(StanceName)}


class HasAttributes(Protocol):
    """Anything with a node's ``attributes`` mapping (a :class:`~personatree.types.Node`)."""

    @property
    def attributes(self) -> Mapping[str, Any]: ...


def stance_of(attributes: Mapping[str, Any] | None) -> StanceName:
    """The stance recorded in a node's attributes.

    Parameters
    ----------
    attributes : mapping or None
        A node's attributes: ``stance`` when present and valid, else ``cessation``
        (→ ``"stopped"``) and ``polarity`` (sign → positive / negative / neutral).

    Returns
    -------
    str
        One of :data:`STANCES`.
    """
    attrs = attributes or {}
    raw = attrs.get("stance")
    if isinstance(raw, str) and raw.strip().lower() in STANCES:
        return _NAMES[raw.strip().lower()]
    if attrs.get("cessation"):
        return "stopped"
    try:
        pol = float(attrs.get("polarity") or 0)
    except (TypeError, ValueError):
        pol = 0.0
    return "positive" if pol > 0 else "negative" if pol < 0 else "neutral"


def side_of(stance: str) -> int:
    """+1 for positive / started, −1 for negative / stopped, 0 for neutral (or unknown)."""
    return STANCES.get(stance, 0)


def group_of(stance: str) -> int:
    """The side a stance counts with in a pattern: neutral evidence joins the +1 side."""
    return -1 if side_of(stance) < 0 else 1


def node_stance(node: HasAttributes) -> StanceName:
    """:func:`stance_of` a node's attributes."""
    return stance_of(node.attributes)


def node_group(node: HasAttributes) -> int:
    """:func:`group_of` a node's stance."""
    return group_of(node_stance(node))


def opposed(a: str, b: str) -> bool:
    """Whether two stances contradict each other (one +1, the other −1; neutral opposes nothing)."""
    return side_of(a) * side_of(b) < 0


def may_support(leaf: str, pattern: str) -> bool:
    """Whether evidence of stance ``leaf`` may support a pattern of stance ``pattern``.

    Same group only: a neutral mention supports +1 and neutral patterns, never a −1 one.
    """
    return group_of(leaf) == group_of(pattern)


def pattern_stance(stances: Iterable[str]) -> StanceName:
    """The stance of a pattern from its members' stances (all of one group).

    The most common non-neutral stance wins (ties: the one of the side's "state"
    reading, ``positive`` before ``started`` and ``stopped`` before ``negative``, since
    a cessation names the change); all-neutral members make a neutral pattern.
    """
    counts = Counter(s for s in stances if s in STANCES and s != "neutral")
    if not counts:
        return "neutral"
    order = {"positive": 0, "started": 1, "stopped": 0, "negative": 1}
    return _NAMES[min(counts, key=lambda s: (-counts[s], order[s]))]


def guard_psi(leaf: str, pattern: str, psi: float, theta_conflict: float) -> tuple[float, str]:
    """ψ for a (leaf, pattern) pair after the stance rule, whatever the judge said.

    Parameters
    ----------
    leaf, pattern : str
        The two stances.
    psi : float
        The judge's ψ ∈ [−1, 1].
    theta_conflict : float
        |ψ| from which a pair counts as a conflict.

    Returns
    -------
    (float, str)
        The judge's ψ when the stances may go together (reason ``""``); for opposed
        stances a conflict ψ ≤ −θ_conflict (the judge's own when it already was one);
        for a neutral leaf under a −1 pattern, ψ clipped to at most 0 (not support,
        not a conflict unless the judge said so).
    """
    if opposed(leaf, pattern):
        if psi <= -theta_conflict:
            return psi, ""
        return -max(theta_conflict, abs(psi)), f"opposite stance ({leaf} vs {pattern})"
    if not may_support(leaf, pattern) and psi > 0:
        return 0.0, f"{leaf} evidence does not support a {pattern} pattern"
    return psi, ""


def latest_change(
    supports: Sequence[tuple[datetime, str]], conflicts: Sequence[tuple[datetime, str]],
) -> tuple[datetime, str] | None:
    """When and by which leaf a pattern changed: its latest conflict, if newer than its
    latest support (a later support means the pattern holds again).

    Parameters
    ----------
    supports, conflicts : sequence of (datetime, leaf id)
        Times of the supporting and conflicting evidence.

    Returns
    -------
    (datetime, str) or None
        The latest conflict (ties by id), or None when the pattern is not changed.
    """
    if not conflicts:
        return None
    last_c = max(conflicts)
    if supports and max(t for t, _ in supports) >= last_c[0]:
        return None
    return last_c
