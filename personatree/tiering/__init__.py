"""HMO tiering (DESIGN.md, "HMO tiering"): a persona-driven hot cache over the tree.

The roots (and strong mids) define the persona vector P; each node's priority
S_m = (α·I_m + β·Sim(m,P))·ln(2+C_m)·exp(−λ·Δt/ln(2+C_m)) ranks it into tier 1 (always
shown as the profile), tier 2 (buffer) or tier 3 (archive + raw log). Recall searches
T1 → T2 → T3 and stops when the evidence is sufficient. Tiers are a cache: they never
change the tree.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Only the config is imported eagerly: personatree.config imports it, and the rest of
# the package imports the retrieval engine, which imports personatree.config.
from .config import TieringConfig

_LAZY = {
    "NodeHeader": "header", "priority": "header", "priorities": "header", "recall_strength": "header",
    "persona_term": "header", "offline_importance": "header",
    "persona_vector": "persona", "graph_persona": "persona", "drift": "persona", "needs_rerank": "persona",
    "TierState": "tiers", "tier_state": "tiers", "select_tiers": "tiers", "promote": "tiers",
    "hot_graph": "hot", "HotIndex": "hot",
    "TieredResult": "search", "search_tiers": "search", "sufficient": "search", "tiered_recall": "search",
    "tiers_of": "search",
    "Profile": "profile", "ProfileItem": "profile", "profile_user": "profile", "render_profile": "profile",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{mod}", __name__), name)


__all__ = [
    "TieringConfig",
    "NodeHeader", "priority", "priorities", "recall_strength", "persona_term", "offline_importance",
    "persona_vector", "graph_persona", "drift", "needs_rerank",
    "TierState", "tier_state", "select_tiers", "promote", "hot_graph", "HotIndex",
    "TieredResult", "search_tiers", "sufficient", "tiered_recall", "tiers_of",
    "Profile", "ProfileItem", "profile_user", "render_profile",
]
