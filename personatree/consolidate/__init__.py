"""Offline consolidation (ARCHITECTURE.md, "offline consolidation").

A periodic pass per user that clusters orphan leaves into mids (HDBSCAN over a mixed
cosine / schema / time distance), promotes strong, long-standing mids into roots, and
bounds growth (stale orphans, a leaf cap per mid, root pruning, near-duplicate merges).
It plans first — a frozen, JSON-serializable :class:`ConsolidationPlan` — and applies
the plan atomically; writes that land in between do not fail the pass: the plan is
rebased onto them, keeping every part they did not touch.

>>> from personatree.consolidate import consolidate_user      # doctest: +SKIP
>>> plan = consolidate_user(tree, "ana", dry_run=True)         # doctest: +SKIP
>>> print(plan.describe())                                     # doctest: +SKIP

``PersonaTree`` hands :func:`replay_consolidation` to its engine, so ``rebuild``
replays consolidation passes.
"""

from __future__ import annotations

from .apply import apply_plan, apply_user_plan, consolidate_user, consolidator_for, replay_consolidation
from .estimator import Consolidator
from .plan import (
    ClusterReport,
    ConsolidationPlan,
    Decay,
    Deletion,
    Merge,
    NewMid,
    PlanDiff,
    Promotion,
    Prune,
    Trim,
)

__all__ = [
    "Consolidator",
    "ConsolidationPlan",
    "consolidate_user",
    "apply_plan",
    "apply_user_plan",
    "consolidator_for",
    "replay_consolidation",
    "ClusterReport",
    "NewMid",
    "Promotion",
    "Merge",
    "Decay",
    "Deletion",
    "Trim",
    "Prune",
    "PlanDiff",
]
