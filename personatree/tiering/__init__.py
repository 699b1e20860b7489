"""HMO tiering (ARCHITECTURE.md, "HMO tiering"): a persona-driven hot cache over the tree.

The roots (and strong mids) define the persona vector P; each node's priority
S_m = (α·I_m + β·Sim(m,P))·ln(2+C_m)·exp(−λ·Δt/ln(2+C_m)) ranks it into tier 1 (always
shown as the profile), tier 2 (buffer) or tier 3 (archive + raw log). Recall searches
T1 → T2 → T3 and stops when the evidence is sufficient. Tiers are a cache: they never
change the tree.
"""

from __future__ import annotations

from ..config import TieringConfig
from .header import NodeHeader, offline_importance, persona_term, priorities, priority, recall_strength
from .hot import HotIndex, hot_graph
from .persona import drift, graph_persona, needs_rerank, persona_vector
from .profile import Profile, ProfileItem, profile_user, render_profile
from .search import TieredResult, search_tiers, sufficient, tiered_recall, tiers_of
from .tiers import TierState, promote, select_tiers, tier_state

__all__ = [
    "TieringConfig",
    "NodeHeader", "priority", "priorities", "recall_strength", "persona_term", "offline_importance",
    "persona_vector", "graph_persona", "drift", "needs_rerank",
    "TierState", "tier_state", "select_tiers", "promote", "hot_graph", "HotIndex",
    "TieredResult", "search_tiers", "sufficient", "tiered_recall", "tiers_of",
    "Profile", "ProfileItem", "profile_user", "render_profile",
]
